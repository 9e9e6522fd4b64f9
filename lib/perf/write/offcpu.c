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
 *
 * Waits timed in the kernel (keyed, docs/offcpu.md): the walked ones come as above (a
 * switch-out, a switch-in); the others as totals per thread and key (the user pc and stack
 * pointer of the wait, hashed), given to the stack walked at a switch-out of that thread with
 * that key: waits that left user space at the same instruction with the same stack pointer are
 * taken to have the same stack (the same return addresses above it). Where walks of one key
 * found several stacks (another path to the same pc at the same depth), the total is split
 * among them by how many walks found each. A total whose key no walk had yet is held until one
 * does, else written with its pc alone when its thread exits or at the end.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "perf/perf.h"

struct oc_key;

struct oc_thread {
	struct oc_key *keys;     /* (keyed) its keys, the newest first */
	unsigned nkeys;
	uint32_t pid, tid;
	bool pending, exited;
	uint64_t exit_time;      /* (exited) its EXIT's time */
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

/* (keyed) the stacks walked with one thread's key, and its unwalked time not yet given; a
 * thread keeps its OC_KEYS_MAX newest keys (the kernel holds 8 a thread: an older one whose total
 * comes again waits for its next walk) */
#define OC_KEY_STACKS 4
#define OC_KEYS_MAX 1024
struct oc_kstack {
	uint64_t *chain;
	uint32_t nk, nu;
	uint64_t ip, walks;
	uint16_t misc;
	uint8_t reason;
};
struct oc_key {
	uint64_t h, key, ip;
	uint32_t pid, tid;
	struct oc_kstack st[OC_KEY_STACKS];
	unsigned nst;
	uint64_t pend_ns, pend_n, pend_time, pend_cpu, id;
	struct oc_key *next;     /* its thread's */
};

struct offcpu {
	struct offcpu_opts o;
	offcpu_emit_fn emit;
	void *ctx;
	struct base_map keys;    /* hash of tid and key -> oc_key */
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
	base_map_init(&oc->keys);
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

/* nwaits waits of s (s->time: the end, s->period: their length) written, or added to its
 * stack's total. */
static int account_n(struct offcpu *oc, struct offcpu_stack *s, uint64_t nwaits)
{
	oc->st.waits += nwaits;
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

static int account(struct offcpu *oc, struct offcpu_stack *s)
{
	return account_n(oc, s, 1);
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

/* ---- keyed: unwalked waits given the stack walked with their key */

static int key_unwalked(struct offcpu *oc, struct oc_key *k, uint64_t time);
static int key_drop_oldest(struct offcpu *oc, struct oc_thread *t);

static uint64_t key_hash(uint32_t tid, uint64_t key)
{
	return base_hash64(key ^ base_hash64((uint64_t)tid << 1 | 1));
}

static struct oc_key *key_of(struct offcpu *oc, uint32_t pid, uint32_t tid, uint64_t key, bool create)
{
	uint64_t h = key_hash(tid, key);
	struct oc_key *k = base_map_get(&oc->keys, h);
	if (k)
		return k->tid == tid && k->key == key ? k : NULL; /* (a collision: taken as none) */
	if (!create)
		return NULL;
	struct oc_thread *t = thread_of(oc, pid, tid, true);
	if (!t)
		return NULL;
	if (t->nkeys >= OC_KEYS_MAX && key_drop_oldest(oc, t))
		return NULL;
	if (!(k = calloc(1, sizeof(*k))))
		return NULL;
	if (base_map_put(&oc->keys, h, k)) {
		free(k);
		return NULL;
	}
	k->h = h;
	k->key = key;
	k->pid = pid;
	k->tid = tid;
	k->next = t->keys;
	t->keys = k;
	t->nkeys++;
	return k;
}

/* ns of n waits of key k given to its stacks (split by their walks), at time on cpu. */
static int key_give(struct offcpu *oc, struct oc_key *k, uint64_t ns, uint64_t n, uint64_t time, uint64_t cpu)
{
	uint64_t walks = 0;
	for (unsigned i = 0; i < k->nst; i++)
		walks += k->st[i].walks;
	oc->st.keyed += n;
	oc->st.keyed_ns += ns;
	uint64_t left = ns, nleft = n;
	int err = 0;
	for (unsigned i = 0; i < k->nst && !err; i++) {
		struct oc_kstack *ks = &k->st[i];
		bool last = i + 1 == k->nst;
		uint64_t part = last ? left : (uint64_t)((unsigned __int128)ns * ks->walks / walks);
		uint64_t pn = last ? nleft : n * ks->walks / walks;
		left -= part;
		nleft -= pn;
		if (!part)
			continue;
		struct offcpu_stack s = { .id = k->id, .ip = ks->ip, .time = time, .cpu = cpu, .period = part,
					  .pid = k->pid, .tid = k->tid, .misc = ks->misc, .reason = ks->reason,
					  .nk = ks->nk, .nu = ks->nu, .chain = ks->chain, .key = k->key };
		err = account_n(oc, &s, pn);
	}
	return err;
}

/* A key's time held for want of a walk: written with its pc alone. */
static int key_unwalked(struct offcpu *oc, struct oc_key *k, uint64_t time)
{
	if (!k->pend_ns && !k->pend_n)
		return 0;
	oc->st.unkeyed += k->pend_n;
	oc->st.unkeyed_ns += k->pend_ns;
	uint64_t pc = k->ip;
	struct offcpu_stack s = { .id = k->id, .ip = pc, .time = time, .cpu = k->pend_cpu, .period = k->pend_ns,
				  .pid = k->pid, .tid = k->tid, .misc = PM_USER, .reason = UW_STOP_UNKNOWN,
				  .nk = 0, .nu = pc ? 1 : 0, .chain = &pc, .key = k->key };
	uint64_t n = k->pend_n;
	k->pend_ns = k->pend_n = 0;
	return account_n(oc, &s, n);
}

/* A walk of s's key: its stack noted; time held for it given. */
static int key_walked(struct offcpu *oc, const struct offcpu_stack *s)
{
	struct oc_key *k = key_of(oc, s->pid, s->tid, s->key, true);
	if (!k)
		return 0; /* (without memory: the key's totals go unattributed) */
	k->id = s->id;
	unsigned i = 0;
	while (i < k->nst && !(k->st[i].nk == s->nk && k->st[i].nu == s->nu &&
			       !memcmp(k->st[i].chain, s->chain, (size_t)(s->nk + s->nu) * sizeof(uint64_t))))
		i++;
	if (i == k->nst && k->nst < OC_KEY_STACKS) {
		struct oc_kstack *ks = &k->st[k->nst];
		uint32_t cap = 0;
		if (copy_chain(&ks->chain, &cap, s))
			return -ENOMEM;
		*ks = (struct oc_kstack){ ks->chain, s->nk, s->nu, s->ip, 0, s->misc, s->reason };
		k->nst++;
	}
	if (i < k->nst)
		k->st[i].walks++;
	if (!k->pend_ns && !k->pend_n)
		return 0;
	uint64_t ns = k->pend_ns, n = k->pend_n;
	k->pend_ns = k->pend_n = 0;
	return key_give(oc, k, ns, n, s->time, k->pend_cpu);
}

int offcpu_add(struct offcpu *oc, const struct offcpu_sum *s)
{
	if (!s->pid || (oc->o.self_pid && s->pid == (uint32_t)oc->o.self_pid))
		return 0;
	struct oc_thread *t = thread_of(oc, s->pid, s->tid, true);
	struct oc_key *k = t && !t->exited ? key_of(oc, s->pid, s->tid, s->key, true) : NULL;
	if (!k) {
		/* (no memory, or a thread gone: its pc alone, now) */
		struct oc_key one = { .key = s->key, .ip = s->ip, .pid = s->pid, .tid = s->tid, .pend_ns = s->ns,
				      .pend_n = s->n, .pend_cpu = s->cpu, .id = s->id };
		return key_unwalked(oc, &one, s->time);
	}
	k->ip = s->ip;
	k->id = s->id;
	if (k->nst)
		return key_give(oc, k, s->ns, s->n, s->time, s->cpu);
	k->pend_ns += s->ns;
	k->pend_n += s->n;
	k->pend_time = s->time;
	k->pend_cpu = s->cpu;
	return 0;
}

static void key_free(struct offcpu *oc, struct oc_key *k)
{
	base_map_del(&oc->keys, k->h);
	for (unsigned i = 0; i < k->nst; i++)
		free(k->st[i].chain);
	free(k);
}

/* The thread's oldest key dropped (its held time written with its pc alone). @return emit's
 * error. */
static int key_drop_oldest(struct offcpu *oc, struct oc_thread *t)
{
	struct oc_key **pp = &t->keys;
	while (*pp && (*pp)->next)
		pp = &(*pp)->next;
	struct oc_key *k = *pp;
	if (!k)
		return 0;
	int err = key_unwalked(oc, k, k->pend_time);
	*pp = NULL;
	t->nkeys--;
	key_free(oc, k);
	return err;
}

/* A thread's keys dropped (it exits, or its number names another thread): their held time
 * written with its pc alone. */
static int keys_drop(struct offcpu *oc, struct oc_thread *t, uint64_t time)
{
	int err = 0;
	for (struct oc_key *k = t->keys, *n; k; k = n) {
		n = k->next;
		if (!err)
			err = key_unwalked(oc, k, time ? time : k->pend_time);
		key_free(oc, k);
	}
	t->keys = NULL;
	t->nkeys = 0;
	return err;
}

/* A switch-out whose sample came after the switch-in at in that ended its wait: that wait. */
static int account_late(struct offcpu *oc, const struct offcpu_stack *s, uint64_t in)
{
	struct offcpu_stack late = *s;
	late.period = in - s->time;
	late.time = in;
	return account(oc, &late);
}

int offcpu_switch_out(struct offcpu *oc, const struct offcpu_stack *s)
{
	if (!s->pid || (oc->o.self_pid && s->pid == (uint32_t)oc->o.self_pid))
		return 0; /* the idle task; the recorder's own waits (-a) */
	struct oc_thread *t = thread_of(oc, s->pid, s->tid, true);
	if (!t)
		return -ENOMEM;
	if (t->exited) {
		/* the switch that ends a thread's life (after its EXIT); or a sample of an earlier
		 * wait delivered after the EXIT (from another CPU's ring): closed by the switch-in
		 * that ended it */
		uint64_t in = s->time < t->exit_time ? first_in_after(t, s->time) : 0;
		if (!in)
			return 0;
		oc->st.switches_out++;
		return account_late(oc, s, in);
	}
	oc->st.switches_out++;
	if (oc->o.keyed && s->key) {
		int e = key_walked(oc, s);
		if (e)
			return e;
	}
	/* switched in again before this sample came (a reader that held it): closed now by the
	 * switch-in that ended it; a newer wait already open keeps the thread's stack */
	uint64_t in = first_in_after(t, s->time);
	if (in && t->pending && t->s.time > s->time)
		return account_late(oc, s, in);
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
	/* (a thread not seen switched out yet is remembered: the sample of its first wait may
	 * come after this, from another CPU's ring) */
	struct oc_thread *t = thread_of(oc, pid, tid, true);
	if (!t)
		return -ENOMEM;
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

void offcpu_task(struct offcpu *oc, uint32_t tid, bool exit, uint64_t time)
{
	struct oc_thread *t = thread_of(oc, tid, tid, false);
	if (!t)
		return;
	/* (an error of writing is the sink's to say: it stops at the next sample) */
	(void)keys_drop(oc, t, 0);
	t->pending = false;
	t->exited = exit; /* a FORK or COMM exec: the number is a thread's again */
	t->exit_time = exit ? time : 0;
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
	/* keys whose time no walk took: their pc alone */
	for (size_t i = 0; !err && base_map_next(&oc->threads, &i, &k, &v);)
		err = keys_drop(oc, v, end);
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
		for (struct oc_key *x = t->keys, *n; x; x = n) {
			n = x->next;
			for (unsigned j = 0; j < x->nst; j++)
				free(x->st[j].chain);
			free(x);
		}
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
	base_map_free(&oc->keys);
	free(oc);
}
