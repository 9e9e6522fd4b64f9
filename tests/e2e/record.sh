#!/bin/sh
# unwound record: the e2e programs recorded live must give exact stacks; perf script must print
# what unwound report prints for the output; perf report must read it. Then a shell loop of 200
# short-lived processes (each attributed to itself and symbolized), -p on a process whose
# libraries were mapped before recording, and -t whose mappings come from PROCMAP_QUERY.
set -eu
B=${UW_BUILD:?} S=${UW_SRC:?}
W=$B/tests/work/record
rm -rf "$W"; mkdir -p "$W"
cd "$W"
exe=$B/tests/e2e_nofp
check_chain() { # file chain...
    f=$1; shift
    for c in "$@"; do
        grep -q "$c " "$f" || { echo "FAIL: $f lacks $c"; sort -k2 -nr "$f" | head -5; exit 1; }
    done
}
for mode in calltree shlib threads signal; do
    # the signal handler holds a few percent of the samples: a longer run sees it for sure
    secs=1
    [ $mode = signal ] && secs=4
    "$B/unwound" record -q -o $mode.data -- "$exe" $mode $secs >/dev/null 2>$mode.err || { cat $mode.err; exit 1; }
    "$B/unwound" report -i $mode.data --comm e2e_nofp --folded --no-kernel -o $mode.folded
    # exact chains for every sample whose leaf is a listed one (as for the dwarf recordings)
    roots=main
    case $mode in
    calltree) expect="--expect main;tree_a;tree_a2;spin --expect main;tree_b;spin" ;;
    shlib) expect="--expect main;lib_entry;lib_inner;spin_lib --expect main;lib_entry;lib_inner;exe_callback;spin" ;;
    threads) roots=thread_main; expect="--expect thread_main;thread_work;spin" ;;
    signal) expect="--expect *;on_signal;sig_work;spin --expect main;signal_loop;spin" ;;
    esac
    # shellcheck disable=SC2086
    "$B/tests/stackcheck" $mode.data --callchains --comm e2e_nofp --roots $roots --min-root 99.5 --min-samples 500 $expect
    # nearly every stack reaches main or the thread routine
    total=$(awk '{s += $NF} END {print s}' $mode.folded)
    rooted=$(grep -E ";main;|;main |thread_main" $mode.folded | awk '{s += $NF} END {print s + 0}')
    [ $((rooted * 1000)) -ge $((total * 995)) ] || { echo "FAIL: $mode: $rooted of $total stacks reach a root"; exit 1; }
    # (perf prints a symbol table's versions, __libc_start_main@@GLIBC_2.34, when it names libc from
    # its symbol table rather than its debug file; unwound never does: README)
    perf script -i $mode.data --no-inline 2>/dev/null | sed 's/@@\{0,1\}[A-Z][A-Za-z0-9_.]*+0x/+0x/' >$mode.perf.txt
    "$B/unwound" report -i $mode.data --script --no-inline -o $mode.uw.txt
    cmp -s $mode.perf.txt $mode.uw.txt || { echo "FAIL: $mode: perf script and unwound report differ"; diff $mode.perf.txt $mode.uw.txt | head; exit 1; }
    perf report -i $mode.data --stdio --no-children 2>/dev/null | grep -q "spin" || { echo "FAIL: perf report"; exit 1; }
    # hotspot's parser reads it without complaint and sees the functions
    pp=/usr/lib/x86_64-linux-gnu/libexec/hotspot-perfparser
    [ -x $pp ] || { echo "FAIL: hotspot is not installed (scripts/install-deps)"; exit 1; }
    $pp --input $mode.data --output $mode.pp 2>$mode.pp.err || { echo "FAIL: hotspot-perfparser"; cat $mode.pp.err; exit 1; }
    if grep -iq "error\|invalid\|unexpected" $mode.pp.err; then echo "FAIL: hotspot-perfparser complains"; cat $mode.pp.err; exit 1; fi
    for f in main spin; do grep -aq "$f" $mode.pp || { echo "FAIL: hotspot does not see $f"; exit 1; }; done
    echo "$mode: $total samples, $rooted reach a root; perf script agrees"
