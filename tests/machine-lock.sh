#!/bin/bash
# Runs a test command under a lock shared by every unwound test suite on the machine (suites
# side by side: CI neighbours, clones, a developer's build beside `make check`). The CTest
# resource lock `perf` orders the tests of one suite; this one orders them across suites.
#
# Why: on this kernel (6.18), while any session records MMAP2 events with build-ids
# (`unwound record`, `perf record --buildid-mmap`), the kernel marks other sessions' MMAP2
# records PERF_RECORD_MISC_MMAP_BUILD_ID too, over their maj/min/ino, and perf 6.1 then aborts
# ("assertion failed at util/build-id.c") on what it recorded. So a test whose script records
# with build-ids runs alone (exclusive); any other test holding the perf lock runs beside other
# such tests (shared). A waiting exclusive test goes first: it holds the gate while it waits,
# and the shared ones pass the gate before they take the lock (no test waits for ever while
# shared ones keep coming).
#
# usage: machine-lock.sh COMMAND... (the mode is read from the first .sh argument: exclusive
# when it records with build-ids). The lock's directory: UW_MACHINE_LOCK_DIR, default /tmp.
# Processes the test leaves behind do not hold the lock (flock -o).
set -u
# tests/errexit.sh, read by this script's bash, unset BASH_ENV: the test's script needs it again
if trap -p ERR | grep -q uw_rc; then export BASH_ENV="$(cd "$(dirname "$0")" && pwd)/errexit.sh"; fi
dir=${UW_MACHINE_LOCK_DIR:-/tmp}
gate=$dir/unwound-tests.gate
lock=$dir/unwound-tests.lock
mode=shared
for a in "$@"; do
    case $a in
    *.sh)
        if grep -qE '^[^#]*(unwound"? record|\$U"? record|--buildid-mmap)' "$a"; then mode=exclusive; fi
        break ;;
    esac
done
if [ "$mode" = exclusive ]; then
    exec flock -o "$gate" flock -o "$lock" "$@"
fi
flock -o "$gate" true
exec flock -o -s "$lock" "$@"
