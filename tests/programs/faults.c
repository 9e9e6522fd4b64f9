/* SPDX-License-Identifier: MIT */
/*
 * Page faults at two rates, for frequency-mode recordings whose periods vary: fast_faults
 * touches fresh pages as quickly as it can, slow_faults one page every few hundred
 * microseconds. Sampled with `-e page-faults -F N`, the kernel's period adapts to each rate, so
 * shares by period and shares by sample count differ widely.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

/* the CPU time this thread has had: the same faults on a busy machine as on an idle one */
static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static char *fresh(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

__attribute__((noinline)) void fast_faults(size_t pages)
{
	char *p = fresh(pages * 4096);
	if (!p)
		exit(1);
	for (size_t i = 0; i < pages; i++)
		p[i * 4096] = 1;
	munmap(p, pages * 4096);
}

__attribute__((noinline)) void slow_faults(double seconds)
{
	size_t pages = 65536;
	char *p = fresh(pages * 4096);
	if (!p)
		exit(1);
	double end = now() + seconds;
	for (size_t i = 0; now() < end; i = (i + 1) % pages) {
		p[i * 4096] = 1;
		double until = now() + 200e-6;
		while (now() < until)
			;
	}
	munmap(p, pages * 4096);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 0.5;
	for (int round = 0; round < 4; round++) {
		fast_faults(16384);
		slow_faults(seconds / 4);
	}
	return 0;
}
