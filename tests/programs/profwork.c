/* SPDX-License-Identifier: MIT */
/*
 * A program that profiles itself with libunwound-prof (tests/e2e/prof.sh), one mode per case.
 * Each mode runs until the profiler has taken a number of samples (never for a time: the tests
 * must not depend on the CPU time the machine gives), then stops it, writes OUT, and prints
 * what it checked itself, as "key value" lines on standard output.
 *
 *   profwork MODE OUT [SAMPLES]
 *   calltree   main -> run_calltree -> tree_a -> tree_a2 -> spin     (2/3 of the work)
 *                                  -> tree_b -> spin                (1/3)
 *   inline     main -> run_inline -> inl_work -> inl_mix (inlined: a line of its own)
 *   threads    workers that start, name themselves, work and exit, over and over
 *   late       threads running before uw_prof_start (found in /proc/self/task)
 *   fork       children forked while profiling: they work, fork again, create threads, dlclose,
 *              exit (and one _exit); one starts a profiler of its own (OUT.child)
 *   dlopen     a hot library opened, worked in, closed, and another one opened where it was
 *   remap      a hot library opened and worked in; then the other one's file mapped by hand
 *              (mmap MAP_FIXED, no dlopen) over its code, and worked in there
 *   signals    the program's own SIGPROF handler (before and after the start), signals sent
 *              by another thread and another process; its handler works
 *   longjmp    the program's own SIGPROF handler (before or after the start: ARG), called by its
 *              own ITIMER_PROF, leaves by siglongjmp every time, for 0.5 s of main's CPU
 *   malloc     threads allocating and freeing (samples inside malloc)
 *   deep       recursion deeper than the stack copy, working at the bottom
 *   altstack   work in a handler running on an alternate signal stack
 *   coroutine  work on a stack of the program's own (makecontext), bounds unknown
 *   cycles     N start/stop cycles while threads run, start and exit
 *   wall       wall-clock mode: one thread works, one sleeps
 *   lost       the profiler's thread stopped by a tracer (as a starved one waits) while the main
 *              thread works 0.4 s of its CPU 12 KiB deep in its stack: its small ring fills and
 *              the samples it drops are in the profile as [lost samples]
 *   lost-env   the same under the profiler UNWOUND_PROF starts (OUT unused)
 *   blocked    the profiler's signal blocked: a thread that blocks every signal works 0.2 s of
 *              its CPU and ends; main works until SAMPLES, then blocks it, works 0.3 s and stops
 *              the profiler (its timer's signal pending, never delivered)
 *   sigmask    two threads that block SIGPROF (their mask from their creator, as xz -T2 blocks
 *              every signal around pthread_create) work 0.25 s of their CPU each; main works
 *              until SAMPLES
 *   sigmask-env the same under the profiler UNWOUND_PROF starts (OUT unused)
 *   api        options refused, EBUSY, calls out of order, errno across the handler, max_threads
 *   spawn CMD  runs CMD (fork, exec) and exits with its status: nothing of its own
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <setjmp.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <unwound/unwound.h>

#define NOINLINE __attribute__((noipa))
#define RING_BYTES (8u << 20)

/* (one per thread: the workers do not share it) */
static _Thread_local volatile unsigned long sink;
static const char *out;
static uint64_t want = 300;
static struct uw_prof *prof;

static void die(const char *what)
{
	fprintf(stderr, "profwork: %s: %s\n", what, strerror(errno));
	exit(1);
}

NOINLINE int spin(int n)
{
	unsigned long s = 0;
	for (int i = 0; i < n; i++)
		s += (unsigned long)i * (unsigned long)i ^ (s >> 3);
	sink += s;
	return (int)(s & 1);
}

static uint64_t samples(void)
{
	UW_OPTS(uw_prof_stats, st);
	if (uw_prof_stats(prof, &st))
		die("uw_prof_stats");
	return st.samples;
}

static void start(unsigned hz)
{
	/* PROFWORK_STACK: the stack copy's size. The rings hold 512 samples of 16 KiB (half a
	 * second at 999 Hz): no sample is lost where the collector gets no CPU for a while on a
	 * busy machine (the tests expect none lost) */
	const char *sb = getenv("PROFWORK_STACK");
	UW_OPTS(uw_prof_opts, o, .output = out, .hz = hz, .stack_bytes = sb ? (unsigned)atoi(sb) : 0,
	        .ring_bytes = RING_BYTES);
	prof = uw_prof_start(&o);
	if (!prof)
		die("uw_prof_start");
}

