#!/usr/bin/env python3
"""Hostile perf.data suite: a recording made at test time (file mode, and pipe mode) is cut at
every record and section boundary and inside every record, given absurd sizes (callchain nr,
stack sizes, record sizes, section offsets and sizes past the end), and has its records put out
of order. Each variant is reported by unwound under a time limit and a memory cap.

Every run must end with status 0 or 1 (never a signal, a hang or an allocation over the cap),
and status 1 must come with a message. Where the right answer is known it is checked exactly:
a file cut at a record boundary yields exactly the samples before the cut; a file cut inside a
record yields those samples too, and an error naming the record's byte offset.

usage: hostile-perfdata.py UNWOUND FILE.data PIPE.data WORKDIR
"""
import os
import random
import resource
import struct
import subprocess
import sys

UNWOUND, FILE_DATA, PIPE_DATA, WORK = sys.argv[1:5]
PR_SAMPLE, PR_MMAP2, PR_COMM, PR_FINISHED_ROUND = 9, 10, 3, 68
PS_IP, PS_TID, PS_TIME, PS_ADDR, PS_ID, PS_STREAM_ID, PS_CPU, PS_PERIOD = 1, 2, 4, 8, 64, 512, 128, 256
PS_READ, PS_CALLCHAIN, PS_RAW, PS_BRANCH, PS_REGS_USER, PS_STACK_USER = 16, 32, 1024, 2048, 4096, 8192
PS_IDENTIFIER = 1 << 16

ASAN = b"libasan" in subprocess.run(["ldd", UNWOUND], capture_output=True).stdout
CAP = 1 << 30  # address space, except under AddressSanitizer (its shadow memory is reserved)
TIMEOUT = 20

failures = []
runs = 0


def limit():
    if not ASAN:
        resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))


def report(data, label, pipe=False, extra=()):
    """Runs unwound on data; returns (status, samples in the folded output, stderr)."""
    global runs
    runs += 1
    path = os.path.join(WORK, "v.data")
    with open(path, "wb") as f:
        f.write(data)
    args = [UNWOUND, "report", "--folded", "--kallsyms", "/dev/null", "-o", os.path.join(WORK, "out.txt")]
    args += list(extra)
    try:
        if pipe:
            with open(path, "rb") as inp:
                p = subprocess.run(args + ["-i", "-"], stdin=inp, capture_output=True, timeout=TIMEOUT,
                                   preexec_fn=limit)
        else:
            p = subprocess.run(args + ["-i", path], capture_output=True, timeout=TIMEOUT, preexec_fn=limit)
    except subprocess.TimeoutExpired:
        failures.append("%s: no result within %d s" % (label, TIMEOUT))
        return None, 0, ""
    err = p.stderr.decode(errors="replace")
    if p.returncode not in (0, 1):
        failures.append("%s: exit status %d: %s" % (label, p.returncode, err.strip()[-300:]))
        return p.returncode, 0, err
    if p.returncode == 1 and "unwound report: " not in err:
        failures.append("%s: error without a message: %s" % (label, err.strip()[-300:]))
    if "AddressSanitizer" in err or "runtime error" in err or "LeakSanitizer" in err:
        failures.append("%s: sanitizer report: %s" % (label, err.strip()[-500:]))
    n = 0
    try:
        with open(os.path.join(WORK, "out.txt")) as f:
            for line in f:
                n += int(line.rsplit(" ", 1)[1])
    except (OSError, ValueError, IndexError):
        pass
    return p.returncode, n, err


def records(data, start, end):
    """(offset, type, size) of each record in data[start:end]."""
    out = []
    pos = start
    while pos + 8 <= end:
        rtype, _, size = struct.unpack_from("<IHH", data, pos)
        if size < 8 or pos + size > end:
            break
        out.append((pos, rtype, size))
        pos += size
    return out


