#!/bin/sh
# A C++ program (templates, virtual calls, std containers): complete stacks, demangled names
# like perf's, inline chains through the standard library, agreement with perf script.
set -eu
B=${UW_BUILD:?}
S=${UW_SRC:?}
W=$B/tests/work/cxx
rm -rf "$W"; mkdir -p "$W"
command -v g++ >/dev/null || { echo "FAIL: g++ is not installed (scripts/install-deps installs it)"; exit 1; }
g++ -O2 -g -o "$W/cxxwork" "$S/tests/programs/cxxwork.cpp"
perf record -q -e cpu-clock -F 999 --call-graph dwarf -o "$W/perf.data" -- "$W/cxxwork" 1.5 >/dev/null 2>"$W/perf.err" ||
    { echo "FAIL: perf record could not run"; cat "$W/perf.err"; exit 1; }
"$B/tests/stackcheck" "$W/perf.data" --comm cxxwork --roots main --min-samples 1000 --sparse-equal
roots="_start,clone3,__clone3,clone,__clone"
perf script -i "$W/perf.data" --no-inline >"$W/perf.txt" 2>/dev/null
"$B/unwound" report -i "$W/perf.data" --script --no-inline -o "$W/unwound.txt"
python3 "$S/tests/e2e/compare-script.py" "$W/perf.txt" "$W/unwound.txt" --roots "$roots"
perf script -i "$W/perf.data" >"$W/perf-inline.txt" 2>/dev/null
"$B/unwound" report -i "$W/perf.data" --script -o "$W/unwound-inline.txt"
python3 "$S/tests/e2e/compare-script.py" "$W/perf-inline.txt" "$W/unwound-inline.txt" --roots "$roots"
grep -q ' sorted_median<double>+0x' "$W/unwound.txt" || { echo "FAIL: no demangled template name"; exit 1; }
grep -q 'std::_Rb_tree<.*>::_M_erase+0x.* (inlined)' "$W/unwound-inline.txt" || { echo "FAIL: no inlined std:: frames"; exit 1; }
"$B/unwound" report -i "$W/perf.data" --script --sync-symbols -o "$W/unwound-inline-sync.txt"
cmp "$W/unwound-inline.txt" "$W/unwound-inline-sync.txt" || { echo "FAIL: --sync-symbols changes the output"; exit 1; }
"$B/unwound" report -i "$W/perf.data" --script --no-inline --no-demangle -o "$W/raw.txt"
grep -q ' _Z13sorted_medianIdET_St6vectorIS0_SaIS0_EE+0x' "$W/raw.txt" || { echo "FAIL: --no-demangle"; exit 1; }
# folded stacks with inline frames of their own, and the table by source line
"$B/unwound" report -i "$W/perf.data" --folded --inline --comm cxxwork -o "$W/folded-inline.txt"
grep -q ';sorted_median<double>;std::sort<' "$W/folded-inline.txt" ||
    { echo "FAIL: --folded --inline lacks the inlined std::sort under sorted_median"; exit 1; }
"$B/unwound" report -i "$W/perf.data" --folded --comm cxxwork -o "$W/folded.txt"
if grep -q ';std::sort<' "$W/folded.txt"; then echo "FAIL: inline frames without --inline"; exit 1; fi
"$B/unwound" report -i "$W/perf.data" --group line --rows 50 >"$W/bylines.txt"
grep -q ' cxxwork.cpp:[0-9]' "$W/bylines.txt" || { echo "FAIL: --group line"; exit 1; }
# every distinct sampled address: inline chain and file:line as addr2line gives them
"$B/tests/symdump" "$W/perf.data" cxxwork >"$W/symdump.txt"
python3 "$S/tests/e2e/addr2line-oracle.py" "$W/symdump.txt" --min 100
echo "c++ ok"
