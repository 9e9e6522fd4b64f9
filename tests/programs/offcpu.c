/* SPDX-License-Identifier: MIT */
/*
 * Off-CPU test program (tests/e2e/offcpu.sh): known shares of its wall time spent spinning,
 * sleeping (nanosleep), waiting on a pipe and on a futex (a mutex), and in threads that start,
 * sleep and exit; each wait measured here with CLOCK_MONOTONIC around the blocking call, so
 * the recording's offcpu-time can be compared with what the program saw (not with what it was
 * given: a busy machine changes both the same way).
 *
 *   offcpu mix ROUNDS MS   ROUNDS rounds of: spin MS, sleep MS, pipe wait MS, mutex wait MS,
 *                          2 threads each sleeping MS; then prints the measured totals (ns):
 *                          "spin_wall= spin_cpu= spin_stolen= spin_waited= spin_preempted= sleep=
 *                          pipe= mutex= thread=" (spin_preempted: the spin's involuntary context
 *                          switches; spin_stolen: its time taken by the hypervisor, no wait;
 *                          spin_waited: the kernel's count of its time on a runqueue, -1 when
 *                          the kernel has no schedstat)
 *   offcpu block           prints "ready" and blocks in read() on a pipe nobody writes to, until
 *                          killed
 *   offcpu deep DEPTH ROUNDS MS  prints "ready", waits for a line on standard input, then
 *                          recurses DEPTH levels through frames of about 1 KiB (oc_deep_recurse,
 *                          no tail calls) and at the bottom sleeps MS ROUNDS times
 *                          (oc_deep_sleep): a blocking stack deeper than any stack copy (200
 *                          levels: 200 KiB; perf copies 64 KiB at most); prints the time slept
 *                          (ns): "deep_sleep= depth= rounds="
 *   offcpu keyed N MS_A MS_B  a thread asks another N times through a pipe for an answer it
 *                          waits for in one of two functions, oc_key_a (two times in three: the
 *                          answer comes after MS_A ms of spinning) and oc_key_b (one in three,
 *                          two calls deeper, after MS_B ms), measuring each wait (wall less CPU
 *                          time); prints the totals (ns): "key_a= key_b= n_a= n_b=" (waits timed in the kernel
 *                          with few stacks walked: each given the stack walked with its key)
 *   offcpu pingpong N [WORK]  two threads pass a byte through two pipes N times each way, each
 *                          doing WORK iterations of a loop (default 0) before passing it on;
 *                          prints the wall and CPU time (both threads, user and kernel: a stack
 *                          copied at a switch-out is charged to the thread switching out) per
 *                          round trip (bench/offcpu.py; WORK sets the
 *                          switch rate: work done, not time, so a recorder taking CPU from the
 *                          threads shows as a slowdown)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static uint64_t now_ns(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec t = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
	while (nanosleep(&t, &t))
		;
}

static volatile uint64_t sink;

/* spins for ms of wall time: what it was not given of it is its off-CPU time, but the time a
 * hypervisor took its CPU away (steal: no context switch, the kernel sees no wait; the thread's
 * CPU clock does not count it either, with paravirtual steal accounting), which *stolen gets:
 * the gaps of more than 200 us in which neither its CPU clock advanced nor a context switch
 * came (on this VM host ticks of ~4 ms failed offcpu.all and kernel-all 2 runs in
 * 30, the recording 4 ms under) */
/* The kernel's count of the time this thread has waited on a runqueue, ready to run but not
 * running (ns: /proc/thread-self/schedstat's second field, CONFIG_SCHED_INFO); -1: not there. A
 * thread that never blocks is off the CPU exactly then: from a preemption's switch-out to its
 * switch-in, what the recording counts; the hypervisor's steal is not in it. */