/* stops, writes OUT, prints the counts */
static void finish(void)
{
	int e = uw_prof_stop(prof);
	if (e) {
		fprintf(stderr, "profwork: uw_prof_stop: %s\n", uw_strerror(e));
		exit(1);
	}
	UW_OPTS(uw_prof_stats, st);
	uw_prof_stats(prof, &st);
	printf("samples %" PRIu64 "\nunwound %" PRIu64 "\nroot %" PRIu64 "\ndropped %" PRIu64 "\nkernel_copy %" PRIu64
	       "\nno_copy %" PRIu64 "\naltstack %" PRIu64 "\nforeign %" PRIu64 "\nthreads %" PRIu64
	       "\nthreads_refused %" PRIu64 "\nmap_resets %" PRIu64 "\nhandler_replaced %" PRIu64
	       "\nperiods_after_last %" PRIu64 "\n",
	       st.samples, st.samples_unwound, st.samples_root, st.dropped, st.stack_copied_by_kernel,
	       st.stack_not_copied, st.on_altstack, st.foreign_signals, st.threads, st.threads_refused, st.map_resets,
	       st.handler_replaced, st.periods_after_last);
	for (unsigned i = 0; i < UW_STOP__COUNT; i++)
		if (st.stop_reasons[i])
			printf("stop %s: %" PRIu64 "\n", uw_stop_reason_str((enum uw_stop_reason)i), st.stop_reasons[i]);
	uw_prof_free(prof);
	prof = NULL;
}

/* ---- calltree */
NOINLINE int tree_a2(int n) { return spin(n) + 1; }
NOINLINE int tree_a(int n) { return tree_a2(n) + 1; }
NOINLINE int tree_b(int n) { return spin(n) + 2; }

NOINLINE void run_calltree(void)
{
	while (samples() < want) {
		tree_a(40000);
		tree_b(20000);
	}
	sink++;
}

/* ---- inline: a function inlined into its caller (an inline frame of its own in pprof) */
static inline __attribute__((always_inline)) unsigned long inl_mix(unsigned long s, int i)
{
	return s + ((unsigned long)i * (unsigned long)i ^ (s >> 3));
}

NOINLINE void inl_work(void)
{
	unsigned long s = 0;
	for (int i = 0; i < 200000; i++)
		s = inl_mix(s, i);
	sink += s;
}

NOINLINE void run_inline(void)
{
	while (samples() < want)
		inl_work();
	sink++;
}

/* ---- threads */
static atomic_int stop_workers;

NOINLINE void worker_work(void)
{
	for (int i = 0; i < 20; i++)
		spin(20000);
	sink++;
}

NOINLINE double thread_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Most workers live for less than a period of their CPU clock: whether one is sampled depends on
 * a tick landing while it runs, after its first expiry (a CPU timer is checked at ticks), so it
 * is left to chance. Every eighth works for 20 ms of its own CPU (4 periods at 199 Hz, 5 ticks
 * at 250 Hz): the profile has worker samples however the CPU comes. */
NOINLINE void *worker_main(void *arg)
{
	char name[16];
	snprintf(name, sizeof(name), "worker-%ld", (long)arg % 4);
	pthread_setname_np(pthread_self(), name);
	if ((long)arg % 8) {
		worker_work();
	} else {
		double t0 = thread_cpu_s();
		do
			worker_work();
		while (thread_cpu_s() - t0 < 0.020);
	}
	return NULL;
}

NOINLINE void *steady_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "steady");
	while (!atomic_load(&stop_workers))
		worker_work();
	return NULL;
}

NOINLINE void run_threads(void)
{
	pthread_t steady;
	if (pthread_create(&steady, NULL, steady_main, NULL))
		die("pthread_create");
	long made = 0;
	while (samples() < want) {
		pthread_t t[4];
		for (int i = 0; i < 4; i++)
			if (pthread_create(&t[i], NULL, worker_main, (void *)made++))
				die("pthread_create");
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
	}
	atomic_store(&stop_workers, 1);
	pthread_join(steady, NULL);
	printf("created %ld\n", made + 1);
}

/* ---- late: threads that ran before the profiler */
NOINLINE void *late_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "early");
	while (!atomic_load(&stop_workers))
		worker_work();
	return NULL;
}

/* ---- fork */
NOINLINE void child_work(void)
{
	for (int i = 0; i < 200; i++)
		spin(20000);
	sink++;
}

NOINLINE void parent_work(void)
{
	for (int i = 0; i < 200; i++)
		spin(20000);
	sink++;
}

static void *child_thread(void *arg)
{
	(void)arg;
	child_work();
	return NULL;
}

