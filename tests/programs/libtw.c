/* SPDX-License-Identifier: MIT */
/* Shared library for the e2e program: lib_entry -> lib_inner -> spin_lib, and a call back
 * into the executable. */
#define NOINLINE __attribute__((noipa)) /* no inlining, cloning or IPA: exact stacks */

volatile unsigned long lib_sink;

NOINLINE int spin_lib(int n)
{
	unsigned long s = 0;
	for (int i = 0; i < n; i++)
		s += (unsigned long)i * 7 ^ (s >> 5);
	lib_sink += s;
	return (int)(s & 1);
}

NOINLINE int lib_inner(int n, int (*cb)(int))
{
	int r = spin_lib(n);
	r += cb(n / 2);
	lib_sink += (unsigned long)r;
	return r;
}

NOINLINE int lib_entry(int n, int (*cb)(int))
{
	int r = lib_inner(n, cb) + 1;
	lib_sink += (unsigned long)r;
	return r;
}
