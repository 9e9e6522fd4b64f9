#!/usr/bin/env python3
"""Deferred user callchains against the original recording: the samples of `unwound report
--script` on the synthesized file (deferred.py) and of a script of the original, matched by
thread and time (a deferred sample is delivered when its record comes, so the order differs),
must be equal frame for frame; those whose record was left out (MISSING) equal the original's
kernel frames alone.

    deferred-compare.py ORIGINAL.txt DEFERRED.txt MISSING
"""
import re
import sys

# a symbol's version as perf prints it (__libc_start_main@@GLIBC_2.34); unwound drops it (README)
VERSION = re.compile(r"@@?[A-Z][\w.]*(?=\+0x)")
HEAD = re.compile(r"^\s*(\S.*?)\s+(\d+)(?:/(\d+))?\s+(?:\[\d+\]\s+)?(\d+\.\d+):")


def parse(path):
    out = {}
    cur = None
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        if not line:
            cur = None
            continue
        if line[0] in " \t":
            if cur is not None:
                out[cur].append(VERSION.sub("", line.strip()))
            continue
        m = HEAD.match(line)
        if not m:
            raise SystemExit("unparsed sample header: " + line)
        tid = int(m.group(3) or m.group(2))
        key = (tid, m.group(4))
        if key in out:
            raise SystemExit("two samples of thread %d at %s" % key)
        out[key] = [line.strip()]
        cur = key
    return out


def main():
    orig, dfr = parse(sys.argv[1]), parse(sys.argv[2])
    missing = set()
    for line in open(sys.argv[3]):
        tid, t = line.split()
        missing.add((int(tid), "%d.%06d" % (int(t) // 10**9, int(t) % 10**9 // 1000)))
    bad = 0
    n_missing = n_full = 0
    for key, frames in orig.items():
        got = dfr.get(key)
        want = frames
        if key in missing:
            want = [frames[0]] + [f for f in frames[1:] if "[kernel.kallsyms]" in f]
            n_missing += 1
        elif len(frames) > 1:
            n_full += 1
        if got != want:
            bad += 1
            if bad <= 3:
                print("differs: thread %d at %s" % key)
                print("  want:", *want, sep="\n    ")
                print("  got: ", *(got or ["(no sample)"]), sep="\n    ")
    extra = len(set(dfr) - set(orig))
    print("samples %d (%d with their deferred user part, %d whose record was left out), differing %d, extra %d"
          % (len(orig), n_full, n_missing, bad, extra))
    if bad or extra or len(missing) != n_missing:
        print("FAIL: deferred callchains differ from the original")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
