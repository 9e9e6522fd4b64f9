/* SPDX-License-Identifier: MIT */
/*
 * One tracker shared by several unwinding threads while one thread feeds it events (issue 25):
 * the program captures samples of its own stack (registers and a stack copy, as the kernel
 * would), unwinds them once on one thread for reference, then has NTHREADS threads unwind them
 * all ITERS times each against the same tracker (uw_unwind_sample, uw_unwind_sample_each,
 * uw_tracker_lookup), while the main thread keeps feeding it events of other processes (COMM,
 * MMAP, FORK, EXIT, sweeps). Every thread's stacks must equal the reference, frame for frame.
 * Then the same from cold with a live tracker told nothing (every mapping asked of the kernel
 * during the unwindings, the walks redone). Only the public header (0.1's calls): it builds
 * against an older library too. Run under ThreadSanitizer by make check-tsan.
 *
 * usage: sharedtracker check NTHREADS ITERS
 *        sharedtracker bench NTHREADS ITERS   (samples/s on 1 thread, then NTHREADS sharing)
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <unwound/unwound.h>

/* perf's x86_64 register numbers (asm/perf_regs.h) */
enum { R_BX = 1, R_BP = 6, R_SP = 7, R_IP = 8, R_12 = 20, R_13 = 21, R_14 = 22, R_15 = 23 };
#define MASK                                                                                                     \
	((1ull << R_BX) | (1ull << R_BP) | (1ull << R_SP) | (1ull << R_IP) | (1ull << R_12) | (1ull << R_13) |     \
	 (1ull << R_14) | (1ull << R_15))

struct snapshot {
	uint64_t regs[8]; /* BX BP SP IP R12 R13 R14 R15 */
	uint8_t stack[16384];
	uint64_t stack_size;
};

#define NSNAP 8
#define MAXF 64
static struct snapshot snaps[NSNAP];
static uint64_t stack_top;
static uint32_t self;

#ifdef __clang__
#define FRAME __attribute__((noinline))
#else
#define FRAME __attribute__((noinline, noclone))
#endif

__attribute__((no_sanitize_address, no_sanitize("thread"))) static void copy_stack(uint8_t *dst, uint64_t src,
                                                                                   uint64_t n)
{
	const volatile uint8_t *p = (const volatile uint8_t *)(uintptr_t)src;
	for (uint64_t i = 0; i < n; i++)
		dst[i] = p[i];
}

FRAME static void capture(struct snapshot *s)
{
	uint64_t *r = s->regs;
	__asm__ volatile("mov %%rbx, 0(%0)\n\t"
			 "mov %%rbp, 8(%0)\n\t"
			 "mov %%rsp, 16(%0)\n\t"
			 "lea 0(%%rip), %%rax\n\t"
			 "mov %%rax, 24(%0)\n\t"
			 "mov %%r12, 32(%0)\n\t"
			 "mov %%r13, 40(%0)\n\t"
			 "mov %%r14, 48(%0)\n\t"
			 "mov %%r15, 56(%0)\n\t"
			 :
			 : "r"(r)
			 : "rax", "memory");
	uint64_t sp = r[2], n = stack_top - sp;
	s->stack_size = n < sizeof(s->stack) ? n : sizeof(s->stack);
	copy_stack(s->stack, sp, s->stack_size);
}

/* samples at several depths of a recursion */
FRAME static void descend(struct snapshot *s, int depth)
{
	if (depth == 0)
		capture(s);
	else
		descend(s, depth - 1);
	__asm__ volatile("" ::: "memory");
}

static int feed_mappings(struct uw_tracker *t, uint32_t pid, int only_stack)
{
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return -1;
	char line[4096 + 256], perms[8], path[4096];
	unsigned long long start, end, off, ino;
	unsigned maj, min;
	int err = 0;
	while (!err && fgets(line, sizeof(line), f)) {
		path[0] = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %4095[^\n]", &start, &end, perms, &off, &maj, &min, &ino,
			   path) < 7)
			continue;
		if (!strcmp(path, "[stack]"))
			stack_top = end;
		if (only_stack || perms[2] != 'x')
			continue;
		UW_OPTS(uw_mmap_event, ev, .pid = pid, .tid = pid, .addr = start, .len = end - start, .pgoff = off,
			.prot = PROT_READ | PROT_EXEC, .flags = MAP_PRIVATE, .maj = maj, .min = min, .ino = ino,
			.path = path[0] ? path : "//anon");
		err = uw_tracker_mmap(t, &ev);
	}
	fclose(f);
	return err;
}

