#!/bin/sh
# Side-band records that cannot be applied (an MMAP2 of length 0; an MMAP, a COMM and a FORK whose
# bodies end before their fields) are counted and said in the summary, not silently skipped; the
# samples around them are read as usual.
set -eu
B=${UW_BUILD:?}
S=${UW_SRC:?}
W=$B/tests/work/malformed
rm -rf "$W"; mkdir -p "$W"
python3 "$S/tests/e2e/synth.py" malformed "$W/m.data"
"$B/unwound" report -i "$W/m.data" --kallsyms /dev/null -o "$W/report.txt" 2>"$W/err.txt"
cat "$W/report.txt"
grep -qx "# malformed records skipped: 2 MMAP, 1 COMM, 1 FORK, 0 EXIT" "$W/report.txt" ||
    { echo "FAIL: the malformed records are not counted as expected"; exit 1; }
grep -q "^# unwinding: 2 samples" "$W/report.txt" || { echo "FAIL: the samples were not read"; exit 1; }
echo "malformed: counted and said"
