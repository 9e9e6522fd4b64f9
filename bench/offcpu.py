#!/usr/bin/env python3
"""Cost of `unwound record --off-cpu` per context switch, on a switch-heavy workload: two
threads passing a byte through two pipes (tests/programs/offcpu.c pingpong; each round trip is
two switch-outs, one per thread, and two switch-ins). The program times itself (the round
trips only, not the recorder's start or end); the configurations run alternately, N times
each (default 9), medians. Prints a Markdown table: ns per round trip, switch-outs per second,
the slowdown against the program alone, the recorder's own CPU per switch-out (its summary
line's "own CPU", which includes unwinding), the switch-outs whose stack was taken, the
offcpu-time samples written and the records the kernel lost (rings full).

usage: bench/offcpu.py BUILD [ROUND_TRIPS]
"""
import os, re, statistics, subprocess, sys, tempfile

build = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 100000
runs = int(os.environ.get("N", "9"))
prog = os.path.join(build, "tests", "offcpu_prog")
uw = os.path.join(build, "unwound")
out = os.path.join(tempfile.gettempdir(), "offcpu-bench.data")
configs = [
    ("alone", []),
    ("record (CPU samples only)", [uw, "record", "-e", "cpu-clock", "-o", out, "--"]),
    ("record --off-cpu", [uw, "record", "--off-cpu", "-e", "cpu-clock", "-o", out, "--"]),
    ("record --off-cpu --off-cpu-every 10", [uw, "record", "--off-cpu", "--off-cpu-every", "10", "-e", "cpu-clock",
                                             "-o", out, "--"]),
    ("record --off-cpu --off-cpu-every 100", [uw, "record", "--off-cpu", "--off-cpu-every", "100", "-e",
                                              "cpu-clock", "-o", out, "--"]),
    ("record --off-cpu --stack-size 2048", [uw, "record", "--off-cpu", "--stack-size", "2048", "-e", "cpu-clock",
                                            "-o", out, "--"]),
]


def run(pre):
    p = subprocess.run(pre + [prog, "pingpong", str(n)], capture_output=True, text=True)
    m = re.search(r"ns_per_round_trip=([\d.]+)", p.stdout + p.stderr)
    if not m:
        sys.exit(f"no result from {pre + [prog]}: {p.stderr}")
    cpu = re.search(r"own CPU ([\d.]+) s", p.stderr)
    oc = re.search(r"(\d+) switch-outs sampled.*?, (\d+) offcpu-time samples", p.stderr)
    lost = re.search(r"(\d+) lost", p.stderr)
    return (float(m.group(1)), float(cpu.group(1)) if cpu else 0.0,
            (int(oc.group(1)), int(oc.group(2))) if oc else None, int(lost.group(1)) if lost else 0)


res = {name: [] for name, _ in configs}
for _ in range(runs):
    for name, pre in configs:
        res[name].append(run(pre))
base = statistics.median(r[0] for r in res["alone"])
print(f"{n} round trips, {runs} runs each, alternating; medians\n")
print("| configuration | ns per round trip | switch-outs/s | slowdown | recorder CPU per switch-out | switch-outs with a stack | offcpu-time samples | records lost |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for name, _ in configs:
    rtt = statistics.median(r[0] for r in res[name])
    cpu = statistics.median(r[1] for r in res[name])
    ocs = [r[2] for r in res[name] if r[2]]
    sampled = statistics.median(o[0] for o in ocs) if ocs else 0
    written = statistics.median(o[1] for o in ocs) if ocs else 0
    lost = statistics.median(r[3] for r in res[name])
    per = f"{cpu / (2 * n) * 1e9:.0f} ns" if ocs else "-"
    print(f"| {name} | {rtt:.0f} | {2e9 / rtt:,.0f} | {(rtt / base - 1) * 100:+.1f}% | {per} | "
          f"{sampled:,.0f} | {written:,.0f} | {lost:,.0f} |")
