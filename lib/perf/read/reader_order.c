/* SPDX-License-Identifier: MIT */
/*
 * Records in time order: queued, sorted, and delivered once every record written before the
 * previous round marker (PERF_RECORD_FINISHED_ROUND) has been; a record older than what was
 * delivered goes at once (counted as late). The queue's memory is capped: over it, the older
 * half goes, as perf does.
 */
#include <errno.h>
#include <stdlib.h>

#include "perf/read/reader.h"

static int cmp_qent(const void *x, const void *y)
{
	const struct qent *a = x, *b = y;
	if (a->time != b->time)
		return a->time < b->time ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Delivers queued records with time <= limit (all of them when all is set), oldest first. */
int reader_flush(struct uw_reader *r, uint64_t limit, bool all, size_t at_least)
{
	/* (an empty queue at the end still has the held samples to deliver) */
	if (r->q.qlen)
		qsort(r->q.q, r->q.qlen, sizeof(*r->q.q), cmp_qent);
	size_t i = 0;
	int err = 0;
	for (; i < r->q.qlen; i++) {
		struct qent *e = &r->q.q[i];
		if (!all && e->time > limit && i >= at_least)
			break;
		if (!err)
			err = reader_deliver(r, e->aidx, e->rec, e->len, e->time, &e->cut, e->ord);
		r->q.last_flushed = e->time;
		r->q.any_flushed = true;
		r->q.qbytes -= e->len;
		if (e->owned)
			free((void *)e->rec);
		else if (e->chunk)
			reader_chunk_release(r, e->chunk);
	}
	memmove(r->q.q, r->q.q + i, (r->q.qlen - i) * sizeof(*r->q.q));
	r->q.qlen -= i;
	/* the end: samples still waiting for a deferred callchain go without it */
	if (all && !err)
		err = reader_deferred_flush(r);
	/* and those held for a stitching decision as they are */
	if (all && !err)
		err = reader_stitch_flush(r);
	return err;
}

int reader_enqueue(struct uw_reader *r, unsigned aidx, const uint8_t *rec, uint32_t len, uint64_t time)
{
	if (r->q.any_flushed && time < r->q.last_flushed) {
		r->st.late_records++;
		return reader_deliver(r, aidx, rec, len, time, r->inner ? &(struct cut){ 0 } : &r->in.cur_cut, r->cur_ord);
	}
	if (r->q.qlen == r->q.qcap) {
		size_t cap = r->q.qcap ? r->q.qcap * 2 : 4096;
		struct qent *nq = realloc(r->q.q, cap * sizeof(*nq));
		if (!nq)
			return -ENOMEM;
		r->q.q = nq;
		r->q.qcap = cap;
	}
	struct qent *e = &r->q.q[r->q.qlen++];
	e->time = time;
	e->seq = r->q.seq++;
	e->ord = r->cur_ord;
	e->aidx = aidx;
	e->len = len;
	e->cut = r->inner ? (struct cut){ 0 } : r->in.cur_cut;
	e->chunk = r->inner ? NULL : r->in.cur_chunk;
	/* records not in a read-ahead chunk live in a buffer the next read reuses: copied */
	e->owned = !e->chunk;
	if (e->chunk)
		reader_chunk_hold(e->chunk);
	if (e->owned) {
		uint8_t *copy = malloc(len);
		if (!copy) {
			r->q.qlen--;
			return -ENOMEM;
		}
		memcpy(copy, rec, len);
		e->rec = copy;
	} else {
		e->rec = rec;
	}
	r->q.qbytes += len;
	if (time > r->q.max_time)
		r->q.max_time = time;
	/* over the memory cap: deliver the older half, as perf does */
	if (r->q.qbytes + r->q.qlen * sizeof(struct qent) > r->o.max_queue_bytes)
		return reader_flush(r, 0, false, r->q.qlen / 2);
	return 0;
}

uint64_t reader_record_time(const struct perf_attr *a, const uint8_t *rec, uint32_t len, bool *has)
{
	uint32_t type;
	memcpy(&type, rec, 4);
	*has = false;
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

