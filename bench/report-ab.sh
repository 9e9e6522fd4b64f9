#!/bin/sh
# Report speed of two builds, pair by pair, on the two kinds of recording a newcomer makes first:
# a CPython program recorded with DWARF call graphs (~34 MB: Debian's python3.11 running
# tests/programs/pywork.py for 1 s at 1999 Hz with 16 KiB stacks; its kernel frames are named
# from perf's kallsyms snapshot) and the whole machine (`perf record -a`, SYS_SECS seconds,
# default 5: every process's libraries, kernel frames everywhere). Both are made here, in
# OUT (default /tmp/uw-report-ab), and removed at the end unless KEEP=1 (recordings are never
# committed). Each build's `report --folded` runs alternately with the other's (N pairs,
# default 15, after one warm-up each), and bench/ab.py prints the medians and the CPU ratio of
# each pair (NEW/OLD: above 1 is slower). A report that became slower than the old build on
# either recording shows here (a kallsyms snapshot read whole instead of mapped did: 1.26x).
#
# usage: bench/report-ab.sh OLD_UNWOUND NEW_UNWOUND      (root: perf record -a)
# e.g.:  git worktree add /tmp/old REV && cmake -S /tmp/old -B /tmp/old/build \
#            -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build /tmp/old/build -j2
#        bench/report-ab.sh /tmp/old/build/unwound build/unwound
set -eu
[ $# -eq 2 ] || { echo "usage: $0 OLD_UNWOUND NEW_UNWOUND" >&2; exit 2; }
OLD=$1 NEW=$2
for b in "$OLD" "$NEW"; do [ -x "$b" ] || { echo "$0: $b: not an executable" >&2; exit 2; }; done
S=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/uw-report-ab}
SYS_SECS=${SYS_SECS:-5}
mkdir -p "$OUT"
# (perf record keeps a recording it would overwrite as FILE.old: none left behind)
rm -f "$OUT/python.data" "$OUT/system.data" "$OUT/python.data.old" "$OUT/system.data.old"
[ "${KEEP:-0}" = 1 ] || trap 'rm -f "$OUT/python.data" "$OUT/system.data"' EXIT
REC="perf record -q -e cpu-clock -F 1999 --call-graph dwarf,16384"
echo "recording python (1 s)..."
$REC -o "$OUT/python.data" -- /usr/bin/python3.11 "$S/tests/programs/pywork.py" 1 >/dev/null 2>"$OUT/perf.err" ||
    { cat "$OUT/perf.err"; exit 1; }
echo "recording the whole machine ($SYS_SECS s)..."
$REC -a -o "$OUT/system.data" -- sleep "$SYS_SECS" >/dev/null 2>"$OUT/perf.err" || { cat "$OUT/perf.err"; exit 1; }
ls -l "$OUT/python.data" "$OUT/system.data" | awk '{ printf "%s: %.0f MB\n", $NF, $5 / 1e6 }'
echo
MODES=folded N=${N:-15} python3 "$S/bench/ab.py" "$OLD" "$NEW" "$OUT/python.data" "$OUT/system.data"