static int64_t run_delay_ns(int fd)
{
	char b[96];
	if (fd < 0)
		return -1;
	ssize_t n = pread(fd, b, sizeof(b) - 1, 0);
	unsigned long long run, wait;
	if (n <= 0)
		return -1;
	b[n] = 0;
	return sscanf(b, "%llu %llu", &run, &wait) == 2 ? (int64_t)wait : -1;
}

/* The kernel's count is read from a descriptor opened before (an open of /proc is a long path
 * a preemption may fall in), first inside oc_spin and last in its caller: a preemption at a
 * read's return is then counted and recorded in oc_spin at the start, neither at the end (the
 * open and the last read inside oc_spin: a preemption there was recorded in oc_spin and not
 * counted, offcpu.kernel-all once 4 ms over beside a build). *w0 gets the first. */
NOINLINE static void oc_spin(uint64_t ms, uint64_t *wall, uint64_t *cpu, uint64_t *stolen, int sfd, int64_t *w0)
{
	*w0 = run_delay_ns(sfd);
	struct rusage ru;
	getrusage(RUSAGE_THREAD, &ru);
	long nivcsw = ru.ru_nivcsw, nvcsw = ru.ru_nvcsw;
	uint64_t t0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID), t, last = t0, clast = c0;
	do {
		for (int i = 0; i < 1000; i++)
			sink += (uint64_t)i * 7;
		t = now_ns(CLOCK_MONOTONIC);
		uint64_t c = now_ns(CLOCK_THREAD_CPUTIME_ID);
		if (t - last > 200000) {
			getrusage(RUSAGE_THREAD, &ru);
			if (ru.ru_nivcsw == nivcsw && ru.ru_nvcsw == nvcsw && t - last > c - clast)
				*stolen += (t - last) - (c - clast);
			nivcsw = ru.ru_nivcsw;
			nvcsw = ru.ru_nvcsw;
		}
		last = t;
		clast = c;
	} while (t - t0 < ms * 1000000u);
	/* the CPU clock read inside the wall clock's interval, at both ends: a preemption between the
	 * last two reads is off-CPU time in oc_spin, which the recording counts (read the other way
	 * round, one preemption of several ms on a busy machine was recorded and not measured:
	 * offcpu.all and kernel-all failed with oc_spin 17-19% over) */
	*cpu += now_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	*wall += now_ns(CLOCK_MONOTONIC) - t0;
}

NOINLINE static void oc_sleep(uint64_t ms, uint64_t *total)
{
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	sleep_ns(ms * 1000000u);
	*total += now_ns(CLOCK_MONOTONIC) - t0;
}

struct helper {
	pthread_mutex_t m;
	pthread_cond_t cv;
	int job;          /* 1: write to the pipe after ms; 2: hold the mutex ms; -1: quit */
	uint64_t ms;
	int pfd[2];
	pthread_mutex_t held; /* the mutex waited on */
	int holding;
};

/* the helper's own waits are in helper_* functions, apart from the main thread's */
NOINLINE static void helper_idle(struct helper *h)
{
	while (!h->job)
		pthread_cond_wait(&h->cv, &h->m);
}

static void *helper_main(void *arg)
{
	struct helper *h = arg;
	pthread_mutex_lock(&h->m);
	for (;;) {
		helper_idle(h);
		int job = h->job;
		uint64_t ms = h->ms;
		if (job < 0)
			break;
		if (job == 2) {
			pthread_mutex_lock(&h->held);
			h->holding = 1;
		}
		pthread_cond_broadcast(&h->cv);
		pthread_mutex_unlock(&h->m);
		sleep_ns(ms * 1000000u);
		if (job == 1) {
			char c = 'x';
			if (write(h->pfd[1], &c, 1) != 1)
				abort();
		} else {
			pthread_mutex_unlock(&h->held);
		}
		pthread_mutex_lock(&h->m);
		h->job = 0;
		h->holding = 0;
		pthread_cond_broadcast(&h->cv);
	}
	pthread_mutex_unlock(&h->m);
	return NULL;
}

