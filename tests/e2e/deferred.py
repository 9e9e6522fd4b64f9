#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Deferred user callchains (Linux 6.19+) synthesized from a real frame-pointer recording.

    deferred.py IN OUT MISSING

IN: a file-mode perf.data from `perf record --call-graph fp`. OUT: the same recording as a 6.19
kernel with attr.defer_callchain writes it: each sample's user part replaced by
PERF_CONTEXT_USER_DEFERRED and a cookie, and given in a PERF_RECORD_CALLCHAIN_DEFERRED record
{cookie, nr, ips, sample_id} of its thread, after the sample. Consecutive samples of a thread with
the same user stack share a cookie (up to three: one stay in the kernel); records come late (after
0, 1, 3 or 7 other records); every other record starts its ips with PERF_CONTEXT_USER, as the
kernel writes them, the rest without; every 13th record is left out. MISSING lists the samples
("TID TIME") whose record was left out: they must come out with their kernel part alone.
"""
import struct
import sys

import perfdata  # (tests/e2e)

PC_USER = (1 << 64) - 512
PC_USER_DEFERRED = (1 << 64) - 640
PC_MAX = (1 << 64) - 4095
PS = dict(IP=1, TID=2, TIME=4, ADDR=8, READ=16, CALLCHAIN=32, ID=64, CPU=128, PERIOD=256, STREAM_ID=512,
          IDENTIFIER=1 << 16)
DEFER_BITS = (1 << 38) | (1 << 39)  # defer_callchain, defer_output


def attrs(d, h):
    ao, asz = h['attrs']
    step = h['attr_size']
    out = []
    for off in range(ao, ao + asz, step):
        sample_type, = struct.unpack_from('<Q', d, off + 24)
        flags, = struct.unpack_from('<Q', d, off + 40)
        out.append((off, sample_type, flags))
    return out


def chain_at(st, body):
    """Offset in a sample's body of its callchain's nr field."""
    off = 0
    for name in ('IDENTIFIER', 'IP', 'TID', 'TIME', 'ADDR', 'ID', 'STREAM_ID', 'CPU', 'PERIOD'):
        if st & PS[name]:
            off += 8
    if st & PS['READ']:
        raise SystemExit('deferred.py: samples with READ are not handled')
    return off


def sample_fields(st, body):
    off = 0
    f = {}
    if st & PS['IDENTIFIER']:
        off += 8
    if st & PS['IP']:
        off += 8
    if st & PS['TID']:
        f['pid'], f['tid'] = struct.unpack_from('<II', body, off)
        off += 8
    if st & PS['TIME']:
        f['time'], = struct.unpack_from('<Q', body, off)
        off += 8
    if st & PS['ADDR']:
        off += 8
    if st & PS['ID']:
        f['id'], = struct.unpack_from('<Q', body, off)
        off += 8
    if st & PS['STREAM_ID']:
        f['stream_id'], = struct.unpack_from('<Q', body, off)
        off += 8
    if st & PS['CPU']:
        f['cpu'], = struct.unpack_from('<I', body, off)
        off += 8
    return f


def sample_id(st, f, time):
    """The sample_id trailer of a non-sample record, for these fields."""
    out = b''
    if st & PS['TID']:
        out += struct.pack('<II', f['pid'], f['tid'])
    if st & PS['TIME']:
        out += struct.pack('<Q', time)
    if st & PS['ID']:
        out += struct.pack('<Q', f.get('id', 0))
    if st & PS['STREAM_ID']:
        out += struct.pack('<Q', f.get('stream_id', 0))
    if st & PS['CPU']:
        out += struct.pack('<II', f.get('cpu', 0), 0)
    if st & PS['IDENTIFIER']:
        out += struct.pack('<Q', f.get('id', 0))
    return out


def main():
    src, dst, missing_path = sys.argv[1:4]
    d = bytearray(open(src, 'rb').read())
    h = perfdata.header(d)
    al = attrs(d, h)
    sts = {st for _, st, _ in al}
    if len(sts) != 1:
        raise SystemExit('deferred.py: events with different sample types')
    st = sts.pop()
    if not st & PS['CALLCHAIN'] or not st & PS['TID'] or not st & PS['TIME']:
        raise SystemExit('deferred.py: the samples need CALLCHAIN, TID and TIME')
    for off, _, flags in al:
        struct.pack_into('<Q', d, off + 40, flags | DEFER_BITS)
    out = bytearray()
    open_group = {}     # tid -> [cookie, user ips, count, fields, last time]
    due = []            # [records to wait, record bytes]
    missing = []
    groups = 0
    cookie = 1000
    lags = [0, 1, 3, 7]

    def close(tid):
        nonlocal groups
        g = open_group.pop(tid, None)
        if not g:
            return
        groups += 1
        ck, user, n, f, last, samples = g
        if groups % 13 == 0:
            missing.extend(samples)
            return
        ips = ([PC_USER] if groups % 2 else []) + user
        body = struct.pack('<QQ', ck, len(ips)) + b''.join(struct.pack('<Q', x) for x in ips)
        body += sample_id(st, f, last + 1)
        due.append([lags[groups % 4], struct.pack('<IHH', 22, 0, 8 + len(body)) + body])

    def tick():
        for e in due:
            e[0] -= 1
        for e in [e for e in due if e[0] < 0]:
            out.extend(e[1])
            due.remove(e)

    do, dsz = h['data']
    for pos, t, r in perfdata.records(d, do, dsz):
        if t != 9:
            out.extend(r)
            tick()
            continue
        body = r[8:]
        f = sample_fields(st, body)
        co = chain_at(st, body)
        nr, = struct.unpack_from('<Q', body, co)
        ips = list(struct.unpack_from('<%dQ' % nr, body, co + 8))
        if PC_USER not in ips:
            out.extend(r)  # no user part: as it was
            tick()
            continue
        u = ips.index(PC_USER)
        kernel, user = ips[:u], ips[u + 1:]
        tid = f['tid']
        g = open_group.get(tid)
        if not g or g[1] != user or g[2] >= 3:
            close(tid)
            cookie += 1
            g = open_group[tid] = [cookie, user, 0, f, 0, []]
        g[2] += 1
        # the record follows every sample of its group, as the kernel's return to user space
        # does: after the latest of them (a thread that moved to another CPU may have a sample
        # stamped a little earlier than the one before it)
        g[4] = max(g[4], f['time'])
        g[5].append((tid, f['time']))
        new = kernel + [PC_USER_DEFERRED, g[0]]
        nb = body[:co] + struct.pack('<Q', len(new)) + b''.join(struct.pack('<Q', x) for x in new) + \
            body[co + 8 + 8 * nr:]
        out.extend(struct.pack('<IHH', 9, struct.unpack_from('<H', r, 4)[0], 8 + len(nb)) + nb)
        tick()
    for tid in list(open_group):
        close(tid)
    for e in due:
        out.extend(e[1])
    perfdata.write(dst, d, h, bytes(out), perfdata.feature_sections(d, h))
    with open(missing_path, 'w') as f:
        for tid, time in missing:
            f.write('%d %d\n' % (tid, time))
    print('deferred: %d groups, %d records left out (%d samples)' % (groups, groups // 13, len(missing)))


if __name__ == '__main__':
    main()
