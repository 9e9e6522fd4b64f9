#!/usr/bin/env python3
"""Checks a pprof profile through its real consumer, `go tool pprof -raw -symbolize=none`:
  - the samples add up to the report's count;
  - every stack (function names, innermost first, inline levels included) and its count equal
    `unwound report --folded --inline` (kernel frames there carry FlameGraph's _[k]);
  - the lines of the program's locations equal addr2line's (-i: inline chain, innermost first).

    pprof-check.py PROFILE FOLDED SAMPLES PROGRAM
"""
import collections
import os
import re
import subprocess
import sys

prof, folded, want_samples, program = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
raw = subprocess.run(["go", "tool", "pprof", "-raw", "-symbolize=none", prof], capture_output=True, text=True,
                     check=True).stdout
sect = None
samples, locs, maps = [], {}, {}
cur = None
for line in raw.splitlines():
    if line.startswith(("Samples:", "Locations", "Mappings")):
        sect = line.split(":")[0].split()[0]
        continue
    if sect == "Samples":
        m = re.match(r"\s+(\d+)\s+(\d+): ([\d ]+)$", line)
        if m:
            samples.append((int(m.group(1)), [int(x) for x in m.group(3).split()]))
    elif sect == "Locations":
        m = re.match(r"\s+(\d+): 0x([0-9a-f]+) M=(\d+) (.*)$", line)
        if m:
            cur = int(m.group(1))
            locs[cur] = (int(m.group(2), 16), int(m.group(3)), [])
            rest = m.group(4)
        else:
            rest = line.strip()
        lm = re.match(r"(.*?) (\S*):(\d+) s=\d+", rest)
        if lm and cur is not None:
            locs[cur][2].append((lm.group(1), lm.group(2), int(lm.group(3))))
    elif sect == "Mappings":
        m = re.match(r"(\d+): \S+ (\S+)", line)
        if m:
            maps[int(m.group(1))] = m.group(2)

total = sum(n for n, _ in samples)
print(f"pprof: {len(samples)} samples records, {total} samples, {len(locs)} locations, {len(maps)} mappings")
ok = True
if total != want_samples:
    print(f"FAIL: {total} samples in the profile, the report counted {want_samples}")
    ok = False

# stacks by names, against the folded stacks (comm; outermost first)
# (unnamed code: the profile has a function per address, MODULE+0xADDR; folded stacks keep the
# module's unnamed code as one frame, [MODULE])
def folded_name(name):
    m = re.fullmatch(r"(.+)\+0x[0-9a-f]+", name)
    return f"[{m.group(1)}]" if m else name


got = collections.Counter()
for n, ids in samples:
    names = []
    for i in ids:
        names += [folded_name(ln[0]) for ln in locs[i][2]] or ["?"]
    got[tuple(reversed(names))] += n
want = collections.Counter()
for line in open(folded):
    stack, _, n = line.rstrip("\n").rpartition(" ")
    frames = stack.split(";")[1:]
    want[tuple(f[:-4] if f.endswith("_[k]") else f for f in frames)] += int(n)
diff = (got - want) + (want - got)
print(f"stacks: {len(got)} in the profile, {len(want)} folded, {sum(diff.values())} samples differ")
if diff:
    for st, n in list(diff.items())[:3]:
        print("  ", n, ";".join(st), "(profile)" if got[st] > want[st] else "(folded)")
    ok = False

# lines of the program's locations, against addr2line
prog_maps = [k for k, v in maps.items() if v == program]
checked = bad = 0
for lid, (addr, mid, lines) in sorted(locs.items()):
    if mid not in prog_maps or not lines or checked >= 60:
        continue
    out = subprocess.run(["addr2line", "-f", "-i", "-C", "-e", program, hex(addr)], capture_output=True,
                         text=True).stdout.split("\n")
    chain = [(out[k], out[k + 1]) for k in range(0, len(out) - 1, 2)]
    # (no line known: addr2line says ??:? or ??:0, the profile has no file and line 0)
    a2l = [os.path.basename(p.split(" ")[0]).replace("??:?", "?").replace("??:0", "?") for _, p in chain]
    ours = [f"{os.path.basename(f)}:{ln}" if f else "?" for _, f, ln in lines]
    checked += 1
    if a2l != ours:
        bad += 1
        if bad <= 3:
            print(f"  location {hex(addr)}: profile {ours}, addr2line {a2l}")
print(f"lines: {checked} program locations checked against addr2line, {bad} differ")
if bad or not checked:
    ok = False
if not ok:
    print("FAIL: the pprof profile differs")
sys.exit(0 if ok else 1)
