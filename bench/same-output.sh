#!/bin/sh
# Two unwound binaries must write the same bytes: `report --script`, `report --folded` and
# `inject` of every recording given, compared (and their exit statuses). For refactorings.
#   usage: bench/same-output.sh OLD_UNWOUND NEW_UNWOUND FILE...
OLD=$1; NEW=$2; shift 2
W=$(mktemp -d)
n=0; bad=0
for f in "$@"; do
    for m in script folded inject; do
        for v in old new; do
            bin=$OLD; [ $v = new ] && bin=$NEW
            if [ $m = inject ]; then
                timeout 300 "$bin" inject -i "$f" -o "$W/$v.out" >/dev/null 2>&1; echo $? >"$W/$v.rc"
            else
                timeout 300 "$bin" report -i "$f" --$m -o "$W/$v.out" >/dev/null 2>&1; echo $? >"$W/$v.rc"
            fi
        done
        n=$((n + 1))
        if ! cmp -s "$W/old.out" "$W/new.out" || ! cmp -s "$W/old.rc" "$W/new.rc"; then
            bad=$((bad + 1)); echo "DIFF: $f $m"
        fi
        rm -f "$W/old.out" "$W/new.out"
    done
done
rm -rf "$W"
echo "compared $n outputs, $bad differ"
[ $bad -eq 0 ]
