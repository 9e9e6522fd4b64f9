#!/usr/bin/env python3
"""Compares unwound's inline chains and source lines (symdump output) with binutils
`addr2line -f -i -C -a` for every distinct address, module by module. Exact agreement is required
except for the explained classes listed in docs/design.md; anything else fails.

With --dwp PACKAGE the reference is llvm-symbolizer reading that DWARF package (binutils cannot
read packages), in the same output style.

usage: addr2line-oracle.py SYMDUMP [--min N] [--dwp PACKAGE]
"""
import argparse
import collections
import os
import re
import subprocess
import sys


def demangle(names):
    """Names as perf and unwound show them: libiberty without parameter lists (c++filt -p)."""
    if not names:
        return []
    out = subprocess.run(["c++filt", "-p"], input="\n".join(names) + "\n", capture_output=True,
                         text=True).stdout.splitlines()
    return out if len(out) == len(names) else names


def a2l(module, addrs, dwp=None, llvm=False):
    # -C would add parameter lists and return types; demangle separately without them
    cmd = ["addr2line", "-f", "-i", "-a", "-e", module]
    if dwp or llvm:
        cmd = ["llvm-symbolizer", "--obj=" + module, "--inlining", "--output-style=GNU", "-a", "-f"]
        if dwp:
            cmd.insert(2, "--dwp=" + dwp)
    out = subprocess.run(cmd,
                         input="\n".join("0x%x" % a for a in addrs) + "\n",
                         capture_output=True, text=True).stdout.splitlines()
    res, cur = {}, None
    i = 0
    while i < len(out):
        line = out[i]
        if re.fullmatch(r"0x[0-9a-f]+", line):
            cur = int(line, 16)
            res[cur] = []
            i += 1
            continue
        fn = line
        pos = out[i + 1] if i + 1 < len(out) else "??:0"
        pos = re.sub(r" \(discriminator \d+\)$", "", pos)
        f, _, ln = pos.rpartition(":")
        res[cur].append((fn, os.path.basename(f), int(ln) if ln.isdigit() else 0))
        i += 2
    flat = [e[0] for v in res.values() for e in v]
    dem = iter(demangle(flat))
    return {k: [(next(dem), f, l) for (_, f, l) in v] for k, v in res.items()}


def dwarfdump_inlines(module, addr):
    """The inlined subroutines over addr, outermost first, as llvm-dwarfdump --lookup reads them
    (an independent DWARF reader; None when it is not installed)."""
    try:
        out = subprocess.run(["llvm-dwarfdump", "--lookup=0x%x" % addr, module], capture_output=True,
                             text=True).stdout
    except OSError:
        return None
    return re.findall(r'DW_TAG_inlined_subroutine\s*\n\s*DW_AT_abstract_origin\s*\(0x[0-9a-f]+ "([^"]+)"\)', out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("symdump")
    ap.add_argument("--min", type=int, default=1)
    ap.add_argument("--dwp")
    a = ap.parse_args()
    ours = collections.defaultdict(dict)
    for line in open(a.symdump):
        parts = line.rstrip("\n").split("\t")
        mod, addr, rest = parts[0], int(parts[1], 16), parts[2:]
        chain = [(rest[k], os.path.basename(rest[k + 1]) if rest[k + 1] != "??" else "??", int(rest[k + 2]))
                 for k in range(0, len(rest), 3)]
        ours[mod][addr] = chain
    total = same = 0
    classes = collections.Counter()
    bad = []
    for mod, m in ours.items():
        if not os.path.exists(mod):
            continue
        if a.dwp and os.path.basename(a.dwp) != os.path.basename(mod) + ".dwp":
            continue
        ref = a2l(mod, sorted(m), a.dwp)
        for addr, chain in m.items():
            total += 1
            r = ref.get(addr, [])
            if not chain:
                chain = [("??", "??", 0)]
            if chain == r:
                same += 1
                continue
            # no DWARF for the address (assembly such as _start): addr2line names it from the
            # symbol table with no line; unwound gives no chain (the symbol table names the frame)
            if chain == [("??", "??", 0)] and len(r) == 1 and r[0][2] == 0:
                classes["no DWARF: addr2line falls back to the symbol table"] += 1
                continue
            # no function DIE over the address (GCC LTO units), only the line table: addr2line
            # takes the ELF symbol's name; the position agrees
            if len(chain) == 1 and len(r) == 1 and chain[0][0] == "??" and chain[0][1:] == r[0][1:]:
                classes["no DWARF function over the address (LTO): addr2line names the ELF symbol"] += 1
                continue
            # the containing function: addr2line names it by the ELF symbol found at its start
            # (aliases, clones) where DWARF names it otherwise
            if len(chain) == len(r) and chain[:-1] == r[:-1] and chain[-1][1:] == r[-1][1:]:
                classes["outermost function named by an ELF alias in addr2line"] += 1
                continue
            # glibc hidden aliases on inlined levels (__GI_x for x)
            if len(chain) == len(r) and all(c[1:] == d[1:] and c[0].replace("__GI_", "", 1) == d[0].replace("__GI_", "", 1)
                                            for c, d in zip(chain, r)):
                classes["__GI_ alias on a level"] += 1
                continue
            # binutils 2.40 reports some DWARF 5 line entries in the unit's primary file
            if len(chain) == len(r) and [c[0] for c in chain] == [d[0] for d in r] and \
                    [c[2] for c in chain] == [d[2] for d in r]:
                classes["same lines, file named differently by addr2line (DWARF 5 file table)"] += 1
                continue
            # binutils 2.40 misses inlined subroutines whose DW_AT_ranges is a DW_FORM_rnglistx
            # index (clang's DWARF 5): it names only the outer function, at the inner line.
            # An independent DWARF reader decides: llvm-dwarfdump must list exactly unwound's inline
            # levels (its --lookup shows only the innermost when they nest), or llvm-symbolizer
            # must give exactly unwound's chain
            if len(chain) > len(r) >= 1 and chain[-1][0] == r[-1][0] and chain[0][2] == r[0][2] and \
                    (dwarfdump_inlines(mod, addr) == [c[0] for c in reversed(chain[:len(chain) - len(r)])] or
                     a2l(mod, [addr], llvm=True).get(addr) == chain):
                classes["inline levels addr2line misses (rnglistx ranges), as llvm-dwarfdump or llvm-symbolizer lists them"] += 1
                continue
            bad.append((mod, addr, chain, r))
    print(f"addresses={total} identical={same}")
    for c, k in classes.most_common():
        print(f"  explained: {c}: {k}")
    if total < a.min:
        print(f"FAIL: only {total} addresses")
        return 1
    if bad:
        print(f"FAIL: {len(bad)} addresses differ; first ones:")
        for mod, addr, c, r in bad[:5]:
            print(f"  {os.path.basename(mod)} {addr:#x}\n    unwound:   {c}\n    addr2line: {r}")
        return 1
    print("llvm-symbolizer (package) oracle: ok" if a.dwp else "addr2line oracle: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