static void helper_start(struct helper *h, int job, uint64_t ms)
{
	pthread_mutex_lock(&h->m);
	/* the previous job is over only when the helper says so (it may still be on its way
	 * back after writing the byte or unlocking the mutex) */
	while (h->job)
		pthread_cond_wait(&h->cv, &h->m);
	h->job = job;
	h->ms = ms;
	pthread_cond_broadcast(&h->cv);
	/* the mutex job: wait until the helper holds it, or has held it already: a main thread
	 * not run for MS after the helper took the job (a busy machine) finds the job done and
	 * holding 0 again, and waiting for holding alone it waited forever */
	while (job == 2 && h->job == 2 && !h->holding)
		pthread_cond_wait(&h->cv, &h->m);
	pthread_mutex_unlock(&h->m);
}

NOINLINE static void oc_pipe_wait(struct helper *h, uint64_t ms, uint64_t *total)
{
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	helper_start(h, 1, ms);
	char c;
	if (read(h->pfd[0], &c, 1) != 1)
		abort();
	*total += now_ns(CLOCK_MONOTONIC) - t0;
}

NOINLINE static void oc_mutex_wait(struct helper *h, uint64_t ms, uint64_t *total)
{
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	helper_start(h, 2, ms);
	pthread_mutex_lock(&h->held);
	*total += now_ns(CLOCK_MONOTONIC) - t0;
	pthread_mutex_unlock(&h->held);
}

struct shortlived {
	uint64_t ms, slept;
};

NOINLINE static void oc_thread_sleep(struct shortlived *s)
{
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	sleep_ns(s->ms * 1000000u);
	s->slept = now_ns(CLOCK_MONOTONIC) - t0;
}

static void *shortlived_main(void *arg)
{
	oc_thread_sleep(arg);
	return NULL;
}

static int mix(int rounds, uint64_t ms)
{
	struct helper h = { .m = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER,
			    .held = PTHREAD_MUTEX_INITIALIZER };
	if (pipe(h.pfd))
		return 1;
	pthread_t ht;
	if (pthread_create(&ht, NULL, helper_main, &h))
		return 1;
	uint64_t spin_wall = 0, spin_cpu = 0, spin_stolen = 0, slept = 0, piped = 0, locked = 0, threads = 0;
	int64_t spin_waited = 0;
	long preempted = 0; /* the spin's involuntary context switches */
	for (int r = 0; r < rounds; r++) {
		struct rusage ru0, ru1;
		getrusage(RUSAGE_THREAD, &ru0);
		int sfd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
		int64_t w0;
		oc_spin(ms, &spin_wall, &spin_cpu, &spin_stolen, sfd, &w0);
		int64_t w1 = run_delay_ns(sfd);
		if (sfd >= 0)
			close(sfd);
		if (w0 < 0 || w1 < 0 || spin_waited < 0)
			spin_waited = -1;
		else
			spin_waited += w1 - w0;
		getrusage(RUSAGE_THREAD, &ru1);
		preempted += ru1.ru_nivcsw - ru0.ru_nivcsw;
		oc_sleep(ms, &slept);
		oc_pipe_wait(&h, ms, &piped);
		oc_mutex_wait(&h, ms, &locked);
		struct shortlived s[2] = { { ms, 0 }, { ms, 0 } };
		pthread_t t[2];
		for (int i = 0; i < 2; i++)
			if (pthread_create(&t[i], NULL, shortlived_main, &s[i]))
				return 1;
		for (int i = 0; i < 2; i++) {
			pthread_join(t[i], NULL);
			threads += s[i].slept;
		}
	}
	pthread_mutex_lock(&h.m);
	while (h.job)
		pthread_cond_wait(&h.cv, &h.m);
	h.job = -1;
	pthread_cond_broadcast(&h.cv);
	pthread_mutex_unlock(&h.m);
	pthread_join(ht, NULL);
	printf("spin_wall=%llu spin_cpu=%llu spin_stolen=%llu spin_waited=%lld spin_preempted=%ld sleep=%llu pipe=%llu "
	       "mutex=%llu thread=%llu\n",
	       (unsigned long long)spin_wall, (unsigned long long)spin_cpu, (unsigned long long)spin_stolen,
	       (long long)spin_waited, preempted,
	       (unsigned long long)slept,
	       (unsigned long long)piped, (unsigned long long)locked, (unsigned long long)threads);
	return 0;
}

