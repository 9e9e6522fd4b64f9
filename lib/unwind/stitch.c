/* SPDX-License-Identifier: MIT */
/*
 * Truncated stacks completed ("stitched", uw_reader_opts.stitch): an unwinding stage, samples in,
 * samples out (the reader hands its samples through it). A sample whose stack copy
 * ended before the root (UW_STOP_STACK_EXHAUSTED) is completed from its thread's other complete
 * stacks: a frame of another stack with the same return address and the same stack pointer (the
 * CFA of the frame it called) as this stack's outermost frame is taken for the same activation,
 * whose callers are then this stack's too.
 *
 * One stack is not enough evidence: a function called again from another call site of its
 * caller, at the same depth, has the same outermost frame and another caller, and the return
 * address that tells them apart lies beyond the copy. So the activation must be seen on both
 * sides of the sample: the callers found in the thread's last NREF complete stacks before it
 * must also be those of the first later complete stack (within WINDOW later samples of the
 * thread) that has the frame. When both agree the activation was there before and after the
 * sample, and the sample is completed; when they differ, or no later stack has the frame, it is
 * not. (Measured with tests/tools/stitchcheck on gcc builds and on deep recursion, see
 * docs/design.md: the one-sided rule let 7-50% wrong callers in on a real compiler build, the
 * two-sided one none.)
 *
 * The sample is held meanwhile (copied) and delivered when decided, after samples that came after
 * it (the held ones of a thread go in their order). A completed stack is a reference
 * in turn. Appended frames are marked UW_METHOD_STITCHED. At a thread's EXIT (or its exec, or a
 * FORK that reuses its number), at the end, past WINDOW, or past STITCH_BYTES_MAX held in all,
 * the waiting samples are delivered as they are and (but at the end) its references dropped.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/stitch.h"

#define NREF 16                        /* complete stacks kept per thread (the earlier side) */
#define WINDOW 64u                     /* later samples of the thread a held one waits for */
/* held samples and references in all: past it the held ones go as they are and the references
 * are dropped (a recording of many threads that never exit) */
#define STITCH_BYTES_MAX ((size_t)64 << 20)

struct sref1 {
	uint32_t n, cap;
	struct uw_frame *f;
};

/* Callers found for a held sample's outermost frame on one side of it. */
struct side {
	struct uw_frame *f;
	uint32_t n;
	bool have;
};

/* A sample waiting for its decision: a copy of all it points to. */
struct sheld {
	struct uw_sample smp;
	unsigned aidx;
	uint32_t nown;          /* its own frames, f[0..nown) */
	uint32_t seen;          /* later samples of the thread since */
	uint8_t state;          /* 0 waiting, 1 complete (f holds the callers too), 2 not */
	bool offered;           /* (complete: offered to the others held as a side) */
	struct side before, after;
	struct uw_frame *f;
	uint64_t *kernel;
	uint8_t *rec, *stack;   /* the record (what writers see) and the stack copy */
	uint32_t rec_len;
	size_t bytes;
};

struct sthread {
	struct sref1 s[NREF];
	unsigned next; /* the slot the next one goes in (the newest is the one before) */
	struct sheld *h;
	size_t nh, caph;
};

static void held_free(struct sheld *h)
{
	free(h->f);
	free(h->before.f);
	free(h->after.f);
	free(h->kernel);
	free(h->rec);
	free(h->stack);
}

static void thread_free(struct unw_stitch *r, struct sthread *t)
{
	for (unsigned k = 0; k < NREF; k++) {
		r->bytes -= t->s[k].cap * sizeof(*t->s[k].f);
		free(t->s[k].f);
	}
	for (size_t i = 0; i < t->nh; i++)
		held_free(&t->h[i]);
	free(t->h);
	free(t);
}

static struct sthread *thread_get(struct unw_stitch *r, uint64_t key, bool create)
{
	if (!r->init) {
		if (!create)
			return NULL;
		base_map_init(&r->threads);
		r->init = true;
	}
	struct sthread *t = base_map_get(&r->threads, key);
	if (!t && create) {
		t = calloc(1, sizeof(*t));
		if (!t || base_map_put(&r->threads, key, t)) {
			free(t);
			return NULL;
		}
	}
	return t;
}

/* Frame j of f[0..n) with the pc and stack pointer of o, and callers after it; -1 if none. */
static int64_t find_frame(const struct uw_frame *f, uint32_t n, const struct uw_frame *o)
{
	/* (the outer frames first: a deep stack's cut lies near the reference's outer end) */
	for (uint32_t j = n; j-- > 1;)
		if (f[j].pc == o->pc && f[j].sp == o->sp)
			return j + 1 < n ? (int64_t)j : -1;
	return -1;
}

