#!/bin/sh
# Deferred user callchains on synthesized streams (synth.py deferred, deferred-many), exact:
# every sample waiting on a cookie gets its thread's record, also one taken after the record
# with the same cookie (the kernel writes one record per stay in the kernel); samples still
# waiting at the end (their record lost, or never written) are delivered with their kernel part,
# also when the time-order queue is empty then and when more wait than the reader holds at once;
# `unwound inject` writes every one of them (perf script reads them back).
set -eu
B=${UW_BUILD:?UW_BUILD must point at the build directory}
S=${UW_SRC:?UW_SRC must point at the source directory}
W=$B/tests/work/deferred-synth
rm -rf "$W"; mkdir -p "$W"
command -v perf >/dev/null || { echo "FAIL: perf is needed to read inject's output"; exit 1; }
python3 "$S/tests/e2e/synth.py" deferred "$W/d.data"
python3 "$S/tests/e2e/synth.py" deferred-many "$W/many.data"
# one line per sample: its kernel address, then its user addresses
stacks() { awk '/^[^ \t]/ {if (l != "") print l; l = ""; next} NF {l = l (l == "" ? "" : " ") $1}
                END {if (l != "") print l}' "$1" | sort; }
want=$(printf '%s\n' "ffffffff81000001 401000 402000" "ffffffff81000002 401000 402000" \
    "ffffffff81000003 401000 402000" "ffffffff81000004 401000 402000" "ffffffff81000005" \
    "ffffffff81000006 403000" "ffffffff81000007" "ffffffff81000008 501000" | sort)
"$B/unwound" report -i "$W/d.data" --script --kallsyms /dev/null -o "$W/script.txt" 2>"$W/err.txt"
got=$(stacks "$W/script.txt")
if [ "$got" != "$want" ]; then
    echo "FAIL: report --script: samples and their user parts differ"
    echo "want:"; echo "$want"; echo "got:"; echo "$got"; exit 1
fi
"$B/unwound" report -i "$W/d.data" --kallsyms /dev/null -o "$W/report.txt" 2>"$W/err.txt"
grep "^# deferred" "$W/report.txt"
grep -q "^# deferred user callchains: 8 samples waited for one, 6 completed, 2 never got it (kernel part only); 3 records, 0 matching no sample" "$W/report.txt" ||
    { echo "FAIL: the deferred callchains summary"; exit 1; }
"$B/unwound" inject -i "$W/d.data" -o "$W/inject.data" 2>"$W/inject.err" || { cat "$W/inject.err"; exit 1; }
perf script -i "$W/inject.data" -F comm,tid,ip >"$W/inject.txt" 2>"$W/perf.err" || { cat "$W/perf.err"; exit 1; }
got=$(stacks "$W/inject.txt")
if [ "$got" != "$want" ]; then
    echo "FAIL: perf script of inject's output: samples and their user parts differ"
    echo "want:"; echo "$want"; echo "got:"; echo "$got"; exit 1
fi
echo "8 samples, each with its user part or none, in report and inject"
# 70,000 samples whose records never come, more than are held at once
"$B/unwound" report -i "$W/many.data" --kallsyms /dev/null -o "$W/many.txt" 2>"$W/err.txt"
grep -q "^# Samples: 70000 of event" "$W/many.txt" ||
    { echo "FAIL: samples waiting at the end were dropped:"; grep "^# Samples\|^# deferred" "$W/many.txt"; exit 1; }
"$B/unwound" inject -i "$W/many.data" -o "$W/many-inject.data" 2>"$W/inject.err" || { cat "$W/inject.err"; exit 1; }
n=$(perf script -i "$W/many-inject.data" -F tid 2>/dev/null | grep -c .)
[ "$n" = 70000 ] || { echo "FAIL: inject wrote $n of 70000 samples"; exit 1; }
echo "70000 samples waiting at the end: all delivered, all written by inject"
echo "deferred-synth: ok"
