/* SPDX-License-Identifier: MIT */
/*
 * Truncated stacks completed ("stitched", uw_reader_opts.stitch). A sample whose stack copy
 * ended before the root (UW_STOP_STACK_EXHAUSTED) is completed from one of its thread's recent
 * complete stacks: a frame of both with the same return address and the same stack pointer (the
 * CFA of the frame it called) is taken for the same activation, whose callers are then this
 * stack's too. The match is asked of the truncated stack's outermost frame, in the thread's
 * last NREF complete stacks, the newest first; the frames appended are marked
 * UW_METHOD_STITCHED, and a completed stack is in turn a reference (a deep phase is completed
 * sample after sample). A thread's references are dropped at its EXIT. Frames without a stack
 * pointer (callchains read from a file) are never matched.
 *
 * The rule is a heuristic: a function called again from another call site of the same caller,
 * at the same stack depth, has the same outermost frame and another caller frame. Measured on a
 * gcc build (tests/tools/stitchcheck), such stacks differ from their whole copies in the
 * caller's return address; hence it is not on by default.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "perf/reader.h"

#define NREF 8 /* complete stacks kept per thread */

struct sref1 {
	uint32_t n, cap;
	struct uw_frame *f;
};

struct sref {
	struct sref1 s[NREF];
	unsigned next; /* the slot the next one goes in (the newest is the one before) */
};

bool reader_stitch(struct uw_reader *r, uint32_t tid, struct uw_frame *frames, uint32_t *n, unsigned cap)
{
	struct sref *refs = r->stitch_init ? base_map_get(&r->stitch, tid) : NULL;
	if (!refs || *n < 2)
		return false;
	const struct uw_frame *o = &frames[*n - 1];
	if (!o->sp || !o->is_call)
		return false;
	for (unsigned k = 1; k <= NREF; k++) {
		const struct sref1 *ref = &refs->s[(refs->next + NREF - k) % NREF];
		/* (the outer frames first: a deep stack's cut lies near the reference's outer end) */
		for (uint32_t j = ref->n; j-- > 1;) {
			const struct uw_frame *x = &ref->f[j];
			if (x->pc != o->pc || x->sp != o->sp)
				continue;
			if (j + 1 == ref->n)
				return false; /* the reference ends there too: nothing to add */
			uint32_t add = UW_MIN(ref->n - j - 1, cap - *n);
			if (!add)
				return false;
			memcpy(&frames[*n], &ref->f[j + 1], add * sizeof(*frames));
			for (uint32_t i = 0; i < add; i++)
				frames[*n + i].method = UW_METHOD_STITCHED;
			*n += add;
			r->st.stitched_frames += add;
			return add == ref->n - j - 1; /* (cut by cap: not complete) */
		}
	}
	return false;
}

int reader_stitch_keep(struct uw_reader *r, uint32_t tid, const struct uw_frame *frames, uint32_t n)
{
	if (!r->stitch_init) {
		base_map_init(&r->stitch);
		r->stitch_init = true;
	}
	struct sref *refs = base_map_get(&r->stitch, tid);
	if (!refs) {
		refs = calloc(1, sizeof(*refs));
		if (!refs || base_map_put(&r->stitch, tid, refs)) {
			free(refs);
			return -ENOMEM;
		}
	}
	struct sref1 *ref = &refs->s[refs->next];
	if (n > ref->cap) {
		struct uw_frame *f = realloc(ref->f, n * sizeof(*f));
		if (!f)
			return -ENOMEM;
		ref->f = f;
		ref->cap = n;
	}
	refs->next = (refs->next + 1) % NREF;
	memcpy(ref->f, frames, n * sizeof(*frames));
	ref->n = n;
	return 0;
}

static void free_refs(struct sref *refs)
{
	for (unsigned k = 0; k < NREF; k++)
		free(refs->s[k].f);
	free(refs);
}

void reader_stitch_forget(struct uw_reader *r, uint32_t tid)
{
	if (!r->stitch_init)
		return;
	struct sref *refs = base_map_del(&r->stitch, tid);
	if (refs)
		free_refs(refs);
}

void reader_stitch_free(struct uw_reader *r)
{
	if (!r->stitch_init)
		return;
	size_t it = 0;
	uint64_t k;
	void *v;
	while (base_map_next(&r->stitch, &it, &k, &v))
		free_refs(v);
	base_map_free(&r->stitch);
	r->stitch_init = false;
}
