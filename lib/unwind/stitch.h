/* SPDX-License-Identifier: MIT */
/*
 * Truncated stacks completed (stitch.c): an unwinding stage that takes unwound samples and
 * hands them on, those whose copy ended before the root completed from their thread's other
 * stacks when both sides agree (held meanwhile). Its own state; one thread at a time.
 */
#ifndef UW_UNWIND_STITCH_H
#define UW_UNWIND_STITCH_H

#include "base/base.h"
#include "unwind/unwind.h"

/* A sample handed on: tag and rec (len bytes, may be NULL) as given with it, valid during the call. */
typedef int (*unw_stitch_deliver_fn)(void *ctx, unsigned tag, struct uw_sample *smp, const uint8_t *rec,
                                     uint32_t len);

struct unw_stitch {
	struct base_map threads;  /* pid << 32 | tid -> its references and held samples */
	bool init;
	size_t bytes;             /* held samples' copies and references */
	unsigned max_frames;
	unw_stitch_deliver_fn deliver;
	void *ctx;
	uint64_t stitched_samples, stitched_frames, failed, given_up; /* as uw_reader_stats names them */
};

void unw_stitch_init(struct unw_stitch *s, unsigned max_frames, unw_stitch_deliver_fn deliver, void *ctx);
/* A sample: handed on now, or (a stack its copy cut short) held, with a copy of rec, until its
 * thread's later samples decide whether it is completed. */
int unw_stitch_sample(struct unw_stitch *s, unsigned tag, struct uw_sample *smp, const uint8_t *rec, uint32_t len);
/* A thread's EXIT, exec, or a FORK reusing its number: its held samples handed on, its
 * references dropped. */
int unw_stitch_forget(struct unw_stitch *s, uint32_t pid, uint32_t tid);
/* At the end: the held samples handed on. */
int unw_stitch_flush(struct unw_stitch *s);
/* The time of the oldest held sample; UINT64_MAX when none. */
uint64_t unw_stitch_oldest(const struct unw_stitch *s);
void unw_stitch_free(struct unw_stitch *s);

#endif
