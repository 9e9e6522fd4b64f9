#!/usr/bin/env python3
"""Writes synthetic perf.data streams (pipe mode) for reader tests: records in a chosen order,
so ordering, EXIT-before-SAMPLE and late records can be tested exactly.

usage: synth.py ordering|malformed|deferred|deferred-many|idle|lost|lost-only|bigperiod OUT
       synth.py mmap2-flag|mmap2-buildid ELF SYMBOL_ADDRESS OUT
"""
import os
import struct
import sys

PS_IP, PS_TID, PS_TIME, PS_CALLCHAIN, PS_CPU, PS_PERIOD = 1, 2, 4, 32, 128, 256
SAMPLE_TYPE = PS_IP | PS_TID | PS_TIME | PS_CPU | PS_PERIOD | PS_CALLCHAIN
CTX_KERNEL = (1 << 64) - 128
CTX_USER = (1 << 64) - 512
CTX_USER_DEFERRED = (1 << 64) - 640


def rec(rtype, body, misc=0):
    pad = (-len(body)) % 8
    body += b"\0" * pad
    return struct.pack("<IHH", rtype, misc, 8 + len(body)) + body


def attr(flags=0):
    a = bytearray(128)
    struct.pack_into("<IIQQQQQ", a, 0, 1, 128, 0, 4000, SAMPLE_TYPE, 0, (1 << 18) | flags)  # sample_id_all
    return rec(64, bytes(a) + struct.pack("<Q", 1))


def trailer(pid, tid, time, cpu=0):
    return struct.pack("<IIQII", pid, tid, time, cpu, 0)


def comm(pid, tid, name, time):
    return rec(3, struct.pack("<II", pid, tid) + name.encode() + b"\0" * (8 - len(name) % 8) + trailer(pid, tid, time))


def exit_(pid, tid, time):
    return rec(4, struct.pack("<IIIIQ", pid, 1, tid, 1, time) + trailer(pid, tid, time))


def sample(pid, tid, time, kaddr, period=1000):
    body = struct.pack("<QIIQIIQ", kaddr, pid, tid, time, 0, 0, period)
    body += struct.pack("<QQQ", 2, CTX_KERNEL, kaddr)
    return rec(9, body, misc=1)


def round_():
    return rec(68, b"")


def ordering():
    out = [attr(), comm(100, 100, "worker", 10),
           sample(100, 100, 30, 0xffffffff81000030), sample(100, 100, 20, 0xffffffff81000020), round_(),
           exit_(100, 100, 40), sample(100, 100, 35, 0xffffffff81000035), round_(),
           sample(200, 200, 50, 0xffffffff81000050), round_(),
           sample(100, 100, 25, 0xffffffff81000025), round_()]
    return b"PERFILE2" + struct.pack("<Q", 16) + b"".join(out)


def malformed():
    """Side-band records that cannot be applied, among good ones: an MMAP2 of length 0, an
    MMAP and a COMM and a FORK cut short (their bodies end before their fields), then samples."""
    t = trailer(100, 100, 5)
    mmap2_len0 = rec(10, struct.pack("<IIQQQIIQQII", 100, 100, 0x400000, 0, 0, 8, 1, 42, 0, 5, 2) + b"/bin/x\0" + t)
    mmap_cut = rec(1, struct.pack("<II", 100, 100) + t)
    comm_cut = rec(3, t)
    fork_cut = rec(7, struct.pack("<II", 101, 100) + t)
    out = [attr(), comm(100, 100, "worker", 1), mmap2_len0, mmap_cut, comm_cut, fork_cut,
           sample(100, 100, 10, 0xffffffff81000010), sample(100, 100, 11, 0xffffffff81000011), round_()]
    return b"PERFILE2" + struct.pack("<Q", 16) + b"".join(out)


