#!/usr/bin/env python3
"""Kernel unwinding's figures (issue 26, docs/kernel-unwind.md), against stack copies and perf.

    bench/kernel.py BUILD [overhead] [samplecost] [deep] [system]   (all without a part named)

overhead  The workload's own CPU time (user + system, from wait4 of the workload alone, its
          children included) at 999 Hz, unprofiled and under each recorder, interleaved: every
          round runs each configuration once, in an order rotated from round to round, over
          ROUNDS rounds (default 11). Each run against the same round's unprofiled run (paired):
          the median, and the mean with its 95% confidence interval (Student's t over the
          rounds). With PIN=1 (the default on 2 CPUs or more) the recorder runs on CPU 0 and the
          workload on the last CPU (taskset; less migration noise). Two workloads (WORKLOADS:
          xz, gcc or both): a compressor (xz -9 -T1 of XZ_MIB, default 6, MiB of shared
          libraries) and a compiler (gcc -O2 -g -c of lib/'s first COMPILE_FILES, default 16,
          sources in name order, one after another: a driver, cc1 and as per file). Also the
          recorder's own CPU (its process tree's minus the workload's), and the BPF program's
          run time per sample (bpf_prog_info run_time_ns / run_cnt, with
          kernel.bpf_stats_enabled set for the run and put back after).
samplecost  The time one sample takes from the sampled program, interrupt included, for each
          recorder and for perf without a call graph (the cost any sampling has): tests/stolen
          (STOLEN="DEPTH FRAME THRASH", default "14 96 0", "14 96 256k" and "14 96 64": a stack
          of 14 frames; caches warm, a 256 KiB working set the program cycles through, or 64 MiB
          thrashed) reads the time stamp counter in a loop and logs each gap; a gap holding a
          sample's time (the recorder's perf.data, CLOCK_MONOTONIC) is that sample's cost, which
          the host's own interruptions of this virtual machine are not. With a working set, the
          time the program then takes beyond its usual to go through it again (what the sample
          evicted: the memory a profiler writes in the sample) is added in a second column, the
          sample's whole cost to the program.
          Median over a run's samples, median over ROUNDS (default 5) interleaved runs of SECS_ST
          (default 3) seconds, pinned as above. For the kernel row, the BPF program's own time per
          sample too (kernel.bpf_stats_enabled, whose two clock reads every run then pays): the
          row's cost beyond it is the program's invocation and what the program left cold.
deep      tests/deeprec 200 (two threads recursing 200 levels through 1 KiB frames, no frame
          pointers): share of samples reaching main or start_thread through all 200 levels, for
          each recorder (perf's files read by `unwound report`, which unwinds perf's copies).
system    `unwound record -a` for SECS seconds (default 60) at 999 Hz while programs come and go:
          a C program compiled anew each second (a new build-id each time) running 0.3 s, CPython
          and Node.js loops; lost samples, the BPF maps' peak bytes, tables loaded, the share of
          samples finished in user space.

Results are printed and written to BUILD/bench/kernel.md. Needs root. A benchmark, not a test:
nothing fails on a slow run. The machine's load is printed with the figures (its noise is
several percent on a shared VM: the medians of interleaved runs are what to compare).
"""
import bisect
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
ROUNDS = int(os.environ.get("ROUNDS", "11"))
PIN = os.environ.get("PIN", "1" if (os.cpu_count() or 1) >= 2 else "0") == "1"
WORKLOAD_CPU = str((os.cpu_count() or 1) - 1)
SECS = int(os.environ.get("SECS", "60"))
FREQ = "999"


def rusage_run(out, cmd, cpu=None):
    """Runs cmd (on CPU cpu), writes 'user sys wall' of it (its reaped descendants included) to out."""
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            if cpu is not None:
                os.sched_setaffinity(0, {int(cpu)})
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)
    _, status, ru = os.wait4(pid, 0)
    wall = time.monotonic() - t0
    with open(out, "w") as f:
        f.write(f"{ru.ru_utime} {ru.ru_stime} {wall}\n")
    return os.waitstatus_to_exitcode(status)


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def sysctl_bpf_stats(value):
    path = "/proc/sys/kernel/bpf_stats_enabled"
    with open(path) as f:
        old = f.read().strip()
    with open(path, "w") as f:
        f.write(value)
    return old


# Student's t, two-sided 95%, by degrees of freedom (beyond 30: 2.0)
T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23, 11: 2.20,
       12: 2.18, 13: 2.16, 14: 2.14, 15: 2.13, 16: 2.12, 17: 2.11, 18: 2.10, 19: 2.09, 20: 2.09, 25: 2.06, 30: 2.04}


