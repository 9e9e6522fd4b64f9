#!/bin/sh
# Soak: a system-wide `unwound record -a` for SOAK_SECS (default 300) while two loops build and
# run programs that come and go: each iteration a program of its own (a new build-id, at a new
# path, deleted after its run), CPython, and a short Node.js run writing a perf map
# (--perf-basic-prof). The recorder's RSS is sampled every second; after the warm-up (the first
# fifth) it must stay within 15% of its level then: what it keeps follows what runs, not what
# has run. Prints the curve's start, peak and end, and the samples recorded.
# usage: tests/soak/soak.sh BUILD   (needs root)
set -eu
B=${1:-build}
S=$(cd "$(dirname "$0")/../.." && pwd)
SECS=${SOAK_SECS:-300}
W=$B/soak
rm -rf "$W"; mkdir -p "$W"
"$B/unwound" record -a --duration "$SECS" -o "$W/soak.data" 2>"$W/record.err" &
rec=$!
# the load: build and run the programs, two loops in parallel, until the recording ends
load() {
    i=0
    while kill -0 $rec 2>/dev/null; do
        p=$W/bin/$1-$i/prog
        mkdir -p "$(dirname "$p")"
        # a program of its own each time: another build-id
        bid=$(printf '%08x%08x%024x' "$1" "$i" "$$")
        gcc -O2 -g -Wl,--build-id=0x$bid -o "$p" "$S/tests/programs/e2e.c" -L"$B/tests" -ltw_nofp -Wl,-rpath,"$B/tests" -pthread
        "$p" calltree 0.3 >/dev/null
        "$p" threads 0.2 >/dev/null
        rm -rf "$(dirname "$p")"
        python3 "$S/tests/programs/pywork.py" 0.2 >/dev/null
        if command -v node >/dev/null; then
            # (in the work directory: V8 leaves its isolate-*.log where it runs)
            (cd "$W" && exec node --perf-basic-prof -e 'let s = 0; for (let i = 0; i < 3e6; i++) s += i % 7; console.log(s)') >/dev/null &
            n=$!
            wait $n || true
            rm -f "/tmp/perf-$n.map" # the soak's own
        fi
        i=$((i + 1))
    done
}
load 1 & l1=$!
load 2 & l2=$!
: >"$W/rss.txt"
while kill -0 $rec 2>/dev/null; do
    awk '/^VmRSS/ {print $2}' /proc/$rec/status 2>/dev/null >>"$W/rss.txt" || true
    sleep 1
done
wait $rec || { echo "FAIL: the recording failed"; cat "$W/record.err"; exit 1; }
wait $l1 $l2 2>/dev/null || true
cat "$W/record.err"
python3 - "$W/rss.txt" <<'PY'
import sys
rss = [int(x) for x in open(sys.argv[1]) if x.strip()]
if len(rss) < 10:
    print("FAIL: too few RSS samples"); sys.exit(1)
warm = len(rss) // 5
after = rss[warm:]
start, peak, end = rss[warm], max(after), rss[-1]
print(f"RSS (KiB): at start {rss[0]}, after warm-up {start}, peak {peak}, end {end}, samples {len(rss)}")
# flat: the peak after warm-up within 15% of the level at the end of warm-up
if peak > start * 1.15:
    print(f"FAIL: RSS grows after warm-up ({100.0 * (peak - start) / start:.1f}%)"); sys.exit(1)
PY
"$B/unwound" report -i "$W/soak.data" --rows 5 | tail -8

