/* SPDX-License-Identifier: MIT */
/*
 * Records in time order (reader_order.c): the queue alone, passed only its own state.
 */
#ifndef UW_PERF_READER_ORDER_H
#define UW_PERF_READER_ORDER_H

#include "perf/read/reader_input.h"

struct qent {
	uint64_t time, seq;
	uint64_t ord;            /* a sample's place among the file's samples */
	const uint8_t *rec;
	uint32_t len;
	bool owned;              /* rec was malloc'd for the queue */
	struct cut cut;
	struct ra_chunk *chunk;  /* else rec lies in this read-ahead chunk, kept until delivered */
	uint32_t aidx;           /* its attribute (found once, when it was read) */
};

/* Copies of records let go are kept for the next ones of about the same size, by size in steps
 * of ORDER_POOL_STEP bytes (a record is at most 64 KiB), up to ORDER_POOL_BYTES in all. A live
 * recording queues every ring's records (stack copies of 16 KiB and more) and lets them go each
 * round: malloc'd and freed each time, they cost more than everything else the recorder does
 * per sample (glibc gives the top of the heap back once 128 KiB are free there, and the pages
 * are faulted in, zeroed and charged again the next round). */
#define ORDER_POOL_STEP 256
#define ORDER_POOL_CLASSES (65536 / ORDER_POOL_STEP + 1)
#define ORDER_POOL_BYTES ((size_t)16 << 20)

struct reader_order {
	struct qent *q;
	size_t qlen, qcap, qbytes;
	uint64_t seq, max_time, round_limit, last_flushed;
	bool any_flushed;
	void *pool[ORDER_POOL_CLASSES]; /* free copies, each list linked through its first bytes */
	size_t pool_bytes;
};

/* Is a record of this time late (older than one the queue let go)? */
static inline bool reader_order_late(const struct reader_order *q, uint64_t time)
{
	return q->any_flushed && time < q->last_flushed;
}
/* Queues the entry e (its seq given here; its record copied unless it lies in a read-ahead
 * chunk, which the caller holds). @return 0; 1 when the queue is over max_bytes (the caller
 * lets the older half go); -ENOMEM. */
int reader_order_push(struct reader_order *q, const struct qent *e, size_t max_bytes);
/* Sorts the queue. @return how many entries at its head go now, oldest first: those with
 * time <= limit and at least the first at_least, or all of them when all is set. */
size_t reader_order_ready(struct reader_order *q, uint64_t limit, bool all, size_t at_least);
/* The first n entries taken off (once delivered; their chunks released by the caller). */
void reader_order_drop(struct reader_order *q, size_t n);
void reader_order_free(struct reader_order *q);
/* A record's time (its attribute a's layout); *has false when it has none. */
uint64_t reader_record_time(const struct perf_attr *a, const uint8_t *rec, uint32_t len, bool *has);

#endif
