#!/bin/sh
# Truncated stacks completed (--stitch), measured against the whole copies: a compiler run whose
# stacks straddle 16 KiB (tests/programs/deepc.py) recorded with the largest copy, then read with
# every copy cut to 16 and 8 KiB (uw_reader_opts.stack_limit): of the samples the cut stops
# short, how many stitching completes, and how many of those equal the whole copy's stack.
set -eu
B=${UW_BUILD:?UW_BUILD must point at the build directory}
S=${UW_SRC:?UW_SRC must point at the source directory}
W=$B/tests/work/stitch
rm -rf "$W"
mkdir -p "$W"
python3 "$S/tests/programs/deepc.py" 60 300 >"$W/deep.c"
perf record -q -e cpu-clock -F 499 --call-graph dwarf,65528 -o "$W/cc.data" -- gcc -O2 -c -o "$W/deep.o" "$W/deep.c" \
    2>"$W/perf.err" || { cat "$W/perf.err"; exit 1; }
"$B/tests/stitchcheck" "$W/cc.data" 16384 --comm cc1 --min-completed 25 --min-equal 99.5
"$B/tests/stitchcheck" "$W/cc.data" 8192 --comm cc1 --min-equal 99.5
# the report says what it did; without --stitch nothing is added
"$B/unwound" report -i "$W/cc.data" --comm cc1 --stack-limit 8192 --stitch -o "$W/on.txt"
"$B/unwound" report -i "$W/cc.data" --comm cc1 --stack-limit 8192 -o "$W/off.txt"
grep "^# stacks cut short by their copy: [1-9]" "$W/on.txt" || { echo "FAIL: no completed stack said"; exit 1; }
grep -q "stitched" "$W/on.txt" || { echo "FAIL: the stitched frames are not counted"; exit 1; }
! grep -q "^# stacks cut short by their copy" "$W/off.txt" || { echo "FAIL: stitching without --stitch"; exit 1; }
echo "stitch: ok"
