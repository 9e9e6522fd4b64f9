#!/bin/sh
# JIT code named through a jitdump: Node.js with --perf-prof writes jit-PID.dump (and maps it, so
# the recording shows it); recorded with CLOCK_MONOTONIC (-k 1) as jitdump requires. unwound must
# name the JIT-compiled functions as they were at each sample, and agree frame for frame with
# perf script after perf inject --jit (perf's own way of reading jitdumps).
set -eu
B=${UW_BUILD:?}
S=${UW_SRC:?}
W=$B/tests/work/node-jitdump
rm -rf "$W"; mkdir -p "$W"
command -v node >/dev/null || { echo "FAIL: node is not installed (scripts/install-deps installs nodejs)"; exit 1; }
cd "$W" # V8 writes the dump into the current directory
# 32 KiB of stack: Node's deepest stacks (module loading) are over perf's default 8 KiB
perf record -q -k 1 -e cpu-clock -F 999 --call-graph dwarf,32768 -o perf.data -- \
    node --perf-prof --interpreted-frames-native-stack "$S/tests/programs/jitwork.js" >/dev/null 2>perf.err ||
    { echo "FAIL: perf record could not run"; cat perf.err; exit 1; }
ls jit-*.dump >/dev/null || { echo "FAIL: node wrote no jitdump"; exit 1; }
pid=$(ls jit-*.dump | sed 's/jit-\([0-9]*\)\.dump/\1/')
# (a /tmp/perf-$pid.map left by another process that had this pid does not matter: the jitdump
# names the JIT code first, and such a map is older than this process, so it is not used)
"$B/unwound" report -i perf.data --comm node --rows 3 >top.txt
cat top.txt
grep -E '^ +[0-9.]+% +[0-9.]+% +\[\.\] JS:\*hotLoop(Outer|Inner) .* jitted-[0-9]+-[0-9]+\.so$' top.txt >/dev/null ||
    { echo "FAIL: the JIT-compiled functions are not named from the jitdump"; exit 1; }
grep -q "reach a root frame" top.txt
pct=$(sed -n 's/.*, \([0-9.]*\)% reach a root frame.*/\1/p' top.txt)
python3 -c "import sys; sys.exit(0 if float('$pct') >= 99.0 else 1)" || { echo "FAIL: $pct% of stacks reach a root"; exit 1; }
perf inject --jit -i perf.data -o perf.jit.data
perf script -i perf.jit.data --no-inline >perf.txt 2>/dev/null
"$B/unwound" report -i perf.data --script --no-inline -o unwound.txt
python3 "$S/tests/e2e/compare-script.py" perf.txt unwound.txt --roots "_start,clone3,__clone3,clone,__clone"
n=$(grep -c 'JS:.hotLoop' unwound.txt)
echo "JIT frames named from the jitdump: $n"
[ "$n" -gt 500 ] || { echo "FAIL: too few named JIT frames"; exit 1; }
