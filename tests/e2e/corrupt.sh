#!/bin/sh
# The reader on a recording made at test time, then on truncated and corrupted copies:
# each must end with a clear error or a partial result, never a crash or a hang.
set -eu
B=${UW_BUILD:?}
W=$B/tests/work/corrupt
rm -rf "$W"; mkdir -p "$W"
perf record -q -e cpu-clock -F 999 --call-graph dwarf,4096 -o "$W/ok.data" -- "$B/tests/e2e_nofp" calltree 0.3 \
    >/dev/null 2>"$W/perf.err" || { echo "FAIL: perf record could not run"; cat "$W/perf.err"; exit 1; }
U="$B/unwound"
"$U" report -i "$W/ok.data" >/dev/null
size=$(stat -c %s "$W/ok.data")
fails=0
check() { # file label: exit status must be 0 or 1 (never a signal), within 20 s
    rc=0
    timeout 20 "$U" report -i "$1" --folded -o "$W/out.txt" 2>"$W/err.txt" || rc=$?
    if [ $rc -gt 1 ]; then
        echo "FAIL: $2: exit status $rc"; cat "$W/err.txt"; fails=$((fails + 1))
    fi
    if [ $rc -eq 1 ] && ! grep -q "unwound report: " "$W/err.txt"; then
        echo "FAIL: $2: error without a message"; fails=$((fails + 1))
    fi
}
# truncation at many offsets, including inside the header and on record boundaries
n=0
for off in 0 7 8 16 100 103 104 200 $((size / 7)) $((size / 3)) $((size / 2)) $((size - 9)) $((size - 1)); do
    [ "$off" -lt "$size" ] || continue
    head -c "$off" "$W/ok.data" >"$W/t.data"
    check "$W/t.data" "truncated at $off"
    n=$((n + 1))
done
step=$((size / 64 + 1))
off=1000
while [ $off -lt "$size" ]; do
    head -c "$off" "$W/ok.data" >"$W/t.data"
    check "$W/t.data" "truncated at $off"
    off=$((off + step)); n=$((n + 1))
done
# the error message names the offset for a record cut in the middle of the data
head -c $((size / 2)) "$W/ok.data" >"$W/half.data"
if "$U" report -i "$W/half.data" >/dev/null 2>"$W/err.txt"; then
    # a cut inside the data section is reported unless it fell on a record boundary
    :
fi
# bit flips and overwritten words at pseudo-random offsets
python3 - "$W/ok.data" "$W" <<'PY'
import random, sys, os
src, w = sys.argv[1], sys.argv[2]
data = bytearray(open(src, "rb").read())
rng = random.Random(4242)
for i in range(60):
    d = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        p = rng.randrange(len(d))
        if rng.random() < 0.5:
            d[p] ^= 1 << rng.randrange(8)
        else:
            d[p:p + 8] = rng.choice([b"\xff" * 8, b"\x00" * 8, (0x7fffffff).to_bytes(8, "little")])[: len(d) - p]
    open(os.path.join(w, "flip%02d.data" % i), "wb").write(d)
PY
for f in "$W"/flip*.data; do
    check "$f" "corrupted $(basename "$f")"
    n=$((n + 1))
done
# not a perf.data file at all, and an empty one
printf 'hello world, not perf' >"$W/junk.data"; check "$W/junk.data" junk
: >"$W/empty.data"; check "$W/empty.data" empty
if "$U" report -i "$W/junk.data" >/dev/null 2>"$W/err.txt"; then echo "FAIL: junk accepted"; fails=$((fails + 1)); fi
grep -q "magic" "$W/err.txt" || { echo "FAIL: junk error does not say why"; cat "$W/err.txt"; fails=$((fails + 1)); }
if "$U" report -i "$W/missing.data" >/dev/null 2>&1; then echo "FAIL: a missing file succeeded"; fails=$((fails + 1)); fi
echo "$((n + 3)) damaged inputs, $fails failures"
[ $fails -eq 0 ]
