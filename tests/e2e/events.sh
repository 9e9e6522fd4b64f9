#!/bin/sh
# unwound record with several events, as perf records them (-e A -e B, -e A,B): each sample's
# stack unwound, with kernel unwinding (each walk's record says its event) and with stack copies,
# and with --off-cpu after them. tests/programs/faults.c touches fresh pages (fast_faults,
# slow_faults) and spins on the thread's CPU clock between touches (slow_faults), so the
# page-faults samples are at its touches and most cpu-clock samples in its clock reads: a sample
# given the wrong event would be seen. perf report is the oracle of the counts per event.
set -eu
B=${UW_BUILD:?}
S=${UW_SRC:?}
W=$B/tests/work/events
rm -rf "$W"; mkdir -p "$W"
cd "$W"
U=$B/unwound
fail() { echo "FAIL: $*"; exit 1; }
# The samples of one event as perf counts them. (perf report's "# Samples:" line abbreviates
# a count of 1,000 or more, "1K", so it is not the oracle: on a machine whose sample rate has not
# been throttled yet, kernel.perf_event_max_sample_rate 100,000, a program gets over 1,000.
# perf script names each sample's event, with its modifiers: "cpu-clock:ppp:".)
perf_samples() {
    perf script -i "$1" -F event 2>/dev/null |
        awk -v ev="$2" '{ e = $1; sub(/:$/, "", e); sub(/:[ukhpPGHIS]+$/, "", e); if (e == ev) n++ } END { print n + 0 }'
}
cc -O2 -g -o faults "$S/tests/programs/faults.c"

# The process's start: the frequency mode's first periods are 1, so each of the recording's
# first faults is a sample: the exec's, the loader's (_start;_dl_start...,
# _dl_start_user;_dl_init...), the child's between its fork and its exec (named by its pid:
# ":PID"). Their number depends on how the frequency adapts, not on the work: 9 of 43
# page-faults samples beside two busy loops, 10 of 36 once. FOLDED without them:
not_start() {
    awk '/;main;/ || !(/^:[0-9]+[; ]/ || /_execve/ || /^faults;_start( |;_dl_start[; ])/ || /^faults;_dl_start_user;/)' "$1"
}
# the user frame under the kernel's frames of each sample of one event but the start's (folded
# stacks: the frame before the first [k] one, or the leaf)
leaves() {
    "$U" report -i "$1" --event "$2" --folded -o "$1.$2.all" 2>/dev/null
    not_start "$1.$2.all" |
        awk '{ w = $NF; $NF = ""; n = split($0, f, ";"); leaf = f[n]
               for (i = 2; i <= n; i++) if (f[i] ~ /_\[k\]/) { leaf = f[i - 1]; break }
               sub(/ +$/, "", leaf); c[leaf] += w }
             END { for (l in c) print c[l], l }' | sort -rn
}
share() { awk -v re="$2" '{ t += $1; if ($2 ~ re) s += $1 } END { printf "%d", t ? 100 * s / t : 0 }' "$1"; }

