#!/bin/sh
# --unwind copy with 200 busy threads (tests/programs/busy.c), as perf record opens its events:
#   - -p of a running process: the 200 threads' events on each CPU write into one ring buffer
#     per CPU (PERF_EVENT_IOC_SET_OUTPUT), as perf record -p's do. Before, each thread had a
#     ring of its own on each CPU: 400 buffers of -m pages (at the default -m 1024, 1.6 GiB the
#     kernel allocated and zeroed for about 45 s on this machine before the first sample, by
#     when the threads had exited), all polled and read. The count of buffers the recorder maps
#     is fixed by what it opens, not by the CPU it or the threads get: this part can fail only
#     for that.
#   - a command: its events, inherited by its threads, one buffer per CPU (what perf record --
#     CMD opens);
#   - both: the loss the summary says is the file's: the LOST records' sum (as the kernel wrote
#     them) and the LOST_SAMPLES record's at the end, perf report's "Total Lost Samples" (it
#     said 0: the record was written only for kernel unwinding's program's loss); the command's samples from at least half its threads (each runs 10 ms of
#     its own CPU: some 10 samples at 999 Hz).
set -eu
B=${UW_BUILD:?UW_BUILD must point at the build directory}
W=$B/tests/work/copy-load
rm -rf "$W"; mkdir -p "$W"
cd "$W"
uw=$B/unwound
busy=$B/tests/busy
fail() { echo "FAIL: $*"; exit 1; }
ncpu=$(getconf _NPROCESSORS_CONF)
busy_pid=
rec_pid=
cleanup() {
    [ -z "$rec_pid" ] || kill "$rec_pid" 2>/dev/null || true
    [ -z "$busy_pid" ] || kill "$busy_pid" 2>/dev/null || true
}
trap cleanup EXIT

# a perf.data file's SAMPLE records, its LOST records' and its LOST_SAMPLES records' sums of lost
# samples
cat >count.py <<'EOF'
import struct, sys
d = open(sys.argv[1], "rb").read()
assert d[:8] == b"PERFILE2", "not a perf.data file"
off, size = struct.unpack_from("<QQ", d, 40)
p, samples, lost, lost_samples = off, 0, 0, 0
while p + 8 <= off + size:
    typ, _, sz = struct.unpack_from("<IHH", d, p)
    if sz < 8:
        break
    samples += typ == 9
    if typ == 2:
        lost += struct.unpack_from("<Q", d, p + 16)[0]
    elif typ == 13:
        lost_samples += struct.unpack_from("<Q", d, p + 8)[0]
    p += sz
print(samples, lost, lost_samples)
EOF

# The summary's samples and loss are the file's; samples from at least $2 threads.
check_file() {
    f=$1 min_threads=$2
    set -- $(python3 count.py "$f.data")
    samples=$1 lost=$2 lost_samples=$3
    line=$(grep "^unwound record: [0-9]* samples" "$f.err") || { cat "$f.err"; fail "$f: no summary"; }
    said_samples=$(echo "$line" | sed -n 's/^unwound record: \([0-9]*\) samples.*/\1/p')
    said_lost=$(echo "$line" | sed -n 's/.*), \([0-9]*\) lost,.*/\1/p')
    [ "$said_samples" = "$samples" ] || fail "$f: the summary says $said_samples samples, the file has $samples"
    [ "$said_lost" = "$lost" ] || fail "$f: the summary says $said_lost lost, the file's LOST records $lost"
    [ "$lost_samples" = "$lost" ] || fail "$f: the file's LOST_SAMPLES records say $lost_samples lost, its LOST records $lost"
    pl=$(perf report -i "$f.data" --stdio 2>/dev/null | sed -n 's/^# Total Lost Samples: \([0-9]*\)$/\1/p')
    [ "$pl" = "$lost" ] || fail "$f: perf report's Total Lost Samples is '$pl', the recorder lost $lost"
    threads=$(perf script -i "$f.data" -F tid 2>/dev/null | sort -u | wc -l)
    [ "$threads" -ge "$min_threads" ] || fail "$f: samples from $threads threads, want at least $min_threads of 200"
    echo "$f: $samples samples, $lost lost (the summary's figures), from $threads threads"
}

# ---- -p: one buffer per CPU
"$busy" 200 100000 & busy_pid=$!
i=0
while [ "$(ls /proc/$busy_pid/task | wc -l)" -lt 201 ]; do
    i=$((i + 1)); [ $i -lt 600 ] || fail "busy did not start its 200 threads"; sleep 0.1
done
# (ended by SIGINT once its buffers are counted; --duration only bounds a test gone wrong)
"$uw" record --unwind copy -N -e cpu-clock -F 999 -m 16 --duration 600 -p "$busy_pid" -o pid.data >pid.out 2>pid.err & rec_pid=$!
# every event open: 200 threads + the main one on each CPU
i=0
while [ "$(ls -l /proc/$rec_pid/fd 2>/dev/null | grep -c 'anon_inode:\[perf_event\]')" -lt $((201 * ncpu)) ]; do
    i=$((i + 1)); [ $i -lt 1200 ] || { cat pid.err; fail "the recorder did not open an event per thread and CPU"; }
    kill -0 $rec_pid 2>/dev/null || { cat pid.err; fail "the recorder ended before it had an event open for each of busy's $(ls /proc/$busy_pid/task | wc -l) threads on each CPU"; }
    sleep 0.1
done
# (each buffer is one mapping of an event's fd)
buffers=$(grep -c 'anon_inode:\[perf_event\]' /proc/$rec_pid/maps || true)
echo "-p of 201 threads: $(ls -l /proc/$rec_pid/fd | grep -c 'anon_inode:\[perf_event\]') events, $buffers ring buffers mapped"
[ "$buffers" = "$ncpu" ] || fail "-p of 201 threads: $buffers ring buffers mapped, want one per CPU ($ncpu), as perf record -p"
sleep 2 # (some samples)
kill -INT $rec_pid
wait $rec_pid || { cat pid.err; fail "unwound record -p"; }
rec_pid=
kill $busy_pid; wait $busy_pid 2>/dev/null || true
busy_pid=
# (a few threads at least: their events write into the shared buffers; how many ran in the 3 s
# depends on the CPU they got)
check_file pid 2

# ---- a command: one buffer per CPU, inherited by its threads
"$uw" record --unwind copy -N -e cpu-clock -F 999 -m 128 -o cmd.data -- "$busy" 200 10 >cmd.out 2>cmd.err & rec_pid=$!
i=0
while :; do
    child=$(pgrep -P $rec_pid -x busy || true)
    # (threads of its own running: inherited events; all 200 at once need not be, they
    # start and end as the CPU lets them)
    [ -z "$child" ] || [ "$(ls /proc/$child/task 2>/dev/null | wc -l)" -lt 3 ] || break
    i=$((i + 1)); [ $i -lt 1200 ] || fail "the command did not start its threads"
    kill -0 $rec_pid 2>/dev/null || { cat cmd.err; fail "the recorder ended before the command had threads"; }
    sleep 0.05
done
buffers=$(grep -c 'anon_inode:\[perf_event\]' /proc/$rec_pid/maps || true)
echo "a command with threads: $buffers ring buffers mapped"
[ "$buffers" = "$ncpu" ] || fail "a command with threads: $buffers ring buffers mapped, want one per CPU ($ncpu)"
wait $rec_pid || { cat cmd.err; fail "unwound record -- busy"; }
rec_pid=
check_file cmd 100
echo PASS
