/* SPDX-License-Identifier: MIT */
/*
 * The perf.data reader's parts (one concern per file). The stages have a state of their own
 * (struct reader_input, reader_attrs, reader_order, reader_deferred; stitching's struct
 * unw_stitch in lib/unwind) and are passed only that; the dispatch and the delivery of samples
 * work on the reader, which holds the stages' states and what they share:
 *   perf_reader.c    opening, the record dispatch, side-band records into the tracker, pushed
 *                    records, the delivery of what the order queue lets go
 *   reader_input.c   reading records: pread windows, a stream, the read-ahead thread (input)
 *   reader_header.c  the file header, event attributes (attrs) and feature sections
 *   reader_order.c   the time-order queue (FINISHED_ROUND): what goes when (order)
 *   reader_deferred.c samples held for their deferred user callchains (deferred)
 *   reader_sample.c  samples: filters, the tracker's unwinding, callchains judged, delivery
 *   reader_kunw.c    samples walked in the kernel (PR_UW_KUNW, a live recorder's): finished,
 *                    checked by the recorder's hook, delivered (kunw)
 */
#ifndef UW_PERF_READER_H
#define UW_PERF_READER_H

#include <pthread.h>
#include <stdatomic.h>

#include "perf/perf.h"
#include "unwind/stitch.h"

/* A sample whose user stack was cut to a prefix when read: where the whole record is. */
struct cut {
	uint64_t off;
	uint32_t len;
	bool cut;
};

struct ra_chunk;
struct kunw_sample;
struct tracker_proc;

/* A record of kernel unwinding's program (lib/kernel), pushed by a live recorder: {u64 event
 * id; struct kunw_rec ...}. A private type below the kernel's range that is never written. */
#define PR_UW_KUNW 60
/* Told of each such sample once its stack is made (frames [0, nkernel) walked in the kernel,
 * the rest finished in user space when finished): may cut smp's user frames (a walk that used
 * mappings the process has changed since) and note what to load. */
typedef void (*reader_kunw_fn)(void *ctx, const struct kunw_sample *ks, struct tracker_proc *p, struct uw_sample *smp,
                               unsigned nkernel, bool finished);

/* The prefix chosen at an adaptation, and where the reading was then (reader_input.c). */
struct prefix_step {
	uint64_t at;             /* the records before this offset had been processed */
	uint32_t prefix;
};

/* A run of samples (in file order) with one stop reason, from FEAT_UW_STOPS. */
struct stop_run {
	uint64_t first;          /* ordinal of its first sample */
	uint32_t count;
	uint8_t reason;
};

struct feat_sec {
	const uint8_t *p;
	size_t n;
	bool owned;
};

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

/* Reading records (reader_input.c): a file in pread windows or a stream, the read-ahead thread. */
struct reader_input {
	const struct reader_attrs *at; /* the recording's (read only: a sample's stack is cut by its attribute) */
	uint64_t err_off;        /* the last error: where, and what (a static string; NULL: none to say) */
	const char *err_what;
	int fd;
	bool close_fd;
	bool seekable;           /* a regular file: read with pread (never mapped) */
	uint64_t file_size;      /* when opened */
	uint64_t pos, end;       /* seekable: record cursor */
	/* Reading a seekable file's records in windows (see next_record_sparse) */
	bool sparse;
	bool cut_stacks;         /* samples' stacks cut to a prefix (not full_stacks) */
	uint8_t *win;            /* file bytes [win_off, win_off + win_len) */
	size_t wincap, win_len;
	uint64_t win_off;
	uint8_t *cbuf;           /* the record being returned, cut or whole (64 KiB) */
	uint8_t *fullbuf;        /* a cut sample read back whole (64 KiB) */
	struct cut cur_cut;      /* of the record next_record returned last */
	int32_t cur_aidx;        /* ... its attribute when the input found it (-1: not looked up) */
	/* Bytes of user stack kept per sample (sparse reading): the prefix of a record at offset o
	 * is the one chosen last before the records up to o - PREFIX_LAG were processed, so that
	 * which record is cut how never depends on how far the read-ahead thread had got. */
	pthread_mutex_t psteps_mu;
	struct prefix_step *psteps; /* adaptations in order; the first still needed at psteps_first */
	size_t npsteps, capsteps, psteps_first;
	atomic_uint_least64_t done_off; /* the records before it have been processed */
	uint32_t keep_cur;       /* the prefix of the record being read (by its reading thread) */
	struct ra *ra;           /* read-ahead thread (file mode) */
	struct ra_chunk *cur_chunk; /* holding the record next_record returned last */
	uint32_t reach_hist[17]; /* log2 buckets of the stack bytes unwinding used */
	uint32_t reach_n;
	uint64_t reach_stack_sum;
	/* stream input */
	uint8_t *buf;
	size_t bufcap, buflen, bufpos;
	uint64_t stream_off;
	bool eof;
};

