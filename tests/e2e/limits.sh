#!/bin/sh
# Resources that run out, and downloads that do not end:
#   debuginfod  a hostile server on loopback: a body without a length that does not stop (the
#               cache must hold at most --max-debuginfod of it: nothing kept), a length of 1 TiB
#               announced, and a body that trickles (said as "timed out", not "not on the
#               servers")
#   oom         libdw's blocks failing (tests/tools/failmalloc.c: those whose failure calls its
#               out-of-memory handler) after 0, 1, 2, 5, ... of them: libdw's handler exited the
#               process; now the report ends with exit status 3 and says that memory ran out. Then a sweep of `ulimit -v`: every run ends with the
#               whole output (exit 0), or says it is incomplete (exit 3), or fails with a message
#               (exit 1); never a signal, never libdw's exit, never fewer frames with exit 0
#   nofile      `ulimit -n` from 8 to 24 on a program with eight libraries: a file not opened
#               for want of a descriptor is said (exit 3, the summary's line), never reported as
#               missing with exit 0
set -eu
case=$1
B=${UW_BUILD:?}
S=${UW_SRC:?}
W=$B/tests/work/limits-$case
rm -rf "$W"; mkdir -p "$W/home"
cd "$W"
U=$B/unwound
fail() { echo "FAIL: $*"; exit 1; }
# every exit status of a report: 0 (whole), 3 (incomplete, said), 1 (failed, said); a signal
# (128+N) or libdw's own exit never
check_status() { # name rc errfile
    case $2 in
    0|1|3) ;;
    *) cat "$3"; fail "$1: exit status $2" ;;
    esac
    if grep -q "libdw: Cannot allocate" "$3"; then fail "$1: libdw's out-of-memory handler exited the process"; fi
    if [ "$2" = 3 ]; then grep -q "the output is incomplete" "$3" || { cat "$3"; fail "$1: exit 3 without saying why"; }; fi
    if [ "$2" = 1 ]; then tail -n 1 "$3" | grep -q "^unwound [a-z]*: ." || { cat "$3"; fail "$1: exit 1 without a message"; }; fi
}

case $case in
debuginfod)
    gcc -O2 -g -o prog "$S/tests/programs/dwz_prog.c" -I"$S/tests/programs"
    strip --strip-all prog
    bid=$(readelf -n prog | awk '/Build ID/ { print $3 }')
    HOME=$W/home perf record -q --no-buildid-cache -e cpu-clock -F 999 --call-graph dwarf -o perf.data -- ./prog 0.3 >/dev/null 2>perf.err
    cat >server.py <<'PY'
import http.server, sys, time
mode, portfile = sys.argv[1], sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # the body ends when the connection does: no length needed
    def log_message(self, *a): pass
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        if mode == "huge":
            self.send_header("Content-Length", str(1 << 40))
        self.end_headers()
        chunk = b"\0" * (1 << 20)
        try:
            if mode == "endless":  # 64 MiB, as fast as it goes, then the end (a bound for the test)
                for _ in range(64):
                    self.wfile.write(chunk)
            elif mode == "huge":
                for _ in range(64):
                    self.wfile.write(chunk)
            else:  # trickle: a byte every 0.2 s for a minute
                for _ in range(300):
                    self.wfile.write(b"\0"); self.wfile.flush(); time.sleep(0.2)
        except (BrokenPipeError, ConnectionResetError):
            pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open(portfile, "w").write(str(s.server_address[1]))