def mean_ci(v):
    """The mean of v and the half-width of its 95% confidence interval."""
    m = statistics.fmean(v)
    if len(v) < 2:
        return m, float("nan")
    df = len(v) - 1
    t = T95.get(df) or (2.0 if df > 30 else T95[max(k for k in T95 if k <= df)])
    return m, t * statistics.stdev(v) / len(v) ** 0.5


def pinned(cmd):
    return (["taskset", "-c", "0"] + cmd) if PIN and cmd else cmd


def recorders(uw, out):
    return {
        "unprofiled": [],
        "unwound record (kernel)": [uw, "record", "-v", "-e", "cpu-clock", "-F", FREQ, "--unwind", "kernel",
                                    "-o", out, "--"],
        "unwound record --unwind copy": [uw, "record", "-e", "cpu-clock", "-F", FREQ, "--unwind", "copy",
                                         "-o", out, "--"],
        "perf --call-graph dwarf": ["perf", "record", "-q", "-e", "cpu-clock", "-F", FREQ,
                                    "--call-graph", "dwarf", "-o", out, "--"],
        "perf --call-graph fp": ["perf", "record", "-q", "-e", "cpu-clock", "-F", FREQ, "--call-graph", "fp",
                                 "-o", out, "--"],
    }


NFILES = int(os.environ.get("COMPILE_FILES", "16"))
COMPILE = ("cd {src} && for f in $(find lib -name '*.c' ! -path 'lib/kernel/*' | LC_ALL=C sort | head -{n}); do "
           "gcc -std=gnu11 -D_GNU_SOURCE -O2 -g -Iinclude -Ilib -c $f -o {tmp}/o.o || exit 1; done")


def overhead(build, tmp, lines):
    uw = os.path.join(build, "unwound")
    data = os.path.join(tmp, "xz.in")
    libs = sorted(os.path.join("/usr/lib/x86_64-linux-gnu", n) for n in os.listdir("/usr/lib/x86_64-linux-gnu")
                  if n.endswith(".so") or ".so." in n)
    with open(data, "wb") as f:
        left = int(os.environ.get("XZ_MIB", "6")) << 20
        for p in libs:
            if left <= 0:
                break
            try:
                with open(p, "rb") as g:
                    b = g.read(left)
            except OSError:
                continue
            f.write(b)
            left -= len(b)
    workloads = {
        f"xz -9 -T1 ({os.environ.get('XZ_MIB', '6')} MiB of shared libraries)": ["sh", "-c", f"xz -9 -T1 -c {data} > /dev/null"],
        f"gcc -O2 -g -c of lib/'s first {NFILES} sources, one after another": ["sh", "-c", COMPILE.format(
            src=SRC, tmp=tmp, n=NFILES)],
    }
    which = os.environ.get("WORKLOADS", "xz gcc").split()
    workloads = {k: v for k, v in workloads.items() if k.split()[0] in which}
    out = os.path.join(tmp, "rec.data")
    recs = recorders(uw, out)
    names = list(recs)
    old = sysctl_bpf_stats("1")
    try:
        for wname, wcmd in workloads.items():
            inner = {n: [] for n in names}
            outer = {n: [] for n in names}
            bpf = []  # (runs, ns)
            samples = {n: [] for n in names}
            loads = []
            for r in range(ROUNDS):
                loads.append(os.getloadavg()[0])
                order = names[r % len(names):] + names[:r % len(names)]
                for n in order:
                    fin, fout, ferr = (os.path.join(tmp, x) for x in ("inner", "outer", "err"))
                    cmd = pinned(recs[n]) + [sys.executable, __file__, "--rusage", fin] + \
                        (["--cpu", WORKLOAD_CPU] if PIN else []) + ["--"] + wcmd
                    with open(ferr, "w") as e:
                        pid = os.fork()
                        if pid == 0:
                            os.dup2(e.fileno(), 2)
                            os.dup2(os.open("/dev/null", os.O_WRONLY), 1)
                            os._exit(rusage_run(fout, cmd))
                        _, st = os.waitpid(pid, 0)
                    if os.waitstatus_to_exitcode(st):
                        sys.exit(f"{n}: {wname} failed:\n" + open(ferr).read()[-2000:])
                    u, s, _ = map(float, open(fin).read().split())
                    ou, os_, _ = map(float, open(fout).read().split())
                    inner[n].append(u + s)
                    outer[n].append(ou + os_)
                    err = open(ferr).read()
                    m = re.search(r"the program ran (\d+) times, (\d+) ns", err)
                    if m and int(m.group(1)):
                        bpf.append((int(m.group(1)), int(m.group(2))))
                    m = re.search(r"unwound record: (\d+) samples", err)
                    if m:
                        samples[n].append(int(m.group(1)))
                    if n.startswith("unwound record (kernel)") and "stacks walked in the kernel" not in err:
                        sys.exit("kernel unwinding was not used:\n" + err[-2000:])
            first = len(lines)
            base = statistics.median(inner["unprofiled"])
            base_outer = statistics.median(o - i for o, i in zip(outer["unprofiled"], inner["unprofiled"]))
            lines.append(f"\n### {wname}: {ROUNDS} interleaved rounds, 1-minute load at the rounds' starts "
                         f"{min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} CPUs"
                         f"{', recorder on CPU 0, workload on CPU ' + WORKLOAD_CPU if PIN else ''}\n")
            lines.append("| recorder | workload CPU (median) | vs unprofiled | each round vs the round's unprofiled: "
                         "median | mean, 95% CI | recorder's own CPU (median) |")
            lines.append("|---|---:|---:|---:|---:|---:|")
            for n in names:
                med = statistics.median(inner[n])
                d = [(a - b) / b * 100 for a, b in zip(inner[n], inner["unprofiled"])]
                m, ci = mean_ci(d)
                own = statistics.median(o - i for o, i in zip(outer[n], inner[n])) - base_outer
                lines.append(f"| {n} | {med:.3f} s | {100 * (med - base) / base:+.2f}% | {statistics.median(d):+.2f}% | "
                             f"{m:+.2f}% ± {ci:.2f} | {'' if n == 'unprofiled' else f'{own:.3f} s'} |")
            runs = sum(b[0] for b in bpf)
            ns = sum(b[1] for b in bpf)
            if runs:
                lines.append(f"\nBPF program: {runs} runs, {ns / runs / 1000:.2f} µs per sample "
                             f"(run_time_ns / run_cnt over the kernel runs), "
                             f"{ns / 1e9 / max(1e-9, sum(inner['unwound record (kernel)'])) * 100:.2f}% of the "
                             f"workload's CPU time")
            print("\n".join(lines[first:]), flush=True)
    finally:
        sysctl_bpf_stats(old)


