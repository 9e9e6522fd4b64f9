#!/bin/bash
# A recording begins as soon as its events are open (issue 41, docs/kernel-unwind.md "Start-up"):
# the kernel walker's program is verified on a thread of its own meanwhile (0.2 to several
# seconds of CPU), the first samples are stack copies, and the program is attached to the open
# events once loaded.
#  1. a command: one line says the recording started (-q: none), before the line saying the
#     program was loaded; the command's first 50 ms of CPU (early_burn) are sampled and unwound
#     to main;
#  2. -p: the line is printed (a script waits for it before the work it records); the work that
#     follows at once (50 ms of CPU in early_burn) is sampled and unwound to main; once the
#     program is attached, a stack deeper than any copy (100 levels of 1 KiB frames) is walked in
#     the kernel through to main: the walker took over the events already open;
#  3. -p of a process that exits as soon as the recording has started: the recorder ends within
#     10 s of the exit, using less than 1 s of CPU (the verifier's run is abandoned; the whole
#     verification took 1.2 to 2.7 s of CPU here).
# Counts are of samples of a fixed amount of the program's own CPU: they do not depend on the
# CPU the machine gives it.
set -eu
B=${UW_BUILD:?} S=${UW_SRC:?}
W=$B/tests/work/record-start
rm -rf "$W"; mkdir -p "$W"
cd "$W"
uw=$B/unwound
fail() { echo "FAIL: $*"; exit 1; }
cc -O2 -g -fomit-frame-pointer -fno-inline-functions -o startburn "$S/tests/programs/startburn.c"

# waitfor FILE PATTERN SECONDS: until a line of FILE matches
waitfor() {
    local i=0
    until grep -q "$2" "$1" 2>/dev/null; do
        i=$((i + 1)); [ $i -lt $(($3 * 50)) ] || return 1; sleep 0.02
    done
}
# samples FOLDED REGEX: the samples of the folded stacks matching
samples() { awk -v re="$2" '$0 ~ re { s += $NF } END { print s + 0 }' "$1"; }
MAIN='^startburn;_start;__libc_start_main[^;]*;(__libc_start_call_main;)?main;'

# ---- 1. a command
echo go | "$uw" record -v -e cpu-clock -o cmd.data -- ./startburn 50 >/dev/null 2>cmd.err || { cat cmd.err; fail "record of a command"; }
started=$(grep -n "^unwound record: recording started at [0-9:.]*, [0-9.]* s after the command line" cmd.err | cut -d: -f1)
[ -n "$started" ] || { cat cmd.err; fail "no line saying the recording started"; }
loaded=$(grep -n "kernel unwinding: the program loaded" cmd.err | cut -d: -f1)
[ -z "$loaded" ] || [ "$loaded" -gt "$started" ] ||
    { cat cmd.err; fail "the recording began after the program was loaded (line $loaded, started at line $started)"; }
"$uw" report -i cmd.data --folded --no-kernel -o cmd.folded
all=$(samples cmd.folded ';early_burn(;|$| )')
rooted=$(samples cmd.folded "${MAIN}early_burn( |;)")
echo "command: $rooted of $all samples in early_burn (50 ms of CPU) unwound to main"
[ "$all" -ge 20 ] || { cat cmd.folded; fail "the command's first 50 ms of CPU gave $all samples in early_burn"; }
[ $((rooted * 100)) -ge $((all * 99)) ] || { cat cmd.folded; fail "early_burn's samples are not unwound to main"; }
echo go | "$uw" record -q -e cpu-clock -o q.data -- ./startburn 5 >/dev/null 2>q.err || { cat q.err; fail "record -q"; }
[ ! -s q.err ] || { cat q.err; fail "record -q printed something"; }