done

# 200 short-lived processes
"$B/unwound" record -q -F 1999 -o loop.data -- sh -c "for i in \$(seq 200); do $exe calltree 0.02 >/dev/null; done" 2>loop.err
"$B/unwound" report -i loop.data --script --no-inline -o loop.txt
python3 - loop.txt <<'PY'
import sys
pids, bad, wrong, total = set(), 0, 0, 0
own = ("e2e_nofp", "libtw_nofp.so", "libc.so.6", "ld-linux-x86-64.so.2", "[vdso]", "[kernel.kallsyms]")
for b in open(sys.argv[1]).read().split("\n\n"):
    lines = b.strip("\n").split("\n")
    if not lines or not lines[0].startswith("e2e_nofp"):
        continue
    # a sample inside execve after the program's name was set: its user registers are still
    # the shell's, in a mapping gone with the old address space ([unknown], as perf prints it)
    if any("bprm_execve" in l for l in lines[1:]):
        continue
    total += 1
    pids.add(lines[0].split()[1])
    dsos = [l.rsplit("(", 1)[-1].rstrip(")").rsplit("/", 1)[-1] for l in lines[1:]]
    # every frame in the program's own modules (not the shell's), and named
    if any(d not in own for d in dsos):
        wrong += 1
    if any("[unknown]" in l for l in lines[1:]):
        bad += 1
print(f"loop: {total} samples in {len(pids)} processes, {wrong} with a frame in another process's module, {bad} with unnamed frames")
if len(pids) < 150 or wrong or bad * 100 > total:
    sys.exit(1)
PY

# -p: a process that runs already (its libraries were mapped before recording)
# (the programs below run until killed: a recorder slow to start, under ASan, found a program
# of 3 s gone before it recorded)
"$exe" calltree 60.$$ >/dev/null &
prog=$!
sleep 0.5
"$B/unwound" record -q -p $prog --duration 1 -o pid.data 2>pid.err
"$B/unwound" report -i pid.data --folded --no-kernel -o pid.folded
check_chain pid.folded "main;tree_a;tree_a2;spin" "main;tree_b;spin"
# -t: no mappings synthesized; they come from the kernel when a pc needs them (stack copies:
# with kernel unwinding the threads' processes' mappings are synthesized for the program's maps)
"$B/unwound" record -t $prog --unwind copy --duration 1 -o tid.data 2>tid.err
grep -q "mappings found on demand: [1-9][0-9]* with PROCMAP_QUERY" tid.err || { echo "FAIL: no PROCMAP_QUERY"; cat tid.err; exit 1; }
"$B/unwound" report -i tid.data --folded --no-kernel -o tid.folded
check_chain tid.folded "main;tree_a;tree_a2;spin"
perf script -i tid.data --no-inline 2>/dev/null | grep -q "tree_a2" || { echo "FAIL: perf script lacks the on-demand mappings"; exit 1; }
kill $prog 2>/dev/null || true; wait $prog 2>/dev/null || true
# a program deleted while it runs, another file put at its path: the mapped file itself is read
# through /proc/PID/map_files (its build-id recorded, its CFI used to unwind). The report names
# the frames from a copy of the program found by that build-id (--search-path; unwound record
# keeps no copies of the files it records, as perf record's build-id cache does: the test
# passed only while perf's cache in ~/.debug held the program from other tests' recordings)
cp "$exe" victim
mkdir -p kept; cp "$exe" kept/victim
./victim calltree 60.$$ >/dev/null &
prog=$!
# (deleted once it runs, however long the machine takes to start it)
until case $(readlink /proc/$prog/exe) in */victim) true ;; *) ! [ -e /proc/$prog ] ;; esac; do sleep 0.01; done
sleep 0.3
rm victim
cp /bin/true victim
"$B/unwound" record -q -p $prog --duration 1 -o deleted.data 2>deleted.err
"$B/unwound" report -i deleted.data --folded --no-kernel --search-path kept -o deleted.folded
check_chain deleted.folded "main;tree_a;tree_a2;spin"
kill $prog 2>/dev/null || true; wait $prog 2>/dev/null || true
# -a: every CPU, every process, the running program among them
"$exe" calltree 60.$$ >/dev/null &
prog=$!
sleep 0.3
"$B/unwound" record -q -a --duration 1 -o all.data 2>all.err
"$B/unwound" report -i all.data --comm e2e_nofp --folded --no-kernel -o all.folded
check_chain all.folded "main;tree_a;tree_a2;spin"
kill $prog 2>/dev/null || true; wait $prog 2>/dev/null || true

