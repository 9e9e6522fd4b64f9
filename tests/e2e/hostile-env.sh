#!/bin/sh
# Hostile environments, each case a defect found by probing (every one failed before it was
# fixed):
#   debuginfo  one byte of a library's .debug_info (its first unit's length) crashed report
#   fifo       a path a recording names is now a FIFO: report and inject must not wait on it
#   perfmap    a process's /tmp/perf-PID.map is a FIFO, a link to /dev/urandom or /dev/zero, or
#              200 MiB in reverse order: record -p stops on time and on signals, report is quick
#   output     report -o through a planted symbolic link: not followed, the target intact
#   killed     a recorder killed with SIGKILL leaves a file both perf and unwound read
#   hup        SIGHUP (a closed terminal) stops the recorder and the command with it
#   refused    a run that may not record leaves no file and the previous one where it was
#   diskfull   a full disk is said to be full
#   bomb       a compressed debug section that claims 1000 MiB (and holds it: zeros) costs
#              neither the memory nor the cache space
#   cachecap   the DWARF cache stays under its cap, the least recently used files going first
#   noids      an event without ids (inject copied them from NULL: undefined behaviour)
#   stdfds     standard error (or input, output) closed: the output file took descriptor 2 and
#              got the warnings, a perf.data perf could not read
#   mmaps      200,000 MMAP2 records of one process (in address order, then the reverse): the
#              mapping list was rebuilt at each, quadratic (80,000 took 10 s, 800,000 minutes)
#   forks      2,000 mappings of a process, then 8,000 forks of it: each child had a copy of the
#              list (775 MB for a file of 448 KB); shared until changed now
#   sparse     a debug section of 1 GiB in a sparse file of kilobytes (an untrusted --symfs): read
#              whole into memory, past --max-inflate, which capped only compressed sections
#   fdpath     -o /dev/stdout with standard output a regular file: /dev/stdout itself was moved
#              to /dev/stdout.old and replaced by the report (as root; in a mount namespace here)
set -eu
case=$1
B=${UW_BUILD:?}
S=${UW_SRC:?}
W=$B/tests/work/hostile-env-$case
rm -rf "$W"; mkdir -p "$W"
cd "$W"
U=$B/unwound
E=$B/tests/e2e_nofp
# (a failure ends the programs the case started: one left running holds the test's output
# open, and CTest waits for it to the test's timeout, hiding the failure's message)
bg_kill() { j=$(jobs -p); [ -z "$j" ] || kill $j 2>/dev/null || true; }
fail() { echo "FAIL: $*"; bg_kill; exit 1; }
trap bg_kill EXIT
now() { date +%s.%N; }
# a process's CPU time (user and system) in clock ticks (1/100 s): /proc/PID/stat's fields 14, 15
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{ print $12 + $13 } END { if (!NR) print -1 }'; }
# the CPU time (user and system, seconds) of a command (what makes a report quick, whatever
# else the machine runs): cpu_secs CMD ARGS, the seconds in $W/cpu.txt
cpu_secs() { /usr/bin/time -f "%U %S" -o "$W/cpu.raw" "$@"; rc=$?; tail -n 1 "$W/cpu.raw" | awk '{ printf "%.2f", $1 + $2 }' >"$W/cpu.txt"; return $rc; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

case $case in
debuginfo)
    printf 'static volatile unsigned long sink;\nstatic inline __attribute__((always_inline)) void inner(unsigned long n) { for (unsigned long i = 0; i < n; i++) sink += i; }\n__attribute__((noinline)) void lib_entry(unsigned long n) { inner(n); inner(n / 2); }\n' >il.c
    printf '#include <time.h>\nvoid lib_entry(unsigned long n);\nint main(void) { struct timespec a, b; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a); do { lib_entry(1000000); clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b); } while (b.tv_sec - a.tv_sec < 1); return 0; }\n' >main.c
    cc -O2 -g -fPIC -shared -o libil.so il.c
    cc -O2 -g -o prog main.c -L. -lil -Wl,-rpath,"$W"
    perf record -q -e cpu-clock -F 999 --call-graph dwarf -o perf.data ./prog 2>perf.err
    cp libil.so libil.orig
    off=$(readelf -SW libil.so | awk '$2 == ".debug_info" { print $5 }')
    for v in 255 128 1; do
        python3 -c "import sys; d = bytearray(open('libil.orig', 'rb').read()); d[int('$off', 16) + 3] = $v; open('libil.so', 'wb').write(d)"
        rc=0; UNWOUND_CACHE_DIR=$W/cache-$v "$U" report -i perf.data --script -o out.txt 2>err.txt || rc=$?
        [ $rc = 0 ] || fail "the length's high byte $v: exit $rc"
        grep -q "lib_entry" out.txt || fail "no names from the symbol table"
    done
    echo "debuginfo: a broken first unit leaves the ELF symbols, no crash"
    ;;
