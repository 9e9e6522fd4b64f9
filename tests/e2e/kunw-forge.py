#!/usr/bin/env python3
# A forged kernel unwinding table (tests/e2e/cache-trust.sh), as anyone who can write a cache
# entry can make one: VICTIM's entry (lib/kernel/kunw_cache.c: its header names the victim's
# file and the build's sources) given the rows of DONOR's entry, and the hash of the words
# recomputed (FNV-1a and a final mix: base_hash_bytes, no secret). Written over VICTIM.
#   kunw-forge.py VICTIM.kunw1 DONOR.kunw1
import struct, sys

H = 216      # struct kc_hdr: magic 8, sources 72, 2 x elfv_ident 40, 2 headers hashes, 8 counts, hash
COUNTS = 176 # nwords, nrows, nrules, nblocks, nfallback, nplt, nsignal, nsframe (u32)
M = (1 << 64) - 1

def hash_bytes(b):
    h = 0xcbf29ce484222325
    for c in b:
        h = ((h ^ c) * 0x100000001b3) & M
    x = h ^ len(b)
    x ^= x >> 33; x = (x * 0xff51afd7ed558ccd) & M
    x ^= x >> 33; x = (x * 0xc4ceb9fe1a85ec53) & M
    x ^= x >> 33
    return x

victim, donor = (open(p, 'rb').read() for p in sys.argv[1:3])
nwords, = struct.unpack_from('<I', donor, COUNTS)
assert len(donor) == H + 8 * nwords, 'unexpected layout'
words = donor[H:]
forged = victim[:COUNTS] + donor[COUNTS:H - 8] + struct.pack('<Q', hash_bytes(words)) + words
open(sys.argv[1], 'wb').write(forged)