/* The recording's event attributes and the ids that name them (reader_header.c). */
struct reader_attrs {
	struct perf_attr *attrs;
	size_t nattrs;
	struct base_map ids;     /* id -> attr index + 1 */
};

/* The time-order queue (reader_order.c). */
struct reader_order {
	struct qent *q;
	size_t qlen, qcap, qbytes;
	uint64_t seq, max_time, round_limit, last_flushed;
	bool any_flushed;
};

/* Samples waiting for their deferred user callchains (reader_deferred.c). A sample the stage lets
 * go (rec: rewritten, valid during the call; missing: its user part never came) goes to deliver. */
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

/* The feature sections kept (reader_header.c). */
struct reader_features {
	struct feat_sec sec[FEAT_LAST]; /* as read (copies, or buffers the reader owns) */
	/* FEAT_UW_STOPS: the stop reason of each sample, in runs (file order) */
	struct stop_run *stops;
	size_t nstops;
};

/* Samples walked in the kernel (reader_kunw.c). */
struct reader_kunw {
	reader_kunw_fn fn;        /* the live recorder's check */
	void *ctx;
	uint8_t raw[128];         /* the sample record writers see of one */
	struct uw_frame *vframes; /* verify mode: the stack lib/unwind gives from frame 0's copy */
	uint64_t compared, differ; /* verify mode: samples compared, found different */
};

/* The reader: the stages' states, and what the dispatch and the delivery of samples share. */
struct uw_reader {
	struct uw_session *s;
	struct uw_reader_opts o;
	struct uw_tracker *t;    /* the tracker fed (o.tracker, or the reader's own) */
	bool own_tracker;
	char *path;
	bool file_mode;          /* PERFILE2 header with sections */
	struct reader_input in;
	struct reader_attrs at;
	struct reader_order q;
	struct reader_deferred def;
	/* truncated stacks completed: the unwinding stage lib/unwind/stitch.c, its own state */
	struct unw_stitch stitch;
	struct reader_kunw kunw;
	/* per-sample buffers */
	struct uw_frame *frames;
	uint64_t *kbuf;
	unsigned kcap;
	struct uw_reader_stats st;
	uint64_t since_sweep, last_progress;
	uint64_t *regbuf;        /* a sample's registers, aligned (64) */
	int fatal;
	bool inner_failed;       /* a record from the piece failed (and said why) */
	bool unfinished;         /* the writer stopped before its end: a record cut short ends the data */
	bool wall_exact;         /* the recording's clock data gave wall-clock time */
	uint64_t last_sample_time; /* from SAMPLE_TIME */
	uint64_t lost_in_lost, lost_in_samples; /* events lost by LOST and by LOST_SAMPLES records */
	bool any_lost_samples;
	uint64_t decomp_off;     /* offset of the compressed record being expanded */
	const char *info[UW_INFO__COUNT]; /* interned */
	struct uw_event_stats *evst; /* per attribute */
	uint64_t by_type[PR_TYPES + 1]; /* records read, by type (the last: types past those) */
	uint64_t skipped_by_type[PR_TYPES + 1]; /* of those, not used */
	uint64_t sample_ord;     /* SAMPLE records read so far, in file order */
	uint64_t cur_ord;        /* of the record being queued */
	/* perf record -z: the stream of COMPRESSED records' pieces */
	struct perf_decomp *decomp;
	bool inner;              /* processing records that came out of it (copied when queued) */
	struct reader_features ft;
	perf_record_fn record_fn; /* writers: every non-sample record delivered */
	void *record_ctx;
	/* the sample being delivered */
	const uint8_t *cur_rec;
	uint32_t cur_len;
	bool deferred_missing;    /* its deferred chain never came */
	bool deferred_stitching;  /* it is a held one, its chain rewritten */
	uint64_t newest_delivered; /* the newest time of a record delivered so far */
	uint8_t *fixbuf;          /* a record corrected for writers (64 KiB) */
};