fifo)
    cc -O2 -g -o prog "$S/tests/programs/e2e.c" -L"$B/tests" -ltw_nofp -Wl,-rpath,"$B/tests" -lpthread
    perf record -q --no-buildid-cache -e cpu-clock -F 999 --call-graph dwarf -o perf.data ./prog calltree 0.4 >/dev/null 2>perf.err
    export HOME=$W # (no build-id cache of perf's: the program is only at its path)
    rm prog; mkfifo prog
    t=$(now)
    timeout 30 "$U" report -i perf.data --script -o out.txt 2>err.txt || fail "report on a FIFO at the program's path: exit $?"
    timeout 30 "$U" inject -i perf.data -o inj.data 2>err.txt || fail "inject on a FIFO at the program's path: exit $?"
    echo "fifo: report and inject in $(elapsed "$t") s"
    "$U" report -i perf.data -v -o /dev/null 2>&1 | grep -q "prog: not a regular file" || fail "the reason is not given"
    rm prog; ln -s /dev/zero prog
    timeout 30 "$U" report -i perf.data --script -o out.txt 2>err.txt || fail "report on a link to /dev/zero: exit $?"
    "$U" report -i perf.data -v -o /dev/null 2>&1 | grep -q "prog: a symbolic link" || fail "the link is not said"
    ;;
perfmap)
    cc -O2 -o jitlike "$S/tests/programs/jitlike.c"
    for kind in fifo urandom zero huge; do
        ./jitlike $kind 200 60 >ready.txt &
        job=$!
        while [ ! -s ready.txt ]; do kill -0 $job 2>/dev/null || fail "jitlike $kind exited before it was ready"; sleep 0.05; done
        # the map is not read at the end of the recording: no wait on the FIFO (the wall time:
        # a bound for a hang, not for speed, as neighbours take the CPU), no parse of the huge
        # map (the recorder's CPU time: the huge map takes seconds to parse)
        t=$(now)
        cpu_secs timeout 60 "$U" record -q -p $job --duration 2 -o $kind.data 2>rec.err || fail "$kind: record failed ($(cat rec.err))"
        d=$(elapsed "$t")
        c=$(cat "$W/cpu.txt")
        echo "$kind: record -p --duration 2 took $d s, $c s of CPU time"
        # (the setting up counts too: the BPF program's loading takes seconds under load)
        awk -v d="$d" 'BEGIN { exit !(d < 30.0) }' || fail "$kind: --duration 2 took $d s"
        awk -v c="$c" 'BEGIN { exit !(c < 2.0) }' || fail "$kind: --duration 2 took $c s of CPU time"
        # SIGTERM once it records (its setting up, seconds of CPU under load, not counted) stops
        # it: a bound for a read blocked on the FIFO, which would never end (not for speed)
        "$U" record -v -p $job -o $kind-term.data 2>rec.err &
        rec=$!
        for _ in $(seq 1200); do grep -q "recording: events enabled" rec.err && break; sleep 0.1; done
        grep -q "recording: events enabled" rec.err || fail "$kind: the recording did not begin ($(grep -v 'info:' rec.err))"
        sleep 0.5
        t=$(now)
        kill -TERM $rec
        wait $rec || fail "$kind: SIGTERM: exit $?"
        d=$(elapsed "$t")
        echo "$kind: stopped $d s after SIGTERM"
        awk -v d="$d" 'BEGIN { exit !(d < 20.0) }' || fail "$kind: SIGTERM took $d s"
        # the report reads the map (or refuses it) quickly: its CPU time
        cpu_secs timeout 120 "$U" report -i $kind.data --folded -o $kind.folded 2>rep.err || fail "$kind: report: exit $?"
        d=$(cat "$W/cpu.txt")
        echo "$kind: report in $d s of CPU time"
        # (200 MiB of entries in reverse order: parsed and sorted in O(n log n), seconds)
        limit=2; [ $kind = huge ] && limit=30
        awk -v d="$d" -v l=$limit 'BEGIN { exit !(d < l) }' || fail "$kind: report took $d s"
        # (the FIFO and the devices are refused whole; the huge map is a regular file, read
        # and judged entry by entry: its entries name nothing of the program's own code)
        if [ $kind = huge ]; then
            ! grep -q "jitlike;.*JS:\*fn" $kind.folded || fail "huge: a map entry named code it does not cover: $(grep -m1 'JS:' $kind.folded)"
        else
            grep -q "perf-$job.map: not used" rep.err || fail "$kind: the map is not said to be refused: $(cat rep.err)"
        fi
        kill -TERM $job
        wait $job || true
        rm -f ready.txt
    done
    ;;
