#!/bin/sh
# `make` and `make demo` on a machine without the test-only packages: pkg-config is given a
# directory of the system's .pc files without cmocka's (as on a fresh Debian 12 machine where
# only `make check` installs libcmocka-dev). Both must build (the default build configures no
# test) and the demo must run; a build with UW_TESTS=ON must say what is missing.
set -eu
B=${UW_BUILD:?}
S=${UW_SRC:?}
W=$B/tests/work/minimal-build
rm -rf "$W"; mkdir -p "$W/pc"
fail() { echo "FAIL: $*"; exit 1; }
# the system's pkg-config files, cmocka's left out
for d in $(pkg-config --variable pc_path pkg-config | tr : ' '); do
    [ -d "$d" ] || continue
    for f in "$d"/*.pc; do
        [ -e "$f" ] && [ ! -e "$W/pc/${f##*/}" ] && ln -s "$f" "$W/pc/"
    done
done
rm -f "$W/pc/cmocka.pc"
export PKG_CONFIG_LIBDIR="$W/pc" PKG_CONFIG_PATH=
pkg-config --exists cmocka && fail "cmocka is still found: the test would not show anything"
pkg-config --exists libdw || fail "the system's pkg-config files were not linked"
# make: configure and build the library and the CLI, no test
make -C "$S" BUILD="$W/build" JOBS=2 all >"$W/make.log" 2>&1 || { tail -20 "$W/make.log"; fail "make without cmocka"; }
"$W/build/unwound" --version >/dev/null || fail "make built no CLI that runs"
grep -q "^UW_TESTS:BOOL=OFF" "$W/build/CMakeCache.txt" || fail "the default build configures the tests"
[ ! -e "$W/build/tests" ] || fail "the default build made a tests directory"
# make demo: installs what the demo needs (here: nothing is missing), builds, records, reports
make -C "$S" BUILD="$W/build" JOBS=2 demo >"$W/demo.log" 2>&1 || { tail -20 "$W/demo.log"; fail "make demo without cmocka"; }
grep -q "== unwound report" "$W/demo.log" && grep -q "# Samples: " "$W/demo.log" ||
    { tail -20 "$W/demo.log"; fail "make demo printed no report"; }
# asking for the tests without cmocka: one clear message, not pkg-config's
rc=0; cmake -S "$S" -B "$W/tests-build" -DUW_TESTS=ON >"$W/tests.log" 2>&1 || rc=$?
[ $rc != 0 ] && grep -q "the unit tests need cmocka (Debian: libcmocka-dev)" "$W/tests.log" ||
    { tail -5 "$W/tests.log"; fail "UW_TESTS=ON without cmocka: exit $rc, no message naming cmocka"; }
rm -rf "$W/build" "$W/tests-build"
echo "make and make demo: built and ran with cmocka's pkg-config file hidden"
