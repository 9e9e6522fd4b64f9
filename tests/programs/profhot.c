/* SPDX-License-Identifier: MIT */
/* A hot library for the dlopen case of tests/e2e/prof.sh, built twice: libprofhot_a.so defines
 * hot_a, libprofhot_b.so hot_b (HOT names the function); alike, so that b is usually mapped
 * where a was before it was closed. */
#ifndef HOT
#error HOT must name the function
#endif
volatile unsigned long hot_sink;

__attribute__((noipa)) int HOT(int n)
{
	unsigned long s = 0;
	for (int i = 0; i < n; i++)
		s += (unsigned long)i * (unsigned long)i ^ (s >> 3);
	hot_sink += s;
	return (int)(s & 1);
}
