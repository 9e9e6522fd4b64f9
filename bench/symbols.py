#!/usr/bin/env python3
"""Symbolization cost: `unwound report --script` with inline frames and source lines against
`--script --no-inline` and the `cat` floor, on the same files, side by side; cold (every run
inflates compressed debug files: --no-dwarf-cache) and warm (decompressed DWARF mapped from the
cache, filled by one run first), with inline chains looked up on the helper thread (the default)
and on the output thread (--sync-symbols). perf script with and without inline frames for
reference.
Prints a Markdown table of minima and medians (runs alternate between the commands)."""
import os
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    unwound, files = sys.argv[1], sys.argv[2:]
    runs = int(os.environ.get("BENCH_RUNS", "11"))
    cache = tempfile.mkdtemp(prefix="unwound-bench-cache-")
    env = dict(os.environ, UNWOUND_CACHE_DIR=cache)
    print("| recording | cat | --no-inline | inline, cold | inline + srcline, cold | inline, warm | inline + srcline, warm | inline + srcline, warm, --sync-symbols | "
          "warm / --no-inline | warm / cat | cold / --no-inline | perf script --no-inline | perf script |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for f in files:
        s = [unwound, "report", "-i", f, "--script", "-o", "/dev/null"]
        cmds = {
            "cat": ["cat", f],
            "noinl": s + ["--no-inline"],
            "cold": s + ["--no-dwarf-cache"],
            "cold_src": s + ["--no-dwarf-cache", "--srcline"],
            "warm": s,
            "warm_src": s + ["--srcline"],
            "warm_sync": s + ["--srcline", "--sync-symbols"],
        }
        subprocess.run(s, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fills the cache
        ts = {k: [] for k in cmds}
        for _ in range(runs):
            for k, c in cmds.items():
                t = time.perf_counter()
                subprocess.run(c, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                ts[k].append(time.perf_counter() - t)
        perf = {}
        for k, c in (("perf_noinl", ["perf", "script", "-i", f, "--no-inline"]), ("perf", ["perf", "script", "-i", f])):
            t = time.perf_counter()
            subprocess.run(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            perf[k] = time.perf_counter() - t
        lo = {k: min(v) * 1e3 for k, v in ts.items()}
        med = {k: statistics.median(v) * 1e3 for k, v in ts.items()}

        def cell(k):
            return f"{lo[k]:.1f} ({med[k]:.1f})"
        name = f.rsplit("/", 1)[-1]
        print(f"| {name} | {cell('cat')} | {cell('noinl')} | {cell('cold')} | {cell('cold_src')} | {cell('warm')} | "
              f"{cell('warm_src')} | {cell('warm_sync')} | {lo['warm_src'] / lo['noinl']:.2f}× | {lo['warm_src'] / lo['cat']:.1f}× | "
              f"{lo['cold_src'] / lo['noinl']:.2f}× | {perf['perf_noinl']:.2f} s | {perf['perf']:.1f} s |")
    print()
    print("ms: minimum (median) of %d alternating runs; perf: one run each." % runs)
    subprocess.run(["rm", "-rf", cache])


if __name__ == "__main__":
    main()
