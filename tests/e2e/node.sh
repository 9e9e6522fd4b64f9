#!/bin/sh
# JIT code named through /tmp/perf-PID.map: Node.js with --perf-basic-prof running a workload
# with known function names; the JIT frames unwind by frame pointers, and --script agrees with
# perf script, which reads the same map.
set -eu
B=${UW_BUILD:?}
S=${UW_SRC:?}
W=$B/tests/work/node
rm -rf "$W"; mkdir -p "$W"
command -v node >/dev/null || { echo "FAIL: node is not installed (scripts/install-deps installs nodejs)"; exit 1; }
perf record -q -e cpu-clock -F 999 --call-graph dwarf -o "$W/perf.data" -- node --perf-basic-prof "$S/tests/programs/jitwork.js" \
    >/dev/null 2>"$W/perf.err" || { echo "FAIL: perf record could not run"; cat "$W/perf.err"; exit 1; }
pid=$(perf script -i "$W/perf.data" -F pid 2>/dev/null | head -n 1 | tr -d ' ')
map=/tmp/perf-$pid.map
[ -f "$map" ] || { echo "FAIL: node wrote no $map"; exit 1; }
# the map is this test's: kept beside the recording, removed from /tmp when the test ends
cp -p "$map" "$W/perf.map"
trap 'rm -f "$map"' EXIT
"$B/unwound" report -i "$W/perf.data" --comm node --rows 3 >"$W/top.txt"
cat "$W/top.txt"
grep -E '^ +[0-9.]+% +[0-9.]+% +\[\.\] JS:\*hotLoop(Outer|Inner) .* perf-[0-9]+\.map$' "$W/top.txt" >/dev/null ||
    { echo "FAIL: the JIT-compiled functions are not named from perf-PID.map"; exit 1; }
roots="_start,clone3,__clone3,clone,__clone"
perf script -i "$W/perf.data" --no-inline >"$W/perf.txt" 2>/dev/null
"$B/unwound" report -i "$W/perf.data" --script --no-inline -o "$W/unwound.txt"
python3 "$S/tests/e2e/compare-script.py" "$W/perf.txt" "$W/unwound.txt" --roots "$roots"
n=$(grep -c 'hotLoop' "$W/unwound.txt")
echo "JIT frames named: $n"
[ "$n" -gt 500 ] || { echo "FAIL: too few named JIT frames"; exit 1; }

# a map that cannot be this process's is not used: written before the process started (another
# process's that had this pid; pids are reused and maps outlive processes) ...
touch -d "@$(($(stat -c %Y "$W/perf.data") - 3600))" "$map"
"$B/unwound" report -i "$W/perf.data" --comm node --folded -o "$W/stale.folded" 2>"$W/stale.err"
grep -q "hotLoop" "$W/stale.folded" && { echo "FAIL: a map older than the process named its frames"; exit 1; }
grep -q "not used: it was written before the process started" "$W/stale.err" || { cat "$W/stale.err"; echo "FAIL: no reason given"; exit 1; }
# ... or, for a process that ran before the recording (its age proves nothing then), whose JIT
# entries lie outside the process's anonymous mappings (another address space's)
rm -f "$map"
node --perf-basic-prof "$S/tests/programs/jitwork.js" 4000 >/dev/null &
npid=$!
nmap=/tmp/perf-$npid.map
trap 'rm -f "$map" "$nmap"' EXIT
# recorded once V8 has compiled the hot functions (their map entries are written), however long
# that takes on a busy machine
i=0
until grep -q hotLoop "$nmap" 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 600 ] || { echo "FAIL: node wrote no map entry for hotLoop in 60 s"; exit 1; }
    sleep 0.1
done
perf record -q -e cpu-clock -F 999 --call-graph dwarf -p $npid -o "$W/attached.data" -- sleep 1 2>"$W/attached.err" ||
    { cat "$W/attached.err"; echo "FAIL: perf record -p could not attach to node"; exit 1; }
wait $npid || { echo "FAIL: node exited with $?"; exit 1; }
"$B/unwound" report -i "$W/attached.data" --folded -o "$W/attached.folded"
grep -q "hotLoop" "$W/attached.folded" || { echo "FAIL: the map of a process recorded after its start was not used"; exit 1; }
cp -p "$nmap" "$W/attached.map"
python3 -c '
import sys
for line in open(sys.argv[1]):
    a, n, name = line.rstrip("\n").split(" ", 2)
    print("%x %s %s" % (int(a, 16) + 0x100000000000, n, name))' "$W/attached.map" >"$nmap"
