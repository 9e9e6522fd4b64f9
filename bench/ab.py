#!/usr/bin/env python3
"""A/B: two unwound binaries (say, a build of main and one of a change) on the same recordings,
run alternately (N runs each, default 11), medians of wall time and of CPU time (user + system,
from wait4). Prints a Markdown table. MODES=folded times only --folded.

usage: bench/ab.py OLD_UNWOUND NEW_UNWOUND FILE...
"""
import os, statistics, subprocess, sys, time
old, new = sys.argv[1], sys.argv[2]
modes = [["--folded"], ["--script", "--no-inline"], ["--script"]]
if os.environ.get("MODES") == "folded": modes = [["--folded"]]
files = sys.argv[3:]
def run(cmd):
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, st, ru = os.wait4(p.pid, 0)
    return time.perf_counter() - t, ru.ru_utime + ru.ru_stime
print("| recording | mode | before wall ms | after wall ms | ratio | before CPU ms | after CPU ms | ratio | CPU ratio of pairs: median (min-max) |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
N = int(os.environ.get("N", "11"))
for f in files:
    for mode in modes:
        a, b = [], []
        run([old, "report", "-i", f] + mode); run([new, "report", "-i", f] + mode)
        for _ in range(N):
            a.append(run([old, "report", "-i", f] + mode))
            b.append(run([new, "report", "-i", f] + mode))
        wa, wb = statistics.median(x[0] for x in a), statistics.median(x[0] for x in b)
        ca, cb = statistics.median(x[1] for x in a), statistics.median(x[1] for x in b)
        pr = sorted(y[1] / x[1] for x, y in zip(a, b) if x[1] > 0)
        pairs = f"{statistics.median(pr):.3f} ({pr[0]:.2f}-{pr[-1]:.2f})" if pr else "n/a"
        print(f"| {f.rsplit('/',1)[-1]} | {' '.join(mode)} | {wa*1e3:.1f} | {wb*1e3:.1f} | {wb/wa:.3f} | {ca*1e3:.1f} | {cb*1e3:.1f} | {cb/ca:.3f} | {pairs} |", flush=True)
