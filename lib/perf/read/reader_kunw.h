/* SPDX-License-Identifier: MIT */
/*
 * Samples walked in the kernel (reader_kunw.c): a PR_UW_KUNW record (a live recorder's) made a
 * struct uw_sample, finished in user space and checked by the recorder's hook. The stage has
 * its own state and makes its samples with the sample stage's filters and buffers.
 */
#ifndef UW_PERF_READER_KUNW_H
#define UW_PERF_READER_KUNW_H

#include "perf/read/reader_sample.h"

struct kunw_sample;
struct tracker_proc;

/* Told of each such sample once its stack is made (frames [0, nkernel) walked in the kernel,
 * the rest finished in user space when finished): may cut smp's user frames (a walk that used
 * mappings the process has changed since) and note what to load. */
typedef void (*reader_kunw_fn)(void *ctx, const struct kunw_sample *ks, struct tracker_proc *p, struct uw_sample *smp,
                               unsigned nkernel, bool finished);

struct reader_kunw {
	reader_kunw_fn fn;        /* the live recorder's check */
	void *ctx;
	uint8_t raw[128];         /* the sample record writers see of one */
	uint32_t raw_len;
	struct uw_frame *vframes; /* verify mode: the stack lib/unwind gives from frame 0's copy */
	uint64_t compared, differ; /* verify mode: samples compared, found different */
};

/* A PR_UW_KUNW record of attribute a (index aidx, its counts es) made into *smp (the record
 * writers see of it in k->raw). @return READER_DROPPED, READER_MADE; -ENOMEM. */
int reader_kunw_make(struct reader_kunw *k, struct reader_samples *ss, const struct perf_attr *a, unsigned aidx,
                     struct uw_event_stats *es, const uint8_t *rec, uint32_t len, struct uw_sample *smp);
void reader_kunw_free(struct reader_kunw *k);

#endif
