#!/bin/sh
# Pipe mode (`perf record -o -`): read from a pipe and from a file, same stacks as file mode.
set -eu
B=${UW_BUILD:?}
W=$B/tests/work/pipe
rm -rf "$W"; mkdir -p "$W"
# the workload's own output must not go into perf's stream
perf record -q -e cpu-clock -F 999 --call-graph dwarf -o - -- sh -c "exec '$B/tests/e2e_nofp' calltree 0.5 >/dev/null" \
    2>"$W/perf.err" >"$W/pipe.data" || { echo "FAIL: perf record could not run"; cat "$W/perf.err"; exit 1; }
perf script -i "$W/pipe.data" --no-inline >"$W/perf.txt" 2>/dev/null
"$B/unwound" report -i "$W/pipe.data" --script --no-inline -o "$W/file.txt"
cat "$W/pipe.data" | "$B/unwound" report -i - --script --no-inline -o "$W/stdin.txt"
cmp "$W/file.txt" "$W/stdin.txt"
python3 "$UW_SRC/tests/e2e/compare-script.py" "$W/perf.txt" "$W/stdin.txt" --roots "_start,clone3,__clone3,clone,__clone"
n=$(grep -c 'cpu-clock' "$W/stdin.txt")
echo "pipe mode: $n samples, identical from a file and from a pipe"
[ "$n" -gt 100 ]
