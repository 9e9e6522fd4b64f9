#!/bin/bash
# Off-CPU time (unwound record --off-cpu; docs/man/unwound-record.1), on a program built from
# tests/programs/offcpu.c that measures its own waits. Off-CPU durations are wall time: the
# program's measures move with a busy machine as the recording's do, so the comparisons hold
# however much CPU it gets.
#   mix      spin, nanosleep, pipe, mutex and short-lived threads: offcpu-time per function
#            equals perf script's reading of the file and is within 3% (+2 ms) of the
#            program's measure (tests/e2e/offcpu-check.py prints the table); the blocking
#            stacks copied at each switch (--unwind copy), none walked in the kernel
#   all      mix recorded system-wide (-a with the command): the same expectations
#   kernel-mix, kernel-all   the same with kernel unwinding (--unwind kernel): the waits timed
#            in the kernel by the eBPF program at the sched_switch tracepoint (--off-cpu-mode
#            kernel, the default there), their stacks walked there, none copied
#   switch-mix  the same with the switch events (--off-cpu-mode switch --unwind kernel): every
#            switch-out stack walked in the kernel by the program at the context-switches event
#   kernel-keyed  one thread waiting at one pc in two functions (the second two frames deeper)
#            at several hundred waits a second, with 5 stacks walked a second (--off-cpu-walks 5)
#            and 20 ms totals (--off-cpu-min 20000): most waits given the stack walked with
#            their key; each function's time within 3% (+2 ms) of the program's measure
#   kernel-deep  a blocking stack 200 levels of 1 KiB frames deep (deeper than any copy),
#            recorded with -p: every offcpu-time sample in it reaches main through all 200
#            levels, its time within 3% (+2 ms) of the program's measure
#   kernel-deep-tid  the same, the thread given with -t
#   block    a process blocked for the whole recording (-p): counted from the start to the end;
#            its stack read at the start (process_vm_readv), nothing copied at a switch
#   tid      the same, the thread given with -t
#   busy     the program alone (not recorded), on one CPU at real-time priority: its mix ends
#            (its main thread, not run for the length of a wait the helper thread did
#            meanwhile, waited for ever: seen once as a 300 s timeout of `record --off-cpu`)
#   formats  perf evlist/report/script and hotspot-perfparser read the file; unwound report's
#            outputs (top, script, folded, pprof, speedscope, html) of offcpu-time and --wall
#            add up to the same times
set -eu
B=${UW_BUILD:?} S=${UW_SRC:?}
mode=${1:?mode}
W=$B/tests/work/offcpu-$mode
rm -rf "$W"; mkdir -p "$W"; cd "$W"
prog=${UW_OFFCPU_PROG:-$B/tests/offcpu_prog} # (another build's unwound can be tried on this program)
U=$B/unwound
[ -x "$prog" ] || { echo "FAIL: $prog is not built"; exit 1; }

