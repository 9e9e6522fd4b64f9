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
