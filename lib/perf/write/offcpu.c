/* SPDX-License-Identifier: MIT */
/*
 * Off-CPU time (record --off-cpu): the stack a thread had when it was switched out, kept until
 * the thread runs again, then written as one sample of `offcpu-time` whose period is the time it
 * was off the CPU in nanoseconds (the convention of perf record --off-cpu).
 *
 * Pairing: a switch-out sample (the context-switches software event, taken in the context of the
 * task going off the CPU, unwound like every sample) is held per thread; the next switch-in of
 * that thread (a PERF_RECORD_SWITCH or SWITCH_CPU_WIDE record without the out flag) closes it.
 * Both come through the reader in time order; a switch-out delivered late (a reader holding it,
 * --stitch) after its switch-in is closed by that switch-in's remembered time.
 *
 * One switch in N (--off-cpu-every N): the stack is taken at one switch-out in N only, but
 * every wait is still timed: a switch-out record (PERF_RECORD_SWITCH with the out flag, written
 * for every switch) that no sample came with opens a wait with the thread's last stack taken.
 * Each thread's off-CPU time stays exact; its split among stacks is that of the waits whose
 * stacks were taken, each standing for the waits after it until the next. (Scaling the sampled
 * waits by N instead was tried: on a ping-pong of two threads the kernel's every-Nth sampling
 * aliased with the workload's period and the sums came out 15% to 2.3 times off.) A thread's
 * waits before its first stack are not counted (offcpu_stats.unattributed).
 *
 * Short waits are aggregated to bound the file: a wait shorter than min_ns is added to its
 * thread's total for the same stack (the same chain of addresses), which is written as one sample
 * (at the time of the switch-in that brings it to min_ns or more) once it reaches min_ns, and at
 * the end of the recording; waits of min_ns or more are written as they end. Every written
 * sample then carries at least min_ns of off-CPU time, but the last of each stack, so a thread
 * writes at most one sample per min_ns of its off-CPU time plus one per distinct stack.
 *
 * At the end of the recording a thread still off the CPU is closed at the end: its wait so far.
 * A thread that exits (PERF_RECORD_EXIT) is forgotten: its last switch-out is its death.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "perf/perf.h"

struct oc_thread {
	uint32_t pid, tid;
	bool pending, exited;
	bool has_stack;          /* a switch-out sample came: s holds its stack */
	bool just_sampled;       /* its switch-out record is still to come */
	/* the times of its last OC_INS switch-ins (0: none), to close a switch-out delivered after
	 * its switch-in with that switch-in: the first after it, not the last (a late sample of a
	 * thread that has waited again since would take both waits and the time between) */
	uint64_t ins[8];
	unsigned next_in;
	struct offcpu_stack s;   /* the pending switch-out; s.chain points into chain */
	uint64_t *chain;
	uint32_t cap;
};

struct oc_agg {
	struct offcpu_stack s;   /* s.period: the total so far; s.chain into chain */
	uint64_t *chain;
	uint64_t key;
	struct oc_agg *next;     /* in the list of every aggregate, for the end */
};

struct offcpu {
	struct offcpu_opts o;
	offcpu_emit_fn emit;
	void *ctx;
	struct base_map threads; /* tid -> oc_thread */
	struct base_map aggs;    /* hash of tid and chain -> oc_agg */
	struct oc_agg *agg_list;
	struct offcpu_stats st;
};

struct offcpu *offcpu_new(const struct offcpu_opts *o, offcpu_emit_fn emit, void *ctx)
{
	struct offcpu *oc = calloc(1, sizeof(*oc));
	if (!oc)
		return NULL;
	oc->o = *o;
	if (!oc->o.every)
		oc->o.every = 1;
	oc->emit = emit;
	oc->ctx = ctx;
	base_map_init(&oc->threads);
	base_map_init(&oc->aggs);
	return oc;
}

