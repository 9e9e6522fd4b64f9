/* SPDX-License-Identifier: MIT */
/*
 * Symbolization across threads: the distinct user frames of a recording, named with their
 * source lines and inline chains (uw_symbolize_frames, lines on) by 1 thread, then by N threads
 * each given an equal share, each time in a new session (nothing symbolized yet: symbol
 * tables, DWARF and every cache built during the timed part; the files' DWARF cache directory
 * as it is, see --no-dwarf-cache).
 *
 * Usage: symscale [-t THREADS] [-r ROUNDS] [--no-dwarf-cache] [--interleave] FILE...
 *
 * Per file and round: the recording is read and unwound (not timed: it opens the modules and
 * builds their unwind tables, not their symbols), its distinct (module, pc) frames taken in the
 * order they first appear, then symbolized in batches of 256 by 1 thread and by THREADS threads
 * (contiguous shares, or every THREADS-th frame with --interleave). Prints the wall time of each
 * and their ratio (medians over the rounds), and checks that every run named every frame alike.
 * The threads are named symscale-NxI (the I-th of N) for profiles.
 * Uses only the public header.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
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
	struct uw_session *s;
	const struct uw_frame *v;
	size_t n, stride;
	uint64_t digest; /* of what was named */
	int err;
	double cpu;      /* the thread's CPU seconds */
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

