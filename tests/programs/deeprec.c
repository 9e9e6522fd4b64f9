/* SPDX-License-Identifier: MIT */
/*
 * A deep stack, as interpreters, parsers and compilers' recursive passes have: two threads (main
 * and one more) each recurse DEPTH levels through frames of about 1 KiB and spin at the bottom,
 * for ever (a safety deadline of 10 minutes ends it). Built without frame pointers and without
 * SFrame: only CFI walks it, and no stack copy perf can make holds it.
 *
 *   deeprec DEPTH
 *   main thread:  _start -> __libc_start_main -> main -> recurse x DEPTH -> spin
 *   other thread: clone3 -> start_thread -> worker -> recurse x DEPTH -> spin
 *
 * Prints "ready" once both threads spin, so a profiler can load what it needs first.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noipa)) /* no inlining, cloning or IPA: exact stacks */

volatile unsigned long sink;
static atomic_int spinning;

NOINLINE unsigned long spin(void)
{
	if (atomic_fetch_add(&spinning, 1) == 1) {
		printf("ready\n");
		fflush(stdout);
	}
	time_t end = time(NULL) + 600;
	unsigned long x = 1;
	for (unsigned long i = 1;; i++) {
		x = x * 6364136223846793005ul + 1442695040888963407ul;
		sink = x;
		if (!(i & ((1ul << 24) - 1)) && time(NULL) > end)
			exit(3);
	}
	return x;
}

NOINLINE unsigned long recurse(int depth, const volatile char *parent)
{
	volatile char buf[1000];
	buf[0] = (char)depth;
	buf[depth % 1000] = parent ? parent[0] : 0;
	unsigned long r = depth <= 1 ? spin() : recurse(depth - 1, buf);
	return r + buf[depth % 1000]; /* (a use after the call: no tail call) */
}

NOINLINE void *worker(void *arg)
{
	sink += recurse((int)(long)arg, NULL);
	return NULL;
}

int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 200;
	if (depth < 1 || depth > 5000) {
		fprintf(stderr, "deeprec: DEPTH from 1 to 5000\n");
		return 2;
	}
	pthread_t t;
	if (pthread_create(&t, NULL, worker, (void *)(long)depth)) {
		fprintf(stderr, "deeprec: pthread_create failed\n");
		return 1;
	}
	sink += recurse(depth, NULL);
	return 0;
}