NOINLINE void run_fork(void)
{
	int children = 0, bad = 0;
	while (samples() < want || children < 4) {
		pid_t pid = fork();
		if (pid < 0)
			die("fork");
		if (pid == 0) {
			/* the parent's profiler is inert here: these must not hang or crash */
			pthread_t t;
			if (pthread_create(&t, NULL, child_thread, NULL))
				_exit(3);
			pthread_join(t, NULL);
			void *h = dlopen("libm.so.6", RTLD_NOW);
			if (h)
				dlclose(h);
			if (uw_prof_stop(prof))
				_exit(4);
			uw_prof_free(prof);
			if (children == 1)
				_exit(0);
			if (children == 2) {
				/* a profiler of its own, to OUT.child */
				char path[4096];
				snprintf(path, sizeof(path), "%s.child", out);
				UW_OPTS(uw_prof_opts, o, .output = path, .hz = 999, .ring_bytes = RING_BYTES);
				struct uw_prof *c = uw_prof_start(&o);
				if (!c)
					_exit(5);
				UW_OPTS(uw_prof_stats, st);
				while (!uw_prof_stats(c, &st) && st.samples < 20)
					child_work();
				if (uw_prof_stop(c))
					_exit(6);
				uw_prof_free(c);
			}
			exit(0);
		}
		parent_work();
		int st;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			bad++;
		children++;
	}
	printf("children %d\nchildren_failed %d\n", children, bad);
}

/* ---- dlopen: libprofhot_a.so and libprofhot_b.so define hot_a and hot_b */
NOINLINE void call_a(int (*f)(int)) { f(30000); sink++; }
NOINLINE void call_b(int (*f)(int)) { f(30000); sink++; }

NOINLINE void run_dlopen(const char *dir)
{
	char pa[4096], pb[4096];
	snprintf(pa, sizeof(pa), "%s/libprofhot_a.so", dir);
	snprintf(pb, sizeof(pb), "%s/libprofhot_b.so", dir);
	int rounds = 0, same = 0;
	while (samples() < want || rounds < 20) {
		void *ha = dlopen(pa, RTLD_NOW);
		if (!ha)
			die(dlerror());
		int (*fa)(int) = (int (*)(int))dlsym(ha, "hot_a");
		void *addr_a = (void *)fa;
		for (int i = 0; i < 30; i++)
			call_a(fa);
		dlclose(ha);
		void *hb = dlopen(pb, RTLD_NOW);
		if (!hb)
			die(dlerror());
		int (*fb)(int) = (int (*)(int))dlsym(hb, "hot_b");
		/* the two libraries are alike: b usually lands where a was */
		if ((uintptr_t)fb == (uintptr_t)addr_a)
			same++;
		for (int i = 0; i < 30; i++)
			call_b(fb);
		dlclose(hb);
		rounds++;
	}
	printf("rounds %d\nsame_address %d\n", rounds, same);
}

/* ---- remap: code replaced by hand. libprofhot_a.so is opened and worked in until the profiler
 * knows its mapping; then the same pages of libprofhot_b.so (built from the same source: its
 * code is the same bytes at the same offsets, hot_b where hot_a was) are mapped over its code
 * with MAP_FIXED, and remap_work calls the address hot_a had: that code is libprofhot_b.so's */
NOINLINE void remap_work(int (*f)(int)) { f(30000); sink++; }

