#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Kernel symbol files of "another machine", made from this machine's /proc/kallsyms, for tests.

  kernel-files.py kallsyms IN OUT PREFIX SHIFT
        IN's lines with every name PREFIXed and every address moved by SHIFT (hex, may be
        negative): another kernel's kallsyms, loaded elsewhere (KASLR)
  kernel-files.py vmlinux IN OUT PREFIX BUILDID
        a vmlinux as far as symbols go: an ELF file whose .symtab holds IN's kernel image text
        symbols (lines without a module) as functions, PREFIXed, sized to the next one; .text
        (no bytes) starts at _text; a GNU build-id note BUILDID (hex)
"""
import struct
import sys


def kallsyms_lines(path):
    for line in open(path):
        parts = line.rstrip('\n').split(None, 2)
        if len(parts) == 3:
            yield int(parts[0], 16), parts[1], parts[2]


def shifted(src, dst, prefix, shift):
    with open(dst, 'w') as out:
        for addr, t, rest in kallsyms_lines(src):
            a = (addr + shift) & (2**64 - 1) if addr else 0
            out.write('%016x %s %s%s\n' % (a, t, '' if rest == '_text' else prefix, rest))


def vmlinux(src, dst, prefix, bid):
    syms, text = [], None
    for addr, t, rest in kallsyms_lines(src):
        if '\t' in rest or not addr:
            continue  # a module's, or hidden
        if rest == '_text':
            text = addr
        if t in 'tTwW':
            syms.append((addr, prefix + rest))
    if text is None:
        raise SystemExit('no _text in ' + src)
    syms.sort()
    end = syms[-1][0] + 4096
    strtab = bytearray(b'\0')
    symtab = bytearray(24)  # the null symbol
    for i, (addr, name) in enumerate(syms):
        nxt = syms[i + 1][0] if i + 1 < len(syms) else end
        off = len(strtab)
        strtab += name.encode() + b'\0'
        # st_name, st_info (GLOBAL FUNC), st_other, st_shndx (.text), st_value, st_size
        symtab += struct.pack('<IBBHQQ', off, 0x12, 0, 1, addr, max(nxt - addr, 0))
    note = struct.pack('<III', 4, len(bid), 3) + b'GNU\0' + bid
    shstr = bytearray(b'\0')
    names = {}
    for n in ('.text', '.note.gnu.build-id', '.symtab', '.strtab', '.shstrtab'):
        names[n] = len(shstr)
        shstr += n.encode() + b'\0'
    body = bytearray(64)
    offs = {}
    for n, data in (('.note.gnu.build-id', note), ('.symtab', symtab), ('.strtab', strtab), ('.shstrtab', shstr)):
        while len(body) % 8:
            body.append(0)
        offs[n] = len(body)
        body += data
    while len(body) % 8:
        body.append(0)
    shoff = len(body)

    def sh(name, stype, flags, addr, off, size, link=0, info=0, align=1, entsize=0):
        return struct.pack('<IIQQQQIIQQ', names[name] if name else 0, stype, flags, addr, off, size, link, info, align,
                           entsize)
    body += bytes(64)
    body += sh('.text', 8, 6, text, 64, end - text, align=16)  # SHT_NOBITS, ALLOC|EXEC
    body += sh('.note.gnu.build-id', 7, 2, 0, offs['.note.gnu.build-id'], len(note), align=4)
    body += sh('.symtab', 2, 0, 0, offs['.symtab'], len(symtab), link=4, info=1, align=8, entsize=24)
    body += sh('.strtab', 3, 0, 0, offs['.strtab'], len(strtab))
    body += sh('.shstrtab', 3, 0, 0, offs['.shstrtab'], len(shstr))
    ident = b'\x7fELF' + bytes([2, 1, 1, 0]) + bytes(8)
    # e_type EXEC, e_machine x86-64, e_version, e_entry, e_phoff, e_shoff, e_flags, e_ehsize,
    # e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx
    body[0:64] = ident + struct.pack('<HHIQQQIHHHHHH', 2, 62, 1, text, 0, shoff, 0, 64, 56, 0, 64, 6, 5)
    open(dst, 'wb').write(body)


def main():
    if len(sys.argv) != 6:
        raise SystemExit(__doc__)
    cmd, src, dst, prefix, arg = sys.argv[1:]
    if cmd == 'kallsyms':
        shifted(src, dst, prefix, int(arg, 16))
    elif cmd == 'vmlinux':
        vmlinux(src, dst, prefix, bytes.fromhex(arg))
    else:
        raise SystemExit(__doc__)


if __name__ == '__main__':
    main()
