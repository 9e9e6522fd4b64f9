#!/bin/sh
# The live recorder and output files, each case a defect found by probing (issues 23 and 24):
#   pool      record -p/-t spun a CPU once a target thread exited (its ring reports POLLHUP for
#             ever) and never stopped: the recorder's CPU time while a pool's threads have
#             exited, and the end of the recording when its process (-p) or thread (-t) exits
#   unknown   a live tracker never asked the kernel about a process no event told it of:
#             livequery (public API: uw_unwind_sample, uw_tracker_lookup, and samples pushed
#             into uw_reader_new with no side-band), and record -p given a thread's id
#   outputs   partial outputs: report -o failing, SIGTERM'd or killed between the two steps
#             that put the file at its path; inject and diff failing; record killed in its first
#             milliseconds (a 0-byte perf.data), and the command it recorded left running
#   habits    perf habits: record -a -- CMD, -e cycles without hardware counters, -q
#   neighbour perf record beside unwound record -a: the recorder asked the kernel for build-ids
#             in MMAP2 records, the kernel then marked perf's records too and perf 6.1 aborted
#             ("assertion failed at util/build-id.c"); no event of the recording asks now
#   bidcache  record keeps the files samples landed in (and the kernel's symbols) in perf's
#             build-id cache as perf record does (-N: not), and its build-id table names the
#             host (pid -1): a program rebuilt after its recording is still read as it was,
#             by perf report and unwound report (perf took the rebuilt file for it before)
set -eu
case=$1
B=${UW_BUILD:?}
S=${UW_SRC:?}
SAN=${UW_SAN_FLAGS:-}
W=$B/tests/work/live-$case
rm -rf "$W"; mkdir -p "$W"
cd "$W"
U=$B/unwound
E=$B/tests/e2e_nofp
fail() { echo "FAIL: $*"; exit 1; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; } # user + system CPU, in clock ticks
# waits up to $2 seconds for process $1 to end: 0 when it did
gone_within() {
    i=0
    while kill -0 "$1" 2>/dev/null; do
        [ $i -lt $(($2 * 20)) ] || return 1
        sleep 0.05; i=$((i + 1))
    done
}
ntasks() { ls "/proc/$1/task" 2>/dev/null | wc -l; }
# what the test started is not left running when it fails, nor a tmpfs mounted
cleanup() {
    # shellcheck disable=SC2046
    kill $(jobs -p) 2>/dev/null || true
    if mountpoint -q "$W/small" 2>/dev/null; then umount "$W/small"; fi
}
trap cleanup EXIT
# temporaries beside an output (PATH.PID.new)
litter() { find . -maxdepth 2 -name '*.new' | tr '\n' ' '; }

