#!/bin/sh
# Symbols at one address: unwound names the frame with the alias perf shows, demangled or not
# (perf chooses by the shown name's length: the demangled one unless --no-demangle), without
# the version a symbol table gives an exported name (perf: vfunc@@VERS_2, unwound: vfunc).
set -eu
B=${UW_BUILD:?}
S=${UW_SRC:?}
W=$B/tests/work/aliases
rm -rf "$W"; mkdir -p "$W"
printf 'VERS_1 { }; VERS_2 { global: vfunc; } VERS_1;\n' >"$W/versions.map"
gcc -O1 -g -o "$W/aliases" "$S/tests/programs/aliases.c" -Wl,--version-script="$W/versions.map"
perf record -q -e cpu-clock -F 999 -o "$W/perf.data" -- "$W/aliases" 20000000 >/dev/null 2>"$W/perf.err" ||
    { echo "FAIL: perf record could not run"; cat "$W/perf.err"; exit 1; }
for mode in demangle no-demangle; do
    opt=; [ $mode = no-demangle ] && opt=--no-demangle
    # shellcheck disable=SC2086
    perf script $opt -i "$W/perf.data" --comm aliases -F ip,sym,dso 2>/dev/null |
        awk '$NF == "('"$W"'/aliases)" { print $2 }' | sort | uniq -c >"$W/perf.$mode"
    # shellcheck disable=SC2086
    "$B/unwound" report -i "$W/perf.data" --comm aliases --script $opt -o "$W/unwound.$mode.txt"
    sed -n 's/.* \([^+ ]*\)+0x[0-9a-f]* (.*\/aliases)$/\1/p' "$W/unwound.$mode.txt" | sort | uniq -c >"$W/unwound.$mode"
    want=abcde; [ $mode = no-demangle ] && want=_Z1aiiiiiiiii
    grep -q " $want\$" "$W/perf.$mode" || { echo "FAIL: $mode: perf does not show $want"; cat "$W/perf.$mode"; exit 1; }
    grep -q " vfunc@@VERS_2\$" "$W/perf.$mode" || { echo "FAIL: $mode: perf does not show vfunc@@VERS_2"; cat "$W/perf.$mode"; exit 1; }
    grep -q " vfunc\$" "$W/unwound.$mode" || { echo "FAIL: $mode: unwound does not show vfunc"; cat "$W/unwound.$mode"; exit 1; }
    # perf's names without their versions
    sed 's/@.*//' "$W/perf.$mode" >"$W/perf.$mode.unversioned"
    diff "$W/perf.$mode.unversioned" "$W/unwound.$mode" || { echo "FAIL: $mode: names differ from perf's"; exit 1; }
    echo "$mode: $(cat "$W/unwound.$mode")"
done
echo "aliases ok"
