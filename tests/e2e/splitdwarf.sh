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
# DWARF packages: the .dwo files of a program gathered into PROGRAM.dwp (gold's dwp for GCC's
# DWARF 4, llvm-dwp for GCC's and clang's DWARF 5), the .dwo files gone. The package's units are
# read by our own code (libdw 0.188 reads no packages): the output must equal the .dwo one
# (libdw's) byte for byte, and every distinct sampled address must agree with llvm-symbolizer
# reading the package.
for k in gcc4 gcc5 clang5; do
    case $k in
    gcc4) cc="gcc -gdwarf-4"; pack=dwp ;;
    gcc5) cc="gcc -gdwarf-5"; pack=llvm-dwp ;;
    clang5) cc="clang -g -gdwarf-5"; pack=llvm-dwp ;;
    esac
    p=pkg$k
    $cc -O2 -gsplit-dwarf -I"$S/tests/programs" -c "$S/tests/programs/dwz_prog.c" -o $p.o
    $cc -o $p $p.o
    timeout 120 $pack -e $p -o $p.dwp || { echo "FAIL: $pack could not build $p.dwp"; exit 1; }
    HOME=$W/home perf record -q -e cpu-clock -F 999 --call-graph dwarf -o $p.data -- ./$p 1 >/dev/null 2>perf.err
    mv $p.dwp $p.dwp.away
    HOME=$W/home "$B/unwound" report -i $p.data --comm $p --script --srcline -o $p.dwo.txt
    mv $p.dwp.away $p.dwp
    mv $p.dwo $p.dwo.away
    HOME=$W/home "$B/unwound" report -i $p.data --comm $p --script --srcline -v -o $p.dwp.txt 2>$p.log
    grep -q "DWARF package $W/$p.dwp" $p.log || { echo "FAIL: $k: the package was not found"; cat $p.log; exit 1; }
    grep -q "dwz_common.h:11 (inlined)" $p.dwp.txt || { echo "FAIL: $k: no inline frames from the package"; exit 1; }
    cmp $p.dwo.txt $p.dwp.txt || { echo "FAIL: $k: the package's frames differ from the .dwo's"; diff $p.dwo.txt $p.dwp.txt | head; exit 1; }
    HOME=$W/home "$B/tests/symdump" $p.data $p >$p.symdump
    python3 "$S/tests/e2e/addr2line-oracle.py" $p.symdump --min 5 --dwp "$W/$p.dwp"
    # a package without this program's units: no inline frames and no wrong names
    cp "$W/pkggcc4.dwp" $p.dwp 2>/dev/null || true
    if [ $k != gcc4 ]; then
        HOME=$W/home "$B/unwound" report -i $p.data --comm $p --no-kernel --folded --inline -o $p.other.txt
        if grep -q "inner_loop" $p.other.txt; then echo "FAIL: $k: inline names from another program's package"; exit 1; fi
    fi
done
# damaged packages: the file cut short, absurd index counts, contributions past the sections'
# ends, a hash table that never ends a probe: the report completes, without the inline frames
llvm-dwp -e pkggcc5 -o good.dwp 2>/dev/null || cp pkggcc5.dwp good.dwp
off=$(readelf -SW good.dwp | awk '$2 == ".debug_cu_index" || $3 == ".debug_cu_index" { for (i = 1; i <= NF; i++) if ($i == "PROGBITS") print $(i + 2) }')
[ -n "$off" ] || { echo "FAIL: no .debug_cu_index in good.dwp"; exit 1; }
python3 - good.dwp $((0x$off)) <<'PY'
import struct, sys
src, at = sys.argv[1], int(sys.argv[2])
d = bytearray(open(src, "rb").read())
def put(name, data):
    open(name, "wb").write(data)
put("bad-cut.dwp", d[:len(d) // 2])
for name, field, val in (("bad-units", 8, 0xffffffff), ("bad-slots", 12, 1 << 31), ("bad-cols", 4, 0xffff)):
    b = bytearray(d); struct.pack_into("<I", b, at + field, val); put(name + ".dwp", b)
ncols, nunits, nslots = struct.unpack_from("<III", d, at + 4)
offsets = at + 16 + nslots * 12 + ncols * 4
b = bytearray(d)
for i in range(ncols * nunits):
    struct.pack_into("<I", b, offsets + 4 * i, 0xfffffff0)
put("bad-offsets.dwp", b)
b = bytearray(d)
for i in range(nslots):  # every slot taken by another id: a probe never meets an empty one
    struct.pack_into("<Q", b, at + 16 + 8 * i, 0x1111 * (i + 1))
    struct.pack_into("<I", b, at + 16 + nslots * 8 + 4 * i, 1)
put("bad-full.dwp", b)
PY
for bad in bad-cut bad-units bad-slots bad-cols bad-offsets bad-full; do
    cp $bad.dwp pkggcc5.dwp
    rc=0
    HOME=$W/home timeout 20 "$B/unwound" report -i pkggcc5.data --comm pkggcc5 --no-kernel --folded --inline -o $bad.txt 2>$bad.err || rc=$?
    [ $rc -eq 0 ] || { echo "FAIL: $bad: exit $rc"; cat $bad.err; exit 1; }
    if grep -q "inner_loop" $bad.txt; then echo "FAIL: $bad: inline names from a damaged package"; exit 1; fi
    grep -q "main;work_a" $bad.txt || { echo "FAIL: $bad: the stacks are gone"; exit 1; }
done
echo "split DWARF 4 and 5: inline frames and lines from .dwo files and from packages"