# Where the switch-out stacks came from, from the recorder's summary (rec.err):
#   stacks_from kernel|copy|blocked
# kernel: every switch-out sampled was walked in the kernel at the switch (but those of threads
# found blocked at the start, read then), none copied; with the waits timed in the kernel: the
# summary says so, some were walked, none copied, none left with its pc alone;
# copy: every one copied by the kernel, none walked; blocked: the one thread found blocked at the
# start read, nothing else (it never switched out).
stacks_from() {
    # (waits, kw, keyed, unkeyed: left set for the caller)
    local line sampled walked copied blocked n_cc n_oc s_cc s_oc
    # the summary's counts are the file's (perf script's): cpu-clock samples on the first line,
    # offcpu-time samples on the off-CPU line (the first once counted the switch-outs walked)
    n_cc=$(perf script -i perf.data -F event 2>/dev/null | grep -c "cpu-clock" || true)
    n_oc=$(perf script -i perf.data -F event 2>/dev/null | grep -c "offcpu-time" || true)
    s_cc=$(sed -n 's/^unwound record: \([0-9]*\) samples, .*/\1/p' rec.err)
    s_oc=$(sed -n 's/^unwound record: off-CPU: .* \([0-9]*\) offcpu-time samples,.*/\1/p' rec.err)
    [ "$s_cc" = "$n_cc" ] && [ "$s_oc" = "$n_oc" ] ||
        { grep "^unwound record: [0-9]* samples\|offcpu-time samples" rec.err
          echo "FAIL: the summary says $s_cc cpu-clock and $s_oc offcpu-time samples, the file holds $n_cc and $n_oc"; exit 1; }
    line=$(grep "^unwound record: off-CPU stacks: " rec.err) ||
        { cat rec.err; echo "FAIL: the summary does not say where the switch-out stacks came from"; exit 1; }
    if grep -q "^unwound record: off-CPU: [0-9]* waits timed in the kernel" rec.err; then
        read -r waits kw keyed unkeyed < <(sed -n 's/^unwound record: off-CPU: \([0-9]*\) waits timed in the kernel[^,]*, \([0-9]*\) with their stack walked[^,]*, \([0-9]*\) given the stack[^,]*, \([0-9]*\) with no stack walked.*/\1 \2 \3 \4/p' rec.err)
        read -r walked copied blocked < <(sed 's/.*stacks: \([0-9]*\) walked.*), \([0-9]*\) copied.*, \([0-9]*\) read from.*/\1 \2 \3/' <<<"$line")
        echo "waits timed in the kernel: $waits; walked $kw, given their key's stack $keyed, their pc alone $unkeyed; copied $copied, read at the start $blocked"
        case $1 in
        kernel) [ "${waits:-0}" -gt 0 ] && [ "$kw" -gt 0 ] && [ "$copied" = 0 ] && [ "$unkeyed" = 0 ] ||
                    { grep "off-CPU" rec.err; echo "FAIL: want waits timed in the kernel, stacks walked, none copied, none left with its pc alone"; exit 1; } ;;
        # (the walk budget spent: some waits of keys never walked, their pc alone; -a shares it
        # with every process of the machine)
        kernel-budget) [ "${waits:-0}" -gt 0 ] && [ "$kw" -gt 0 ] && [ "$copied" = 0 ] ||
                    { grep "off-CPU" rec.err; echo "FAIL: want waits timed in the kernel, stacks walked, none copied"; exit 1; } ;;
        blocked) [ "$blocked" = 1 ] && [ "$copied" = 0 ] ||
                     { echo "$line"; echo "FAIL: want the blocked thread read at the start, no stack copied"; exit 1; } ;;
        *) grep "off-CPU" rec.err; echo "FAIL: want $1, the waits were timed in the kernel"; exit 1 ;;
        esac
        return
    fi
    sampled=$(sed -n 's/^unwound record: off-CPU: \([0-9]*\) switch-outs sampled.*/\1/p' rec.err)
    read -r walked copied blocked < <(sed 's/.*stacks: \([0-9]*\) walked.*), \([0-9]*\) copied.*, \([0-9]*\) read from.*/\1 \2 \3/' <<<"$line")
    echo "switch-outs sampled: $sampled; stacks walked in the kernel $walked, copied $copied, read at the start $blocked"
    case $1 in
    kernel) [ "$sampled" -gt 0 ] && [ $((walked + blocked)) -ge "$sampled" ] && [ "$copied" = 0 ] ||
                { echo "$line"; echo "FAIL: want every one of $sampled switch-outs walked in the kernel, none copied"; exit 1; } ;;
    copy) [ "$sampled" -gt 0 ] && [ "$copied" -ge "$sampled" ] && [ "$walked" = 0 ] ||
              { echo "$line"; echo "FAIL: want every one of $sampled switch-outs copied (--unwind copy), none walked"; exit 1; } ;;
    blocked) [ "$blocked" = 1 ] && [ "$copied" = 0 ] ||
                 { echo "$line"; echo "FAIL: want the blocked thread read at the start, no stack copied"; exit 1; } ;;
    esac
}

case $mode in
busy)
    # (one CPU, real-time priority: a woken thread waits until the running one blocks, so the
    # helper takes each job, does it and is done before the main thread runs again: the old
    # wait hung in the first round, 8 runs of 8; this one ends 2000 rounds in 0.3 s whatever
    # else runs, the timeout a bound for a hang only)
    cpu=$(taskset -pc $$ | sed 's/.*: *//; s/[-,].*//')
    rc=0
    timeout 60 taskset -c "$cpu" chrt -f 1 "$prog" mix 2000 0 >prog.out || rc=$?
    [ $rc = 0 ] || { echo "FAIL: offcpu_prog mix 2000 0 on CPU $cpu at SCHED_FIFO 1: exit status $rc (124: it hung)"; exit 1; }
    grep -q "^spin_wall=" prog.out || { cat prog.out; echo "FAIL: no measures printed"; exit 1; }
    echo "mix of 2000 rounds on CPU $cpu at real-time priority: ended"
    ;;
