#!/usr/bin/env python3
"""Checks a profile written by libunwound-prof through its real consumer, go tool pprof:
`-traces -sample_index=samples` (the stacks, function names innermost first, with their labels)
and `-top`. Every failure says why and prints the traces that matter.

    prof-check.py PROFILE [checks...]
      --samples-min N        at least N samples
      --value-min TYPE=SEC   the sample values of TYPE (cpu, wall: nanoseconds) add up to at least
                             SEC seconds (-top -sample_index=TYPE): time sampled, timer overruns
                             included, where a sample count depends on how the CPU came
      --lost N               exactly N samples are the profiler's lost ones (one frame, "[lost
                             samples]" or "[lost samples: CAUSE]", whatever the cause)
      --lost-value-min TYPE=SEC  the lost samples' values of TYPE add up to at least SEC seconds
                             (their periods, overruns included: the time lost, which a count of
                             samples is not where the CPU came in slices)
      --lost-cause CAUSE=N   exactly N samples are "[lost samples: CAUSE]"
      --lost-cause-value-min CAUSE:TYPE=SEC  those samples' values of TYPE add up to at least SEC
                             seconds
      --only PATTERN ...     every sample's stack matches one of the patterns
      --expect PATTERN       at least one sample matches
      --never A;B            no stack has B called by A (adjacent frames, outermost first)
      --share FUNC=LO:HI     the samples with FUNC on their stack are LO..HI percent of all
      --root-share PCT       at least PCT percent reach a root frame (_start, clone, clone3), of
                             the samples unwound (lost samples are not: --lost checks them)
      --label KEY=VALUE      some sample has the label (VALUE may end with *)
      --type TYPE            the profile's sample type (cpu, wall) in -top's header
      --inline FUNC          some sample has FUNC as an inline frame (a line of a location)
      --mapping PATH=BUILDID the profile has a mapping of PATH with that build-id
Patterns are frames outermost first, separated by ';', where '*' stands for any frames (none
included) and a frame may end with '*' (a prefix); a pattern matches the whole stack. The frame
"[lost samples*]" is any lost samples' frame, whatever its cause. For --only,
a stack whose innermost frame is a PLT stub `F@plt` is the call to F caught in its stub: it is
allowed when the stack with F in its place is.
"""
import fnmatch
import os
import re
import subprocess
import sys

ROOTS = {"_start", "clone", "clone3", "__clone", "__clone3"}


def pprof(args):
    env = dict(os.environ)
    env.setdefault("HOME", "/root")
    r = subprocess.run(["go", "tool", "pprof"] + args, capture_output=True, text=True, env=env)
    if r.returncode:
        print(r.stdout + r.stderr)
        sys.exit("FAIL: go tool pprof %s could not read it" % " ".join(args))
    return r.stdout


INLINED = set()


def traces(path):
    out = pprof(["-traces", "-sample_index=samples", path])
    INLINED.update(m.group(1) for m in re.finditer(r"^\s+(?:\d+\s+)?(\S.*?) \(inline\)$", out, re.M))
    samples = []
    for block in out.split("-----------+-------------------------------------------------------")[1:]:
        labels, frames, count = {}, [], 0
        for line in block.splitlines():
            if not line.strip():
                continue
            m = re.match(r"^\s+(\S+):\s+(.*)$", line)
            if m and not frames and not re.match(r"^\s+\d+\s", line):
                labels[m.group(1)] = m.group(2).strip()
                continue
            m = re.match(r"^\s+(\d+)\s+(.*)$", line)
            if m and not frames:
                count = int(m.group(1))
                frames.append(m.group(2).strip())
            else:
                frames.append(line.strip())
        if frames:
            # (inline) marks frames inlined into the next: the function's name is what counts
            frames = [f.replace(" (inline)", "") for f in frames]
            samples.append((count, labels, list(reversed(frames))))
    return samples


LOST_RE = re.compile(r"^\[lost samples(?:: ([^\]]*))?\]$")


def lost_cause(frames):
    """The cause of a stack of lost samples ("" when not said), None for any other stack."""
    m = LOST_RE.match(frames[0]) if len(frames) == 1 else None
    return (m.group(1) or "") if m else None


def lost_top(path, typ, cause=None):
    """The lost samples' values of TYPE in seconds (of one cause, or all)."""
    top = pprof(["-top", "-unit=ms", "-nodecount=100000", "-sample_index=" + typ, path])
    got = 0.0
    for line in top.splitlines():
        f = line.split(None, 5)
        if len(f) == 6:
            m = LOST_RE.match(f[5].strip())
            if m and (cause is None or (m.group(1) or "") == cause):
                got += float(f[0].rstrip("ms") or 0) / 1000
    return got, top


def match(pattern, frames):
    pat = pattern.split(";")

    def go(i, j):
        if i == len(pat):
            return j == len(frames)
        if pat[i] == "*":
            return any(go(i + 1, k) for k in range(j, len(frames) + 1))
        if pat[i] == "[lost samples*]":
            return j < len(frames) and LOST_RE.match(frames[j]) is not None and go(i + 1, j + 1)
        return j < len(frames) and (frames[j] == pat[i] or fnmatch.fnmatchcase(frames[j], pat[i])) and go(i + 1, j + 1)

    return go(0, 0)


def show(samples, limit=12):
    for c, labels, frames in sorted(samples, key=lambda s: -s[0])[:limit]:
        print("  %5d %s  %s" % (c, ";".join(frames), " ".join("%s=%s" % kv for kv in sorted(labels.items()))))