case $case in
pool)
    cc -O2 -g -pthread -o pool "$S/tests/programs/pool.c"
    hz=$(getconf CLK_TCK)
    # -p: three threads work, then exit while the process sleeps on
    mkdir ctl
    ./pool ctl 3 & job=$!
    while [ "$(ntasks $job)" -lt 4 ]; do kill -0 $job 2>/dev/null || fail "pool exited before its threads ran"; sleep 0.02; done
    "$U" record -v -p $job -o p.data 2>rec.err & rec=$!
    while [ ! -s p.data ]; do kill -0 $rec 2>/dev/null || fail "record -p: $(cat rec.err)"; sleep 0.05; done
    # the kernel walker's program is verified while the recording runs (seconds of the
    # recorder's CPU under load): the idle window below begins once it is loaded
    if grep -q "stacks copied until the kernel's walker is verified" rec.err; then
        for _ in $(seq 1200); do grep -q "kernel unwinding: the program loaded\|kernel unwinding unavailable" rec.err && break; sleep 0.1; done
    fi
    sleep 0.5
    touch ctl/exit-threads
    while [ ! -e ctl/joined ]; do kill -0 $job 2>/dev/null || fail "pool exited before joining its threads"; sleep 0.05; done
    sleep 0.3
    kill -0 $rec 2>/dev/null || fail "record -p stopped while its process still runs"
    c0=$(ticks $rec); t=$(now)
    sleep 2
    c1=$(ticks $rec); d=$(elapsed "$t")
    cpu=$(awk -v c=$((c1 - c0)) -v hz="$hz" 'BEGIN { printf "%.2f", c / hz }')
    echo "record -p: $cpu s of CPU in $d s while the pool's threads have exited and its main thread sleeps"
    # (idle, it wakes 10 times a second; spinning on the dead rings it took a whole CPU, or
    # whatever share a busy machine gave it)
    awk -v c="$cpu" 'BEGIN { exit !(c < 0.25) }' || { kill -INT $rec; fail "the recorder spins: $cpu s of CPU in $d s"; }
    touch ctl/exit
    wait $job
    gone_within $rec 10 || { kill -INT $rec; wait $rec || true; fail "record -p did not stop within 10 s of its process's exit"; }
    rc=0; wait $rec || rc=$?
    [ $rc = 0 ] || fail "record -p: exit $rc ($(cat rec.err))"
    perf script -i p.data --no-inline 2>/dev/null | grep -q pool_work || fail "record -p: no samples of the pool's threads"
    echo "record -p: stopped when its process exited; the pool's samples are in the file"
    # -t: one thread, gone while its process runs on
    rm -rf ctl; mkdir ctl
    ./pool ctl 1 & job=$!
    while [ "$(ntasks $job)" -lt 2 ]; do kill -0 $job 2>/dev/null || fail "pool exited before its thread ran"; sleep 0.02; done
    tid=$(ls /proc/$job/task | grep -vx $job)
    "$U" record -q -t $tid -o t.data 2>rec.err & rec=$!
    while [ ! -s t.data ]; do kill -0 $rec 2>/dev/null || fail "record -t: $(cat rec.err)"; sleep 0.05; done
    touch ctl/exit-threads
    gone_within $rec 10 || { kill -INT $rec; wait $rec || true; touch ctl/exit; fail "record -t did not stop within 10 s of its thread's exit"; }
    kill -0 $job 2>/dev/null || fail "the process ended too (the test's premise)"
    rc=0; wait $rec || rc=$?
    touch ctl/exit
    wait $job
    [ $rc = 0 ] || fail "record -t: exit $rc ($(cat rec.err))"
    echo "record -t: stopped when its thread exited, its process still running"
    ;;
unknown)
    # shellcheck disable=SC2086
    cc -O2 -g $SAN -I"$S/include" -o livequery "$S/tests/tools/livequery.c" -L"$B" -lunwound -Wl,-rpath,"$B" -pthread
    ./livequery self || fail "livequery self"
    # (from a thread once the main thread exited: the leader's /proc/PID/maps is empty)
    ./livequery leaderexit || fail "livequery leaderexit"
    "$E" calltree 120 >/dev/null & job=$!
    while [ "$(readlink /proc/$job/exe)" != "$(readlink -f "$E")" ]; do sleep 0.02; done
    rc=0; ./livequery pid $job 300 || rc=$?
    kill $job; wait $job 2>/dev/null || true
    [ $rc = 0 ] || fail "livequery pid"
    # record -p with a thread's id: the thread's process is recorded (perf's -p), its samples
    # carry the process's id
    "$E" threads 60 >/dev/null & job=$!
    while [ "$(ntasks $job)" -lt 3 ]; do sleep 0.02; done
    tid=$(ls /proc/$job/task | grep -vx $job | head -1)
    "$U" record -q -p "$tid" --duration 1 -o tid.data 2>rec.err || fail "record -p $tid: $(cat rec.err)"
    kill $job; wait $job 2>/dev/null || true
    "$U" report -i tid.data --comm e2e_nofp --folded --no-kernel -o tid.folded
    total=$(awk '{ s += $NF } END { print s + 0 }' tid.folded)
    good=$(awk '/;start_thread;thread_main;thread_work[; ]/ && !/unknown/ { s += $NF } END { print s + 0 }' tid.folded)
    echo "record -p $tid (a thread of $job): $total samples named e2e_nofp, $good in start_thread;thread_main;thread_work"
    [ "$total" -gt 0 ] && [ $((good * 100)) -ge $((total * 99)) ] || { sort -k2 -nr tid.folded | head -5; fail "record -p TID: stacks not whole"; }
    ;;