def file_layout(data):
    """Header fields and the sections of a file-mode recording."""
    magic, hsize, attr_size = struct.unpack_from("<QQQ", data, 0)
    attrs_off, attrs_size, data_off, data_size = struct.unpack_from("<QQQQ", data, 24)
    feat = struct.unpack_from("<4Q", data, 72)
    sections = [(0, hsize), (attrs_off, attrs_size), (data_off, data_size)]
    for i in range(attrs_size // attr_size):
        ids_off, ids_size = struct.unpack_from("<QQ", data, attrs_off + (i + 1) * attr_size - 16)
        sections.append((ids_off, ids_size))
    fpos = data_off + data_size
    nfeat = sum(bin(w).count("1") for w in feat)
    sections.append((fpos, 16 * nfeat))
    for k in range(nfeat):
        off, size = struct.unpack_from("<QQ", data, fpos + 16 * k)
        sections.append((off, size))
    return dict(attr_size=attr_size, attrs_off=attrs_off, attrs_size=attrs_size, data_off=data_off,
                data_size=data_size, sections=sections, feat_off=fpos, nfeat=nfeat)


def sample_type_of(data, layout):
    a = layout["attrs_off"]
    return struct.unpack_from("<Q", data, a + 24)[0], struct.unpack_from("<Q", data, a + 80)[0]


def sample_fields(st, regs_mask):
    """Offsets (from the record start) of the callchain nr and the user stack size of a sample of
    this type, as functions of the record; None when absent."""
    def layout(rec):
        p = 8
        if st & PS_IDENTIFIER:
            p += 8
        for bit, n in ((PS_IP, 8), (PS_TID, 8), (PS_TIME, 8), (PS_ADDR, 8), (PS_ID, 8), (PS_STREAM_ID, 8),
                       (PS_CPU, 8), (PS_PERIOD, 8)):
            if st & bit:
                p += n
        if st & PS_READ:
            return None
        got = {}
        if st & PS_CALLCHAIN:
            got["nr"] = p
            nr = struct.unpack_from("<Q", rec, p)[0]
            p += 8 + 8 * nr
        if st & PS_RAW:
            sz = struct.unpack_from("<I", rec, p)[0]
            p += 4 + sz
        if st & PS_BRANCH:
            return got
        if st & PS_REGS_USER:
            got["abi"] = p
            abi = struct.unpack_from("<Q", rec, p)[0]
            p += 8 + (8 * bin(regs_mask).count("1") if abi else 0)
        if st & PS_STACK_USER:
            got["stack"] = p
            sz = struct.unpack_from("<Q", rec, p)[0]
            if sz:
                got["dyn"] = p + 8 + sz
        return got
    return layout


def count_samples(data, recs):
    return sum(1 for (_, t, _) in recs if t == PR_SAMPLE)


def patched(data, off, fmt, value):
    d = bytearray(data)
    struct.pack_into(fmt, d, off, value)
    return bytes(d)


def check_cut(data, cut, want, label, pipe=False, mid_record_at=None):
    rc, n, err = report(data[:cut], label, pipe=pipe)
    if rc is None or rc > 1:
        return
    if n != want:
        failures.append("%s: %d samples out, %d expected (those before the cut)" % (label, n, want))
    if mid_record_at is not None:
        if rc != 1 or ("offset %d" % mid_record_at) not in err:
            failures.append("%s: a cut inside the record at %d is not reported with its offset: %s"
                            % (label, mid_record_at, err.strip()[-200:]))


def file_suite():
    data = open(FILE_DATA, "rb").read()
    lay = file_layout(data)
    recs = records(data, lay["data_off"], lay["data_off"] + lay["data_size"])
    total = count_samples(data, recs)
    rc, n, err = report(data, "file: intact")
    if rc != 0 or n != total:
        failures.append("file: intact: status %s, %d samples of %d" % (rc, n, total))
    # every record boundary, and inside every record (after its header, and half-way)
    before = 0
    for i, (off, rtype, size) in enumerate(recs):
        check_cut(data, off, before, "file: cut before record %d at %d" % (i, off))
        for inside in sorted({off + 4, off + 8, off + size // 2}):
            if off < inside < off + size:
                check_cut(data, inside, before, "file: cut inside record %d at %d" % (i, inside),
                          mid_record_at=off)
        if rtype == PR_SAMPLE:
            before += 1
    # every section boundary (header, attributes, id lists, data, feature table, each feature)
    for (off, size) in lay["sections"]:
        for cut in (off, off + size, off + size // 2):
            if 0 <= cut < len(data):
                rc, n, _ = report(data[:cut], "file: cut at section boundary %d" % cut)
                if rc == 0 and cut < lay["data_off"]:
                    failures.append("file: cut at %d, before the data, was accepted" % cut)
    # absurd header values
    H = [("attr_size 0", 16, "<Q", 0), ("attr_size huge", 16, "<Q", 1 << 62),
         ("attr_size 1", 16, "<Q", 1), ("attrs offset past the end", 24, "<Q", len(data) + 4096),
         ("attrs size huge", 32, "<Q", (1 << 64) - 8), ("data offset past the end", 40, "<Q", 1 << 60),
         ("data size huge", 48, "<Q", (1 << 64) - 1), ("data offset odd", 40, "<Q", lay["data_off"] + 3),
         ("header size huge", 8, "<Q", 1 << 40), ("all feature bits", 72, "<Q", (1 << 64) - 1)]
    for (what, off, fmt, v) in H:
        report(patched(data, off, fmt, v), "file: header %s" % what)
    # feature sections pointing past the end or claiming absurd sizes
    fpos = lay["feat_off"]
    for k in range(lay["nfeat"]):
        at = fpos + 16 * k
        if at + 16 > len(data):
            break
        report(patched(data, at, "<Q", (1 << 63) + 5), "file: feature %d offset past the end" % k)
        report(patched(data, at + 8, "<Q", (1 << 64) - 1), "file: feature %d size huge" % k)
        report(patched(data, at + 8, "<Q", 3), "file: feature %d size 3" % k)
    # event attribute: its own size field, and its id list
    a = lay["attrs_off"]
    for (what, off, fmt, v) in [("attr.size 0", a + 4, "<I", 0), ("attr.size huge", a + 4, "<I", 0xfffffff0),
                                ("sample_type all bits", a + 24, "<Q", (1 << 64) - 1),
                                ("regs mask all bits", a + 80, "<Q", (1 << 64) - 1),
                                ("stack size huge", a + 88, "<I", 0xffffffff),
                                ("ids offset past the end", a + lay["attr_size"] - 16, "<Q", 1 << 50),
                                ("ids size huge", a + lay["attr_size"] - 8, "<Q", 1 << 60)]:
        report(patched(data, off, fmt, v), "file: %s" % what)
    # absurd sizes inside records: callchain nr, stack size and dynamic size, register ABI,
    # record size; on the first samples and on every 7th record
    st, regs_mask = sample_type_of(data, lay)
    fields = sample_fields(st, regs_mask)
    samples = [(o, s) for (o, t, s) in recs if t == PR_SAMPLE]
    for j, (off, size) in enumerate(samples[:3] + samples[3::max(1, len(samples) // 6)]):
        f = fields(data[off:off + size])
        if not f:
            continue
        for v in (0xffffffffffffffff, 1 << 32, 1 << 20, 65536, 8191, 1):
            report(patched(data, off + f["nr"], "<Q", v), "file: sample %d callchain nr %#x" % (j, v))
        if "stack" in f:
            for v in (0xffffffffffffffff, 1 << 40, 65536, 7, 0):
                report(patched(data, off + f["stack"], "<Q", v), "file: sample %d stack size %#x" % (j, v))
        if "dyn" in f:
            for v in (0xffffffffffffffff, 1 << 33, 0):
                report(patched(data, off + f["dyn"], "<Q", v), "file: sample %d dyn_size %#x" % (j, v))
        if "abi" in f:
            for v in (0xffffffffffffffff, 7, 0):
                report(patched(data, off + f["abi"], "<Q", v), "file: sample %d regs abi %#x" % (j, v))
    for j, (off, rtype, size) in enumerate(recs[::7]):
        for v in (0, 7, 9, 0xfff8, size - 8 if size > 16 else 8):
            report(patched(data, off + 6, "<H", v), "file: record at %d (type %d) size %d" % (off, rtype, v))
        report(patched(data, off, "<I", 0x7fffffff), "file: record at %d type unknown" % off)
    # out of order: records shuffled, reversed, side-band after the samples, rounds removed,
    # everything twice
    head, body = data[:lay["data_off"]], [data[o:o + s] for (o, _, s) in recs]
    tail = data[lay["data_off"] + lay["data_size"]:]

    def rebuilt(parts, label):
        b = b"".join(parts)
        d = bytearray(head + b + tail)
        struct.pack_into("<Q", d, 48, len(b))
        # feature section offsets move with the data's new size
        delta = len(b) - lay["data_size"]
        fp = lay["data_off"] + len(b)
        for k in range(lay["nfeat"]):
            o = struct.unpack_from("<Q", d, fp + 16 * k)[0]
            struct.pack_into("<Q", d, fp + 16 * k, o + delta)
        rc, n, _ = report(bytes(d), label)
        want = sum(1 for r in parts if struct.unpack_from("<I", r, 0)[0] == PR_SAMPLE)
        if rc != 0 or n != want:
            failures.append("%s: status %s, %d samples of %d" % (label, rc, n, want))
        return rc, n
    rng = random.Random(5)
    for k in range(4):
        parts = body[:]
        rng.shuffle(parts)
        rebuilt(parts, "file: records shuffled (%d)" % k)
    rebuilt(body[::-1], "file: records reversed")
    side = [r for r in body if struct.unpack_from("<I", r, 0)[0] != PR_SAMPLE]
    smp = [r for r in body if struct.unpack_from("<I", r, 0)[0] == PR_SAMPLE]
    rebuilt(smp + side, "file: side-band after the samples")
    rebuilt([r for r in body if struct.unpack_from("<I", r, 0)[0] != PR_FINISHED_ROUND], "file: no rounds")
    rebuilt(body + body, "file: every record twice")
    # bit flips everywhere, deterministic
    for k in range(40):
        d = bytearray(data)
        for _ in range(rng.randint(1, 16)):
            p = rng.randrange(len(d))
            d[p] ^= 1 << rng.randrange(8)
        report(bytes(d), "file: bit flips (%d)" % k)
    return len(recs), total


def pipe_suite():
    data = open(PIPE_DATA, "rb").read()
    recs = records(data, 16, len(data))
    total = count_samples(data, recs)
    rc, n, _ = report(data, "pipe: intact", pipe=True)
    if rc != 0 or n != total:
        failures.append("pipe: intact: status %s, %d samples of %d" % (rc, n, total))
    before = 0
    for i, (off, rtype, size) in enumerate(recs):
        check_cut(data, off, before, "pipe: cut before record %d at %d" % (i, off), pipe=True)
        inside = off + size // 2
        if off < inside:
            rc, n, err = report(data[:inside], "pipe: cut inside record %d" % i, pipe=True)
            if rc == 0:
                failures.append("pipe: cut inside record %d at %d accepted without an error" % (i, inside))
            elif rc == 1 and n != before:
                failures.append("pipe: cut inside record %d: %d samples out, %d expected" % (i, n, before))
        if rtype == PR_SAMPLE:
            before += 1
    for k in range(0, len(recs), 5):
        off, rtype, size = recs[k]
        for v in (0, 7, 0xfff8):
            report(patched(data, off + 6, "<H", v), "pipe: record %d size %d" % (k, v), pipe=True)
    rng = random.Random(9)
    for k in range(20):
        d = bytearray(data)
        for _ in range(rng.randint(1, 16)):
            p = rng.randrange(len(d))
            d[p] ^= 1 << rng.randrange(8)
        report(bytes(d), "pipe: bit flips (%d)" % k, pipe=True)
    return len(recs), total


nf, sf = file_suite()
np_, sp = pipe_suite()
for f in failures[:40]:
    print("FAIL: " + f)
print("hostile perf.data: %d runs (file: %d records, %d samples; pipe: %d records, %d samples), %d failures"
      % (runs, nf, sf, np_, sp, len(failures)))
sys.exit(1 if failures else 0)
