#!/usr/bin/env python3
"""Compares `perf script --no-inline` with `unwound report --script`, sample by sample.

Where perf's stack reaches a root function, the two must agree frame for frame (address,
symbol+offset, dso). Known, explained difference classes are counted and reported; any other
difference fails. Where perf stops early, unwound's stack must extend perf's (perf's frames are a
prefix of unwound's) or the difference must be one of the explained classes.
"""
import argparse
import subprocess
import re
import sys

FRAME = re.compile(r"^\s+([0-9a-f]+) (.*) \((.*)\)$")
# a symbol's version, as perf prints it from a symbol table (__libc_start_main@@GLIBC_2.34):
# unwound shows the name without it (README)
VERSION = re.compile(r"@@?(?!plt\b)[A-Za-z_][\w.]*(?=\+0x[0-9a-f]+$|$)")


def parse(path):
    samples, cur = [], None
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                if cur is not None:
                    samples.append(cur)
                cur = None
                continue
            if line.startswith("\t") or line.startswith(" "):
                m = FRAME.match(line)
                if cur is not None and m:
                    cur["frames"].append((m.group(1), VERSION.sub("", m.group(2)), m.group(3)))
                continue
            cur = {"header": line.strip(), "frames": []}
    if cur is not None:
        samples.append(cur)
    return samples


def fname(sym):
    return re.sub(r"\+0x[0-9a-f]+$", "", sym)


def same_v8(a, b):
    """Equal frames, or a V8 builtin perf names from the jitdump and unwound from the executable."""
    if a == b:
        return True
    name, _, off = a[1].rpartition("+")
    return (bool(re.search(r"/jitted-\d+-\d+\.so$", a[2])) and "jitted-" not in b[2]
            and name.startswith(("Builtin:", "BytecodeHandler:")) and b[1].startswith("Builtins_")
            and b[1].endswith("+" + off))


def is_subsequence(short, long):
    it = iter(long)
    return all(any(x == y for y in it) for x in short)


def renamed_inlines(pf, uf):
    """Where the two differ, perf shows an inline level of unwound's as the function that contains
    it (the real frame at the same address, repeated): those levels, else None."""
    if len(pf) != len(uf):
        return None
    extra = []
    for k, (p, u) in enumerate(zip(pf, uf)):
        if p == u:
            continue
        real = next((g for g in uf[k + 1:] if g[2] != "inlined"), None)
        if u[2] != "inlined" or not real or real[0] != u[0] or p != real:
            return None
        extra.append((u, real[2]))
    return extra or None


