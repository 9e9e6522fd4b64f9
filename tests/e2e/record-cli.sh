#!/bin/sh
# unwound record as a perf user types it: -g, --call-graph dwarf,SIZE and fp, -C, and the
# command's exit status passed on by perf's rules; a command that cannot run leaves no
# recording and the previous file in place.
set -eu
B=${UW_BUILD:?}
W=$B/tests/work/record-cli
rm -rf "$W"; mkdir -p "$W"
cd "$W"
U=$B/unwound
E=$B/tests/e2e_nofp
fail() { echo "FAIL: $*"; exit 1; }
status() { rc=0; "$@" >/dev/null 2>err.txt || rc=$?; echo $rc; }

# exit status: the command's, its signal's (128 + n, as the shell and perf report it), 255
# when it cannot be executed
[ "$(status "$U" record -q -o a.data -- sh -c 'exit 3')" = 3 ] || fail "exit 3 not passed on"
[ "$(status "$U" record -q -o a.data -- /bin/false)" = 1 ] || fail "/bin/false: not 1"
[ "$(status "$U" record -q -o a.data -- /bin/true)" = 0 ] || fail "/bin/true: not 0"
[ "$(status "$U" record -q -o a.data -- sh -c 'kill -TERM $$')" = 143 ] || fail "a command killed by SIGTERM: not 143"
echo keep >old.data
rc=$(status "$U" record -q -o old.data -- ./no-such-program)
[ "$rc" = 255 ] || fail "a command that cannot run: exit $rc, not 255"
grep -q "no-such-program: No such file or directory" err.txt || fail "no reason given: $(cat err.txt)"
[ "$(cat old.data)" = keep ] && [ ! -e old.data.old ] || fail "a failed run replaced the previous recording"
rc=$(status "$U" record -q -o new.data -- ./no-such-program)
[ ! -e new.data ] || fail "a failed run left a recording"
cp "$E" noexec; chmod -x noexec
rc=$(status "$U" record -q -o new.data -- ./noexec)
[ "$rc" = 255 ] && grep -q "Permission denied" err.txt || fail "a file that cannot be executed: exit $rc, $(cat err.txt)"
# the recorder ended the command (--duration): not the command's failure
[ "$(status "$U" record -q --duration 0.3 -o d.data -- sleep 5)" = 0 ] || fail "--duration: not 0"
echo "exit status: as perf passes it on"

# -g and --call-graph dwarf,SIZE: unwound's own unwinding
"$U" record -q -g --call-graph dwarf,4096 -o g.data -- "$E" calltree 0.4 >/dev/null 2>&1
perf report --header-only -i g.data 2>/dev/null | grep -q "sample_type = .*CALLCHAIN" || fail "-g: no callchains"
perf script -i g.data --no-inline 2>/dev/null | grep -q "tree_a2" || fail "-g: perf script shows no stacks"
# --call-graph fp: the kernel's frame-pointer callchains of a program built with them
"$U" record -q --call-graph fp -o fp.data -- "$B/tests/e2e_fp" calltree 0.4 >/dev/null 2>&1
perf report --header-only -i fp.data 2>/dev/null | grep "sample_type" | grep -q "STACK_USER" && fail "--call-graph fp copied stacks"
perf script -i fp.data --no-inline 2>/dev/null | grep -q "tree_a" || fail "--call-graph fp: no user frames"
# -C: samples on that CPU only (one copy of the program pinned to it, so that it has samples
# however busy the other CPUs are; the other free to run anywhere)
"$U" record -q -C 0 -o c.data -- sh -c "taskset -c 0 $E calltree 0.3 & $E threads 0.3; wait" >/dev/null 2>&1
cpus=$(perf script -i c.data -F cpu 2>/dev/null | sort -u | tr -d ' []' | tr '\n' ' ')
[ "$cpus" = "000 " ] || fail "-C 0: samples on CPUs '$cpus'"
# -C without a command, -p or -t: every process on that CPU (perf's -a implied), until --duration
rc=$(status "$U" record -C 0 --duration 0.5 -o c2.data)
[ "$rc" = 0 ] || fail "-C 0 without a command: exit $rc ($(cat err.txt))"
cpus=$(perf script -i c2.data -F cpu 2>/dev/null | sort -u | tr -d ' []' | tr '\n' ' ')
[ -z "$cpus" ] || [ "$cpus" = "000 " ] || fail "-C 0 without a command: samples on CPUs '$cpus'"
echo "-g, --call-graph dwarf,SIZE and fp, -C: as perf"

