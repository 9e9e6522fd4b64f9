#!/bin/sh
# The fast DIE walk against libdw's on real DWARF: the given files (test programs built by CMake),
# C++ programs built here (GCC and clang, DWARF 4 and 5), and CPython's debug file from
# python3.11-dbg (DWARF 5, compressed).
# usage: dwarf-walks.sh TEST_DWARF SOURCE_DIR WORK_DIR FILE...
set -eu
t=$1 src=$2 work=$3
shift 3
mkdir -p "$work"
g++ -O2 -g -o "$work/cxx-dwarf" "$src/tests/programs/cxxwork.cpp"
# DWARF 4 (.debug_ranges) and clang's DWARF 5 (rnglistx, address indexes before the base)
g++ -O2 -gdwarf-4 -o "$work/cxx-dwarf4" "$src/tests/programs/cxxwork.cpp"
clang++ -O2 -g -o "$work/cxx-clang" "$src/tests/programs/cxxwork.cpp"
clang++ -O2 -gdwarf-4 -o "$work/cxx-clang4" "$src/tests/programs/cxxwork.cpp"
bid=$(readelf -n /usr/bin/python3.11 | awk '/Build ID/ { print $3 }')
dbg=/usr/lib/debug/.build-id/$(echo "$bid" | cut -c1-2)/$(echo "$bid" | cut -c3-).debug
[ -r "$dbg" ] || { echo "missing $dbg: install python3.11-dbg (scripts/install-deps)" >&2; exit 1; }
exec "$t" "$@" "$work/cxx-dwarf" "$work/cxx-dwarf4" "$work/cxx-clang" "$work/cxx-clang4" "$dbg"
