#!/bin/sh
# Samples kernel unwinding's program could not hand over (its ring full) are in the recording's
# loss as perf tells it: unwound record writes a LOST_SAMPLES record for the whole loss, so perf
# report's "Total Lost Samples", unwound report's count and the recorder's summary agree. The
# recorder is stopped (SIGSTOP) with a 4 KiB ring (UW_KUNW_RING_BYTES) while tests/deeprec's two
# threads recurse 200 frames of 1 KiB and spin: their records (~1.7 KiB each) fill the ring
# after two samples. The stop lasts until the workload has used 0.3 s of CPU (work done, not
# time passed).
set -eu
B=${UW_BUILD:?}
W=$B/tests/work/kernel-lost
rm -rf "$W"; mkdir -p "$W"
cd "$W"
uw=$B/unwound
fail() { echo "FAIL: $*"; exit 1; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }

mkfifo ready.fifo
UW_KUNW_RING_BYTES=4096 "$uw" record --unwind kernel -e cpu-clock -F 999 -o lost.data -- "$B/tests/deeprec" 200 \
    >ready.fifo 2>rec.err &
rec=$!
# (the fifo kept open for reading to the end: a write with no reader would be a SIGPIPE)
exec 3<ready.fifo
read -r -t 120 line <&3 || true
[ "$line" = ready ] || { cat rec.err; fail "deeprec did not start under the recorder (got '$line')"; }
wl=$(pgrep -P "$rec" -x deeprec || true)
[ -n "$wl" ] || fail "no deeprec child of the recorder"
kill -STOP "$rec"
t0=$(cpu_ticks "$wl")
hz=$(getconf CLK_TCK)
i=0
while [ $(( $(cpu_ticks "$wl") - t0 )) -lt $(( 3 * hz / 10 )) ]; do
    i=$((i + 1))
    [ $i -lt 6000 ] || { kill -CONT "$rec"; kill -INT "$rec"; fail "the workload used no CPU in 10 minutes"; }
    kill -0 "$wl" 2>/dev/null || { kill -CONT "$rec"; kill -INT "$rec"; fail "deeprec exited under the stopped recorder"; }
    sleep 0.1
done
kill -CONT "$rec"
# (a few samples more after the stop, then the end)
t0=$(cpu_ticks "$wl")
while [ $(( $(cpu_ticks "$wl") - t0 )) -lt $(( hz / 10 )) ]; do
    kill -0 "$wl" 2>/dev/null || { kill -INT "$rec"; fail "deeprec exited under the recorder"; }
    sleep 0.1
done
kill -INT "$rec"
wait "$rec" || { cat rec.err; fail "unwound record failed"; }
cat rec.err
prog=$(sed -n 's/.* \([0-9]*\) lost by the program;.*/\1/p' rec.err)
all=$(sed -n 's/^unwound record: .* \([0-9]*\) lost, .* written to .*/\1/p' rec.err)
[ -n "$prog" ] && [ -n "$all" ] || fail "the summary does not say what was lost"
[ "$prog" -gt 0 ] || fail "the program lost no samples with its ring full: the test tests nothing"
[ "$all" -ge "$prog" ] || fail "the summary's loss $all is less than the program's $prog"
perf report -i lost.data --stdio >perf.out 2>perf.err || { cat perf.err; fail "perf report could not read the recording"; }
pl=$(sed -n 's/^# Total Lost Samples: \([0-9]*\)$/\1/p' perf.out)
echo "lost: the recorder $all (the program $prog), perf report $pl"
[ "$pl" = "$all" ] || fail "perf report's Total Lost Samples is '$pl', the recorder lost $all"
"$uw" report -i lost.data >uw.out 2>uw.err || { cat uw.err; fail "unwound report"; }
grep -q "^# input: $all events lost" uw.out || { grep "^# input" uw.out; fail "unwound report does not count $all lost"; }
echo "kernel-lost: ok"