"$B/unwound" report -i "$W/attached.data" --folded -o "$W/moved.folded" 2>"$W/moved.err"
grep -q "hotLoop" "$W/moved.folded" && { echo "FAIL: a map of another address space named the frames"; exit 1; }
# a map that claims the addresses of the process's own code (node's text, named by its ELF
# symbols): never believed there; its entries are judged one by one, and those that cover the
# JIT code still name it
# (node's largest executable mapping, as the recording has it)
perf script -i "$W/attached.data" --show-mmap-events 2>/dev/null | python3 -c '
import re, sys
best = max(((int(m.group(2), 16), int(m.group(1), 16)) for m in
            (re.search(r"\[(0x[0-9a-f]+)\((0x[0-9a-f]+)\) @ .* r-xp .*/node$", l.rstrip()) for l in sys.stdin) if m),
           default=None)
if not best:
    sys.exit("FAIL: no mapping of node'"'"'s text in the recording")
for line in open(sys.argv[1]):
    sys.stdout.write(line)
print("%x %x JS:uwClaimsRealCode" % (best[1], best[0]))' "$W/attached.map" >"$nmap"
"$B/unwound" report -i "$W/attached.data" --folded -o "$W/claim.folded" 2>"$W/claim.err"
grep -q "uwClaimsRealCode" "$W/claim.folded" && { echo "FAIL: a perf map named code of node's executable"; exit 1; }
grep -q "node::" "$W/claim.folded" || { echo "FAIL: node's own functions are not named"; exit 1; }
grep -q "hotLoop" "$W/claim.folded" || { cat "$W/claim.err"; echo "FAIL: the map's other entries were thrown away"; exit 1; }
rm -f "$nmap"
# a FIFO or a link in its place: refused at once, never waited on or followed
rm -f "$map"; mkfifo "$map"
timeout 20 "$B/unwound" report -i "$W/perf.data" --comm node --folded -o "$W/fifo.folded" 2>"$W/fifo.err" ||
    { echo "FAIL: a FIFO at the map's path: exit $?"; exit 1; }
rm -f "$map"; ln -s "$W/perf.map" "$map"
"$B/unwound" report -i "$W/perf.data" --comm node --folded -o "$W/link.folded" 2>"$W/link.err"
grep -q "hotLoop" "$W/link.folded" && { echo "FAIL: the map was read through a symbolic link"; exit 1; }
echo "stale, misplaced, FIFO and linked maps: not used"

# unwound record -p of a Node.js already running: V8 made its code pages executable before the
# recording began, and the recording holds no mapping for much of what the map lists (the
# interpreter's entries point into V8's heap); the map is judged entry by entry, so the hot
# function is named, as perf report names it from the same file (it was thrown away whole:
# "its JIT entries lie outside the process's anonymous mappings")
rm -f "$map"
node --perf-basic-prof --no-turbo-inlining "$S/tests/programs/jitattach.js" 120 >"$W/attach.out" 2>&1 &
apid=$!
amap=/tmp/perf-$apid.map
trap 'kill $apid 2>/dev/null || true; rm -f "$map" "$nmap" "$amap"' EXIT
i=0
until grep -q ready "$W/attach.out" 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 600 ] || { echo "FAIL: node did not start its workload in 60 s"; exit 1; }
    kill -0 $apid 2>/dev/null || { cat "$W/attach.out"; echo "FAIL: node ended"; exit 1; }
    sleep 0.1
done
"$B/unwound" record -p $apid --duration 2 -o "$W/attach.data" 2>"$W/attach-rec.err" ||
    { cat "$W/attach-rec.err"; echo "FAIL: unwound record -p could not record node"; exit 1; }
kill $apid 2>/dev/null || true
wait $apid 2>/dev/null || true
"$B/unwound" report -i "$W/attach.data" --folded -o "$W/attach.folded" 2>"$W/attach.err"
set -- $(awk '{ n += $NF; if (/uwAttachedSpin/) k += $NF } END { print k + 0, n + 0 }' "$W/attach.folded")
echo "record -p of a running node: $1 of $2 samples in JS:*uwAttachedSpin"
[ "$2" -ge 50 ] || { cat "$W/attach-rec.err"; echo "FAIL: only $2 samples of node"; exit 1; }
[ $(($1 * 2)) -ge "$2" ] ||
    { cat "$W/attach.err"; echo "FAIL: the JIT-compiled function is named in $1 of $2 samples (perf report names it from the same map)"; exit 1; }
rm -f "$amap"
echo "record -p of a running node: its perf map names the JIT code"