static bool same_frames(const struct uw_frame *a, const struct uw_frame *b, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (a[i].pc != b[i].pc || a[i].sp != b[i].sp)
			return false;
	return true;
}

static int keep_ref(struct unw_stitch *r, struct sthread *t, const struct uw_frame *frames, uint32_t n)
{
	struct sref1 *ref = &t->s[t->next];
	if (n > ref->cap) {
		struct uw_frame *f = realloc(ref->f, n * sizeof(*f));
		if (!f)
			return -ENOMEM;
		r->bytes += (n - ref->cap) * sizeof(*f);
		ref->f = f;
		ref->cap = n;
	}
	t->next = (t->next + 1) % NREF;
	memcpy(ref->f, frames, n * sizeof(*frames));
	ref->n = n;
	return 0;
}

/* One side's callers of h's outermost frame, where the stack a[0..na) followed by b[0..nb)
 * (a held sample's own frames and the callers its before side proposes; or one whole stack)
 * has that frame; then the decision when both sides are known: complete when they agree. */
static int offer2(struct unw_stitch *r, struct sheld *h, struct side *sd, const struct uw_frame *a, uint32_t na,
                  const struct uw_frame *b, uint32_t nb)
{
	uint32_t n = na + nb, j = n;
	if (h->state || sd->have || n < 2)
		return 0;
	const struct uw_frame *o = &h->f[h->nown - 1];
	/* (the outer frames first: a deep stack's cut lies near the reference's outer end) */
	while (--j > 0) {
		const struct uw_frame *x = j < na ? &a[j] : &b[j - na];
		if (x->pc == o->pc && x->sp == o->sp)
			break;
	}
	if (!j || j + 1 == n)
		return 0;
	uint32_t add = n - j - 1;
	if (add > r->max_frames - h->nown) {
		h->state = 2; /* (past max_frames: not completed) */
		return 0;
	}
	if (!(sd->f = malloc(add * sizeof(*sd->f))))
		return -ENOMEM;
	uint32_t from_a = j + 1 < na ? na - j - 1 : 0;
	if (from_a)
		memcpy(sd->f, &a[j + 1], from_a * sizeof(*sd->f));
	if (add > from_a)
		memcpy(sd->f + from_a, &b[j + 1 + from_a - na], (add - from_a) * sizeof(*sd->f));
	sd->n = add;
	sd->have = true;
	r->bytes += add * sizeof(*sd->f);
	h->bytes += add * sizeof(*sd->f);
	if (!h->before.have || !h->after.have)
		return 0;
	if (h->before.n != h->after.n || !same_frames(h->before.f, h->after.f, h->before.n)) {
		h->state = 2;
		return 0;
	}
	struct uw_frame *nf = realloc(h->f, (h->nown + add) * sizeof(*nf));
	if (!nf)
		return -ENOMEM;
	h->f = nf;
	for (uint32_t i = 0; i < add; i++) {
		nf[h->nown + i] = h->before.f[i];
		nf[h->nown + i].method = UW_METHOD_STITCHED;
	}
	h->smp.user = nf;
	h->state = 1;
	return 0;
}

static int offer(struct unw_stitch *r, struct sheld *h, struct side *sd, const struct uw_frame *f, uint32_t n)
{
	return offer2(r, h, sd, f, n, NULL, 0);
}

/* Is a later held sample, still waiting, one whose own frames have h[i]'s outermost frame (its
 * completion would be h[i]'s after side)? Then h[i] waits for it past WINDOW. */
static bool pending_after(const struct sthread *t, size_t i)
{
	const struct sheld *h = &t->h[i];
	for (size_t j = i + 1; j < t->nh; j++) {
		const struct sheld *l = &t->h[j];
		if (!l->state && find_frame(l->f, l->nown, &h->f[h->nown - 1]) >= 0)
			return true;
	}
	return false;
}

static int deliver_held(struct unw_stitch *r, struct sheld *h)
{
	if (h->state == 1) {
		h->smp.nr_user = h->nown + h->before.n;
		h->smp.stop_reason = UW_STOP_END_OF_STACK;
		r->stitched_samples++;
		r->stitched_frames += h->before.n;
	} else {
		r->failed++;
	}
	r->bytes -= h->bytes;
	return r->deliver(r->ctx, h->aidx, &h->smp, h->rec, h->rec_len);
}

/* Held samples completed are a side for the others held (the earlier ones' after, the later
 * ones' before: a chain of deep samples completes one from another), until nothing changes;
 * then the decided ones at the head of the queue are delivered, in order, the completed ones
 * kept as references. all: every one, decided or not. */