NOINLINE void run_remap(const char *dir)
{
	char pa[4096], pb[4096];
	snprintf(pa, sizeof(pa), "%s/libprofhot_a.so", dir);
	snprintf(pb, sizeof(pb), "%s/libprofhot_b.so", dir);
	void *ha = dlopen(pa, RTLD_NOW);
	if (!ha)
		die(dlerror());
	int (*fa)(int) = (int (*)(int))dlsym(ha, "hot_a");
	uint64_t n0 = samples();
	while (samples() < n0 + want / 2)
		call_a(fa);
	/* libprofhot_a.so's code: its mapping that holds hot_a */
	FILE *m = fopen("/proc/self/maps", "r");
	char line[4096 + 256];
	unsigned long long lo = 0, hi = 0, off = 0;
	while (m && fgets(line, sizeof(line), m)) {
		unsigned long long s, e, o;
		char perms[8];
		if (sscanf(line, "%llx-%llx %7s %llx", &s, &e, perms, &o) == 4 && s <= (uintptr_t)fa &&
		    (uintptr_t)fa < e && strstr(line, "libprofhot_a.so")) {
			lo = s, hi = e, off = o;
			break;
		}
	}
	if (m)
		fclose(m);
	if (!hi)
		die("hot_a's mapping not found in /proc/self/maps");
	int fd = open(pb, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die(pb);
	/* (the bytes must be the same, or the call below runs something else) */
	void *b = mmap(NULL, hi - lo, PROT_READ, MAP_PRIVATE, fd, (off_t)off);
	if (b == MAP_FAILED)
		die("mmap libprofhot_b.so");
	int same = !memcmp(b, (void *)(uintptr_t)lo, hi - lo);
	munmap(b, hi - lo);
	printf("same_code %d\n", same);
	if (!same)
		die("libprofhot_b.so's code differs from libprofhot_a.so's");
	/* PROFWORK_REMAP_RAW=1: the system call itself (no mmap the profiler may interpose) */
	const char *raw = getenv("PROFWORK_REMAP_RAW");
	void *r;
	if (raw && *raw == '1')
		r = (void *)syscall(SYS_mmap, (void *)(uintptr_t)lo, (size_t)(hi - lo), (long)(PROT_READ | PROT_EXEC),
				    (long)(MAP_PRIVATE | MAP_FIXED), (long)fd, (long)off);
	else
		r = mmap((void *)(uintptr_t)lo, hi - lo, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED, fd, (off_t)off);
	if (r != (void *)(uintptr_t)lo)
		die("mmap MAP_FIXED");
	close(fd);
	n0 = samples();
	while (samples() < n0 + want / 2)
		remap_work(fa);
}

/* ---- signals */
static atomic_long handled;

NOINLINE void handler_work(void)
{
	spin(5000000);
	sink++;
}

NOINLINE void own_handler(int sig)
{
	(void)sig;
	handler_work();
	atomic_fetch_add(&handled, 1); /* (after the call: not a tail call, its frame shows) */
}

static atomic_int sender_go;

static void *sender_main(void *arg)
{
	long n = (long)arg;
	pid_t pid = getpid();
	for (long i = 0; i < n; i++) {
		while (atomic_load(&sender_go) == 0)
			;
		atomic_store(&sender_go, 0);
		kill(pid, SIGPROF);
	}
	return NULL;
}

NOINLINE void main_loop(void)
{
	spin(5000);
	sink++;
}

NOINLINE void run_signals(const char *when)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = own_handler;
	sigemptyset(&sa.sa_mask);
	if (!strcmp(when, "before")) {
		if (sigaction(SIGPROF, &sa, NULL))
			die("sigaction");
		start(99);
	} else {
		start(99);
		if (sigaction(SIGPROF, &sa, &old))
			die("sigaction");
		/* the program reads back what it had: the default */
		printf("old_is_default %d\n", old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO));
	}
	/* one signal at a time (a signal sent while one is pending would merge with it): sent by
	 * another thread, and by other processes; each waits for the last to be handled */
	long sent = 0, n = 100;
	pthread_t t;
	if (pthread_create(&t, NULL, sender_main, (void *)n))
		die("pthread_create");
	for (long i = 0; i < n; i++) {
		atomic_store(&sender_go, 1);
		sent++;
		while (atomic_load(&handled) < sent)
			main_loop();
	}
	pthread_join(t, NULL);
	for (int i = 0; i < 20; i++) {
		pid_t c = fork();
		if (c == 0) {
			kill(getppid(), SIGPROF);
			_exit(0);
		}
		sent++;
		while (atomic_load(&handled) < sent)
			main_loop();
		waitpid(c, NULL, 0);
	}
	while (samples() < want)
		main_loop();
	finish();
	struct sigaction now;
	sigaction(SIGPROF, NULL, &now);
	printf("sent %ld\nhandled %ld\nhandler_kept %d\n", sent, atomic_load(&handled), now.sa_handler == own_handler);
}

/* ---- longjmp: the program's handler never returns. Its ITIMER_PROF (100 Hz of the process's
 * CPU) sends it SIGPROF, and it siglongjmps back to the loop each time; it must be called for
 * each of those signals the profiler saw (foreign_signals), not once. The loop calls nothing
 * that a jump out of may leave in the middle of a lock (uw_prof_stats takes one): a fixed 0.5 s
 * of main's CPU, read from the clock. */
static sigjmp_buf lj_env;
static volatile sig_atomic_t lj_armed;
static volatile long lj_calls, lj_late;
static volatile double lj_t0;

NOINLINE void lj_handler(int sig)
{
	(void)sig;
	if (!lj_armed) {
		lj_late++; /* (pending when the timer was disarmed: returns) */
		return;
	}
	lj_calls++;
	siglongjmp(lj_env, 1);
}

NOINLINE void lj_work(void)
{
	spin(20000);
	sink++;
}

NOINLINE void run_longjmp(const char *when)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = lj_handler;
	sigemptyset(&sa.sa_mask);
	if (!strcmp(when, "before")) {
		if (sigaction(SIGPROF, &sa, NULL))
			die("sigaction");
		start(199);
	} else {
		start(199);
		if (sigaction(SIGPROF, &sa, NULL))
			die("sigaction");
	}
	UW_OPTS(uw_prof_stats, st0);
	if (uw_prof_stats(prof, &st0))
		die("uw_prof_stats");
	lj_t0 = thread_cpu_s();
	lj_armed = 1;
	struct itimerval it = { { 0, 10000 }, { 0, 10000 } }, off = { { 0, 0 }, { 0, 0 } };
	if (setitimer(ITIMER_PROF, &it, NULL))
		die("setitimer");
	sigsetjmp(lj_env, 1);
	while (thread_cpu_s() - lj_t0 < 0.5)
		lj_work();
	lj_armed = 0;
	setitimer(ITIMER_PROF, &off, NULL);
	UW_OPTS(uw_prof_stats, st);
	if (uw_prof_stats(prof, &st))
		die("uw_prof_stats");
	printf("lj_calls %ld\nlj_late %ld\nlj_foreign %" PRIu64 "\nlj_samples %" PRIu64 "\n", lj_calls, lj_late,
	       st.foreign_signals - st0.foreign_signals, st.samples - st0.samples);
}