mix | kernel-mix | switch-mix)
    rounds=8 unwind=copy opts=
    [ $mode != mix ] && unwind=kernel
    [ $mode = switch-mix ] && opts="--off-cpu-mode switch"
    "$U" record --off-cpu $opts --unwind $unwind -e cpu-clock -o perf.data -- "$prog" mix $rounds 20 >prog.out 2>rec.err ||
        { cat rec.err; echo "FAIL: unwound record --off-cpu $opts --unwind $unwind"; exit 1; }
    perf script -i perf.data -F tid,period,event,ip,sym >perf.txt 2>perf.err ||
        { cat perf.err; echo "FAIL: perf script"; exit 1; }
    "$U" report -i perf.data --event offcpu-time --folded -o folded.txt
    python3 "$S/tests/e2e/offcpu-check.py" mix perf.txt folded.txt prog.out $rounds ||
        { cat rec.err prog.out; echo "FAIL: (the recorder's summary and the program's measures above)"; exit 1; }
    stacks_from $unwind
    ;;
all | kernel-all)
    # every process of the machine is recorded; the program's functions are its own. A smaller
    # stack copy (its waits are a few frames deep) so that the rings keep up with the machine's
    # other switches
    rounds=4 unwind=copy
    [ $mode = kernel-all ] && unwind=kernel
    # (waits timed in the kernel: a walk budget for the machine's every process, whose new
    # keys, at the start of each, would otherwise take the program's turn on a busy machine)
    opts=
    [ $unwind = kernel ] && opts="--off-cpu-walks 5000"
    "$U" record -a --off-cpu $opts --unwind $unwind --stack-size 8192 -m 2048 -e cpu-clock -o perf.data -- "$prog" mix $rounds 20 \
        >prog.out 2>rec.err || { cat rec.err; echo "FAIL: unwound record -a --off-cpu --unwind $unwind"; exit 1; }
    perf script -i perf.data -F tid,period,event,ip,sym >perf.txt 2>perf.err ||
        { cat perf.err; echo "FAIL: perf script"; exit 1; }
    "$U" report -i perf.data --event offcpu-time --folded -o folded.txt
    python3 "$S/tests/e2e/offcpu-check.py" mix perf.txt folded.txt prog.out $rounds ||
        { cat rec.err; echo "FAIL: (the recorder's summary above: records lost?)"; exit 1; }
    [ $unwind = kernel ] && unwind=kernel-budget
    stacks_from $unwind
    ;;
kernel-deep | kernel-deep-tid)
    # The program waits on a pipe until the recording has begun (its tables and mappings loaded
    # before the events are enabled: no switch-out is handed to user space for want of them),
    # then sleeps at the bottom of 200 levels of 1 KiB frames
    depth=200 rounds=20
    mkfifo go
    "$prog" deep $depth $rounds 5 <go >prog.out &
    pid=$!
    exec 3>go
    trap 'kill $pid $rpid 2>/dev/null || true' EXIT
    rpid=
    for _ in $(seq 300); do grep -q ready prog.out && break; sleep 0.1; done
    grep -q ready prog.out || { echo "FAIL: the deep program did not start"; exit 1; }
    opt=-p; [ $mode = kernel-deep-tid ] && opt=-t # (its only thread: the tid is the pid)
    "$U" record -v --off-cpu --unwind kernel -e cpu-clock $opt $pid -o perf.data 2>rec.err &
    rpid=$!
    for _ in $(seq 600); do grep -q "recording: events enabled" rec.err && break; sleep 0.1; done
    grep -q "recording: events enabled" rec.err || { cat rec.err; echo "FAIL: the recording did not begin"; exit 1; }
    echo go >&3
    exec 3>&-
    wait $pid || { echo "FAIL: the deep program failed"; exit 1; }
    # (-p, -t: the recording ends when the task it follows has gone)
    wait $rpid || { cat rec.err; echo "FAIL: unwound record --off-cpu --unwind kernel $opt"; exit 1; }
    rpid=
    # (perf script shows 127 frames by default: the whole chain asked for)
    perf script --max-stack 1024 -i perf.data -F tid,period,event,ip,sym >perf.txt 2>perf.err ||
        { cat perf.err; echo "FAIL: perf script"; exit 1; }
    "$U" report -i perf.data --event offcpu-time --folded -o folded.txt
    python3 "$S/tests/e2e/offcpu-check.py" deep perf.txt folded.txt prog.out ||
        { grep -E "off-CPU|kernel unwinding: (waits|handed)" rec.err; exit 1; }
    stacks_from kernel
    ;;
