/* SPDX-License-Identifier: MIT */
/* One function under three names (as identical code folding leaves them in C++ programs): perf
 * shows the global one with the longest name *as shown*, demangled without parameter lists.
 * _Z1aiiiiiiiii is the longest mangled name but shows as "a"; _Z5abcde shows as "abcde".
 * And a function exported under versions, as glibc's are (linked with a version script, see
 * tests/e2e/aliases.sh): the symbol table has vimpl (local) and vfunc@@VERS_2 (global) at one
 * address; perf shows vfunc@@VERS_2, unwound the same choice without its version, vfunc. */
#include <stdlib.h>

__attribute__((noinline)) static long h(long n)
{
	volatile long s = 0;
	for (long i = 0; i < n; i++)
		s += i * 7;
	return s;
}

long abcde(long) __asm__("_Z5abcde") __attribute__((alias("h")));
long a_ints(long) __asm__("_Z1aiiiiiiiii") __attribute__((alias("h")));

__attribute__((noinline, visibility("hidden"))) long vimpl(long n)
{
	volatile long s = 0;
	for (long i = 0; i < n; i++)
		s += i * 5;
	return s;
}
__asm__(".symver vimpl, vfunc@@VERS_2");

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000000, t = 0;
	for (int k = 0; k < 20; k++)
		t += a_ints(n) + vimpl(n / 2);
	return (int)(t & 1);
}
