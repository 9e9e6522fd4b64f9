/* SPDX-License-Identifier: MIT */
/*
 * The cost of keeping an entry in a cache directory (docs/kernel-unwind.md, "Tables kept"):
 *   cachebench DIR N SIZE
 * admits (base_cache_admit, cap 4 GiB) and writes (base_replace_file) N entries of SIZE bytes
 * in DIR and prints the mean time of each per entry. Only calls the cache has had from the
 * start, so that the same file built against an older tree measures it too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base/cache.h"
#include "base/file.h"

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: cachebench DIR N SIZE\n");
		return 2;
	}
	int n = atoi(argv[2]);
	size_t size = (size_t)atol(argv[3]);
	char *buf = calloc(1, size ? size : 1);
	struct base_piece p = { buf, size };
	double admit = 0, write = 0;
	for (int i = 0; i < n; i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/bench%08d-0000000000000000.kunw1", argv[1], i);
		double t0 = now();
		if (!base_cache_admit(path, size, (uint64_t)4 << 30, base_cache_files)) {
			fprintf(stderr, "cachebench: %s: refused\n", path);
			return 1;
		}
		double t1 = now();
		if (base_replace_file(path, &p, 1)) {
			fprintf(stderr, "cachebench: %s: not written\n", path);
			return 1;
		}
		write += now() - t1;
		admit += t1 - t0;
	}
	printf("%d entries of %zu bytes: admission %.3f ms per entry, writing %.3f ms per entry\n", n, size,
	       admit * 1e3 / n, write * 1e3 / n);
	free(buf);
	return 0;
}
