#!/bin/sh
# Truncated stacks completed (--stitch), measured against the whole copies: recordings made with
# the largest copy, then read with every copy cut to 16 and 8 KiB (uw_reader_opts.stack_limit):
# of the samples the cut stops short, how many stitching completes, and how many of those equal
# the whole copy's stack. Two compiler runs: deeply nested code (tests/programs/deepc.py), where
# the recursion leaves most missing frames in the thread's other samples, and a build of some of
# our sources, where a pass calls the same function from two call sites at the same depth (a
# one-sided rule completes such stacks with the wrong caller; the two-sided one must not).
set -eu
B=${UW_BUILD:?UW_BUILD must point at the build directory}
S=${UW_SRC:?UW_SRC must point at the source directory}
W=$B/tests/work/stitch
rm -rf "$W"
mkdir -p "$W"
# (600 functions: about 2,500 samples, enough that the share completed varies little: with 300,
# 9-32% at 8 KiB over ten recordings on a busy machine, with 600 30-52%)
python3 "$S/tests/programs/deepc.py" 60 600 >"$W/deep.c"
perf record -q -e cpu-clock -F 1999 --call-graph dwarf,65528 -o "$W/cc.data" -- gcc -O2 -c -o "$W/deep.o" "$W/deep.c" \
    2>"$W/perf.err" || { cat "$W/perf.err"; exit 1; }
# (the two-sided rule still takes a rare brief call from another call site, between two
# samples that agree, for the same activation: measured 0-1.2% of those it completes)
"$B/tests/stitchcheck" "$W/cc.data" 16384 --comm cc1 --min-completed 30 --min-equal 97
"$B/tests/stitchcheck" "$W/cc.data" 8192 --comm cc1 --min-completed 10 --min-equal 97
cd "$S"
perf record -q -e cpu-clock -F 1999 --call-graph dwarf,65528 -o "$W/build.data" -- sh -c \
    "for f in lib/cfi/cfi_parse.c lib/perf/read/reader_sample.c lib/process/tracker.c lib/perf/read/perf_reader.c; do
         gcc -O2 -g -D_GNU_SOURCE -Iinclude -Ilib -c \$f -o '$W/x.o' || exit 1; done" \
    2>"$W/perf.err" || { cat "$W/perf.err"; exit 1; }
"$B/tests/stitchcheck" "$W/build.data" 8192 --comm cc1 --min-equal 99.5
"$B/tests/stitchcheck" "$W/build.data" 16384 --comm cc1 --min-equal 99.5
# the report says what it did; without --stitch nothing is added; held samples all come out
"$B/unwound" report -i "$W/cc.data" --comm cc1 --stack-limit 8192 --stitch -o "$W/on.txt"
"$B/unwound" report -i "$W/cc.data" --comm cc1 --stack-limit 8192 -o "$W/off.txt"
grep "^# stacks cut short by their copy: [1-9]" "$W/on.txt" || { echo "FAIL: no completed stack said"; exit 1; }
grep -q "stitched" "$W/on.txt" || { echo "FAIL: the stitched frames are not counted"; exit 1; }
! grep -q "^# stacks cut short by their copy" "$W/off.txt" || { echo "FAIL: stitching without --stitch"; exit 1; }
n_on=$(grep -m1 "^# [0-9]* samples" "$W/on.txt" | cut -d' ' -f2)
n_off=$(grep -m1 "^# [0-9]* samples" "$W/off.txt" | cut -d' ' -f2)
[ "$n_on" = "$n_off" ] || { echo "FAIL: $n_on samples with --stitch, $n_off without"; exit 1; }
# a recording whose copies are 8 KiB, through inject --stitch: perf reads every sample, in order
perf record -q -e cpu-clock -F 1999 --call-graph dwarf,8192 -o "$W/small.data" -- gcc -O2 -c -o "$W/deep.o" "$W/deep.c" \
    2>"$W/perf.err" || { cat "$W/perf.err"; exit 1; }
"$B/unwound" inject --stitch -i "$W/small.data" -o "$W/small.inj" 2>"$W/inject.err"
perf script -i "$W/small.data" -F tid,time 2>/dev/null | wc -l >"$W/n.orig"
perf script -i "$W/small.inj" -F tid,time 2>"$W/script.err" | wc -l >"$W/n.inj"
cmp -s "$W/n.orig" "$W/n.inj" || { echo "FAIL: $(cat "$W/n.inj") samples after inject --stitch, $(cat "$W/n.orig") before"; exit 1; }
! grep -qi "out of order" "$W/script.err" || { cat "$W/script.err"; echo "FAIL: perf saw samples out of order"; exit 1; }
"$B/unwound" report -i "$W/small.inj" --comm cc1 -o "$W/inj.txt"
grep -q "reach a root" "$W/inj.txt"
# live: unwound record --stitch with 8 KiB copies says what it completed; perf reads every sample
"$B/unwound" record -F 1999 -e cpu-clock --stack-size 8192 --stitch -o "$W/rec.data" -- \
    gcc -O2 -c -o "$W/deep.o" "$W/deep.c" 2>"$W/rec.err" || { cat "$W/rec.err"; exit 1; }
cat "$W/rec.err"
grep -q "^unwound record: stacks cut short by their copy: [1-9][0-9]* completed" "$W/rec.err" ||
    { echo "FAIL: record --stitch completed nothing"; exit 1; }
n_rec=$(sed -n 's/^unwound record: \([0-9]*\) samples.*/\1/p' "$W/rec.err")
n_read=$(perf script -i "$W/rec.data" -F tid 2>/dev/null | wc -l)
[ "$n_rec" = "$n_read" ] || { echo "FAIL: record wrote $n_rec samples, perf read $n_read"; exit 1; }
echo "stitch: ok"
