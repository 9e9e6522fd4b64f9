#!/bin/sh
# pprof output (--format pprof) read by its real consumer, go tool pprof: a C++ program with
# inline chains through the standard library, recorded with perf; the profile's samples, stacks
# (inline levels included) and counts equal unwound's folded stacks, its lines addr2line's, its
# labels the threads', and two runs give the same bytes. Code of a stripped library, which no
# symbol names, is a function per address, with the share unwound's table gives that address.
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
# a stripped library: each unnamed address its own function, not one [libpprofstrip.so]
cat >"$W/strip.c" <<'C'
static volatile unsigned long sink;
__attribute__((noinline)) static void pprof_strip_a(unsigned long n) { for (unsigned long i = 0; i < n; i++) sink += i; }
__attribute__((noinline)) static void pprof_strip_b(unsigned long n) { for (unsigned long i = 0; i < n; i++) sink ^= i; }
void pprof_strip_entry(int k) { for (int j = 0; j < k; j++) { pprof_strip_a(3000000); pprof_strip_b(2000000); } }
C
printf 'void pprof_strip_entry(int);\nint main(void) { pprof_strip_entry(60); return 0; }\n' >"$W/strip-main.c"
cc -O1 -shared -fPIC -o "$W/libpprofstrip.so" "$W/strip.c" && strip "$W/libpprofstrip.so"
cc -O1 -o "$W/strip-main" "$W/strip-main.c" -L"$W" -lpprofstrip -Wl,-rpath,"$W"
perf record -q -e cpu-clock -F 999 --call-graph dwarf --no-buildid-cache -o "$W/strip.data" -- "$W/strip-main" >/dev/null 2>"$W/perf.err" ||
    { echo "FAIL: perf record could not run"; cat "$W/perf.err"; exit 1; }
"$B/unwound" report -i "$W/strip.data" --format pprof -o "$W/strip.pb.gz"
go tool pprof -top -nodefraction=0 -nodecount=100000 -sample_index=samples "$W/strip.pb.gz" >"$W/strip-top.txt" 2>&1
"$B/unwound" report -i "$W/strip.data" --weight samples --stdio --no-children --sort dso,sym --rows 100000 >"$W/strip-table.txt"
# (address and share: pprof's flat%, the table's self%; pprof drops a share's trailing zero, 0.3%
# for the table's 0.30%: both are read as numbers)
# (an address seen only as a caller has flat 0% in pprof and no self row in the table)
sed -n 's/^ *[0-9]* *\([0-9.]*%\) .* libpprofstrip\.so+0x\([0-9a-f]*\)$/\2 \1/p' "$W/strip-top.txt" | awk '$2 != "0%" { printf "%s %.2f%%\n", $1, $2 }' | sort >"$W/strip-pprof.rows"
sed -n 's/^ *\([0-9.]*%\) *libpprofstrip\.so *\[\.\] 0x0*\([0-9a-f]*\)$/\2 \1/p' "$W/strip-table.txt" | awk '{ printf "%s %.2f%%\n", $1, $2 }' | sort >"$W/strip-table.rows"
n=$(wc -l <"$W/strip-table.rows")
[ "$n" -ge 2 ] || { cat "$W/strip-table.txt"; echo "FAIL: the table has $n rows of the stripped library's code"; exit 1; }
diff "$W/strip-table.rows" "$W/strip-pprof.rows" ||
    { grep -i pprofstrip "$W/strip-top.txt" | head; echo "FAIL: go tool pprof's functions of the stripped library are not the table's addresses"; exit 1; }
echo "stripped library: $n functions, one per address, with the table's shares"
# samples with no frame at all (a kernel thread's, a stack lost): counted, at one "[unknown]"
# location (a sample with none is in no total of go tool pprof's: an off-CPU recording's cpu
# column summed to one sample less than perf script's)
"$B/tests/frameless" "$W" || { echo "FAIL: tests/frameless"; exit 1; }
[ "$(cat "$W/frameless.folded")" = "kworker 3" ] || { cat "$W/frameless.folded"; echo "FAIL: folded of 3 samples with no frame"; exit 1; }
# a caller at pc 0 outside every mapping is "[unknown]", never the profiler's lost samples
[ "$(sort "$W/frameless-lost.folded" | tr '\n' '|')" = "damaged;[unknown];[unknown] 1|lossy;[lost samples] 1|" ] ||
    { cat "$W/frameless-lost.folded"; echo "FAIL: folded of a pc-0 caller and of lost samples"; exit 1; }
go tool pprof -top -sample_index=samples "$W/frameless.pb.gz" >"$W/frameless-top.txt" 2>&1
grep -q "of 3 total" "$W/frameless-top.txt" && grep -q "^ *3 *100% .* \[unknown\]$" "$W/frameless-top.txt" ||
    { cat "$W/frameless-top.txt"; echo "FAIL: go tool pprof does not count 3 samples with no frame, in [unknown]"; exit 1; }
for f in top table diff; do
    grep -q "^ *100\.00% .*\[unknown\]" "$W/frameless.$f" || { cat "$W/frameless.$f"; echo "FAIL: $f of 3 samples with no frame: no [unknown] row of 100%"; exit 1; }
done
echo "samples with no frame: 3 of 3 counted, in [unknown]"
echo "pprof: ok"
