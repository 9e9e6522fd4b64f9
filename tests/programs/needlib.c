/* SPDX-License-Identifier: MIT */
/*
 * A program that maps more modules than it runs in: dlopens NEED first, then each OTHER (mapped
 * below it: they come before it in address order), then works N units (about 1 ms each) in
 * NEED's mid_work (tests/programs/midload.c built with -DMIDLOAD_LIB), and exits.
 *
 *   needlib N NEED [OTHER...]
 *   main -> call_need -> mid_work (in NEED)
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

volatile unsigned long need_sink;

__attribute__((noipa)) static void call_need(void (*fn)(unsigned long), unsigned long units)
{
	fn(units);
	need_sink++;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: needlib N NEED [OTHER...]\n");
		return 2;
	}
	unsigned long n = strtoul(argv[1], NULL, 10);
	void *h = dlopen(argv[2], RTLD_NOW);
	for (int i = 3; i < argc; i++)
		if (!dlopen(argv[i], RTLD_NOW)) {
			fprintf(stderr, "needlib: %s\n", dlerror());
			return 1;
		}
	void (*fn)(unsigned long) = h ? (void (*)(unsigned long))dlsym(h, "mid_work") : NULL;
	if (!fn) {
		fprintf(stderr, "needlib: %s\n", dlerror());
		return 1;
	}
	call_need(fn, n);
	return 0;
}