static struct oc_thread *thread_of(struct offcpu *oc, uint32_t pid, uint32_t tid, bool create)
{
	struct oc_thread *t = base_map_get(&oc->threads, tid);
	if (t || !create)
		return t;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->pid = pid;
	t->tid = tid;
	if (base_map_put(&oc->threads, tid, t)) {
		free(t);
		return NULL;
	}
	return t;
}

static int copy_chain(uint64_t **chain, uint32_t *cap, const struct offcpu_stack *s)
{
	uint32_t n = s->nk + s->nu;
	if (n > *cap) {
		uint64_t *nc = realloc(*chain, (size_t)n * sizeof(*nc));
		if (!nc)
			return -ENOMEM;
		*chain = nc;
		*cap = n;
	}
	if (n)
		memcpy(*chain, s->chain, (size_t)n * sizeof(**chain));
	return 0;
}

static uint64_t agg_key(const struct offcpu_stack *s)
{
	uint64_t h = base_hash64((uint64_t)s->tid << 32 | s->nk);
	return h ^ base_hash_bytes(s->chain, (size_t)(s->nk + s->nu) * sizeof(uint64_t));
}

static bool same_stack(const struct offcpu_stack *a, const struct offcpu_stack *b)
{
	return a->tid == b->tid && a->nk == b->nk && a->nu == b->nu &&
	       !memcmp(a->chain, b->chain, (size_t)(a->nk + a->nu) * sizeof(uint64_t));
}

static int write_out(struct offcpu *oc, struct offcpu_stack *s)
{
	oc->st.samples++;
	return oc->emit(oc->ctx, s);
}

/* A wait of s (s->time: its end, s->period: its length) written, or added to its stack's
 * total. */
static int account(struct offcpu *oc, struct offcpu_stack *s)
{
	oc->st.waits++;
	oc->st.ns += s->period;
	if (s->period >= oc->o.min_ns || !oc->o.min_ns)
		return write_out(oc, s);
	uint64_t key = agg_key(s);
	struct oc_agg *a = base_map_get(&oc->aggs, key);
	if (a && !same_stack(&a->s, s))
		return write_out(oc, s); /* (a hash collision: not aggregated) */
	if (!a) {
		a = calloc(1, sizeof(*a));
		uint32_t cap = 0;
		if (!a || copy_chain(&a->chain, &cap, s) || base_map_put(&oc->aggs, key, a)) {
			if (a)
				free(a->chain);
			free(a);
			return -ENOMEM;
		}
		a->s = *s;
		a->s.chain = a->chain;
		a->s.period = 0;
		a->key = key;
		a->next = oc->agg_list;
		oc->agg_list = a;
	}
	oc->st.aggregated++;
	a->s.period += s->period;
	a->s.time = s->time;
	a->s.cpu = s->cpu;
	if (a->s.period < oc->o.min_ns)
		return 0;
	int err = write_out(oc, &a->s);
	a->s.period = 0;
	return err;
}

#define OC_INS 8u

/* The first switch-in of t remembered after time (0: none). */
static uint64_t first_in_after(const struct oc_thread *t, uint64_t time)
{
	uint64_t best = 0;
	for (unsigned i = 0; i < OC_INS; i++)
		if (t->ins[i] > time && (!best || t->ins[i] < best))
			best = t->ins[i];
	return best;
}

int offcpu_switch_out(struct offcpu *oc, const struct offcpu_stack *s)
{
	if (!s->pid || (oc->o.self_pid && s->pid == (uint32_t)oc->o.self_pid))
		return 0; /* the idle task; the recorder's own waits (-a) */
	struct oc_thread *t = thread_of(oc, s->pid, s->tid, true);
	if (!t)
		return -ENOMEM;
	if (t->exited)
		return 0; /* the switch that ends a thread's life (after its EXIT) */
	oc->st.switches_out++;
	/* switched in again before this sample came (a reader that held it): closed now by the
	 * switch-in that ended it; a newer wait already open keeps the thread's stack */
	uint64_t in = first_in_after(t, s->time);
	if (in && t->pending && t->s.time > s->time) {
		struct offcpu_stack late = *s;
		late.period = in - s->time;
		late.time = in;
		return account(oc, &late);
	}
	if (copy_chain(&t->chain, &t->cap, s))
		return -ENOMEM;
	t->s = *s;
	t->s.chain = t->chain;
	t->pid = s->pid;
	t->has_stack = true;
	t->just_sampled = true;
	if (in) {
		t->pending = false;
		t->s.period = in - s->time;
		t->s.time = in;
		return account(oc, &t->s);
	}
	t->pending = true;
	return 0;
}

