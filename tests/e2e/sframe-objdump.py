#!/usr/bin/env python3
"""Compares unwound's SFrame decoding (tests/sframe_dump) with GNU objdump --sframe's, row by row.

    sframe-objdump.py OBJDUMP.txt SFRAME_DUMP.txt

Both are brought to one notation: (function start, row start, CFA, FP, RA), registers by DWARF
number (objdump's sp and fp are r7 and r6 on AMD64), a dereference in parentheses, an RA at the
ABI's fixed offset (objdump: "f", v1/v2 "u", a flexible row's padding "U") as "f" (AMD64 only). objdump lists
a repeated-block function's rows once, as offsets in the block: compared with the first block."""
import re
import sys


def norm_reg(x):
    return x.replace("sp", "r7").replace("fp", "r6")


def objdump_rows(path):
    funcs = []  # [start, pcmask, rows]
    for line in open(path):
        m = re.match(r"\s+func idx \[\d+\]: pc = (0x[0-9a-f]+), size = (\d+) bytes", line)
        if m:
            funcs.append([int(m.group(1), 16), False, []])
            continue
        if re.match(r"\s+STARTPC\[m\]", line):
            funcs[-1][1] = True
            continue
        m = re.match(r"\s+([0-9a-f]{16})\s+RA undefined", line)
        if m:
            funcs[-1][2].append((int(m.group(1), 16), "undefined", "", ""))
            continue
        m = re.match(r"\s+([0-9a-f]{16})\s+(\S+)\s+(\S+)\s+(\S+)", line)
        if m and funcs:
            pc = int(m.group(1), 16)
            cfa, fp, ra = m.group(2), m.group(3), m.group(4)
            fp = "u" if fp == "u" else norm_reg(fp.replace("c", "cfa", 1) if fp.startswith("c") else fp)
            ra = "f" if ra in ("f", "U", "u") else ra  # (AMD64: u in v1/v2 dumps is the fixed RA)
            funcs[-1][2].append((pc, norm_reg(cfa), fp, ra))
    out = []
    for start, pcmask, rows in funcs:
        for (pc, cfa, fp, ra) in rows:
            out.append((start, start + pc if pcmask else pc, cfa, fp, ra))
    return out, {f[0]: (f[1], len(f[2])) for f in funcs}


def dump_rows(path, funcs):
    out = []
    seen = {}
    fixed_ra = None
    for line in open(path):
        m = re.match(r"version \d+\s+abi \S+\s+flags \S+\s+fixed-fp \S+\s+fixed-ra (-?\d+)", line)
        if m:
            fixed_ra = int(m.group(1))
            continue
        m = re.match(r"func (0x[0-9a-f]+)\s+\[(0x[0-9a-f]+), (0x[0-9a-f]+)\)\s+(.*)", line)
        if not m:
            continue
        start, pc = int(m.group(1), 16), int(m.group(2), 16)
        pcmask, n = funcs.get(start, (False, 0))
        seen[start] = seen.get(start, 0) + 1
        if pcmask and seen[start] > n:
            continue  # later blocks of a repeated block: objdump shows one
        f = dict(kv.split("=", 1) for kv in m.group(4).split() if "=" in kv)
        if f.get("ra") == "undefined":
            out.append((start, pc, "undefined", "", ""))
            continue
        cfa = f["cfa"]
        cfa = "(" + norm_reg(cfa[1:-1]) + ")" if cfa.startswith("[") else norm_reg(cfa)
        if cfa.startswith("(") and not re.search(r"[+-]\d+\)$", cfa):
            cfa = cfa[:-1] + "+0)"
        def loc(v):
            if v is None:
                return "u"
            if v.startswith("["):
                inner = v[1:-1]
                if inner.startswith("cfa"):
                    return inner
                return "(" + (inner if re.search(r"[+-]\d+$", inner) else inner + "+0") + ")"
            return v
        fp = loc(f.get("fp"))
        ra = f.get("ra")
        ra = "f" if fixed_ra and ra == "[cfa%+d]" % fixed_ra else loc(ra)
        out.append((start, pc, cfa, fp, ra))
    return out


def main():
    want, funcs = objdump_rows(sys.argv[1])
    got = dump_rows(sys.argv[2], funcs)
    bad = [(w, g) for w, g in zip(want, got) if w != g]
    print(f"objdump rows {len(want)}, unwound rows {len(got)}, differing {len(bad) + abs(len(want) - len(got))}")
    for w, g in bad[:10]:
        print("  objdump", w, "\n  unwound", g)
    if bad or len(want) != len(got) or not want:
        print("FAIL: the decodings differ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
