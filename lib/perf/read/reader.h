/* SPDX-License-Identifier: MIT */
/*
 * The perf.data reader: the dispatcher (perf_reader.c) and its stages, one concern and one state
 * each, declared in headers of their own and passed only their state (and what the dispatcher
 * hands down as values: the attribute table, an attribute found once, the input to read back
 * from). No stage calls back up: they return what became of a record (an error with its offset
 * and reason, a sample made, a sample to hold) and the dispatcher acts on it.
 *   perf_reader.c     opening, the record dispatch, side-band records into the tracker, pushed
 *                     records, the delivery of what the order queue lets go and of samples
 *   reader_input.c    reading records: pread windows, a stream, the read-ahead thread (input)
 *   reader_attrs.c    the event attributes and which one a record belongs to (at)
 *   reader_header.c   the file header and the feature sections (hdr)
 *   reader_order.c    the time-order queue (FINISHED_ROUND): what goes when (q)
 *   reader_deferred.c samples held for their deferred user callchains (def)
 *   reader_sample.c   a sample record made a struct uw_sample: filters, the tracker's
 *                     unwinding, callchains judged (smp)
 *   reader_kunw.c     samples walked in the kernel (PR_UW_KUNW, a live recorder's) made,
 *                     finished and checked by the recorder's hook (kunw)
 *   lib/unwind/stitch.c truncated stacks completed (stitch)
 * This header is the dispatcher's: only perf_reader.c (and the library's own tests and the live
 * recorder's hook) see struct uw_reader.
 */
#ifndef UW_PERF_READER_H
#define UW_PERF_READER_H

#include "perf/read/reader_attrs.h"
#include "perf/read/reader_deferred.h"
#include "perf/read/reader_header.h"
#include "perf/read/reader_input.h"
#include "perf/read/reader_kunw.h"
#include "perf/read/reader_order.h"
#include "perf/read/reader_sample.h"
#include "unwind/stitch.h"

#define QUEUE_BYTES_DEFAULT ((size_t)512 << 20)
#define DIR_TURN ((uint64_t)2 << 20) /* a directory recording's part read at a turn */
#define DIR_MAX_PARTS 1024u          /* parts of a directory recording (one per recording thread) */

/* One part of a directory recording: a stream of records, its own compressed stream. */
struct reader_part {
	struct reader_input in;
	struct perf_decomp *decomp;
	char *name;              /* DIR/data.N */
	bool done;
};

struct uw_reader {
	/* the dispatcher's own */
	struct uw_session *s;
	struct uw_reader_opts o;
	struct uw_tracker *t;    /* the tracker fed (o.tracker, or the reader's own) */
	bool own_tracker;
	char *path;
	bool file_mode;          /* PERFILE2 header with sections */
	int fatal;
	perf_record_fn record_fn; /* writers: every non-sample record delivered */
	void *record_ctx;
	bool pushed;             /* made by uw_reader_new: its records come by uw_reader_push */
	/* kernel unwinding for the reader's embedder (uw_kernel_unwind, one per reader): every
	 * record pushed, as it is pushed (before it is ordered) */
	perf_record_fn push_fn;
	void *push_ctx;
	const void *kunw_owner;
	uint64_t since_sweep, last_progress;
	uint64_t sample_ord;     /* SAMPLE records read so far, in file order */
	uint64_t cur_ord;        /* of the record being queued */
	/* perf record -z: the stream of COMPRESSED records' pieces */
	struct perf_decomp *decomp;
	uint64_t decomp_off;     /* offset of the compressed record being expanded */
	bool inner;              /* processing records that came out of it (copied when queued) */
	bool inner_failed;       /* a record from the piece failed (and said why) */
	/* the counts */
	struct uw_reader_stats st;
	struct uw_event_stats *evst; /* per attribute */
	uint64_t by_type[PR_TYPES + 1]; /* records read, by type (the last: types past those) */
	uint64_t skipped_by_type[PR_TYPES + 1]; /* of those, not used */
	uint64_t lost_in_lost, lost_in_samples; /* events lost by LOST and by LOST_SAMPLES records */
	bool any_lost_samples;
	/* the record being delivered */
	const uint8_t *cur_rec;  /* (a sample's: what writers see) */
	uint32_t cur_len;
	uint64_t newest_delivered; /* the newest time of a record delivered so far */
	uint8_t *fixbuf;          /* a record corrected for writers (64 KiB) */
	/* A directory recording (perf record --threads): DIR/data is the input below (the header
	 * and the records perf wrote itself), the sampling threads' records follow in the parts,
	 * DIR/data.N, read in turns of DIR_TURN bytes each as perf reads them (each part holds
	 * several CPUs' rings in pieces, so only the time-order queue puts them in order). */
	struct reader_part *parts;
	size_t nparts;
	char *dir_data;          /* DIR/data (NULL: not a directory) */
	struct reader_input *cur; /* the input of the record being processed (&in, or a part's) */
	const char *cur_name;    /* ... its name in messages (NULL: path) */
	uint64_t total_bytes;    /* of records, every input's, for progress */
	uint64_t parts_read;     /* bytes of the parts read so far */
	/* the stages' states */
	struct reader_input in;
	struct reader_attrs at;
	struct reader_header hdr;
	struct reader_order q;
	struct reader_deferred def;
	struct reader_samples smp;
	struct reader_kunw kunw;
	struct unw_stitch stitch;
};

/* The live recorder's check of samples walked in the kernel. */
void reader_set_kunw_hook(struct uw_reader *r, reader_kunw_fn fn, void *ctx);
/* Each record pushed (uw_reader_push), as it is pushed, to fn (NULL: none). */
void reader_set_push_hook(struct uw_reader *r, perf_record_fn fn, void *ctx);

/* ---- truncated stacks completed (lib/unwind/stitch.c), through the dispatcher */
/* A sample with stitching on: delivered now, or (a stack its copy cut short) held until its
 * thread's later samples decide whether it is completed. */
int reader_stitch_sample(struct uw_reader *r, unsigned aidx, struct uw_sample *smp);
/* A thread's EXIT, exec, or a FORK reusing its number: its held samples delivered, its
 * references dropped. */
int reader_stitch_forget(struct uw_reader *r, uint32_t pid, uint32_t tid);
/* At the end: the held samples delivered. */
int reader_stitch_flush(struct uw_reader *r);

#endif
