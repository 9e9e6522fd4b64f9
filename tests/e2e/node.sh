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
grep -q "not used: its JIT entries lie outside" "$W/moved.err" || { cat "$W/moved.err"; echo "FAIL: no reason given"; exit 1; }
rm -f "$nmap"
# a FIFO or a link in its place: refused at once, never waited on or followed
rm -f "$map"; mkfifo "$map"
timeout 20 "$B/unwound" report -i "$W/perf.data" --comm node --folded -o "$W/fifo.folded" 2>"$W/fifo.err" ||
    { echo "FAIL: a FIFO at the map's path: exit $?"; exit 1; }
rm -f "$map"; ln -s "$W/perf.map" "$map"
"$B/unwound" report -i "$W/perf.data" --comm node --folded -o "$W/link.folded" 2>"$W/link.err"
grep -q "hotLoop" "$W/link.folded" && { echo "FAIL: the map was read through a symbolic link"; exit 1; }
echo "stale, misplaced, FIFO and linked maps: not used"
