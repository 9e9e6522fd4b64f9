#!/usr/bin/env python3
"""Times every output of `unwound report` on the same files, side by side, against `--folded`
(and `--folded --inline`, the same names with inline frames), and prints a Markdown table of
medians and ratios. Every format is made from the same aggregated profile; pprof, speedscope
and html name inline frames, so `--folded --inline` is their like-for-like baseline.
Usage: bench/formats.py UNWOUND FILES..."""
import os
import statistics
import subprocess
import sys
import tempfile
import time

RUNS = int(os.environ.get("BENCH_RUNS", "7"))


def timeit(cmd, runs=RUNS):
    """Medians of wall time and of CPU time (user + system, every thread) of cmd."""
    wall, cpu = [], []
    for _ in range(runs):
        t = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        wall.append(time.perf_counter() - t)
        if status:
            raise SystemExit(f"{cmd}: exit status {status}")
        cpu.append(ru.ru_utime + ru.ru_stime)
    return statistics.median(wall), statistics.median(cpu)


FORMATS = [
    ("folded", ["--folded"]),
    ("folded --inline", ["--folded", "--inline"]),
    ("top", ["--format", "top"]),
    ("-g callee", ["--no-children", "-g", "callee"]),
    ("pprof", ["--format", "pprof"]),
    ("speedscope", ["--format", "speedscope"]),
    ("html", ["--format", "html"]),
    ("speedscope --no-inline", ["--format", "speedscope", "--no-inline"]),
    ("html --no-inline", ["--format", "html", "--no-inline"]),
]


def main():
    unwound, files = sys.argv[1], sys.argv[2:]
    out = tempfile.mkdtemp()
    print("Wall time, and CPU time (user + system, all threads) with its ratio to `--folded`'s; medians "
          f"of {RUNS} runs. (inl: the ratio to `--folded --inline`, the same names.)\n")
    print("| recording | " + " | ".join(n for n, _ in FORMATS) + " |")
    print("|---|" + "---:|" * len(FORMATS))
    for f in files:
        subprocess.run(["cat", f], stdout=subprocess.DEVNULL)  # warm the page cache
        t = {}
        for name, args in FORMATS:
            t[name] = timeit([unwound, "report", "-i", f, *args, "-o", os.path.join(out, "o")])
        base, inl = t["folded"][1], t["folded --inline"][1]
        cells = []
        for name, _ in FORMATS:
            w, c = t[name]
            cells.append(f"{w*1e3:.0f} ms, cpu {c*1e3:.0f} ms ({c/base:.2f}×" +
                         (f", {c/inl:.2f}× inl" if name in ("pprof", "speedscope", "html") else "") + ")")
        print(f"| {f.rsplit('/', 1)[-1]} | " + " | ".join(cells) + " |")
    for n in os.listdir(out):
        os.unlink(os.path.join(out, n))
    os.rmdir(out)


if __name__ == "__main__":
    main()
