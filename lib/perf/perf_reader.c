/* SPDX-License-Identifier: MIT */
/*
 * perf.data reading: file mode (tools/perf/Documentation/perf.data-file-format.txt) and pipe
 * mode, records put in timestamp order with FINISHED_ROUND (a record may be delivered once
 * every record written before the previous round marker has been delivered), then handed to
 * the tracker, and samples unwound and passed to the caller.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perf/perf.h"

/* A sample whose user stack was cut to a prefix when read: where the whole record is. */
struct cut {
	uint64_t off;
	uint32_t len;
	bool cut;
};

struct ra_chunk;

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
};

struct uw_reader {
	struct uw_session *s;
	struct uw_reader_opts o;
	char *path;
	int fd;
	bool close_fd;
	bool file_mode;          /* PERFILE2 header with sections */
	const uint8_t *map;      /* whole input when it could be mapped */
	size_t map_size;
	uint64_t pos, end;       /* mapped: record cursor */
	/* Sparse reading of a mapped file's records (see next_record_sparse) */
	bool sparse;
	uint8_t *win;            /* file bytes [win_off, win_off + win_len) */
	size_t wincap, win_len;
	uint64_t win_off;
	uint8_t *cbuf;           /* the record being returned, cut or whole (64 KiB) */
	uint8_t *fullbuf;        /* a cut sample read back whole (64 KiB) */
	struct cut cur_cut;      /* of the record next_record returned last */
	atomic_uint_least32_t prefix; /* bytes of user stack kept per sample */
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
	/* attributes */
	struct perf_attr *attrs;
	size_t nattrs;
	struct base_map ids;     /* id -> attr index + 1 */
	/* ordering */
	struct qent *q;
	size_t qlen, qcap, qbytes;
	uint64_t seq, max_time, round_limit, last_flushed;
	bool any_flushed;
	/* per-sample buffers */
	struct uw_frame *frames;
	uint64_t *kbuf;
	unsigned kcap;
	struct uw_reader_stats st;
	uint64_t since_sweep, last_progress;
	int fatal;
	bool inner_failed;       /* a record from the piece failed (and said why) */
	bool unfinished;         /* the writer stopped before its end: a record cut short ends the data */
	bool wall_exact;         /* the recording's clock data gave wall-clock time */
	uint64_t last_sample_time; /* from SAMPLE_TIME */
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
	/* FEAT_UW_STOPS: the stop reason of each sample, in runs (file order) */
	struct stop_run *stops;
	size_t nstops;
	/* feature sections as read (file mode: into the mapping; pipe mode: copies) */
	struct feat_sec feats[FEAT_LAST];
	perf_record_fn record_fn; /* writers: every non-sample record delivered */
	void *record_ctx;
	const uint8_t *cur_rec;   /* the sample being delivered */
	uint32_t cur_len;
};

void perf_reader_set_record_fn(struct uw_reader *r, perf_record_fn fn, void *ctx)
{
	r->record_fn = fn;
	r->record_ctx = ctx;
}

const struct perf_attr *perf_reader_attrs(const struct uw_reader *r, size_t *n)
{
	*n = r->nattrs;
	return r->attrs;
}

const uint8_t *perf_reader_current_sample(const struct uw_reader *r, uint32_t *len)
{
	*len = r->cur_len;
	return r->cur_rec;
}

#define KERNEL_FRAMES_DEFAULT 512u
#define KERNEL_FRAMES_MAX 65536u

static int rerr(struct uw_reader *r, int err, uint64_t off, const char *what)
{
	return base_err(&r->s->log, err, "%s: at byte offset %llu: %s", r->path, (unsigned long long)off, what);
}

/* ---- input */

static int stream_fill(struct uw_reader *r, size_t need)
{
	if (r->buflen - r->bufpos >= need)
		return 0;
	if (r->bufpos) {
		memmove(r->buf, r->buf + r->bufpos, r->buflen - r->bufpos);
		r->buflen -= r->bufpos;
		r->bufpos = 0;
	}
	if (need > r->bufcap) {
		size_t cap = r->bufcap ? r->bufcap : 1 << 16;
		while (cap < need)
			cap *= 2;
		uint8_t *nb = realloc(r->buf, cap);
		if (!nb)
			return -ENOMEM;
		r->buf = nb;
		r->bufcap = cap;
	}
	while (r->buflen < need) {
		ssize_t n = read(r->fd, r->buf + r->buflen, r->bufcap - r->buflen);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0) {
			r->eof = true;
			return -UW_ETRUNC;
		}
		r->buflen += (size_t)n;
	}
	return 0;
}

/* Next record: *rec points to header + body (valid until the next call). @return 1, 0 at end. */
/*
 * Sparse reading. Mapping a recording costs the kernel a page-table entry per 4 KiB page mapped
 * (and unmapped), and perf maps pages in 64 KiB groups, so a mapped 100 MiB file costs as much as
 * copying it; yet unwinding uses the first KiB or two of each sample's 16 KiB stack copy. So the
 * data section is read with pread, in windows that start where the next bytes are needed: a
 * sample's head and the first `prefix` bytes of its stack, then its tail together with the
 * records that follow. The sample is queued with its stack cut to the prefix (a valid record
 * with smaller sizes); when unwinding it wants bytes past the cut, the whole record is read back
 * and unwound again, so results never depend on the cut. The prefix follows what recent samples
 * used (adapt_prefix). Measured in docs/design.md.
 */
static const struct perf_attr *record_attr(const struct uw_reader *r, const uint8_t *rec, uint32_t len,
                                           unsigned *idx);

#define WIN_EXTRA 1024u       /* read past the needed bytes: headers and small records */
#define PREFIX_MIN 512u
#define PREFIX_START 4096u

