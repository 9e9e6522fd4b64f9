#!/usr/bin/env python3
"""Times `cat`, `unwound report --folded` and `perf script --no-inline` on the same files, side by
side, and prints a Markdown table of medians and ratios."""
import re
import statistics
import subprocess
import sys
import time


def timeit(cmd, runs):
    """Median wall time of cmd (an argument list, run without a shell, output to /dev/null)."""
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def samples(unwound, f):
    out = subprocess.run([unwound, "report", "-i", f, "--rows", "1"], capture_output=True, text=True).stdout
    return int(re.search(r"^# (\d+) samples", out, re.M).group(1))


def main():
    unwound, files = sys.argv[1], sys.argv[2:]
    print("| recording | samples | MiB | cat | unwound --folded | perf script --no-inline | unwound / cat | perf / unwound | µs per sample (unwound, perf) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for f in files:
        n = samples(unwound, f)
        size = __import__("os").path.getsize(f) / 2**20
        timeit(["cat", f], 1)  # warm the page cache
        cat = timeit(["cat", f], 11)
        uw = timeit([unwound, "report", "-i", f, "--folded"], 11)
        pf = timeit(["perf", "script", "-i", f, "--no-inline"], 5)
        name = f.rsplit("/", 1)[-1]
        print(f"| {name} | {n} | {size:.0f} | {cat*1e3:.1f} ms | {uw*1e3:.1f} ms | {pf*1e3:.0f} ms | {uw/cat:.2f}× | "
              f"{pf/uw:.1f}× | {uw/n*1e6:.2f}, {pf/n*1e6:.1f} |")


if __name__ == "__main__":
    main()
