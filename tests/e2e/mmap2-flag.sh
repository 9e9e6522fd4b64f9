#!/bin/sh
# PERF_RECORD_MISC_MMAP_BUILD_ID on an MMAP2 record of an event that did not ask for build-ids
# (Linux 6.18 sets it on every session's records while one event has build_id, over device and
# inode): read as device and inode, so the module is found and named; `unwound inject` writes the
# record without the flag (perf 6.1 aborts on the file else). With build_id in the attribute the
# flag is trusted. Synthesized streams (synth.py mmap2-flag, mmap2-buildid) of a test program.
set -eu
B=${UW_BUILD:?UW_BUILD must point at the build directory}
S=${UW_SRC:?UW_SRC must point at the source directory}
W=$B/tests/work/mmap2-flag
rm -rf "$W"; mkdir -p "$W"
command -v perf >/dev/null || { echo "FAIL: perf is needed to read inject's output"; exit 1; }
P=$B/tests/e2e_fp
main=$(nm "$P" | awk '$2 == "T" && $3 == "main" {print $1}')
[ -n "$main" ] || { echo "FAIL: no main in $P"; exit 1; }
want="main+0x4 ($P)"
for mode in mmap2-flag mmap2-buildid; do
    python3 "$S/tests/e2e/synth.py" $mode "$P" "$main" "$W/$mode.data"
    "$B/unwound" report -i "$W/$mode.data" --script --kallsyms /dev/null -o "$W/$mode.txt" 2>"$W/$mode.err"
    grep -qF "$want" "$W/$mode.txt" ||
        { echo "FAIL: $mode: the frame is not named $want:"; cat "$W/$mode.txt" "$W/$mode.err"; exit 1; }
    "$B/unwound" inject -i "$W/$mode.data" -o "$W/$mode.inject" 2>"$W/$mode.err" || { cat "$W/$mode.err"; exit 1; }
    perf script -i "$W/$mode.inject" >"$W/$mode.perf" 2>"$W/$mode.perf.err" ||
        { echo "FAIL: $mode: perf script fails on inject's output:"; cat "$W/$mode.perf.err"; exit 1; }
    grep -qF "$want" "$W/$mode.perf" ||
        { echo "FAIL: $mode: perf script of inject's output:"; cat "$W/$mode.perf" "$W/$mode.perf.err"; exit 1; }
    echo "$mode: $want in report and in perf script of inject's output"
done
echo "mmap2-flag: ok"