static int win_read(struct uw_reader *r, uint64_t off, size_t want)
{
	if (want > r->wincap) {
		uint8_t *nw = realloc(r->win, want);
		if (!nw)
			return -ENOMEM;
		r->win = nw;
		r->wincap = want;
	}
	size_t got = 0;
	while (got < want) {
		ssize_t n = pread(r->fd, r->win + got, want - got, (off_t)(off + got));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r->win_len = 0;
			return -errno;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	r->win_off = off;
	r->win_len = got;
	return 0;
}

/* Bytes [off, off + need) of the data section, valid until the next call; NULL (*err set) when
 * they cannot be read. */
static const uint8_t *win_get(struct uw_reader *r, uint64_t off, size_t need, int *err)
{
	if (off >= r->win_off && off - r->win_off <= r->win_len && r->win_len - (off - r->win_off) >= need)
		return r->win + (off - r->win_off);
	size_t want = need + atomic_load_explicit(&r->prefix, memory_order_relaxed) + WIN_EXTRA;
	if (want > r->end - off)
		want = (size_t)(r->end - off);
	*err = win_read(r, off, want);
	if (*err)
		return NULL;
	if (r->win_len < need) {
		*err = -UW_ETRUNC;
		return NULL;
	}
	return r->win;
}

/* Chooses the prefix that minimizes bytes read: the prefix on every sample plus, for the share of
 * samples that needed more, a whole stack read back and a second unwind (costed as 12 KiB more). */
static void adapt_prefix(struct uw_reader *r)
{
	uint64_t avg = r->reach_stack_sum / r->reach_n, best = UINT64_MAX, best_p = PREFIX_START;
	uint32_t below = 0;
	for (unsigned k = 9; k <= 16; k++) {
		below += r->reach_hist[k];
		if (k == 9)
			for (unsigned j = 0; j < 9; j++)
				below += r->reach_hist[j];
		uint64_t p = 1ull << k, miss = r->reach_n - below;
		uint64_t cost = p * r->reach_n + miss * (avg + 12288);
		if (cost < best) {
			best = cost;
			best_p = p;
		}
	}
	atomic_store_explicit(&r->prefix, (uint32_t)best_p, memory_order_relaxed);
	memset(r->reach_hist, 0, sizeof(r->reach_hist));
	r->reach_n = 0;
	r->reach_stack_sum = 0;
}

static void note_reach(struct uw_reader *r, uint64_t reach, uint64_t stack_size)
{
	unsigned k = 0;
	while (k < 16 && (1ull << k) < reach)
		k++;
	r->reach_hist[k]++;
	r->reach_stack_sum += stack_size;
	if (++r->reach_n == 256)
		adapt_prefix(r);
}

/* The next record of the data section, its sample stack cut to the prefix. Logs nothing (it
 * also runs on the read-ahead thread). @return 1; 0 at the end; an error with *off and *what. */
static int sparse_read(struct uw_reader *r, const uint8_t **rec, uint32_t *len, uint64_t *off, struct cut *cut,
                       const char **what)
{
	int err = 0;
	uint64_t pos = r->pos;
	memset(cut, 0, sizeof(*cut));
	if (pos >= r->end)
		return 0;
	*off = pos;
	*what = "truncated record header (8 bytes expected)";
	if (r->end - pos < 8)
		return -UW_ETRUNC;
	const uint8_t *h = win_get(r, pos, 8, &err);
	if (!h)
		return err;
	uint32_t type;
	uint16_t size;
	memcpy(&type, h, 4);
	memcpy(&size, h + 6, 2);
	*what = "record size smaller than its header";
	if (size < 8)
		return -UW_EFORMAT;
	*what = "record runs past the end of the data";
	if (r->end - pos < size)
		return -UW_ETRUNC;
	r->pos = pos + size;
	*len = size;
	uint32_t keep = atomic_load_explicit(&r->prefix, memory_order_relaxed);
	/* a sample whose stack is worth cutting */
	if (type == PR_SAMPLE && r->nattrs && size > keep + 1024) {
		size_t avail = r->win_len - (size_t)(pos - r->win_off);
		if (avail > size)
			avail = size;
		const struct perf_attr *a = record_attr(r, h, (uint32_t)avail, NULL);
		size_t sf;
		if (perf_sample_stack_field(a, h + 8, avail - 8, &sf) == 0) {
			uint64_t ssize;
			memcpy(&ssize, h + 8 + sf, 8);
			size_t data_off = 8 + sf + 8;
			if (ssize <= size - data_off && size - data_off - ssize >= 8 && ssize > keep + 512u) {
				size_t tail_off = data_off + (size_t)ssize, tail_len = size - tail_off;
				if (!(h = win_get(r, pos, data_off + keep, &err)))
					return err;
				memcpy(r->cbuf, h, data_off + keep);
				/* the tail, and with it the records that follow */
				const uint8_t *t = win_get(r, pos + tail_off, tail_len, &err);
				if (!t)
					return err;
				memcpy(r->cbuf + data_off + keep, t, tail_len);
				uint16_t nsize = (uint16_t)(data_off + keep + tail_len);
				uint64_t k64 = keep, dyn;
				memcpy(r->cbuf + 6, &nsize, 2);
				memcpy(r->cbuf + 8 + sf, &k64, 8);
				memcpy(&dyn, t, 8);
				if (dyn > keep) {
					*cut = (struct cut){ pos, size, true };
					memcpy(r->cbuf + data_off + keep, &k64, 8);
				}
				*rec = r->cbuf;
				*len = nsize;
				return 1;
			}
		}
	}
	if (!(h = win_get(r, pos, size, &err)))
		return err;
	/* payload bytes that follow the record */
	uint64_t payload = 0;
	if (type == PR_AUXTRACE && size >= 16)
		memcpy(&payload, h + 8, 8);
	else if (type == PR_HEADER_TRACING_DATA && size >= 12) {
		uint32_t sz;
		memcpy(&sz, h + 8, 4);
		payload = ((uint64_t)sz + 7) & ~7ull;
	}
	if (payload) {
		*what = "record payload runs past the end of the data";
		if (r->end - r->pos < payload)
			return -UW_ETRUNC;
		r->pos += payload;
	}
	*rec = h;
	return 1;
}

/*
 * Read-ahead thread for file-mode recordings: it runs sparse_read and hands the records over in
 * chunks, so the reading system calls run on the other CPU while this one unwinds. At most
 * RA_CHUNKS chunks are in flight; an error travels in order, after the records before it.
 */
#define RA_CHUNK (256u << 10)
#define RA_CHUNKS 6u

struct ra_chunk {
	struct ra_chunk *next;
	struct ra_chunk *all;    /* every chunk, for the final free */
	size_t len, pos;         /* bytes of entries; the consumer's cursor */
	uint32_t live;           /* its records in the ordering queue (consumer only) */
	bool done;               /* the consumer has read past it (consumer only) */
	int err;                 /* after the entries: 0 (more chunks follow), 1 (the end) or an error */
	uint64_t err_off;
	const char *err_what;
	uint8_t data[];          /* entries: struct ra_ent, then the record padded to 8 bytes */
};

struct ra_ent {
	struct cut cut;
	uint64_t off;
	uint32_t len;
};

/* A chunk is produced, handed to the consumer (which reads its records and queues them in
 * place), and recycled once the consumer has read past it and delivered all its records.
 * `inflight` counts chunks produced but not yet taken: chunks held by the ordering queue do not
 * count (the queue's own cap bounds them), so the thread never waits on the queue. */
struct ra {
	pthread_t thread;
	bool joined;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct ra_chunk *full_head, *full_tail, *free, *all;
	unsigned inflight;
	bool stop;
	struct ra_chunk *cur;    /* consumer's */
};

static struct ra_chunk *ra_take_free(struct ra *ra)
{
	pthread_mutex_lock(&ra->mu);
	while (!ra->stop && ra->inflight >= RA_CHUNKS)
		pthread_cond_wait(&ra->cv, &ra->mu);
	struct ra_chunk *c = NULL;
	if (!ra->stop) {
		c = ra->free;
		if (c)
			ra->free = c->next;
		ra->inflight++;
	}
	pthread_mutex_unlock(&ra->mu);
	if (c || ra->stop)
		return c;
	c = malloc(sizeof(*c) + RA_CHUNK);
	pthread_mutex_lock(&ra->mu);
	if (c) {
		c->all = ra->all;
		ra->all = c;
	} else {
		ra->inflight--;
	}
	pthread_mutex_unlock(&ra->mu);
	return c;
}

static void ra_push(struct ra *ra, struct ra_chunk *c)
{
	c->next = NULL;
	pthread_mutex_lock(&ra->mu);
	if (ra->full_tail)
		ra->full_tail->next = c;
	else
		ra->full_head = c;
	ra->full_tail = c;
	pthread_cond_broadcast(&ra->cv);
	pthread_mutex_unlock(&ra->mu);
}

static void *ra_main(void *arg)
{
	struct uw_reader *r = arg;
	struct ra *ra = r->ra;
	pthread_setname_np(pthread_self(), "uw-readahead");
	for (;;) {
		struct ra_chunk *c = ra_take_free(ra);
		if (!c) {
			if (ra->stop)
				return NULL;
			/* no memory for a chunk: stop; the consumer reports ENOMEM */
			pthread_mutex_lock(&ra->mu);
			ra->stop = true;
			pthread_cond_broadcast(&ra->cv);
			pthread_mutex_unlock(&ra->mu);
			return NULL;
		}
		c->len = c->pos = 0;
		c->err = 0;
		c->live = 0;
		c->done = false;
		for (;;) {
			const uint8_t *rec;
			uint32_t len;
			struct ra_ent e;
			int got = sparse_read(r, &rec, &len, &e.off, &e.cut, &c->err_what);
			if (got <= 0) {
				c->err = got ? got : 1;
				c->err_off = e.off;
				break;
			}
			e.len = len;
			memcpy(c->data + c->len, &e, sizeof(e));
			memcpy(c->data + c->len + sizeof(e), rec, len);
			c->len += sizeof(e) + ((len + 7u) & ~7u);
			if (RA_CHUNK - c->len < sizeof(e) + 65536 + 8)
				break;
		}
		bool end = c->err != 0;
		ra_push(ra, c);
		if (end)
			return NULL;
	}
}

/* Back to the free list: read past and none of its records queued. Consumer only. */
static void ra_recycle(struct ra *ra, struct ra_chunk *c)
{
	if (!c->done || c->live)
		return;
	pthread_mutex_lock(&ra->mu);
	c->next = ra->free;
	ra->free = c;
	pthread_cond_broadcast(&ra->cv);
	pthread_mutex_unlock(&ra->mu);
}

static int ra_next(struct uw_reader *r, const uint8_t **rec, uint32_t *len, uint64_t *off)
{
	struct ra *ra = r->ra;
	struct ra_chunk *c = ra->cur;
	memset(&r->cur_cut, 0, sizeof(r->cur_cut));
	r->cur_chunk = NULL;
	while (!c || c->pos == c->len) {
		if (c) {
			if (c->err == 1)
				return 0;
			if (c->err) {
				int err = c->err;
				c->err = 1; /* reported once */
				return err == -UW_ETRUNC || err == -UW_EFORMAT ? rerr(r, err, c->err_off, c->err_what) : err;
			}
			c->done = true;
			ra_recycle(ra, c);
		}
		pthread_mutex_lock(&ra->mu);
		while (!ra->full_head && !ra->stop)
			pthread_cond_wait(&ra->cv, &ra->mu);
		c = ra->full_head;
		if (c) {
			ra->full_head = c->next;
			if (!ra->full_head)
				ra->full_tail = NULL;
			ra->inflight--;
			pthread_cond_broadcast(&ra->cv);
		}
		pthread_mutex_unlock(&ra->mu);
		ra->cur = c;
		if (!c)
			return -ENOMEM; /* the thread could not get memory */
	}
	struct ra_ent e;
	memcpy(&e, c->data + c->pos, sizeof(e));
	*rec = c->data + c->pos + sizeof(e);
	*len = e.len;
	*off = e.off;
	r->cur_cut = e.cut;
	r->cur_chunk = c;
	c->pos += sizeof(e) + ((e.len + 7u) & ~7u);
	return 1;
}

/* Stops the thread; the chunks stay (queued records may point into them) until ra_free. */
static void ra_stop(struct uw_reader *r)
{
	struct ra *ra = r->ra;
	if (!ra || ra->joined)
		return;
	pthread_mutex_lock(&ra->mu);
	ra->stop = true;
	pthread_cond_broadcast(&ra->cv);
	pthread_mutex_unlock(&ra->mu);
	pthread_join(ra->thread, NULL);
	ra->joined = true;
}

static void ra_free(struct uw_reader *r)
{
	struct ra *ra = r->ra;
	if (!ra)
		return;
	ra_stop(r);
	for (struct ra_chunk *c = ra->all, *n; c; c = n) {
		n = c->all;
		free(c);
	}
	pthread_mutex_destroy(&ra->mu);
	pthread_cond_destroy(&ra->cv);
	free(ra);
	r->ra = NULL;
}

static int ra_start(struct uw_reader *r)
{
	struct ra *ra = calloc(1, sizeof(*ra));
	if (!ra)
		return -ENOMEM;
	pthread_mutex_init(&ra->mu, NULL);
	pthread_cond_init(&ra->cv, NULL);
	r->ra = ra;
	if (pthread_create(&ra->thread, NULL, ra_main, r)) {
		pthread_mutex_destroy(&ra->mu);
		pthread_cond_destroy(&ra->cv);
		free(ra);
		r->ra = NULL;
	}
	return 0;
}

static int next_record_sparse(struct uw_reader *r, const uint8_t **rec, uint32_t *len, uint64_t *off)
{
	if (r->ra)
		return ra_next(r, rec, len, off);
	const char *what = NULL;
	int got = sparse_read(r, rec, len, off, &r->cur_cut, &what);
	if (got < 0 && (got == -UW_ETRUNC || got == -UW_EFORMAT))
		return rerr(r, got, *off, what);
	return got;
}

static int next_record(struct uw_reader *r, const uint8_t **rec, uint32_t *len, uint64_t *off)
{
	uint8_t hdr[8];
	uint16_t size;
	if (r->sparse)
		return next_record_sparse(r, rec, len, off);
	if (r->map) {
		if (r->pos >= r->end)
			return 0;
		*off = r->pos;
		if (r->end - r->pos < 8)
			return rerr(r, -UW_ETRUNC, r->pos, "truncated record header (8 bytes expected)");
		memcpy(hdr, r->map + r->pos, 8);
		memcpy(&size, hdr + 6, 2);
		if (size < 8)
			return rerr(r, -UW_EFORMAT, r->pos, "record size smaller than its header");
		if (r->end - r->pos < size)
			return rerr(r, -UW_ETRUNC, r->pos, "record runs past the end of the data");
		*rec = r->map + r->pos;
		*len = size;
		r->pos += size;
		return 1;
	}
	*off = r->stream_off;
	int e = stream_fill(r, 8);
	if (e == -UW_ETRUNC && r->buflen == r->bufpos)
		return 0;
	if (e)
		return e == -UW_ETRUNC ? rerr(r, e, *off, "truncated record header (8 bytes expected)") : e;
	memcpy(&size, r->buf + r->bufpos + 6, 2);
	if (size < 8)
		return rerr(r, -UW_EFORMAT, *off, "record size smaller than its header");
	e = stream_fill(r, size);
	if (e)
		return e == -UW_ETRUNC ? rerr(r, e, *off, "record runs past the end of the input") : e;
	*rec = r->buf + r->bufpos;
	*len = size;
	r->bufpos += size;
	r->stream_off += size;
	return 1;
}

/* Skips payload bytes that follow some records (AUXTRACE, TRACING_DATA). */
static int skip_payload(struct uw_reader *r, uint64_t n, uint64_t off)
{
	if (r->sparse)
		return 0; /* sparse_read skipped it */
	if (r->map) {
		if (r->end - r->pos < n)
			return rerr(r, -UW_ETRUNC, off, "record payload runs past the end of the data");
		r->pos += n;
		return 0;
	}
	while (n) {
		size_t chunk = (size_t)UW_MIN(n, (uint64_t)1 << 16);
		int e = stream_fill(r, chunk);
		if (e)
			return e == -UW_ETRUNC ? rerr(r, e, off, "record payload runs past the end of the input") : e;
		r->bufpos += chunk;
		r->stream_off += chunk;
		n -= chunk;
	}
	return 0;
}

/* ---- attributes */

static int add_attr(struct uw_reader *r, const uint8_t *p, size_t size, const uint8_t *ids, size_t nids,
                    uint64_t off)
{
	if (r->nattrs >= 4096)
		return rerr(r, -UW_ELIMIT, off, "more than 4096 event attributes");
	struct perf_attr a;
	if (perf_attr_decode(p, size, &a))
		return rerr(r, -UW_EFORMAT, off, "perf_event_attr smaller than the first ABI version");
	struct perf_attr *na = realloc(r->attrs, (r->nattrs + 1) * sizeof(*na));
	if (!na)
		return -ENOMEM;
	r->attrs = na;
	struct uw_event_stats *ne = realloc(r->evst, (r->nattrs + 1) * sizeof(*ne));
	if (!ne)
		return -ENOMEM;
	r->evst = ne;
	memset(&ne[r->nattrs], 0, sizeof(*ne));
	ne[r->nattrs].sz = sizeof(*ne);
	a.name = perf_attr_default_name(&a);
	a.raw_size = (uint32_t)UW_MIN(size, (size_t)PERF_ATTR_MAX);
	memcpy(a.raw, p, a.raw_size);
	a.ids = nids ? malloc(nids * 8) : NULL;
	a.nids = a.ids ? nids : 0;
	if (a.ids)
		memcpy(a.ids, ids, nids * 8);
	r->attrs[r->nattrs] = a;
	/* perf record -k 1 (CLOCK_MONOTONIC): sample times compare with a jitdump's */
	if (r->nattrs == 0)
		r->s->clock_monotonic = (a.flags & PA_USE_CLOCKID) && a.clockid == 1;
	for (size_t i = 0; i < nids; i++) {
		uint64_t id;
		memcpy(&id, ids + 8 * i, 8);
		if (base_map_put(&r->ids, id, (void *)(uintptr_t)(r->nattrs + 1)))
			return -ENOMEM;
	}
	r->nattrs++;
	return 0;
}

static const struct perf_attr *attr_by_id(const struct uw_reader *r, uint64_t id, unsigned *idx)
{
	uintptr_t v = (uintptr_t)base_map_get(&r->ids, id);
	unsigned i = v ? (unsigned)(v - 1) : 0;
	if (idx)
		*idx = i;
	return &r->attrs[i];
}

/* Which attribute a record belongs to. Samples carry the id first (IDENTIFIER) or at a fixed
 * position (ID); other records at the end of their sample_id trailer. */
static const struct perf_attr *record_attr(const struct uw_reader *r, const uint8_t *rec, uint32_t len,
                                           unsigned *idx)
{
	const struct perf_attr *a0 = &r->attrs[0];
	if (idx)
		*idx = 0;
	if (r->nattrs == 1)
		return a0;
	uint32_t type;
	memcpy(&type, rec, 4);
	uint64_t st = a0->sample_type, id;
	const uint8_t *body = rec + 8;
	size_t n = len - 8;
	if (type == PR_SAMPLE) {
		size_t pos;
		if (st & PS_IDENTIFIER) {
			pos = 0;
		} else if (st & PS_ID) {
			pos = 8 * (!!(st & PS_IP) + !!(st & PS_TID) + !!(st & PS_TIME) + !!(st & PS_ADDR));
		} else {
			return a0;
		}
		if (pos + 8 > n)
			return a0;
		memcpy(&id, body + pos, 8);
		return attr_by_id(r, id, idx);
	}
	if (!(a0->flags & PA_SAMPLE_ID_ALL))
		return a0;
	size_t back;
	if (st & PS_IDENTIFIER)
		back = 8;
	else if (st & PS_ID)
		back = 8 * (1 + !!(st & PS_STREAM_ID) + !!(st & PS_CPU));
	else
		return a0;
	if (back > n)
		return a0;
	memcpy(&id, body + n - back, 8);
	return attr_by_id(r, id, idx);
}

/* ---- feature sections (file mode) */

static void parse_build_ids(struct uw_reader *r, const uint8_t *p, uint64_t size)
{
	uint64_t off = 0;
	while (size - off >= 8 + 4 + 24) {
		uint16_t misc, rsize;
		memcpy(&misc, p + off + 4, 2);
		memcpy(&rsize, p + off + 6, 2);
		if (rsize < 8 + 4 + 24 || rsize > size - off)
			break;
		const uint8_t *bid = p + off + 12;
		size_t blen = 20;
		if (misc & PM_BUILD_ID_SIZE)
			blen = UW_MIN((size_t)bid[20], (size_t)20);
		const char *fn = (const char *)(p + off + 36);
		size_t fl = strnlen(fn, rsize - 36u);
		if (fl && fl < rsize - 36u) {
			/* old files pad short build-ids with zeros: trim them */
			while (blen && !(misc & PM_BUILD_ID_SIZE) && blen > 16 && bid[blen - 1] == 0)
				blen--;
			proc_note_build_id(r->s, fn, bid, blen);
		}
		off += rsize;
	}
}

static void parse_event_desc(struct uw_reader *r, const uint8_t *p, uint64_t size)
{
	struct base_cursor c = base_cursor(p, size);
	uint32_t nr = base_cur_u32(&c), asz = base_cur_u32(&c);
	if (c.bad || asz < PERF_ATTR_SIZE_VER0)
		return;
	for (uint32_t i = 0; i < nr && i < r->nattrs; i++) {
		base_cur_skip(&c, asz);
		uint32_t nids = base_cur_u32(&c);
		uint32_t slen = base_cur_u32(&c);
		if (c.bad || slen > base_cur_left(&c))
			return;
		const char *nm = (const char *)c.p;
		size_t l = strnlen(nm, slen);
		c.p += slen;
		if (l)
			r->attrs[i].name = base_intern(&r->s->strings, nm, l);
		if (nids > base_cur_left(&c) / 8)
			return;
		base_cur_skip(&c, (size_t)nids * 8);
	}
}

/* A perf header string: u32 length (padded), then the bytes, NUL-terminated within it. */
static const char *feat_string(struct uw_reader *r, struct base_cursor *c)
{
	uint32_t len = base_cur_u32(c);
	if (c->bad || len > base_cur_left(c)) {
		c->bad = true;
		return NULL;
	}
	const char *p = (const char *)c->p;
	c->p += len;
	return base_intern(&r->s->strings, p, strnlen(p, len));
}

/* FEAT_UW_STOPS (perf_writer.c): u32 version (1), u32 0, u64 samples, u64 runs, then the runs
 * as {u32 count, u8 reason, 3 bytes 0}, in the order the samples lie in the data section. */
static void parse_stops(struct uw_reader *r, const uint8_t *p, uint64_t size)
{
	struct base_cursor c = base_cursor(p, size);
	uint32_t version = base_cur_u32(&c);
	base_cur_u32(&c);
	uint64_t nsamples = base_cur_u64(&c), nruns = base_cur_u64(&c);
	if (c.bad || version != 1 || nruns > base_cur_left(&c) / 8 || r->stops) {
		base_log(&r->s->log, UW_LOG_WARN, "%s: the section of stop reasons is malformed: ignored", r->path);
		return;
	}
	struct stop_run *v = nruns ? malloc(nruns * sizeof(*v)) : NULL;
	if (nruns && !v)
		return;
	uint64_t first = 0;
	for (uint64_t i = 0; i < nruns; i++) {
		uint32_t count = base_cur_u32(&c);
		uint8_t reason = base_cur_u8(&c);
		base_cur_skip(&c, 3);
		if (!count || reason >= UW_STOP__COUNT) {
			free(v);
			base_log(&r->s->log, UW_LOG_WARN, "%s: the section of stop reasons is malformed: ignored", r->path);
			return;
		}
		v[i] = (struct stop_run){ first, count, reason };
		first += count;
	}
	if (first != nsamples) {
		free(v);
		base_log(&r->s->log, UW_LOG_WARN, "%s: the section of stop reasons is malformed: ignored", r->path);
		return;
	}
	r->stops = v;
	r->nstops = (size_t)nruns;
}

/* The stop reason the file states for the sample of ordinal ord; -1 when it states none. */
static int stated_stop(const struct uw_reader *r, uint64_t ord)
{
	size_t k = base_upper_bound(r->stops, r->nstops, sizeof(*r->stops), offsetof(struct stop_run, first), ord);
	if (!k)
		return -1;
	const struct stop_run *run = &r->stops[k - 1];
	return ord - run->first < run->count ? run->reason : -1;
}

const uint8_t *perf_reader_feature(const struct uw_reader *r, unsigned bit, size_t *n)
{
	if (bit >= FEAT_LAST || !r->feats[bit].p) {
		*n = 0;
		return NULL;
	}
	*n = r->feats[bit].n;
	return r->feats[bit].p;
}

/* Keeps a feature section's bytes for writers (a copy unless they lie in the mapping). */
static void keep_feature(struct uw_reader *r, unsigned bit, const uint8_t *p, size_t n, bool copy)
{
	struct feat_sec *f = &r->feats[bit];
	if (f->owned)
		free((void *)f->p);
	f->p = NULL;
	f->n = 0;
	f->owned = false;
	if (copy) {
		uint8_t *c = malloc(n ? n : 1);
		if (!c)
			return;
		memcpy(c, p, n);
		p = c;
	}
	*f = (struct feat_sec){ p, n, copy };
}

static void parse_feature(struct uw_reader *r, unsigned feat, const uint8_t *p, uint64_t size)
{
	struct base_cursor c = base_cursor(p, size);
	char buf[4096];
	switch (feat) {
	case FEAT_UW_STOPS:
		parse_stops(r, p, size);
		break;
	case FEAT_CLOCK_DATA: { /* u32 version, u32 clockid, u64 wall ns, u64 clockid ns */
		uint32_t version = base_cur_u32(&c), clockid = base_cur_u32(&c);
		uint64_t tod = base_cur_u64(&c), cl = base_cur_u64(&c);
		if (!c.bad && version >= 1 && r->nattrs && (r->attrs[0].flags & PA_USE_CLOCKID) &&
		    (uint32_t)r->attrs[0].clockid == clockid) {
			r->s->wall_offset = (int64_t)(tod - cl);
			r->s->wall_known = true;
			r->wall_exact = true;
		}
		break;
	}
	case FEAT_SAMPLE_TIME: /* u64 first, u64 last */
		base_cur_u64(&c);
		r->last_sample_time = base_cur_u64(&c);
		break;
	case FEAT_BUILD_ID:
		parse_build_ids(r, p, size);
		break;
	case FEAT_EVENT_DESC:
		parse_event_desc(r, p, size);
		break;
	case FEAT_HOSTNAME: r->info[UW_INFO_HOSTNAME] = feat_string(r, &c); break;
	case FEAT_OSRELEASE: r->info[UW_INFO_OSRELEASE] = feat_string(r, &c); break;
	case FEAT_VERSION: r->info[UW_INFO_PERF_VERSION] = feat_string(r, &c); break;
	case FEAT_ARCH: r->info[UW_INFO_ARCH] = feat_string(r, &c); break;
	case FEAT_NRCPUS: {
		uint32_t avail = base_cur_u32(&c), online = base_cur_u32(&c);
		if (!c.bad) {
			int n = snprintf(buf, sizeof(buf), "%u/%u", online, avail);
			r->info[UW_INFO_NRCPUS] = base_intern(&r->s->strings, buf, (size_t)n);
		}
		break;
	}
	case FEAT_CMDLINE: {
		uint32_t nr = base_cur_u32(&c);
		size_t n = 0;
		for (uint32_t i = 0; i < nr && i < 4096 && !c.bad; i++) {
			const char *a = feat_string(r, &c);
			if (!a)
				break;
			int w = snprintf(buf + n, sizeof(buf) - n, "%s%s", i ? " " : "", a);
			if (w < 0 || (size_t)w >= sizeof(buf) - n) {
				n = sizeof(buf) - 1;
				break;
			}
			n += (size_t)w;
		}
		if (n)
			r->info[UW_INFO_CMDLINE] = base_intern(&r->s->strings, buf, n);
		break;
	}
	default:
		break;
	}
}

UW_API const char *uw_reader_info(const struct uw_reader *r, enum uw_info key)
{
	return (unsigned)key < UW_INFO__COUNT ? r->info[key] : NULL;
}

static int parse_file_header(struct uw_reader *r)
{
	struct base_cursor c = base_cursor(r->map, r->map_size);
	base_cur_u64(&c); /* magic */
	uint64_t hsize = base_cur_u64(&c), attr_size = base_cur_u64(&c);
	uint64_t attrs_off = base_cur_u64(&c), attrs_size = base_cur_u64(&c);
	uint64_t data_off = base_cur_u64(&c), data_size = base_cur_u64(&c);
	base_cur_u64(&c);
	base_cur_u64(&c); /* event_types (unused since 2012) */
	uint64_t feat[4];
	for (int i = 0; i < 4; i++)
		feat[i] = base_cur_u64(&c);
	if (c.bad)
		return rerr(r, -UW_ETRUNC, 0, "file header truncated (104 bytes expected)");
	/* the first format ended the header before the feature bitmap (72 bytes) */
	if (hsize == 72)
		memset(feat, 0, sizeof(feat));
	else if (hsize < 104 || hsize > r->map_size)
		return rerr(r, -UW_EFORMAT, 8, "bad header size");
	if (attr_size < PERF_ATTR_SIZE_VER0 + 16 || attr_size > 4096)
		return rerr(r, -UW_EFORMAT, 16, "bad attribute entry size");
	if (attrs_off > r->map_size || attrs_size > r->map_size - attrs_off)
		return rerr(r, -UW_ETRUNC, 24, "attribute section lies past the end of the file");
	if (data_off > r->map_size)
		return rerr(r, -UW_ETRUNC, 40, "data section lies past the end of the file");
	uint64_t nattr = attrs_size / attr_size;
	if (nattr == 0)
		return rerr(r, -UW_EFORMAT, 24, "no event attributes");
	for (uint64_t i = 0; i < nattr; i++) {
		const uint8_t *e = r->map + attrs_off + i * attr_size;
		uint64_t ids_off, ids_size;
		memcpy(&ids_off, e + attr_size - 16, 8);
		memcpy(&ids_size, e + attr_size - 8, 8);
		if (ids_off > r->map_size || ids_size > r->map_size - ids_off)
			return rerr(r, -UW_ETRUNC, attrs_off + i * attr_size, "event id list lies past the end of the file");
		int err = add_attr(r, e, attr_size - 16, r->map + ids_off, ids_size / 8, attrs_off + i * attr_size);
		if (err)
			return err;
	}
	bool truncated = false;
	/* Every finished file has features (perf writes its host at least); none, and the writer
	 * stopped before its end: a perf killed before it wrote its header (data size 0), or an
	 * unwound record killed between the data size it keeps up to date and its end. Everything
	 * there is read, and a record cut short at the end ends the data. */
	bool no_features = hsize >= 104 && !(feat[0] | feat[1] | feat[2] | feat[3]);
	if (data_size == 0 || data_size > r->map_size - data_off || no_features) {
		if (data_size > r->map_size - data_off)
			truncated = true; /* damaged, not unfinished: a record cut short is an error */
		r->unfinished = no_features || data_size == 0;
		r->st.unfinished = r->unfinished;
		uint64_t counted = data_size;
		data_size = r->map_size - data_off;
		base_log(&r->s->log, UW_LOG_WARN,
			 "%s: the recording was not finished (%s): reading all %" PRIu64 " bytes of its data%s",
			 r->path, truncated ? "its data section runs past the end of the file"
				  : no_features && counted ? "no header features: its writer stopped before the end"
							     : "its header has no data size",
			 data_size, no_features && counted && counted < data_size ? ", past the size its header counts" : "");
	}
	r->pos = data_off;
	r->end = data_off + data_size;
	/* features follow the data section, one {offset, size} per set bit */
	uint64_t fpos = data_off + data_size;
	for (unsigned bit = 0; bit < FEAT_LAST && !truncated; bit++) {
		if (!(feat[bit / 64] & (1ull << (bit % 64))))
			continue;
		if (fpos + 16 > r->map_size || fpos + 16 < fpos)
			break;
		uint64_t off, size;
		memcpy(&off, r->map + fpos, 8);
		memcpy(&size, r->map + fpos + 8, 8);
		fpos += 16;
		if (off > r->map_size || size > r->map_size - off)
			continue;
		keep_feature(r, bit, r->map + off, (size_t)size, false);
		parse_feature(r, bit, r->map + off, size);
	}
	/* without clock data, wall-clock time from the file: perf writes it last, just after the
	 * last sample (approximate: used only to tell files older than a process) */
	struct stat st;
	if (!r->wall_exact && r->last_sample_time && fstat(r->fd, &st) == 0) {
		int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
		r->s->wall_offset = mtime - (int64_t)r->last_sample_time;
		r->s->wall_known = true;
	}
	return 0;
}

/* ---- opening */

UW_API struct uw_reader *uw_reader_open(struct uw_session *s, const char *path,
                                        const struct uw_reader_opts *opts)
{
	if (!s || !path) {
		errno = EINVAL;
		return NULL;
	}
	struct uw_reader *r = calloc(1, sizeof(*r));
	if (!r) {
		errno = ENOMEM;
		return NULL;
	}
	if (base_opts_copy(&r->o, sizeof(r->o), opts)) {
		free(r);
		errno = EINVAL;
		return NULL;
	}
	if (!r->o.max_queue_bytes)
		r->o.max_queue_bytes = (size_t)512 << 20;
	r->s = s;
	r->path = strdup(strcmp(path, "-") == 0 ? "<stdin>" : path);
	base_map_init(&r->ids);
	r->st.sz = sizeof(r->st);
	r->frames = calloc(s->opts.max_frames, sizeof(*r->frames));
	r->kcap = r->o.max_kernel_frames ? UW_MIN(r->o.max_kernel_frames, KERNEL_FRAMES_MAX) : KERNEL_FRAMES_DEFAULT;
	r->kbuf = calloc(r->kcap, sizeof(*r->kbuf));
	int err = 0;
	if (!r->path || !r->frames || !r->kbuf) {
		err = -ENOMEM;
		goto fail;
	}
	if (strcmp(path, "-") == 0) {
		r->fd = 0;
	} else {
		r->fd = open(path, O_RDONLY | O_CLOEXEC);
		if (r->fd < 0) {
			err = base_err(&s->log, -errno, "%s: %s", path, strerror(errno));
			goto fail;
		}
		r->close_fd = true;
	}
	struct stat st;
	int map_err = 0;
	bool regular = fstat(r->fd, &st) == 0 && S_ISREG(st.st_mode);
	if (regular && st.st_size > 0) {
		void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, r->fd, 0);
		if (m != MAP_FAILED) {
			r->map = m;
			r->map_size = (size_t)st.st_size;
			madvise(m, r->map_size, MADV_WILLNEED);
		} else {
			map_err = errno;
		}
	}
	uint64_t magic = 0, hsize = 0;
	if (r->map) {
		if (r->map_size < 16) {
			err = rerr(r, -UW_ETRUNC, 0, "file too short for a perf.data header");
			goto fail;
		}
		memcpy(&magic, r->map, 8);
		memcpy(&hsize, r->map + 8, 8);
	} else {
		err = stream_fill(r, 16);
		if (err) {
			err = rerr(r, err == -UW_ETRUNC ? err : err, 0, "input too short for a perf.data header");
			goto fail;
		}
		memcpy(&magic, r->buf, 8);
		memcpy(&hsize, r->buf + 8, 8);
	}
	if (magic == PERF_MAGIC2_SWAPPED) {
		err = rerr(r, -UW_EUNSUPP, 0, "big-endian perf.data files are not supported");
		goto fail;
	}
	if (magic != PERF_MAGIC2 && magic != PERF_MAGIC1) {
		err = rerr(r, -UW_EMAGIC, 0, "not a perf.data file (magic PERFILE2 or PERFFILE expected)");
		goto fail;
	}
	r->st.bytes = r->map ? r->map_size : 0;
	if (hsize == 16) { /* pipe mode */
		if (r->map) {
			r->pos = 16;
			r->end = r->map_size;
		} else {
			r->bufpos = 16;
			r->stream_off = 16;
		}
	} else {
		if (!r->map) {
			/* the real reason: a file the system would not map, or a stream */
			if (map_err)
				err = base_err(&s->log, -map_err, "%s: the file cannot be mapped: %s", r->path, strerror(map_err));
			else
				err = rerr(r, -UW_EUNSUPP, 0, "file-mode perf.data needs a seekable file, not a pipe");
			goto fail;
		}
		r->file_mode = true;
		err = parse_file_header(r);
		if (err)
			goto fail;
	}
	if (r->map && !r->o.full_stacks) {
		r->sparse = true;
		atomic_init(&r->prefix, PREFIX_START);
		r->cbuf = malloc(1u << 16);
		r->fullbuf = malloc(1u << 16);
		if (!r->cbuf || !r->fullbuf) {
			err = -ENOMEM;
			goto fail;
		}
	}
	return r;
fail:
	uw_reader_free(r);
	/* errno values pass through; project codes (malformed input) read as EPROTO */
	errno = err < 0 && -err < 4000 ? -err : EPROTO;
	return NULL;
}

