#!/bin/sh
# The library's ABI against the baseline kept in abi/ (libabigail): a removed or changed
# function, a changed type (a field moved, retyped or removed, a struct grown) fails; new
# functions do not. A field added at the end of a size-versioned struct is compatible by design
# (an older caller's shorter struct is read as far as its sz), but it is reported too: libabigail
# 2.2's suppressions for "inserted at the end" also hide fields that moved, so every layout
# change is looked at. After an intentional, compatible change the baseline is regenerated with
# `make abi-update` (and the commit says why).
# Each library has its baseline: abi/libunwound.abi.xz, abi/libunwound-prof.abi.xz.
#   usage: abi.sh LIB [--update]
set -eu
lib=$1
name=$(basename "$lib" | sed 's/\.so.*//')
S=$(cd "$(dirname "$0")/../.." && pwd)
W=${UW_BUILD:-/tmp}/tests/work/abi-$name
mkdir -p "$W"
command -v abidw >/dev/null || { echo "FAIL: abidw is not installed (scripts/install-deps installs abigail-tools)"; exit 1; }
abidw --headers-dir "$S/include/unwound" --drop-private-types --no-corpus-path --no-show-locs --drop-undefined-syms \
    --type-id-style hash --no-comp-dir-path --out-file "$W/current.abi" "$lib"
if [ "${2:-}" = --update ]; then
    xz -9 -c "$W/current.abi" >"$S/abi/$name.abi.xz"
    echo "abi/$name.abi.xz updated"
    exit 0
fi
xz -dc "$S/abi/$name.abi.xz" >"$W/baseline.abi"
rc=0
abidiff --no-added-syms "$W/baseline.abi" "$W/current.abi" >"$W/abidiff.txt" 2>&1 || rc=$?
cat "$W/abidiff.txt"
# abidiff's status: bit 0 error, 1 usage, 2 an ABI change, 3 an incompatible one
if [ $((rc & 3)) -ne 0 ]; then
    echo "FAIL: abidiff could not compare (status $rc)"; exit 1
fi
if [ $((rc & 12)) -ne 0 ]; then
    echo "FAIL: the ABI changed against abi/$name.abi.xz (status $rc): see above"; exit 1
fi
echo "abi: compatible with the baseline"
