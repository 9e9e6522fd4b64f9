/* SPDX-License-Identifier: MIT */
/*
 * A module first mapped in the middle of a run (kernel unwinding loads its table then): works a
 * fixed amount in its own code (own_work), then dlopens LIB and works a fixed amount in it
 * (mid_work, called through call_mid), then exits.
 *
 *   midload LIB N [MORE...]: N units of work before the dlopen and N after (a unit: about 1 ms);
 *   the MORE libraries dlopened first (a process's executable mappings past the 31 a young one
 *   keeps in the kernel walk's store: it moves to the other mid-run)
 *   main -> own_work                 before
 *   main -> call_mid -> mid_work     after (in LIB)
 * The library: cc -shared -fPIC -DMIDLOAD_LIB midload.c.
 */
#ifdef MIDLOAD_LIB
volatile unsigned long mid_sink;

__attribute__((noipa)) void mid_work(unsigned long units)
{
	unsigned long x = 1;
	for (unsigned long i = 0; i < units * 400000ul; i++)
		x = x * 6364136223846793005ul + i;
	mid_sink = x;
}
#else
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

volatile unsigned long own_sink;

__attribute__((noipa)) static void own_work(unsigned long units)
{
	unsigned long x = 1;
	for (unsigned long i = 0; i < units * 400000ul; i++)
		x = x * 6364136223846793005ul + i;
	own_sink = x;
}

__attribute__((noipa)) static void call_mid(void (*fn)(unsigned long), unsigned long units)
{
	fn(units);
	own_sink++;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	unsigned long n = strtoul(argv[2], NULL, 10);
	own_work(n);
	for (int i = 3; i < argc; i++)
		if (!dlopen(argv[i], RTLD_NOW)) {
			fprintf(stderr, "midload: %s\n", dlerror());
			return 1;
		}
	void *h = dlopen(argv[1], RTLD_NOW);
	void (*fn)(unsigned long) = h ? (void (*)(unsigned long))dlsym(h, "mid_work") : NULL;
	if (!fn) {
		fprintf(stderr, "midload: %s\n", dlerror());
		return 1;
	}
	call_mid(fn, n);
	return 0;
}
#endif
