#!/usr/bin/env python3
# Copies of one shared library, each with a build-id of its own (tests/e2e/kernel-manylib.sh):
#   manylib-copies.py LIB.so DIR N  ->  DIR/libmany0.so .. DIR/libmany{N-1}.so
# (the note's bytes replaced by a hash of the copy's number: faster than N compilations)
import hashlib, os, struct, sys

lib, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
d = bytearray(open(lib, 'rb').read())
shoff, = struct.unpack_from('<Q', d, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from('<HHH', d, 0x3a)
sh = lambda i: struct.unpack_from('<IIQQQQIIQQ', d, shoff + i * shentsize)
stroff = sh(shstrndx)[4]
at = None
for i in range(shnum):
    s = sh(i)
    if d[stroff + s[0]:d.index(0, stroff + s[0])] == b'.note.gnu.build-id':
        namesz, descsz = struct.unpack_from('<II', d, s[4])
        at, size = s[4] + 12 + ((namesz + 3) & ~3), descsz
if at is None:
    sys.exit('no build-id note in ' + lib)
os.makedirs(out, exist_ok=True)
for k in range(n):
    d[at:at + size] = hashlib.sha1(b'manylib %d' % k).digest()[:size]
    with open(os.path.join(out, 'libmany%d.so' % k), 'wb') as f:
        f.write(d)