s.serve_forever()
PY
    for mode in endless huge trickle; do
        rm -f port; python3 server.py $mode port &
        srv=$!
        while [ ! -s port ]; do sleep 0.05; done
        port=$(cat port)
        C=$W/cache-$mode
        t0=$(date +%s)
        rc=0
        HOME=$W/home DEBUGINFOD_CACHE_PATH=$C DEBUGINFOD_URLS=http://127.0.0.1:$port timeout -s KILL 120 \
            "$U" report -i perf.data --comm prog --no-kernel --folded --max-debuginfod 8 --debuginfod-timeout 3 \
            -o out-$mode.txt 2>err-$mode.txt || rc=$?
        t1=$(date +%s)
        kill $srv 2>/dev/null || true; wait $srv 2>/dev/null || true
        check_status $mode $rc err-$mode.txt
        kept=$(du -sk "$C" 2>/dev/null | awk '{ print $1 }'); kept=${kept:-0}
        echo "$mode: exit $rc in $((t1 - t0)) s, $kept KiB in the debuginfod cache: $(grep -m1 debuginfod err-$mode.txt || true)"
        [ "$kept" -le 9216 ] || fail "$mode: $kept KiB kept in the cache (cap 8 MiB)"
        case $mode in
        endless|huge) grep -q "prog (build-id $bid): debuginfod: no debug file: larger than the cap (--max-debuginfod, 8 MiB)" err-$mode.txt ||
                          { cat err-$mode.txt; fail "$mode: the cap is not said"; } ;;
        trickle) grep -q "prog (build-id $bid): debuginfod: no debug file: timed out after 3.000 s" err-$mode.txt ||
                     { cat err-$mode.txt; fail "trickle: the timeout is not said as one"; }
                 [ $((t1 - t0)) -lt 60 ] || fail "trickle: $((t1 - t0)) s for a 3 s timeout" ;;
        esac
    done
    # the summary counts them
    "$U" report -i perf.data --comm prog --no-kernel --offline -o table.txt 2>/dev/null
    ;;
oom)
    # inline frames from a program's own DWARF and from libc's (when its debug file is there)
    gcc -O2 -g -I"$S/tests/programs" -o prog "$S/tests/programs/dwz_prog.c"
    HOME=$W/home perf record -q --no-buildid-cache -e cpu-clock -F 999 --call-graph dwarf -o perf.data -- ./prog 0.5 >/dev/null 2>perf.err
    run() { HOME=$W/home UNWOUND_CACHE_DIR=$W/cache "$U" report -i perf.data --comm prog --no-kernel --offline --no-dwarf-cache --script --srcline "$@"; }
    run -o ref.txt 2>ref.err
    grep -q "dwz_common.h:11 (inlined)" ref.txt || fail "no inline frames in the reference"
    P=${UW_FAILMALLOC:-$B/tests/libfailmalloc.so}
    [ -e "$P" ] || fail "no $P"
    if [ -n "${UW_SAN_FLAGS:-}" ]; then
        echo "(a sanitizer build: LD_PRELOAD of a malloc of its own is not possible: the libdw part is skipped)"
    else
        nfailed=0
        for n in 0 1 2 5 10 20 50 100 1000; do
            rc=0; FAILMALLOC_FROM=libdw FAILMALLOC_MIN=4000 FAILMALLOC_AFTER=$n LD_PRELOAD=$P run -o fail-$n.txt 2>fail-$n.err || rc=$?
            check_status "libdw's allocations failing after $n" $rc fail-$n.err
            case $rc in
            0) cmp -s ref.txt fail-$n.txt || fail "libdw's allocations failing after $n: another output with exit 0" ;;
            3) grep -q "the output is incomplete:.* times out of memory" fail-$n.err || fail "libdw's allocations failing after $n: not said"
               grep -q "^prog " fail-$n.txt || fail "libdw's allocations failing after $n: no stacks at all"
               nfailed=$((nfailed + 1)) ;;
            *) cat fail-$n.err; fail "libdw's allocations failing after $n: exit $rc" ;;
            esac
            echo "libdw's allocations failing after $n: exit $rc, $(grep -c 'inlined' fail-$n.txt || true) inline frames (of $(grep -c inlined ref.txt))"
        done
        [ $nfailed -gt 0 ] || fail "no run had a libdw allocation fail (the test proves nothing)"
    fi
    # ulimit -v: from the peak of a run down, in steps
    if [ -n "${UW_SAN_FLAGS:-}" ]; then
        echo "(a sanitizer build: its shadow memory cannot live under ulimit -v: the sweep is skipped)"
        echo "limits $case ok (libdw and ulimit -v parts skipped: sanitizer build)"
        exit 0
    fi
    peak=$(HOME=$W/home /usr/bin/time -f %M "$U" report -i perf.data --comm prog --no-kernel --offline --no-dwarf-cache --script --srcline -o /dev/null 2>&1 >/dev/null | tail -1)
    echo "peak RSS ${peak} KiB"
    n0=0 n1=0 n3=0
    for kib in 1000000 600000 400000 300000 250000 200000 160000 130000 110000 90000 75000 60000 50000 40000 30000 20000; do
        rc=0; (ulimit -v $kib; run -o v-$kib.txt) 2>v-$kib.err || rc=$?
        check_status "ulimit -v $kib" $rc v-$kib.err
        if [ $rc = 0 ] && ! cmp -s ref.txt v-$kib.txt; then
            diff ref.txt v-$kib.txt | head -5
            fail "ulimit -v $kib: another output with exit 0 (frames dropped silently)"
        fi
        eval "n$rc=\$((n$rc + 1))"
    done
    echo "ulimit -v sweep: $n0 whole, $n3 incomplete (said), $n1 failed (said)"
    ;;