stdfds)
    # (perf's build-id cache kept out: the program is only at its path)
    export HOME=$W
    cp "$E" prog
    perf record -q -N -e cpu-clock -F 999 --call-graph dwarf -o perf.data -- ./prog calltree 0.2 >/dev/null 2>&1
    # a warning while the output is open: a symbolic link where the recorded file was
    mv prog prog.real; ln -s prog.real prog
    "$U" inject -i perf.data -o good.data 2>good.err
    grep -q "warning" good.err || fail "no warning to be misdirected: $(cat good.err)"
    "$U" inject -i perf.data -o closed.data 2>&-
    cmp -s good.data closed.data || fail "inject with standard error closed: the output differs ($(grep -a -c warning closed.data) warning lines in it)"
    perf report -i closed.data --stdio >/dev/null 2>&1 || fail "perf report cannot read what inject wrote with standard error closed"
    "$U" report -i perf.data -o good.txt 2>/dev/null
    "$U" report -i perf.data -o closed.txt 2>&- <&-
    cmp -s good.txt closed.txt || fail "report with standard input and error closed: $(head -1 closed.txt)"
    # standard output closed and nowhere else to write: an error, as on a closed descriptor
    rc=0; "$U" report -i perf.data >&- 2>err.txt || rc=$?
    [ $rc = 1 ] && grep -q "Bad file descriptor" err.txt || fail "report to a closed standard output: exit $rc, $(cat err.txt)"
    echo "stdfds: closed standard descriptors stay closed to what the command opens"
    ;;
mmaps)
    cat >gen.py <<'PYGEN'
import struct, sys
def rec(t, body, misc=0): return struct.pack('<IHH', t, misc, 8 + len(body)) + body
def cstr(s):
    b = s.encode() + b'\0'; return b + b'\0' * ((-len(b)) % 8)
