/* SPDX-License-Identifier: MIT */
/*
 * Symbolization across threads: the distinct user frames of a recording, named with their
 * source lines and inline chains (uw_symbolize_frames, lines on) by 1 thread, then by N threads
 * each given an equal share, each time in a new session (nothing symbolized yet: symbol
 * tables, DWARF and every cache built during the timed part; the files' DWARF cache directory
 * as it is, see --no-dwarf-cache).
 *
 * Usage: symscale [-t THREADS] [-r ROUNDS] [-k SESSIONS] [--fifo PRIO] [--no-ceiling]
 *                 [--no-dwarf-cache] [--interleave] FILE...
 *
 * Per file and round: the recording is read and unwound (not timed: it opens the modules and
 * builds their unwind tables, not their symbols), its distinct (module, pc) frames taken in the
 * order they first appear, then symbolized in batches of 256 by 1 thread and by THREADS threads
 * (contiguous shares, or every THREADS-th frame with --interleave), the two in turns (1 first in
 * even rounds, N first in odd ones). With -k, a round names the frames of K sessions (read
 * before it) one after another: K times the work, so that one interruption weighs less. The
 * threads start together (a barrier) and are timed from there to the last one's end.
 *
 * The ceiling (unless --no-ceiling): THREADS threads each naming all the frames in a session of
 * its own, at once: THREADS times the 1-thread work with nothing shared but the process. Its
 * speed-up, THREADS x (1 thread's time) / its time, is what this machine gives THREADS copies of
 * the work (other load, the CPUs' shared caches and memory, the host's siblings under a VM): the
 * code's own limit shows as the speed-up against that.
 *
 * Prints, per file, medians over the rounds with the interquartile range in brackets: the wall
 * time of 1 and THREADS threads, their ratio (the speed-up), the ceiling; the CPU time of 1
 * thread and of THREADS threads (all of them), the CPU-bound speed-up (1 thread's CPU / the
 * busiest thread's: what the split allows if no thread ever waited or was preempted), and the
 * time the THREADS threads spent off a CPU (their wall time less their CPU time, summed:
 * sleeping on a lock, or waiting for a CPU). It checks that every run named every frame alike
 * (-v prints, per round, a digest of the names, lines and inline chains: to compare builds).
 * --fifo PRIO runs the timed threads (only them: the reading stays at the normal policy, and
 * does not spend the real-time budget) under SCHED_FIFO, ahead of the machine's other work.
 * The threads are named symscale-NxI (the I-th of N) for profiles.
 * Uses only the public header.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <unwound/unwound.h>

#define BATCH 256

struct frames {
	struct uw_frame *v;
	size_t n, cap;
	/* (module, rel_pc, is_call) seen: open addressing on a hash */
	uint64_t *keys;
	size_t kcap;
};

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static int add_frame(struct frames *f, const struct uw_frame *fr)
{
	if (!fr->module)
		return 0;
	uint64_t key = mix((uint64_t)(uintptr_t)fr->module ^ mix(fr->rel_pc * 2 + (fr->is_call != 0))) | 1;
	if (2 * (f->n + 1) > f->kcap) {
		size_t nc = f->kcap ? 2 * f->kcap : 1 << 16;
		uint64_t *nk = calloc(nc, sizeof(*nk));
		if (!nk)
			return -ENOMEM;
		for (size_t i = 0; i < f->kcap; i++)
			if (f->keys[i])
				for (size_t j = f->keys[i] & (nc - 1);; j = (j + 1) & (nc - 1))
					if (!nk[j]) {
						nk[j] = f->keys[i];
						break;
					}
		free(f->keys);
		f->keys = nk;
		f->kcap = nc;
	}
	/* (a 64-bit hash stands for the frame: a collision drops one frame of the set) */
	for (size_t j = key & (f->kcap - 1);; j = (j + 1) & (f->kcap - 1)) {
		if (f->keys[j] == key)
			return 0;
		if (!f->keys[j]) {
			f->keys[j] = key;
			break;
		}
	}
	if (f->n == f->cap) {
		size_t nc = f->cap ? 2 * f->cap : 4096;
		struct uw_frame *nv = realloc(f->v, nc * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		f->v = nv;
		f->cap = nc;
	}
	f->v[f->n++] = *fr;
	return 0;
}

static int on_sample(void *ctx, const struct uw_sample *s)
{
	for (uint32_t i = 0; i < s->nr_user; i++)
		if (add_frame(ctx, &s->user[i]))
			return 1;
	return 0;
}

struct share {
	struct uw_session **s;      /* the sessions it names frames in, one after another */
	const struct frames *f;     /* each one's frames */
	unsigned nsess;
	size_t lo, hi, stride;      /* its share of each session's frames */
	pthread_barrier_t *go;
	uint64_t digest;            /* of what was named */
	int err;
	double t0, t1, cpu;         /* when it began and ended, its CPU seconds */
	char name[16];              /* symscale-NxI */
};

static uint64_t str_hash(const char *p)
{
	uint64_t h = 1469598103934665603ull;
	for (; p && *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	return h;
}

static double thread_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The results kept until the timed part ends (the digest is not part of the work measured). */
struct kept {
	struct uw_symbols **v;
	size_t n, cap;
};

static void name_share(struct share *sh, struct uw_session *s, const struct frames *f, struct kept *kept)
{
	struct uw_symbolize_opts o = { .sz = sizeof(o), .lines = 1 };
	struct uw_frame batch[BATCH];
	size_t k = 0, hi = sh->hi < f->n ? sh->hi : f->n;
	for (size_t i = sh->lo; i < hi && !sh->err; i += sh->stride) {
		batch[k++] = f->v[i];
		if (k < BATCH && i + sh->stride < hi)
			continue;
		struct uw_symbols *r;
		sh->err = uw_symbolize_frames(s, batch, k, &o, &r);
		if (sh->err)
			break;
		if (kept->n == kept->cap) {
			size_t nc = kept->cap ? 2 * kept->cap : 256;
			struct uw_symbols **nv = realloc(kept->v, nc * sizeof(*nv));
			if (!nv) {
				sh->err = -ENOMEM;
				uw_symbols_free(r);
				break;
			}
			kept->v = nv;
			kept->cap = nc;
		}
		kept->v[kept->n++] = r;
		k = 0;
	}
}

static uint64_t digest_of(const struct uw_symbols *r)
{
	uint64_t d = 0;
	for (size_t j = 0; j < r->count; j++) {
		const struct uw_symbolized *y = &r->syms[j];
		uint64_t h = str_hash(y->name) ^ mix(str_hash(y->file) + y->line) ^ mix(y->nr_inlined + 7 * y->reason);
		for (uint32_t q = 0; q < y->nr_inlined; q++)
			h ^= mix(str_hash(y->inlined[q].function) + q) ^ mix(str_hash(y->inlined[q].file) ^ y->inlined[q].line);
		d += mix(h ^ str_hash(y->module ? uw_module_path(y->module) : "") ^ y->rel_pc);
	}
	return d;
}

static void *run_share(void *arg)
{
	struct share *sh = arg;
	/* (named before it starts: a profile's samples of the timed part all carry the name) */
	pthread_setname_np(pthread_self(), sh->name);
	struct kept kept = { 0 };
	/* (its array made now: not a reallocation in the timed part) */
	kept.v = malloc((kept.cap = 4096) * sizeof(*kept.v));
	if (!kept.v)
		kept.cap = 0;
	pthread_barrier_wait(sh->go);
	sh->t0 = now();
	double c0 = thread_cpu();
	for (unsigned k = 0; k < sh->nsess && !sh->err; k++)
		name_share(sh, sh->s[k], &sh->f[k], &kept);
	sh->cpu = thread_cpu() - c0;
	sh->t1 = now();
	for (size_t i = 0; i < kept.n; i++) {
		sh->digest += digest_of(kept.v[i]);
		uw_symbols_free(kept.v[i]);
	}
	free(kept.v);
	return NULL;
}

/* A cold session with the recording read: its distinct frames in *f. @return 0, -1 on error. */
static int read_session(const char *path, bool no_cache, bool say, struct uw_session **out, struct frames *f)
{
	struct uw_session_opts so = { .sz = sizeof(so), .no_dwarf_cache = no_cache, .offline = 1 };
	struct uw_session *s = uw_session_new(&so);
	*f = (struct frames){ 0 };
	*out = NULL;
	if (!s)
		return -1;
	struct uw_reader_opts ro = { .sz = sizeof(ro), .on_sample = on_sample, .ctx = f };
	struct uw_reader *r = uw_reader_open(s, path, &ro);
	int rerr = r ? uw_reader_run(r) : -1;
	if (rerr && (!r || !f->n)) {
		fprintf(stderr, "symscale: %s: %s\n", path, uw_session_errmsg(s));
		uw_reader_free(r);
		uw_session_free(s);
		free(f->v);
		free(f->keys);
		return -1;
	}
	if (rerr && say)
		fprintf(stderr, "symscale: %s: %s (the frames read before it are named)\n", path, uw_session_errmsg(s));
	uw_reader_free(r);
	*out = s;
	return 0;
}

enum run_kind { RUN_ONE, RUN_SHARED, RUN_COPIES };

struct run_out {
	double wall;      /* seconds, from the threads' start to the last one's end */
	double cpu;       /* all threads' CPU seconds */
	double cpu_max;   /* the busiest thread's */
	double off;       /* the threads' wall less CPU, summed */
	uint64_t digest;
	size_t npcs;
};

struct opts {
	unsigned nthreads, rounds, nsess;
	int fifo;         /* SCHED_FIFO priority of the timed threads; 0: the normal policy */
	bool no_cache, interleave, ceiling, verbose;
};

/* One run: RUN_ONE names the frames on 1 thread, RUN_SHARED on o->nthreads threads sharing the
 * sessions, RUN_COPIES on o->nthreads threads each with sessions of its own, naming them all;
 * o->nsess sessions after another. @return 0, -1 on error. */
static int one_run(const char *path, const struct opts *o, enum run_kind kind, bool first, struct run_out *out)
{
	unsigned nth = kind == RUN_ONE ? 1 : o->nthreads;
	unsigned nsess = kind == RUN_COPIES ? nth * o->nsess : o->nsess;
	struct uw_session **ss = calloc(nsess, sizeof(*ss));
	struct frames *fs = calloc(nsess, sizeof(*fs));
	if (!ss || !fs) {
		fprintf(stderr, "symscale: out of memory\n");
		exit(1);
	}
	int err = 0;
	for (unsigned k = 0; k < nsess && !err; k++)
		err = read_session(path, o->no_cache, first && k == 0, &ss[k], &fs[k]);
	for (unsigned k = 1; k < nsess && !err; k++)
		if (fs[k].n != fs[0].n) {
			fprintf(stderr, "symscale: %s: two reads gave different frames (%zu, %zu)\n", path, fs[0].n, fs[k].n);
			err = -1;
		}
	struct share sh[64];
	pthread_t th[64];
	pthread_barrier_t go;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	if (o->fifo) {
		struct sched_param sp = { .sched_priority = o->fifo };
		pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
		pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
		pthread_attr_setschedparam(&attr, &sp);
	}
	pthread_barrier_init(&go, NULL, nth);
	size_t n = fs[0].n;
	for (unsigned i = 0; i < nth && !err; i++) {
		sh[i] = (struct share){ .s = ss, .f = fs, .nsess = o->nsess, .lo = 0, .hi = n, .stride = 1, .go = &go };
		if (kind == RUN_COPIES) {
			sh[i].s = ss + i * o->nsess;
			sh[i].f = fs + i * o->nsess;
		} else if (kind == RUN_SHARED && o->interleave) {
			sh[i].lo = i;
			sh[i].stride = nth;
		} else if (kind == RUN_SHARED) {
			sh[i].lo = n * i / nth;
			sh[i].hi = n * (i + 1) / nth;
		}
		/* named by the run it is in, to tell them apart in a profile (perf report --comm) */
		snprintf(sh[i].name, sizeof(sh[i].name), "symscale-%ux%u", nth % 64, i % 64);
		int e = pthread_create(&th[i], &attr, run_share, &sh[i]);
		if (e) {
			fprintf(stderr, "symscale: cannot start a thread: %s%s\n", strerror(e),
				e == EPERM ? " (--fifo needs CAP_SYS_NICE)" : "");
			exit(1);
		}
	}
	pthread_attr_destroy(&attr);
	*out = (struct run_out){ .npcs = n };
	double t0 = 1e300, t1 = 0;
	for (unsigned i = 0; i < nth && !err; i++) {
		pthread_join(th[i], NULL);
		out->digest += sh[i].digest;
		out->cpu += sh[i].cpu;
		if (sh[i].cpu > out->cpu_max)
			out->cpu_max = sh[i].cpu;
		out->off += (sh[i].t1 - sh[i].t0) - sh[i].cpu;
		t0 = sh[i].t0 < t0 ? sh[i].t0 : t0;
		t1 = sh[i].t1 > t1 ? sh[i].t1 : t1;
		if (sh[i].err) {
			fprintf(stderr, "symscale: %s: %s\n", path, uw_strerror(sh[i].err));
			err = -1;
		}
	}
	out->wall = t1 - t0;
	pthread_barrier_destroy(&go);
	for (unsigned k = 0; k < nsess; k++) {
		free(fs[k].v);
		free(fs[k].keys);
		uw_session_free(ss[k]);
	}
	free(ss);
	free(fs);
	return err;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The median and quartiles of v[0..n) (sorted in place). */
struct quart {
	double q1, med, q3;
};
static struct quart quartiles(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return (struct quart){ v[(n - 1) / 4], n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2, v[(3 * (n - 1) + 3) / 4] };
}

int main(int argc, char **argv)
{
	struct opts o = { .nthreads = 2, .rounds = 15, .nsess = 1, .ceiling = true };
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-t") && i + 1 < argc)
			o.nthreads = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "-r") && i + 1 < argc)
			o.rounds = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "-k") && i + 1 < argc)
			o.nsess = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--fifo") && i + 1 < argc)
			o.fifo = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--no-ceiling"))
			o.ceiling = false;
		else if (!strcmp(argv[i], "--no-dwarf-cache"))
			o.no_cache = true;
		else if (!strcmp(argv[i], "--interleave"))
			o.interleave = true;
		else if (!strcmp(argv[i], "-v"))
			o.verbose = true;
		else
			break;
	}
	if (i == argc || o.nthreads < 1 || o.nthreads > 64 || o.rounds < 1 || o.rounds > 1000 || o.nsess < 1 ||
	    o.nsess * o.nthreads > 256 || o.fifo < 0 || o.fifo > 99) {
		fprintf(stderr, "usage: symscale [-t THREADS (1-64)] [-r ROUNDS (1-1000)] [-k SESSIONS] [--fifo PRIO] "
				"[--no-ceiling] [--no-dwarf-cache] [--interleave] [-v] FILE...\n");
		return 2;
	}
	printf("| recording | distinct pcs | 1 thread (ms) | %u threads (ms) | speed-up | ceiling | CPU ms, 1 thread "
	       "| CPU ms, %u threads | CPU-bound speed-up | off-CPU ms, %u threads |\n"
	       "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
	       o.nthreads, o.nthreads, o.nthreads);
	fflush(stdout);
	int status = 0;
	unsigned R = o.rounds;
	double *v = calloc(9 * (size_t)R, sizeof(double));
	if (!v)
		return 1;
	double *t1 = v, *tn = v + R, *sp = v + 2 * R, *ceil = v + 3 * R, *c1 = v + 4 * R, *cn = v + 5 * R,
	       *cb = v + 6 * R, *off = v + 7 * R, *tc = v + 8 * R;
	for (; i < argc; i++) {
		size_t n = 0;
		uint64_t want = 0;
		bool same = true;
		for (unsigned k = 0; k < R; k++) {
			/* in turns, so that neither always follows the other (nor a drift of the
			 * machine's speed weighs on one) */
			struct run_out one, shared, copies = { 0 };
			bool one_first = k % 2 == 0;
			if ((one_first && one_run(argv[i], &o, RUN_ONE, k == 0, &one)) ||
			    one_run(argv[i], &o, RUN_SHARED, k == 0 && !one_first, &shared) ||
			    (!one_first && one_run(argv[i], &o, RUN_ONE, false, &one)) ||
			    (o.ceiling && one_run(argv[i], &o, RUN_COPIES, false, &copies)))
				return 1;
			if (k == 0)
				want = one.digest;
			same &= one.digest == want && shared.digest == want && (!o.ceiling || copies.digest == o.nthreads * want);
			n = one.npcs;
			t1[k] = one.wall;
			tn[k] = shared.wall;
			sp[k] = one.wall / shared.wall;
			tc[k] = copies.wall;
			ceil[k] = o.ceiling ? o.nthreads * one.wall / copies.wall : 0;
			c1[k] = one.cpu;
			cn[k] = shared.cpu;
			cb[k] = one.cpu / shared.cpu_max;
			off[k] = shared.off;
			if (o.verbose)
				fprintf(stderr, "%s round %u: 1 thread %.1f ms (CPU %.1f), %u threads %.1f ms (CPU %.1f, busiest %.1f, "
						"off %.1f), speed-up %.2fx, copies %.1f ms: ceiling %.2fx; digest %016" PRIx64 "\n",
					argv[i], k, one.wall * 1e3, one.cpu * 1e3, o.nthreads, shared.wall * 1e3, shared.cpu * 1e3,
					shared.cpu_max * 1e3, shared.off * 1e3, sp[k], copies.wall * 1e3, ceil[k], one.digest);
		}
		struct quart q1 = quartiles(t1, R), qn = quartiles(tn, R), qs = quartiles(sp, R), qc = quartiles(ceil, R),
			     qc1 = quartiles(c1, R), qcn = quartiles(cn, R), qcb = quartiles(cb, R), qo = quartiles(off, R);
		char ceiling[64] = "-";
		if (o.ceiling)
			snprintf(ceiling, sizeof(ceiling), "%.2fx [%.2f-%.2f]", qc.med, qc.q1, qc.q3);
		printf("| %s | %zu | %.1f | %.1f | %.2fx [%.2f-%.2f] | %s | %.1f | %.1f | %.2fx [%.2f-%.2f] | %.1f [%.1f-%.1f] |\n",
		       argv[i], n, q1.med * 1e3, qn.med * 1e3, qs.med, qs.q1, qs.q3, ceiling, qc1.med * 1e3, qcn.med * 1e3,
		       qcb.med, qcb.q1, qcb.q3, qo.med * 1e3, qo.q1 * 1e3, qo.q3 * 1e3);
		fflush(stdout);
		if (!same) {
			fprintf(stderr, "symscale: %s: the runs did not name the frames alike\n", argv[i]);
			status = 1;
		}
	}
	free(v);
	return status;
}
