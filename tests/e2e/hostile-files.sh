#!/bin/sh
# Files a process or a recording names, made hostile after the fact:
#   live   an unprivileged process (tests/programs/dlfifo.c) dlopens a library of its own, runs
#          in it, dlcloses it and puts a FIFO at the library's path: `record -p PID --duration N`
#          and `record -a --duration N` must end on time with the samples (a blocking open of
#          the path through /proc/PID/root waited forever on the FIFO)
#   named  report of recordings whose files became FIFOs, devices or links to devices: the
#          program, its debug file (by .gnu_debuglink beside it), a split unit's .dwo (libdw
#          opened it with a plain open(2) and waited), a dwz supplementary file (the same), an
#          entry of perf's build-id cache, a --kallsyms file. Every report ends, and no FIFO is
#          ever opened (a writer waiting on each would be let through by any open, even a
#          non-blocking one: none may be).
set -eu
case=$1
B=${UW_BUILD:?}
S=${UW_SRC:?}
W=$B/tests/work/hostile-files-$case
rm -rf "$W"; mkdir -p "$W"
chmod 755 "$W"
cd "$W"
U=$B/unwound
fail() { echo "FAIL: $*"; exit 1; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

# FIFO probes: a writer waits on each FIFO; it gets through (and says so) only if someone opens
# the FIFO to read. All are ended at exit.
probes=""
probe() { # FIFO: a writer that writes "opened" into FIFO.opened once the FIFO is opened
    ( exec 3>"$1"; echo opened >"$1.opened" ) 2>/dev/null &
    probes="$probes $!"
}
end_probes() {
    for p in $probes; do kill $p 2>/dev/null || true; done
    probes=""
}
trap end_probes EXIT
check_probes() { # none of the FIFOs may have been opened
    for f in $(find "$W" -name '*.opened'); do fail "${f%.opened} was opened (a FIFO must never be)"; done
}

case $case in
live)
    # the attacker: a nobody when there is one to be (the directory is theirs)
    D=$W/attacker; mkdir -p "$D"
    as_user=""
    if command -v setpriv >/dev/null && id nobody >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        chown nobody "$D"
        as_user="setpriv --reuid=nobody --regid=$(id -g nobody) --clear-groups"
    fi
    cc -O2 -g -o "$D/dlfifo" "$S/tests/programs/dlfifo.c" -ldl
    N=6
    for mode in p a; do
        rm -f "$D"/libdlfifo-* "$D/go"
        k=1
        while [ $k -le $N ]; do # a build-id each: a new module each time
            cc -O2 -g -shared -fPIC -DLIBDLFIFO -Wl,--build-id=0x$(printf '%08x' $k)0d1f1f00 \
                -o "$D/libdlfifo-$k.so" "$S/tests/programs/dlfifo.c"
            k=$((k + 1))
        done
        [ -z "$as_user" ] || chown nobody "$D"/libdlfifo-*
        $as_user "$D/dlfifo" "$D" $N >"$W/prog-$mode.out" 2>&1 &
        pid=$!
        t=$(now)
        if [ $mode = p ]; then
            timeout -s KILL 60 "$U" record -v -p $pid --duration 4 -o "$W/$mode.data" 2>"$W/rec-$mode.err" &
        else
            timeout -s KILL 60 "$U" record -v -a --duration 4 -o "$W/$mode.data" 2>"$W/rec-$mode.err" &
        fi
        rec=$!
        # the attacker goes once the events are on (-a primes every process's tables first)
        i=0
        until grep -q "recording: events enabled" "$W/rec-$mode.err" 2>/dev/null; do
            kill -0 $rec 2>/dev/null || break
            i=$((i + 1)); [ $i -lt 1200 ] || fail "record -$mode: not recording after 60 s"
            sleep 0.05
        done
        touch "$D/go"
        rc=0; wait $rec || rc=$?
        d=$(elapsed "$t")
        wait $pid || true
        # release anything still waiting on the FIFOs
        for f in "$D"/libdlfifo-*; do [ -p "$f" ] && { timeout 1 sh -c "exec 3>'$f'" 2>/dev/null || true; }; done
        [ $rc = 137 ] && fail "record -$mode --duration 4: still running after 60 s (waiting on a FIFO?)"
        [ $rc = 0 ] || { cat "$W/rec-$mode.err"; fail "record -$mode: exit $rc"; }
        grep -q done "$W/prog-$mode.out" || { cat "$W/prog-$mode.out"; fail "the attacker did not run through"; }
        echo "record -$mode --duration 4 took $d s"
        # (a wait on a FIFO is the 60 s timeout's; this bound allows the setting up under load)
        awk -v d="$d" 'BEGIN { exit !(d < 30) }' || fail "record -$mode --duration 4 took $d s"
        n=0; [ ! -p "$D/libdlfifo-$N.so" ] || n=$N
        [ $n = $N ] || fail "the attacker did not put its FIFOs in place"
        # the samples are there, those in the libraries too (the attack ran while recording)
        "$U" report -i "$W/$mode.data" --pid $pid --script -o "$W/$mode.script" 2>"$W/rep-$mode.err" ||
            fail "report of the record -$mode file: exit $?"
        nlib=$(grep -c "libdlfifo-[0-9]*\.so" "$W/$mode.script" || true)
        nmain=$(grep -c "main_work" "$W/$mode.script" || true)
        echo "record -$mode: $nlib frames in the libraries, $nmain in the program's own work after them"
        [ "$nlib" -gt 0 ] || fail "record -$mode: no sample in the libraries (the scenario did not happen)"
        [ "$nmain" -gt 0 ] || fail "record -$mode: no sample after the first FIFO (samples lost)"
    done
    ;;