/* ---- deep: the blocking stack deeper than a stack copy */

NOINLINE static void oc_deep_sleep(int rounds, uint64_t ms, uint64_t *total)
{
	for (int i = 0; i < rounds; i++) {
		uint64_t t0 = now_ns(CLOCK_MONOTONIC);
		sleep_ns(ms * 1000000u);
		*total += now_ns(CLOCK_MONOTONIC) - t0;
	}
}

/* (noipa: no inlining, cloning or tail call: one frame of about 1 KiB per level) */
__attribute__((noipa)) static uint64_t oc_deep_recurse(int depth, const volatile char *parent, int rounds,
                                                        uint64_t ms, uint64_t *total)
{
	volatile char buf[1000];
	buf[0] = (char)depth;
	buf[depth % 1000] = parent ? parent[0] : 0;
	uint64_t r = depth <= 1 ? (oc_deep_sleep(rounds, ms, total), 1) : oc_deep_recurse(depth - 1, buf, rounds, ms, total);
	return r + (uint64_t)buf[depth % 1000]; /* (a use after the call: no tail call) */
}

static int deep(int depth, int rounds, uint64_t ms)
{
	if (depth < 1 || depth > 5000 || rounds < 1)
		return 2;
	printf("ready\n");
	fflush(stdout);
	char line[64];
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	uint64_t slept = 0;
	sink += oc_deep_recurse(depth, NULL, rounds, ms, &slept);
	printf("deep_sleep=%llu depth=%d rounds=%d\n", (unsigned long long)slept, depth, rounds);
	return 0;
}

NOINLINE static void oc_block_forever(int fd)
{
	char c;
	for (;;)
		if (read(fd, &c, 1) == 0)
			sleep_ns(1000000000u);
}

struct pp {
	int a[2], b[2];
	long n, work;
};

static void pp_work(long work)
{
	for (long i = 0; i < work; i++)
		sink += (uint64_t)i * 7;
}

NOINLINE static void *pong(void *arg)
{
	struct pp *p = arg;
	char c;
	for (long i = 0; i < p->n; i++)
		if (read(p->a[0], &c, 1) != 1 || (pp_work(p->work), write(p->b[1], &c, 1)) != 1)
			abort();
	return NULL;
}

NOINLINE static int pingpong(long n, long work)
{
	struct pp p = { .n = n, .work = work };
	if (pipe(p.a) || pipe(p.b))
		return 1;
	pthread_t t;
	if (pthread_create(&t, NULL, pong, &p))
		return 1;
	uint64_t t0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	char c = 'x';
	for (long i = 0; i < n; i++) {
		pp_work(work);
		if (write(p.a[1], &c, 1) != 1 || read(p.b[0], &c, 1) != 1)
			abort();
	}
	uint64_t dt = now_ns(CLOCK_MONOTONIC) - t0, dc = now_ns(CLOCK_PROCESS_CPUTIME_ID) - c0;
	pthread_join(t, NULL);
	printf("round_trips=%ld wall_ns=%llu ns_per_round_trip=%.1f cpu_ns_per_round_trip=%.1f\n", n,
	       (unsigned long long)dt, (double)dt / (double)n, (double)dc / (double)n);
	return 0;
}

/* ---- keyed: two blocking places of one thread, waits of known lengths */

struct keyed {
	int req[2], resp[2];
	long n;
};

