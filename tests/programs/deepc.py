#!/usr/bin/env python3
"""A C file that keeps a compiler's stack deep: NFUN functions, one in three with DEPTH nested
if-blocks (the parser and the passes that walk the dominator tree recurse per level), the rest
shallow. Compiling it gives samples of every depth around a 16 KiB stack copy.

    deepc.py DEPTH NFUN > FILE.c
"""
import sys

depth = int(sys.argv[1])
nfun = int(sys.argv[2])
out = ["int g(int);"]
for f in range(nfun):
    d = depth if f % 3 == 0 else 3
    body = "int r = x;\n"
    for i in range(d):
        body += "  " * i + f"if (g(x + {i}) > {i}) {{ r += g(r * {i + 1});\n"
    body += "  " * d + "r ^= g(r);\n"
    for i in range(d - 1, -1, -1):
        body += "  " * i + "}\n"
    out.append(f"int f{f}(int x) {{\n{body} return r; }}")
print("\n".join(out))