outputs)
    perf record -q -e cpu-clock -F 999 --call-graph dwarf -o in.data -- "$E" calltree 0.3 >/dev/null 2>&1
    perf record -q -e cpu-clock -F 999 --call-graph dwarf -o - -- "$E" calltree 0.3 2>/dev/null >in.pipe
    # (a) a report that fails after reading (an event the stream lacks: known at its end)
    echo previous >out.txt
    rc=0; "$U" report -i - --event nosuch --folded -o out.txt <in.pipe 2>err.txt || rc=$?
    [ $rc = 2 ] || fail "report --event nosuch: exit $rc"
    [ "$(cat out.txt)" = previous ] && [ ! -e out.txt.old ] || fail "a failed report replaced the previous file: $(ls out.txt*)"
    echo "a failed report: the previous file untouched"
    # (b) a full disk: report, diff and inject fail, and leave the previous files as they were
    mkdir small
    mount -t tmpfs -o size=64k tmpfs small || fail "cannot mount a tmpfs (root is needed)"
    for f in r.txt d.txt i.data; do echo previous >small/$f; done
    dd if=/dev/zero of=small/fill bs=4k 2>/dev/null || true
    rc=0; "$U" report -i in.data --script -o small/r.txt 2>err.txt || rc=$?
    [ $rc = 1 ] && grep -q "No space left" err.txt || fail "report on a full disk: exit $rc, $(cat err.txt)"
    rc=0; "$U" diff in.data in.data -o small/d.txt 2>err.txt || rc=$?
    [ $rc = 1 ] && grep -q "No space left" err.txt || fail "diff on a full disk: exit $rc, $(cat err.txt)"
    rc=0; "$U" inject -i in.data -o small/i.data 2>err.txt || rc=$?
    [ $rc = 1 ] && grep -q "No space left" err.txt || fail "inject on a full disk: exit $rc, $(cat err.txt)"
    for f in r.txt d.txt i.data; do
        [ "$(cat small/$f)" = previous ] && [ ! -e small/$f.old ] || fail "a failed write replaced small/$f: $(ls small)"
    done
    [ -z "$(litter)" ] || fail "temporaries left: $(litter)"
    rm small/fill
    echo "a full disk: report, diff and inject leave the previous files as they were"
    # (c) SIGTERM: a report reading a stream that has not ended
    mkfifo fifo
    echo previous >out.txt
    (cat in.pipe; exec sleep 60) >fifo &
    feeder=$!
    "$U" report -i - --script -o out.txt <fifo 2>err.txt &
    rep=$!
    sleep 0.5
    kill -TERM $rep
    wait $rep 2>/dev/null || true
    kill $feeder 2>/dev/null || true
    [ "$(cat out.txt)" = previous ] && [ ! -e out.txt.old ] || fail "a report ended by SIGTERM replaced the previous file: $(ls out.txt*)"
    [ -z "$(litter)" ] || fail "temporaries left: $(litter)"
    echo "SIGTERM: the previous file untouched"
    # (d) SIGKILL between the two steps that put a file at its path (the previous one moved
    # aside, the new one named): strace kills at the second rename or the first link
    inj="-e trace=rename,linkat -e inject=rename:signal=KILL:when=2 -e inject=linkat:signal=KILL:when=1"
    for cmd in report inject record; do
        rm -f k.out k.out.old
        echo previous >k.out
        case $cmd in
        report) set -- report -i in.data --no-dwarf-cache --folded -o k.out ;;
        inject) set -- inject -i in.data -o k.out ;;
        record) set -- record -q -o k.out -- "$E" calltree 0.2 ;;
        esac
        # shellcheck disable=SC2086
        strace -f -qq -o /dev/null $inj "$U" "$@" >/dev/null 2>&1 || true
        [ -z "$(litter)" ] || fail "$cmd killed between its renames left $(litter)"
        [ "$(cat k.out 2>/dev/null)" = previous ] || [ "$(cat k.out.old 2>/dev/null)" = previous ] ||
            fail "$cmd killed between its renames lost the previous file: $(ls k.out*)"
    done
    echo "killed between the renames: no temporary left, the previous file kept"
    # (e) record killed in its first milliseconds: no file, or one that reads; never a 0-byte one
    for d in 0.02 0.05 0.1 0.2 0.4; do
        rm -f k.data k.data.old
        echo previous >k.data
        "$U" record -q -o k.data -- "$E" calltree 29.$$ >/dev/null 2>rec.err &
        rec=$!
        sleep $d
        kill -KILL $rec
        wait $rec 2>/dev/null || true
        if [ "$(cat k.data)" = previous ]; then
            [ ! -e k.data.old ] || fail "killed after $d s: the previous file was copied aside for nothing"
            state="the previous file in place"
        else
            [ "$(cat k.data.old 2>/dev/null)" = previous ] || fail "killed after $d s: the previous file lost"
            "$U" report -i k.data >/dev/null 2>rep.err || fail "killed after $d s: a file that does not read ($(stat -c %s k.data) bytes): $(cat rep.err)"
            state="a file that reads ($(stat -c %s k.data) bytes)"
        fi
        [ -z "$(litter)" ] || fail "killed after $d s: temporaries left: $(litter)"
        # (f) and the command it recorded ends with it
        gone=1
        for _ in $(seq 40); do pgrep -f "calltree 29.$$" >/dev/null || { gone=0; break; }; sleep 0.05; done
        pkill -f "calltree 29.$$" || true
        [ $gone = 0 ] || fail "killed after $d s: the recorded command still runs"
        echo "record killed after $d s: $state; the command ended with it"
    done
    ;;