static void *run_share(void *arg)
{
	struct share *sh = arg;
	double c0 = thread_cpu();
	struct uw_symbolize_opts o = { .sz = sizeof(o), .lines = 1 };
	struct uw_frame batch[BATCH];
	size_t k = 0;
	for (size_t i = 0; i < sh->n && !sh->err; i += sh->stride) {
		batch[k++] = sh->v[i];
		if (k < BATCH && i + sh->stride < sh->n)
			continue;
		struct uw_symbols *r;
		sh->err = uw_symbolize_frames(sh->s, batch, k, &o, &r);
		if (sh->err)
			break;
		for (size_t j = 0; j < r->count; j++) {
			const struct uw_symbolized *y = &r->syms[j];
			uint64_t h = str_hash(y->name) ^ mix(str_hash(y->file) + y->line) ^ mix(y->nr_inlined + 7 * y->reason);
			for (uint32_t q = 0; q < y->nr_inlined; q++)
				h ^= mix(str_hash(y->inlined[q].function) + q) ^ mix(str_hash(y->inlined[q].file) ^ y->inlined[q].line);
			sh->digest += mix(h ^ str_hash(y->module ? uw_module_path(y->module) : "") ^ y->rel_pc);
		}
		uw_symbols_free(r);
		k = 0;
	}
	sh->cpu = thread_cpu() - c0;
	return NULL;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One cold session: read the file, then name its distinct frames on nthreads threads.
 * @return the seconds the naming took, or a negative value on error. */
static double one_run(const char *path, unsigned nthreads, bool no_cache, bool interleave, size_t *npcs,
                      uint64_t *digest, double *cpu)
{
	struct uw_session_opts so = { .sz = sizeof(so), .no_dwarf_cache = no_cache, .offline = 1 };
	struct uw_session *s = uw_session_new(&so);
	if (!s)
		return -1;
	struct frames f = { 0 };
	struct uw_reader_opts ro = { .sz = sizeof(ro), .on_sample = on_sample, .ctx = &f };
	struct uw_reader *r = uw_reader_open(s, path, &ro);
	int rerr = r ? uw_reader_run(r) : -1;
	if (rerr && (!r || !f.n)) {
		fprintf(stderr, "symscale: %s: %s\n", path, uw_session_errmsg(s));
		uw_reader_free(r);
		uw_session_free(s);
		return -1;
	}
	if (rerr && npcs && !*npcs) /* (said once per file: the first run) */
		fprintf(stderr, "symscale: %s: %s (the frames read before it are named)\n", path, uw_session_errmsg(s));
	uw_reader_free(r);
	struct share sh[64];
	pthread_t th[64];
	double t0 = now();
	for (unsigned i = 0; i < nthreads; i++) {
		if (interleave) {
			sh[i] = (struct share){ s, f.v + i, f.n > i ? f.n - i : 0, nthreads, 0, 0, 0 };
		} else {
			size_t lo = f.n * i / nthreads, hi = f.n * (i + 1) / nthreads;
			sh[i] = (struct share){ s, f.v + lo, hi - lo, 1, 0, 0, 0 };
		}
		if (pthread_create(&th[i], NULL, run_share, &sh[i])) {
			fprintf(stderr, "symscale: cannot start a thread\n");
			exit(1);
		}
		/* named by the run it is in, to tell them apart in a profile (perf report --comm) */
		char name[16];
		snprintf(name, sizeof(name), "symscale-%ux%u", nthreads % 64, i % 64);
		pthread_setname_np(th[i], name);
	}
	*digest = 0;
	*cpu = 0;
	int err = 0;
	for (unsigned i = 0; i < nthreads; i++) {
		pthread_join(th[i], NULL);
		*digest += sh[i].digest;
		*cpu += sh[i].cpu;
		if (sh[i].err)
			err = sh[i].err;
	}
	double dt = now() - t0;
	*npcs = f.n;
	free(f.v);
	free(f.keys);
	uw_session_free(s);
	if (err) {
		fprintf(stderr, "symscale: %s: %s\n", path, uw_strerror(err));
		return -1;
	}
	return dt;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	unsigned nthreads = 2, rounds = 5;
	bool no_cache = false, interleave = false;
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-t") && i + 1 < argc)
			nthreads = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "-r") && i + 1 < argc)
			rounds = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--no-dwarf-cache"))
			no_cache = true;
		else if (!strcmp(argv[i], "--interleave"))
			interleave = true;
		else
			break;
	}
	if (i == argc || nthreads < 1 || nthreads > 64 || rounds < 1 || rounds > 100) {
		fprintf(stderr, "usage: symscale [-t THREADS (1-64)] [-r ROUNDS] [--no-dwarf-cache] [--interleave] FILE...\n");
		return 2;
	}
	printf("| recording | distinct pcs | 1 thread (ms) | %u threads (ms) | speed-up | CPU ms, 1 thread | CPU ms, %u threads |\n"
	       "|---|---:|---:|---:|---:|---:|---:|\n",
	       nthreads, nthreads);
	int status = 0;
	for (; i < argc; i++) {
		double t1[100], tn[100], c1[100], cn[100];
		size_t n = 0;
		uint64_t d1 = 0, dn = 0, want = 0;
		bool same = true;
		for (unsigned k = 0; k < rounds; k++) {
			/* alternately, so that a drift of the machine's speed weighs on both */
			t1[k] = one_run(argv[i], 1, no_cache, interleave, &n, &d1, &c1[k]);
			tn[k] = one_run(argv[i], nthreads, no_cache, interleave, &n, &dn, &cn[k]);
			if (t1[k] < 0 || tn[k] < 0)
				return 1;
			if (k == 0)
				want = d1;
			same &= d1 == want && dn == want;
		}
		double r[100];
		for (unsigned k = 0; k < rounds; k++)
			r[k] = t1[k] / tn[k];
		qsort(t1, rounds, sizeof(double), cmp_double);
		qsort(tn, rounds, sizeof(double), cmp_double);
		qsort(r, rounds, sizeof(double), cmp_double);
		qsort(c1, rounds, sizeof(double), cmp_double);
		qsort(cn, rounds, sizeof(double), cmp_double);
		printf("| %s | %zu | %.1f | %.1f | %.2fx (%.2f-%.2f) | %.1f | %.1f |\n", argv[i], n, t1[rounds / 2] * 1e3,
		       tn[rounds / 2] * 1e3, r[rounds / 2], r[0], r[rounds - 1], c1[rounds / 2] * 1e3, cn[rounds / 2] * 1e3);
		if (!same) {
			fprintf(stderr, "symscale: %s: the runs did not name the frames alike\n", argv[i]);
			status = 1;
		}
	}
	return status;
}
