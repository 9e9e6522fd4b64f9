#!/usr/bin/env python3
"""A C file of NFUN small functions, each with two inlined helpers: with -O2 -g a file of a few
MB (2,000 functions: 1.2 MB, most of it DWARF and symbols), read for seconds' worth of samples
spread over hundreds of functions. The shrink test rewrites the file built from it while it is
read.

    bigc.py NFUN > FILE.c      a program: main runs for argv[1] seconds (default 1)
    bigc.py NFUN lib > FILE.c  a library: big_run(seconds) does the same
"""
import sys

n = int(sys.argv[1])
lib = len(sys.argv) > 2 and sys.argv[2] == "lib"
out = ["#include <stdlib.h>", "#include <time.h>", "volatile unsigned long big_sink;"]
for i in range(n):
    out.append(f"static inline __attribute__((always_inline)) unsigned long h{i}(unsigned long x) "
               f"{{ return x * {2 * i + 1}u + (x >> {i % 13 + 1}); }}")
for i in range(n):
    out.append(f"__attribute__((noinline)) unsigned long f{i}(unsigned long x) "
               f"{{ for (int k = 0; k < 50; k++) x = h{i}(x) ^ h{(i + 1) % n}(x + k); return x; }}")
calls = " ".join(f"x = f{i}(x);" for i in range(0, n, 7))
out.append("void big_run(double secs) { struct timespec a, b; unsigned long x = 1; "
           "clock_gettime(CLOCK_MONOTONIC, &a); do { " + calls +
           " clock_gettime(CLOCK_MONOTONIC, &b); } while ((double)(b.tv_sec - a.tv_sec) + "
           "(double)(b.tv_nsec - a.tv_nsec) / 1e9 < secs); big_sink = x; }")
if not lib:
    out.append("int main(int argc, char **argv) { big_run(argc > 1 ? atof(argv[1]) : 1); return 0; }")
print("\n".join(out))
