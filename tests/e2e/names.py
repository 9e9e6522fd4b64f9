#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Hostile names in every output of `unwound report` (tests/e2e/names.sh).

    names.py make PROGRAM PATCHED DATA   the program with its functions uw_hostile_N_... renamed
                                         (same length) to NAMES, and a recording (pipe mode) of
                                         samples in them by threads named COMMS
    names.py check WORKDIR               the outputs names.sh wrote there, checked
"""
import gzip
import json
import os
import re
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import synth  # noqa: E402

LEN = 24
NAMES = [b"<!--<script>x", b"a;b;c", b"line\nbreak\r\tz", b"sur\xed\xa0\x80rogate", b"over\xc0\xaflong\xe0\x80\xaf",
         b"big\xf4\x90\x80\x80\xff\xfe", b"</script><b>\"\\", b"ls\xe2\x80\xa8ps\xe2\x80\xa9"]
NAMES = [n + b"_" * (LEN - len(n)) for n in NAMES]
COMMS = {100: b"<!--<scr;\n\xed\xa0\x80", 200: b"a;b c"}
# (thread, function) of each sample
SAMPLES = [(100, i) for i in range(len(NAMES))] + [(200, 1)]


def symbols(path):
    out = subprocess.run(["nm", path], capture_output=True, text=True, check=True).stdout
    return {f[2]: int(f[0], 16) for f in (l.split() for l in out.splitlines()) if len(f) == 3}


def make(program, patched, data):
    syms = symbols(program)
    d = open(program, "rb").read()
    for i, name in enumerate(NAMES):
        ph = b"uw_hostile_%d_xxxxxxxxxxx" % i
        assert len(ph) == LEN and d.count(ph + b"\0") == 1, ph
        d = d.replace(ph + b"\0", name + b"\0")
    open(patched, "wb").write(d)
    os.chmod(patched, 0o755)
    vaddr, off, memsz = synth.exec_segment(patched)
    base = 0x555555554000
    start, pgoff = base + (vaddr & ~0xfff), off & ~0xfff
    length = (vaddr + memsz - (vaddr & ~0xfff) + 0xfff) & ~0xfff
    path = os.path.abspath(patched).encode() + b"\0"
    path += b"\0" * ((-len(path)) % 8)
    out = [synth.attr()]
    for tid, comm in COMMS.items():
        c = comm + b"\0" * (8 - len(comm) % 8)
        out.append(synth.rec(3, struct.pack("<II", tid, tid) + c + synth.trailer(tid, tid, 1)))
        out.append(synth.rec(10, struct.pack("<IIQQQIIQQII", tid, tid, start, length, pgoff, 0, 0, 0, 0, 5, 2) +
                             path + synth.trailer(tid, tid, 2), misc=2))
    ret = base + syms["main"] + 8  # a return address in main
    for t, (tid, i) in enumerate(SAMPLES):
        ip = base + syms["uw_hostile_%d_xxxxxxxxxxx" % i] + 1
        body = struct.pack("<QIIQIIQ", ip, tid, tid, 10 + t, 0, 0, 1000)
        body += struct.pack("<QQQQ", 3, synth.CTX_USER, ip, ret)
        out.append(synth.rec(9, body, misc=2))
    out.append(synth.round_())
    open(data, "wb").write(b"PERFILE2" + struct.pack("<Q", 16) + b"".join(out))


FAIL = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        FAIL.append(what)


def text(b, folded):
    """A name as the text outputs write it: control characters as '?', with folded ';' as ':'."""
    out = bytearray()
    for c in b:
        out += b":" if folded and c == 0x3B else b"?" if c < 0x20 or c == 0x7F else bytes([c])
    return bytes(out)


def folded(w):
    lines = open(f"{w}/folded.txt", "rb").read().split(b"\n")
    check(lines[-1] == b"", "folded: ends with a line break")
    lines = lines[:-1]
    # flamegraph.pl's parse of a line: the stack, blanks, the count
    rx = re.compile(rb"^(.*)\s+?(\d+(?:\.\d*)?)$")
    got = set()
    for ln in lines:
        m = rx.match(ln)
        check(bool(m), "folded: a stack and its count: %r" % ln)
        if m:
            frames = m.group(1).split(b";")
            check(len(frames) == 3, "folded: comm;main;function (3 fields): %r" % ln)
            got.add(ln)
    want = {text(COMMS[tid], True) + b";main;" + text(NAMES[i], True) + b" 1" for tid, i in SAMPLES}
    check(got == want and len(lines) == len(want), "folded: the %d lines expected (missing %r, extra %r)"
          % (len(want), sorted(want - got), sorted(got - want)))


def script(w):
    blocks = open(f"{w}/script.txt", "rb").read().split(b"\n\n")
    check(blocks[-1] == b"", "script: ends with an empty line")
    blocks = blocks[:-1]
    check(len(blocks) == len(SAMPLES), "script: %d samples (%d)" % (len(SAMPLES), len(blocks)))
    got = set()
    for b in blocks:
        lines = b.split(b"\n")
        ok = len(lines) == 3 and not lines[0].startswith(b"\t") and all(l.startswith(b"\t") for l in lines[1:])
        check(ok, "script: a header line and two frame lines: %r" % b)
        h = re.match(rb"^(.*?) +(\d+) ", lines[0])
        f = re.match(rb"^\t +[0-9a-f]+ (.*)\+0x1 \(", lines[1]) if ok else None
        if h and f:
            got.add((int(h.group(2)), h.group(1), f.group(1)))
    want = {(tid, text(COMMS[tid], False), text(NAMES[i], False)) for tid, i in SAMPLES}
    check(got == want, "script: each sample's thread and function (missing %r, extra %r)"
          % (sorted(want - got), sorted(got - want)))


def table(w):
    for ln in open(f"{w}/table.txt", "rb").read().split(b"\n"):
        if ln.startswith(b"#") or not ln.strip():
            continue
        check(re.match(rb"^ +\d+\.\d\d% ", ln) is not None, "table: a row: %r" % ln)


def json_file(path):
    raw = open(path, "rb").read()
    try:
        return json.loads(raw.decode("utf-8", errors="strict")), raw
    except (UnicodeDecodeError, ValueError) as e:
        check(False, "%s: valid JSON in valid UTF-8: %s" % (path, e))
        return None, raw


def decoded(b):
    return b.decode("utf-8", errors="replace")


def speedscope(w):
    d, _ = json_file(f"{w}/speedscope.json")
    if d is None:
        return
    names = {f["name"] for f in d["shared"]["frames"]}
    for n in NAMES:
        check(decoded(n) in names, "speedscope: frame %r" % decoded(n))
    profiles = " ".join(p["name"] for p in d["profiles"])
    for c in COMMS.values():
        check(decoded(c) in profiles, "speedscope: thread %r" % decoded(c))


def html(w):
    raw = open(f"{w}/flame.html", "rb").read()
    m = re.search(rb'<script type="application/json" id="uwdata">(.*?)</script>', raw, re.S)
    check(m is not None, "html: the data's script element ends where the data does")
    if not m:
        return
    check(b"<" not in m.group(1), "html: no '<' in the data (a name cannot open a comment or a script)")
    try:
        d = json.loads(m.group(1).decode("utf-8", errors="strict"))
    except (UnicodeDecodeError, ValueError) as e:
        check(False, "html: the data is valid JSON in valid UTF-8: %s" % e)
        return
    names = {f[0] for f in d["frames"]}
    for n in NAMES:
        check(decoded(n) in names, "html: frame %r" % decoded(n))
    threads = {t[2] for t in d["threads"]}
    for c in COMMS.values():
        check(decoded(c) in threads, "html: thread %r" % decoded(c))
    json.dump({"pages": [{"name": "hostile", "file": f"{w}/flame.html", "thread_text": decoded(COMMS[100]),
                          "frames": [decoded(n) for n in NAMES]}]}, open(f"{w}/expect.json", "w"))


def pb_fields(b):
    """(field, wire type, value) of a protobuf message's top level."""
    i = 0

    def varint():
        nonlocal i
        v = s = 0
        while True:
            c = b[i]
            i += 1
            v |= (c & 0x7F) << s
            s += 7
            if c < 0x80:
                return v
    while i < len(b):
        k = varint()
        f, t = k >> 3, k & 7
        if t == 0:
            yield f, t, varint()
        elif t == 2:
            n = varint()
            yield f, t, b[i:i + n]
            i += n
        else:
            raise ValueError("wire type %d" % t)


def pprof(w):
    b = gzip.decompress(open(f"{w}/profile.pb.gz", "rb").read())
    strs = [v for f, t, v in pb_fields(b) if f == 6]
    bad = []
    for s in strs:
        try:
            s.decode("utf-8", errors="strict")
        except UnicodeDecodeError:
            bad.append(s)
    check(not bad, "pprof: every string is UTF-8 (%r)" % bad[:3])
    for n in NAMES:
        check(decoded(n).encode() in strs, "pprof: function %r" % decoded(n))
    top = open(f"{w}/top.txt", "rb").read()
    check(b"Type: samples" in top, "pprof: go tool pprof -top reads it")


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(*sys.argv[2:5])
        sys.exit(0)
    w = sys.argv[2]
    for f in (folded, script, table, speedscope, html, pprof):
        f(w)
    if FAIL:
        print("%d checks failed" % len(FAIL))
        sys.exit(1)
