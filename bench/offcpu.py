#!/usr/bin/env python3
"""Cost of `unwound record --off-cpu` per context switch, on a switch-heavy workload: two
threads passing a byte through two pipes (tests/programs/offcpu.c pingpong; each round trip is
two switch-outs, one per thread, and two switch-ins). Each thread does WORK iterations of a loop
before passing the byte on; WORK is calibrated first so that the program alone takes 2e9/RATE ns
of CPU per round trip, i.e. does RATE switch-outs per second on a CPU of its own (env RATE,
default 100000, the issue's figure; RATE=0: no work, as fast as the machine goes). The program
measures its round trips only (not the recorder's start or end): wall time and its own CPU time
(both threads, user and kernel: what the kernel does at a switch-out, copying the stack, walking
it, writing the records, is charged to the thread switching out). The configurations run
alternately, N times each (env N, default 9), medians.

Prints a Markdown table: per round trip the wall time and the program's CPU time, their ratios
to the program alone (the CPU's with the first and third quartiles of the runs' ratios), the workload CPU added per switch-out, the recorder's own CPU per
switch-out (its summary line's "own CPU" less the same recorder's on a run of one round trip:
loading and verifying the program, building the tables are a cost per run, not per switch),
the switch-outs whose stack was taken (waits timed in the kernel: waits / walked), how many
stacks the kernel-unwinding program walked (in parentheses: of those, handed over to user space
with a stack copy because the process's tables were not loaded yet: a command's first
switch-outs, until the loop has loaded them) and how many the kernel copied, the programs' own
time (only with BPF_STATS=1, which turns kernel.bpf_stats_enabled on for the runs): per run of
the CPU samples' program, per run of the switch-out or sched_switch program, and the latter per
switch-out of the workload (it runs at every context switch of the machine, twice per
switch-out of the ping-pong: the switch out and the switch back in), the offcpu-time samples
written and the records the kernel lost (rings full). The ping-pong is serial (one thread runs
at a time), so on an otherwise idle machine with a CPU left for the recorder its slowdown is
its CPU ratio; the wall ratio is that plus whatever the machine's other load did to each run
(the load average is printed). PIN=1 runs the program on CPU 1 and the recorder on CPU 0 (the
two threads then switch to each other on one CPU). For comparison, perf: `perf record --off-cpu`
when this perf has it (a BPF skeleton build; without one perf ignores the option and says so),
and always perf's recording of the same data as unwound's switch mechanism (a context-switches
sample with a DWARF stack copy at every switch-out, plus switch records), processed offline.

ROWS=0,1,2 keeps those rows only (in the order above; 0, alone, is always kept).

usage: [N=9] [RATE=100000] [BPF_STATS=1] [PIN=1] [ROWS=...] bench/offcpu.py BUILD [ROUND_TRIPS]
"""
import os, re, statistics, subprocess, sys, tempfile

build = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 100000
runs = int(os.environ.get("N", "9"))
rate = float(os.environ.get("RATE", "100000"))
pin = os.environ.get("PIN") == "1"
prog = os.path.join(build, "tests", "offcpu_prog")
uw = os.path.join(build, "unwound")
out = os.path.join(tempfile.gettempdir(), f"offcpu-bench-{os.getpid()}.data")
prog_cmd = (["taskset", "-c", "1"] if pin else []) + [prog]
rec_pre = ["taskset", "-c", "0"] if pin else []


def rtt_of(pre, rounds, work):
    p = subprocess.run(pre + prog_cmd + ["pingpong", str(rounds), str(work)], capture_output=True, text=True)
    m = re.search(r" ns_per_round_trip=([\d.]+) cpu_ns_per_round_trip=([\d.]+)", p.stdout + p.stderr)
    if not m:
        sys.exit(f"no result from {pre + prog_cmd}: {p.stderr}")
    return float(m.group(1)), float(m.group(2)), p.stderr


