#!/bin/sh
# Inputs that found defects (fuzz/regress/: kept with the fuzz corpora) read through every
# path of the CLI: each ends with a clear error or a result, never a signal (a sanitizer build
# also fails on undefined behaviour).
set -eu
B=${UW_BUILD:?}
S=${UW_SRC:?}
W=$B/tests/work/regress
rm -rf "$W"; mkdir -p "$W"
n=0
for f in "$S"/fuzz/regress/perf/*; do
    for mode in "--stdio" "--script" "--folded" "inject"; do
        rc=0
        if [ "$mode" = inject ]; then
            "$B/unwound" inject -i "$f" -o "$W/out.data" >"$W/out.txt" 2>"$W/err.txt" || rc=$?
        else
            "$B/unwound" report -i "$f" $mode --kallsyms /dev/null -o "$W/out.txt" 2>"$W/err.txt" || rc=$?
        fi
        if [ $rc -gt 2 ]; then
            echo "FAIL: $(basename "$f") $mode: exit $rc"; cat "$W/err.txt"; exit 1
        fi
        if grep -q "runtime error\|AddressSanitizer\|LeakSanitizer" "$W/err.txt"; then
            echo "FAIL: $(basename "$f") $mode"; cat "$W/err.txt"; exit 1
        fi
        n=$((n + 1))
    done
done
echo "regress: $n runs, no crash"