# ---- 2. -p: the line, the work right after it, then a stack no copy holds, walked in the kernel
mkfifo go
./startburn 50 100 300 <go >prog.out &
pid=$!
exec 3>go
rpid=
trap 'kill $pid $rpid 2>/dev/null || true' EXIT
waitfor prog.out ready 30 || fail "startburn did not start"
"$uw" record -v -e cpu-clock -p $pid -o pid.data 2>pid.err &
rpid=$!
waitfor pid.err "^unwound record: recording started at" 60 || { cat pid.err; fail "record -p did not say it started"; }
echo go >&3
waitfor prog.out "early done" 60 || fail "startburn did not do its early work"
# (the walker's program verified and attached: then the deep part)
waitfor pid.err "kernel unwinding: the program loaded" 300 || { cat pid.err; fail "the kernel walker was never attached"; }
# (and the process's tables in, as a process that runs before a recording has them before its
# first sample: the walk through them is what is checked, not their first hand-overs; the swap of
# its mappings that follows is a grace period, ~10-20 ms)
waitfor pid.err "table of .*/startburn loaded" 120 && waitfor pid.err "table of .*/libc.so.6 loaded" 120 ||
    { cat pid.err; fail "the process's tables were not loaded"; }
sleep 0.5
echo go >&3
exec 3>&-
wait $pid || fail "startburn failed"
wait $rpid || { cat pid.err; fail "record -p"; }
rpid=
trap - EXIT
"$uw" report -i pid.data --folded --no-kernel -o pid.folded
all=$(samples pid.folded ';early_burn(;|$| )')
rooted=$(samples pid.folded "${MAIN}early_burn( |;)")
echo "-p: $rooted of $all samples in early_burn (50 ms of CPU right after the line) unwound to main"
[ "$all" -ge 20 ] || { cat pid.folded; fail "-p: the 50 ms of CPU after the line gave $all samples in early_burn"; }
[ $((rooted * 100)) -ge $((all * 99)) ] || { cat pid.folded; fail "-p: early_burn's samples are not unwound to main"; }
deep=$(samples pid.folded ';late_work( |;)')
deepok=$(awk -v re="${MAIN}late_recurse;" '/;late_work( |;)/ && $0 ~ re { c = $NF; if (gsub(/;late_recurse/, "&") >= 100) s += c }
                 END { print s + 0 }' pid.folded)
echo "-p: $deepok of $deep samples in late_work (300 ms of CPU 100 KiB deep) reach main through 100 levels"
[ "$deep" -ge 100 ] || fail "-p: too few samples in late_work ($deep)"
[ $((deepok * 100)) -ge $((deep * 99)) ] || { sort -t' ' -k2 -n pid.folded | tail -3 | cut -c1-300; fail "-p: the deep stacks were not walked in the kernel"; }
grep -q "stacks walked in the kernel (eBPF)" pid.err || { cat pid.err; fail "-p: the summary does not say stacks were walked in the kernel"; }

# ---- 3. -p of a process that exits at once
sleep 600 &
spid=$!
/usr/bin/time -f "%e %U %S" -o exit.time "$uw" record -e cpu-clock -p $spid -o exit.data 2>exit.err &
rpid=$!
trap 'kill $spid $rpid 2>/dev/null || true' EXIT
waitfor exit.err "^unwound record: recording started at" 60 || { cat exit.err; fail "record -p did not say it started"; }
t0=$(date +%s.%N)
kill $spid
wait $spid 2>/dev/null || true
wait $rpid || { cat exit.err; fail "record -p of an exiting process"; }
t1=$(date +%s.%N)
trap - EXIT
read -r wall user sys <exit.time
echo "-p of a process that exits: the recorder ended $(echo "$t1 - $t0" | bc) s after the exit; $wall s in all, CPU $user s user + $sys s system"
echo "$t1 - $t0 < 10" | bc | grep -q 1 || fail "-p: the recorder ended more than 10 s after its process exited"
echo "$user + $sys < 1" | bc | grep -q 1 || { cat exit.err; fail "-p of an exiting process used $user + $sys s of CPU (the verifier's whole run?)"; }
echo "PASS"
