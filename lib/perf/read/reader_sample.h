/* SPDX-License-Identifier: MIT */
/*
 * A sample record made a struct uw_sample (reader_sample.c): the filters, the kernel
 * callchain, and the user part, unwound by the tracker from the registers and stack copy (the
 * bytes past a cut copy pulled from the input) or taken from the callchain the file has and
 * judged. The stage is passed its own state; it says what became of the record (dropped, to
 * wait for its deferred callchain, or made) and the reader hands the sample on.
 */
#ifndef UW_PERF_READER_SAMPLE_H
#define UW_PERF_READER_SAMPLE_H

#include "perf/read/reader_header.h"

#define KERNEL_FRAMES_DEFAULT 512u
#define KERNEL_FRAMES_MAX 65536u

struct reader_samples {
	struct uw_session *s;
	struct uw_tracker *t;
	const struct uw_reader_opts *o; /* the reader's options (read only): filters, event, stack_limit */
	struct uw_reader_stats *st;     /* the reader's counts, where the stage counts its share */
	const char *path;               /* (its warning names the input) */
	struct reader_input *in;        /* a cut sample read back whole from it */
	const struct reader_features *ft; /* the stop reasons the file states (read only) */
	/* the buffers of the sample being made (valid until the next) */
	struct uw_frame *frames;        /* max_frames */
	uint64_t *kbuf;                 /* kernel frames */
	unsigned kcap;
	uint64_t *regbuf;               /* its registers, aligned (64) */
};

/* What became of a sample record. */
enum reader_made {
	READER_DROPPED,          /* malformed, or filtered out (counted) */
	READER_MADE,             /* *smp made (its frames in the stage's buffers), *out its reach */
	READER_HOLD,             /* its user part comes in a deferred callchain: *out says which */
};

/* What the reader needs besides the sample. */
struct reader_sample_out {
	/* READER_HOLD: the thread, time and cookie it waits with */
	uint32_t tid;
	uint64_t time, cookie;
	/* READER_MADE: how far into its stack of stack_of bytes the unwinding read (0: no stack
	 * unwound), which the input's stack prefix follows */
	uint64_t reach, stack_of;
};

/* How a record comes to the stage. */
#define READER_SAMPLE_REDELIVERED 1u /* held for its deferred callchain, now rewritten (counted then) */
#define READER_SAMPLE_MISSING 2u     /* ... whose chain never came */

/* The stage's buffers (max_frames frames; kernel frames per the options). @return 0, -ENOMEM. */
int reader_samples_init(struct reader_samples *ss, struct uw_session *s, struct uw_tracker *t,
                        const struct uw_reader_opts *o, struct uw_reader_stats *st, const char *path,
                        struct reader_input *in, const struct reader_features *ft);
void reader_samples_free(struct reader_samples *ss);
/* A SAMPLE record of attribute a (index aidx, its counts es) made into *smp. */
enum reader_made reader_sample_make(struct reader_samples *ss, const struct perf_attr *a, unsigned aidx,
                                    struct uw_event_stats *es, const uint8_t *rec, uint32_t len,
                                    const struct cut *cut, uint64_t ord, unsigned how, struct uw_sample *smp,
                                    struct reader_sample_out *out);
/* Does the sample pass the options' pid, tid and comm filters? */
bool reader_sample_wanted(const struct uw_reader_opts *o, uint32_t pid, uint32_t tid, const char *comm);
/* Kernel frames kept per sample, as the options say. */
static inline unsigned reader_kernel_frames(const struct uw_reader_opts *o)
{
	return o->max_kernel_frames ? UW_MIN(o->max_kernel_frames, KERNEL_FRAMES_MAX) : KERNEL_FRAMES_DEFAULT;
}

#endif