int offcpu_switch_in(struct offcpu *oc, uint32_t pid, uint32_t tid, uint64_t time)
{
	if (!pid)
		return 0;
	struct oc_thread *t = thread_of(oc, pid, tid, false);
	if (!t)
		return 0; /* never seen switched out (or not sampled: --off-cpu-every) */
	t->ins[t->next_in++ % OC_INS] = time;
	if (!t->pending)
		return 0;
	t->pending = false;
	if (time < t->s.time)
		return 0;
	t->s.period = time - t->s.time;
	t->s.time = time;
	return account(oc, &t->s);
}

void offcpu_switch_out_record(struct offcpu *oc, uint32_t pid, uint32_t tid, uint64_t time)
{
	if (oc->o.every <= 1 || !pid || (oc->o.self_pid && pid == (uint32_t)oc->o.self_pid))
		return; /* (every switch-out has its sample) */
	struct oc_thread *t = thread_of(oc, pid, tid, false);
	if (!t) {
		oc->st.unattributed++;
		return;
	}
	if (t->just_sampled) {
		t->just_sampled = false; /* the record of the switch just sampled */
		return;
	}
	if (t->exited)
		return;
	if (!t->has_stack) {
		oc->st.unattributed++;
		return;
	}
	t->s.time = time;
	t->pending = true;
}

void offcpu_task(struct offcpu *oc, uint32_t tid, bool exit)
{
	struct oc_thread *t = thread_of(oc, tid, tid, false);
	if (!t)
		return;
	t->pending = false;
	t->exited = exit; /* a FORK or COMM exec: the number is a thread's again */
}

int offcpu_finish(struct offcpu *oc, uint64_t end)
{
	int err = 0;
	uint64_t k;
	void *v;
	for (size_t i = 0; !err && base_map_next(&oc->threads, &i, &k, &v);) {
		struct oc_thread *t = v;
		if (!t->pending || end < t->s.time)
			continue;
		t->pending = false;
		oc->st.open_at_end++;
		t->s.period = end - t->s.time;
		t->s.time = end;
		err = account(oc, &t->s);
	}
	/* the totals of short waits not yet written, oldest stack first */
	struct oc_agg *rev = NULL;
	for (struct oc_agg *a = oc->agg_list, *n; a; a = n) {
		n = a->next;
		a->next = rev;
		rev = a;
	}
	oc->agg_list = rev;
	for (struct oc_agg *a = oc->agg_list; a && !err; a = a->next)
		if (a->s.period) {
			a->s.time = end;
			err = write_out(oc, &a->s);
			a->s.period = 0;
		}
	return err;
}

void offcpu_stats(const struct offcpu *oc, struct offcpu_stats *st)
{
	*st = oc->st;
}

void offcpu_free(struct offcpu *oc)
{
	if (!oc)
		return;
	uint64_t k;
	void *v;
	for (size_t i = 0; base_map_next(&oc->threads, &i, &k, &v);) {
		struct oc_thread *t = v;
		free(t->chain);
		free(t);
	}
	for (struct oc_agg *a = oc->agg_list, *n; a; a = n) {
		n = a->next;
		free(a->chain);
		free(a);
	}
	base_map_free(&oc->threads);
	base_map_free(&oc->aggs);
	free(oc);
}