/* ---- malloc */
NOINLINE void alloc_work(void)
{
	void *v[64];
	for (int k = 0; k < 100; k++) {
		for (int i = 0; i < 64; i++)
			v[i] = malloc((size_t)(16 + (i * 7919 + k * 31) % 4000));
		for (int i = 0; i < 64; i++)
			free(v[(i * 17) % 64]);
	}
	sink++;
}

NOINLINE void *alloc_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop_workers))
		alloc_work();
	return NULL;
}

/* ---- deep */
NOINLINE int deep(int depth)
{
	volatile char pad[64];
	pad[0] = (char)depth;
	int r;
	if (depth == 0) {
		while (samples() < want)
			spin(20000);
		r = 0;
	} else {
		r = deep(depth - 1) + 1;
	}
	sink += (unsigned long)r + (unsigned long)pad[0];
	return r;
}

/* ---- altstack */
NOINLINE void alt_work(void)
{
	spin(400000);
	sink++;
}

static atomic_long alt_done;

NOINLINE void alt_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	alt_work();
	atomic_fetch_add(&alt_done, 1);
}

NOINLINE void run_altstack(void)
{
	stack_t ss = { .ss_sp = malloc(1 << 16), .ss_size = 1 << 16, .ss_flags = 0 };
	if (!ss.ss_sp || sigaltstack(&ss, NULL))
		die("sigaltstack");
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = alt_handler;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL))
		die("sigaction");
	long n = 0;
	while (samples() < want) {
		raise(SIGUSR1);
		n++;
	}
	stack_t off = { .ss_flags = SS_DISABLE };
	sigaltstack(&off, NULL);
	free(ss.ss_sp);
	printf("raised %ld\ndone %ld\n", n, atomic_load(&alt_done));
}

/* ---- coroutine */
static ucontext_t co_main, co_ctx;

NOINLINE void co_work(void)
{
	while (samples() < want)
		spin(20000);
	sink++;
}

NOINLINE void co_entry(void)
{
	co_work();
	sink++; /* (not a tail call: its frame shows) */
}

NOINLINE void run_coroutine(void)
{
	size_t size = 1 << 18;
	void *stack = malloc(size);
	if (!stack || getcontext(&co_ctx))
		die("getcontext");
	co_ctx.uc_stack.ss_sp = stack;
	co_ctx.uc_stack.ss_size = size;
	co_ctx.uc_link = &co_main;
	makecontext(&co_ctx, co_entry, 0);
	if (swapcontext(&co_main, &co_ctx))
		die("swapcontext");
	free(stack);
}

/* ---- cycles */
NOINLINE void *churn_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop_workers)) {
		pthread_t t;
		if (!pthread_create(&t, NULL, worker_main, (void *)1L))
			pthread_join(t, NULL);
	}
	return NULL;
}

NOINLINE void run_cycles(unsigned n)
{
	pthread_t w[3];
	pthread_create(&w[0], NULL, steady_main, NULL);
	pthread_create(&w[1], NULL, churn_main, NULL);
	pthread_create(&w[2], NULL, alloc_main, NULL);
	uint64_t total = 0;
	unsigned failed = 0;
	for (unsigned i = 0; i < n; i++) {
		UW_OPTS(uw_prof_opts, o, .hz = 1000, .scan_ms = 1);
		struct uw_prof *p = uw_prof_start(&o);
		if (!p)
			die("uw_prof_start");
		/* a sample or two in each cycle (a few ticks of CPU time at most) */
		UW_OPTS(uw_prof_stats, st);
		for (int k = 0; k < 100 && !uw_prof_stats(p, &st) && st.samples < 2; k++)
			spin(20000);
		if (uw_prof_stop(p))
			failed++;
		uw_prof_stats(p, &st);
		total += st.samples;
		uw_prof_free(p);
	}
	atomic_store(&stop_workers, 1);
	for (int i = 0; i < 3; i++)
		pthread_join(w[i], NULL);
	printf("cycles %u\nfailed %u\ncycle_samples %" PRIu64 "\n", n, failed, total);
}

/* ---- blocked: the timer's signal blocked (as threads of programs that leave signals to one
 * thread do): the periods run after a thread's last signal are counted when its timer goes */