kernel-keyed)
    # 240 waits, two in three in oc_key_a (3 ms each), one in three two frames deeper in
    # oc_key_b (7 ms), at the same pc (read); 5 stacks walked a second, 20 ms totals
    "$U" record --off-cpu --off-cpu-mode kernel --off-cpu-walks 5 --off-cpu-min 20000 -e cpu-clock -o perf.data -- \
        "$prog" keyed 240 3 7 >prog.out 2>rec.err || { cat rec.err; echo "FAIL: unwound record --off-cpu-mode kernel"; exit 1; }
    perf script -i perf.data -F tid,period,event,ip,sym >perf.txt 2>perf.err ||
        { cat perf.err; echo "FAIL: perf script"; exit 1; }
    "$U" report -i perf.data --event offcpu-time --folded -o folded.txt
    python3 "$S/tests/e2e/offcpu-check.py" keyed perf.txt folded.txt prog.out || { grep "off-CPU" rec.err; exit 1; }
    stacks_from kernel-budget
    # most waits not walked: given their key's stack (what the test is of)
    [ "$keyed" -gt $((waits / 2)) ] ||
        { grep "off-CPU" rec.err; echo "FAIL: want most of the $waits waits given their key's stack, $keyed were"; exit 1; }
    ;;
block | tid)
    "$prog" block >prog.out &
    pid=$!
    trap 'kill $pid 2>/dev/null || true' EXIT
    for _ in $(seq 300); do grep -q ready prog.out && break; sleep 0.1; done
    grep -q ready prog.out || { echo "FAIL: the blocked program did not start"; exit 1; }
    t0=$(date +%s%N)
    opt=-p; [ $mode = tid ] && opt=-t # (its only thread: the tid is the pid)
    "$U" record --off-cpu -e cpu-clock $opt $pid --duration 1 -o perf.data 2>rec.err ||
        { cat rec.err; echo "FAIL: unwound record --off-cpu $opt"; exit 1; }
    t1=$(date +%s%N)
    perf script -i perf.data -F tid,period,event,ip,sym >perf.txt 2>perf.err ||
        { cat perf.err; echo "FAIL: perf script"; exit 1; }
    # at least the recording's 1 s (it stops once 1 s has passed), at most the recorder's life
    python3 "$S/tests/e2e/offcpu-check.py" block perf.txt 1000000000 $((t1 - t0))
    stacks_from blocked
    ;;