#define KERNEL_FRAMES_DEFAULT 512u
#define KERNEL_FRAMES_MAX 65536u
#define PREFIX_START 4096u       /* bytes of each stack read at first (sparse reading) */
#define PREFIX_LAG ((uint64_t)2 << 20) /* a prefix applies this far past where it was chosen */
#define QUEUE_BYTES_DEFAULT ((size_t)512 << 20)

/* An error at a byte offset of the input, said in the session's message. */
int reader_err(struct uw_reader *r, int err, uint64_t off, const char *what);
/* An input error (-UW_ETRUNC, -UW_EFORMAT) said with what the input kept of it; err returned. */
int reader_input_err(struct uw_reader *r, int err);

/* ---- input (reader_input.c): the stage passed only its own state. Errors at an offset of the
 * input: err_off and err_what set (reader_input_err says them in the session's message). */
/* n bytes at off of a seekable input into buf (-UW_ETRUNC when the file ends before). */
int reader_pread(struct reader_input *in, void *buf, size_t n, uint64_t off);
/* Stream input: at least need bytes buffered from bufpos (-UW_ETRUNC at the end). */
int reader_fill(struct reader_input *in, size_t need);
/* Next record: *rec points to header + body (valid until the next call). @return 1, 0 at end. */
int reader_next(struct reader_input *in, const uint8_t **rec, uint32_t *len, uint64_t *off);
/* Skips payload bytes that follow some records (AUXTRACE, TRACING_DATA). */
int reader_skip_payload(struct reader_input *in, uint64_t n, uint64_t off);
/* The read-ahead thread of a file-mode recording. */
int reader_ra_start(struct reader_input *in);
void reader_ra_stop(struct reader_input *in);
void reader_ra_free(struct reader_input *in);
/* A queued record held in a read-ahead chunk, and its release once delivered. */
void reader_chunk_hold(struct ra_chunk *c);
void reader_chunk_release(struct reader_input *in, struct ra_chunk *c);
/* The whole record of a cut sample, read back (valid until the next call); NULL when it cannot. */
const uint8_t *reader_read_whole(struct reader_input *in, const struct cut *cut);
/* The prefix, chosen from the stacks' reach of the last 256 samples. */
void reader_adapt_prefix(struct reader_input *in);
void reader_prefix_free(struct reader_input *in);
/* How much of its stack a sample's unwinding used (the prefix follows it). */
static inline void reader_note_reach(struct reader_input *in, uint64_t reach, uint64_t stack_size)
{
	unsigned k = 0;
	while (k < 16 && (1ull << k) < reach)
		k++;
	in->reach_hist[k]++;
	in->reach_stack_sum += stack_size;
	if (++in->reach_n == 256)
		reader_adapt_prefix(in);
}

/* ---- header, attributes, features (reader_header.c) */
#define READER_ATTRS_MAX 4096
/* An attribute (a raw perf_event_attr of size bytes) and its nids ids added. @return 0; -ENOMEM;
 * -UW_ELIMIT or -UW_EFORMAT with *what saying why. */
int reader_attrs_add(struct reader_attrs *at, const uint8_t *p, size_t size, const uint8_t *ids, size_t nids,
                     const char **what);
void reader_attrs_free(struct reader_attrs *at);
/* The reader's: an attribute added with its statistics (an error said at offset off). */
int reader_add_attr(struct uw_reader *r, const uint8_t *p, size_t size, const uint8_t *ids, size_t nids,
                    uint64_t off);