# cpu-clock, sample_type IP|TID|TIME|PERIOD, sample_id_all
attr = struct.pack('<IIQQQQQIIQQQQIiQIHHIIQ', 1, 128, 0, 1000, 1 | 2 | 4 | 0x100, 0, 1 << 18, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
n = int(sys.argv[1]); order = sys.argv[2]; o = open(sys.argv[3], 'wb')
o.write(b'PERFILE2' + struct.pack('<Q', 16))
o.write(rec(64, attr + struct.pack('<Q', 1)))
o.write(rec(3, struct.pack('<II', 100, 100) + cstr('maps') + struct.pack('<IIQ', 100, 100, 0)))
idx = range(n) if order == 'up' else range(n - 1, -1, -1)
o.write(b''.join(rec(10, struct.pack('<IIQQQIIQQII', 100, 100, 0x10000000 + i * 0x2000, 0x1000, 0, 8, 1, 7, 0, 5, 2)
                     + cstr('/nonexistent/lib%d.so' % (i % 50)) + struct.pack('<IIQ', 100, 100, 1000 + i), 2) for i in idx))
o.write(rec(9, struct.pack('<QIIQQ', 0x10000005, 100, 100, 10**9, 1000), 2))
PYGEN
    for order in up down; do
        python3 gen.py 200000 $order m-$order.data
        rc=0; cpu_secs "$U" report -i m-$order.data --folded -o m-$order.txt 2>m-$order.err || rc=$?
        d=$(cat cpu.txt)
        [ $rc = 0 ] || { cat m-$order.err; fail "$order: report failed (exit $rc)"; }
        grep -q "^maps;\[lib0.so\] 1$" m-$order.txt || { cat m-$order.txt; fail "$order: the sample not in its mapping"; }
        echo "mmaps $order: 200,000 mappings reported in $d s of CPU time"
        awk -v d="$d" 'BEGIN { exit !(d < 10) }' || fail "$order: 200,000 mappings took $d s"
    done
    ;;
forks)
    cat >gen.py <<'PYGEN'
import struct, sys
def rec(t, body, misc=0): return struct.pack('<IHH', t, misc, 8 + len(body)) + body
def cstr(s):
    b = s.encode() + b'\0'; return b + b'\0' * ((-len(b)) % 8)
attr = struct.pack('<IIQQQQQIIQQQQIiQIHHIIQ', 1, 128, 0, 1000, 1 | 2 | 4 | 0x100, 0, 1 << 18, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
m, f, o = int(sys.argv[1]), int(sys.argv[2]), open(sys.argv[3], 'wb')
tr = lambda pid, t: struct.pack('<IIQ', pid, pid, t)
o.write(b'PERFILE2' + struct.pack('<Q', 16))
o.write(rec(64, attr + struct.pack('<Q', 1)))
o.write(rec(3, struct.pack('<II', 100, 100) + cstr('parent') + tr(100, 0)))
o.write(b''.join(rec(10, struct.pack('<IIQQQIIQQII', 100, 100, 0x10000000 + i * 0x2000, 0x1000, 0, 8, 1, 7, 0, 5, 2)
                     + cstr('/nonexistent/lib.so') + tr(100, 1 + i), 2) for i in range(m)))
o.write(b''.join(rec(7, struct.pack('<IIIIQ', 1000 + i, 100, 1000 + i, 100, 10000 + i) + tr(1000 + i, 10000 + i)) for i in range(f)))
o.write(rec(9, struct.pack('<QIIQQ', 0x10000005, 100, 100, 10**9, 1000), 2))
PYGEN
    python3 gen.py 2000 8000 f.data
    /usr/bin/time -f "%M" -o rss.txt "$U" report -i f.data --folded -o f.txt 2>f.err || { cat f.err; fail "report of 8,000 forks"; }
    kb=$(tail -1 rss.txt)
    grep -q "^parent;\[lib.so\] 1$" f.txt || { cat f.txt; fail "the sample not in its mapping"; }
    echo "forks: 2,000 mappings, 8,000 forks ($(stat -c %s f.data) bytes): peak $kb KiB"
    [ "$kb" -lt 102400 ] || fail "peak memory $kb KiB: the children's lists copied"
    ;;
sparse)
    # (perf's build-id cache kept out: the program is found only in the --symfs)
    export HOME=$W
    cp "$E" prog
    perf record -q -N -e cpu-clock -F 999 --call-graph dwarf -o perf.data -- ./prog calltree 0.2 >/dev/null 2>&1
    # the same program (build-id and all) in a --symfs, its .debug_line moved into a hole of 1 GiB
    mkdir -p symfs"$W"
    python3 - "$W/prog" symfs"$W/prog" <<'PYSP'
import struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
shoff, = struct.unpack_from('<Q', d, 0x28); shentsize, shnum, shstrndx = struct.unpack_from('<HHH', d, 0x3a)
str_off, = struct.unpack_from('<Q', d, shoff + shstrndx * shentsize + 0x18)
for i in range(shnum):
    h = shoff + i * shentsize
    name = d[str_off + struct.unpack_from('<I', d, h)[0]:].split(b'\0')[0]
    if name == b'.debug_line':
        struct.pack_into('<QQ', d, h + 0x18, 1 << 30, 1 << 30)  # sh_offset, sh_size
f = open(sys.argv[2], 'wb'); f.write(d); f.truncate((1 << 31) + 4096)
PYSP
    [ "$(du -k symfs"$W/prog" | cut -f1)" -lt 4096 ] || fail "the sparse file takes space"
    /usr/bin/time -f "%M" -o rss.txt "$U" report -i perf.data --symfs symfs --script --srcline --max-inflate 16 \
        -o sparse.txt 2>sparse.err || { cat sparse.err; fail "report with the sparse debug section"; }
    kb=$(tail -1 rss.txt)
    grep -q "or its DWARF sections more than 4 caps" sparse.err || { cat sparse.err; fail "not said: the DWARF over the cap"; }
    grep -q "tree_a2" sparse.txt || fail "the symbols were lost with the DWARF"
    echo "sparse: a 1 GiB section in $(du -k symfs"$W/prog" | cut -f1) KiB: left unread, said; peak $kb KiB"
    [ "$kb" -lt 262144 ] || fail "peak memory $kb KiB (the section was read)"
    ;;
fdpath)
    perf record -q -e cpu-clock -F 999 --call-graph dwarf -o perf.data -- "$E" calltree 0.2 >/dev/null 2>&1
    "$U" report -i perf.data -o ref.txt
    "$U" inject -i perf.data -o ref.data
    # (a private /dev: were /dev/stdout replaced, the machine's would not be)
    cat >ns.sh <<NSEOF
set -eu
mount -t tmpfs tmpfs /dev
mknod -m 666 /dev/null c 1 3
ln -s /proc/self/fd /dev/fd
ln -s /proc/self/fd/1 /dev/stdout
"$U" report -i perf.data -o /dev/stdout >stdout.txt
echo before >append.txt
"$U" report -i perf.data -o /dev/stdout >>append.txt
"$U" report -i perf.data -o /dev/fd/3 3>fd3.txt
"$U" report -i perf.data -o /proc/self/fd/1 >self.txt
"$U" inject -i perf.data -o /dev/stdout >inj.data
[ -L /dev/stdout ] && [ ! -e /dev/stdout.old ] || { ls -la /dev; echo "FAIL: /dev/stdout replaced"; exit 1; }
NSEOF
    unshare -m --propagation private sh ns.sh || fail "the outputs through descriptors' paths"
    for f in stdout.txt fd3.txt self.txt; do cmp -s ref.txt $f || fail "-o through $f: not the report"; done
    [ "$(head -1 append.txt)" = before ] && tail -n +2 append.txt | cmp -s ref.txt - || fail "-o /dev/stdout with >>: not appended"
    cmp -s ref.data inj.data || fail "inject -o /dev/stdout: not the file inject writes"
    perf report -i inj.data --stdio >/dev/null 2>&1 || fail "perf report cannot read inject -o /dev/stdout"
    echo "fdpath: /dev/stdout, /dev/fd/3, /proc/self/fd/1 written where they are open, /dev/stdout left as it was"
    ;;
output)
    perf record -q -e cpu-clock -F 999 --call-graph dwarf -o perf.data -- "$E" calltree 0.2 >/dev/null 2>&1
    echo "precious" >target
    ln -s "$W/target" report.txt
    (umask 027; "$U" report -i perf.data -o report.txt)
    [ "$(cat target)" = precious ] || fail "report -o followed a symbolic link and wrote its target"
    [ -L report.txt.old ] && [ -f report.txt ] && [ ! -L report.txt ] || fail "the link was not moved aside"
    [ "$(stat -c %a report.txt)" = 640 ] || fail "mode $(stat -c %a report.txt), not 0666 less the umask 027 (0640... of 0644)"
    for fmt in --folded --script; do
        rm -f out.txt; ln -s "$W/target" out.txt
        "$U" report -i perf.data $fmt -o out.txt
        [ "$(cat target)" = precious ] || fail "report $fmt -o followed a link"
    done
    # a directory that cannot be written: the old file stays
    mkdir ro; echo old >ro/r.txt; chmod 555 ro
    rc=0; runuser -u nobody -- "$U" report -i "$W/perf.data" -o "$W/ro/r.txt" 2>err.txt || rc=$?
    chmod 755 ro
    [ $rc = 1 ] && [ "$(cat ro/r.txt)" = old ] && [ ! -e ro/r.txt.old ] || fail "an unwritable directory: exit $rc, $(ls ro)"
    grep -q "Permission denied" err.txt || fail "not said: $(cat err.txt)"
    echo "output: links not followed, modes by the umask, nothing moved when nothing can be written"
    ;;
