/* SPDX-License-Identifier: MIT */
/*
 * A deep stack, as interpreters, parsers and compilers' recursive passes have: two threads (main
 * and one more) each recurse DEPTH levels through frames of about 1 KiB and spin at the bottom,
 * for ever (a safety deadline of 10 minutes ends it). Built without frame pointers and without
 * SFrame: only CFI walks it, and no stack copy perf can make holds it.
 *
 *   deeprec DEPTH [syscall | resolve]
 *   main thread:  _start -> __libc_start_main -> main -> recurse x DEPTH -> spin
 *   other thread: clone3 -> start_thread -> worker -> recurse x DEPTH -> spin
 *
 * With "syscall", spin reads /dev/zero in a loop instead of computing: most samples are then
 * taken in the kernel, in a syscall. Prints "ready" once both threads spin, so a profiler can
 * load what it needs first.
 *
 * With "resolve", prints "ready" at once and waits for a line on standard input; then each
 * thread's spin calls getpagesize through the PLT until the thread has run 0.5 s of CPU, and
 * the program exits. Run with LD_BIND_NOT=1, every call goes through ld.so's lazy binding
 * (_dl_runtime_resolve, whose CFA is rbx + 32, then _dl_fixup's symbol lookup), where most of
 * its samples then are.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noipa)) /* no inlining, cloning or IPA: exact stacks */

volatile unsigned long sink;
static atomic_int spinning;
static int zero_fd = -1; /* syscall mode: /dev/zero */
static int resolve;       /* resolve mode */

/* The calling thread's CPU time (ns) */
static long long thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

NOINLINE unsigned long spin(void)
{
	if (resolve) {
		unsigned long n = 0;
		while (thread_cpu_ns() < 500000000ll)
			for (int i = 0; i < 256; i++)
				n += (unsigned long)getpagesize();
		return n;
	}
	if (atomic_fetch_add(&spinning, 1) == 1) {
		printf("ready\n");
		fflush(stdout);
	}
	time_t end = time(NULL) + 600;
	unsigned long x = 1;
	if (zero_fd >= 0) {
		static char buf[1 << 20]; /* (both threads: zeros either way) */
		while (time(NULL) <= end)
			x += (unsigned long)read(zero_fd, buf, sizeof(buf));
		exit(3);
	}
	for (unsigned long i = 1;; i++) {
		x = x * 6364136223846793005ul + 1442695040888963407ul;
		sink = x;
		if (!(i & ((1ul << 24) - 1)) && time(NULL) > end)
			exit(3);
	}
	return x;
}

NOINLINE unsigned long recurse(int depth, const volatile char *parent)
{
	volatile char buf[1000];
	buf[0] = (char)depth;
	buf[depth % 1000] = parent ? parent[0] : 0;
	unsigned long r = depth <= 1 ? spin() : recurse(depth - 1, buf);
	return r + buf[depth % 1000]; /* (a use after the call: no tail call) */
}

NOINLINE void *worker(void *arg)
{
	sink += recurse((int)(long)arg, NULL);
	return NULL;
}

int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 200;
	if (argc > 2 && !strcmp(argv[2], "syscall") && (zero_fd = open("/dev/zero", O_RDONLY)) < 0) {
		perror("deeprec: /dev/zero");
		return 1;
	}
	if (depth < 1 || depth > 5000) {
		fprintf(stderr, "deeprec: DEPTH from 1 to 5000\n");
		return 2;
	}
	if (argc > 2 && !strcmp(argv[2], "resolve")) {
		char line[64];
		resolve = 1;
		printf("ready\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 1;
	}
	pthread_t t;
	if (pthread_create(&t, NULL, worker, (void *)(long)depth)) {
		fprintf(stderr, "deeprec: pthread_create failed\n");
		return 1;
	}
	sink += recurse(depth, NULL);
	if (resolve)
		pthread_join(t, NULL);
	return 0;
}
