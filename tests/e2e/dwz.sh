#!/bin/sh
# dwz: two programs share inline functions; their debug files go through `dwz -m`, which moves the
# shared DWARF into a supplementary file named by .gnu_debugaltlink. The names of the inlined
# functions then live only there: unwound must find it by build-id under --debug-dir, by its
# path, and say so when it is missing.
set -eu
B=${UW_BUILD:?} S=${UW_SRC:?}
W=$B/tests/work/dwz
rm -rf "$W"
mkdir -p "$W/dbg" "$W/home"
command -v dwz >/dev/null || { echo "FAIL: dwz is not installed (scripts/install-deps)"; exit 1; }
cd "$W"
gcc -O2 -g -I"$S/tests/programs" -o dwza "$S/tests/programs/dwz_prog.c"
sed 's/work_a/work_b/g' "$S/tests/programs/dwz_prog.c" >dwzb.c
gcc -O2 -g -I"$S/tests/programs" -o dwzb dwzb.c
objcopy --only-keep-debug dwza dwza.debug
objcopy --only-keep-debug dwzb dwzb.debug
dwz -m common.debug -M "$W/common.debug" dwza.debug dwzb.debug
readelf -S dwza.debug | grep -q gnu_debugaltlink || { echo "FAIL: dwz made no supplementary file"; exit 1; }
strip --strip-all dwza
bid=$(readelf -n dwza | awk '/Build ID/ { print $3 }')
cbid=$(readelf -n common.debug | awk '/Build ID/ { print $3 }')
mkdir -p "dbg/.build-id/$(echo "$bid" | cut -c1-2)"
cp dwza.debug "dbg/.build-id/$(echo "$bid" | cut -c1-2)/$(echo "$bid" | cut -c3-).debug"
HOME=$W/home perf record -q -e cpu-clock -F 999 --call-graph dwarf -o perf.data -- ./dwza 1 >/dev/null 2>perf.err
report() { HOME=$W/home "$B/unwound" report -i perf.data --comm dwza --debug-dir "$W/dbg" --offline --no-kernel "$@"; }
want="main;work_a;inner_loop;mix "

# 1. by its absolute path (where dwz -M said)
report --folded --inline -o by-path.txt
grep -q "$want" by-path.txt || { echo "FAIL: inline names through the path"; cat by-path.txt; exit 1; }
# 2. by build-id under --debug-dir, the path gone
mkdir -p "dbg/.build-id/$(echo "$cbid" | cut -c1-2)"
mv common.debug "dbg/.build-id/$(echo "$cbid" | cut -c1-2)/$(echo "$cbid" | cut -c3-).debug"
report --folded --inline -o by-id.txt
grep -q "$want" by-id.txt || { echo "FAIL: inline names through the build-id"; cat by-id.txt; exit 1; }
report --script --srcline -o srcline.txt
grep -q "dwz_common.h:[0-9]* (inlined)" srcline.txt || { echo "FAIL: no inline source lines"; exit 1; }
# 3. missing: a message, no wrong names
rm -rf "dbg/.build-id/$(echo "$cbid" | cut -c1-2)"
report --folded --inline -o missing.txt 2>missing.err
grep -q "dwz supplementary file .* not found" missing.err || { echo "FAIL: no message"; cat missing.err; exit 1; }
if grep -q "inner_loop" missing.txt; then echo "FAIL: names without the supplementary file"; exit 1; fi
echo "dwz: found by path and by build-id; missing file reported"