NOINLINE void cpu_work(double s)
{
	double t0 = thread_cpu_s();
	while (thread_cpu_s() - t0 < s)
		spin(20000);
}

static void *masked_main(void *arg)
{
	(void)arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	pthread_setname_np(pthread_self(), "masked");
	cpu_work(0.2);
	return NULL;
}

NOINLINE int before_block(void) { return spin(40000) + 1; }

NOINLINE void run_blocked(void)
{
	pthread_t t;
	if (pthread_create(&t, NULL, masked_main, NULL))
		die("pthread_create");
	pthread_join(t, NULL);
	while (samples() < want)
		before_block();
	sigset_t prof_sig;
	sigemptyset(&prof_sig);
	sigaddset(&prof_sig, SIGPROF);
	pthread_sigmask(SIG_BLOCK, &prof_sig, NULL);
	cpu_work(0.3);
}

/* ---- sigmask: threads whose signal is blocked from their start: no sample, their time in the
 * profile as lost, saying why */
static void *sigmask_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "blocker");
	cpu_work(0.25);
	return NULL;
}

NOINLINE void run_sigmask(bool own)
{
	sigset_t prof_sig, old;
	sigemptyset(&prof_sig);
	sigaddset(&prof_sig, SIGPROF);
	pthread_t t[2];
	for (int i = 0; i < 2; i++) {
		pthread_sigmask(SIG_BLOCK, &prof_sig, &old);
		if (pthread_create(&t[i], NULL, sigmask_main, NULL))
			die("pthread_create");
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	if (own) {
		while (samples() < want)
			before_block();
	} else {
		cpu_work(0.1);
	}
}

/* ---- api: options, errors, the calls' order, errno across the handler */
static int api_failed;

static void api_expect(bool ok, const char *what)
{
	if (!ok) {
		printf("api_fail %s (errno %d)\n", what, errno);
		api_failed = 1;
	}
}

static void *api_thread(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop_workers))
		worker_work();
	return NULL;
}

NOINLINE void run_api(void)
{
	UW_OPTS(uw_prof_opts, bad_hz, .hz = 20000);
	errno = 0;
	api_expect(!uw_prof_start(&bad_hz) && errno == EINVAL, "hz 20000 refused");
	UW_OPTS(uw_prof_opts, bad_sig, .signal = SIGKILL);
	errno = 0;
	api_expect(!uw_prof_start(&bad_sig) && errno == EINVAL, "SIGKILL refused");
	/* a fault's signal: a crash would be dropped as another's signal and fault again for ever */
	static const int faults[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS };
	for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++) {
		UW_OPTS(uw_prof_opts, fault_sig, .signal = faults[i]);
		errno = 0;
		api_expect(!uw_prof_start(&fault_sig) && errno == EINVAL, "a fault's signal refused");
	}
	UW_OPTS(uw_prof_opts, bad_stack, .stack_bytes = 100);
	errno = 0;
	api_expect(!uw_prof_start(&bad_stack) && errno == EINVAL, "stack_bytes 100 refused");
	/* a newer caller's larger struct: zero past ours is fine, anything else refused */
	struct {
		struct uw_prof_opts o;
		uint64_t more;
	} big;
	memset(&big, 0, sizeof(big));
	big.o.sz = sizeof(big);
	big.more = 1;
	errno = 0;
	api_expect(!uw_prof_start(&big.o) && errno == EINVAL, "unknown trailing field refused");
	api_expect(uw_prof_register_thread() == -ESRCH, "register without a profiler: -ESRCH");
	/* an older caller's smaller struct: the fields it has */
	struct uw_prof_opts small;
	memset(&small, 0, sizeof(small));
	small.sz = offsetof(struct uw_prof_opts, clock);
	small.hz = 499;
	struct uw_prof *p = uw_prof_start(&small);
	api_expect(p != NULL, "an older, smaller opts struct");
	errno = 0;
	api_expect(!uw_prof_start(NULL) && errno == EBUSY, "a second profiler: EBUSY");
	api_expect(uw_prof_write(p, "/dev/null", UW_PROF_PPROF) == -EINVAL, "write before stop: -EINVAL");
	api_expect(uw_prof_profile(p) == NULL, "no profile before stop");
	struct uw_prof_stats st;
	memset(&st, 0, sizeof(st));
	api_expect(uw_prof_stats(p, &st) == -EINVAL, "stats without sz: -EINVAL");
	api_expect(uw_prof_register_thread() == 0, "register the calling thread again");
	/* errno survives the handler: the program's value stays while samples are taken */
	UW_OPTS(uw_prof_stats, s2);
	int changed = 0;
	while (!uw_prof_stats(p, &s2) && s2.samples < 20) {
		errno = 4242;
		spin(20000);
		if (errno != 4242)
			changed++;
	}
	api_expect(!changed, "errno kept across the handler");
	api_expect(uw_prof_stop(p) == 0 && uw_prof_stop(p) == 0, "stop twice");
	api_expect(uw_prof_profile(p) != NULL, "the profile after stop");
	api_expect(uw_prof_write(p, "/dev/null", 7) == -EINVAL, "an unknown format refused");
	char before[16] = "", after[16] = "";
	prctl(PR_GET_NAME, before);
	api_expect(uw_prof_write(p, out, UW_PROF_AUTO) == 0, "write after stop");
	/* naming the frames (DWARF inflated on a helper thread) leaves the caller's name alone */
	prctl(PR_GET_NAME, after);
	api_expect(!strcmp(before, after), "the thread's name kept while the profile is written");
	uw_prof_free(p);
	/* max_threads: the threads beyond it are refused, and counted */
	UW_OPTS(uw_prof_opts, two, .max_threads = 2, .scan_ms = 5);
	p = uw_prof_start(&two);
	api_expect(p != NULL, "max_threads 2");
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, api_thread, NULL);
	UW_OPTS(uw_prof_stats, s3);
	while (!uw_prof_stats(p, &s3) && s3.threads_refused < 2)
		spin(20000);
	api_expect(s3.threads_now == 2, "two threads sampled");
	atomic_store(&stop_workers, 1);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	uw_prof_free(p); /* (running: stopped first) */
	uw_prof_free(NULL);
	printf("api %s\n", api_failed ? "failed" : "ok");
}