killed)
    "$U" record -q -o k.data -- "$E" calltree 10.$$ >/dev/null 2>rec.err &
    rec=$!
    # killed once the command has had 2.6 s of CPU time (not of the clock: on a busy machine
    # it gets less, and so do its samples)
    prog= t=$(now)
    while [ -z "$prog" ]; do
        prog=$(pgrep -P $rec -f "e2e_nofp calltree 10.$$" || true)
        awk -v d="$(elapsed "$t")" 'BEGIN { exit !(d > 60) }' && fail "the recorded command did not start: $(cat rec.err)"
        sleep 0.05
    done
    while c=$(cpu_ticks $prog) && [ "$c" -ge 0 ] && [ "$c" -lt 260 ]; do sleep 0.05; done
    [ "$c" -ge 260 ] || fail "the command ended before 2.6 s of CPU time: $(cat rec.err)"
    kill -KILL $rec
    wait $rec 2>/dev/null || true
    pkill -f "e2e_nofp calltree 10.$$" || true
    perf report -i k.data --stdio --no-children >perf.txt 2>perf.err || { cat perf.err; fail "perf report cannot read a killed recording"; }
    grep -q "spin" perf.txt || fail "perf report shows no samples"
    pn=$(perf script -i k.data -F period 2>/dev/null | wc -l)
    "$U" report -i k.data >u.txt 2>u.err
    un=$(sed -n "s/^# Samples: \([0-9]*\) of event.*/\1/p" u.txt)
    echo "killed after 2.6 s of the command's CPU time: perf report reads $pn samples, unwound report $un"
    [ "${pn:-0}" -ge 1500 ] || fail "perf report reads only ${pn:-0} samples of the first 2 seconds of CPU time"
    [ "${un:-0}" -ge "$pn" ] || fail "unwound reads fewer samples than perf"
    grep -q "was not finished" u.err || fail "report does not say the file was not finished"
    ;;
hup)
    "$U" record -v -o h.data -- "$E" calltree 30.$$ >/dev/null 2>rec.err &
    rec=$!
    # (once it records: its setting up takes seconds of CPU under load; the bound is for a
    # recorder that would not stop, not for speed)
    for _ in $(seq 1200); do grep -q "recording: events enabled" rec.err && break; sleep 0.1; done
    grep -q "recording: events enabled" rec.err || fail "the recording did not begin ($(grep -v 'info:' rec.err))"
    sleep 0.5
    t=$(now)
    kill -HUP $rec
    rc=0; wait $rec || rc=$?
    d=$(elapsed "$t")
    echo "hup: the recorder stopped $d s after SIGHUP (exit $rc)"
    awk -v d="$d" 'BEGIN { exit !(d < 20.0) }' || fail "SIGHUP took $d s"
    pgrep -f "e2e_nofp calltree 30.$$" >/dev/null && fail "the command still runs"
    perf report -i h.data --stdio >/dev/null 2>&1 || fail "the recording is not complete"
    ;;