def deep(build, tmp, lines):
    uw = os.path.join(build, "unwound")
    out = os.path.join(tmp, "deep.data")
    p = subprocess.Popen([os.path.join(build, "tests/deeprec"), "200"], stdout=subprocess.PIPE, text=True)
    try:
        while "ready" not in p.stdout.readline():
            pass
        pid = str(p.pid)
        recs = {
            "unwound record (kernel)": [uw, "record", "-e", "cpu-clock", "-F", FREQ, "--unwind", "kernel", "-o", out,
                                        "--duration", "5", "-p", pid],
            "unwound record --unwind copy (16 KiB)": [uw, "record", "-e", "cpu-clock", "-F", FREQ, "--unwind", "copy",
                                                      "-o", out, "--duration", "5", "-p", pid],
            "perf --call-graph dwarf,65528": ["perf", "record", "-q", "-e", "cpu-clock", "-F", FREQ, "--call-graph",
                                              "dwarf,65528", "-o", out, "-p", pid, "--", "sleep", "5"],
            "perf --call-graph fp": ["perf", "record", "-q", "-e", "cpu-clock", "-F", FREQ, "--call-graph", "fp",
                                     "-o", out, "-p", pid, "--", "sleep", "5"],
        }
        lines.append("\n### Deep stacks: tests/deeprec 200 (two threads, 200 levels of 1 KiB frames, no frame "
                     f"pointers), 5 s each, load {load()}\n")
        lines.append("| recorder | samples | reach main/start_thread through 200 levels |")
        lines.append("|---|---:|---:|")
        for n, cmd in recs.items():
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            folded = subprocess.run([uw, "report", "-i", out, "--folded", "--no-kernel", "--comm", "deeprec"],
                                    check=True, capture_output=True, text=True).stdout
            total = rooted = 0
            for line in folded.splitlines():
                stack, _, c = line.rpartition(" ")
                c = int(c)
                total += c
                if stack.count(";recurse") >= 200 and re.match(r"deeprec;(_start;__libc_start_main[^;]*;"
                                                               r"(__libc_start_call_main;)?main|(clone3;)?"
                                                               r"start_thread;worker);", stack):
                    rooted += c
            lines.append(f"| {n} | {total} | {100 * rooted / max(1, total):.2f}% |")
            print(lines[-1], flush=True)
    finally:
        p.kill()
        p.wait()


