#!/bin/sh
# Hostile perf.data: a small recording of the e2e program, in file and pipe mode, cut at every
# record and section boundary and inside every record, with absurd sizes and records out of
# order (hostile-perfdata.py says what is checked).
set -eu
B=${UW_BUILD:?} S=${UW_SRC:?}
W=$B/tests/work/hostile-perfdata
rm -rf "$W"; mkdir -p "$W"
perf record -q -e cpu-clock -F 499 --call-graph dwarf,4096 -o "$W/file.data" -- "$B/tests/e2e_nofp" calltree 0.3 \
    >/dev/null 2>"$W/perf.err" || { echo "FAIL: perf record"; cat "$W/perf.err"; exit 1; }
perf record -q -e cpu-clock -F 499 --call-graph dwarf,4096 -o - -- "$B/tests/e2e_nofp" calltree 0.3 \
    >"$W/pipe.data" 2>"$W/perf.err" || { echo "FAIL: perf record (pipe)"; cat "$W/perf.err"; exit 1; }
python3 "$S/tests/e2e/hostile-perfdata.py" "$B/unwound" "$W/file.data" "$W/pipe.data" "$W"