/* ---- wall */
NOINLINE void sleeper_wait(void)
{
	struct timespec ts = { 0, 2000000 };
	nanosleep(&ts, NULL);
}

NOINLINE void *sleeper_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "sleeper");
	while (!atomic_load(&stop_workers))
		sleeper_wait();
	return NULL;
}

/* ---- lost */
/* the profiler's thread, by the name it gives itself */
static pid_t collector_tid(void)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		die("/proc/self/task");
	pid_t found = 0;
	struct dirent *e;
	while (!found && (e = readdir(d))) {
		char path[300], comm[32] = "";
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && !strcmp(comm, "unwound-prof\n"))
			found = atoi(e->d_name);
		fclose(f);
	}
	closedir(d);
	if (!found) {
		fprintf(stderr, "profwork: no thread named unwound-prof\n");
		exit(1);
	}
	return found;
}

/* While the collector is stopped it may hold any of the profiler's locks or malloc's: this
 * thread only computes and reads its CPU clock until it has worked secs. */
NOINLINE void lost_work(double secs)
{
	double t0 = thread_cpu_s();
	while (thread_cpu_s() - t0 < secs)
		spin(20000);
}

static int lost_go[2], lost_done[2];

NOINLINE void lost_deep(int depth, double secs)
{
	volatile char pad[2048];
	pad[0] = (char)depth;
	if (depth > 0) {
		lost_deep(depth - 1, secs);
	} else {
		char b;
		if (read(lost_go[0], &b, 1) != 1)
			die("the tracer did not stop the profiler's thread");
		lost_work(secs);
		if (write(lost_done[1], "x", 1) != 1)
			die("write");
	}
	sink += (unsigned long)pad[0];
}