/* what a frame shows, comparable across trackers (modules by path) */
struct fr {
	uint64_t pc, rel_pc, sp;
	const char *path;
	unsigned method;
};
struct stack {
	unsigned n, stop;
	struct fr f[MAXF];
};
static struct stack ref[NSNAP];

static void in_of(int i, struct uw_sample_regs *in)
{
	memset(in, 0, sizeof(*in));
	in->sz = sizeof(*in);
	in->pid = in->tid = self;
	in->time = UINT64_MAX;
	in->abi = 2; /* PERF_SAMPLE_REGS_ABI_64 (0.1's header names no constant) */
	in->regs = snaps[i].regs;
	in->regs_mask = MASK;
	in->stack = snaps[i].stack;
	in->stack_size = snaps[i].stack_size;
}

static void keep(struct stack *st, const struct uw_frame *f, unsigned n, unsigned stop)
{
	st->n = n;
	st->stop = stop;
	for (unsigned i = 0; i < n && i < MAXF; i++)
		st->f[i] = (struct fr){ f[i].pc, f[i].rel_pc, f[i].sp, f[i].module ? uw_module_path(f[i].module) : "",
					f[i].method };
}

static int unwind_one(struct uw_tracker *t, int i, struct stack *st)
{
	struct uw_sample_regs in;
	in_of(i, &in);
	struct uw_frame frames[MAXF];
	UW_OPTS(uw_unwind_result, res);
	int e = uw_unwind_sample(t, &in, frames, MAXF, &res);
	if (e)
		return e;
	keep(st, frames, res.nr_frames, res.stop);
	return 0;
}

struct each_ctx {
	struct stack st;
};
static int on_frame(void *ctx, const struct uw_frame *f)
{
	struct each_ctx *c = ctx;
	if (c->st.n < MAXF) {
		struct stack one;
		keep(&one, f, 1, 0);
		c->st.f[c->st.n] = one.f[0];
	}
	c->st.n++;
	return 0;
}

static int same(const struct stack *a, const struct stack *b, char *why, size_t len)
{
	if (a->n != b->n || a->stop != b->stop) {
		snprintf(why, len, "%u frames (stop %s) where the reference has %u (stop %s)", a->n,
			 uw_stop_reason_str(a->stop), b->n, uw_stop_reason_str(b->stop));
		return 0;
	}
	for (unsigned i = 0; i < a->n && i < MAXF; i++) {
		const struct fr *x = &a->f[i], *y = &b->f[i];
		if (x->pc != y->pc || x->rel_pc != y->rel_pc || x->sp != y->sp || x->method != y->method ||
		    strcmp(x->path, y->path)) {
			snprintf(why, len,
				 "frame %u: pc %#" PRIx64 " rel %#" PRIx64 " sp %#" PRIx64 " method %u %s where the reference has pc %#" PRIx64
				 " rel %#" PRIx64 " sp %#" PRIx64 " method %u %s",
				 /* method numbers: uw_frame_method_str is of 0.2, and this test runs on 0.1 too */
				 i, x->pc, x->rel_pc, x->sp, x->method, x->path, y->pc, y->rel_pc, y->sp, y->method, y->path);
			return 0;
		}
	}
	return 1;
}

struct worker {
	pthread_t th;
	struct uw_tracker *t;
	unsigned id, iters;
	int check;
	uint64_t samples;
	double cpu;       /* the thread's CPU seconds */
	char err[512];
};

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	double c0 = cpu_s();
	for (unsigned it = 0; it < w->iters && !w->err[0]; it++) {
		for (int i = 0; i < NSNAP && !w->err[0]; i++) {
			int k = (i + (int)w->id + (int)it) % NSNAP; /* threads on different samples at once */
			struct stack st;
			char why[256];
			if ((it + w->id) % 3 == 2) { /* the callback form too */
				struct each_ctx c = { .st.n = 0 };
				struct uw_sample_regs in;
				in_of(k, &in);
				UW_OPTS(uw_unwind_result, res);
				if (uw_unwind_sample_each(w->t, &in, on_frame, &c, &res)) {
					snprintf(w->err, sizeof(w->err), "uw_unwind_sample_each failed");
					break;
				}
				c.st.stop = res.stop;
				st = c.st;
			} else if (unwind_one(w->t, k, &st)) {
				snprintf(w->err, sizeof(w->err), "uw_unwind_sample failed");
				break;
			}
			w->samples++;
			if (!w->check)
				continue;
			if (!same(&st, &ref[k], why, sizeof(why))) {
				snprintf(w->err, sizeof(w->err), "thread %u, iteration %u, sample %d: %s", w->id, it, k, why);
				break;
			}
			/* lookups of the frames' pcs, as the reference found them */
			for (unsigned f = 0; f < st.n && f < MAXF; f++) {
				struct uw_module *m = NULL;
				uint64_t rel = 0;
				int e = uw_tracker_lookup(w->t, self, st.f[f].pc, &m, &rel);
				const char *path = !e && m ? uw_module_path(m) : "";
				if (e || strcmp(path, ref[k].f[f].path) || (m && rel != ref[k].f[f].rel_pc)) {
					snprintf(w->err, sizeof(w->err),
						 "thread %u: uw_tracker_lookup(%#" PRIx64 ") = %d, %s rel %#" PRIx64
						 " (the unwinding said %s rel %#" PRIx64 ")",
						 w->id, st.f[f].pc, e, path, rel, ref[k].f[f].path, ref[k].f[f].rel_pc);
					break;
				}
			}
		}
	}
	w->cpu = cpu_s() - c0;
	return NULL;
}