habits)
    # -a with a command: the whole system while the command runs
    cp "$E" bystander
    ./bystander calltree 60 >/dev/null & by=$!
    rc=0; "$U" record -a -o a.data -- "$E" calltree 0.5 >/dev/null 2>a.err || rc=$?
    kill $by; wait $by 2>/dev/null || true
    [ $rc = 0 ] || fail "record -a -- CMD: exit $rc ($(cat a.err))"
    "$U" report -i a.data --folded --no-kernel -o a.folded
    grep -q "^e2e_nofp;.*main;tree_a;tree_a2;spin " a.folded || fail "record -a -- CMD: no stacks of the command"
    grep -q "^bystander;.*main;tree_a;tree_a2;spin " a.folded || fail "record -a -- CMD: no stacks of another process (not system-wide)"
    echo "record -a -- CMD: the command and the rest of the system"
    # -e cycles where there are no hardware counters: cpu-clock, said
    if perf stat -e cycles -x, true 2>&1 | grep -q "not supported"; then
        rc=0; "$U" record -e cycles -o c.data -- "$E" calltree 0.2 >/dev/null 2>c.err || rc=$?
        [ $rc = 0 ] || fail "record -e cycles without hardware counters: exit $rc ($(cat c.err))"
        grep -q "cycles event is not supported.*recording cpu-clock" c.err || fail "the fallback is not said: $(cat c.err)"
        perf script -i c.data -F event 2>/dev/null | grep -q "cpu-clock" || fail "the recording's event is not cpu-clock"
        # the default event too: the help says the fall-back is said (it was only with -v)
        "$U" record -o d.data -- "$E" calltree 0.2 >/dev/null 2>d.err || fail "record with the default event: $(cat d.err)"
        grep -q "cycles event is not supported.*recording cpu-clock" d.err || fail "the default event's fallback is not said: $(cat d.err)"
        rc=0; "$U" record -e instructions -o c.data -- true >/dev/null 2>c.err || rc=$?
        [ $rc = 1 ] && grep -q "instructions event is not supported here" c.err || fail "-e instructions: exit $rc, $(cat c.err)"
        echo "record -e cycles: cpu-clock, with a warning"
    else
        echo "record -e cycles: this machine has hardware counters, the fallback is not exercised here"
    fi
    # -q: nothing unless there is an error
    "$U" record -q -e cycles -o q.data -- "$E" calltree 0.2 >/dev/null 2>q.err || fail "record -q: $(cat q.err)"
    [ ! -s q.err ] || fail "record -q printed: $(cat q.err)"
    rc=0; "$U" record -q -o q.data -- ./no-such-program 2>q.err || rc=$?
    [ $rc = 255 ] && grep -q "no-such-program" q.err || fail "record -q hid an error: exit $rc, $(cat q.err)"
    echo "record -q: silent, but for errors"
    ;;
