/* SPDX-License-Identifier: MIT */
/*
 * A program using many small shared libraries at once (tests/e2e/kernel-manylib.sh: the kernel
 * unwinder's tables of 2,000 modules kept in the cache directory). Built with -DMANYLIB_LIB it
 * is the library, copied N times by the test with a build-id of its own each; else
 * `manylib DIR N SECONDS` loads DIR/libmany0.so .. libmanyN-1.so and calls each in turn for
 * SECONDS of CPU time. Without frame pointers: the kernel walks a sample in a library only with
 * that library's table loaded (else it hands the sample over to user space).
 */
#include <stdio.h>
#include <stdlib.h>

#ifdef MANYLIB_LIB
__attribute__((noinline)) static unsigned leaf(unsigned x, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		x = x * 1103515245u + 12345u + (x >> 7);
	return x;
}

/* A few microseconds of CPU in this library's own frames. */
unsigned manylib_work(unsigned x);
unsigned manylib_work(unsigned x)
{
	return leaf(x, 3000) ^ (x >> 3);
}
#else
#include <dlfcn.h>
#include <time.h>

typedef unsigned (*work_fn)(unsigned);

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static unsigned run(work_fn *fns, int n, double seconds)
{
	unsigned s = 0;
	double end = cpu_s() + seconds;
	while (cpu_s() < end)
		for (int i = 0; i < n; i++)
			s += fns[i](s + (unsigned)i);
	return s;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: manylib DIR N SECONDS\n");
		return 2;
	}
	int n = atoi(argv[2]);
	work_fn *fns = calloc(n > 0 ? (size_t)n : 1, sizeof(*fns));
	for (int i = 0; i < n; i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/libmany%d.so", argv[1], i);
		void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!h || !(fns[i] = (work_fn)dlsym(h, "manylib_work"))) {
			fprintf(stderr, "manylib: %s: %s\n", path, dlerror());
			return 1;
		}
	}
	unsigned s = run(fns, n, atof(argv[3]));
	printf("%u\n", s & 1);
	return 0;
}
#endif