refused)
    mkdir -m 777 out
    echo previous >out/r.data
    chown nobody out/r.data
    rc=0; runuser -u nobody -- "$U" record -q -a --duration 1 -o "$W/out/r.data" 2>err.txt || rc=$?
    cat err.txt
    [ $rc = 1 ] || fail "exit $rc"
    grep -q "perf_event_paranoid\|Permission denied\|not permitted" err.txt || fail "the reason is not given"
    [ "$(cat out/r.data)" = previous ] && [ ! -e out/r.data.old ] || fail "a refused run moved or replaced the previous file"
    rc=0; runuser -u nobody -- "$U" record -q -a --duration 1 -o "$W/out/new.data" 2>/dev/null || rc=$?
    [ ! -e out/new.data ] || fail "a refused run left a file"
    echo "refused: nothing created, nothing moved"
    ;;
diskfull)
    mkdir small
    mount -t tmpfs -o size=256k tmpfs small || fail "cannot mount a tmpfs (root is needed)"
    trap 'umount "$W/small"; bg_kill' EXIT
    rc=0; "$U" record -q -o small/d.data -- "$E" calltree 3 >/dev/null 2>err.txt || rc=$?
    cat err.txt
    [ $rc = 1 ] || fail "a full disk: exit $rc"
    grep -q "small/d.data: writing: No space left on device" err.txt || fail "the disk being full is not said"
    perf record -q -e cpu-clock -F 999 --call-graph dwarf -o big.data -- "$E" calltree 1 >/dev/null 2>&1
    rc=0; "$U" inject -i big.data -o small/i.data 2>err.txt || rc=$?
    cat err.txt
    [ $rc = 1 ] && grep -q "No space left on device" err.txt || fail "inject: exit $rc"
    dd if=/dev/zero of=small/fill bs=4k 2>/dev/null || true # (whatever room was left)
    # the disk is full now: every write of every output fails, and is said (a stream's write
    # that returned -1 made stdio write past its buffer: a crash, about every other run)
    for i in 1 2 3 4 5 6 7 8; do
        for mode in --script --folded --stdio; do
            rm -f small/s.txt
            rc=0; "$U" report -i big.data $mode -o small/s.txt 2>err.txt || rc=$?
            [ $rc = 1 ] && grep -q "small/s.txt: No space left on device" err.txt ||
                { cat err.txt; fail "report $mode (run $i): exit $rc"; }
        done
    done
    cat err.txt
    # and a device that is always full
    for mode in --script --folded --stdio; do
        rc=0; "$U" report -i big.data $mode -o /dev/full 2>err.txt || rc=$?
        [ $rc = 1 ] && grep -q "/dev/full: No space left on device" err.txt || { cat err.txt; fail "report $mode -o /dev/full: exit $rc"; }
    done
    ;;
bomb)
    printf 'static volatile unsigned long sink;\n__attribute__((noinline)) void lib_entry(unsigned long n) { for (unsigned long i = 0; i < n; i++) sink += i; }\n' >b.c
    printf '#include <time.h>\nvoid lib_entry(unsigned long n);\nint main(void) { struct timespec a, b; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a); do { lib_entry(1000000); clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b); } while (b.tv_sec - a.tv_sec < 1); return 0; }\n' >main.c
    cc -O2 -g -fPIC -shared -o libb.so b.c
    cc -O2 -g -o prog main.c -L. -lb -Wl,-rpath,"$W"
    perf record -q --no-buildid-cache -e cpu-clock -F 999 --call-graph dwarf -o perf.data ./prog 2>perf.err
    # .debug_info: 1000 MiB of zeros, zlib-compressed (about 1 MiB), as an SHF_COMPRESSED section
    python3 - <<'PY'
import struct, zlib
z = zlib.compressobj(9)
body = b''.join(z.compress(bytes(1 << 20)) for _ in range(1000)) + z.flush()
open('bomb.sec', 'wb').write(struct.pack('<IIQQ', 1, 0, 1000 << 20, 1) + body)
PY
    objcopy --remove-section=.debug_info --add-section .debug_info=bomb.sec --set-section-flags .debug_info=readonly,debug libb.so libb.bomb
    python3 - <<'PY'
