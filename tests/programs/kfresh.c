/* SPDX-License-Identifier: MIT */
/*
 * Programs that start while they are recorded (tests/e2e/kernel-fresh.sh, issue 26's
 * system-wide measure): `kfresh ROUNDS WORKERS UNITS` runs ROUNDS rounds of WORKERS processes at
 * once, each a fresh exec of this program (`kfresh -w UNITS`) running UNITS work units in a
 * shared library built with it (libkfresh.so, -DKFRESH_LIB), without frame pointers: the
 * kernel walks them only with the tables of the program, the library and libc loaded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef KFRESH_LIB
__attribute__((noinline)) static unsigned mix(unsigned x, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		x = x * 1103515245u + 12345u + (x >> 7);
	return x;
}

__attribute__((noinline)) static unsigned stage2(unsigned x)
{
	return mix(x, 150000) ^ mix(x + 1, 150000);
}

__attribute__((noinline)) static unsigned stage1(unsigned x)
{
	return stage2(x) + stage2(x ^ 0x5a5a);
}

/* One work unit (about a millisecond of CPU). */
unsigned kfresh_unit(unsigned i);
unsigned kfresh_unit(unsigned i)
{
	return stage1(i);
}
#else
unsigned kfresh_unit(unsigned i);

__attribute__((noinline)) static unsigned work(unsigned units)
{
	unsigned s = 0;
	for (unsigned i = 0; i < units; i++)
		s += kfresh_unit(i);
	return s;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "-w")) {
		unsigned s = work((unsigned)atoi(argv[2]));
		return s == 1 ? 2 : 0;
	}
	if (argc != 4) {
		fprintf(stderr, "usage: kfresh ROUNDS WORKERS UNITS\n");
		return 2;
	}
	int rounds = atoi(argv[1]), workers = atoi(argv[2]);
	for (int r = 0; r < rounds; r++) {
		for (int w = 0; w < workers; w++) {
			pid_t p = fork();
			if (p < 0)
				return 1;
			if (p == 0) {
				execl("/proc/self/exe", argv[0], "-w", argv[3], (char *)NULL);
				_exit(127);
			}
		}
		int st, bad = 0;
		for (int w = 0; w < workers; w++)
			if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
				bad = 1;
		if (bad)
			return 1;
	}
	return 0;
}
#endif
