/* SPDX-License-Identifier: MIT */
/*
 * The time each sample takes from the sampled program, whatever the profiler: the program
 * recurses DEPTH levels through frames of FRAME bytes, then for SECONDS reads the time stamp
 * counter in a loop (touching a random cache line of a THRASH MiB buffer each turn when asked,
 * as a compressor does, so the profiler finds its own data out of the caches) and adds up the
 * gaps: a turn of the loop takes tens of nanoseconds, unless an interrupt came in between —
 * the timer tick, or a profiler's sample with all the profiler does in it. Run unprofiled and
 * under each profiler: the extra gap time over the extra gaps is the time one sample costs,
 * interrupt included, measured in the program itself (no tracing of the kernel needed).
 *
 *   stolen SECONDS [DEPTH [FRAME [THRASH_MIB|WORKSET_KIBk [MIN_NS]]]]
 *
 * On a virtual machine the host takes the CPU away now and then, which the program sees as gaps
 * too: with STOLEN_GAPS=FILE set, every gap is written to FILE as "start end switched" in
 * CLOCK_MONOTONIC nanoseconds, so that the gaps holding a profiler's samples (their times, from
 * its recording) can be told from the others (bench/kernel.py does).
 *
 * THRASH given as KIBk (e.g. 256k) is a working set instead, kept in the caches: a full cycle
 * through its lines in a fixed scrambled order (every line once per cycle), as a program's hot
 * tables are used. A profiler that writes much memory in its sample evicts some of it, and the
 * program pays again after the sample: with STOLEN_GAPS, each gap's line has a fourth number,
 * the time the sweep it fell in and the next one took beyond two of the run's median sweep
 * (gaps left out of both), in ns: what the sample left cold for the program. (A sweep is SWEEP
 * turns, whatever the mode.)
 *
 * Prints one line: seconds counted, gaps (turns longer than MIN_NS, default 700), their total
 * ns, the 10th, 50th and 90th percentiles of their lengths, and the gaps not counted: those in
 * which the thread was switched out (another task ran: its context-switch counts changed) and
 * those of 1 ms or more. Built without frame pointers, as distributions build programs.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RUSAGE_THREAD */
#endif
#include <alloca.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <x86intrin.h>

#define NOINLINE __attribute__((noipa))
#define NBUCKETS 512 /* gap lengths in 250 ns buckets, up to 128 us; longer ones in the last */
#define BUCKET_NS 250
#define SWEEP 4096 /* turns in a sweep (the after-gap cost is counted per sweep) */

static double seconds;
static unsigned frame_bytes;
static size_t thrash_bytes;
static int workset; /* thrash_bytes is a working set walked in a full cycle, not a random thrash */
static uint64_t min_ns;
static volatile uint64_t sink;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