neighbour)
    "$U" record -q -a -F 99 -o rec.data -- sh -c 'while [ ! -e stop ]; do sleep 0.05; done' >/dev/null 2>rec.err &
    rec=$!
    i=0
    while [ ! -s rec.data ]; do
        kill -0 $rec 2>/dev/null || { cat rec.err; fail "unwound record -a ended"; }
        i=$((i + 1)); [ $i -lt 1200 ] || fail "unwound record -a wrote nothing in 60 s"
        sleep 0.05
    done
    ok=0
    for n in 1 2 3 4 5 6; do # each run maps a library while unwound records
        perf record -q -e cpu-clock -F 999 -o "p$n.data" -- "$E" shlib 0.2 >/dev/null 2>"p$n.err" ||
            { cat "p$n.err"; fail "perf record beside unwound record -a (run $n)"; }
        perf script -i "p$n.data" >"p$n.txt" 2>"p$n.serr" || { cat "p$n.serr"; fail "perf script beside unwound record -a (run $n)"; }
        grep -q spin_lib "p$n.txt" || fail "perf script (run $n) has no sample in spin_lib"
        ok=$((ok + 1))
    done
    touch stop
    wait $rec || { cat rec.err; fail "unwound record -a"; }
    bids=$(perf evlist -v -i rec.data 2>/dev/null | grep -c "build_id: 1" || true)
    [ "$bids" = 0 ] || fail "$bids events of unwound record ask for build-ids in MMAP2 records"
    echo "neighbour: $ok perf recordings beside unwound record -a read by perf script; no event asks for MMAP2 build-ids"
    ;;
bidcache)
    export HOME="$W/home"
    mkdir -p "$HOME"
    cat >p.c <<'EOF'
volatile unsigned long s;
__attribute__((noinline)) void FN(void) { for (int i = 0; i < 100000; i++) s += i; }
int main(void) { for (int k = 0; k < 600; k++) FN(); return 0; }
EOF
    gcc -O1 -g -DFN=old_work -o prog p.c
    "$U" record -q -o a.data -- ./prog || fail "record"
    bid=$(readelf -n prog | awk '/Build ID/ { print $3 }')
    hd=$(echo "$bid" | cut -c1-2); tl=$(echo "$bid" | cut -c3-)
    cmp prog "$HOME/.debug/.build-id/$hd/$tl/elf" || fail "the program is not in the build-id cache as perf keeps it"
    [ "$(readlink "$HOME/.debug/.build-id/$hd/$tl")" = "../..$W/prog/$bid" ] ||
        fail "the build-id link is not perf's: $(readlink "$HOME/.debug/.build-id/$hd/$tl")"
    # every file the recording names, and the kernel's symbols
    perf buildid-list -i a.data 2>/dev/null >bids.txt
    n=0
    while read -r b path; do
        h=$(echo "$b" | cut -c1-2); t=$(echo "$b" | cut -c3-)
        case $path in
        "[kernel.kallsyms]") leaf=kallsyms ;; "[vdso]") leaf=vdso ;; *) leaf=elf ;;
        esac
        [ -s "$HOME/.debug/.build-id/$h/$t/$leaf" ] || fail "$path ($b) not in the build-id cache"
        n=$((n + 1))
    done <bids.txt
    grep -q "kernel.kallsyms" bids.txt || fail "the recording names no kernel build-id"
    awk '$3 == "_text" { print $1; exit }' "$HOME/.debug/.build-id/$(awk '/kernel.kallsyms/ { print substr($1, 1, 2) "/" substr($1, 3) }' bids.txt)/kallsyms" |
        grep -q '[1-9a-f]' || fail "the kernel's symbols kept without addresses"
    # the program rebuilt: both reports read the recorded one
    gcc -O1 -g -DFN=new_work -o prog p.c
    perf report -i a.data --stdio --no-children 2>/dev/null >perf.txt
    grep -q "old_work" perf.txt && ! grep -q "new_work" perf.txt || { head -20 perf.txt; fail "perf report does not read the recorded program"; }
    "$U" report -i a.data -o unwound.txt
    grep -q "old_work" unwound.txt && ! grep -q "new_work" unwound.txt || fail "unwound report does not read the recorded program"
    echo "bidcache: $n files in the cache; after a rebuild perf report and unwound report read the recorded program"
    # -N: nothing kept; the rebuilt file is then never taken for the recorded one by unwound
    rm -rf "$HOME/.debug"
    gcc -O1 -g -DFN=old_work -o prog p.c
    "$U" record -q -N -o n.data -- ./prog || fail "record -N"
    [ ! -e "$HOME/.debug" ] || fail "record -N wrote the build-id cache: $(find "$HOME/.debug" | head -3)"
    gcc -O1 -g -DFN=new_work -o prog p.c
    "$U" report -i n.data -o n.txt 2>/dev/null
    ! grep -q "new_work" n.txt || fail "a rebuilt program taken for the recorded one"
    grep -q "1 with a different build-id" n.txt || fail "the rebuilt program not said to differ: $(grep modules n.txt)"
    echo "bidcache -N: nothing kept; the rebuilt program refused"
    ;;
*)
    fail "unknown case $case"
    ;;
esac
