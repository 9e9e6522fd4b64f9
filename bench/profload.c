/* SPDX-License-Identifier: MIT */
/*
 * The workload of bench/prof: a fixed amount of work (never a time: a profiler's overhead shows
 * as more time and CPU for the same work), built without frame pointers, on two threads (main
 * and worker_main), with a known call tree:
 *
 *   run -> tree_a -> mid_a -> spin         about 30%
 *       -> tree_b -> spin                  about 10%
 *       -> sort_work -> qsort -> cmp_u32   about 12%  (libc calling back into the program)
 *       -> deep x40 -> spin                about 23%  (a deeper stack)
 *       -> alloc_work -> malloc, memset, free   about 24%
 *
 *   profload ROUNDS      (each thread does ROUNDS rounds; about 0.4 ms of CPU per round)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noipa))

static _Thread_local volatile unsigned long sink;

NOINLINE int spin(int n)
{
	unsigned long s = 0;
	for (int i = 0; i < n; i++)
		s += (unsigned long)i * (unsigned long)i ^ (s >> 3);
	sink += s;
	return (int)(s & 1);
}

NOINLINE int mid_a(int n) { return spin(n) + 1; }
NOINLINE int tree_a(int n) { return mid_a(n) + 1; }
NOINLINE int tree_b(int n) { return spin(n) + 2; }

NOINLINE int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

NOINLINE void sort_work(uint32_t *v, int n, uint32_t seed)
{
	for (int i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		v[i] = seed;
	}
	qsort(v, (size_t)n, sizeof(*v), cmp_u32);
	sink += v[n / 2];
}

NOINLINE int deep(int depth, int n)
{
	int r = depth ? deep(depth - 1, n) + 1 : spin(n);
	sink += (unsigned long)r; /* (not a tail call) */
	return r;
}

NOINLINE void alloc_work(int n)
{
	for (int i = 0; i < n; i++) {
		size_t size = 64 + (size_t)((i * 7919) % 8192);
		char *p = malloc(size);
		if (!p)
			abort();
		memset(p, i, size);
		sink += (unsigned long)p[size / 2];
		free(p);
	}
}

NOINLINE void run(long rounds, uint32_t seed)
{
	uint32_t *v = malloc(4096 * sizeof(*v));
	if (!v)
		abort();
	for (long r = 0; r < rounds; r++) {
		tree_a(120000);
		tree_b(60000);
		sort_work(v, 1024, seed + (uint32_t)r);
		deep(40, 80000);
		alloc_work(2000);
	}
	free(v);
}

static long rounds;

NOINLINE void *worker_main(void *arg)
{
	run(rounds, (uint32_t)(uintptr_t)arg);
	return NULL;
}

int main(int argc, char **argv)
{
	rounds = argc > 1 ? atol(argv[1]) : 1000;
	pthread_t t;
	if (pthread_create(&t, NULL, worker_main, (void *)7))
		return 1;
	run(rounds, 1);
	pthread_join(t, NULL);
	printf("profload %lu\n", sink & 1);
	return 0;
}
