#!/bin/sh
# A recording truncated while it is read (reported): the reader ends with an error that says so,
# never a signal (a mapped file takes SIGBUS on the pages past its new end). Both ways of reading
# a file: every stack whole (full_stacks) and stacks cut to a prefix (the default); the file is
# truncated by the reading program when its first sample is delivered (no timing involved).
set -eu
B=${UW_BUILD:?}
W=$B/tests/work/truncate-read
rm -rf "$W"; mkdir -p "$W"
# a recording of a fixed amount of work: many records past the first FINISHED_ROUND
perf record -q -e cpu-clock -F 999 --call-graph dwarf,8192 -o "$W/orig.data" -- "$B/tests/e2e_nofp" calltree 1 \
    >/dev/null 2>"$W/perf.err" || { echo "FAIL: perf record could not run"; cat "$W/perf.err"; exit 1; }
size=$(stat -c %s "$W/orig.data")
[ "$size" -gt $((1 << 20)) ] || { echo "FAIL: the recording has $size bytes, 1 MiB at least expected"; exit 1; }
# data_offset (u64 at byte 40) + 64 KiB: the header, the attributes and the first records stay
data=$(python3 -c 'import struct,sys; print(struct.unpack_from("<Q", open(sys.argv[1],"rb").read(48), 40)[0])' "$W/orig.data")
cut=$((data + 65536))
for mode in full cut; do
    cp "$W/orig.data" "$W/$mode.data"
    st=0
    "$B/tests/truncread" "$W/$mode.data" "$cut" "$mode" >"$W/$mode.out" 2>&1 || st=$?
    cat "$W/$mode.out"
    if [ "$st" -gt 128 ]; then
        echo "FAIL: $mode: the reader died of signal $((st - 128)) when the file was cut short while read"
        exit 1
    fi
    [ "$st" -eq 0 ] || { echo "FAIL: $mode: truncread exited $st"; exit 1; }
    [ "$(stat -c %s "$W/$mode.data")" -eq "$cut" ] || { echo "FAIL: $mode: the file was not truncated"; exit 1; }
done
echo "a recording truncated while read: an error, no signal, with and without full stacks"
