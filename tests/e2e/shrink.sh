#!/bin/sh
# Files that shrink while they are read: a binary rebuilt or copied over in place during a
# report (or a recording). A mapped file that shrinks kills its reader with SIGBUS at the first
# page past its new end (77 of 100 reports were killed): files are read, never mapped, and a
# short read is an error about that file.
#   report  100 reports of a recording of a program of a few MB (tests/programs/bigc.py) while
#           a loop cuts the program to 64 KiB and writes it back, in place: no run is killed;
#           each exits 0 (read before or after a cut: a whole file, or one too short to use) or
#           3 with a message naming the file that shrank
#   record  `record -p` of a process running in a library of its own that the loop cuts and
#           writes back meanwhile (the process itself may die of it): the recorder exits 0 or 3
set -eu
case=$1
B=${UW_BUILD:?}
S=${UW_SRC:?}
W=$B/tests/work/shrink-$case
rm -rf "$W"; mkdir -p "$W/home"
cd "$W"
U=$B/unwound
fail() { echo "FAIL: $*"; exit 1; }
loop= pid=
trap '[ -z "$loop" ] || { touch "$W/stop"; kill $loop 2>/dev/null; } || true; [ -z "$pid" ] || kill $pid 2>/dev/null || true' EXIT
rewrite() { # file: cut to 64 KiB and written back, in place, until stopped (stop_rewrite)
    cp "$1" "$1.orig"
    rm -f "$W/stop"
    ( while [ ! -e "$W/stop" ]; do truncate -s 65536 "$1"; cat "$1.orig" >"$1"; done ) &
    loop=$!
}
# (a stop flag, not kill: killing the loop's shell left its running truncate or cat behind,
# which under load cut the library again after it was restored and killed the next round's
# program before it was recorded: "record: process N: no such process")
stop_rewrite() { touch "$W/stop"; wait $loop 2>/dev/null || true; loop=; }

case $case in
report)
    python3 "$S/tests/programs/bigc.py" 2000 >big.c
    gcc -O2 -g -o big big.c
    HOME=$W/home perf record -q --no-buildid-cache -e cpu-clock -F 999 --call-graph dwarf -o perf.data -- ./big 0.5 >/dev/null 2>perf.err
    run() { HOME=$W/home "$U" report -i perf.data --no-kernel --offline --no-dwarf-cache --script --srcline "$@"; }
    run -o ref.txt
    grep -q "big.c:[0-9]* (inlined)" ref.txt || fail "no inline frames in the reference"
    rewrite big
    n0=0 n3=0 i=1
    while [ $i -le 100 ]; do
        rc=0; run -o out-$i.txt 2>err-$i.txt || rc=$?
        case $rc in
        0) ;;
        # (a read racing the cut can also fail with EIO, said as such when the file is whole again)
        3) grep -Eq "unwound: error: $W/big: (the file shrank while it was read \([0-9]* bytes when opened, [0-9]* now|could not be read: Input/output error)" err-$i.txt &&
               grep -q "the output is incomplete: 1 files shrank while they were read (exit status 3)" err-$i.txt ||
               { cat err-$i.txt; fail "run $i: exit 3 without naming the file that shrank"; } ;;
        *) cat err-$i.txt; fail "run $i: exit status $rc$( [ $rc -gt 128 ] && echo " (signal $((rc - 128)))")" ;;
        esac
        eval "n$rc=\$((n$rc + 1))"
        i=$((i + 1))
    done
    stop_rewrite
    echo "100 reports while the program was cut and written back: $n0 exit 0, $n3 exit 3 (the file shrank, said), none killed"
    ;;
record)
    python3 "$S/tests/programs/bigc.py" 6000 lib >libbig.c
    gcc -O2 -g -shared -fPIC -o libbig.so libbig.c
    printf 'void big_run(double);\n#include <stdlib.h>\nint main(int c, char **v) { big_run(atof(v[1])); return 0; }\n' >main.c
    gcc -O2 -g -o prog main.c -L. -lbig -Wl,-rpath,"$W"
    n0=0 n3=0 r=1 retries=0
    while [ $r -le 10 ]; do
        # (it runs until killed after the round: under load the recorder's setting up, its BPF
        # program verified, once outlasted a program of 4 s, which had exited when the recorder
        # looked for it: "record: process N: no such process", round 1, no cut yet)
        ./prog 600 2>/dev/null &
        pid=$!
        sleep 0.2
        timeout -s KILL 60 "$U" record -q -p $pid --duration 2 -o rec-$r.data 2>rec-$r.err &
        rec=$!
        # the library cut once the recorder has its events open (a loaded machine takes more
        # than the half second this waited before), or after 30 s
        k=0
        while [ $k -lt 300 ] && kill -0 $rec 2>/dev/null; do
            u=$(pgrep -P $rec -x unwound || true)
            [ -n "$u" ] && ls -l /proc/"$u"/fd 2>/dev/null | grep -q "perf_event" && break
            k=$((k + 1)); sleep 0.1
        done
        sleep 0.3
        rewrite libbig.so
        rc=0; wait $rec || rc=$?
        stop_rewrite
        cp libbig.so.orig libbig.so
        kill $pid 2>/dev/null || true
        prc=0; wait $pid 2>/dev/null || prc=$?
        # the program killed by the cut library (SIGBUS, SIGSEGV) before the recorder attached
        # (a loaded machine: `record -p` found no such process, exit 1, "No such process" from
        # perf_event_open or "no such process" from the check before): the round tells nothing
        # of the recorder; run it again (at most 10 times in all)
        if [ $rc = 1 ] && grep -qi "no such process" rec-$r.err && [ $prc -gt 128 ] && [ $prc != $((128 + 15)) ]; then
            retries=$((retries + 1))
            [ $retries -le 10 ] || { cat rec-$r.err; fail "round $r: the program died before the recorder attached, 10 times"; }
            echo "round $r: the program died (signal $((prc - 128))) before the recorder attached: again"
            continue
        fi
        case $rc in
        0) ;;
        3) grep -q "the file shrank while it was read" rec-$r.err || { cat rec-$r.err; fail "round $r: exit 3 not said"; } ;;
        *) cat rec-$r.err; fail "round $r: record exit status $rc$( [ $rc -gt 128 ] && echo " (signal $((rc - 128)))"), the program's $prc" ;;
        esac
        eval "n$rc=\$((n$rc + 1))"
        r=$((r + 1))
    done
    echo "10 recordings of a process whose library was cut and written back: $n0 exit 0, $n3 exit 3, none killed"
    ;;
*)
    fail "unknown case $case"
    ;;
esac
echo "shrink $case ok"
