#!/bin/sh
# unwound record with kernel unwinding, programs that start while recorded (issue 26's
# system-wide measure, docs/kernel-unwind.md "System-wide"): tests/programs/kfresh.c runs rounds
# of worker processes at once, each a fresh exec running a known number of work units in a
# shared library built here (no frame pointers: the kernel walks them only with the tables of
# the program, the library and libc loaded). A program's mappings are loaded as its records are
# read and its modules' tables built on a thread of their own, so after each program's first
# 200 samples fewer than 1% of its samples are finished in user space for want of them (record
# -v says so); every stack reaches main either way (a hand-over is finished exactly).
# Counts are of samples (CPU time the workers used), whatever the CPU time they received.
set -eu
B=${UW_BUILD:?} S=${UW_SRC:?}
W=$B/tests/work/kernel-fresh
rm -rf "$W"; mkdir -p "$W"
cd "$W"
uw=$B/unwound
cc -O2 -g -fomit-frame-pointer -shared -fPIC -DKFRESH_LIB -o libkfresh.so "$S/tests/programs/kfresh.c"
cc -O2 -g -fomit-frame-pointer -o kfresh "$S/tests/programs/kfresh.c" -L. -lkfresh -Wl,-rpath,'$ORIGIN'

# recordings of 3 rounds of 4 workers (about 0.4 s of CPU each) until 2,000 samples after the
# workers' first 200 (a busy machine gives as many: samples count the workers' CPU time)
late=0 latemiss=0 total=0 rooted=0 n=0
while [ $late -lt 2000 ] && [ $n -lt 6 ]; do
    n=$((n + 1))
    # (--unwind kernel: the workers start at once, and a task that exists when the program is
    # attached keeps its copies: the default's start, tests/e2e/record-start.sh)
    "$uw" record -v --unwind kernel -o fresh$n.data -- ./kfresh 3 4 400 2>fresh$n.err || { cat fresh$n.err; exit 1; }
    grep -q "stacks walked in the kernel" fresh$n.err || { echo "FAIL: not unwound in the kernel"; grep -v "info:" fresh$n.err; exit 1; }
    line=$(grep "finished in user space for want of" fresh$n.err) ||
        { echo "FAIL: record -v does not say how many samples were finished in user space after each program's first samples"; grep "kernel unwinding\|eBPF" fresh$n.err; exit 1; }
    echo "$line" | sed 's/.*kernel unwinding: /recording '$n': /'
    grep "stacks walked in the kernel" fresh$n.err | sed 's/.*(eBPF): /    /'
    set -- $(echo "$line" | sed 's/.*first \([0-9]*\) samples: \([0-9]*\) of \([0-9]*\) .*/\1 \2 \3/')
    [ "$1" = 200 ] || { echo "FAIL: unexpected line: $line"; exit 1; }
    latemiss=$((latemiss + $2)) late=$((late + $3))
    "$uw" report -i fresh$n.data --folded --no-kernel -o fresh$n.folded
    set -- $(awk '/^exe;.*;mix[^;]* [0-9]+$/ { c = $NF; t += c; if ($0 ~ /^exe;_start;__libc_start_main;(__libc_start_call_main;)?main;work;(kfresh_unit;)?stage1;stage2;mix[^;]* [0-9]+$/) r += c }
                  END { print t + 0, r + 0 }' fresh$n.folded)
    total=$((total + $1)) rooted=$((rooted + $2))
done
echo "after each program's first 200 samples: $latemiss of $late finished in user space for want of its mappings or a table ($n recordings)"
echo "samples in the workers' work: $rooted of $total reach main through work, stage1, stage2"
[ $late -ge 1000 ] || { echo "FAIL: too few samples after the workers' first 200 ($late)"; exit 1; }
[ $((latemiss * 100)) -lt $late ] || { echo "FAIL: 1% or more of the samples after a program's first 200 were finished in user space for want of its mappings or a table"; exit 1; }
[ $total -ge 1000 ] || { echo "FAIL: too few samples in the workers' work ($total)"; exit 1; }
[ $((rooted * 1000)) -ge $((total * 999)) ] || { echo "FAIL: fewer than 99.9% of the workers' stacks are whole"; sort -t' ' -k2 -rn fresh1.folded | head -5 | cut -c1-300; exit 1; }
echo "PASS"