# Ctrl-C: a valid file, the command stopped
"$B/unwound" record -q -o int.data -- "$exe" calltree 30.$$ >/dev/null 2>int.err &
rec=$!
# (interrupted once the command has run 0.3 s of its own CPU, however long the machine takes
# to start it: its samples are in the file)
hz=$(getconf CLK_TCK)
cpu_of() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
for _ in $(seq 1200); do
    cmd=$(pgrep -f "^$exe calltree 30.$$" | head -1)
    [ -n "$cmd" ] && [ "$(cpu_of "$cmd")" -ge $((hz * 3 / 10)) ] && break
    sleep 0.1
done
[ -n "$cmd" ] && [ "$(cpu_of "$cmd")" -ge $((hz * 3 / 10)) ] || { echo "FAIL: the recorded command did not run 0.3 s in 120 s"; cat int.err; exit 1; }
kill -INT $rec
wait $rec || { echo "FAIL: record after SIGINT"; cat int.err; exit 1; }
pgrep -f "e2e_nofp calltree 30.$$" >/dev/null && { echo "FAIL: the command outlived the recording"; exit 1; }
perf script -i int.data --no-inline >int.txt 2>int.perr
grep -q tree_a2 int.txt || { echo "FAIL: the file after SIGINT: no sample in tree_a2"; cat int.err int.perr; grep -c "cpu-clock" int.txt; exit 1; }

# without privileges (perf_event_paranoid 2 when this runs as root in CI): user space only for a
# command; -a refused with the reason and the fix
if command -v setpriv >/dev/null && [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -ge 2 ]; then
    nb=$(mktemp -d)
    chmod 777 "$nb"
    setpriv --reuid=65534 --regid=65534 --clear-groups "$B/unwound" record -o "$nb/user.data" -- "$exe" calltree 0.5 \
        >/dev/null 2>"$nb/user.err" || { echo "FAIL: unprivileged record"; cat "$nb/user.err"; exit 1; }
    grep -q "kernel samples excluded" "$nb/user.err" || { echo "FAIL: no note about kernel samples"; exit 1; }
    "$B/unwound" report -i "$nb/user.data" --folded -o "$nb/user.folded"
    check_chain "$nb/user.folded" "main;tree_a;tree_a2;spin"
    if setpriv --reuid=65534 --regid=65534 --clear-groups "$B/unwound" record -q -a --duration 0.2 -o "$nb/a.data" 2>"$nb/a.err"; then
        echo "FAIL: -a without privileges"; exit 1
    fi
    grep -q "perf_event_paranoid is [0-9]*): run as root, grant CAP_PERFMON, or allow it with 'sysctl" "$nb/a.err" ||
        { echo "FAIL: the permission error does not explain"; cat "$nb/a.err"; exit 1; }
    rm -rf "$nb"
fi
echo "record: e2e modes, 200 processes, -p, -t, a deleted program, SIGINT and no privileges pass"