def dsample(pid, tid, time, kaddr, cookie):
    """A sample taken in the kernel whose user part is deferred (Linux 6.19+): its callchain
    ends with PERF_CONTEXT_USER_DEFERRED and the cookie."""
    body = struct.pack("<QIIQIIQ", kaddr, pid, tid, time, 0, 0, 1000)
    body += struct.pack("<QQQQQ", 4, CTX_KERNEL, kaddr, CTX_USER_DEFERRED, cookie)
    return rec(9, body, misc=1)


def drecord(pid, tid, time, cookie, ips):
    """PERF_RECORD_CALLCHAIN_DEFERRED: {cookie, nr, ips (PERF_CONTEXT_USER first)}, sample_id."""
    ips = [CTX_USER] + ips
    return rec(22, struct.pack("<QQ", cookie, len(ips)) + b"".join(struct.pack("<Q", x) for x in ips) +
               trailer(pid, tid, time))


def deferred():
    """Deferred callchains as the kernel writes them. Thread 100: three samples share cookie 7
    (one stay in the kernel), its record comes, then a fourth sample with cookie 7 (taken on
    the way back to user space, after the record was written: no record of its own); cookie 8's
    record is lost; cookie 10's never comes (the end). Thread 200's record between them is no one else's. The last round marker empties
    the time-order queue before the end. The kernel address of each sample names it (k1..k8 =
    0xffffffff81000001..8); deferred.sh checks each sample's user part."""
    k = 0xffffffff81000000
    out = [attr(), comm(100, 100, "worker", 1), comm(200, 200, "other", 2),
           dsample(100, 100, 10, k + 1, 7), dsample(100, 100, 11, k + 2, 7), round_(),
           dsample(100, 100, 12, k + 3, 7), drecord(100, 100, 13, 7, [0x401000, 0x402000]),
           dsample(100, 100, 14, k + 4, 7), dsample(200, 200, 15, k + 8, 50), round_(),
           drecord(200, 200, 16, 50, [0x501000]),
           dsample(100, 100, 20, k + 5, 8), dsample(100, 100, 30, k + 6, 9),
           drecord(100, 100, 31, 9, [0x403000]), round_(),
           dsample(100, 100, 40, k + 7, 10), round_(), round_()]
    return b"PERFILE2" + struct.pack("<Q", 16) + b"".join(out)


def deferred_many():
    """70,000 deferred samples of 7 threads whose records never come (more than the reader
    holds at once), the queue empty at the end: every one is delivered with its kernel part."""
    out = [attr()]
    for i in range(70000):
        tid = 300 + i % 7
        out.append(dsample(tid, tid, 100 + i, 0xffffffff81000000 + 16 * (i % 1000), 1000 + i))
        if i % 1000 == 999:
            out.append(round_())
    out += [round_(), round_()]
    return b"PERFILE2" + struct.pack("<Q", 16) + b"".join(out)


def idle():
    """A sample of the idle task (pid and tid 0), which no COMM names, and one of a thread that
    has none either: perf calls the first swapper, the second :TID."""
    out = [attr(), sample(0, 0, 10, 0xffffffff81000010), sample(300, 301, 11, 0xffffffff81000011), round_()]
    return b"PERFILE2" + struct.pack("<Q", 16) + b"".join(out)


def bigperiod():
    """Two samples whose periods add up past 2^64 (a crafted file: perf's periods are far less)."""
    out = [attr(), comm(100, 100, "worker", 1), sample(100, 100, 10, 0xffffffff81000010, 1 << 63),
           sample(100, 100, 11, 0xffffffff81000011, (1 << 63) + 5), round_()]
    return b"PERFILE2" + struct.pack("<Q", 16) + b"".join(out)


