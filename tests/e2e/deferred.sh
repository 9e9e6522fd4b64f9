#!/bin/sh
# Deferred user callchains (Linux 6.19+), from real frame-pointer recordings made here: the user
# parts moved into PERF_RECORD_CALLCHAIN_DEFERRED records (deferred.py: cookies shared, records
# late, some missing). `unwound report --script` on them, and `perf script` on what `unwound
# inject` makes of them, must equal `perf script` on the originals sample for sample, the samples
# whose record is missing with their kernel part alone; the summary counts them. On a kernel
# without deferred callchains, `record --call-graph fp,defer` says so and fails.
set -eu
B=${UW_BUILD:?UW_BUILD must point at the build directory}
S=${UW_SRC:?UW_SRC must point at the source directory}
W=$B/tests/work/deferred
rm -rf "$W"
mkdir -p "$W"
# (dd: samples in system calls, whose kernel part stays in the sample)
for mode in threads signal syscalls; do
    d=$W/$mode
    mkdir -p "$d"
    if [ $mode = syscalls ]; then
        set -- dd if=/dev/zero of=/dev/null bs=64 count=1500000
    else
        set -- "$B/tests/e2e_fp" $mode 1
    fi
    perf record -q -e cpu-clock -F 1999 --call-graph fp -o "$d/orig.data" -- "$@" \
        >/dev/null 2>"$d/perf.err" || { cat "$d/perf.err"; exit 1; }
    PYTHONPATH=$S/tests/e2e python3 "$S/tests/e2e/deferred.py" "$d/orig.data" "$d/deferred.data" "$d/missing.txt"
    perf script -i "$d/orig.data" --no-inline >"$d/perf.txt" 2>/dev/null
    echo "$mode: $(awk -v RS= '{n++} /kernel.kallsyms/ {k++} END {print n" samples, "k+0" with kernel frames"}' "$d/perf.txt")"
    "$B/unwound" report -i "$d/deferred.data" --script --no-inline -o "$d/unwound.txt"
    echo "$mode, report: $(python3 "$S/tests/e2e/deferred-compare.py" "$d/perf.txt" "$d/unwound.txt" "$d/missing.txt")"
    "$B/unwound" inject -i "$d/deferred.data" -o "$d/inject.data" 2>/dev/null
    perf script -i "$d/inject.data" --no-inline >"$d/inject.txt" 2>/dev/null
    echo "$mode, inject: $(python3 "$S/tests/e2e/deferred-compare.py" "$d/perf.txt" "$d/inject.txt" "$d/missing.txt")"
    "$B/unwound" report -i "$d/deferred.data" -o "$d/report.txt"
    line=$(grep "^# deferred user callchains:" "$d/report.txt")
    echo "$line"
    held=$(grep -c "" "$d/missing.txt" || true)
    case $line in
    *" $held never got it"*) ;;
    *) echo "FAIL: the summary does not count the $held samples whose record is missing"; exit 1 ;;
    esac
    grep -q "deferred user callchain never arrived: $held" "$d/report.txt" || [ "$held" = 0 ] ||
        { echo "FAIL: the stop reason of the samples whose record is missing"; exit 1; }
done
# (this machine's kernel predates them: a clear refusal, no recording)
if "$B/unwound" record --call-graph fp,defer -o "$W/x.data" -- true 2>"$W/record.err"; then
    echo "note: this kernel records deferred callchains"
else
    cat "$W/record.err"
    grep -q "6.19" "$W/record.err" || { echo "FAIL: the refusal does not say why"; exit 1; }
    [ ! -s "$W/x.data" ] || { echo "FAIL: a refused recording left a file"; exit 1; }
fi
echo "deferred: ok"
