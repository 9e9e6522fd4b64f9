/* SPDX-License-Identifier: MIT */
/*
 * End-to-end workload with known call trees. Every function named here is noinline so the
 * expected stacks are exact; the test builds it with and without frame pointers.
 *
 *   calltree:  main -> tree_a -> tree_a2 -> spin            main -> tree_b -> spin
 *   shlib:     main -> lib_entry (libtw.so) -> lib_inner -> spin_lib
 *                                           -> exe_callback (exe) -> spin
 *   threads:   thread_main -> thread_work -> spin   (two threads, main joins)
 *   signal:    main -> signal_loop -> spin, with SIGPROF -> on_signal -> sig_work -> spin
 *   tailcall:  main -> tail_entry -(tail call)-> tail_target -> spin
 *   recursion: main -> recurse (x depth) -> spin
 *
 * e2e MODE [SECS [DEPTH]]: each loop runs for SECS (default 1) of its thread's CPU time.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#define NOINLINE __attribute__((noipa)) /* no inlining, cloning or IPA: exact stacks */

extern int lib_entry(int n, int (*cb)(int));

/* Each loop runs until its thread has had SECS of CPU time since the loop began, not SECS of the
 * clock: the work done, and the samples a cpu-clock recording takes of it, are then the same on a
 * busy machine (where the run takes longer) as on an idle one, and do not depend on what the
 * thread spent before (a sanitizer's start, a preloaded library's constructor: a preloaded
 * profiler's timer starts within that). */
static double secs;
volatile unsigned long sink;

static double thread_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int running(void)
{
	static _Thread_local double start = -1;
	double now = thread_cpu();
	if (start < 0)
		start = now;
	return now - start < secs;
}

NOINLINE int spin(int n)
{
	unsigned long s = 0;
	for (int i = 0; i < n; i++)
		s += (unsigned long)i * (unsigned long)i ^ (s >> 3);
	sink += s;
	return (int)(s & 1);
}

NOINLINE int tree_a2(int n) { return spin(n) + 1; }
NOINLINE int tree_a(int n) { return tree_a2(n) + 1; }
NOINLINE int tree_b(int n) { return spin(n) + 2; }

NOINLINE int exe_callback(int n) { return spin(n) + 3; }

NOINLINE void *thread_work(int n)
{
	while (running())
		spin(n);
	return NULL;
}

/* the statements after each call keep them from being tail calls: these frames must show */
NOINLINE void *thread_main(void *arg)
{
	void *r = thread_work((int)(long)arg);
	sink++;
	return r;
}

/* At least 1.2 ms of CPU time, more than a sample period at 999 Hz: every run of the handler is
 * sampled, whatever the phase of the samples to it. (A 30 us handler went unsampled for 3 s on
 * a busy machine: it runs as the thread is scheduled in, the samples come a period later.) */
NOINLINE void sig_work(void)
{
	double t0 = thread_cpu();
	do
		spin(20000);
	while (thread_cpu() - t0 < 0.0012);
	sink++;
}

NOINLINE void on_signal(int sig)
{
	(void)sig;
	sig_work();
	sink++;
}

NOINLINE void signal_loop(void)
{
	while (running())
		spin(5000);
}

NOINLINE int tail_target(int n)
{
	return spin(n) * 3;
}

/* compiled with -O2 this is a tail call: tail_entry's frame is gone when tail_target runs */
NOINLINE int tail_entry(int n)
{
	sink++;
	return tail_target(n + 1);
}

NOINLINE int recurse(int depth, int n)
{
	int r;
	if (depth == 0)
		r = spin(n);
	else
		r = recurse(depth - 1, n) + 1;
	sink += (unsigned long)r; /* keeps the call from being a tail call */
	return r;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "calltree";
	secs = argc > 2 ? atof(argv[2]) : 1.0;
	if (!strcmp(mode, "calltree")) {
		while (running()) {
			tree_a(40000);
			tree_b(20000);
		}
	} else if (!strcmp(mode, "shlib")) {
		while (running())
			lib_entry(30000, exe_callback);
	} else if (!strcmp(mode, "threads")) {
		pthread_t t[2];
		for (long i = 0; i < 2; i++)
			pthread_create(&t[i], NULL, thread_main, (void *)(20000 + i));
		for (int i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
	} else if (!strcmp(mode, "signal")) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		sigaction(SIGPROF, &sa, NULL);
		/* (every 10 ms of CPU time: the handler holds about an eighth of the samples) */
		struct itimerval it = { { 0, 10000 }, { 0, 10000 } };
		setitimer(ITIMER_PROF, &it, NULL);
		signal_loop();
		struct itimerval off = { { 0, 0 }, { 0, 0 } };
		setitimer(ITIMER_PROF, &off, NULL);
	} else if (!strcmp(mode, "tailcall")) {
		while (running())
			tail_entry(30000);
	} else if (!strcmp(mode, "recursion")) {
		int depth = argc > 3 ? atoi(argv[3]) : 100;
		while (running())
			recurse(depth, 30000);
	} else {
		fprintf(stderr, "e2e: unknown mode %s\n", mode);
		return 2;
	}
	printf("%s done %lu\n", mode, sink & 1);
	return 0;
}
