#!/bin/sh
# unwound record -a with kernel unwinding: samples with no user stack (the idle task, kernel
# threads) are kernel samples at their kernel ip, as perf and --unwind copy write them. The
# program flagged a sample as taken in the kernel only once it had read the task's user
# registers: a kernel thread (no mm) or the idle task came out as a user sample at ip 0, and perf
# report of an idle machine said "98.82% swapper [.] 0000000000000000".
# Runs alone (UW_ALONE_TESTS): the machine must be partly idle while it records.
set -eu
B=${UW_BUILD:?}
W=$B/tests/work/kernel-idle
rm -rf "$W"; mkdir -p "$W"
cd "$W"
uw=$B/unwound
command -v perf >/dev/null || { echo "FAIL: perf is not installed"; exit 1; }

# The samples of the idle task (pid 0) and of kernel threads (kthreadd's children): those of a
# recording, "pid ip symbol (dso)" per line, checked; and counted, to say whether there were any.
check() { # mode
    mode=$1
    # kernel threads now; a thread that ended since is not counted, which only makes the check weaker
    kthreads=$(for f in /proc/[0-9]*/stat; do sed 's/.*) [A-Z] \([0-9]*\) .*/\1/' "$f" 2>/dev/null | {
        read -r pp || true; p=${f#/proc/}; p=${p%/stat}
        if [ "$p" = 2 ] || [ "$pp" = 2 ]; then echo "$p"; fi; }; done | tr '\n' ' ')
    perf script -i $mode.data -G -F pid,ip,sym,dso 2>/dev/null >$mode.ips
    # pid, ip, symbol..., (dso)
    set -- $(awk -v kt=" $kthreads " '
        { pid = $1; ip = $2; k = ip ~ /^ffffffff/ && $NF == "([kernel.kallsyms])" && $3 !~ /^\[unknown\]/ }
        pid == 0 { idle++; if (!k) bad++ }
        pid != 0 && index(kt, " " pid " ") { kth++; if (!k) bad++ }
        ip == "0" { zero++ }
        END { print NR + 0, idle + 0, kth + 0, bad + 0, zero + 0 }' $mode.ips)
    samples=$1 idle=$2 kth=$3 bad=$4 zero=$5
}

for mode in kernel copy; do
    # the whole machine while a command sleeps: the idle task's samples where a CPU is idle,
    # kernel threads' (a loaded machine may have no idle time: up to 10 recordings until some)
    n=0
    while :; do
        n=$((n + 1))
        "$uw" record -a --unwind $mode -o $mode.data -- sleep 1 >/dev/null 2>$mode.err || { cat $mode.err; exit 1; }
        if [ $mode = kernel ]; then
            grep -q "stacks walked in the kernel" $mode.err || { echo "FAIL: not unwound in the kernel"; cat $mode.err; exit 1; }
        fi
        check $mode
        [ $((idle + kth)) -eq 0 ] && [ $n -lt 10 ] || break
    done
    echo "$mode: $samples samples; $idle of the idle task, $kth of kernel threads: $bad of those not a kernel sample at a named kernel function; $zero samples at ip 0"
    # (copy mode is the reference: the kernel's own samples, nothing of this test's)
    [ $((idle + kth)) -gt 0 ] || [ $mode = copy ] ||
        { echo "FAIL: $mode: no sample of the idle task or of a kernel thread in $n recordings (a machine never idle?)"; exit 1; }
    [ "$bad" = 0 ] || { echo "FAIL: $mode: samples of the idle task or of kernel threads that are not kernel samples"; awk -v kt=" $kthreads " '($1 == 0 || index(kt, " " $1 " ")) && $2 !~ /^ffffffff/' $mode.ips | sort | uniq -c | sort -rn | head -3; exit 1; }
    [ "$zero" = 0 ] || { echo "FAIL: $mode: samples at ip 0"; awk '$2 == "0"' $mode.ips | head -3; exit 1; }
    # perf report's view: the idle task's rows are [k] rows, never "[.] 0000000000000000"
    perf report -i $mode.data --stdio --no-children -g none --sort comm,sym 2>/dev/null | grep -v '^#' | grep . >$mode.report || true
    grep -E "swapper +\[\.\]" $mode.report && { echo "FAIL: $mode: perf report has user rows for swapper"; exit 1; }
    if [ "$idle" -gt 0 ]; then
        grep -qE "swapper +\[k\] [a-z_]" $mode.report || { echo "FAIL: $mode: perf report has no kernel row for swapper"; head -5 $mode.report; exit 1; }
        echo "$mode: perf report's first swapper row:$(grep -m1 swapper $mode.report)"
    fi
done
echo "PASS"