nofile)
    i=1
    while [ $i -le 8 ]; do
        printf 'volatile unsigned long s%d;\n__attribute__((noinline)) void f%d(void) { for (unsigned long i = 0; i < 3000000; i++) s%d += i; }\n' $i $i $i >l$i.c
        gcc -O2 -g -shared -fPIC -o libl$i.so l$i.c
        i=$((i + 1))
    done
    {
        i=1; while [ $i -le 8 ]; do echo "void f$i(void);"; i=$((i + 1)); done
        echo '#include <time.h>'
        # (1 s of its own CPU, not of the clock: beside busy neighbours a second of the clock
        # once left f6 without a sample)
        echo 'int main(void) { struct timespec a, b; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a); do {'
        i=1; while [ $i -le 8 ]; do echo "f$i();"; i=$((i + 1)); done
        echo 'clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b); } while (b.tv_sec - a.tv_sec < 1); return 0; }'
    } >main.c
    gcc -O2 -g -o prog main.c -L. -ll1 -ll2 -ll3 -ll4 -ll5 -ll6 -ll7 -ll8 -Wl,-rpath,"$W"
    HOME=$W/home perf record -q --no-buildid-cache -e cpu-clock -F 999 --call-graph dwarf -o perf.data -- ./prog >/dev/null 2>perf.err
    run() { HOME=$W/home "$U" report -i perf.data --comm prog --no-kernel --offline --no-dwarf-cache "$@"; }
    run --folded -o ref.txt
    for i in 1 2 3 4 5 6 7 8; do grep -q "f$i" ref.txt || fail "no frames in f$i"; done
    n0=0 n3=0
    for n in 8 9 10 11 12 13 14 16 18 20 24; do
        rc=0; (ulimit -n $n; run --folded -o n-$n.txt) 2>n-$n.err || rc=$? # (redirections outside: the shell needs descriptors of its own for them)
        check_status "ulimit -n $n" $rc n-$n.err
        [ $rc != 1 ] || { cat n-$n.err; fail "ulimit -n $n: exit 1"; }
        if [ $rc = 0 ] && ! cmp -s ref.txt n-$n.txt; then
            diff ref.txt n-$n.txt | head -5; fail "ulimit -n $n: another output with exit 0"
        fi
        if [ $rc = 3 ]; then
            grep -q "files not opened for want of a file descriptor (ulimit -n)" n-$n.err || { cat n-$n.err; fail "ulimit -n $n: not said"; }
            # the table's own run: at a limit near the edge, how many descriptors are open at once
            # depends on when the symbolizing threads open their files, so this run may not run out;
            # its summary says so exactly when its exit status does
            trc=0; (ulimit -n $n; run -o n-$n.table) 2>n-$n.terr || trc=$?
            check_status "ulimit -n $n (table)" $trc n-$n.terr
            if grep -q "missing: " n-$n.table; then grep "missing: " n-$n.table; fail "ulimit -n $n: modules reported missing"; fi
            if [ $trc = 3 ]; then
                grep -q "^# resources ran out: [1-9][0-9]* files not opened for want of a file descriptor" n-$n.table ||
                    { grep "^#" n-$n.table; fail "ulimit -n $n: exit 3 and not in the summary"; }
            elif grep -q "^# resources ran out" n-$n.table; then
                grep "^#" n-$n.table; fail "ulimit -n $n: exit 0 and the summary says resources ran out"
            fi
        fi
        eval "n$rc=\$((n$rc + 1))"
        echo "ulimit -n $n: exit $rc"
    done
    [ $n3 -gt 0 ] || fail "no run ran out of descriptors (the test proves nothing)"
    ;;
*)
    fail "unknown case $case"
    ;;
esac
echo "limits $case ok"