named)
    # a program with split DWARF (its .dwo beside it) and one whose DWARF is in a debug file
    # that dwz shared with a supplementary file; one more linked to a library found by
    # .gnu_debuglink
    gcc -O2 -gdwarf-5 -gsplit-dwarf -I"$S/tests/programs" -c "$S/tests/programs/dwz_prog.c" -o split.o
    gcc -o split split.o
    [ -e split.dwo ] || fail "no .dwo"
    gcc -O2 -g -I"$S/tests/programs" -o dwza "$S/tests/programs/dwz_prog.c"
    sed 's/work_a/work_b/g' "$S/tests/programs/dwz_prog.c" >dwzb.c
    gcc -O2 -g -I"$S/tests/programs" -o dwzb dwzb.c
    objcopy --only-keep-debug dwza dwza.debug
    objcopy --only-keep-debug dwzb dwzb.debug
    dwz -m common.debug -M "$W/common.debug" dwza.debug dwzb.debug
    objcopy --strip-debug --add-gnu-debuglink=dwza.debug dwza dwza.stripped && mv dwza.stripped dwza
    mkdir -p home
    for p in split dwza; do
        HOME=$W/home perf record -q --no-buildid-cache -e cpu-clock -F 999 --call-graph dwarf -o $p.data -- ./$p 0.3 >/dev/null 2>perf.err
    done
    bid=$(readelf -n dwza | awk '/Build ID/ { print $3 }')
    report() { # name, recording, args: must end, exit 0
        name=$1 in=$2; shift 2
        t=$(now)
        rc=0; HOME=$W/home timeout -s KILL 30 "$U" report -i "$in" --offline "$@" >/dev/null 2>"$name.err" || rc=$?
        [ $rc = 137 ] && fail "$name: report still running after 30 s (waiting on a FIFO?)"
        [ $rc = 0 ] || { cat "$name.err"; fail "$name: exit $rc"; }
        echo "$name: report in $(elapsed "$t") s"
    }
    report split-ref split.data --no-kernel --comm split --folded --inline -o split-ref.txt
    grep -q "main;work_a;inner_loop;mix " split-ref.txt || fail "no inline frames from the .dwo"
    report dwz-ref dwza.data --no-kernel --comm dwza --folded --inline -o dwz-ref.txt
    grep -q "main;work_a;inner_loop;mix " dwz-ref.txt || fail "no inline frames through dwz's file"
    hostile() { # kind file: makes file a FIFO, a device, a link to a device or to a FIFO
        rm -f "$2" "$2.fifo"
        case $1 in
        fifo) mkfifo "$2"; probe "$W/$2" ;;
        zero) mknod "$2" c 1 5 ;; # /dev/zero's numbers
        link-zero) ln -s /dev/zero "$2" ;;
        link-fifo) mkfifo "$2.fifo"; probe "$W/$2.fifo"; ln -s "$W/$2.fifo" "$2" ;;
        esac
    }
    cp split.dwo split.dwo.keep; cp common.debug common.debug.keep; cp dwza.debug dwza.debug.keep
    cdir="home/.debug/.build-id/$(echo $bid | cut -c1-2)/$(echo $bid | cut -c3-)"
    for kind in fifo zero link-zero link-fifo; do
        # the .dwo: no inline frames from it, no wait
        hostile $kind split.dwo
        report split-$kind split.data --no-kernel --comm split --folded --inline -o split-$kind.txt
        if grep -q "inner_loop" split-$kind.txt; then fail "$kind: inline names without the .dwo"; fi
        rm -f split.dwo; cp split.dwo.keep split.dwo
        # dwz's supplementary file (the debug file there): the names it holds are missing
        hostile $kind common.debug
        report dwz-alt-$kind dwza.data --no-kernel --comm dwza --folded --inline -o dwz-alt-$kind.txt
        report dwz-alt-script-$kind dwza.data --no-kernel --comm dwza --script --srcline -o dwz-alt-script-$kind.txt
        grep -q "work_a" dwz-alt-$kind.txt || fail "$kind: the program's own symbols are gone"
        if grep -q "inner_loop" dwz-alt-$kind.txt; then fail "$kind: inline names without dwz's file"; fi
        rm -f common.debug; cp common.debug.keep common.debug
        # the debug file found by .gnu_debuglink beside the program
        hostile $kind dwza.debug
        report dwz-dbg-$kind dwza.data --no-kernel --comm dwza --folded --inline -o dwz-dbg-$kind.txt
        grep -q "work_a" dwz-dbg-$kind.txt || fail "$kind: the program's own symbols are gone"
        rm -f dwza.debug; cp dwza.debug.keep dwza.debug
        # the program's entry in perf's build-id cache (a link, as perf makes them)
        rm -rf home/.debug; mkdir -p "$cdir"
        hostile $kind "$cdir/elf"
        report dwz-bidcache-$kind dwza.data --no-kernel --comm dwza --folded --inline -o dwz-bidcache-$kind.txt
        grep -q "main;work_a;inner_loop;mix " dwz-bidcache-$kind.txt || fail "$kind: not read from its path"
        rm -rf home/.debug
        # a kernel symbol file
        hostile $kind ksyms
        report kallsyms-$kind dwza.data --comm dwza --kallsyms "$W/ksyms" --folded -o /dev/null
        rm -f ksyms ksyms.fifo
        check_probes
    done
    end_probes
    check_probes
    ;;
*)
    fail "unknown case $case"
    ;;
esac
echo "hostile-files $case ok"
