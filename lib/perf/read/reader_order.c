/* SPDX-License-Identifier: MIT */
/*
 * Records in time order: a queue (struct reader_order, this file's only state), sorted, whose
 * head goes once every record written before the previous round marker
 * (PERF_RECORD_FINISHED_ROUND) has been; a record older than what went is late (the dispatch
 * delivers it at once and counts it). The queue's memory is capped: over it, the older half
 * goes, as perf does. The dispatch (perf_reader.c) delivers what this file says is ready.
 */
#include <errno.h>
#include <stdlib.h>

#include "perf/read/reader_order.h"

static int cmp_qent(const void *x, const void *y)
{
	const struct qent *a = x, *b = y;
	if (a->time != b->time)
		return a->time < b->time ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

size_t reader_order_ready(struct reader_order *q, uint64_t limit, bool all, size_t at_least)
{
	if (!q->qlen)
		return 0;
	qsort(q->q, q->qlen, sizeof(*q->q), cmp_qent);
	if (all)
		return q->qlen;
	size_t i = 0;
	while (i < q->qlen && (q->q[i].time <= limit || i < at_least))
		i++;
	return i;
}

/* The pool's class of a copy of len bytes (its buffer holds class * ORDER_POOL_STEP bytes). */
static size_t pool_class(uint32_t len)
{
	size_t c = ((size_t)len + ORDER_POOL_STEP - 1) / ORDER_POOL_STEP;
	return c ? c : 1; /* (room for the link) */
}

static void *copy_get(struct reader_order *q, uint32_t len)
{
	size_t c = pool_class(len);
	if (c < ORDER_POOL_CLASSES && q->pool[c]) {
		void *b = q->pool[c];
		memcpy(&q->pool[c], b, sizeof(void *));
		q->pool_bytes -= c * ORDER_POOL_STEP;
		return b;
	}
	return malloc(c * ORDER_POOL_STEP);
}

static void copy_put(struct reader_order *q, const uint8_t *rec, uint32_t len)
{
	size_t c = pool_class(len), sz = c * ORDER_POOL_STEP;
	void *b = (void *)rec;
	if (c >= ORDER_POOL_CLASSES || q->pool_bytes + sz > ORDER_POOL_BYTES) {
		free(b);
		return;
	}
	memcpy(b, &q->pool[c], sizeof(void *));
	q->pool[c] = b;
	q->pool_bytes += sz;
}

void reader_order_drop(struct reader_order *q, size_t n)
{
	if (!n)
		return; /* (q->q may be NULL yet) */
	for (size_t i = 0; i < n; i++) {
		const struct qent *e = &q->q[i];
		q->qbytes -= e->len;
		if (e->owned)
			copy_put(q, e->rec, e->len);
	}
	q->last_flushed = q->q[n - 1].time;
	q->any_flushed = true;
	memmove(q->q, q->q + n, (q->qlen - n) * sizeof(*q->q));
	q->qlen -= n;
}

int reader_order_push(struct reader_order *q, const struct qent *ent, size_t max_bytes)
{
	if (q->qlen == q->qcap) {
		size_t cap = q->qcap ? q->qcap * 2 : 4096;
		struct qent *nq = realloc(q->q, cap * sizeof(*nq));
		if (!nq)
			return -ENOMEM;
		q->q = nq;
		q->qcap = cap;
	}
	struct qent *e = &q->q[q->qlen];
	*e = *ent;
	e->seq = q->seq++;
	/* records not in a read-ahead chunk live in a buffer the next read reuses: copied */
	e->owned = !e->chunk;
	if (e->owned) {
		uint8_t *copy = copy_get(q, e->len);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, ent->rec, e->len);
		e->rec = copy;
	}
	q->qlen++;
	q->qbytes += e->len;
	if (e->time > q->max_time)
		q->max_time = e->time;
	return q->qbytes + q->qlen * sizeof(struct qent) > max_bytes;
}

void reader_order_free(struct reader_order *q)
{
	for (size_t i = 0; i < q->qlen; i++)
		if (q->q[i].owned)
			free((void *)q->q[i].rec);
	free(q->q);
	q->q = NULL;
	q->qlen = q->qcap = 0;
	for (size_t c = 0; c < ORDER_POOL_CLASSES; c++)
		while (q->pool[c]) {
			void *b = q->pool[c];
			memcpy(&q->pool[c], b, sizeof(void *));
			free(b);
		}
	q->pool_bytes = 0;
}

uint64_t reader_record_time(const struct perf_attr *a, const uint8_t *rec, uint32_t len, bool *has)
{
	uint32_t type;
	memcpy(&type, rec, 4);
	*has = false;
	if (type == PR_UW_KUNW) {
		/* {u64 id; struct kunw_rec}: its time at byte 40 */
		uint64_t t;
		if (len < 8 + 8 + 48)
			return 0;
		memcpy(&t, rec + 16 + 40, 8);
		*has = true;
		return t;
	}
	if (type == PR_SAMPLE) {
		uint64_t st = a->sample_type;
		if (!(st & PS_TIME))
			return 0;
		size_t pos = 8 * (!!(st & PS_IDENTIFIER) + !!(st & PS_IP) + !!(st & PS_TID));
		if (pos + 8 > len - 8)
			return 0;
		uint64_t t;
		memcpy(&t, rec + 8 + pos, 8);
		*has = true;
		return t;
	}
	struct perf_sample_id sid;
	if (perf_sample_id_decode(a, rec + 8, len - 8, &sid) || !sid.has_time)
		return 0;
	*has = true;
	return sid.time;
}
