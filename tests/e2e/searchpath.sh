#!/bin/sh
# A recording whose program and library moved (as on another machine): --search-path finds them
# by name in a directory tree, and uses a file only when its build-id is the recorded one.
set -eu
B=${UW_BUILD:?}
S=${UW_SRC:?}
W=$B/tests/work/searchpath
rm -rf "$W"; mkdir -p "$W/app" "$W/moved/deep/er" "$W/decoy"
cd "$W"
U=$B/unwound
fail() { echo "FAIL: $*"; exit 1; }
cc -O2 -g -fPIC -shared -o app/libtw.so "$S/tests/programs/libtw.c"
cc -O2 -g -o app/prog "$S/tests/programs/e2e.c" -Lapp -ltw -Wl,-rpath,"$W/app" -lpthread
# a program of the same name but another build (another build-id), met first
cc -O0 -g -DVARIANT -o decoy/prog "$S/tests/programs/e2e.c" -Lapp -ltw -Wl,-rpath,"$W/app" -lpthread
perf record -q --no-buildid-cache -e cpu-clock -F 999 --call-graph dwarf -o perf.data -- app/prog shlib 0.6 >/dev/null 2>perf.err
# (no build-id cache: the files are only where they moved)
export HOME=$W
mv app/prog moved/deep/er/prog
mv app/libtw.so moved/libtw.so
rmdir app
"$U" report -i perf.data --no-kernel --folded -o without.txt 2>/dev/null
grep -q "lib_inner" without.txt && fail "symbols found without the search path"
"$U" report -i perf.data --no-kernel --folded --search-path "$W/decoy" --search-path "$W/moved" -o with.txt
grep -q "main;lib_entry;lib_inner;spin_lib" with.txt || { head -5 with.txt; fail "the moved program and library were not found"; }
"$U" report -i perf.data --search-path "$W/decoy" --search-path "$W/moved" >report.txt
grep -q "# modules: .* 0 missing" report.txt || { tail -4 report.txt; fail "modules still missing"; }
# only the decoy: its build-id differs, so it is not used
"$U" report -i perf.data --no-kernel --folded --search-path "$W/decoy" -o decoy.txt
grep -q ";main;\|;lib_entry;" decoy.txt && fail "a file of another build was used"
# perf's build-id cache (perf buildid-cache -a, or perf archive unpacked in ~/.debug)
mkdir -p "$W/cachehome"
for f in "$W/moved/deep/er/prog" "$W/moved/libtw.so"; do HOME=$W/cachehome perf buildid-cache -a "$f" 2>/dev/null; done
HOME=$W/cachehome "$U" report -i perf.data --no-kernel --folded -o cache.txt
grep -q "main;lib_entry;lib_inner;spin_lib" cache.txt || fail "perf's build-id cache was not used"
echo "searchpath: found by name and build-id, another build refused; perf's build-id cache used"
