/* SPDX-License-Identifier: MIT */
/*
 * Threads sharing one session: N threads, each with its own reader and tracker, read the same
 * recording at once against one session (cold: every module is opened, every unwind table and
 * symbol table built, while the others want it too), unwinding and symbolizing every sample
 * (names, source lines, inline chains, kernel names). Each thread's stacks must equal, sample
 * for sample, those of one thread alone on a session of its own. Run under ThreadSanitizer by
 * make check-tsan.
 *
 * usage: threads FILE NTHREADS
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unwound/unwound.h>

/* FNV-1a over what a sample shows */
static uint64_t mix(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static uint64_t mix_str(uint64_t h, const char *s)
{
	return s ? mix(h, s, strlen(s) + 1) : mix(h, "\1", 1);
}

struct run {
	struct uw_session *s;
	const char *file;
	uint64_t *digests;
	size_t n, cap;
	uint64_t frames, named, lines;
	int err;
	char errmsg[256];
};

static int on_sample(void *ctx, const struct uw_sample *smp)
{
	struct run *r = ctx;
	uint64_t h = 0xcbf29ce484222325ull;
	h = mix(h, &smp->pid, sizeof(smp->pid));
	h = mix(h, &smp->tid, sizeof(smp->tid));
	h = mix(h, &smp->time, sizeof(smp->time));
	h = mix_str(h, smp->comm);
	h = mix(h, &smp->stop_reason, sizeof(smp->stop_reason));
	for (unsigned i = 0; i < smp->nr_kernel; i++) {
		struct uw_symbol ks;
		uw_kernel_symbolize(smp->recorded_kernel, smp->kernel[i], &ks);
		h = mix(h, &smp->kernel[i], 8);
		h = mix_str(h, ks.name);
	}
	UW_OPTS(uw_symbolize_opts, so, .lines = 1);
	struct uw_symbols *syms;
	if (uw_symbolize_frames(r->s, smp->user, smp->nr_user, &so, &syms))
		return -1;
	for (size_t i = 0; i < syms->count; i++) {
		const struct uw_symbolized *y = &syms->syms[i];
		h = mix(h, &smp->user[i].pc, 8);
		h = mix_str(h, y->module ? uw_module_path(y->module) : NULL);
		h = mix(h, &y->rel_pc, 8);
		h = mix(h, &y->reason, sizeof(y->reason));
		h = mix_str(h, y->name);
		h = mix(h, &y->offset, 8);
		h = mix_str(h, y->file);
		h = mix(h, &y->line, 4);
		for (unsigned k = 0; k < y->nr_inlined; k++) {
			h = mix_str(h, y->inlined[k].function);
			h = mix_str(h, y->inlined[k].file);
			h = mix(h, &y->inlined[k].line, 4);
		}
		r->frames++;
		r->named += y->name != NULL;
		r->lines += y->line != 0;
	}
	uw_symbols_free(syms);
	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 4096;
		uint64_t *nd = realloc(r->digests, r->cap * sizeof(*nd));
		if (!nd)
			return -1;
		r->digests = nd;
	}
	r->digests[r->n++] = h;
	return 0;
}

static void *run_main(void *arg)
{
	struct run *r = arg;
	struct uw_tracker *t = uw_tracker_new(r->s, NULL);
	UW_OPTS(uw_reader_opts, ro, .on_sample = on_sample, .ctx = r, .tracker = t);
	struct uw_reader *rd = t ? uw_reader_open(r->s, r->file, &ro) : NULL;
	r->err = rd ? uw_reader_run(rd) : -1;
	if (r->err)
		snprintf(r->errmsg, sizeof(r->errmsg), "%s", uw_session_errmsg(r->s));
	uw_reader_free(rd);
	uw_tracker_free(t);
	return NULL;
}

static struct uw_session *session(void)
{
	/* (the kernel's names too: the running kernel's kallsyms, the recording being of it) */
	return uw_session_new(NULL);
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	int nthreads = atoi(argv[2]);
	if (nthreads < 1 || nthreads > 64)
		return 2;
	/* all threads at once, on one cold session */
	struct uw_session *shared = session();
	struct run *runs = calloc((size_t)nthreads, sizeof(*runs));
	pthread_t *th = calloc((size_t)nthreads, sizeof(*th));
	if (!shared || !runs || !th)
		return 1;
	for (int i = 0; i < nthreads; i++) {
		runs[i].s = shared;
		runs[i].file = argv[1];
		if (pthread_create(&th[i], NULL, run_main, &runs[i]))
			return 1;
	}
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	/* one thread alone, on a session of its own */
	struct run ref = { .s = session(), .file = argv[1] };
	run_main(&ref);
	int fail = 0;
	if (ref.err) {
		fprintf(stderr, "FAIL: reading alone: %s\n", ref.errmsg);
		fail = 1;
	}
	printf("alone: %zu samples, %" PRIu64 " user frames, %" PRIu64 " named, %" PRIu64 " with a source line\n", ref.n,
	       ref.frames, ref.named, ref.lines);
	for (int i = 0; i < nthreads; i++) {
		size_t differ = 0;
		for (size_t k = 0; k < runs[i].n && k < ref.n; k++)
			differ += runs[i].digests[k] != ref.digests[k];
		printf("thread %d: %zu samples, %zu differ from alone\n", i, runs[i].n, differ);
		if (runs[i].err) {
			fprintf(stderr, "FAIL: thread %d: %s\n", i, runs[i].errmsg);
			fail = 1;
		}
		if (differ || runs[i].n != ref.n) {
			fprintf(stderr, "FAIL: thread %d's stacks are not those of one thread alone\n", i);
			fail = 1;
		}
		free(runs[i].digests);
	}
	if (ref.n < 100 || !ref.named || !ref.lines) {
		fprintf(stderr, "FAIL: too little to compare (%zu samples)\n", ref.n);
		fail = 1;
	}
	free(ref.digests);
	uw_session_free(ref.s);
	uw_session_free(shared);
	free(runs);
	free(th);
	return fail;
}