/* own: a profiler of its own, else the one UNWOUND_PROF started (lost-env) */
NOINLINE void run_lost(bool own)
{
	if (own) {
		/* a ring of 64 KiB: three samples of the 16 KiB copy */
		UW_OPTS(uw_prof_opts, o, .output = out, .hz = 199, .ring_bytes = 65536);
		prof = uw_prof_start(&o);
		if (!prof)
			die("uw_prof_start");
	}
	pid_t tid = collector_tid();
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	if (pipe(lost_go) || pipe(lost_done))
		die("pipe");
	fflush(NULL);
	pid_t c = fork();
	if (c < 0)
		die("fork");
	if (c == 0) {
		/* PTRACE_INTERRUPT stops that thread alone; the process runs on */
		int st;
		if (ptrace(PTRACE_SEIZE, tid, 0, 0) || ptrace(PTRACE_INTERRUPT, tid, 0, 0) ||
		    waitpid(tid, &st, __WALL) != tid) {
			perror("profwork: stopping the profiler's thread");
			_exit(1);
		}
		char b;
		if (write(lost_go[1], "x", 1) != 1 || read(lost_done[0], &b, 1) != 1)
			_exit(1);
		_exit(ptrace(PTRACE_DETACH, tid, 0, 0) ? 1 : 0);
	}
	close(lost_go[1]);
	lost_deep(5, 0.4);
	int st;
	if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st))
		die("the tracer failed");
	/* and some more work once the collector runs again */
	if (own) {
		uint64_t n = samples();
		while (samples() < n + 20)
			spin(20000);
	} else {
		lost_work(0.1);
	}
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: profwork MODE OUT [SAMPLES] [ARG]\n");
		return 2;
	}
	const char *mode = argv[1];
	if (!strcmp(mode, "spawn")) {
		/* runs a command and waits for it (a parent that execs a child) */
		pid_t c = fork();
		if (c == 0) {
			execvp(argv[2], argv + 2);
			_exit(127);
		}
		int st;
		if (c < 0 || waitpid(c, &st, 0) != c)
			die("fork");
		return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
	}
	out = argv[2];
	if (argc > 3)
		want = strtoull(argv[3], NULL, 10);
	const char *arg = argc > 4 ? argv[4] : "";
	if (!strcmp(mode, "signals")) {
		run_signals(arg);
		return 0;
	}
	if (!strcmp(mode, "longjmp")) {
		run_longjmp(arg);
		finish();
		return 0;
	}
	if (!strcmp(mode, "api")) {
		run_api();
		return api_failed;
	}
	if (!strcmp(mode, "cycles")) {
		run_cycles((unsigned)want);
		return 0;
	}
	if (!strcmp(mode, "late")) {
		pthread_t t[2];
		for (int i = 0; i < 2; i++)
			if (pthread_create(&t[i], NULL, late_main, NULL))
				die("pthread_create");
		start(99);
		while (samples() < want)
			worker_work();
		atomic_store(&stop_workers, 1);
		for (int i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
		finish();
		return 0;
	}
	if (!strcmp(mode, "closefds")) {
		/* a daemon's start: every descriptor it did not open closed, files of its own opened
		 * at those numbers; the profiler must neither write into them nor spin on what it had */
		start(199);
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
		int fds[8];
		for (int i = 0; i < 8; i++) {
			fds[i] = memfd_create("profwork-own", MFD_CLOEXEC);
			if (fds[i] < 0)
				die("memfd_create");
		}
		while (samples() < want)
			worker_work();
		/* the process's CPU time while this thread sleeps: the collector's */
		struct timespec c0, c1, nap = { 0, 500000000 };
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
		nanosleep(&nap, NULL);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
		long long foreign = 0;
		for (int i = 0; i < 8; i++)
			foreign += lseek(fds[i], 0, SEEK_END);
		printf("foreign_bytes %lld\nidle_cpu_ms %lld\n", foreign,
		       ((long long)(c1.tv_sec - c0.tv_sec) * 1000000000ll + (c1.tv_nsec - c0.tv_nsec)) / 1000000);
		finish();
		return 0;
	}
	if (!strcmp(mode, "wall")) {
		UW_OPTS(uw_prof_opts, o, .output = out, .hz = 199, .clock = UW_PROF_WALL, .ring_bytes = RING_BYTES);
		prof = uw_prof_start(&o);
		if (!prof)
			die("uw_prof_start");
		pthread_t t;
		if (pthread_create(&t, NULL, sleeper_main, NULL))
			die("pthread_create");
		while (samples() < want)
			worker_work();
		atomic_store(&stop_workers, 1);
		pthread_join(t, NULL);
		finish();
		return 0;
	}
	if (!strcmp(mode, "lost")) {
		run_lost(true);
		finish();
		return 0;
	}
	if (!strcmp(mode, "lost-env")) {
		run_lost(false);
		return 0;
	}
	if (!strcmp(mode, "sigmask-env")) {
		run_sigmask(false);
		return 0;
	}
	start(strcmp(mode, "calltree") ? 199 : 99);
	if (!strcmp(mode, "calltree")) {
		run_calltree();
	} else if (!strcmp(mode, "inline")) {
		run_inline();
	} else if (!strcmp(mode, "threads")) {
		run_threads();
	} else if (!strcmp(mode, "fork")) {
		run_fork();
	} else if (!strcmp(mode, "dlopen")) {
		run_dlopen(arg);
	} else if (!strcmp(mode, "remap")) {
		run_remap(arg);
	} else if (!strcmp(mode, "malloc")) {
		pthread_t t[2];
		for (int i = 0; i < 2; i++)
			if (pthread_create(&t[i], NULL, alloc_main, NULL))
				die("pthread_create");
		while (samples() < want)
			alloc_work();
		atomic_store(&stop_workers, 1);
		for (int i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
	} else if (!strcmp(mode, "deep")) {
		deep(atoi(arg));
	} else if (!strcmp(mode, "altstack")) {
		run_altstack();
	} else if (!strcmp(mode, "coroutine")) {
		run_coroutine();
	} else if (!strcmp(mode, "blocked")) {
		run_blocked();
	} else if (!strcmp(mode, "sigmask")) {
		run_sigmask(true);
	} else {
		fprintf(stderr, "profwork: unknown mode %s\n", mode);
		return 2;
	}
	finish();
	return 0;
}
