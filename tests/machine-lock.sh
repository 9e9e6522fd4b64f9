#!/bin/bash
# Runs a test command under a lock shared by every unwound test suite on the machine (suites
# side by side: CI neighbours, clones, a developer's build beside `make check`). The CTest
# resource lock `perf` orders the tests of one suite; this one orders them across suites.
#
# Why: a test that records system-wide records the tests beside it, and on this kernel (6.18),
# while any session records MMAP2 events with build-ids (`perf record --buildid-mmap`), the
# kernel marks other sessions' MMAP2 records PERF_RECORD_MISC_MMAP_BUILD_ID too, over their
# maj/min/ino, and perf 6.1 then aborts ("assertion failed at util/build-id.c") on what it
# recorded. So such a test runs alone (exclusive); any other perf-based test runs beside other
# such tests (shared). A waiting exclusive test goes first: it holds the gate while it waits,
# and the shared ones pass the gate before they take the lock (no test waits for ever while
# shared ones keep coming).
#
# usage: UW_MACHINE_LOCK_MODE=exclusive|shared machine-lock.sh COMMAND... (tests/CMakeLists.txt
# sets the mode: exclusive for the tests in UW_ALONE_TESTS). The lock's directory:
# UW_MACHINE_LOCK_DIR, default /tmp. Processes the test leaves behind do not hold the lock
# (flock -o).
set -u
# tests/errexit.sh, read by this script's bash, unset BASH_ENV: the test's script needs it again
if trap -p ERR | grep -q uw_rc; then export BASH_ENV="$(cd "$(dirname "$0")" && pwd)/errexit.sh"; fi
dir=${UW_MACHINE_LOCK_DIR:-/tmp}
gate=$dir/unwound-tests.gate
lock=$dir/unwound-tests.lock
mode=${UW_MACHINE_LOCK_MODE:-}
case $mode in
exclusive | shared) ;;
*) echo "machine-lock.sh: UW_MACHINE_LOCK_MODE is '$mode', not exclusive or shared" >&2; exit 2 ;;
esac
if [ "$mode" = exclusive ]; then
    exec flock -o "$gate" flock -o "$lock" "$@"
fi
flock -o "$gate" true
exec flock -o -s "$lock" "$@"
