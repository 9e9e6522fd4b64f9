#!/bin/sh
# A real interpreter with DWARF: Debian's python3.11 (whose main tail-calls Py_BytesMain), its debug info from python3.11-dbg (by
# build-id). Stacks reach main; every distinct sampled address has the inline chain and
# file:line that addr2line gives; --script agrees with perf script with and without inlines.
set -eu
B=${UW_BUILD:?}
S=${UW_SRC:?}
W=$B/tests/work/python
rm -rf "$W"; mkdir -p "$W"
PY=/usr/bin/python3.11
[ -x "$PY" ] || { echo "FAIL: $PY is missing (scripts/install-deps installs python3.11-dbg)"; exit 1; }
bid=$(readelf -n "$PY" | awk '/Build ID/ {print $3}')
[ -f "/usr/lib/debug/.build-id/$(echo "$bid" | cut -c1-2)/$(echo "$bid" | cut -c3-).debug" ] ||
    { echo "FAIL: no debug file for $PY (install python3.11-dbg)"; exit 1; }
perf record -q -e cpu-clock -F 999 --call-graph dwarf,65528 -o "$W/perf.data" -- "$PY" "$S/tests/programs/pywork.py" 1.5 \
    >/dev/null 2>"$W/perf.err" || { echo "FAIL: perf record could not run"; cat "$W/perf.err"; exit 1; }
"$B/tests/stackcheck" "$W/perf.data" --comm python3.11 --roots main,Py_BytesMain --min-root 99.9 --min-samples 1000 --sparse-equal
"$B/tests/symdump" "$W/perf.data" python3.11 >"$W/symdump.txt"
python3 "$S/tests/e2e/addr2line-oracle.py" "$W/symdump.txt" --min 500
roots="_start,clone3,__clone3,clone,__clone"
perf script -i "$W/perf.data" --no-inline >"$W/perf.txt" 2>/dev/null
"$B/unwound" report -i "$W/perf.data" --script --no-inline -o "$W/unwound.txt"
python3 "$S/tests/e2e/compare-script.py" "$W/perf.txt" "$W/unwound.txt" --roots "$roots"
# inline chains looked up ahead on the helper thread (the default) and on the calling thread:
# the same output, byte for byte
"$B/unwound" report -i "$W/perf.data" --script --srcline -o "$W/inline-ahead.txt"
"$B/unwound" report -i "$W/perf.data" --script --srcline --sync-symbols -o "$W/inline-sync.txt"
cmp "$W/inline-ahead.txt" "$W/inline-sync.txt" || { echo "FAIL: --sync-symbols changes the output"; exit 1; }
n=$(grep -c '(inlined)$' "$W/inline-ahead.txt" || true)
[ "$n" -ge 1000 ] || { echo "FAIL: only $n inline lines"; exit 1; }
"$B/unwound" report -i "$W/perf.data" --folded --inline -o "$W/folded-ahead.txt"
"$B/unwound" report -i "$W/perf.data" --folded --inline --sync-symbols -o "$W/folded-sync.txt"
cmp "$W/folded-ahead.txt" "$W/folded-sync.txt" || { echo "FAIL: --sync-symbols changes the folded stacks"; exit 1; }
echo "python ok ($n inline lines, the same with --sync-symbols)"
