#!/usr/bin/env python3
"""Writes synthetic perf.data streams (pipe mode) for reader tests: records in a chosen order,
so ordering, EXIT-before-SAMPLE and late records can be tested exactly.

usage: synth.py ordering|malformed OUT
"""
import struct
import sys

PS_IP, PS_TID, PS_TIME, PS_CALLCHAIN, PS_CPU, PS_PERIOD = 1, 2, 4, 32, 128, 256
SAMPLE_TYPE = PS_IP | PS_TID | PS_TIME | PS_CPU | PS_PERIOD | PS_CALLCHAIN
CTX_KERNEL = (1 << 64) - 128


def rec(rtype, body, misc=0):
    pad = (-len(body)) % 8
    body += b"\0" * pad
    return struct.pack("<IHH", rtype, misc, 8 + len(body)) + body


def attr():
    a = bytearray(128)
    struct.pack_into("<IIQQQQQ", a, 0, 1, 128, 0, 4000, SAMPLE_TYPE, 0, (1 << 18))  # sample_id_all
    return rec(64, bytes(a) + struct.pack("<Q", 1))


def trailer(pid, tid, time, cpu=0):
    return struct.pack("<IIQII", pid, tid, time, cpu, 0)


def comm(pid, tid, name, time):
    return rec(3, struct.pack("<II", pid, tid) + name.encode() + b"\0" * (8 - len(name) % 8) + trailer(pid, tid, time))


def exit_(pid, tid, time):
    return rec(4, struct.pack("<IIIIQ", pid, 1, tid, 1, time) + trailer(pid, tid, time))


def sample(pid, tid, time, kaddr):
    body = struct.pack("<QIIQIIQ", kaddr, pid, tid, time, 0, 0, 1000)
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


if __name__ == "__main__":
    data = {"ordering": ordering, "malformed": malformed}[sys.argv[1]]()
    open(sys.argv[2], "wb").write(data)
