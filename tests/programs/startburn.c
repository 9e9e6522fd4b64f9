/* SPDX-License-Identifier: MIT */
/*
 * A recording's first samples (tests/e2e/record-start.sh): a fixed amount of CPU spent right at
 * the start in a function of its own, then (optionally) a fixed amount at the bottom of a stack
 * deeper than any stack copy.
 *
 *   startburn BURN_MS [DEPTH LATE_MS]
 *
 * Prints "ready" and waits for a line on standard input; then spends BURN_MS of its own CPU
 * (CLOCK_THREAD_CPUTIME_ID: the same count of samples however busy the machine is) in
 * early_burn, prints "early done"; with LATE_MS, waits for another line, recurses DEPTH levels
 * through frames of about 1 KiB and spends LATE_MS of its CPU in late_work at the bottom.
 *   main -> early_burn
 *   main -> late_recurse x DEPTH -> late_work
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static volatile unsigned long sink;

__attribute__((noinline)) void early_burn(double ms)
{
	double end = cpu_ms() + ms;
	while (cpu_ms() < end)
		for (int i = 0; i < 1000; i++)
			sink += (unsigned long)i * 2654435761u;
}

__attribute__((noinline)) void late_work(double ms)
{
	double end = cpu_ms() + ms;
	while (cpu_ms() < end)
		for (int i = 0; i < 1000; i++)
			sink ^= (unsigned long)i * 40503u;
}

__attribute__((noinline)) void late_recurse(int depth, double ms)
{
	volatile char frame[1000];
	memset((char *)frame, depth, sizeof(frame));
	if (depth > 1)
		late_recurse(depth - 1, ms);
	else
		late_work(ms);
	sink += frame[depth % sizeof(frame)];
}

int main(int argc, char **argv)
{
	if (argc != 2 && argc != 4) {
		fprintf(stderr, "usage: startburn BURN_MS [DEPTH LATE_MS]\n");
		return 2;
	}
	char line[64];
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	early_burn(atof(argv[1]));
	printf("early done\n");
	fflush(stdout);
	if (argc == 4) {
		if (!fgets(line, sizeof(line), stdin))
			return 1;
		late_recurse(atoi(argv[2]), atof(argv[3]));
		printf("late done\n");
		fflush(stdout);
	}
	return 0;
}
