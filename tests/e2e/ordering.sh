#!/bin/sh
# Ordering and lifetimes on a synthetic stream: samples out of order inside a round come out
# sorted; an EXIT does not lose a sample stamped before it; a record arriving after its window
# was flushed is delivered, counted as late, and still finds its (exited) process.
set -eu
B=${UW_BUILD:?}
S=${UW_SRC:?}
W=$B/tests/work/ordering
rm -rf "$W"; mkdir -p "$W"
python3 "$S/tests/e2e/synth.py" ordering "$W/o.data"
"$B/unwound" report -i "$W/o.data" --script --kallsyms /dev/null -o "$W/script.txt" 2>"$W/err.txt"
got=$(awk '/cpu-clock/ {t = $3; if (t ~ /^\[/) t = $4; print $1 "@" t}' "$W/script.txt" | tr '\n' ' ')
want="worker@0.000000: worker@0.000000: worker@0.000000: worker@0.000000: :200@0.000000: "
# times are in ns: compare the kernel addresses, which encode the intended time order
order=$(awk '/^\t/ {print $1}' "$W/script.txt" | tr '\n' ' ')
echo "order: $order"
echo "comms: $got"
# 25 arrives after the window up to 40 was delivered: late, delivered at once (before the
# still-queued 50), and its process, exited at 40, still resolves
[ "$order" = "ffffffff81000020 ffffffff81000030 ffffffff81000035 ffffffff81000025 ffffffff81000050 " ] ||
    { echo "FAIL: delivery order"; exit 1; }
[ "$got" = "$want" ] || { echo "FAIL: processes (want $want)"; exit 1; }
"$B/unwound" report -i "$W/o.data" --kallsyms /dev/null >"$W/report.txt" 2>&1
grep -q "1 records arrived after their ordering window" "$W/report.txt" ||
    { echo "FAIL: the late record is not counted"; cat "$W/report.txt"; exit 1; }
echo "ordering ok"
