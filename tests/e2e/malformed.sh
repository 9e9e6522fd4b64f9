#!/bin/sh
# Side-band records that cannot be applied (an MMAP2 of length 0; an MMAP, a COMM and a FORK whose
# bodies end before their fields) are counted and said in the summary, not silently skipped; the
# samples around them are read as usual. Periods that add up past 2^64 are refused, saying so,
# not summed into wrapped totals.
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
python3 "$S/tests/e2e/synth.py" bigperiod "$W/big.data"
for cmd in "report -i $W/big.data" "report -i $W/big.data --folded" "diff $W/big.data $W/m.data"; do
    rc=0; "$B/unwound" $cmd --kallsyms /dev/null -o "$W/big.txt" 2>"$W/big.err" || rc=$?
    [ $rc = 1 ] || { echo "FAIL: $cmd: exit $rc with periods past 2^64"; exit 1; }
    grep -q "big.data: the periods of one event's samples add up past 2^64" "$W/big.err" ||
        { echo "FAIL: $cmd: not said why: $(cat "$W/big.err")"; exit 1; }
done
"$B/unwound" report -i "$W/big.data" --script --kallsyms /dev/null -o "$W/big.txt" || { echo "FAIL: --script of it"; exit 1; }
grep -q "9223372036854775813 cpu-clock" "$W/big.txt" || { echo "FAIL: --script does not show the period"; exit 1; }
echo "periods past 2^64: refused, said"