NOINLINE static void measure(void)
{
	unsigned char *buf = NULL;
	size_t mask = 0;
	if (thrash_bytes) {
		size_t sz = 1;
		while (sz * 2 <= thrash_bytes)
			sz *= 2;
		buf = malloc(sz);
		if (!buf)
			exit(1);
		memset(buf, 1, sz);
		mask = sz - 1;
	}
	/* the counter's rate, from the clock over a short spin */
	double c0 = now_s();
	uint64_t t0 = __rdtsc();
	while (now_s() - c0 < 0.05)
		;
	double ticks_per_ns = (double)(__rdtsc() - t0) / ((now_s() - c0) * 1e9);
	uint64_t min_ticks = (uint64_t)((double)min_ns * ticks_per_ns), max_ticks = (uint64_t)(1e6 * ticks_per_ns);
	static uint64_t buckets[NBUCKETS];
	/* (STOLEN_GAPS) every gap, in counter ticks; the counter against the clock at both ends */
	const char *gaps_path = getenv("STOLEN_GAPS");
	size_t glog_n = 0, glog_cap = gaps_path ? (size_t)(seconds * 20000) + 1024 : 0;
	uint64_t(*glog)[4] = glog_cap ? calloc(glog_cap, sizeof(*glog)) : NULL;
	/* (STOLEN_GAPS) each sweep's ticks, gaps left out */
	size_t nsweeps_cap = glog_cap ? (size_t)(seconds * 1e9 / SWEEP / 2) + 1024 : 0, nsweeps = 0;
	uint64_t *sweeps = nsweeps_cap ? calloc(nsweeps_cap, sizeof(*sweeps)) : NULL;
	uint64_t sweep_ticks = 0;
	unsigned turn = 0;
	size_t line = 0, lines = mask ? (mask + 1) >> 6 : 0;
	struct timespec m0, m1;
	clock_gettime(CLOCK_MONOTONIC, &m0);
	uint64_t k0 = __rdtsc();
	uint64_t gaps = 0, gap_ticks = 0, long_gaps = 0, switched = 0, x = 88172645463325252ull;
	struct rusage ru;
	getrusage(RUSAGE_THREAD, &ru);
	long csw = ru.ru_nvcsw + ru.ru_nivcsw;
	double start = now_s();
	uint64_t end = __rdtsc() + (uint64_t)(seconds * 1e9 * ticks_per_ns), prev = __rdtsc();
	for (;;) {
		if (workset) {
			/* a full cycle over the lines (an LCG modulo a power of two: a = 5, c odd) */
			line = (line * 5 + 1) & (lines - 1);
			buf[line << 6]++;
		} else if (buf) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			buf[(x >> 6 << 6) & mask]++;
		}
		uint64_t t = __rdtsc(), d = t - prev;
		prev = t;
		if (d <= min_ticks)
			sweep_ticks += d;
		if (++turn == SWEEP) {
			if (sweeps && nsweeps < nsweeps_cap)
				sweeps[nsweeps++] = sweep_ticks;
			turn = 0;
			sweep_ticks = 0;
		}
		if (d > min_ticks) {
			/* (the check's own time is not the next turn's) */
			getrusage(RUSAGE_THREAD, &ru);
			prev = __rdtsc();
			long c = ru.ru_nvcsw + ru.ru_nivcsw;
			if (glog && glog_n < glog_cap) {
				glog[glog_n][0] = t - d;
				glog[glog_n][1] = t;
				glog[glog_n][2] = c != csw;
				glog[glog_n++][3] = nsweeps; /* (the sweep it fell in) */
			}
			if (c != csw) {
				csw = c;
				switched++;
			} else if (d >= max_ticks) {
				long_gaps++;
			} else {
				gaps++;
				gap_ticks += d;
				uint64_t b = (uint64_t)((double)d / ticks_per_ns) / BUCKET_NS;
				buckets[b < NBUCKETS ? b : NBUCKETS - 1]++;
			}
			if (t >= end)
				break;
		}
	}
	double secs = now_s() - start;
	clock_gettime(CLOCK_MONOTONIC, &m1);
	uint64_t k1 = __rdtsc();
	FILE *gf = glog ? fopen(gaps_path, "w") : NULL;
	if (gf) {
		double n0 = (double)m0.tv_sec * 1e9 + (double)m0.tv_nsec, n1 = (double)m1.tv_sec * 1e9 + (double)m1.tv_nsec;
		double per = (n1 - n0) / (double)(k1 - k0);
		/* the median sweep; a gap's after-cost: its sweep and the next beyond two medians */
		uint64_t med = 0;
		uint64_t *sorted = nsweeps > 2 ? malloc(nsweeps * sizeof(*sorted)) : NULL;
		if (sorted) {
			memcpy(sorted, sweeps, nsweeps * sizeof(*sorted));
			qsort(sorted, nsweeps, sizeof(*sorted), cmp_u64);
			med = sorted[nsweeps / 2];
			free(sorted);
		}
		for (size_t i = 0; i < glog_n; i++) {
			size_t k = glog[i][3];
			double after = 0;
			if (med && k + 1 < nsweeps)
				after = ((double)sweeps[k] + (double)sweeps[k + 1] - 2.0 * (double)med) * per;
			fprintf(gf, "%.0f %.0f %llu %.0f\n", n0 + (double)(glog[i][0] - k0) * per,
			        n0 + (double)(glog[i][1] - k0) * per, (unsigned long long)glog[i][2], after);
		}
		fclose(gf);
	}
	free(glog);
	free(sweeps);
	uint64_t pct[3] = { 0 }, want[3] = { gaps / 10, gaps / 2, gaps * 9 / 10 }, seen = 0;
	unsigned p = 0;
	for (unsigned b = 0; b < NBUCKETS && p < 3; b++) {
		seen += buckets[b];
		while (p < 3 && seen > want[p])
			pct[p++] = (uint64_t)b * BUCKET_NS + BUCKET_NS / 2;
	}
	if (buf)
		sink = buf[x & mask];
	if (getenv("STOLEN_HIST"))
		for (unsigned i = 0; i < NBUCKETS; i++)
			if (buckets[i])
				printf("hist %u %llu\n", i * BUCKET_NS, (unsigned long long)buckets[i]);
	printf("stolen: %.3f s, %llu gaps, %.0f ns in gaps, p10 %llu p50 %llu p90 %llu ns, not counted: %llu switched "
	       "out, %llu of 1 ms or more\n",
	       secs, (unsigned long long)gaps, (double)gap_ticks / ticks_per_ns, (unsigned long long)pct[0],
	       (unsigned long long)pct[1], (unsigned long long)pct[2], (unsigned long long)switched,
	       (unsigned long long)long_gaps);
}

NOINLINE static unsigned long recurse(int depth)
{
	volatile char *b = alloca(frame_bytes);
	b[0] = (char)depth;
	if (depth <= 1)
		measure();
	else
		recurse(depth - 1);
	return b[0]; /* (a use after the call: no tail call) */
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: stolen SECONDS [DEPTH [FRAME [THRASH_MIB|WORKSET_KIBk [MIN_NS]]]]\n");
		return 2;
	}
	seconds = atof(argv[1]);
	int depth = argc > 2 ? atoi(argv[2]) : 10;
	frame_bytes = argc > 3 ? (unsigned)atoi(argv[3]) : 64;
	if (argc > 4) {
		size_t n = (size_t)atoi(argv[4]);
		workset = strchr(argv[4], 'k') != NULL;
		thrash_bytes = workset ? n << 10 : n << 20;
		if (workset && thrash_bytes < 4096)
			thrash_bytes = 4096;
	}
	min_ns = argc > 5 ? (uint64_t)atoll(argv[5]) : 700;
	if (frame_bytes < 1)
		frame_bytes = 1;
	recurse(depth > 0 ? depth : 1);
	return 0;
}
