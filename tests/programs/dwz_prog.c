/* SPDX-License-Identifier: MIT */
/* Built twice (work_a, work_b) for the dwz test: the inline functions of dwz_common.h are
 * duplicated in both debug files, so dwz -m moves them to the supplementary file. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "dwz_common.h"

__attribute__((noinline)) double work_a(double x, long n)
{
	return inner_loop(x, n);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1;
	struct point p = { 1, 2 };
	double x = p.x;
	struct timespec t0, t;
	/* SECS of CPU time, not of the clock: the same work on a busy machine */
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	do {
		x = work_a(x, 100000);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	printf("%f\n", x);
	return 0;
}
