#!/bin/sh
# Hostile ELF files: a recording of the e2e program is reported with each corrupted copy of the
# program in its place (through --symfs; no build-id cache). Every run must end within 30 s with
# status 0 or 1 and a message when 1: never a crash, a hang or unbounded memory (1 GiB cap;
# under AddressSanitizer no cap, which it does not allow, but its checks).
set -eu
B=${UW_BUILD:?} S=${UW_SRC:?}
W=$B/tests/work/hostile
rm -rf "$W"; mkdir -p "$W/home"
exe=$B/tests/e2e_nofp
# no build-id cache (-N), and reports with an empty HOME: no copy of the real file to fall back on
perf record -q -N -e cpu-clock -F 999 --call-graph dwarf -o "$W/perf.data" -- "$exe" calltree 0.5 >/dev/null 2>"$W/perf.err" ||
    { echo "FAIL: perf record"; cat "$W/perf.err"; exit 1; }
fails=0 n=0
# a memory cap, except under AddressSanitizer (its shadow memory is reserved virtual space)
cap=1048576
ldd "$B/unwound" | grep -q libasan && cap=unlimited
for v in $(python3 "$S/tests/e2e/hostile-elf.py" "$exe" "$W/variants"); do
    root=$W/root-$v
    mkdir -p "$root$(dirname "$exe")" "$root$B/tests"
    cp "$W/variants/$v/file" "$root$exe"
    cp "$B/tests/libtw_nofp.so" "$root$B/tests/" 2>/dev/null || true
    for mode in "--folded" "--script --srcline"; do
        rc=0
        # shellcheck disable=SC2086
        (ulimit -v $cap; HOME=$W/home timeout 30 "$B/unwound" report -i "$W/perf.data" --symfs "$root" $mode \
            -o "$W/out.txt") 2>"$W/err.txt" || rc=$?
        n=$((n + 1))
        if [ $rc -gt 1 ]; then
            echo "FAIL: $v ($mode): exit status $rc"; tail -3 "$W/err.txt"; fails=$((fails + 1))
        elif [ $rc -eq 1 ] && ! grep -q "unwound report: " "$W/err.txt"; then
            echo "FAIL: $v ($mode): error without a message"; fails=$((fails + 1))
        fi
    done
done
echo "hostile ELF: $n runs, $fails failures"
[ $fails -eq 0 ]