/* The attribute of an id (the first when none has it). */
const struct perf_attr *reader_attr_by_id(const struct reader_attrs *at, uint64_t id, unsigned *idx);
/* Which attribute a record belongs to (the first when it cannot tell). */
const struct perf_attr *reader_attr_of(const struct reader_attrs *at, const uint8_t *rec, uint32_t len, unsigned *idx);
void reader_build_ids(struct uw_reader *r, const uint8_t *p, uint64_t size);
/* The stop reason the file states for the sample of ordinal ord; -1 when it states none. */
int reader_stated_stop(const struct reader_features *ft, uint64_t ord);
/* A feature section kept for perf_reader_feature: copied (copy), else taken (owned, malloc'd). */
void reader_keep_feature(struct reader_features *ft, unsigned bit, const uint8_t *p, size_t n, bool copy);
void reader_features_free(struct reader_features *ft);
void reader_feature(struct uw_reader *r, unsigned feat, const uint8_t *p, uint64_t size);
int reader_file_header(struct uw_reader *r);

/* ---- time order (reader_order.c): the queue alone */
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
uint64_t reader_record_time(const struct perf_attr *a, const uint8_t *rec, uint32_t len, bool *has);

/* ---- dispatch (perf_reader.c) and samples (reader_sample.c); aidx: the record's attribute */
int reader_deliver(struct uw_reader *r, unsigned aidx, const uint8_t *rec, uint32_t len, uint64_t time,
                   const struct cut *cut, uint64_t ord);
int reader_sample(struct uw_reader *r, unsigned aidx, const uint8_t *rec, uint32_t len, const struct cut *cut,
                  uint64_t ord);

/* Does the sample pass the pid, tid and comm filters? */
bool reader_sample_wanted(const struct uw_reader *r, uint32_t pid, uint32_t tid, const char *comm);
/* A PR_UW_KUNW record (reader_kunw.c). */
int reader_kunw_sample(struct uw_reader *r, unsigned aidx, const uint8_t *rec, uint32_t len, uint64_t ord);
void reader_set_kunw_hook(struct uw_reader *r, reader_kunw_fn fn, void *ctx);

/* A sample to its consumer: counted, then given to opts.on_sample. */
int reader_deliver_sample(struct uw_reader *r, unsigned aidx, struct uw_sample *smp);

/* ---- truncated stacks completed (lib/unwind/stitch.c, through reader_sample.c) */
/* A sample with stitching on: delivered now, or (a stack its copy cut short) held until its
 * thread's later samples decide whether it is completed. */
int reader_stitch_sample(struct uw_reader *r, unsigned aidx, struct uw_sample *smp);
/* A thread's EXIT, exec, or a FORK reusing its number: its held samples delivered, its
 * references dropped. */
int reader_stitch_forget(struct uw_reader *r, uint32_t pid, uint32_t tid);
/* At the end: the held samples delivered. */
int reader_stitch_flush(struct uw_reader *r);
/* The time of the oldest held sample; UINT64_MAX when none. */
uint64_t reader_stitch_oldest(const struct uw_reader *r);
void reader_stitch_free(struct uw_reader *r);
/* The stage's delivery: a sample (held or not) to the consumer with its record. */
int reader_stitched(void *ctx, unsigned aidx, struct uw_sample *smp, const uint8_t *rec, uint32_t len);

/* ---- deferred user callchains (reader_deferred.c): the stage passed only its own state */
struct perf_sample;
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
/* The reader's: the stage's delivery (the sample to reader_sample, the record what writers see). */
int reader_deferred_deliver(void *ctx, unsigned aidx, const uint8_t *rec, uint32_t len, uint64_t ord, bool missing);
/* The stage's counts into the reader's stats. */
static inline void reader_deferred_counts(struct uw_reader *r)
{
	r->st.deferred_samples = r->def.n.samples;
	r->st.deferred_stitched = r->def.n.stitched;
	r->st.deferred_missing = r->def.n.missing;
	r->st.deferred_records = r->def.n.records;
	r->st.deferred_unmatched = r->def.n.unmatched;
	r->st.deferred_malformed = r->def.n.malformed;
}

#endif