formats)
    "$U" record -q --off-cpu -e cpu-clock -o perf.data -- "$prog" mix 4 10 >prog.out 2>rec.err ||
        { cat rec.err; echo "FAIL: unwound record --off-cpu"; exit 1; }
    # perf's own reading: the event as perf record --off-cpu names and types it
    perf evlist -v -i perf.data >evlist.txt 2>&1
    grep -q "^offcpu-time: type: 1, size: 128, config: 0xa, .*sample_period.*: 1," evlist.txt ||
        { cat evlist.txt; echo "FAIL: perf evlist: no offcpu-time event of type 1, config 0xa (BPF_OUTPUT)"; exit 1; }
    perf report -i perf.data --stdio --no-children --sort sym 2>perf-report.err >perf-report.txt ||
        { cat perf-report.err; echo "FAIL: perf report"; exit 1; }
    grep -q "of event 'offcpu-time'" perf-report.txt && grep -q "oc_sleep" perf-report.txt ||
        { head -40 perf-report.txt; echo "FAIL: perf report shows no offcpu-time with oc_sleep"; exit 1; }
    pp=/usr/lib/x86_64-linux-gnu/libexec/hotspot-perfparser
    [ -x $pp ] || { echo "FAIL: hotspot is not installed (scripts/install-deps)"; exit 1; }
    $pp --input perf.data --output pp.out 2>pp.err || { cat pp.err; echo "FAIL: hotspot-perfparser"; exit 1; }
    if grep -iq "error\|invalid\|unexpected" pp.err; then cat pp.err; echo "FAIL: hotspot-perfparser complains"; exit 1; fi
    for f in offcpu-time oc_sleep oc_mutex_wait; do
        grep -aq "$f" pp.out || { echo "FAIL: hotspot-perfparser does not see $f"; exit 1; }
    done
    # the totals per event, from perf script: every output must add up to them
    perf script -i perf.data -F period,event >periods.txt
    read -r off cpu nsamp < <(awk '$2=="offcpu-time:"{o+=$1; n++} $2=="cpu-clock:"{c+=$1} END {print o+0, c+0, n+0}' periods.txt)
    [ "$off" -gt 0 ] && [ "$cpu" -gt 0 ] || { echo "FAIL: no offcpu-time ($off) or cpu-clock ($cpu) time"; exit 1; }
    # perf report's total for the event is the time off the CPU (the periods), as perf script's
    ec=$(awk "/of event 'offcpu-time'/{f=1} f && /Event count/{print \$NF; exit}" perf-report.txt)
    [ "$ec" = "$off" ] || { echo "FAIL: perf report's offcpu-time Event count is '$ec', perf script's periods $off"; exit 1; }
    sum_folded() { awk '{s+=$NF} END {print s+0}' "$1"; }
    "$U" report -i perf.data --event offcpu-time --folded -o off.folded
    "$U" report -i perf.data --wall --folded -o wall.folded
    [ "$(sum_folded off.folded)" = "$off" ] || { echo "FAIL: folded offcpu-time adds up to $(sum_folded off.folded), perf script $off"; exit 1; }
    [ "$(sum_folded wall.folded)" = "$((off + cpu))" ] ||
        { echo "FAIL: folded --wall adds up to $(sum_folded wall.folded), want $off + $cpu"; exit 1; }
    # the table: offcpu-time's own, and --wall's, with perf's event count
    "$U" report -i perf.data --event offcpu-time --rows 200 >off.top
    grep -q "Event count (approx.): $off\$" off.top && grep -q "oc_sleep" off.top ||
        { head -20 off.top; echo "FAIL: report --event offcpu-time: want event count $off and oc_sleep"; exit 1; }
    "$U" report -i perf.data --wall >wall.top
    grep -q "of event 'wall'" wall.top && grep -q "Event count (approx.): $((off + cpu))\$" wall.top ||
        { head -20 wall.top; echo "FAIL: report --wall: want event 'wall' with count $((off + cpu))"; exit 1; }
    # script: the samples perf script shows
    "$U" report -i perf.data --event offcpu-time --script -o off.script
    n=$(grep -c "offcpu-time:" off.script || true)
    [ "$n" = "$nsamp" ] || { echo "FAIL: report --script shows $n offcpu-time samples, perf script $nsamp"; exit 1; }
    # pprof: both events in one profile, a column each
    "$U" report -i perf.data --format pprof -o all.pb.gz
    go tool pprof -raw -symbolize=none all.pb.gz >pprof.raw 2>pprof.err || { cat pprof.err; echo "FAIL: go tool pprof"; exit 1; }
    python3 - pprof.raw "$off" "$cpu" <<'PY'
import re, sys
raw, off, cpu = open(sys.argv[1]).read().splitlines(), int(sys.argv[2]), int(sys.argv[3])
i = raw.index("Samples:")
cols = raw[i + 1].split()
want = {"off-cpu/nanoseconds": off, "cpu/nanoseconds": cpu}
for c in want:
    if c not in cols:
        sys.exit(f"FAIL: pprof sample types {cols}: no {c}")
tot = [0] * len(cols)
for l in raw[i + 2:]:
    m = re.match(r"\s+([\d ]+?):", l)
    if m:
        v = [int(x) for x in m.group(1).split()]
        if len(v) == len(cols):
            tot = [a + b for a, b in zip(tot, v)]
for c, w in want.items():
    if tot[cols.index(c)] != w:
        sys.exit(f"FAIL: pprof {c} adds up to {tot[cols.index(c)]}, perf script {w}")
print(f"pprof: sample types {cols}; off-cpu {off} ns, cpu {cpu} ns as perf script")
PY
    # speedscope and html of --wall: nanoseconds, the same total
    "$U" report -i perf.data --wall --format speedscope -o wall.speedscope.json
    python3 - wall.speedscope.json $((off + cpu)) <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
tot = sum(sum(p["weights"]) for p in d["profiles"])
units = {p["unit"] for p in d["profiles"]}
if tot != int(sys.argv[2]) or units != {"nanoseconds"}:
    sys.exit(f"FAIL: speedscope --wall: {tot} {units}, want {sys.argv[2]} nanoseconds")
PY
    "$U" report -i perf.data --wall --format html -o wall.html
    grep -q "oc_mutex_wait" wall.html || { echo "FAIL: html --wall has no oc_mutex_wait"; exit 1; }
    "$U" report -i perf.data --event offcpu-time --format html -o off.html
    grep -q "oc_sleep" off.html || { echo "FAIL: html --event offcpu-time has no oc_sleep"; exit 1; }
    echo "formats: offcpu-time $off ns in $nsamp samples, cpu-clock $cpu ns: perf, hotspot-perfparser and every output agree"
    ;;
*) echo "unknown mode $mode"; exit 2 ;;
esac