# perf's event modifiers: the attribute's exclude bits and precise level as perf sets them, the
# event named as given (perf evlist reads the names back)
for ev in cpu-clock:u cpu-clock:k cpu-clock:ppp task-clock:uk; do
    "$U" record -q -e $ev -o m.data -- "$E" calltree 0.2 >/dev/null 2>err.txt || fail "-e $ev: $(cat err.txt)"
    perf record -q -e $ev -o pm.data -- true >/dev/null 2>&1
    want=$(perf evlist -v -i pm.data 2>/dev/null | grep -o 'exclude_user: 1\|exclude_kernel: 1\|exclude_hv: 1\|precise_ip: [0-9]' | tr '\n' ' ')
    got=$(perf evlist -v -i m.data 2>/dev/null | grep -o 'exclude_user: 1\|exclude_kernel: 1\|exclude_hv: 1\|precise_ip: [0-9]' | tr '\n' ' ')
    [ "$got" = "$want" ] || fail "-e $ev: attribute '$got', perf record sets '$want'"
    [ "$(perf evlist -i m.data 2>/dev/null)" = "$ev" ] || fail "-e $ev: named '$(perf evlist -i m.data 2>/dev/null)'"
done
# :u samples user space only, :k the kernel only (its samples' ips in the kernel)
"$U" record -q -e cpu-clock:u -o u.data -- "$E" calltree 0.2 >/dev/null 2>&1
perf script -i u.data -F ip 2>/dev/null | awk 'NF { n++; if ($1 ~ /^ffff/) k++ } END { exit !(n > 0 && k + 0 == 0) }' ||
    fail "-e cpu-clock:u: kernel samples in the file"
# refused with one line saying what to use: another modifier, a tracepoint, --switch-output
rc=$(status "$U" record -e cpu-clock:G -o x.data -- true)
[ "$rc" != 0 ] && grep -q "modifier 'G' is not supported" err.txt || fail "-e cpu-clock:G: exit $rc, $(cat err.txt)"
if [ -e /sys/kernel/tracing/events/sched/sched_switch/id ] || [ -e /sys/kernel/debug/tracing/events/sched/sched_switch/id ]; then
    rc=$(status "$U" record -e sched:sched_switch -o x.data -- true)
    [ "$rc" != 0 ] && grep -q "is a tracepoint.*perf record -e sched:sched_switch --call-graph dwarf" err.txt ||
        fail "-e sched:sched_switch: exit $rc, $(cat err.txt)"
fi
rc=$(status "$U" record --switch-output -o x.data -- true)
[ "$rc" = 2 ] && [ "$(wc -l <err.txt)" = 1 ] && grep -q "switch-output is not supported: record in slices" err.txt ||
    fail "--switch-output: exit $rc, $(cat err.txt)"
echo "event modifiers as perf's; tracepoints and --switch-output refused with what to use"
for bad in "--call-graph lbr" "--call-graph dwarf,abc" "--call-graph dwarf,70000" "-C 99999" "-C 1-0" "-F abc" "-F 10 -c 100"; do
    # shellcheck disable=SC2086
    rc=$(status "$U" record -q $bad -o x.data -- true)
    [ "$rc" = 2 ] || fail "record $bad: exit $rc, not a usage error"
done
[ ! -e x.data ] || fail "a usage error left a recording"
echo "bad options: usage errors"
