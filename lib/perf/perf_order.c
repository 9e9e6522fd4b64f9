/* SPDX-License-Identifier: MIT */
/*
 * uw_order: records of several rings merged in time order (the public helper for a profiler
 * that reads its own rings). A heap on (time, push order); a record pushed older than one
 * already released (late) takes the released time as its key, so it goes at the next release
 * in push order. perf's FINISHED_ROUND rule decides how far a round may release.
 */
#include <errno.h>
#include <stdlib.h>

#include "perf/perf.h"

struct held {
	uint64_t key, seq;         /* the heap's order */
	uint64_t time;             /* as pushed */
	unsigned ring;
	uint32_t len;
	uint8_t *rec;
};

struct uw_order {
	struct held *h;
	size_t n, cap;
	uint64_t seq;
	size_t max_bytes;
	uint64_t newest;           /* the newest time pushed */
	uint64_t round_newest;     /* ... at the previous round */
	uint64_t released_to;      /* the newest key released */
	bool any_released;
	struct uw_order_stats st;
};

#define ORDER_BYTES_DEFAULT ((size_t)64 << 20)

UW_API struct uw_order *uw_order_new(const struct uw_order_opts *opts)
{
	struct uw_order_opts o;
	int oe = BASE_OPTS_COPY(&o, uw_order_opts, max_bytes, opts);
	if (oe) {
		errno = -oe;
		return NULL;
	}
	struct uw_order *q = calloc(1, sizeof(*q));
	if (!q) {
		errno = ENOMEM;
		return NULL;
	}
	q->max_bytes = o.max_bytes ? o.max_bytes : ORDER_BYTES_DEFAULT;
	q->st.sz = sizeof(q->st);
	return q;
}

UW_API void uw_order_free(struct uw_order *q)
{
	if (!q)
		return;
	for (size_t i = 0; i < q->n; i++)
		free(q->h[i].rec);
	free(q->h);
	free(q);
}

static bool before(const struct held *a, const struct held *b)
{
	return a->key != b->key ? a->key < b->key : a->seq < b->seq;
}

static void sift_up(struct held *h, size_t i)
{
	while (i) {
		size_t p = (i - 1) / 2;
		if (!before(&h[i], &h[p]))
			break;
		struct held t = h[i];
		h[i] = h[p];
		h[p] = t;
		i = p;
	}
}

static void sift_down(struct held *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		if (l < n && before(&h[l], &h[m]))
			m = l;
		if (l + 1 < n && before(&h[l + 1], &h[m]))
			m = l + 1;
		if (m == i)
			return;
		struct held t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

/* The oldest record handed to fn (it is no longer held). */
static int pop(struct uw_order *q, uw_order_fn fn, void *ctx)
{
	struct held e = q->h[0];
	q->h[0] = q->h[--q->n];
	sift_down(q->h, q->n, 0);
	q->st.held = q->n;
	q->st.held_bytes -= e.len;
	q->st.released++;
	if (!q->any_released || e.key > q->released_to)
		q->released_to = e.key;
	q->any_released = true;
	int rc = fn ? fn(ctx, e.ring, e.time, e.rec, e.len) : 0;
	free(e.rec);
	return rc;
}

UW_API int uw_order_push(struct uw_order *q, unsigned ring, uint64_t time, const void *rec, size_t len)
{
	if (!q || !rec || len < 8 || len > UINT32_MAX)
		return -EINVAL;
	if (q->n == q->cap) {
		size_t cap = q->cap ? 2 * q->cap : 256;
		struct held *nh = realloc(q->h, cap * sizeof(*nh));
		if (!nh)
			return -ENOMEM;
		q->h = nh;
		q->cap = cap;
	}
	uint8_t *copy = malloc(len);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, rec, len);
	uint64_t key = time;
	if (q->any_released && time < q->released_to) {
		key = q->released_to; /* late: at the next release, in push order */
		q->st.late++;
	}
	q->h[q->n] = (struct held){ key, q->seq++, time, ring, (uint32_t)len, copy };
	sift_up(q->h, q->n++);
	q->st.pushed++;
	q->st.held = q->n;
	q->st.held_bytes += len;
	if (time > q->newest)
		q->newest = time;
	return 0;
}

static int release(struct uw_order *q, uint64_t limit, bool all, uw_order_fn fn, void *ctx)
{
	int rc = 0;
	while (q->n && !rc) {
		if (!all && q->h[0].key > limit) {
			if (q->st.held_bytes <= q->max_bytes)
				break;
			q->st.early++; /* over the cap: the oldest goes before its turn */
		}
		rc = pop(q, fn, ctx);
	}
	return rc;
}

UW_API int uw_order_round(struct uw_order *q, uw_order_fn fn, void *ctx)
{
	if (!q)
		return -EINVAL;
	uint64_t limit = q->round_newest;
	q->round_newest = q->newest;
	return release(q, limit, false, fn, ctx);
}

UW_API int uw_order_release_to(struct uw_order *q, uint64_t time, uw_order_fn fn, void *ctx)
{
	return q ? release(q, time, false, fn, ctx) : -EINVAL;
}

UW_API int uw_order_flush(struct uw_order *q, uw_order_fn fn, void *ctx)
{
	if (!q)
		return -EINVAL;
	q->round_newest = q->newest;
	return release(q, 0, true, fn, ctx);
}

UW_API int uw_order_stats(const struct uw_order *q, struct uw_order_stats *st)
{
	if (!q || !st || st->sz < sizeof(size_t))
		return -EINVAL;
	size_t want = st->sz;
	memcpy(st, &q->st, UW_MIN(want, sizeof(q->st)));
	if (want > sizeof(q->st))
		memset((char *)st + sizeof(q->st), 0, want - sizeof(q->st));
	st->sz = want;
	return 0;
}