def symbolizer_confirms(extra):
    """llvm-symbolizer, another reader of the DWARF, names each of these inline levels at its
    address."""
    for f, dso in extra:
        try:
            out = subprocess.run(["llvm-symbolizer", "--obj=" + dso, "--inlining", "--demangle", "0x" + f[0]],
                                 capture_output=True, text=True, timeout=60).stdout.split("\n")
        except (OSError, subprocess.TimeoutExpired):
            return False
        if fname(f[1]) not in out[0::2]:
            return False
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("perf")
    ap.add_argument("unwound")
    ap.add_argument("--roots", default="_start,clone3,__clone3")
    a = ap.parse_args()
    roots = set(a.roots.split(","))
    P, U = parse(a.perf), parse(a.unwound)
    # perf names inline levels with binutils addr2line, which gives the containing (outermost)
    # function an ELF alias or its DWARF name (__GI___clock_gettime, init_cpu_features for
    # init_cpu_features.constprop.0), and perf then marks that level "(inlined)" whenever the name
    # differs from its symbol. unwound prints that level as the frame itself (it is not inlined):
    # accept perf's last level at an address marked inlined where unwound has the real frame at
    # the same address and offset.
    relabeled = aliased = recursive = builtins = 0
    for p, u in zip(P, U):
        pf, uf = p["frames"], u["frames"]
        # V8 writes jitdump loads also for its builtins, which are code of the node executable:
        # perf inject --jit names them from the dump ("Builtin:X" in jitted-PID-N.so); unwound
        # keeps the executable's mapping (its CFI unwinds them) and names them by its symbol
        # ("Builtins_X"; bytecode handlers "BytecodeHandler:X" are "Builtins_XHandler", and
        # some share one: Star0..Star15 are Builtins_ShortStarHandler). Same code, same offset.
        for k in range(min(len(pf), len(uf))):
            if pf[k] != uf[k] and same_v8(pf[k], uf[k]):
                pf[k] = uf[k]
                builtins += 1
        real = {(f[0], f[1].rsplit("+", 1)[-1]): f for f in uf if f[2] != "inlined"}
        for k in range(len(pf)):
            last = k + 1 == len(pf) or pf[k + 1][0] != pf[k][0]
            key = (pf[k][0], pf[k][1].rsplit("+", 1)[-1])
            if last and pf[k][2] == "inlined" and key in real:
                pf[k] = real[key]
                relabeled += 1
            elif (not last and pf[k][2] != "inlined" and k < len(uf) and uf[k][2] == "inlined"
                  and uf[k][:2] == pf[k][:2]):
                # a function inlined into itself (recursive inlining): perf prints every level
                # named like the symbol as the real frame; only the outermost one is
                pf[k] = uf[k]
                recursive += 1
            elif pf[k][2] == "inlined" and k < len(uf) and uf[k][2] == "inlined" and pf[k][1] != uf[k][1] \
                    and pf[k][1].replace("__GI_", "", 1) == uf[k][1].replace("__GI_", "", 1):
                # glibc's hidden aliases (__GI__IO_doallocbuf, the DW_AT_linkage_name of
                # _IO_doallocbuf): BFD renames its function entries after the ELF alias found at a
                # function's start, so addr2line uses the alias for some copies and not others
                pf[k] = uf[k]
                aliased += 1
    classes = {}
    bad = []
    perf_root = perf_trunc = same = longer = 0
    for i, (p, u) in enumerate(zip(P, U)):
        if p["header"] != u["header"]:
            bad.append((i, "header", p["header"], u["header"]))
            continue
        pf, uf = p["frames"], u["frames"]
        # perf reaches a root when its outermost frame is an outermost function
        reaches = bool(pf) and fname(pf[-1][1]).split("@")[0] in roots
        if reaches:
            perf_root += 1
        else:
            perf_trunc += 1
        if pf == uf:
            same += 1
            continue
        if not reaches and uf[: len(pf)] == pf:
            longer += 1  # perf stopped early; unwound continues from the same frames
            continue
        # classify
        n = 0
        while n < min(len(pf), len(uf)) and pf[n] == uf[n]:
            n += 1
        pd = pf[n] if n < len(pf) else None
        ud = uf[n] if n < len(uf) else None
        if not reaches and pd is not None and n == len(pf) - 1 and pd[1] == "[unknown]":
            # perf's last frame is a garbage return address that unwound did not produce
            cls = "perf ends in an unknown frame where unwound continues"
        elif (any(fname(f[1]) == "__restore_rt" for f in pf[: n]) and not reaches and pf[-1][1] == "[unknown]"
              and uf and fname(uf[-1][1]).split("@")[0] in roots and is_subsequence(pf[:-1], uf)):
            # the same after a signal that interrupted the vdso: perf skips the interrupted
            # frame (__vdso_clock_gettime) and then ends in a garbage return address
            cls = "unwound recovers the frames interrupted by a signal that perf skips, and perf then ends unknown"
        elif any(fname(f[1]) == "__restore_rt" for f in pf[: n]) and is_subsequence(pf, uf):
            # after a signal trampoline perf (libunwind) follows the frame pointer and skips the
            # interrupted frames; unwound restores them from the signal context (ucontext)
            cls = "unwound recovers the frames interrupted by a signal that perf skips"
        elif (n < len(pf) and "jitted-" in pf[n][2]
              and ((len(pf) == len(uf) + 1 and all(same_v8(a, b) for a, b in zip(pf[:n] + pf[n + 1:], uf)))
                   or (n >= 1 and "jitted-" in pf[n - 1][2] and not reaches and len(pf) == n + 1
                       and uf and fname(uf[-1][1]).split("@")[0] in roots))):
            # a sample at a JIT function's entry (its first instruction, or the entry of its
            # on-stack replacement in a loop), before it set up its frame: perf (libunwind) takes
            # the return address at the stack pointer; unwound follows the frame pointer, which
            # still names the caller's caller, and skips one frame (its entry heuristic wants the
            # caller's CFI to vouch for the address, and JIT code has none). perf may then stop at
            # that caller (the frame pointer it left there is not the caller's) where unwound
            # goes on to the root: seen once in 1,575 samples of node on a busy machine
            cls = "unwound skips the caller of a JIT function sampled at its entry (no CFI in JIT code)"
        elif (extra := renamed_inlines(pf, uf)) and symbolizer_confirms(extra):
            # binutils addr2line, asked for one address in a fresh process, can name an inlined
            # level by its caller (atof inlined into main: "main" at stdlib-float.h:27, then main;
            # asked after another address of the unit, "atof"); perf repeats that name.
            # llvm-symbolizer names the inlined function, as unwound does.
            cls = "addr2line (so perf) names an inlined level by its caller; llvm-symbolizer agrees with unwound"
        elif uf and fname(uf[-1][1]).split("@")[0] in roots and is_subsequence(pf, uf):
            # unwound reaches a root; every frame perf shows is there, in order, but perf
            # (libunwind) skipped frames that unwound finds (seen in ld.so under mprotect and
            # mmap, where perf's result varies from run to run)
            cls = "perf skips frames that unwound finds"
        else:
            cls = None
        if cls:
            classes[cls] = classes.get(cls, 0) + 1
            continue
        bad.append((i, "frames", pf, uf))
    print(f"samples={len(P)} identical={same} perf_reaches_root={perf_root} perf_truncated={perf_trunc} "
          f"unwound_extends_perf={longer}")
    if relabeled:
        classes["perf marks the containing function (inlined) under addr2line's name (frames)"] = relabeled
    if aliased:
        classes["addr2line names an inlined function by its __GI_ alias (frames)"] = aliased
    if builtins:
        classes["V8 builtin named from the jitdump by perf inject, from the executable by unwound (frames)"] = builtins
    if recursive:
        classes["perf shows copies of a function inlined into itself as real frames (frames)"] = recursive
    for c, k in sorted(classes.items()):
        print(f"  explained difference: {c}: {k}")
    if bad:
        print(f"FAIL: {len(bad)} unexplained differences; first ones:")
        for i, kind, x, y in bad[:3]:
            print(f"  sample {i} ({kind}):")
            if kind == "header":
                print(f"    perf:    {x}\n    unwound: {y}")
            else:
                for k in range(max(len(x), len(y))):
                    l = x[k] if k < len(x) else ""
                    r = y[k] if k < len(y) else ""
                    mark = " " if l == r else "!"
                    print(f"   {mark} {str(l):70.70s} | {r}")
        return 1
    print("compare-script: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
