#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""perf.data files taken apart and put together again, for tests (file mode, little-endian).

  perfdata.py types FILE              record counts by type, "TYPE COUNT" per line
  perfdata.py features FILE           the feature bits set, one per line
  perfdata.py decompress IN OUT       IN with every COMPRESSED record replaced by the records it
                                      holds (the zstd stream through the `zstd` program)
  perfdata.py v1 IN OUT               IN with the first format's header: magic "PERFFILE" and a
                                      72-byte header without the feature bitmap
  perfdata.py undir DIR OUT           a directory recording (perf record --threads, no -z) as one
                                      file: DIR/data's records, then each DIR/data.N's in the order
                                      of N, without the directory format feature
  perfdata.py unfinished IN OUT       IN as a writer killed before its end leaves it: no
                                      features, the data size 0
  perfdata.py noids IN OUT            IN with no event ids in its attribute section (one event)
  perfdata.py kernel IN OUT BUILDID RELEASE [TEXT]
                                      IN as if recorded on another machine's kernel: the build-id
                                      the file gives for [kernel.kallsyms] (its build-id table,
                                      MMAP2 records carrying one) set to BUILDID (hex), or taken
                                      out ("-"), the OS release (HEADER_OSRELEASE) RELEASE, and
                                      with TEXT (hex) the kernel map's _text (its pgoff)
"""
import struct
import sys


def header(d):
    magic, size, attr_size, ao, asz, do, dsz = struct.unpack_from('<8sQQQQQQ', d, 0)
    feat = struct.unpack_from('<4Q', d, 72)
    return dict(magic=magic, size=size, attr_size=attr_size, attrs=(ao, asz), data=(do, dsz), feat=feat)


def records(d, off, size):
    pos = off
    while pos + 8 <= off + size:
        t, m, s = struct.unpack_from('<IHH', d, pos)
        if s < 8:
            raise SystemExit('bad record at %d' % pos)
        yield pos, t, d[pos:pos + s]
        pos += s


def feature_sections(d, h):
    bits = [b for b in range(256) if h['feat'][b // 64] >> (b % 64) & 1]
    pos = h['data'][0] + h['data'][1]
    out = []
    for b in bits:
        off, size = struct.unpack_from('<QQ', d, pos)
        pos += 16
        out.append((b, d[off:off + size]))
    return out


def write(path, d, h, data, feats, magic=None, hsize=None):
    """The header and attributes of d, then data, then the feature sections feats."""
    do = h['data'][0]
    out = bytearray(d[:do])
    struct.pack_into('<Q', out, 48, len(data))
    bits = [0, 0, 0, 0]
    for b, _ in feats:
        bits[b // 64] |= 1 << (b % 64)
    struct.pack_into('<4Q', out, 72, *bits)
    if magic:
        out[0:8] = magic
    if hsize:
        struct.pack_into('<Q', out, 8, hsize)
    out += data
    at = len(out) + 16 * len(feats)
    for _, body in feats:
        out += struct.pack('<QQ', at, len(body))
        at += len(body)
    for _, body in feats:
        out += body
    open(path, 'wb').write(out)


FEAT_BUILD_ID, FEAT_OSRELEASE = 2, 4
MISC_MMAP_BUILD_ID = 1 << 14


def kernel_build_ids(body, bid):
    """A build-id table with the kernel's entry given bid (bytes), or left out (None)."""
    out, pos = bytearray(), 0
    while pos + 8 <= len(body):
        t, misc, size = struct.unpack_from('<IHH', body, pos)
        if size < 8 or pos + size > len(body):
            break
        e = bytearray(body[pos:pos + size])
        pos += size
        name = bytes(e[36:]).split(b'\0')[0]
        if name == b'[kernel.kallsyms]':
            if bid is None:
                continue
            e[12:36] = bid.ljust(24, b'\0')
            e[32] = len(bid)
            struct.pack_into('<H', e, 4, misc | 1 << 15)  # PERF_RECORD_MISC_BUILD_ID_SIZE
        out += e
    return bytes(out)


