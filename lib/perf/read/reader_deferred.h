/* SPDX-License-Identifier: MIT */
/*
 * Samples waiting for their deferred user callchains (reader_deferred.c): the stage passed only
 * its own state (and the attribute table the reader gives it, read only). A sample the stage
 * lets go (rec: rewritten, valid during the call; missing: its user part never came) goes to
 * deliver, the reader's.
 */
#ifndef UW_PERF_READER_DEFERRED_H
#define UW_PERF_READER_DEFERRED_H

#include "perf/read/reader_attrs.h"

struct perf_sample;

typedef int (*reader_deferred_fn)(void *ctx, unsigned aidx, const uint8_t *rec, uint32_t len, uint64_t ord,
                                  bool missing);
struct reader_deferred {
	const struct reader_attrs *at; /* the recording's (read only) */
	reader_deferred_fn deliver;
	void *ctx;
	struct {                  /* as uw_reader_stats names them, deferred_... */
		uint64_t samples, stitched, missing, records, unmatched, malformed;
	} n;
	struct base_vec held;     /* samples waiting for theirs, in time order, from held_head */
	size_t held_head;
	uint8_t *defbuf;          /* a held sample rewritten (64 KiB) */
	struct base_map deflast;  /* tid -> the user part of its last CALLCHAIN_DEFERRED */
	bool deflast_init;
};

void reader_deferred_init(struct reader_deferred *d, const struct reader_attrs *at, reader_deferred_fn deliver,
                          void *ctx);
/* Does the sample's callchain end with PERF_CONTEXT_USER_DEFERRED and a cookie? The cookie and
 * the marker's index. */
bool reader_deferred_cookie(const struct perf_sample *ps, uint64_t *cookie, uint64_t *at);
/* A sample held until its thread's deferred callchain comes (copied), or delivered at once when
 * that came already. */
int reader_deferred_hold(struct reader_deferred *d, unsigned aidx, const uint8_t *rec, uint32_t len, uint32_t tid,
                         uint64_t time, uint64_t cookie, uint64_t ord);
/* A PERF_RECORD_CALLCHAIN_DEFERRED: the samples waiting for it delivered. */
int reader_deferred_record(struct reader_deferred *d, unsigned aidx, const uint8_t *rec, uint32_t len, uint64_t time);
/* At the end: the samples still waiting delivered without their user part. */
int reader_deferred_flush(struct reader_deferred *d);
/* The time of the oldest sample waiting; UINT64_MAX when none. */
uint64_t reader_deferred_oldest(const struct reader_deferred *d);
void reader_deferred_free(struct reader_deferred *d);

#endif