/* the answering thread: spins the time asked for (a byte: ms) then answers */
NOINLINE static void *oc_key_serve(void *arg)
{
	struct keyed *k = arg;
	unsigned char ms;
	for (long i = 0; i < k->n; i++) {
		if (read(k->req[0], &ms, 1) != 1)
			abort();
		uint64_t t0 = now_ns(CLOCK_MONOTONIC);
		while (now_ns(CLOCK_MONOTONIC) - t0 < ms * 1000000ull)
			sink++;
		if (write(k->resp[1], &ms, 1) != 1)
			abort();
	}
	return NULL;
}

/* asks for an answer after ms and waits for it: the time this thread was off the CPU in it
 * (its wall time less its CPU time: the few hundred microseconds it runs in the two system calls
 * and their wakeups on a busy machine would otherwise be 5% of a 3 ms wait) */
__attribute__((noipa)) static uint64_t ask(struct keyed *k, unsigned char ms)
{
	uint64_t t0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	if (write(k->req[1], &ms, 1) != 1 || read(k->resp[0], &ms, 1) != 1)
		abort();
	uint64_t c = now_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	return now_ns(CLOCK_MONOTONIC) - t0 - c;
}

/* (noipa: frames of their own, no tail calls: a use after each call; oc_key_b blocks at the same
 * pc as oc_key_a, two frames and a few hundred bytes of stack deeper) */
__attribute__((noipa)) static uint64_t oc_key_a(struct keyed *k, unsigned char ms)
{
	volatile char pad[1];
	pad[0] = 0;
	uint64_t r = ask(k, ms);
	return r + (uint64_t)pad[0];
}

__attribute__((noipa)) static uint64_t oc_key_b_inner(struct keyed *k, unsigned char ms)
{
	volatile char pad[256];
	pad[0] = 0;
	uint64_t r = ask(k, ms);
	return r + (uint64_t)pad[0];
}

__attribute__((noipa)) static uint64_t oc_key_b(struct keyed *k, unsigned char ms)
{
	volatile char pad[128];
	pad[0] = 0;
	uint64_t r = oc_key_b_inner(k, ms);
	return r + (uint64_t)pad[0];
}

static int keyed(long n, int ms_a, int ms_b)
{
	struct keyed k = { .n = n };
	if (pipe(k.req) || pipe(k.resp) || ms_a < 0 || ms_a > 255 || ms_b < 0 || ms_b > 255)
		return 1;
	pthread_t t;
	if (pthread_create(&t, NULL, oc_key_serve, &k))
		return 1;
	uint64_t a = 0, b = 0;
	long na = 0, nb = 0;
	for (long i = 0; i < n; i++) {
		if (i % 3 == 2) {
			b += oc_key_b(&k, (unsigned char)ms_b);
			nb++;
		} else {
			a += oc_key_a(&k, (unsigned char)ms_a);
			na++;
		}
	}
	pthread_join(t, NULL);
	printf("key_a=%llu key_b=%llu n_a=%ld n_b=%ld\n", (unsigned long long)a, (unsigned long long)b, na, nb);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[1], "mix"))
		return mix(atoi(argv[2]), strtoull(argv[3], NULL, 10));
	if (argc >= 2 && !strcmp(argv[1], "block")) {
		int p[2];
		if (pipe(p))
			return 1;
		printf("ready\n");
		fflush(stdout);
		oc_block_forever(p[0]);
	}
	if (argc >= 5 && !strcmp(argv[1], "deep"))
		return deep(atoi(argv[2]), atoi(argv[3]), strtoull(argv[4], NULL, 10));
	if (argc >= 5 && !strcmp(argv[1], "keyed"))
		return keyed(atol(argv[2]), atoi(argv[3]), atoi(argv[4]));
	if (argc >= 3 && !strcmp(argv[1], "pingpong"))
		return pingpong(atol(argv[2]), argc >= 4 ? atol(argv[3]) : 0);
	fprintf(stderr, "usage: offcpu mix ROUNDS MS | block | deep DEPTH ROUNDS MS | keyed N MS_A MS_B | pingpong N [WORK]\n");
	return 2;
}
