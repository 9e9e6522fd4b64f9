#!/bin/sh
# The seeded mutation campaign (tests/tools/mutate.c): the test program and its library, and
# their recordings (plain and perf record -z), damaged one seeded way per case, through the
# whole pipeline. MUTATE_CASES cases (default 1000) from MUTATE_SEED (default 1): no signal, no
# hang. A failing case prints its seed last: `mutate DIR --seed N --cases 1` runs it again.
set -eu
B=${UW_BUILD:?}
W=$B/tests/work/mutate
rm -rf "$W"; mkdir -p "$W"
cd "$W"
E=$B/tests/e2e_nofp
perf record -q --no-buildid-cache -e cpu-clock -F 999 --call-graph dwarf,4096 -o rec.data -- "$E" shlib 0.3 >/dev/null 2>&1
perf record -q --no-buildid-cache -z -e cpu-clock -F 999 --call-graph dwarf,4096 -o rec-z.data -- "$E" calltree 0.3 >/dev/null 2>&1
# the program, its library and libc: what the recordings' stacks go through
libc=$(ldd "$E" | awk '$1 ~ /^libc\.so/ { print $3 }')
printf '%s\n%s\n%s\n' "$(readlink -f "$E")" "$(readlink -f "$B/tests/libtw_nofp.so")" "$(readlink -f "$libc")" >files.txt
export HOME=$W
t0=$(date +%s)
"$B/tests/mutate" "$W" --seed "${MUTATE_SEED:-1}" --cases "${MUTATE_CASES:-1000}" 2>cases.log || {
    echo "FAIL: the last case (seed below) crashed or hung:"; tail -n 3 cases.log; exit 1; }
echo "in $(( $(date +%s) - t0 )) s"
