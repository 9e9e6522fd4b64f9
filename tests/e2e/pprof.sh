#!/bin/sh
# pprof output (--format pprof) read by its real consumer, go tool pprof: a C++ program with
# inline chains through the standard library, recorded with perf; the profile's samples, stacks
# (inline levels included) and counts equal unwound's folded stacks, its lines addr2line's, its
# labels the threads', and two runs give the same bytes.
set -eu
B=${UW_BUILD:?}
S=${UW_SRC:?}
W=$B/tests/work/pprof
rm -rf "$W"; mkdir -p "$W"
command -v go >/dev/null || { echo "FAIL: go is not installed (scripts/install-deps installs golang-go)"; exit 1; }
export HOME="${HOME:-/root}" GOCACHE="$W/gocache"
g++ -O2 -g -o "$W/cxxwork" "$S/tests/programs/cxxwork.cpp"
perf record -q -e cpu-clock -F 999 --call-graph dwarf -o "$W/perf.data" -- "$W/cxxwork" 1 >/dev/null 2>"$W/perf.err" ||
    { echo "FAIL: perf record could not run"; cat "$W/perf.err"; exit 1; }
"$B/unwound" report -i "$W/perf.data" --format pprof -o "$W/profile.pb.gz"
"$B/unwound" report -i "$W/perf.data" --format pprof -o "$W/again.pb.gz"
cmp "$W/profile.pb.gz" "$W/again.pb.gz" || { echo "FAIL: two runs wrote different profiles"; exit 1; }
"$B/unwound" report -i "$W/perf.data" --folded --inline -o "$W/folded.txt"
n=$("$B/unwound" report -i "$W/perf.data" | sed -n 's/^# unwinding: \([0-9]*\) samples.*/\1/p')
python3 "$S/tests/e2e/pprof-check.py" "$W/profile.pb.gz" "$W/folded.txt" "$n" "$W/cxxwork"
# what a pprof user sees
go tool pprof -top -sample_index=samples "$W/profile.pb.gz" >"$W/top.txt" 2>&1
grep -q "Type: samples" "$W/top.txt" && grep -q "sorted_median<double>" "$W/top.txt" ||
    { cat "$W/top.txt"; echo "FAIL: go tool pprof -top"; exit 1; }
go tool pprof -traces "$W/profile.pb.gz" >"$W/traces.txt" 2>&1
grep -q "Type: cpu" "$W/traces.txt" && grep -q "(inline)" "$W/traces.txt" && grep -q "thread:  cxxwork" "$W/traces.txt" ||
    { head -40 "$W/traces.txt"; echo "FAIL: go tool pprof -traces (cpu type, inline frames, thread label)"; exit 1; }
go tool pprof -tags "$W/profile.pb.gz" >"$W/tags.txt" 2>&1
grep -q "pid:" "$W/tags.txt" && grep -q "tid:" "$W/tags.txt" || { cat "$W/tags.txt"; echo "FAIL: labels"; exit 1; }
echo "pprof: ok"
