#!/bin/sh
# unwound inject: a --call-graph dwarf recording rewritten with ready callchains. perf script
# on the result must print exactly what `unwound report --script --no-inline` prints for the
# original (sample for sample, frame for frame), perf report must read it, unwound report must
# give the same folded stacks, and the file must be far smaller. Also from a pipe. (perf prints a
# symbol table's names with their versions, __libc_start_main@@GLIBC_2.34; unwound without: the
# versions are dropped from perf's text before comparing.)
set -eu
B=${UW_BUILD:?} S=${UW_SRC:?}
W=$B/tests/work/inject
rm -rf "$W"; mkdir -p "$W"
cd "$W"
perf record -q -e cpu-clock -F 999 --call-graph dwarf -o dwarf.data -- "$B/tests/e2e_nofp" calltree 1.5 >/dev/null 2>perf.err
"$B/unwound" inject -i dwarf.data -o small.data 2>inject.err
cat inject.err
unversioned() { sed 's/@@\{0,1\}[A-Z][A-Za-z0-9_.]*+0x/+0x/'; }
perf script -i small.data --no-inline 2>/dev/null | unversioned >perf-small.txt
"$B/unwound" report -i dwarf.data --script --no-inline -o unwound-dwarf.txt
cmp perf-small.txt unwound-dwarf.txt || { echo "FAIL: perf script on the injected file differs"; diff perf-small.txt unwound-dwarf.txt | head; exit 1; }
perf report -i small.data --stdio --no-children >perf-report.txt 2>/dev/null
grep -q "tree_a2" perf-report.txt || { echo "FAIL: perf report does not show the stacks"; exit 1; }
"$B/unwound" report -i dwarf.data --folded -o folded-dwarf.txt
"$B/unwound" report -i small.data --folded -o folded-small.txt
cmp folded-dwarf.txt folded-small.txt || { echo "FAIL: folded stacks differ"; exit 1; }
grep -q "main;tree_a;tree_a2;spin " folded-small.txt
# the data sections' sizes: the files' feature sections are the same on both sides and hold, among
# others, every BPF program loaded on the machine at the time of recording (hundreds of KiB when a
# neighbour runs some), which says nothing of inject
data_size() { perf report -i "$1" --header-only 2>/dev/null | awk '/^# data size/ { print $NF }'; }
in=$(data_size dwarf.data) out=$(data_size small.data)
echo "data: $in -> $out bytes (files: $(stat -c %s dwarf.data) -> $(stat -c %s small.data))"
[ -n "$in" ] && [ -n "$out" ] && [ "$out" -gt 0 ] || { echo "FAIL: perf report --header-only gave no data size"; exit 1; }
[ $((in / out)) -ge 20 ] || { echo "FAIL: the injected data is not much smaller ($in -> $out bytes)"; exit 1; }
# pipe mode in, and an existing output kept as .old
perf record -q -e cpu-clock -F 999 --call-graph dwarf -o - -- "$B/tests/e2e_nofp" calltree 0.5 2>/dev/null |
    "$B/unwound" inject -i - -o small.data 2>/dev/null
[ -f small.data.old ] || { echo "FAIL: the previous output was not kept as .old"; exit 1; }
[ "$(stat -c %a small.data)" = 600 ] || { echo "FAIL: output mode is not 0600"; exit 1; }
perf script -i small.data --no-inline 2>/dev/null | grep -q "tree_a2" || { echo "FAIL: pipe-mode input"; exit 1; }
# a symbolic link at the output's name is not followed: it is kept as .old
ln -sf "$W/elsewhere" link.data
"$B/unwound" inject -i dwarf.data -o link.data 2>/dev/null
[ ! -e elsewhere ] && [ -L link.data.old ] && [ -f link.data ] && [ ! -L link.data ] ||
    { echo "FAIL: the output followed a symbolic link"; exit 1; }
# a directory at the output's name (perf record --threads writes one) is moved aside as perf
# moves it, and a directory recording at NAME.old removed first; a NAME.old directory with
# anything else in it is kept, and nothing is moved or written (refused before: "Is a directory")
perf record -q --threads -e cpu-clock -o dir.data -- true 2>/dev/null
[ -d dir.data ] && [ -f dir.data/data ] || { echo "FAIL: perf record --threads wrote no directory (the oracle changed)"; exit 1; }
"$B/unwound" inject -i dwarf.data -o dir.data 2>err.txt || { cat err.txt; echo "FAIL: inject onto a directory recording"; exit 1; }
[ -f dir.data ] && [ -d dir.data.old ] && [ -f dir.data.old/data ] || { ls -la dir.data*; echo "FAIL: the directory was not kept as .old"; exit 1; }
rm -rf dir.data; perf record -q --threads -e cpu-clock -o dir.data -- true 2>/dev/null
"$B/unwound" inject -i dwarf.data -o dir.data 2>err.txt || { cat err.txt; echo "FAIL: inject onto a directory recording, a directory recording at .old"; exit 1; }
[ -f dir.data ] && [ -d dir.data.old ] || { ls -la dir.data*; echo "FAIL: .old is not the directory just moved"; exit 1; }
"$B/unwound" inject -i dwarf.data -o dir.data 2>err.txt || { cat err.txt; echo "FAIL: inject onto a file, a directory recording at .old"; exit 1; }
[ -f dir.data ] && [ -f dir.data.old ] || { ls -la dir.data*; echo "FAIL: the directory recording at .old was not replaced"; exit 1; }
rm -f dir.data.old; mkdir dir.data.old; echo mine >dir.data.old/notes.txt; cp dir.data before.data
rc=0; "$B/unwound" inject -i dwarf.data -o dir.data 2>err.txt || rc=$?
[ $rc = 1 ] && [ "$(cat dir.data.old/notes.txt)" = mine ] && cmp -s dir.data before.data &&
    grep -q "dir.data.old is a directory with more than a recording's data files in it" err.txt ||
    { ls -la dir.data*; cat err.txt; echo "FAIL: a .old directory of other files: exit $rc"; exit 1; }
# a directory recording at .old whose parts are links: the links are removed, never followed
rm -rf dir.data.old; mkdir dir.data.old; echo keep >outside.txt
ln -s "$W/outside.txt" dir.data.old/data; ln -s "$W" dir.data.old/data.0
"$B/unwound" inject -i dwarf.data -o dir.data 2>err.txt || { cat err.txt; echo "FAIL: inject, a .old recording of links"; exit 1; }
[ -f dir.data.old ] && [ "$(cat outside.txt)" = keep ] && [ -d "$W" ] ||
    { ls -la dir.data* outside.txt; echo "FAIL: a link in the .old recording was followed"; exit 1; }
echo "inject: a directory at the output's name moved aside as perf moves it"
echo "inject: perf script identical to unwound's, folded identical"
