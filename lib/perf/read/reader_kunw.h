/* SPDX-License-Identifier: MIT */
/*
 * Samples walked in the kernel (reader_kunw.c): a PR_UW_KUNW record (a live recorder's) made a
 * struct uw_sample, finished in user space and checked by the recorder's hook. The stage is
 * passed its own state (its frame buffers; the reader's options, read only, and counts).
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
	struct uw_session *s;
	struct uw_tracker *t;
	const struct uw_reader_opts *o; /* the reader's options (read only): filters, event, kernel frames */
	struct uw_reader_stats *st;     /* the reader's counts, where the stage counts its share */
	reader_kunw_fn fn;        /* the live recorder's check */
	void *ctx;
	uint8_t raw[128];         /* the sample record writers see of one */
	uint32_t raw_len;
	struct uw_frame *frames;  /* the sample's stack (max_frames; made at the first) */
	uint64_t *kbuf;           /* its kernel frames */
	unsigned kcap;
	struct uw_frame *vframes; /* verify mode: the stack lib/unwind gives from frame 0's copy */
	uint64_t compared, differ; /* verify mode: samples compared, found different */
};

void reader_kunw_init(struct reader_kunw *k, struct uw_session *s, struct uw_tracker *t,
                      const struct uw_reader_opts *o, struct uw_reader_stats *st);
/* A PR_UW_KUNW record of attribute a (index aidx, its counts es) made into *smp (the record
 * writers see of it in k->raw). @return READER_DROPPED, READER_MADE; -ENOMEM. */
int reader_kunw_make(struct reader_kunw *k, const struct perf_attr *a, unsigned aidx, struct uw_event_stats *es,
                     const uint8_t *rec, uint32_t len, struct uw_sample *smp);
void reader_kunw_free(struct reader_kunw *k);

#endif
