/* SPDX-License-Identifier: MIT */
/*
 * Many threads busy on the CPU at once (bench/copy-load.py, tests/e2e/copy-load.sh): a recorder
 * whose rings are read by a starved thread loses samples here.
 *
 *   busy N MS   N threads, each spinning in busy_leaf (under busy_mid, busy_top) until its own
 *               CPU time reaches MS ms (CLOCK_THREAD_CPUTIME_ID: a fixed amount of work however
 *               much CPU it gets), then the process exits.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;
static long budget_ns;

static long thread_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

__attribute__((noipa)) void busy_leaf(void)
{
	unsigned long x = sink;
	for (unsigned i = 0; i < 20000; i++)
		x = x * 6364136223846793005ul + i;
	sink = x;
}

__attribute__((noipa)) void busy_mid(long end)
{
	while (thread_ns() < end)
		busy_leaf();
}

__attribute__((noipa)) void *busy_top(void *arg)
{
	(void)arg;
	busy_mid(thread_ns() + budget_ns);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: busy THREADS MS\n");
		return 2;
	}
	int n = atoi(argv[1]);
	budget_ns = atol(argv[2]) * 1000000L;
	if (n < 1 || n > 10000 || budget_ns <= 0) {
		fprintf(stderr, "busy: bad arguments\n");
		return 2;
	}
	pthread_t *t = calloc((size_t)n, sizeof(*t));
	if (!t)
		return 1;
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, busy_top, NULL)) {
			fprintf(stderr, "busy: pthread_create failed at %d\n", i);
			return 1;
		}
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	free(t);
	return 0;
}