import struct
d = bytearray(open('libb.bomb', 'rb').read())
shoff, = struct.unpack_from('<Q', d, 0x28); shentsize, shnum, shstrndx = struct.unpack_from('<HHH', d, 0x3a)
stroff = struct.unpack_from('<Q', d, shoff + shstrndx * shentsize + 24)[0]
for i in range(shnum):
    o = shoff + i * shentsize
    name = d[stroff + struct.unpack_from('<I', d, o)[0]:].split(b'\0')[0]
    if name == b'.debug_info':
        flags, = struct.unpack_from('<Q', d, o + 8)
        struct.pack_into('<Q', d, o + 8, flags | 0x800)  # SHF_COMPRESSED
open('libb.so', 'wb').write(d)
PY
    ls -la libb.so
    export HOME=$W
    /usr/bin/time -f "%M" -o rss.txt env UNWOUND_CACHE_DIR="$W/cache" "$U" report -i perf.data --script -o out.txt 2>err.txt || true
    rss=$(tail -n 1 rss.txt)
    bid=$(readelf -n libb.so | sed -n 's/.*Build ID: //p')
    echo "bomb: report at most $rss KiB resident; cache: $(ls "$W/cache" 2>/dev/null | tr '\n' ' ')"
    [ "$rss" -lt 200000 ] || fail "the report used $rss KiB"
    [ -z "$(ls "$W/cache/$bid"-*.dwarf2 2>/dev/null)" ] || fail "the cache holds $(stat -c %s "$W/cache/$bid"-*.dwarf2) bytes of it"
    grep -q "more than 64 times its compressed bytes" err.txt || fail "not said: $(cat err.txt)"
    grep -q "lib_entry" out.txt || fail "no symbols from the library's symbol table"
    ;;
cachecap)
    # a program with compressed DWARF (zlib and zstd copies of one), reported with a cap
    cc -O2 -g -o prog "$S/tests/programs/e2e.c" -L"$B/tests" -ltw_nofp -Wl,-rpath,"$B/tests" -lpthread
    perf record -q -e cpu-clock -F 999 --call-graph dwarf -o perf.data ./prog calltree 0.3 >/dev/null 2>&1
    for c in zlib zstd; do
        objcopy --compress-debug-sections=$c prog prog.$c
    done
    export HOME=$W
    cache=$W/cache
    mkdir -p "$cache"
    # stale entries of earlier runs, the oldest first to go
    for i in 1 2 3 4; do head -c 300000 /dev/zero >"$cache/old$i.dwarf1"; touch -d "@$(( $(date +%s) - 1000 * i ))" "$cache/old$i.dwarf1"; done
    echo keep >"$cache/unrelated.txt"
    for c in zlib zstd; do
        cp prog.$c prog
        UNWOUND_CACHE_DIR=$cache "$U" report -i perf.data --script --max-dwarf-cache 1 -o out-$c.txt
    done
    total=$(find "$cache" -name '*.dwarf[12]' -o -name '*.lines[12]' | xargs -r stat -c %s | awk '{ s += $1 } END { print s + 0 }')
    echo "cachecap: $total bytes of cache under a 1 MiB cap: $(ls "$cache" | tr '\n' ' ')"
    [ "$total" -le 1048576 ] || fail "the cache holds $total bytes"
    [ -e "$cache/unrelated.txt" ] || fail "a file not the cache's was removed"
    [ -e "$cache/old4.dwarf1" ] && fail "the least recently used entry was kept"
    ls "$cache"/*.dwarf2 | grep -qv old || fail "nothing of this run was kept"
    ;;
noids)
    perf record -q -e cpu-clock -F 999 --call-graph dwarf -o perf.data -- "$E" calltree 0.3 >/dev/null 2>&1
    python3 "$S/tests/e2e/perfdata.py" noids perf.data noids.data
    "$U" inject -i noids.data -o inj.data 2>err.txt || { cat err.txt; fail "inject: exit $?"; }
    "$U" inject -i noids.data -o - >pipe.data 2>err.txt || { cat err.txt; fail "inject -o -: exit $?"; }
    perf script -i inj.data --no-inline 2>/dev/null | grep -q tree_a2 || fail "perf does not read the output"
    echo "noids: an event without ids is written (under UBSan in check-asan)"
    ;;
*) echo "unknown case $case"; exit 2 ;;
esac