CHURN = r"""
set -u
end=$(( $(date +%s) + SECS ))
i=0
while [ $(date +%s) -lt $end ]; do
    i=$((i + 1))
    printf 'int main(void){volatile unsigned long s=%d;for(unsigned long k=0;k<60000000UL;k++)s+=k*%d;return (int)(s&1)*0;}\n' $i $i > $T/churn$i.c
    cc -O1 -o $T/churn$i $T/churn$i.c && timeout 0.3 $T/churn$i || true
    rm -f $T/churn$i $T/churn$i.c
    timeout 0.3 python3 -c 'import json
while True: json.dumps([{"a": i} for i in range(1000)])' || true
    timeout 0.5 node -e 'let s = 0; for (;;) { s += JSON.stringify({a: s % 7}).length }' || true
done
"""


def system(build, tmp, lines):
    uw = os.path.join(build, "unwound")
    out = os.path.join(tmp, "sys.data")
    churn = subprocess.Popen(["sh", "-c", CHURN.replace("SECS", str(SECS + 2)).replace("$T", tmp)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)
    la = load()
    # RECORDER_NICE: the recorder's nice value (on a loaded machine, whether it gets the CPU to
    # load new processes' mappings in time decides how many samples are handed over)
    nice = ["nice", "-n", os.environ["RECORDER_NICE"]] if os.environ.get("RECORDER_NICE") else []
    r = subprocess.run(nice + [uw, "record", "-a", "-e", "cpu-clock", "-F", FREQ, "--duration", str(SECS), "-o", out, "-v"],
                       capture_output=True, text=True)
    churn.wait()
    err = r.stderr
    if r.returncode:
        sys.exit("record -a failed:\n" + err[-3000:])
    summ = [ln for ln in err.splitlines() if ln.startswith("unwound record:") or "handed over:" in ln or
            "the program ran" in ln or "for want of" in ln or "tables built" in ln]
    m = re.search(r"the program ran \d+ times.*?(\d+) records lost; (\d+) bytes in BPF maps at most", err)
    tables = len(re.findall(r"kernel unwinding: table of .* loaded", err))
    lines.append(f"\n### System-wide: `unwound record -a -F {FREQ} --duration {SECS}`, programs coming and going "
                 f"(a C program compiled anew each second, CPython, Node.js), load {la} at the start"
                 f"{', recorder at nice ' + os.environ['RECORDER_NICE'] if nice else ''}\n")
    lines.append("```")
    lines.extend(summ)
    lines.append(f"tables loaded (-v lines): {tables}")
    lines.append("```")
    print("\n".join(lines[-(len(summ) + 4):]), flush=True)


def samplecost(build, tmp, lines):
    uw = os.path.join(build, "unwound")
    st = os.path.join(build, "tests", "stolen")
    out, gaps = os.path.join(tmp, "st.data"), os.path.join(tmp, "gaps")
    perf = ["perf", "record", "-q", "-k", "CLOCK_MONOTONIC", "-e", "cpu-clock", "-F", FREQ, "-o", out]
    recs = {
        "perf, no call graph": perf + ["--"],
        "unwound record (kernel)": [uw, "record", "-v", "-e", "cpu-clock", "-F", FREQ, "--unwind", "kernel", "-o", out,
                                    "--"],
        "unwound record --unwind copy": [uw, "record", "-q", "-e", "cpu-clock", "-F", FREQ, "--unwind", "copy", "-o",
                                         out, "--"],
        "perf --call-graph dwarf": perf + ["--call-graph", "dwarf", "--"],
        "perf --call-graph fp": perf + ["--call-graph", "fp", "--"],
    }
    names = list(recs)
    rounds = int(os.environ.get("ROUNDS_ST", "5"))
    secs = os.environ.get("SECS_ST", "3")
    shapes = [x.split() for x in os.environ.get("STOLEN", "14 96 0;14 96 256k;14 96 64").split(";")]
    old = sysctl_bpf_stats("1")
    try:
        for shape in shapes:
            samplecost_shape(shape, recs, names, rounds, secs, st, out, gaps, lines)
    finally:
        sysctl_bpf_stats(old)


def samplecost_shape(shape, recs, names, rounds, secs, st, out, gaps, lines):
    first = len(lines)
    per = {n: [] for n in names}
    whole = {n: [] for n in names}  # gap + the time after it (a working set's refill)
    matched = {n: [] for n in names}
    prog = []  # the BPF program's own time per run, ns (kernel.bpf_stats_enabled)
    loads = []
    for r in range(rounds):
        loads.append(os.getloadavg()[0])
        for n in names[r % len(names):] + names[:r % len(names)]:
            wl = (["taskset", "-c", WORKLOAD_CPU] if PIN else []) + [st, secs] + shape + ["1000"]
            res = subprocess.run(pinned(recs[n]) + wl, env=dict(os.environ, STOLEN_GAPS=gaps), check=True,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            m = re.search(r"the program ran (\d+) times, (\d+) ns", res.stderr)
            if m and int(m.group(1)):
                prog.append(int(m.group(2)) / int(m.group(1)))
            g = [tuple(int(float(v)) for v in ln.split()) for ln in open(gaps)]
            starts = [x[0] for x in g]
            sc = subprocess.run(["perf", "script", "-i", out, "-F", "comm,time", "--ns"], capture_output=True,
                                text=True).stdout
            times = [int(round(float(ln.split()[-1].rstrip(":")) * 1e9)) for ln in sc.splitlines()
                     if ln.strip().startswith("stolen")]
            hit, hit_whole = [], []
            for t in times:
                i = bisect.bisect_right(starts, t) - 1
                if i >= 0 and g[i][0] <= t <= g[i][1] and not g[i][2]:
                    hit.append(g[i][1] - g[i][0])
                    if len(g[i]) > 3:
                        hit_whole.append(g[i][1] - g[i][0] + g[i][3])
            if hit:
                per[n].append(statistics.median(hit))
            if hit_whole:
                whole[n].append(statistics.median(hit_whole))
                matched[n].append(len(hit) / max(1, len(times)))
    what = ("caches warm" if shape[2] == "0" else f"a working set of {shape[2][:-1]} KiB" if shape[2].endswith("k")
            else f"caches thrashed ({shape[2]} MiB)")
    ws = shape[2].endswith("k")
    lines.append(f"\n### Cost of a sample in the sampled program: tests/stolen, {shape[0]} frames of {shape[1]} "
                 f"bytes, {what}; "
                 f"{rounds} interleaved rounds of {secs} s, load {min(loads):.1f}-{max(loads):.1f}\n")
    lines.append("| recorder | median gap holding a sample (median of rounds) | rounds' range | beyond perf "
                 "without a call graph | samples matched to a gap |" +
                 (" with the working set's refill after it | beyond perf without a call graph |" if ws else ""))
    lines.append("|---|---:|---:|---:|---:|" + ("---:|---:|" if ws else ""))
    base = statistics.median(per[names[0]]) if per[names[0]] else float("nan")
    base_whole = statistics.median(whole[names[0]]) if whole[names[0]] else float("nan")
    for n in names:
        if not per[n]:
            lines.append(f"| {n} | — | | | |")
            continue
        m = statistics.median(per[n])
        row = (f"| {n} | {m / 1000:.2f} µs | {min(per[n]) / 1000:.2f}-{max(per[n]) / 1000:.2f} | "
               f"{(m - base) / 1000:+.2f} µs | {100 * statistics.median(matched[n]):.0f}% |")
        if ws and whole[n]:
            mw = statistics.median(whole[n])
            row += f" {mw / 1000:.2f} µs | {(mw - base_whole) / 1000:+.2f} µs |"
        elif ws:
            row += " — | |"
        lines.append(row)
    if prog:
        lines.append(f"\nThe BPF program's own time (kernel.bpf_stats_enabled: run_time_ns / run_cnt): "
                     f"{statistics.median(prog) / 1000:.2f} µs a sample (median of rounds, "
                     f"{min(prog) / 1000:.2f}-{max(prog) / 1000:.2f}); the rest of the kernel row's cost "
                     f"beyond perf without a call graph is the program's invocation and what it leaves cold")
    print("\n".join(lines[first:]), flush=True)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--rusage":
        if sys.argv[3] == "--cpu":
            sys.exit(rusage_run(sys.argv[2], sys.argv[6:], sys.argv[4]))
        sys.exit(rusage_run(sys.argv[2], sys.argv[4:]))
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build = os.path.abspath(sys.argv[1])
    parts = sys.argv[2:] or ["overhead", "samplecost", "deep", "system"]
    os.makedirs(os.path.join(build, "bench"), exist_ok=True)
    uname = os.uname()
    lines = [f"# Kernel unwinding: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, Linux {uname.release}, "
             f"{os.cpu_count()} CPUs, load {load()}"]
    with tempfile.TemporaryDirectory(prefix="uw-kbench-") as tmp:
        for part in parts:
            {"overhead": overhead, "samplecost": samplecost, "deep": deep, "system": system}[part](build, tmp, lines)
    with open(os.path.join(build, "bench", "kernel.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