/* Events of other processes, in time order, while the workers unwind: each takes the write
 * lock. @return the number fed. */
static uint64_t churn(struct uw_tracker *t, const int *done, unsigned nworkers)
{
	uint64_t n = 0, time = 1000;
	for (uint32_t round = 0;; round++) {
		int all = 1;
		for (unsigned i = 0; i < nworkers; i++)
			all &= __atomic_load_n(&done[i], __ATOMIC_ACQUIRE);
		if (all && round >= 4)
			break;
		uint32_t pid = 3000000 + round % 1000;
		char name[16];
		snprintf(name, sizeof(name), "churn%u", round % 7);
		uw_tracker_fork(t, self, self, pid, pid, time++);
		uw_tracker_comm(t, pid, pid, name, 1, time++);
		UW_OPTS(uw_mmap_event, ev, .pid = pid, .tid = pid, .time = time++, .addr = 0x400000 + 4096 * (round % 64),
			.len = 4096, .prot = PROT_READ | PROT_EXEC, .path = "/nonexistent/churn");
		uw_tracker_mmap(t, &ev);
		uw_tracker_fork(t, pid, pid, pid, pid + 1, time++);
		uw_tracker_exit(t, pid, pid + 1, time++);
		uw_tracker_exit(t, pid, pid, time++);
		if (round % 16 == 0)
			uw_tracker_sweep(t, time + 2000000000ull); /* (their grace is over) */
		n += 6;
	}
	return n;
}