def lost(with_samples=True):
    """Losses as perf record (6.0+) writes them: LOST records from the kernel (100 and 52 events)
    and, at the end, a LOST_SAMPLES record with the event's lost count (152: the same loss).
    lost-only: the LOST records alone (an older perf record)."""
    out = [attr(), comm(100, 100, "worker", 1), sample(100, 100, 10, 0xffffffff81000010),
           rec(2, struct.pack("<QQ", 1, 100) + trailer(100, 100, 11)),
           rec(2, struct.pack("<QQ", 1, 52) + trailer(100, 100, 12)),
           sample(100, 100, 13, 0xffffffff81000013)]
    if with_samples:
        out.append(rec(13, struct.pack("<Q", 152) + trailer(100, 100, 14)))
    out.append(round_())
    return b"PERFILE2" + struct.pack("<Q", 16) + b"".join(out)


def exec_segment(path):
    """(vaddr, offset, memsz) of an ELF file's executable PT_LOAD."""
    d = open(path, "rb").read()
    phoff, = struct.unpack_from("<Q", d, 32)
    phentsize, phnum = struct.unpack_from("<HH", d, 54)
    for i in range(phnum):
        ptype, pflags, off, vaddr, _, _, memsz = struct.unpack_from("<IIQQQQQ", d, phoff + i * phentsize)
        if ptype == 1 and pflags & 1:
            return vaddr, off, memsz
    raise SystemExit("synth.py: %s has no executable segment" % path)


def build_id(path):
    """The GNU build-id note's bytes (found by its name and type in the file)."""
    d = open(path, "rb").read()
    i = d.find(b"GNU\0")
    while i >= 12:
        namesz, descsz, ntype = struct.unpack_from("<III", d, i - 12)
        if namesz == 4 and ntype == 3 and descsz <= 20:
            return d[i + 4:i + 4 + descsz]
        i = d.find(b"GNU\0", i + 1)
    raise SystemExit("synth.py: %s has no build-id" % path)


def mmap2_flag(path, sym, with_build_id):
    """An MMAP2 record of an ELF file's code, then a user sample at SYM + 4 in it. mmap2-flag: the
    event did not ask for build-ids, yet the record has PERF_RECORD_MISC_MMAP_BUILD_ID over its
    device and inode (as Linux 6.18 writes it when another session's event has build_id);
    mmap2-buildid: the event asked, and the record carries the file's build-id."""
    vaddr, off, memsz = exec_segment(path)
    base = 0x555555554000
    start, pgoff = base + (vaddr & ~0xfff), off & ~0xfff
    length = (vaddr + memsz - (vaddr & ~0xfff) + 0xfff) & ~0xfff
    st = os.stat(path)
    if with_build_id:
        bid = build_id(path)
        ident = struct.pack("<B3x20s", len(bid), bid)
    else:
        ident = struct.pack("<IIQQ", os.major(st.st_dev), os.minor(st.st_dev), st.st_ino, 0)
    name = path.encode() + b"\0"
    name += b"\0" * ((-len(name)) % 8)
    mm = rec(10, struct.pack("<IIQQQ", 100, 100, start, length, pgoff) + ident +
             struct.pack("<II", 5, 2) + name + trailer(100, 100, 5), misc=2 | 1 << 14)
    ip = base + sym + 4
    body = struct.pack("<QIIQIIQ", ip, 100, 100, 10, 0, 0, 1000) + struct.pack("<QQQ", 2, CTX_USER, ip)
    out = [attr(1 << 34 if with_build_id else 0), comm(100, 100, "victim", 1), mm, rec(9, body, misc=2), round_()]
    return b"PERFILE2" + struct.pack("<Q", 16) + b"".join(out)


if __name__ == "__main__":
    if sys.argv[1].startswith("mmap2-"):
        data = mmap2_flag(sys.argv[2], int(sys.argv[3], 16), sys.argv[1] == "mmap2-buildid")
        open(sys.argv[4], "wb").write(data)
        sys.exit(0)
    data = {"ordering": ordering, "malformed": malformed, "deferred": deferred,
            "deferred-many": deferred_many, "idle": idle, "bigperiod": bigperiod,
            "lost": lost, "lost-only": lambda: lost(False)}[sys.argv[1]]()
    open(sys.argv[2], "wb").write(data)