def main():
    a = sys.argv[1:]
    path = a.pop(0)
    samples = traces(path)
    total = sum(c for c, _, _ in samples)
    only, ok = [], True
    i = 0
    while i < len(a):
        opt, val = a[i], a[i + 1] if i + 1 < len(a) else None
        i += 2
        if opt == "--samples-min":
            if total < int(val):
                print("FAIL: %d samples, expected at least %s" % (total, val))
                ok = False
        elif opt == "--value-min":
            typ, sec = val.split("=")
            top = pprof(["-top", "-unit=ms", "-sample_index=" + typ, path])
            m = re.search(r"of ([0-9.]+)ms total", top)
            got = float(m.group(1)) / 1000 if m else 0.0
            print("%s %.3f s sampled" % (typ, got))
            if got < float(sec):
                print(top[:600])
                print("FAIL: %.3f s of %s sampled, expected at least %s s" % (got, typ, sec))
                ok = False
        elif opt == "--lost":
            n = sum(c for c, _, f in samples if lost_cause(f) is not None)
            print("lost %d" % n)
            if n != int(val):
                print("FAIL: %d samples in [lost samples*], expected %s" % (n, val))
                show(samples)
                ok = False
        elif opt == "--lost-cause":
            cause, want = val.rsplit("=", 1)
            n = sum(c for c, _, f in samples if lost_cause(f) == cause)
            print("lost (%s) %d" % (cause, n))
            if n != int(want):
                print("FAIL: %d samples in [lost samples: %s], expected %s" % (n, cause, want))
                show(samples)
                ok = False
        elif opt == "--lost-value-min":
            typ, sec = val.split("=")
            got, top = lost_top(path, typ)
            print("lost %s %.3f s" % (typ, got))
            if got < float(sec):
                print(top[:600])
                print("FAIL: %.3f s of %s in [lost samples*], expected at least %s s" % (got, typ, sec))
                ok = False
        elif opt == "--lost-cause-value-min":
            cause, rest = val.rsplit(":", 1)
            typ, sec = rest.split("=")
            got, top = lost_top(path, typ, cause)
            print("lost (%s) %s %.3f s" % (cause, typ, got))
            if got < float(sec):
                print(top[:1200])
                print("FAIL: %.3f s of %s in [lost samples: %s], expected at least %s s" % (got, typ, cause, sec))
                ok = False
        elif opt == "--only":
            only.append(val)
        elif opt == "--expect":
            n = sum(c for c, _, f in samples if match(val, f))
            if not n:
                print("FAIL: no sample matches %s; the heaviest:" % val)
                show(samples)
                ok = False
        elif opt == "--never":
            x, y = val.split(";")
            bad = [s for s in samples if any(s[2][k] == x and s[2][k + 1] == y for k in range(len(s[2]) - 1))]
            if bad:
                print("FAIL: %s called by %s in %d samples:" % (y, x, sum(c for c, _, _ in bad)))
                show(bad)
                ok = False
        elif opt == "--share":
            func, rng = val.split("=")
            lo, hi = (float(x) for x in rng.split(":"))
            n = sum(c for c, _, f in samples if func in f)
            pct = 100.0 * n / total if total else 0
            print("share %s %.1f%%" % (func, pct))
            if not lo <= pct <= hi:
                print("FAIL: %s in %.1f%% of the samples, expected %s..%s" % (func, pct, lo, hi))
                ok = False
        elif opt == "--root-share":
            n = sum(c for c, _, f in samples if f and f[0] in ROOTS)
            unwound = total - sum(c for c, _, f in samples if lost_cause(f) is not None)
            pct = 100.0 * n / unwound if unwound else 0
            print("root %.2f%% (%d of %d)" % (pct, n, unwound))
            if pct < float(val):
                print("FAIL: %.2f%% of the samples reach a root, expected at least %s%%; those that do not:" % (pct, val))
                show([s for s in samples if (not s[2] or s[2][0] not in ROOTS) and lost_cause(s[2]) is None])
                ok = False
        elif opt == "--label":
            k, v = val.split("=", 1)
            if not any(fnmatch.fnmatchcase(l.get(k, ""), v) for _, l, _ in samples):
                print("FAIL: no sample has the label %s=%s; labels seen: %s" %
                      (k, v, sorted({"%s=%s" % kv for _, l, _ in samples for kv in l.items()})[:20]))
                ok = False
        elif opt == "--inline":
            if val not in INLINED:
                print("FAIL: %s is no inline frame; inline frames seen: %s" % (val, sorted(INLINED)[:20]))
                ok = False
        elif opt == "--mapping":
            mp, bid = val.split("=")
            raw = pprof(["-raw", path])
            maps = raw[raw.find("\nMappings"):]
            if not re.search(r"^\d+: \S+ %s %s " % (re.escape(mp), re.escape(bid)), maps, re.M):
                print(maps[:600])
                print("FAIL: no mapping of %s with build-id %s" % (mp, bid))
                ok = False
        elif opt == "--type":
            top = pprof(["-top", path])
            if not re.search(r"^Type: %s$" % re.escape(val), top, re.M):
                print(top[:400])
                print("FAIL: the profile's type is not %s" % val)
                ok = False
        else:
            sys.exit("prof-check.py: unknown option %s" % opt)
    if only:
        def allowed(frames):
            if any(match(p, frames) for p in only):
                return True
            # a sample in the PLT stub of the next call: the stack of that call's entry
            if frames and frames[-1].endswith("@plt"):
                return allowed(frames[:-1] + [frames[-1][:-len("@plt")]])
            return False
        bad = [s for s in samples if not allowed(s[2])]
        if bad:
            print("FAIL: %d of %d samples match none of %s:" % (sum(c for c, _, _ in bad), total, only))
            show(bad)
            ok = False
    if not ok:
        sys.exit(1)
    print("%s: %d samples, checks passed" % (os.path.basename(path), total))


main()
