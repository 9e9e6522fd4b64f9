#!/bin/sh
# Split DWARF: the program keeps skeleton units; the DIEs are in .dwo files next to the objects
# (DWARF 5 split units, and DWARF 4 with the GNU extension). Inline frames and call-site lines
# come from the .dwo; addresses and the line table from the program.
set -eu
B=${UW_BUILD:?} S=${UW_SRC:?}
W=$B/tests/work/splitdwarf
rm -rf "$W"
mkdir -p "$W/home"
cd "$W"
for v in 4 5; do
    gcc -O2 -gdwarf-$v -gsplit-dwarf -I"$S/tests/programs" -c "$S/tests/programs/dwz_prog.c" -o split$v.o
    gcc -o split$v split$v.o
    [ -e split$v.dwo ] || { echo "FAIL: no .dwo"; exit 1; }
    HOME=$W/home perf record -q -e cpu-clock -F 999 --call-graph dwarf -o perf$v.data -- ./split$v 1 >/dev/null 2>perf.err
    HOME=$W/home "$B/unwound" report -i perf$v.data --comm split$v --no-kernel --folded --inline -o folded$v.txt
    grep -q "main;work_a;inner_loop;mix " folded$v.txt || { echo "FAIL: DWARF $v: no inline frames from the .dwo"; cat folded$v.txt; exit 1; }
    HOME=$W/home "$B/unwound" report -i perf$v.data --comm split$v --script --srcline -o script$v.txt
    grep -q "dwz_common.h:11 (inlined)" script$v.txt || { echo "FAIL: DWARF $v: no call-site line"; exit 1; }
    grep -q "dwz_prog.c:12" script$v.txt || { echo "FAIL: DWARF $v: no line"; exit 1; }
    # the .dwo gone: frames as without DWARF, no wrong names
    mv split$v.dwo split$v.dwo.away
    HOME=$W/home "$B/unwound" report -i perf$v.data --comm split$v --no-kernel --folded --inline -o nodwo$v.txt
    if grep -q "inner_loop" nodwo$v.txt; then echo "FAIL: inline names without the .dwo"; exit 1; fi
done
echo "split DWARF 4 and 5: inline frames and lines from .dwo files"