def perf_string(s):
    """perf's string in a feature section: u32 length (padded to 64, NUL included), the bytes."""
    b = s.encode() + b'\0'
    b = b.ljust((len(b) + 63) // 64 * 64, b'\0')
    return struct.pack('<I', len(b)) + b


def kernel_mmaps(data, bid, text=None):
    """The records with MMAP2s of the kernel that carry a build-id given bid, or none; with text,
    the kernel map's pgoff (its _text) that."""
    out = bytearray()
    for _, t, rec in records(data, 0, len(data)):
        rec = bytearray(rec)
        misc = struct.unpack_from('<H', rec, 4)[0]
        name_at = 40 if t == 1 else 72
        if text is not None and t in (1, 10) and rec[name_at:].startswith(b'[kernel.kallsyms]'):
            struct.pack_into('<Q', rec, 32, text)
        if t == 10 and misc & MISC_MMAP_BUILD_ID and rec[72:].startswith(b'[kernel.kallsyms]'):
            if bid is None:  # maj/min/ino/generation of nothing
                struct.pack_into('<H', rec, 4, misc & ~MISC_MMAP_BUILD_ID)
                rec[40:64] = bytes(24)
            else:
                rec[40] = len(bid)
                rec[44:64] = bid.ljust(20, b'\0')
        out += rec
    return bytes(out)


def zstd_stream(data):
    """Everything a zstd stream decompresses to, its frame ended or not (libzstd, by ctypes)."""
    import ctypes

    class Buf(ctypes.Structure):
        _fields_ = [("ptr", ctypes.c_void_p), ("size", ctypes.c_size_t), ("pos", ctypes.c_size_t)]
    z = ctypes.CDLL("libzstd.so.1")
    z.ZSTD_createDStream.restype = ctypes.c_void_p
    z.ZSTD_initDStream.argtypes = [ctypes.c_void_p]
    z.ZSTD_freeDStream.argtypes = [ctypes.c_void_p]
    z.ZSTD_decompressStream.restype = ctypes.c_size_t
    z.ZSTD_decompressStream.argtypes = [ctypes.c_void_p, ctypes.POINTER(Buf), ctypes.POINTER(Buf)]
    z.ZSTD_isError.argtypes = [ctypes.c_size_t]
    ds = z.ZSTD_createDStream()
    z.ZSTD_initDStream(ds)
    src = ctypes.create_string_buffer(data, len(data))
    inb = Buf(ctypes.cast(src, ctypes.c_void_p), len(data), 0)
    cap = 1 << 20
    obuf = ctypes.create_string_buffer(cap)
    out = bytearray()
    while True:
        ob = Buf(ctypes.cast(obuf, ctypes.c_void_p), cap, 0)
        r = z.ZSTD_decompressStream(ds, ctypes.byref(ob), ctypes.byref(inb))
        if z.ZSTD_isError(r):
            raise SystemExit('the zstd stream does not decompress')
        out += obuf.raw[:ob.pos]
        if inb.pos == inb.size and ob.pos < cap:
            break
    z.ZSTD_freeDStream(ds)
    return bytes(out)


def main():
    cmd, path = sys.argv[1], sys.argv[2]
    if cmd == 'undir':
        import os
        d = open(os.path.join(path, 'data'), 'rb').read()
        h = header(d)
        do, dsz = h['data']
        data = bytearray(d[do:do + dsz])
        parts = sorted((int(n[5:]), n) for n in os.listdir(path) if n.startswith('data.') and n[5:].isdigit())
        for _, n in parts:
            data += open(os.path.join(path, n), 'rb').read()
        write(sys.argv[3], d, h, data, [(b, body) for b, body in feature_sections(d, h) if b != 24])
        return
    d = open(path, 'rb').read()
    h = header(d)
    if cmd == 'types':
        counts = {}
        for _, t, _ in records(d, *h['data']):
            counts[t] = counts.get(t, 0) + 1
        for t in sorted(counts):
            print(t, counts[t])
    elif cmd == 'features':
        for b, _ in feature_sections(d, h):
            print(b)
    elif cmd == 'decompress':
        stream, parts = bytearray(), []
        for _, t, rec in records(d, *h['data']):
            if t == 81:
                stream += rec[8:]
                parts.append(None)
            elif t == 83:
                n = struct.unpack_from('<Q', rec, 8)[0]
                stream += rec[16:16 + n]
                parts.append(None)
            else:
                parts.append(rec)
        # perf flushes the stream without ever ending its frame: decompressed as a stream (the
        # zstd command, told "premature end", dropped its last output block: a record cut short)
        plain = zstd_stream(bytes(stream))
        if not plain:
            raise SystemExit('zstd decompressed nothing')
        data, done = bytearray(), False
        for p in parts:
            if p is None:
                if not done:
                    data += plain  # the records in the order the stream holds them
                    done = True
            else:
                data += p
        feats = [(b, body) for b, body in feature_sections(d, h) if b != 27]
        write(sys.argv[3], d, h, data, feats)
    elif cmd == 'v1':
        # that format's readers know attributes up to PERF_ATTR_SIZE_VER4 (104 bytes): each is cut
        # to it in place (what follows is not needed to read samples)
        do, dsz = h['data']
        ao, asz = h['attrs']
        entry = h['attr_size']
        n = asz // entry
        d = bytearray(d)
        attrs = bytearray()
        for i in range(n):
            e = d[ao + i * entry:ao + (i + 1) * entry]
            a = bytearray(e[:104])
            struct.pack_into('<I', a, 4, 104)
            attrs += a + e[entry - 16:]
        d[ao:ao + len(attrs)] = attrs
        struct.pack_into('<QQQ', d, 16, 104 + 16, ao, len(attrs))
        h = header(d)
        write(sys.argv[3], d, h, d[do:do + dsz], [], magic=b'PERFFILE', hsize=72)
    elif cmd == 'noids':
        ao, asz = h['attrs']
        entry = h['attr_size']
        d = bytearray(d)
        for i in range(asz // entry):
            struct.pack_into('<QQ', d, ao + (i + 1) * entry - 16, 0, 0)
        open(sys.argv[3], 'wb').write(d)
    elif cmd == 'kernel':
        bid = None if sys.argv[4] == '-' else bytes.fromhex(sys.argv[4])
        do, dsz = h['data']
        feats = []
        for b, body in feature_sections(d, h):
            if b == FEAT_BUILD_ID:
                body = kernel_build_ids(body, bid)
            elif b == FEAT_OSRELEASE:
                body = perf_string(sys.argv[5])
            feats.append((b, body))
        text = int(sys.argv[6], 16) if len(sys.argv) > 6 else None
        write(sys.argv[3], d, h, kernel_mmaps(d[do:do + dsz], bid, text), feats)
    elif cmd == 'unfinished':
        do, dsz = h['data']
        out = bytearray(d[:do + dsz])
        struct.pack_into('<Q', out, 48, 0)
        struct.pack_into('<4Q', out, 72, 0, 0, 0, 0)
        open(sys.argv[3], 'wb').write(out)
    else:
        raise SystemExit(__doc__)


if __name__ == '__main__':
    main()
