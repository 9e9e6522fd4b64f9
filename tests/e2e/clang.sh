#!/bin/sh
# A program built by clang, which writes no .debug_aranges by default: units are found by their
# own ranges, so inline chains and source lines are there, and agree with addr2line for every
# distinct sampled address.
set -eu
B=${UW_BUILD:?}
S=${UW_SRC:?}
W=$B/tests/work/clang
rm -rf "$W"; mkdir -p "$W"
command -v clang >/dev/null || { echo "FAIL: clang is not installed (scripts/install-deps installs it)"; exit 1; }
clang -O2 -g -Wno-unknown-attributes -o "$W/e2e_clang" "$S/tests/programs/e2e.c" "$S/tests/programs/libtw.c" -lpthread
if readelf -S "$W/e2e_clang" | grep -q debug_aranges; then echo "FAIL: clang wrote .debug_aranges: this test needs it absent"; exit 1; fi
perf record -q -e cpu-clock -F 999 --call-graph dwarf -o "$W/perf.data" -- "$W/e2e_clang" calltree 0.5 >/dev/null 2>"$W/perf.err" ||
    { echo "FAIL: perf record could not run"; cat "$W/perf.err"; exit 1; }
"$B/unwound" report -i "$W/perf.data" --script --srcline -o "$W/unwound.txt"
# spin is inlined into tree_a2 by clang: its frame is an inline one, with its line
# (with --srcline, "(inlined)" follows the source line)
grep -A1 ' spin+0x[0-9a-f]*$' "$W/unwound.txt" | grep -q 'e2e.c:[0-9]* (inlined)$' ||
    { echo "FAIL: no inlined spin frame with its source line"; head -20 "$W/unwound.txt"; exit 1; }
"$B/tests/symdump" "$W/perf.data" e2e_clang >"$W/symdump.txt"
python3 "$S/tests/e2e/addr2line-oracle.py" "$W/symdump.txt" --min 5
echo "clang ok"
