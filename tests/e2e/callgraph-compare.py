#!/usr/bin/env python3
# Compares the call graphs under each entry of two perf-report-style outputs (perf's and
# unwound's): every entry of perf's must be in unwound's with the same lines under it.
# An optional SHIFT (4th argument) is added to the addresses of perf's rows of code without a
# symbol: perf's table shows file offsets there, unwound's the ELF addresses its graph shows.
import re
import sys


# a symbol's version, as perf prints it (__libc_start_main@@GLIBC_2.34): unwound shows the
# name without it (README)
VERSION = re.compile(r"@@?(?!plt\b)[A-Za-z_][\w.]*(?=\s|$)")


def blocks(path):
    out, cur, seen = {}, None, set()
    for line in open(path):
        line = VERSION.sub("", line.rstrip())
        # (the sort keys before the symbol, dso with --sort dso,sym, with runs of blanks as one:
        # the two tools pad the columns to widths of their own)
        m = re.match(r"\s+[\d.]+%(\s+[\d.]+%)?\s+(\S.*?\[.\] .*|\[.\] .*)$", line)
        if m:
            cur = re.sub(r"\s+", " ", m.group(2))
            if cur in out:
                # two symbols of one name (operator delete(void*) and (void*, size_t)): perf
                # keeps them apart, unwound's rows are names
                seen.add(cur)
            out[cur] = []
        elif cur is not None and line:
            out[cur].append(line)
    for k in seen:
        del out[k]
    return out


def paths(lines):
    """An entry's graph as its set of ways (each a tuple of (share, name) steps), so branches of
    equal share may come in either order: perf orders ties by symbol address, unwound by name."""
    at = {12: ()}
    out = set()
    for line in lines:
        m = re.match(r"^(.*?)([| ])--([\d.]+%)--(.*)$", line)
        if m:
            col = len(m.group(1))
            parent = at.get(col, ())
            way = parent + ((m.group(3), m.group(4)),)
            at[col + 11] = way  # (its chain continues 11 columns in, whatever the share's width)
            out.add(way)
            continue
        m = re.match(r"^(\s*)---(.*)$", line)
        if m:
            at[len(m.group(1)) + 3] = ((None, m.group(2)),)
            out.add(at[len(m.group(1)) + 3])
            continue
        m = re.match(r"^([\s|]*?)([^\s|].*)$", line)
        if m:
            col = len(m.group(1))
            way = at.get(col, ()) + ((None, m.group(2)),)
            at[col] = way
            out.add(way)
    return out


perf, uw = blocks(sys.argv[1]), blocks(sys.argv[2])
if len(sys.argv) > 4:
    shift = int(sys.argv[4], 0)
    addr = re.compile(r"\[\.\] 0x([0-9a-f]{16})$")
    perf = {addr.sub(lambda m: "[.] 0x%016x" % (int(m.group(1), 16) + shift), k): v for k, v in perf.items()}
what = sys.argv[3]
bad = [k for k in perf if perf[k] != uw.get(k) and (k not in uw or paths(perf[k]) != paths(uw[k]))]
if not perf or bad:
    for k in bad[:2]:
        print(f"entry {k}\n--- perf\n" + "\n".join(perf[k][:30]) + "\n--- unwound\n" + "\n".join(uw.get(k, ["(missing)"])[:30]))
    print(f"FAIL: {what}: {len(bad)} of {len(perf)} entries' call graphs differ from perf report's")
    sys.exit(1)
print(f"{what}: {len(perf)} entries, call graphs equal to perf report's")
