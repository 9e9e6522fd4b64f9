#!/usr/bin/env python3
"""`unwound record --unwind copy` against `perf record --call-graph dwarf` under many busy
threads: tests/programs/busy.c (THREADS threads, each spinning until its own CPU time reaches MS
ms) recorded by both with the same settings (-e cpu-clock, -F FREQ, -m PAGES ring pages per
CPU, a stack copy of STACK bytes), alternately, ROUNDS times each (medians).

Per recorder:
  - samples lost, as the file says it: the sum of the kernel's PERF_RECORD_LOST records (both
    recorders pass them on; perf's LOST_SAMPLES record at the end repeats the same loss and is
    printed beside it), as a share of samples written + lost;
  - the recorder's own CPU time (its threads' run time from /proc/PID/task/*/schedstat, read by
    the recorded command itself as its last step: the workload's CPU is not in it), in all and
    per sample written.
The recorders compete for the CPU with THREADS busy threads (and whatever else runs: the load
average is printed): the loss is what a recorder starved of CPU cannot read in time, and moves
with the machine's load from run to run; alternated rounds see about the same load.

BASE=PATH also runs another build's unwound (before and after a change, in the same rounds).

usage: [ROUNDS=5] [THREADS=200] [MS=20] [FREQ=999] [PAGES=128] [STACK=16384] [BASE=UNWOUND] bench/copy-load.py BUILD
Results also go to BUILD/bench/copy-load.md.
"""
import os, shutil, statistics, struct, subprocess, sys, tempfile

build = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else sys.exit(__doc__)
env = os.environ
rounds = int(env.get("ROUNDS", "5"))
threads, ms = env.get("THREADS", "200"), env.get("MS", "20")
freq, pages, stack = env.get("FREQ", "999"), env.get("PAGES", "128"), env.get("STACK", "16384")
busy = os.path.join(build, "tests", "busy")
uw = os.path.join(build, "unwound")
if not os.access(busy, os.X_OK):
    sys.exit(f"{busy}: not built (cmake -DUW_TESTS=ON)")
work = tempfile.mkdtemp(prefix="copy-load-")

RECORDERS = {
    "perf": lambda out: ["perf", "record", "-q", "-e", "cpu-clock", "-F", freq, "-m", pages,
                         "--call-graph", f"dwarf,{stack}", "-o", out],
    "unwound": lambda out: [uw, "record", "-q", "-N", "--unwind", "copy", "-e", "cpu-clock", "-F", freq,
                            "-m", pages, "--call-graph", f"dwarf,{stack}", "-o", out],
}
if env.get("BASE"):
    RECORDERS["unwound-base"] = lambda out: [env["BASE"]] + RECORDERS["unwound"](out)[1:]


def counts(path):
    """SAMPLE records, the LOST records' sum, the LOST_SAMPLES records' sum of a perf.data file."""
    with open(path, "rb") as f:
        d = f.read()
    if d[:8] != b"PERFILE2":
        sys.exit(f"{path}: not a perf.data file")
    off, size = struct.unpack_from("<QQ", d, 40)
    p, end = off, off + size
    samples = lost = lost_samples = 0
    while p + 8 <= end:
        typ, _, sz = struct.unpack_from("<IHH", d, p)
        if sz < 8:
            break
        if typ == 9:
            samples += 1
        elif typ == 2:
            lost += struct.unpack_from("<Q", d, p + 16)[0]
        elif typ == 13:
            lost_samples += struct.unpack_from("<Q", d, p + 8)[0]
        p += sz
    return samples, lost, lost_samples


def run(name):
    out = os.path.join(work, f"{name}.data")
    cpu = os.path.join(work, f"{name}.cpu")
    # the command's last step: its parent's (the recorder's) threads' run time so far
    cmd = RECORDERS[name](out) + ["--", "sh", "-c", f'"$0" {threads} {ms} && cat /proc/$PPID/task/*/schedstat > {cpu}', busy]
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if p.returncode:
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr}")
    with open(cpu) as f:
        ns = sum(int(line.split()[0]) for line in f if line.strip())
    s, lost, ls = counts(out)
    os.unlink(out)
    return {"samples": s, "lost": lost, "lost_samples": ls, "loss": 100.0 * lost / (s + lost) if s + lost else 0.0,
            "cpu_ms": ns / 1e6, "us_per_sample": ns / 1e3 / s if s else 0.0}


res = {k: [] for k in RECORDERS}
for i in range(rounds):
    for name in (RECORDERS if i % 2 == 0 else reversed(list(RECORDERS))):
        r = run(name)
        res[name].append(r)
        print(f"round {i + 1} {name:8} samples {r['samples']:6} lost {r['lost']:6} ({r['loss']:.1f}%, "
              f"LOST_SAMPLES {r['lost_samples']}) recorder CPU {r['cpu_ms']:.1f} ms, {r['us_per_sample']:.1f} us/sample",
              file=sys.stderr)


def med(name, key):
    return statistics.median(r[key] for r in res[name])


load = os.getloadavg()[0]
lines = [f"# copy mode under {threads} busy threads",
         "",
         f"`busy {threads} {ms}`; -e cpu-clock -F {freq} -m {pages} --call-graph dwarf,{stack}; "
         f"{rounds} alternated rounds, medians; load average {load:.1f} at the end",
         "",
         "| recorder | samples written | samples lost | lost % | recorder CPU ms | recorder CPU per sample (us) |",
         "|---|---|---|---|---|---|"]
for name in RECORDERS:
    lines.append(f"| {name} | {med(name, 'samples'):.0f} | {med(name, 'lost'):.0f} | {med(name, 'loss'):.1f} | "
                 f"{med(name, 'cpu_ms'):.1f} | {med(name, 'us_per_sample'):.1f} |")
pl, ul = med("perf", "loss"), med("unwound", "loss")
pc, uc = med("perf", "us_per_sample"), med("unwound", "us_per_sample")
lines += ["", f"unwound / perf: lost % {ul / pl if pl else float('nan'):.2f}, "
              f"recorder CPU per sample {uc / pc if pc else float('nan'):.2f}"]
text = "\n".join(lines) + "\n"
print(text)
os.makedirs(os.path.join(build, "bench"), exist_ok=True)
with open(os.path.join(build, "bench", "copy-load.md"), "w") as f:
    f.write(text)
shutil.rmtree(work)