struct run_res {
	uint64_t samples, events;
	double secs, cpu;
	char err[512];
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int done_flags[64];

struct wrap {
	struct worker *w;
	int *done;
};
static void *work_then_done(void *arg)
{
	struct wrap *x = arg;
	work(x->w);
	__atomic_store_n(x->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* nthreads workers on t, the main thread feeding events meanwhile (feed) */
static struct uw_tracker *own[64]; /* bench: a tracker per thread instead */

static void run(struct uw_tracker *t, unsigned nthreads, unsigned iters, int check, int feed, struct run_res *rr)
{
	struct worker ws[64];
	struct wrap wraps[64];
	memset(ws, 0, sizeof(ws));
	memset(rr, 0, sizeof(*rr));
	double t0 = now_s();
	for (unsigned i = 0; i < nthreads; i++) {
		done_flags[i] = 0;
		ws[i] = (struct worker){ .t = own[i] ? own[i] : t, .id = i, .iters = iters, .check = check };
		wraps[i] = (struct wrap){ &ws[i], &done_flags[i] };
		if (pthread_create(&ws[i].th, NULL, work_then_done, &wraps[i])) {
			snprintf(rr->err, sizeof(rr->err), "pthread_create failed");
			nthreads = i;
			break;
		}
	}
	if (feed)
		rr->events = churn(t, done_flags, nthreads);
	for (unsigned i = 0; i < nthreads; i++) {
		pthread_join(ws[i].th, NULL);
		rr->samples += ws[i].samples;
		rr->cpu += ws[i].cpu;
		if (ws[i].err[0] && !rr->err[0])
			snprintf(rr->err, sizeof(rr->err), "%s", ws[i].err);
	}
	rr->secs = now_s() - t0;
}

static struct uw_tracker *fed_tracker(struct uw_session *s)
{
	struct uw_tracker *t = uw_tracker_new(s, NULL);
	if (!t || uw_tracker_comm(t, self, self, "sharedtracker", 1, 0) || feed_mappings(t, self, 0)) {
		fprintf(stderr, "sharedtracker: could not make a tracker of this process\n");
		exit(1);
	}
	return t;
}

int main(int argc, char **argv)
{
	if (argc != 4 || (strcmp(argv[1], "check") && strcmp(argv[1], "bench"))) {
		fprintf(stderr, "usage: sharedtracker check|bench NTHREADS ITERS\n");
		return 2;
	}
	int check = !strcmp(argv[1], "check");
	unsigned nthreads = (unsigned)atoi(argv[2]), iters = (unsigned)atoi(argv[3]);
	if (nthreads < 1 || nthreads > 64 || !iters) {
		fprintf(stderr, "sharedtracker: 1 to 64 threads, at least 1 iteration\n");
		return 2;
	}
	self = (uint32_t)getpid();
	struct uw_session *s = uw_session_new(NULL);
	if (!s)
		return 1;
	struct uw_tracker *t = fed_tracker(s);
	for (int i = 0; i < NSNAP; i++)
		descend(&snaps[i], i);
	/* the reference: one thread, nothing else going on */
	for (int i = 0; i < NSNAP; i++) {
		if (unwind_one(t, i, &ref[i]) || ref[i].n < (unsigned)i + 3 || ref[i].stop != UW_STOP_END_OF_STACK) {
			fprintf(stderr, "sharedtracker: sample %d: %u frames, stop %s: expected at least %d to the root\n",
				i, ref[i].n, uw_stop_reason_str(ref[i].stop), i + 3);
			return 1;
		}
	}
	struct run_res rr;
	if (!check) {
		/* warm, no events: unwinding alone, 1 thread, nthreads sharing, nthreads with a
		 * tracker each (wall-clock rates, and CPU ns per sample: on a loaded machine the
		 * threads may not run at once) */
		run(t, 1, iters, 0, 0, &rr);
		double one = (double)rr.samples / rr.secs, one_cpu = rr.cpu * 1e9 / (double)rr.samples;
		run(t, nthreads, iters, 0, 0, &rr);
		double many = (double)rr.samples / rr.secs, many_cpu = rr.cpu * 1e9 / (double)rr.samples;
		for (unsigned i = 0; i < nthreads; i++) {
			own[i] = fed_tracker(s);
			struct stack warm;
			for (int k = 0; k < NSNAP; k++)
				unwind_one(own[i], k, &warm);
		}
		run(t, nthreads, iters, 0, 0, &rr);
		double sep = (double)rr.samples / rr.secs, sep_cpu = rr.cpu * 1e9 / (double)rr.samples;
		for (unsigned i = 0; i < nthreads; i++)
			uw_tracker_free(own[i]);
		printf("1 thread: %.0f samples/s (%.0f CPU ns each); %u threads sharing one tracker: %.0f samples/s "
		       "(%.2fx; %.0f CPU ns each); %u threads with a tracker each: %.0f samples/s (%.2fx; %.0f CPU ns "
		       "each)\n",
		       one, one_cpu, nthreads, many, many / one, many_cpu, nthreads, sep, sep / one, sep_cpu);
		uw_tracker_free(t);
		uw_session_free(s);
		return 0;
	}
	run(t, nthreads, iters, 1, 1, &rr);
	if (rr.err[0]) {
		fprintf(stderr, "sharedtracker: shared tracker: %s\n", rr.err);
		return 1;
	}
	UW_OPTS(uw_tracker_stats, st);
	uw_tracker_stats(t, &st);
	printf("%u threads x %u iterations: %" PRIu64 " samples unwound as the reference; %" PRIu64
	       " events fed meanwhile (%" PRIu64 " processes forgotten)\n",
	       nthreads, iters, rr.samples, rr.events, st.processes_freed);
	uw_tracker_free(t);

	/* a live tracker told nothing: the first unwindings ask the kernel for every mapping, on
	 * several threads at once */
	UW_OPTS(uw_tracker_opts, lo, .live = 1);
	struct uw_tracker *lt = uw_tracker_new(s, &lo);
	if (!lt)
		return 1;
	run(lt, nthreads, iters < 4 ? iters : 4, 1, 0, &rr);
	if (rr.err[0]) {
		fprintf(stderr, "sharedtracker: live tracker: %s\n", rr.err);
		return 1;
	}
	uw_tracker_stats(lt, &st);
	printf("live: %" PRIu64 " samples unwound as the reference, %" PRIu64 " mappings asked of the kernel\n",
	       rr.samples, st.procmap_queries + st.maps_scans);
	uw_tracker_free(lt);
	uw_session_free(s);
	return 0;
}