check() { # FILE MODE [offcpu]
    f=$1; mode=$2
    perf report -i "$f" --stdio --no-children 2>/dev/null >"$f.perf.txt"
    "$U" report -i "$f" >"$f.report.txt"
    for ev in cpu-clock page-faults; do
        want=$(perf_samples "$f" "$ev")
        got=$(sed -n "s/^# Samples: \([0-9]*\) of event '$ev'$/\1/p" "$f.report.txt")
        [ -n "$want" ] && [ "$want" = "$got" ] || fail "$mode: $ev: perf script counts '$want' samples, unwound '$got'"
        # (per unit of work: the program has 0.5 s of CPU, and at least 65,536 faults; the
        # page-faults samples are as many as frequency mode makes of them, which follows the
        # ticks the program gets, not its faults: 68-123 beside two busy loops, 15 once beside
        # the suite as well)
        min=200; [ $ev = page-faults ] && min=10
        [ "$got" -ge $min ] || fail "$mode: $ev: $got samples, at least $min expected"
        # stacks through main: nearly all, but for the process's start (not_start)
        "$U" report -i "$f" --event $ev --folded -o "$f.$ev.folded"
        tot=$(awk '{ s += $NF } END { print s }' "$f.$ev.folded")
        not_start "$f.$ev.folded" | awk '!/;main;/' >"$f.$ev.other"
        other=$(awk '{ s += $NF } END { print s + 0 }' "$f.$ev.other")
        [ $((100 * other)) -le $((5 * tot)) ] ||
            { cut -c1-200 "$f.$ev.other"; fail "$mode: $ev: $other of $tot stacks neither through main nor in the start"; }
    done
    leaves "$f" page-faults >"$f.pf-leaves"
    leaves "$f" cpu-clock >"$f.cc-leaves"
    pf=$(share "$f.pf-leaves" '^(fast_faults|slow_faults)$')
    cc=$(share "$f.cc-leaves" '^(now|clock_gettime|__clock_gettime|__vdso_clock_gettime|slow_faults)$')
    [ "$pf" -ge 80 ] || { cat "$f.pf-leaves"; fail "$mode: $pf% of the page-faults samples at the program's touches"; }
    [ "$cc" -ge 50 ] || { cat "$f.cc-leaves"; fail "$mode: $cc% of the cpu-clock samples in the clock reads"; }
    echo "$mode: $(sed -n "s/^# Samples: \([0-9]*\) of event 'cpu-clock'$/\1/p" "$f.report.txt") cpu-clock samples" \
        "($cc% in the clock reads), $(sed -n "s/^# Samples: \([0-9]*\) of event 'page-faults'$/\1/p" "$f.report.txt")" \
        "page-faults ($pf% at the touches), as perf report counts them"
}

# with kernel unwinding: every sample walked there, each with its own event
"$U" record -e cpu-clock -e page-faults --unwind kernel -o kernel.data -- ./faults 0.5 >/dev/null 2>kernel.err ||
    { cat kernel.err; fail "record --unwind kernel with two events"; }
walked=$(sed -n 's/.*stacks walked in the kernel (eBPF): \([0-9]*\) samples.*/\1/p' kernel.err)
all=$(sed -n 's/^unwound record: \([0-9]*\) samples.*/\1/p' kernel.err)
[ -n "$walked" ] && [ "$walked" = "$all" ] || { cat kernel.err; fail "--unwind kernel: $walked of $all samples walked in the kernel"; }
check kernel.data kernel

"$U" record -q -e cpu-clock,page-faults --unwind copy -o copy.data -- ./faults 0.5 >/dev/null
check copy.data copy

# --off-cpu after them: offcpu-time is the third attribute
"$U" record -q -e cpu-clock -e page-faults --off-cpu -o off.data -- ./faults 0.5 >/dev/null
check off.data off-cpu
perf script -i off.data -F event 2>/dev/null | sort | uniq -c >off.events
grep -q " offcpu-time: $" off.events || { cat off.events; fail "--off-cpu with two events: no offcpu-time samples"; }

# what is refused: a name twice, an unknown one, more than 8, cycles standing for cpu-clock
# where cpu-clock is recorded already (no hardware counters)
rc=0; "$U" record -q -e cpu-clock -e cpu-clock -o x.data -- true 2>err.txt || rc=$?
[ $rc != 0 ] && grep -q "the event cpu-clock is asked for twice" err.txt || fail "an event twice: exit $rc, $(cat err.txt)"
rc=0; "$U" record -q -e cpu-clock,nosuch -o x.data -- true 2>err.txt || rc=$?
[ $rc != 0 ] && grep -q "unknown event 'nosuch'" err.txt || fail "an unknown event: exit $rc, $(cat err.txt)"
rc=0; "$U" record -q -e cpu-clock -e "" -o x.data -- true 2>err.txt || rc=$?
[ $rc != 0 ] && grep -q "unknown event ''" err.txt || fail "an empty event: exit $rc, $(cat err.txt)"
if ! perf stat -e cycles -x, true >/dev/null 2>&1 || perf stat -e cycles -x, true 2>&1 | grep -q "not supported"; then
    rc=0; "$U" record -q -e cycles -e cpu-clock -o x.data -- true 2>err.txt || rc=$?
    [ $rc != 0 ] && grep -q "cpu-clock, which would stand for it, is recorded already" err.txt ||
        fail "cycles and cpu-clock without hardware counters: exit $rc, $(cat err.txt)"
fi
[ ! -e x.data ] || fail "a refused recording left a file"
echo "refused: an event twice, an unknown one, cycles beside cpu-clock without counters"