static int release(struct unw_stitch *r, struct sthread *t, bool all)
{
	int err = 0;
	for (bool again = true; again && !err;) {
		again = false;
		for (size_t k = 0; k < t->nh && !err; k++) {
			struct sheld *c = &t->h[k];
			if (c->state != 1 || c->offered)
				continue;
			c->offered = again = true;
			uint32_t n = c->nown + c->before.n;
			for (size_t i = 0; i < t->nh && !err; i++)
				if (i != k)
					err = offer(r, &t->h[i], i < k ? &t->h[i].after : &t->h[i].before, c->f, n);
		}
	}
	size_t k = 0;
	while (k < t->nh && (all || t->h[k].state)) {
		struct sheld *h = &t->h[k];
		if (h->state == 1 && !err)
			err = keep_ref(r, t, h->f, h->nown + h->before.n);
		if (!err)
			err = deliver_held(r, h);
		held_free(h);
		k++;
	}
	if (k && k < t->nh)
		memmove(t->h, t->h + k, (t->nh - k) * sizeof(*t->h));
	t->nh -= k;
	return err;
}

static int hold(struct unw_stitch *r, struct sthread *t, unsigned aidx, const struct uw_sample *smp, const uint8_t *rec,
                uint32_t rec_len)
{
	if (t->nh == t->caph) {
		size_t cap = t->caph ? 2 * t->caph : 8;
		struct sheld *nh = realloc(t->h, cap * sizeof(*nh));
		if (!nh)
			return -ENOMEM;
		t->h = nh;
		t->caph = cap;
	}
	struct sheld *h = &t->h[t->nh];
	memset(h, 0, sizeof(*h));
	h->smp = *smp;
	h->aidx = aidx;
	h->nown = smp->nr_user;
	h->f = malloc(h->nown * sizeof(*h->f));
	h->kernel = smp->nr_kernel ? malloc(smp->nr_kernel * sizeof(*h->kernel)) : NULL;
	h->rec = rec ? malloc(rec_len) : NULL;
	h->stack = smp->stack_size ? malloc(smp->stack_size) : NULL;
	if (!h->f || (smp->nr_kernel && !h->kernel) || (rec && !h->rec) || (smp->stack_size && !h->stack)) {
		held_free(h);
		return -ENOMEM;
	}
	memcpy(h->f, smp->user, h->nown * sizeof(*h->f));
	if (h->kernel)
		memcpy(h->kernel, smp->kernel, smp->nr_kernel * sizeof(*h->kernel));
	if (h->rec)
		memcpy(h->rec, rec, rec_len);
	if (h->stack)
		memcpy(h->stack, smp->stack, smp->stack_size);
	h->rec_len = h->rec ? rec_len : 0;
	h->smp.user = h->f;
	h->smp.kernel = h->kernel;
	h->smp.stack = h->stack;
	/* (the comm stays as it is: interned, it lives as long as the session, and consumers such
	 * as profiles compare and keep the pointer; a copy freed after delivery left them a
	 * dangling name) */
	h->bytes = sizeof(*h) + h->nown * sizeof(*h->f) + smp->nr_kernel * 8 + h->rec_len + smp->stack_size;
	r->bytes += h->bytes;
	t->nh++;
	return 0;
}

/* Past the cap: every waiting sample goes as it is, every reference is dropped. */
static int give_up_all(struct unw_stitch *r)
{
	size_t it = 0;
	uint64_t k;
	void *v;
	int err = 0;
	r->given_up++;
	while (base_map_next(&r->threads, &it, &k, &v)) {
		struct sthread *t = v;
		for (size_t i = 0; i < t->nh; i++)
			if (!t->h[i].state)
				t->h[i].state = 2;
		int e = release(r, t, true);
		if (!err)
			err = e;
		for (unsigned j = 0; j < NREF; j++) {
			r->bytes -= t->s[j].cap * sizeof(*t->s[j].f);
			free(t->s[j].f);
			t->s[j] = (struct sref1){ 0 };
		}
	}
	return err;
}

void unw_stitch_init(struct unw_stitch *r, unsigned max_frames, unw_stitch_deliver_fn deliver, void *ctx)
{
	memset(r, 0, sizeof(*r));
	r->max_frames = max_frames;
	r->deliver = deliver;
	r->ctx = ctx;
}