def alone(work, rounds=max(n // 5, 1000), k=5):
    return statistics.median(rtt_of([], rounds, work)[1] for _ in range(k))


# WORK such that the program alone does `rate` switch-outs/s: two per round trip, WORK twice
work = 0
if rate > 0:
    target = 2e9 / rate
    r0, w1 = alone(0), 4000
    per_iter = max((alone(w1) - r0) / (2 * w1), 1e-3)
    work = max(int((target - r0) / (2 * per_iter)), 0)
    for _ in range(2):  # correct for the machine's drift
        r = alone(work)
        work = max(int(work + (target - r) / (2 * per_iter)), 0)

# (-v: the kernel-unwinding programs' run counts and times, with kernel.bpf_stats_enabled)
rec = rec_pre + [uw, "record", "-v", "-e", "cpu-clock", "-o", out]
configs = [
    ("alone", []),
    ("unwound record (CPU samples only)", rec + ["--"]),
    ("unwound record --off-cpu (waits timed in the kernel, --off-cpu-mode kernel)", rec + ["--off-cpu", "--"]),
    ("unwound record --off-cpu --off-cpu-mode switch --unwind kernel (stacks walked at every switch-out)",
     rec + ["--off-cpu", "--off-cpu-mode", "switch", "--unwind", "kernel", "--"]),
    ("unwound record --off-cpu --unwind copy (16 KiB copied per switch-out)", rec + ["--off-cpu", "--unwind", "copy", "--"]),
    ("unwound record --off-cpu --off-cpu-mode switch --unwind kernel --off-cpu-every 100",
     rec + ["--off-cpu", "--off-cpu-mode", "switch", "--unwind", "kernel", "--off-cpu-every", "100", "--"]),
]
probe = subprocess.run(["perf", "record", "--off-cpu", "-o", out, "--", "true"], capture_output=True, text=True)
perf_offcpu = probe.returncode == 0 and "ignored" not in probe.stderr
if perf_offcpu:
    configs.append(("perf record --off-cpu -g", rec_pre + ["perf", "record", "--off-cpu", "-g", "-o", out, "--"]))
configs.append(("perf record -e cs -c 1 --switch-events --call-graph dwarf",
                rec_pre + ["perf", "record", "-q", "-e", "context-switches", "-c", "1", "--switch-events",
                           "--call-graph", "dwarf,16384", "-o", out, "--"]))
if os.environ.get("ROWS"):
    keep = {int(x) for x in os.environ["ROWS"].split(",")} | {0}
    configs = [c for i, c in enumerate(configs) if i in keep]


def parse(err):
    cpu = re.search(r"own CPU ([\d.]+) s", err)
    oc = re.search(r"off-CPU: (\d+) switch-outs sampled.*?, (\d+) offcpu-time samples", err)
    kw = re.search(r"off-CPU: (\d+) waits timed in the kernel.*?, (\d+) with their stack walked.*?; (\d+) offcpu-time samples",
                   err)
    lost = re.search(r"(\d+) lost", err) or re.search(r"lost (\d+) chunks", err)
    where = re.search(r"off-CPU stacks: (\d+) walked in the kernel at the switch \((\d+) of them.*?, (\d+) copied", err)
    prog = re.search(r"the program ran (\d+) times, (\d+) ns in all.*?at the switch-outs (\d+) times, (\d+) ns in all"
                     r"(?:, at the sched_switch tracepoint (\d+) times, (\d+) ns)?", err)
    sw = None
    if kw:
        sw = (int(kw.group(1)), int(kw.group(2)), int(kw.group(3)))  # waits, walked, samples
    elif oc:
        sw = (int(oc.group(1)), int(oc.group(1)), int(oc.group(2)))
    pr = None
    if prog:
        g = [int(x) if x else 0 for x in prog.groups()]
        pr = (g[0], g[1], g[2] + g[4], g[3] + g[5]) if g[0] + g[2] + g[4] else None
    return (float(cpu.group(1)) if cpu else 0.0, sw, int(lost.group(1)) if lost else 0,
            (int(where.group(1)), int(where.group(3)), int(where.group(2))) if where else None, pr)


def run(pre):
    rtt, cpurt, err = rtt_of(pre, n, work)
    return (rtt, cpurt) + parse(err)


def fixed(pre):
    """The recorder's own CPU on a run of one round trip: its cost per run."""
    if not pre or pre[len(rec_pre)] != uw:
        return 0.0
    return parse(rtt_of(pre, 1, 0)[2])[0]


load0 = f"{os.getloadavg()[0]:.1f}"
res = {name: [] for name, _ in configs}
fix = {name: [] for name, _ in configs}
# BPF_STATS=1: kernel.bpf_stats_enabled on during the runs (put back after), for the programs'
# own time per run (it adds ~20 ns to every BPF program of the machine while on)
stats_path, stats_old = "/proc/sys/kernel/bpf_stats_enabled", None
if os.environ.get("BPF_STATS") == "1":
    stats_old = open(stats_path).read().strip()
    open(stats_path, "w").write("1")
try:
    for _ in range(runs):
        for name, pre in configs:
            res[name].append(run(pre))
    for name, pre in configs:
        fix[name] = [fixed(pre) for _ in range(3)]
finally:
    if stats_old is not None:
        open(stats_path, "w").write(stats_old)
    if os.path.exists(out):
        os.unlink(out)
base = statistics.median(r[0] for r in res["alone"])
base_cpu = statistics.median(r[1] for r in res["alone"])
cal = f"calibrated for {rate:,.0f} switch-outs/s alone" if rate else "none: as fast as it goes"
print(f"{n} round trips, WORK={work} per pass ({cal}){', pinned: the program on CPU 1, the recorder on CPU 0' if pin else ''}, "
      f"{runs} runs each, alternating; medians; load average {load0} before, {os.getloadavg()[0]:.1f} after\n")
print("| configuration | wall ns per round trip | wall / alone | CPU ns per round trip | CPU / alone | "
      "workload CPU added per switch-out | recorder CPU per switch-out (per run) | switch-outs: waits timed / stacks taken | "
      "stacks walked in the kernel (handed over) / copied | programs: ns per run (samples / switch) and per switch-out | "
      "offcpu-time samples | records lost |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for name, _ in configs:
    rs = res[name]
    rtt = statistics.median(r[0] for r in rs)
    cpurt = statistics.median(r[1] for r in rs)
    cpu = statistics.median(r[2] for r in rs)
    f = statistics.median(fix[name]) if fix[name] else 0.0
    sws = [r[3] for r in rs if r[3]]
    timed = statistics.median(s[0] for s in sws) if sws else 0
    taken = statistics.median(s[1] for s in sws) if sws else 0
    written = statistics.median(s[2] for s in sws) if sws else 0
    lost = statistics.median(r[4] for r in rs)
    per = f"{(cpu - f) / (2 * n) * 1e9:.0f} ns ({f:.2f} s)" if cpu else "-"
    wh = [r[5] for r in rs if r[5]]
    where = (f"{statistics.median(w[0] for w in wh):,.0f} ({statistics.median(w[2] for w in wh):,.0f}) / "
             f"{statistics.median(w[1] for w in wh):,.0f}") if wh else "-"
    pr = [r[6] for r in rs if r[6]]
    per_run = lambda c, t: f"{statistics.median(p[t] / p[c] for p in pr):,.0f}" if pr and all(p[c] for p in pr) else "-"
    per_sw = f"{statistics.median(p[3] for p in pr) / (2 * n):,.0f}" if pr else "-"
    prog_ns = f"{per_run(0, 1)} / {per_run(2, 3)}; {per_sw}" if pr else "-"
    added = (cpurt - base_cpu) / 2
    # (the spread: each run's CPU against the median alone, first and third quartiles)
    q = statistics.quantiles([r[1] / base_cpu for r in rs], n=4) if len(rs) > 1 else [cpurt / base_cpu] * 3
    print(f"| {name} | {rtt:.0f} | {rtt / base:.2f} | {cpurt:.0f} | {cpurt / base_cpu:.3f} ({q[0]:.2f}–{q[2]:.2f}) | {added:.0f} ns | {per} | "
          f"{timed:,.0f} / {taken:,.0f} | {where} | {prog_ns} | {written:,.0f} | {lost:,.0f} |")
if not perf_offcpu:
    print("\nperf record --off-cpu: not measured, this perf ignores it: "
          + (probe.stderr.strip().splitlines() or ["?"])[0][:120])
