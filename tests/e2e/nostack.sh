#!/bin/sh
# Samples with registers and not one readable stack byte (tests/programs/nostack.c: the stack
# pointer on a page never touched, as in a new thread's first instants): the pc is the leaf,
# the frame perf reports, whoever took the sample. Recorded by perf (a copy of 0 bytes), by
# unwound with stack copies and with kernel unwinding (the walk hands over at frame 0 with
# nothing copied); each file's count of samples in nostack_spin is perf report's on that file,
# every one of them the stack "nostack;nostack_spin" in unwound's folded output and one
# location in pprof's. (Before: unwound reported these samples with no frame at all.)
set -eu
B=${UW_BUILD:?}
W=$B/tests/work/nostack
rm -rf "$W"; mkdir -p "$W"
cd "$W"
uw=$B/unwound
fail() { echo "FAIL: $*"; exit 1; }
prog=$B/tests/nostack
# about 0.3 s of CPU: some 300 samples at 999 Hz, whatever the CPU received
perf record -q -e cpu-clock -F 999 --call-graph dwarf -o perf.data -- "$prog" >/dev/null 2>perf.err || { cat perf.err; fail "perf record"; }
"$uw" record -q --unwind copy -o copy.data -- "$prog" >/dev/null 2>copy.err || { cat copy.err; fail "unwound record --unwind copy"; }
"$uw" record -q --unwind kernel -o kernel.data -- "$prog" >/dev/null 2>kernel.err || { cat kernel.err; fail "unwound record --unwind kernel"; }
for f in perf copy kernel; do
    want=$(perf report -i $f.data --stdio --no-children -F sample,sym 2>/dev/null | awk '/\[\.\] nostack_spin *$/ { print $1 }')
    [ -n "$want" ] && [ "$want" -ge 50 ] || { perf report -i $f.data --stdio --no-children -F sample,sym 2>&1 | head -20; fail "$f.data: perf report has ${want:-no} samples in nostack_spin, want at least 50"; }
    "$uw" report -i $f.data --folded -o $f.folded
    got=$(awk '/^nostack;nostack_spin [0-9]+$/ { print $2 }' $f.folded)
    [ "$got" = "$want" ] || { cat $f.folded; fail "$f.data: unwound's folded has ${got:-no} samples of nostack;nostack_spin, perf report $want in nostack_spin"; }
    ! grep -q "^nostack [0-9]" $f.folded || { cat $f.folded; fail "$f.data: samples with no frame"; }
    echo "$f.data: $got samples in nostack_spin, as perf report"
done
# pprof of the kernel recording: every sample counted, the samples in nostack_spin among them
if command -v go >/dev/null; then
    export HOME="${HOME:-/root}" GOCACHE="$W/gocache"
    "$uw" report -i kernel.data --format pprof -o kernel.pb.gz
    go tool pprof -top -nodecount=1000 -sample_index=samples kernel.pb.gz >top.txt 2>&1 || { cat top.txt; fail "go tool pprof"; }
    total=$(awk '{ n += $NF } END { print n }' kernel.folded)
    grep -q "of $total total" top.txt || { cat top.txt; fail "go tool pprof's total is not the recording's $total samples"; }
    grep -q " nostack_spin$" top.txt || { cat top.txt; fail "no nostack_spin in go tool pprof -top"; }
    echo "pprof: $total samples"
fi
echo PASS