int unw_stitch_sample(struct unw_stitch *r, unsigned aidx, struct uw_sample *smp, const uint8_t *rec, uint32_t rec_len)
{
	uint32_t n = smp->nr_user;
	const struct uw_frame *f = smp->user;
	bool complete = smp->stop_reason == UW_STOP_END_OF_STACK && n >= 2 && f[n - 1].sp;
	bool cut = smp->stop_reason == UW_STOP_STACK_EXHAUSTED && n >= 2 && f[n - 1].sp && f[n - 1].is_call;
	/* (by process and thread: a thread number reused by another process starts afresh) */
	struct sthread *t = thread_get(r, (uint64_t)smp->pid << 32 | smp->tid, complete || cut);
	if (!t) {
		if (complete || cut)
			return -ENOMEM;
		return r->deliver(r->ctx, aidx, smp, rec, rec_len);
	}
	int err = 0;
	/* a later sample for those waiting; a complete one is their after side */
	bool waiting = false;
	for (size_t i = 0; i < t->nh && !err; i++) {
		struct sheld *h = &t->h[i];
		if (!h->state && ++h->seen >= WINDOW && !pending_after(t, i))
			h->state = 2;
		if (complete)
			err = offer(r, h, &h->after, f, n);
		waiting |= !h->state;
	}
	if (err || (t->nh && (err = release(r, t, false))))
		return err;
	if (cut && !waiting) {
		/* nothing waits that could give it a before side: one of the references must */
		bool any = false;
		for (unsigned k = 0; k < NREF && !any; k++)
			any = find_frame(t->s[k].f, t->s[k].n, &f[n - 1]) >= 0;
		if (!any) {
			r->failed++;
			cut = false; /* (delivered as it is, not copied) */
		}
	}
	if (cut) {
		/* held: the before side from the newest reference with the frame, else (when it
		 * waits) from a held one that may yet be completed */
		if ((err = hold(r, t, aidx, smp, rec, rec_len)))
			return err;
		struct sheld *h = &t->h[t->nh - 1];
		for (unsigned k = 1; k <= NREF && !h->before.have && !h->state && !err; k++) {
			const struct sref1 *ref = &t->s[(t->next + NREF - k) % NREF];
			err = offer(r, h, &h->before, ref->f, ref->n);
		}
		/* else from what a waiting one's before side says of its callers (a deep phase: the
		 * next deeper sample's frame lies in the previous one's; the after side still has to
		 * agree) */
		for (size_t i = t->nh - 1; i-- > 0 && !h->before.have && !h->state && !err;)
			if (!t->h[i].state && t->h[i].before.have)
				err = offer2(r, h, &h->before, t->h[i].f, t->h[i].nown, t->h[i].before.f, t->h[i].before.n);
		if (!err && !h->before.have && !waiting)
			h->state = 2; /* (nothing could give it one) */
		if (!err && h->state)
			err = release(r, t, false);
		if (!err && r->bytes > STITCH_BYTES_MAX)
			err = give_up_all(r);
		return err;
	}
	if (complete && (err = keep_ref(r, t, f, n)))
		return err;
	if (r->bytes > STITCH_BYTES_MAX && (err = give_up_all(r)))
		return err;
	return r->deliver(r->ctx, aidx, smp, rec, rec_len);
}

uint64_t unw_stitch_oldest(const struct unw_stitch *r)
{
	uint64_t oldest = UINT64_MAX;
	if (!r->init)
		return oldest;
	size_t it = 0;
	uint64_t k;
	void *v;
	while (base_map_next(&r->threads, &it, &k, &v)) {
		const struct sthread *t = v;
		/* (a thread's are in its order: the first is its oldest) */
		if (t->nh && t->h[0].smp.time < oldest)
			oldest = t->h[0].smp.time;
	}
	return oldest;
}

int unw_stitch_forget(struct unw_stitch *r, uint32_t pid, uint32_t tid)
{
	uint64_t key = (uint64_t)pid << 32 | tid;
	struct sthread *t = r->init ? base_map_get(&r->threads, key) : NULL;
	if (!t)
		return 0;
	int err = release(r, t, true);
	base_map_del(&r->threads, key);
	thread_free(r, t);
	return err;
}

int unw_stitch_flush(struct unw_stitch *r)
{
	if (!r->init)
		return 0;
	size_t it = 0;
	uint64_t k;
	void *v;
	int err = 0;
	while (base_map_next(&r->threads, &it, &k, &v)) {
		int e = release(r, v, true);
		if (!err)
			err = e;
	}
	return err;
}

void unw_stitch_free(struct unw_stitch *r)
{
	if (!r->init)
		return;
	size_t it = 0;
	uint64_t k;
	void *v;
	while (base_map_next(&r->threads, &it, &k, &v))
		thread_free(r, v);
	base_map_free(&r->threads);
	r->init = false;
}