UW_API void uw_reader_free(struct uw_reader *r)
{
	if (!r)
		return;
	ra_stop(r);
	for (size_t i = 0; i < r->qlen; i++)
		if (r->q[i].owned)
			free((void *)r->q[i].rec);
	ra_free(r);
	free(r->q);
	if (r->map)
		munmap((void *)r->map, r->map_size);
	if (r->close_fd)
		close(r->fd);
	base_map_free(&r->ids);
	for (size_t i = 0; i < r->nattrs; i++)
		free(r->attrs[i].ids);
	free(r->attrs);
	free(r->evst);
	free(r->stops);
	perf_decomp_free(r->decomp);
	for (unsigned i = 0; i < FEAT_LAST; i++)
		if (r->feats[i].owned)
			free((void *)r->feats[i].p);
	free(r->buf);
	free(r->win);
	free(r->cbuf);
	free(r->fullbuf);
	free(r->frames);
	free(r->kbuf);
	free(r->path);
	free(r);
}

UW_API unsigned uw_reader_nr_events(const struct uw_reader *r)
{
	return (unsigned)r->nattrs;
}

UW_API const char *uw_reader_event_name(const struct uw_reader *r, unsigned idx)
{
	return idx < r->nattrs ? r->attrs[idx].name : NULL;
}

