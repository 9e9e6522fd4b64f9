#!/usr/bin/env python3
"""Writes a flame graph page (lib/profile/flamegraph.html with generated data) whose tree has
about N nodes, for bench/flamegraph.mjs: a random call tree of depth up to 60 over 20,000
functions in 50 modules, 8 threads, 600 time buckets.
Usage: bench/flamegraph-synth.py TEMPLATE N OUT.html"""
import json
import random
import sys

template, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rnd = random.Random(1)
nfun = 20000
frames = [[f"fn_{i}_" + "x" * rnd.randrange(4, 40), i % 50, f"/src/file{i % 300}.c", 0, rnd.choice([0, 0, 0, 3, 1])]
          for i in range(nfun)]
stacks = []
# paths: each new stack shares a random prefix of an earlier one, then goes its own way
nodes = 0
while nodes < n:
    if stacks and rnd.random() < 0.97:
        base = rnd.choice(stacks)[1]
        keep = rnd.randrange(1, len(base) + 1)
        path = base[:keep]
    else:
        path = [rnd.randrange(nfun)]
    extra = rnd.randrange(1, 8)
    path = path + [rnd.randrange(nfun) for _ in range(extra)]
    path = path[:60]
    nodes += extra
    stacks.append([rnd.randrange(8), path])
S, B, N, W = [], [], [], []
for i in range(len(stacks)):
    for _ in range(rnd.randrange(1, 3)):
        S.append(i)
        B.append(rnd.randrange(600))
        c = rnd.randrange(1, 20)
        N.append(c)
        W.append(c * 1000000)
data = {"title": f"synthetic {n} nodes", "event": "cpu-clock", "unit": "ns", "diff": False, "by_thread": True,
        "t0": 10**12, "t1": 10**12 + 60 * 10**9, "nb": 600, "frames": frames,
        "modules": [f"lib{m}.so" for m in range(50)], "threads": [[100 + t // 4, 100 + t, f"worker{t}"] for t in range(8)],
        "stacks": stacks, "S": S, "B": B, "N": N, "W": W}
page = open(template).read().replace("<!--UW_DATA-->", '<script type="application/json" id="uwdata">' +
                                     json.dumps(data, separators=(",", ":")).replace("</", "<\\/") + "</script>")
open(out, "w").write(page)
print(f"{out}: {len(stacks)} stacks, {len(S)} cells")
