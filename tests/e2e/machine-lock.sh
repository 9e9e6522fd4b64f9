#!/bin/sh
# tests/machine-lock.sh, the lock between test suites side by side: a test recording with
# build-ids or system-wide runs alone, others share, and a waiting exclusive test goes before shared ones that
# come after it. Scripts here block until told to go; the order they ran in is checked, and
# "waiting" is read from /proc/locks (no fixed wait).
set -eu
B=${UW_BUILD:?}
S=${UW_SRC:?}
W=$B/tests/work/machine-lock
rm -rf "$W"; mkdir -p "$W"
cd "$W"
fail() { echo "FAIL: $*"; cat log 2>/dev/null; exit 1; }
export UW_MACHINE_LOCK_DIR=$W
printf 'echo "$1 start" >>log\nwhile [ ! -e go ]; do sleep 0.05; done\necho "$1 end" >>log\n' >shared.sh
printf 'echo "$1 start" >>log\necho "$1 end" >>log\n' >excl.sh
L=$S/tests/machine-lock.sh
wait_for() { # what, condition: at most 60 s
    i=0
    while ! eval "$2"; do
        i=$((i + 1)); [ $i -lt 1200 ] || fail "timed out waiting for $1"
        sleep 0.05
    done
}
UW_MACHINE_LOCK_MODE=shared bash "$L" bash shared.sh A & a=$!
wait_for "A to start" 'grep -q "A start" log 2>/dev/null'
UW_MACHINE_LOCK_MODE=exclusive bash "$L" bash excl.sh E & e=$!
ino() { stat -c %i "$1"; }
# E holds the gate and waits for the lock: a blocked flock on the lock's inode
wait_for "E to wait" 'grep -q -- "-> FLOCK.*:$(ino unwound-tests.lock) " /proc/locks'
UW_MACHINE_LOCK_MODE=shared bash "$L" bash shared.sh B & b=$!
wait_for "B to wait at the gate" 'grep -q -- "-> FLOCK.*:$(ino unwound-tests.gate) " /proc/locks'
grep -q "E start" log && fail "the exclusive test ran beside a shared one"
touch go
wait $a; wait $e; wait $b
got=$(tr '\n' ' ' <log)
[ "$got" = "A start A end E start E end B start B end " ] || fail "order: $got"
echo "order: $got"
# and two shared tests run side by side
rm -f go log
UW_MACHINE_LOCK_MODE=shared bash "$L" bash shared.sh C & c=$!
UW_MACHINE_LOCK_MODE=shared bash "$L" bash shared.sh D & d=$!
wait_for "C and D to run together" '[ "$(grep -c start log 2>/dev/null)" = 2 ]'
touch go; wait $c; wait $d
echo "shared: two ran side by side"
# a mode not given is refused, not guessed
rc=0; env -u UW_MACHINE_LOCK_MODE bash "$L" true 2>err || rc=$?
[ $rc = 2 ] && grep -q "UW_MACHINE_LOCK_MODE" err || fail "no mode: exit $rc, '$(cat err)'"
echo "no mode: refused"
