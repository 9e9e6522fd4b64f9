#!/bin/sh
# The cost per sample of each unwinder, side by side: the e2e program's call tree (and its
# library) built three ways and recorded the same way, then `unwound report --folded` timed on
# each (median of BENCH_RUNS, default 11), with `perf script --no-inline` where perf can unwind:
#   cfi     e2e_nofp: .eh_frame, no frame pointers
#   sframe  e2e_sframe_nofp: .sframe only (no .eh_frame), no frame pointers
#   fp      e2e_sframe_fp with its .sframe made unreadable too: frame pointers only
# libc and ld.so keep their CFI in all three, so the difference between the rows is the cost of
# the program's frames by each unwinder (the table gives the whole report per sample, and how
# the frames were found).
#   bench/unwinders.sh [BUILD]
set -eu
B=$(cd "${1:-build}" && pwd)
RUNS=${BENCH_RUNS:-11}
W=$B/bench/unwinders
rm -rf "$W"
mkdir -p "$W/fp"
cp "$B/tests/e2e_sframe_fp" "$W/fp/e2e_fp_only"
cp "$B/tests/libtw_sframe_fp.so" "$W/fp/libtw_sframe_fp.so"
# (the section cannot be removed from a loaded segment: its magic number is cleared instead, so
# no reader takes it for SFrame)
# and another build-id (perf's build-id cache holds the original under the old one)
for f in "$W/fp/e2e_fp_only" "$W/fp/libtw_sframe_fp.so"; do
    off=$(readelf -SW "$f" | sed 's/\[ */[/' | awk '$2 == ".sframe" {print $5}')
    printf '\000\000' | dd of="$f" bs=1 seek=$((0x$off)) conv=notrunc status=none
    off=$(readelf -SW "$f" | sed 's/\[ */[/' | awk '$2 == ".note.gnu.build-id" {print $5}')
    printf '\377\377\377\377' | dd of="$f" bs=1 seek=$((0x$off + 16)) conv=notrunc status=none
done
rec() {
    name=$1
    shift
    perf record -q -e cpu-clock -F 1999 --call-graph dwarf,16384 -o "$W/$name.data" -- "$@" calltree 3 >/dev/null 2>&1
}
rec cfi "$B/tests/e2e_nofp"
rec sframe "$B/tests/e2e_sframe_nofp"
LD_LIBRARY_PATH=$W/fp rec fp "$W/fp/e2e_fp_only"
python3 - "$B/unwound" "$W" "$RUNS" <<'PY'
import re, statistics, subprocess, sys, time
unwound, w, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
def t(cmd):
    xs = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        xs.append(time.perf_counter() - t0)
    return statistics.median(xs)
print("| unwinder | samples | frames by method (program) | unwound report --folded | per sample | perf script --no-inline |")
print("|---|---|---|---|---|---|")
for name in ("cfi", "sframe", "fp"):
    f = f"{w}/{name}.data"
    rep = subprocess.run([unwound, "report", "-i", f], capture_output=True, text=True).stdout
    n = int(re.search(r"# unwinding: (\d+) samples", rep).group(1))
    meth = re.search(r"# user frames by method: (.*)", rep).group(1)
    root = re.search(r"([\d.]+)% reach a root", rep).group(1)
    u = t([unwound, "report", "-i", f, "--folded", "-o", "/dev/null"])
    p = t(["perf", "script", "-i", f, "--no-inline"]) if runs else 0
    print(f"| {name} | {n} ({root}% to a root) | {meth} | {u*1000:.1f} ms | {u/n*1e6:.2f} µs | {p*1000:.1f} ms |")
PY