UW_API int uw_reader_stats(const struct uw_reader *r, struct uw_reader_stats *st)
{
	if (!st || st->sz < sizeof(size_t))
		return -EINVAL;
	/* an older caller gets the fields it knows of; a newer one zeros past ours */
	size_t want = st->sz;
	memcpy(st, &r->st, UW_MIN(want, sizeof(r->st)));
	if (want > sizeof(r->st))
		memset((char *)st + sizeof(r->st), 0, want - sizeof(r->st));
	st->sz = want;
	return 0;
}

/* ---- dispatch (records in time order) */

static const char *thread_comm(struct uw_reader *r, uint32_t pid, uint32_t tid, struct proc *p)
{
	struct thread *t = proc_thread(r->s, (int32_t)pid, (int32_t)tid, false);
	if (t && t->comm)
		return t->comm;
	if (p && p->comm)
		return p->comm;
	char buf[24];
	int n = snprintf(buf, sizeof(buf), ":%d", (int)tid);
	return base_intern(&r->s->strings, buf, (size_t)n);
}

/* The whole record of a cut sample, read back into r->fullbuf. */
static const uint8_t *read_whole(struct uw_reader *r, const struct cut *cut)
{
	size_t got = 0;
	while (got < cut->len) {
		ssize_t n = pread(r->fd, r->fullbuf + got, cut->len - got, (off_t)(cut->off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return NULL;
		got += (size_t)n;
	}
	return r->fullbuf;
}

static bool in_list(const int *v, size_t n, uint32_t x)
{
	for (size_t i = 0; i < n; i++)
		if ((uint32_t)v[i] == x)
			return true;
	return false;
}

/* Does the sample pass the pid, tid and comm filters? */
static bool sample_wanted(const struct uw_reader *r, uint32_t pid, uint32_t tid, const char *comm)
{
	const struct uw_reader_opts *o = &r->o;
	if ((o->pid && pid != (uint32_t)o->pid) || (o->tid && tid != (uint32_t)o->tid))
		return false;
	if ((o->npids && !in_list(o->pids, o->npids, pid)) || (o->ntids && !in_list(o->tids, o->ntids, tid)))
		return false;
	if (o->comm && (!comm || strcmp(comm, o->comm) != 0))
		return false;
	if (o->ncomms) {
		bool any = false;
		for (size_t i = 0; i < o->ncomms && !any; i++)
			any = comm && o->comms[i] && strcmp(comm, o->comms[i]) == 0;
		if (!any)
			return false;
	}
	return true;
}

/* A frame at address ip (from a callchain, or the sample's ip). */
static void frame_at(struct proc_find_ctx *fc, uint64_t ip, uint8_t method, struct uw_frame *f)
{
	struct unw_pc_info info = { 0 };
	memset(f, 0, sizeof(*f));
	bool mapped = fc->p && proc_find_pc(fc, ip, &info);
	f->pc = ip;
	f->module = info.module;
	f->map_addr = mapped ? info.map_addr : ip;
	f->rel_pc = ip - info.bias;
	f->method = method;
	/* the kernel's frame-pointer callchain: addresses shown as given (perf script does not
	 * adjust them either) */
	f->is_call = 0;
}

/*
 * A callchain read from the file, judged by its outermost frame: a root when its module's CFI
 * marks the return address undefined there (the same test the unwinder stops on), cut short
 * when that CFI gives it a caller. A return address is looked up one byte back, inside its
 * call; unwound writes callers at the return address - 1 already, which stays inside the call.
 */
static enum uw_stop_reason judge_chain(struct proc_find_ctx *fc, const struct uw_frame *outer, bool is_first)
{
	struct unw_pc_info info = { 0 };
	if (!outer->pc || !fc->p || !proc_find_pc(fc, outer->pc, &info))
		return UW_STOP_NO_MODULE;
	const struct cfi_rule *rule;
	uint64_t lookup = outer->pc - (is_first ? 0 : 1) - info.bias;
	if (!info.code || !info.code->cfi || !cfi_table_find(info.code->cfi, lookup, &rule))
		return UW_STOP_UNKNOWN;
	return (rule->flags & CFI_F_END) ? UW_STOP_END_OF_STACK : UW_STOP_CHAIN_CUT;
}

/* The user part of a sample with a register and stack copy: unwound (again from the whole
 * record when the copy was cut and unwinding wanted more). */
static void unwind_user(struct uw_reader *r, const struct perf_attr *a, const struct perf_sample *ps, uint16_t misc,
                        const struct cut *cut, struct proc_find_ctx *fc, struct uw_sample *smp)
{
	struct unw_regs regs;
	uint64_t regbuf[64];
	/* the register block may be unaligned inside the record: copy it (at most 64 bits set) */
	memcpy(regbuf, ps->regs, ps->nregs * 8);
	unw_x86_64_from_perf(a->sample_regs_user, regbuf, ps->nregs, &regs);
	uint64_t reach = 0;
	struct unw_stack stk = { regs.r[7], ps->stack, ps->stack_dyn, r->sparse ? &reach : NULL };
	smp->user_ip = regs.r[16];
	smp->user_sp = regs.r[7];
	smp->user_fp = regs.r[6];
	smp->stack = ps->stack;
	smp->stack_size = ps->stack_dyn;
	/* In a syscall (not a fault or an interrupt, whose pc is exact), the user pc follows the
	 * `syscall` instruction, which left that same pc in rcx: the kernel's saved rcx equals its
	 * saved rip. */
	bool in_syscall = (misc & PM_CPUMODE_MASK) == PM_KERNEL && (regs.valid & (1u << 2)) &&
			  (regs.valid & (1u << 16)) && regs.r[2] == regs.r[16];
	struct unw_opts uo = { r->s->opts.max_frames, r->s->opts.no_fp_fallback != 0, &cfi_arch_x86_64, in_syscall };
	struct unw_result res;
	unw_run(&uo, &regs, &stk, proc_find_pc, fc, r->frames, &res);
	r->st.stack_bytes_read += ps->stack_size;
	if (cut && cut->cut && reach > ps->stack_dyn) {
		/* unwinding wanted bytes past the cut: unwind again from the whole record */
		const uint8_t *whole = read_whole(r, cut);
		struct perf_sample ws;
		if (whole && perf_sample_decode(a, whole + 8, cut->len - 8, &ws) == 0 && ws.regs_abi && ws.stack_dyn) {
			unw_x86_64_from_perf(a->sample_regs_user, regbuf, ps->nregs, &regs);
			stk.data = ws.stack;
			stk.size = ws.stack_dyn;
			smp->stack = ws.stack;
			smp->stack_size = ws.stack_dyn;
			unw_run(&uo, &regs, &stk, proc_find_pc, fc, r->frames, &res);
			r->st.stack_rereads++;
			r->st.stack_bytes_read += ws.stack_size;
		}
	}
	if (r->sparse && ps->stack_size)
		note_reach(r, reach, cut && cut->cut ? cut->len : ps->stack_size);
	smp->nr_user = res.n;
	smp->stop_reason = (uint8_t)res.stop;
}

static int deliver_sample(struct uw_reader *r, const uint8_t *rec, uint32_t len, const struct cut *cut, uint64_t ord)
{
	unsigned aidx;
	const struct perf_attr *a = record_attr(r, rec, len, &aidx);
	struct uw_event_stats *es = &r->evst[aidx];
	struct perf_sample ps;
	uint16_t misc;
	memcpy(&misc, rec + 4, 2);
	r->st.samples++;
	es->samples++;
	if (perf_sample_decode(a, rec + 8, len - 8, &ps)) {
		/* a malformed sample is dropped, not fatal: the rest of the file is fine */
		if (!r->st.malformed_samples++)
			base_log(&r->s->log, UW_LOG_WARN,
				 "%s: sample %" PRIu64 " (%u bytes, event %u, sample_type %#" PRIx64 ") does not decode: "
				 "dropped (the summary counts any others)",
				 r->path, r->st.samples, len, aidx, a ? a->sample_type : 0);
		return 0;
	}
	if (r->o.event && strcmp(a->name, r->o.event) != 0)
		return 0;
	struct proc *p = proc_get(r->s, (int32_t)ps.pid, false);
	const char *comm = thread_comm(r, ps.pid, ps.tid, p);
	if (!sample_wanted(r, ps.pid, ps.tid, comm))
		return 0;
	if (p && p->exited)
		r->st.exit_before_sample++;

	struct uw_sample smp = { 0 };
	smp.pid = ps.pid;
	smp.tid = ps.tid;
	smp.cpu = (uint32_t)ps.cpu;
	smp.has_cpu = (a->sample_type & PS_CPU) != 0;
	smp.time = ps.time;
	smp.period = ps.period ? ps.period : 1;
	smp.ip = ps.ip;
	smp.cpumode = misc & PM_CPUMODE_MASK;
	smp.attr_index = aidx;
	smp.comm = comm;
	smp.event_name = a->name;

	/* the kernel callchain: the part after PERF_CONTEXT_KERNEL; user entries are used only
	 * when the sample carries no user stack to unwind (frame-pointer recordings) */
	unsigned nk = 0, nu_chain = 0;
	bool chain_full = false; /* user entries past max_frames */
	uint64_t ctx = 0;
	struct proc_find_ctx fc = { r->s, p, (a->sample_type & PS_TIME) ? ps.time : UINT64_MAX };
	bool have_stack = ps.regs_abi && ps.regs && ps.stack_dyn;
	for (uint64_t i = 0; i < ps.nr_callchain; i++) {
		uint64_t ip;
		memcpy(&ip, ps.callchain + 8 * i, 8);
		if (ip >= PC_MAX) {
			ctx = ip;
			continue;
		}
		if (ctx == PC_KERNEL && nk < r->kcap) {
			r->kbuf[nk++] = ip;
		} else if (ctx == PC_USER && !have_stack && !ps.regs_abi && nu_chain < r->s->opts.max_frames) {
			frame_at(&fc, ip, nu_chain ? UW_METHOD_CALLCHAIN : UW_METHOD_REGS, &r->frames[nu_chain]);
			nu_chain++;
		} else if (ctx == PC_USER && nu_chain == r->s->opts.max_frames) {
			chain_full = true;
		}
	}
	smp.kernel = r->kbuf;
	smp.nr_kernel = nk;
	smp.user = r->frames;
	smp.has_callchain = (a->sample_type & (PS_CALLCHAIN | PS_REGS_USER)) != 0;
	if (have_stack) {
		unwind_user(r, a, &ps, misc, cut, &fc, &smp);
	} else if (nu_chain) {
		smp.nr_user = nu_chain;
		int stated = r->stops ? stated_stop(r, ord) : -1;
		if (stated >= 0) {
			smp.stop_reason = (uint8_t)stated;
			r->st.stops_stated++;
		} else if (chain_full) {
			smp.stop_reason = UW_STOP_MAX_FRAMES;
		} else {
			smp.stop_reason = (uint8_t)judge_chain(&fc, &r->frames[nu_chain - 1], nu_chain == 1);
			r->st.stops_judged++;
		}
	} else if (!(a->sample_type & (PS_CALLCHAIN | PS_REGS_USER))) {
		/* no callchain at all: the sample's ip is the only frame */
		if ((misc & PM_CPUMODE_MASK) == PM_KERNEL) {
			r->kbuf[0] = ps.ip;
			smp.nr_kernel = 1;
		} else {
			frame_at(&fc, ps.ip, UW_METHOD_REGS, &r->frames[0]);
			smp.nr_user = 1;
		}
		smp.stop_reason = UW_STOP_NONE;
	} else if (!ps.regs_abi && (a->sample_type & PS_REGS_USER)) {
		smp.nr_user = 0;
		smp.stop_reason = UW_STOP_NO_REGS; /* a kernel thread: no user stack */
		r->st.samples_no_user++;
		es->samples_no_user++;
	} else if ((a->sample_type & PS_REGS_USER) || (misc & PM_CPUMODE_MASK) != PM_KERNEL) {
		/* registers but no stack bytes; or a user-mode sample whose callchain has no user
		 * part */
		smp.stop_reason = (a->sample_type & PS_REGS_USER) ? UW_STOP_STACK_EXHAUSTED : UW_STOP_UNKNOWN;
	} else {
		/* a callchain with only a kernel part, taken in the kernel: a kernel thread, or user
		 * frames left out (exclude_callchain_user) */
		smp.stop_reason = UW_STOP_NO_REGS;
		r->st.samples_no_user++;
		es->samples_no_user++;
	}
	if (smp.stop_reason != UW_STOP_NO_REGS || smp.nr_user) {
		r->st.stop_reasons[smp.stop_reason]++;
		es->stop_reasons[smp.stop_reason]++;
	}
	r->st.user_frames += smp.nr_user;
	r->st.samples_delivered++;
	es->user_frames += smp.nr_user;
	es->samples_delivered++;
	es->period += smp.period;
	if (r->o.on_sample && r->o.on_sample(r->o.ctx, &smp))
		return -UW_ECANCELED;
	return 0;
}

static int deliver(struct uw_reader *r, const uint8_t *rec, uint32_t len, uint64_t time, const struct cut *cut,
                   uint64_t ord)
{
	uint32_t type;
	uint16_t misc;
	memcpy(&type, rec, 4);
	memcpy(&misc, rec + 4, 2);
	const uint8_t *b = rec + 8;
	size_t n = len - 8;
	struct base_cursor c = base_cursor(b, n);
	const struct perf_attr *a = r->nattrs ? record_attr(r, rec, len, NULL) : NULL;
	size_t trailer = (a && type != PR_SAMPLE) ? a->id_trailer_size : 0;
	if (trailer <= n)
		c.end -= trailer;
	if (++r->since_sweep >= 4096 && time) {
		r->since_sweep = 0;
		proc_sweep(r->s, time);
	}
	if (r->record_fn && type != PR_SAMPLE && type < PR_HEADER_ATTR) {
		int e = r->record_fn(r->record_ctx, rec, len);
		if (e)
			return e;
	}
	switch (type) {
	case PR_SAMPLE:
		r->cur_rec = rec;
		r->cur_len = len;
		return deliver_sample(r, rec, len, cut, ord);
	case PR_MMAP:
	case PR_MMAP2: {
		int32_t pid = base_cur_s32(&c);
		base_cur_u32(&c);
		uint64_t addr = base_cur_u64(&c), mlen = base_cur_u64(&c), pgoff = base_cur_u64(&c);
		uint32_t maj = 0, min = 0, prot = (misc & PM_MMAP_DATA) ? 1 : 5;
		uint64_t ino = 0;
		const uint8_t *bid = NULL;
		size_t blen = 0;
		if (type == PR_MMAP2) {
			if (misc & PM_MMAP_BUILD_ID) {
				blen = base_cur_u8(&c);
				base_cur_skip(&c, 3);
				bid = c.p;
				base_cur_skip(&c, 20);
				if (blen > 20)
					blen = 20;
			} else {
				maj = base_cur_u32(&c);
				min = base_cur_u32(&c);
				ino = base_cur_u64(&c);
				base_cur_u64(&c);
			}
			prot = base_cur_u32(&c);
			base_cur_u32(&c); /* flags */
		}
		if (c.bad)
			return 0;
		size_t fl = strnlen((const char *)c.p, base_cur_left(&c));
		if (pid == -1 || (misc & PM_CPUMODE_MASK) == PM_KERNEL) {
			/* kernel and module maps: symbols come from kallsyms; perf records the kernel
			 * map with pgoff = the address of _text (its relocation reference) */
			if (fl >= 17 && memcmp(c.p, "[kernel.kallsyms]", 17) == 0) {
				if (pgoff >= addr && !r->s->kernel_text)
					r->s->kernel_text = pgoff;
				if (bid && blen)
					proc_note_build_id(r->s, "[kernel.kallsyms]", bid, blen);
			}
			return 0;
		}
		/* a JIT's jitdump, mapped so that the recording shows it: its loads name JIT code (not
		 * while recording: names are a report's business, and the file is the process's) */
		if ((prot & 4) && !r->s->live && jitdump_is_path((const char *)c.p, fl) &&
		    proc_jitdump_mmap(r->s, pid, (const char *)c.p, fl))
			return -ENOMEM;
		struct uw_module *m = proc_module_get(r->s, (const char *)c.p, fl, bid, blen, maj, min, ino);
		if (!m)
			return -ENOMEM;
		int e = proc_mmap(r->s, pid, addr, mlen, pgoff, prot, m);
		return e == -ENOMEM ? e : 0;
	}
	case PR_COMM: {
		int32_t pid = base_cur_s32(&c), tid = base_cur_s32(&c);
		if (c.bad)
			return 0;
		size_t l = strnlen((const char *)c.p, base_cur_left(&c));
		if (proc_comm(r->s, pid, tid, (const char *)c.p, l, (misc & PM_COMM_EXEC) != 0) == -ENOMEM)
			return -ENOMEM;
		struct proc *np = (misc & PM_COMM_EXEC) && time ? proc_get(r->s, pid, false) : NULL;
		if (np) { /* a new program in it */
			np->start_time = time;
			np->start_known = true;
		}
		return 0;
	}
	case PR_FORK:
	case PR_EXIT: {
		int32_t pid = base_cur_s32(&c), ppid = base_cur_s32(&c), tid = base_cur_s32(&c), ptid = base_cur_s32(&c);
		uint64_t t = base_cur_u64(&c);
		if (c.bad)
			return 0;
		if (type == PR_FORK) {
			if (proc_fork(r->s, pid, ppid, tid, ptid, t) == -ENOMEM)
				return -ENOMEM;
			struct proc *np = pid != ppid ? proc_get(r->s, pid, false) : NULL;
			if (np) { /* born in the recording */
				np->start_time = time ? time : t;
				np->start_known = true;
			}
			return 0;
		}
		proc_exit(r->s, pid, tid, time ? time : t);
		return 0;
	}
	case PR_LOST:
		base_cur_u64(&c);
		r->st.lost_events += base_cur_u64(&c);
		r->st.lost_records++;
		return 0;
	case PR_LOST_SAMPLES:
		r->st.lost_events += base_cur_u64(&c);
		r->st.lost_records++;
		return 0;
	default:
		return 0;
	}
}

static int cmp_qent(const void *x, const void *y)
{
	const struct qent *a = x, *b = y;
	if (a->time != b->time)
		return a->time < b->time ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Delivers queued records with time <= limit (all of them when all is set), oldest first. */
static int flush(struct uw_reader *r, uint64_t limit, bool all, size_t at_least)
{
	if (!r->qlen)
		return 0;
	qsort(r->q, r->qlen, sizeof(*r->q), cmp_qent);
	size_t i = 0;
	int err = 0;
	for (; i < r->qlen; i++) {
		struct qent *e = &r->q[i];
		if (!all && e->time > limit && i >= at_least)
			break;
		if (!err)
			err = deliver(r, e->rec, e->len, e->time, &e->cut, e->ord);
		r->last_flushed = e->time;
		r->any_flushed = true;
		r->qbytes -= e->len;
		if (e->owned)
			free((void *)e->rec);
		else if (e->chunk) {
			e->chunk->live--;
			ra_recycle(r->ra, e->chunk);
		}
	}
	memmove(r->q, r->q + i, (r->qlen - i) * sizeof(*r->q));
	r->qlen -= i;
	return err;
}

static int enqueue(struct uw_reader *r, const uint8_t *rec, uint32_t len, uint64_t time)
{
	if (r->any_flushed && time < r->last_flushed) {
		r->st.late_records++;
		return deliver(r, rec, len, time, r->inner ? &(struct cut){ 0 } : &r->cur_cut, r->cur_ord);
	}
	if (r->qlen == r->qcap) {
		size_t cap = r->qcap ? r->qcap * 2 : 4096;
		struct qent *nq = realloc(r->q, cap * sizeof(*nq));
		if (!nq)
			return -ENOMEM;
		r->q = nq;
		r->qcap = cap;
	}
	struct qent *e = &r->q[r->qlen++];
	e->time = time;
	e->seq = r->seq++;
	e->ord = r->cur_ord;
	e->len = len;
	e->cut = r->inner ? (struct cut){ 0 } : r->cur_cut;
	e->chunk = r->inner ? NULL : r->cur_chunk;
	/* records from a compressed piece live in the decompressor's buffer: copied */
	e->owned = !e->chunk && (!r->map || r->sparse || r->inner);
	if (e->chunk)
		e->chunk->live++;
	if (e->owned) {
		uint8_t *copy = malloc(len);
		if (!copy) {
			r->qlen--;
			return -ENOMEM;
		}
		memcpy(copy, rec, len);
		e->rec = copy;
	} else {
		e->rec = rec;
	}
	r->qbytes += len;
	if (time > r->max_time)
		r->max_time = time;
	/* over the memory cap: deliver the older half, as perf does */
	if (r->qbytes + r->qlen * sizeof(struct qent) > r->o.max_queue_bytes)
		return flush(r, 0, false, r->qlen / 2);
	return 0;
}

static uint64_t record_time(struct uw_reader *r, const uint8_t *rec, uint32_t len, bool *has)
{
	uint32_t type;
	memcpy(&type, rec, 4);
	const struct perf_attr *a = record_attr(r, rec, len, NULL);
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

static void progress(struct uw_reader *r, uint64_t off)
{
	if (r->o.on_progress && off - r->last_progress >= (1u << 20)) {
		r->last_progress = off;
		r->o.on_progress(r->o.ctx, off, r->map ? r->end : 0);
	}
}

static int process_record(struct uw_reader *r, const uint8_t *rec, uint32_t len, uint64_t off);

/* A record that came out of a compressed piece. */
static int inner_record(void *ctx, const uint8_t *rec, uint32_t len)
{
	struct uw_reader *r = ctx;
	uint32_t type;
	memcpy(&type, rec, 4);
	int err = (type == PR_COMPRESSED || type == PR_COMPRESSED2) /* perf never nests them */
			  ? rerr(r, -UW_EFORMAT, r->decomp_off, "a compressed record inside a compressed record")
			  : process_record(r, rec, len, r->decomp_off);
	r->inner_failed = err != 0;
	return err;
}

/* PERF_RECORD_COMPRESSED(2): the records its piece of the stream completes, processed in order. */
static int decompress(struct uw_reader *r, uint32_t type, const uint8_t *rec, uint32_t len, uint64_t off)
{
	const uint8_t *p = rec + 8;
	size_t n = len - 8;
	if (type == PR_COMPRESSED2) {
		uint64_t dsz;
		if (len < 16)
			return rerr(r, -UW_EFORMAT, off, "COMPRESSED2 record too short");
		memcpy(&dsz, rec + 8, 8);
		if (dsz > len - 16u)
			return rerr(r, -UW_EFORMAT, off, "COMPRESSED2 data size runs past the record");
		p = rec + 16;
		n = (size_t)dsz;
	}
	if (!r->decomp) {
		int e = perf_decomp_new(&r->decomp);
		if (e)
			return e;
	}
	/* a bound on what a stream may expand to: far above perf's ratios (stack copies of
	 * zeros compress about 200:1), far below what a crafted stream could claim */
	r->st.compressed_bytes += n;
	uint64_t max_out = ((uint64_t)1 << 30) + 4096 * r->st.compressed_bytes;
	const char *what = "compressed records do not decompress";
	r->inner = true;
	r->inner_failed = false;
	r->decomp_off = off;
	int err = perf_decomp_feed(r->decomp, p, n, max_out, inner_record, r, &what);
	r->inner = false;
	r->st.decompressed_bytes = perf_decomp_bytes_out(r->decomp);
	if (!r->inner_failed && (err == -UW_EFORMAT || err == -UW_ELIMIT))
		return rerr(r, err, off, what);
	return err;
}

/* EVENT_UPDATE (pipe mode): {u64 type, u64 id, data}; type 2 names the event with that id. */
static void event_update(struct uw_reader *r, const uint8_t *rec, uint32_t len)
{
	uint64_t type, id;
	if (len < 24 + 1)
		return;
	memcpy(&type, rec + 8, 8);
	memcpy(&id, rec + 16, 8);
	if (type != 2 || !base_map_has(&r->ids, id))
		return;
	unsigned idx;
	attr_by_id(r, id, &idx);
	size_t l = strnlen((const char *)rec + 24, len - 24);
	if (l)
		r->attrs[idx].name = base_intern(&r->s->strings, (const char *)rec + 24, l);
}

/* One record of the input: header records act at once, event records are queued for time order. */
static int process_record(struct uw_reader *r, const uint8_t *rec, uint32_t len, uint64_t off)
{
	int err = 0;
	uint32_t type;
	memcpy(&type, rec, 4);
	r->st.records++;
	r->by_type[type < PR_TYPES ? type : PR_TYPES]++;
	if (!r->inner)
		progress(r, off);
	if (type >= 64) {
		switch (type) {
		case PR_FINISHED_ROUND:
			err = flush(r, r->round_limit, false, 0);
			r->round_limit = r->max_time;
			break;
		case PR_HEADER_ATTR: {
			if (len < 8 + PERF_ATTR_SIZE_VER0) {
				err = rerr(r, -UW_EFORMAT, off, "HEADER_ATTR record too short");
				break;
			}
			uint32_t asz;
			memcpy(&asz, rec + 12, 4);
			if (asz < PERF_ATTR_SIZE_VER0 || asz > len - 8)
				asz = len - 8 < 128 ? len - 8 : 128;
			size_t nids = (len - 8 - asz) / 8;
			err = add_attr(r, rec + 8, asz, rec + 8 + asz, nids, off);
			break;
		}
		case PR_HEADER_BUILD_ID:
			parse_build_ids(r, rec, len);
			break;
		case PR_HEADER_FEATURE: /* pipe mode: u64 feature id, then the section's bytes */
			if (len >= 16) {
				uint64_t feat;
				memcpy(&feat, rec + 8, 8);
				/* (an empty one is the end marker) */
				if (feat < FEAT_LAST && feat != FEAT_BUILD_ID && len > 16) {
					keep_feature(r, (unsigned)feat, rec + 16, len - 16, true);
					parse_feature(r, (unsigned)feat, rec + 16, len - 16);
				}
			}
			break;
		case PR_EVENT_UPDATE:
			event_update(r, rec, len);
			break;
		case PR_HEADER_TRACING_DATA: {
			uint32_t sz = 0;
			if (len >= 12)
				memcpy(&sz, rec + 8, 4);
			r->st.skipped_records++;
			r->skipped_by_type[type]++;
			err = skip_payload(r, ((uint64_t)sz + 7) & ~7ull, off);
			break;
		}
		case PR_AUXTRACE: {
			uint64_t sz = 0;
			if (len >= 16)
				memcpy(&sz, rec + 8, 8);
			r->st.skipped_records++;
			r->skipped_by_type[type]++;
			err = skip_payload(r, sz, off);
			break;
		}
		case PR_COMPRESSED:
		case PR_COMPRESSED2:
			err = decompress(r, type, rec, len, off);
			break;
		case PR_FINISHED_INIT:
			break;
		default:
			if (type >= PR_TYPES) {
				r->st.unknown_records++;
			} else {
				r->st.skipped_records++;
				r->skipped_by_type[type]++;
			}
			break;
		}
	} else if (!r->nattrs) {
		err = rerr(r, -UW_ENOATTR, off, "event record before any event attribute");
	} else {
		switch (type) {
		case PR_SAMPLE:
			r->cur_ord = r->sample_ord++;
			break;
		case PR_MMAP: case PR_MMAP2: case PR_COMM: case PR_FORK: case PR_EXIT: case PR_LOST:
		case PR_LOST_SAMPLES: case PR_THROTTLE: case PR_UNTHROTTLE:
			break;
		default:
			if (type >= PR_TYPES) {
				r->st.unknown_records++;
			} else {
				r->st.skipped_records++;
				r->skipped_by_type[type]++;
			}
			break;
		}
		bool has;
		uint64_t t = record_time(r, rec, len, &has);
		if (!has)
			t = r->max_time; /* no timestamp: keep it in file order */
		err = enqueue(r, rec, len, t);
	}
	return err;
}

UW_API uint64_t uw_reader_nr_records(const struct uw_reader *r, uint32_t type)
{
	return r ? r->by_type[type < PR_TYPES ? type : PR_TYPES] : 0;
}

UW_API uint64_t uw_reader_nr_skipped(const struct uw_reader *r, uint32_t type)
{
	return r ? r->skipped_by_type[type < PR_TYPES ? type : PR_TYPES] : 0;
}

UW_API const char *uw_record_type_name(uint32_t type)
{
	return perf_record_type_name(type);
}

UW_API int uw_reader_event_stats(const struct uw_reader *r, unsigned idx, struct uw_event_stats *st)
{
	if (!r || !st || st->sz < sizeof(size_t) || idx >= r->nattrs)
		return -EINVAL;
	size_t want = st->sz;
	memcpy(st, &r->evst[idx], UW_MIN(want, sizeof(*st)));
	if (want > sizeof(*st))
		memset((char *)st + sizeof(*st), 0, want - sizeof(*st));
	st->sz = want;
	return 0;
}

/* ---- live input: records pushed by a recorder (perf_live.c) */

int perf_reader_push(struct uw_reader *r, const uint8_t *rec, uint32_t len)
{
	if (r->fatal)
		return r->fatal;
	if (len < 8)
		return -UW_EFORMAT;
	int err = process_record(r, rec, len, 0);
	if (err)
		r->fatal = err;
	return err;
}

int perf_reader_round(struct uw_reader *r)
{
	static const uint8_t fr[8] = { PR_FINISHED_ROUND, 0, 0, 0, 0, 0, 8, 0 };
	return perf_reader_push(r, fr, 8);
}

int perf_reader_finish(struct uw_reader *r)
{
	int err = r->fatal ? r->fatal : flush(r, 0, true, 0);
	r->fatal = err;
	return err;
}

int perf_reader_add_attr(struct uw_reader *r, const uint8_t *raw, size_t size, const uint64_t *ids, size_t nids)
{
	return add_attr(r, raw, size, (const uint8_t *)ids, nids, 0);
}

struct uw_reader *perf_reader_new_live(struct uw_session *s, const struct uw_reader_opts *opts)
{
	struct uw_reader *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	if (base_opts_copy(&r->o, sizeof(r->o), opts)) {
		free(r);
		return NULL;
	}
	if (!r->o.max_queue_bytes)
		r->o.max_queue_bytes = (size_t)512 << 20;
	r->s = s;
	r->fd = -1;
	r->path = strdup("<live>");
	base_map_init(&r->ids);
	r->st.sz = sizeof(r->st);
	r->frames = calloc(s->opts.max_frames, sizeof(*r->frames));
	r->kcap = r->o.max_kernel_frames ? UW_MIN(r->o.max_kernel_frames, KERNEL_FRAMES_MAX) : KERNEL_FRAMES_DEFAULT;
	r->kbuf = calloc(r->kcap, sizeof(*r->kbuf));
	if (!r->path || !r->frames || !r->kbuf) {
		uw_reader_free(r);
		return NULL;
	}
	return r;
}

UW_API int uw_reader_run(struct uw_reader *r)
{
	if (!r)
		return -EINVAL;
	if (r->fatal)
		return r->fatal;
	const uint8_t *rec = NULL;
	uint32_t len = 0;
	uint64_t off = 0;
	int err = 0, got;
	/* read ahead on another thread when there is enough to read */
	if (r->sparse && r->file_mode && !r->ra && r->end - r->pos >= (4u << 20) && (err = ra_start(r)))
		return err;
	while ((got = next_record(r, &rec, &len, &off)) == 1) {
		if ((err = process_record(r, rec, len, off)))
			break;
	}
	if (got == -UW_ETRUNC && r->unfinished) {
		/* where the writer stopped: the end of what there is */
		base_log(&r->s->log, UW_LOG_WARN, "%s: %s", r->path, r->s->log.errmsg);
		r->st.records_cut = 1;
		got = 0;
	}
	if (got < 0 && !err)
		err = got;
	ra_stop(r);
	/* deliver what was read, even when the input ended badly */
	int ferr = (err == -UW_ECANCELED || err == -ENOMEM) ? 0 : flush(r, 0, true, 0);
	if (!err)
		err = ferr;
	if (r->o.on_progress && r->map)
		r->o.on_progress(r->o.ctx, r->end, r->end);
	r->fatal = err ? err : 0;
	return err;
}
