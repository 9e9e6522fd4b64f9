#!/usr/bin/env python3
"""Writes corrupted copies of an ELF file, one per kind of hostile input unwound must survive:
unsorted or out-of-bounds .eh_frame_hdr tables, a cyclic CIE pointer, sections past the end or
overlapping others, a compressed section announcing a terabyte, a header claiming 65535
sections, and a file cut in half. usage: hostile-elf.py ELF OUTDIR -> prints the variant names"""
import os
import struct
import sys


def sections(b):
    shoff, = struct.unpack_from("<Q", b, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x3A)
    out = []
    for i in range(shnum):
        o = shoff + i * shentsize
        name, typ, flags, addr, off, size, link, info, align, entsize = struct.unpack_from("<IIQQQQIIQQ", b, o)
        out.append(dict(i=i, hdr=o, name=name, type=typ, flags=flags, addr=addr, off=off, size=size))
    stro = out[shstrndx]["off"]
    for s in out:
        end = b.index(b"\0", stro + s["name"])
        s["sname"] = b[stro + s["name"]:end].decode()
    return out


def find(secs, name):
    return next(s for s in secs if s["sname"] == name)


def main():
    src, outdir = sys.argv[1], sys.argv[2]
    orig = open(src, "rb").read()
    secs = sections(orig)
    variants = {}

    # .eh_frame_hdr: version, eh_frame_ptr_enc, fde_count_enc, table_enc, then the pointers and
    # the table of (initial location, FDE address) pairs, 4 bytes each with datarel|sdata4
    hdr = find(secs, ".eh_frame_hdr")
    count, = struct.unpack_from("<i", orig, hdr["off"] + 8)
    table = hdr["off"] + 12
    b = bytearray(orig)
    pairs = [struct.unpack_from("<ii", orig, table + 8 * k) for k in range(count)]
    for k, p in enumerate(reversed(pairs)):
        struct.pack_into("<ii", b, table + 8 * k, *p)
    variants["hdr-unsorted"] = b
    b = bytearray(orig)
    for k in range(count):
        struct.pack_into("<i", b, table + 8 * k + 4, 0x7FFFFFF0 - k)
    variants["hdr-out-of-bounds"] = b
    b = bytearray(orig)
    struct.pack_into("<i", b, hdr["off"] + 8, 0x7FFFFFFF)  # absurd FDE count
    variants["hdr-huge-count"] = b

    # .eh_frame: the first FDE's CIE pointer pointing at the FDE itself (a cycle)
    eh = find(secs, ".eh_frame")
    b = bytearray(orig)
    o = eh["off"]
    cielen, = struct.unpack_from("<I", orig, o)
    fde = o + 4 + cielen
    struct.pack_into("<I", b, fde + 4, 4)  # CIE pointer = this FDE's own start
    variants["cie-cycle"] = b
    b = bytearray(orig)
    struct.pack_into("<I", b, o, 0xFFFFFFF0)  # a CIE length past the end of the section
    variants["cie-length"] = b

    # section headers: .symtab past the end of the file; .eh_frame overlapping .text
    b = bytearray(orig)
    st = next((s for s in secs if s["sname"] in (".symtab", ".dynsym")), None)
    struct.pack_into("<Q", b, st["hdr"] + 0x18, len(orig) + 4096)
    variants["symtab-past-end"] = b
    b = bytearray(orig)
    text = find(secs, ".text")
    struct.pack_into("<Q", b, eh["hdr"] + 0x18, text["off"])
    struct.pack_into("<Q", b, eh["hdr"] + 0x20, text["size"] * 4)
    variants["eh-frame-overlap"] = b

    # a compressed .debug_info announcing a terabyte (a decompression bomb), when there is one
    di = next((s for s in secs if s["sname"] == ".debug_info"), None)
    if di:
        b = bytearray(orig)
        struct.pack_into("<Q", b, di["hdr"] + 8, di["flags"] | 0x800)  # SHF_COMPRESSED
        struct.pack_into("<IIQQ", b, di["off"], 1, 0, 1 << 40, 1)       # zlib, 1 TiB
        variants["debug-info-bomb"] = b

    # the header: 65535 sections at an offset past the end; and the file cut in half
    b = bytearray(orig)
    struct.pack_into("<H", b, 0x3C, 0xFFFF)
    struct.pack_into("<Q", b, 0x28, len(orig) - 64)
    variants["shnum-huge"] = b
    variants["truncated"] = bytearray(orig[: len(orig) // 2])

    for name, data in variants.items():
        os.makedirs(os.path.join(outdir, name), exist_ok=True)
        with open(os.path.join(outdir, name, "file"), "wb") as f:
            f.write(data)
        print(name)


if __name__ == "__main__":
    main()
