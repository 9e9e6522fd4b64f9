/* SPDX-License-Identifier: MIT */
/*
 * A deep stack of small frames: main recurses DEPTH levels through a function of a few bytes of
 * frame (built without frame pointers: CFI walks it) and computes at the bottom until the thread
 * has run SECONDS of CPU, then returns. 400 levels take about 6 KiB of stack (16 bytes a level with GCC -O2): a 16 KiB stack copy
 * holds them, and unwinders that keep 256 frames do not reach main.
 *
 *   deepsmall DEPTH SECONDS
 *   _start -> __libc_start_main -> main -> down x DEPTH -> bottom
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noipa)) /* no inlining, cloning or IPA: exact stacks */

volatile unsigned long sink;
static double budget;

/* The calling thread's CPU time (s) */
static double thread_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

NOINLINE unsigned long bottom(void)
{
	unsigned long x = 1;
	while (thread_cpu() < budget)
		for (int i = 0; i < 100000; i++) {
			x = x * 6364136223846793005ul + 1442695040888963407ul;
			sink = x;
		}
	return x;
}

NOINLINE unsigned long down(int depth)
{
	unsigned long r = depth <= 1 ? bottom() : down(depth - 1);
	return r + (unsigned long)depth; /* (a use after the call: no tail call) */
}

int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 400;
	budget = argc > 2 ? atof(argv[2]) : 1.0;
	if (depth < 1 || depth > 100000 || !(budget > 0)) {
		fprintf(stderr, "usage: deepsmall DEPTH SECONDS\n");
		return 2;
	}
	sink += down(depth);
	return 0;
}
