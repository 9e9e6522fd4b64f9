#!/usr/bin/env python3
# What the viewers must show for the recordings of tests/e2e/viewers.sh, as JSON for
# tests/viewers/check.mjs: from unwound's folded stacks (weighted by period, inline frames of
# their own) the functions' self and total time and the search share; from perf script the
# samples' times, periods and threads.
import json
import re
import sys
from collections import defaultdict

W = sys.argv[1]


def folded(name):
    stacks = []
    for line in open(f"{W}/{name}.folded"):
        st, w = line.rstrip("\n").rsplit(" ", 1)
        frames = [re.sub(r"_\[k\]$", "", f) for f in st.split(";")[1:]]  # without the comm
        stacks.append((frames, int(w)))
    return stacks


def perf(name):
    out = []
    for line in open(f"{W}/{name}.perf"):
        m = re.match(r"\s*(\d+)\s+(\d+)\.(\d+):\s+(\d+)", line)
        if m:
            out.append((int(m.group(1)), int(m.group(2)) * 10**9 + int(m.group(3).ljust(9, "0")), int(m.group(4))))
    return out


def functions(stacks):
    self_, total = defaultdict(int), defaultdict(int)
    for frames, w in stacks:
        if frames:
            self_[frames[-1]] += w
        for f in set(frames):
            total[f] += w
    return self_, total


exp = {"speedscope": [], "html": []}
for name, profile, search in (("cxx", "cxxwork (", "sorted_median"), ("threads", "e2e_nofp (", "thread_work"),
                              ("rec", "e2e_nofp (", "tree_a")):
    stacks = folded(name)
    self_, total = functions(stacks)
    ps = perf(name)
    tot = sum(p for _, _, p in ps)
    top = sorted(self_, key=lambda f: (-self_[f], f))[:10]
    threads = defaultdict(int)
    for tid, _, p in ps:
        threads[tid] += p
    # speedscope shows the heaviest thread's profile first: its ten heaviest functions by self
    # time, in ms
    tid = int(open(f"{W}/{name}.tid").read())
    tself, ttotal = functions(folded(f"{name}.tid"))
    ttop = sorted(tself, key=lambda f: (-tself[f], f))[:10]
    exp["speedscope"].append({
        "name": name, "file": f"{W}/{name}.speedscope.json", "profile": f"{profile.rstrip('(')}(",
        "thread": f"/{tid})", "threads": {str(t): v for t, v in threads.items()},
        "functions": {f: {"self": tself[f] / 1e6, "total": ttotal[f] / 1e6} for f in ttop},
    })
    roots = defaultdict(int)
    for frames, w in stacks:
        if frames:
            roots[frames[0]] += w
    heavy_root = sorted(roots, key=lambda f: (-roots[f], f))
    # zoom into the heaviest outermost frame's heaviest child
    kids = defaultdict(int)
    for frames, w in stacks:
        if len(frames) > 1 and frames[0] == heavy_root[0]:
            kids[frames[1]] += w
    zoom = [heavy_root[0]] + ([sorted(kids, key=lambda f: (-kids[f], f))[0]] if kids else [])
    rx = re.compile(search)
    matched = sum(w for frames, w in stacks if any(rx.search(f) for f in frames))
    assert sum(w for _, w in stacks) == tot, (sum(w for _, w in stacks), tot)
    exp["html"].append({
        "name": name, "file": f"{W}/{name}.html", "total": tot, "samples": len(ps),
        "roots": heavy_root[:1], "zoom": zoom, "search": search,
        "matched": "%.2f%%" % (100.0 * matched / tot), "top_self": top[0],
        "threads": {str(t): v for t, v in threads.items()},
        "perf_samples": [[t, p] for _, t, p in ps],
    })
json.dump(exp, sys.stdout)
