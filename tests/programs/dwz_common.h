/* SPDX-License-Identifier: MIT */
/* Inline functions shared by the two programs of the dwz test. */
static inline __attribute__((always_inline)) double mix(double x, int i)
{
	return x * 1.0000001 + (double)(i % 7);
}

static inline __attribute__((always_inline)) double inner_loop(double x, long n)
{
	for (long i = 0; i < n; i++)
		x = mix(x, (int)i);
	return x;
}

struct point {
	double x, y;
};
