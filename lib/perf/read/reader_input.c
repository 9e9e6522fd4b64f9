/* SPDX-License-Identifier: MIT */
/*
 * Reading a recording's records: a regular file with pread, in sparse windows of its data
 * section (on a read-ahead thread when there is enough to read), or a stream (a pipe). The
 * stage's state is struct reader_input; an error's offset and reason are kept for the reader.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perf/read/reader_input.h"

/* An error at a byte offset of the input: what and where kept for the reader to say
 * (reader_input_err); the error returned. */
static int in_err(struct reader_input *in, int err, uint64_t off, const char *what)
{
	in->err_off = off;
	in->err_what = what;
	return err;
}

int reader_pread(struct reader_input *in, void *buf, size_t n, uint64_t off)
{
	size_t got = 0;
	while (got < n) {
		ssize_t k = pread(in->fd, (uint8_t *)buf + got, n - got, (off_t)(off + got));
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			return -UW_ETRUNC;
		got += (size_t)k;
	}
	return 0;
}

int reader_fill(struct reader_input *in, size_t need)
{
	if (in->buflen - in->bufpos >= need)
		return 0;
	if (in->bufpos) {
		memmove(in->buf, in->buf + in->bufpos, in->buflen - in->bufpos);
		in->buflen -= in->bufpos;
		in->bufpos = 0;
	}
	if (need > in->bufcap) {
		size_t cap = in->bufcap ? in->bufcap : 1 << 16;
		while (cap < need)
			cap *= 2;
		uint8_t *nb = realloc(in->buf, cap);
		if (!nb)
			return -ENOMEM;
		in->buf = nb;
		in->bufcap = cap;
	}
	while (in->buflen < need) {
		ssize_t n = read(in->fd, in->buf + in->buflen, in->bufcap - in->buflen);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0) {
			in->eof = true;
			return -UW_ETRUNC;
		}
		in->buflen += (size_t)n;
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
 *
 * Which record is cut how must not depend on thread timing (a report's figures of bytes read
 * changed from run to run): a prefix chosen when the records before offset A had been processed
 * applies to records from A + PREFIX_LAG on, and the read-ahead thread waits rather than read a
 * record whose prefix is not decided yet (it can run PREFIX_LAG ahead of the processing).
 */
#define WIN_EXTRA 1024u       /* read past the needed bytes: headers and small records */
#define PREFIX_MIN 512u

static int win_read(struct reader_input *in, uint64_t off, size_t want)
{
	if (want > in->wincap) {
		uint8_t *nw = realloc(in->win, want);
		if (!nw)
			return -ENOMEM;
		in->win = nw;
		in->wincap = want;
	}
	size_t got = 0;
	while (got < want) {
		ssize_t n = pread(in->fd, in->win + got, want - got, (off_t)(off + got));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			in->win_len = 0;
			return -errno;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	in->win_off = off;
	in->win_len = got;
	return 0;
}

/* Bytes [off, off + need) of the data section, valid until the next call; NULL (*err set) when
 * they cannot be read. */
static const uint8_t *win_get(struct reader_input *in, uint64_t off, size_t need, int *err)
{
	if (off >= in->win_off && off - in->win_off <= in->win_len && in->win_len - (off - in->win_off) >= need)
		return in->win + (off - in->win_off);
	size_t want = need + in->keep_cur + WIN_EXTRA;
	if (want > in->end - off)
		want = (size_t)(in->end - off);
	*err = win_read(in, off, want);
	if (*err)
		return NULL;
	if (in->win_len < need) {
		*err = -UW_ETRUNC;
		return NULL;
	}
	return in->win;
}

/* Chooses the prefix that minimizes bytes read: the prefix on every sample plus, for the share of
 * samples that needed more, a whole stack read back and a second unwind (costed as 12 KiB more). */
static void adapt_prefix(struct reader_input *in)
{
	uint64_t avg = in->reach_stack_sum / in->reach_n, best = UINT64_MAX, best_p = PREFIX_START;
	uint32_t below = 0;
	for (unsigned k = 9; k <= 16; k++) {
		below += in->reach_hist[k];
		if (k == 9)
			for (unsigned j = 0; j < 9; j++)
				below += in->reach_hist[j];
		uint64_t p = 1ull << k, miss = in->reach_n - below;
		uint64_t cost = p * in->reach_n + miss * (avg + 12288);
		if (cost < best) {
			best = cost;
			best_p = p;
		}
	}
	/* (the offset: where the processing is; records from PREFIX_LAG past it take the prefix) */
	pthread_mutex_lock(&in->psteps_mu);
	if (in->npsteps == in->capsteps) {
		if (in->psteps_first) { /* steps no longer needed: dropped */
			memmove(in->psteps, in->psteps + in->psteps_first, (in->npsteps - in->psteps_first) * sizeof(*in->psteps));
			in->npsteps -= in->psteps_first;
			in->psteps_first = 0;
		}
		size_t cap = in->capsteps ? 2 * in->capsteps : 16;
		struct prefix_step *ns = in->npsteps < in->capsteps ? NULL : realloc(in->psteps, cap * sizeof(*ns));
		if (ns) {
			in->psteps = ns;
			in->capsteps = cap;
		}
	}
	/* (without memory for it the prefix stays as it was) */
	if (in->npsteps < in->capsteps)
		in->psteps[in->npsteps++] =
			(struct prefix_step){ atomic_load_explicit(&in->done_off, memory_order_relaxed), (uint32_t)best_p };
	pthread_mutex_unlock(&in->psteps_mu);
	memset(in->reach_hist, 0, sizeof(in->reach_hist));
	in->reach_n = 0;
	in->reach_stack_sum = 0;
}

void reader_note_reach(struct reader_input *in, uint64_t reach, uint64_t stack_size)
{
	unsigned k = 0;
	while (k < 16 && (1ull << k) < reach)
		k++;
	in->reach_hist[k]++;
	in->reach_stack_sum += stack_size;
	if (++in->reach_n == 256)
		adapt_prefix(in);
}

/* Is the prefix of a record at pos decided (the records up to pos - PREFIX_LAG processed)? */
static bool prefix_decided(struct reader_input *in, uint64_t pos)
{
	return !in->cut_stacks || pos < PREFIX_LAG || atomic_load(&in->done_off) > pos - PREFIX_LAG;
}

/* The prefix of a record at pos, once decided: the last chosen when the records before an
 * offset up to pos - PREFIX_LAG had been processed. */
static uint32_t prefix_at(struct reader_input *in, uint64_t pos)
{
	if (!in->cut_stacks)
		return 1u << 16; /* more than a record holds: nothing cut */
	if (pos < PREFIX_LAG)
		return PREFIX_START;
	uint64_t t = pos - PREFIX_LAG;
	uint32_t p = PREFIX_START;
	pthread_mutex_lock(&in->psteps_mu);
	size_t i = in->psteps_first;
	while (i < in->npsteps && in->psteps[i].at <= t)
		i++;
	if (i > in->psteps_first) {
		p = in->psteps[i - 1].prefix;
		in->psteps_first = i - 1; /* (later records have later offsets: the earlier ones are done) */
	}
	pthread_mutex_unlock(&in->psteps_mu);
	return p;
}

#define SHORT_FILE "the file ends before its data section does (cut short while being read?)"

/* The next record of the data section, its sample stack cut to the prefix. Logs nothing (it
 * also runs on the read-ahead thread). @return 1; 0 at the end; an error with *off and *what. */
static int sparse_read(struct reader_input *in, const uint8_t **rec, uint32_t *len, uint64_t *off, struct cut *cut,
                       int32_t *aidx, const char **what)
{
	int err = 0;
	uint64_t pos = in->pos;
	memset(cut, 0, sizeof(*cut));
	*aidx = -1;
	if (pos >= in->end)
		return 0;
	*off = pos;
	uint32_t keep = in->keep_cur = prefix_at(in, pos);
	*what = "truncated record header (8 bytes expected)";
	if (in->end - pos < 8)
		return -UW_ETRUNC;
	const uint8_t *h = win_get(in, pos, 8, &err);
	if (!h)
		goto short_read;
	uint32_t type;
	uint16_t size;
	memcpy(&type, h, 4);
	memcpy(&size, h + 6, 2);
	*what = "record size smaller than its header";
	if (size < 8)
		return -UW_EFORMAT;
	*what = "record runs past the end of the data";
	if (in->end - pos < size)
		return -UW_ETRUNC;
	in->pos = pos + size;
	*len = size;
	/* a sample whose stack is worth cutting */
	if (type == PR_SAMPLE && in->at->nattrs && size > keep + 1024) {
		size_t avail = in->win_len - (size_t)(pos - in->win_off);
		if (avail > size)
			avail = size;
		unsigned ai;
		const struct perf_attr *a = reader_attr_of(in->at, h, (uint32_t)avail, &ai);
		/* (carried to the processing when the bytes seen reach the id: found once) */
		if (avail == size || avail >= 8 + 48)
			*aidx = (int32_t)ai;
		size_t sf;
		if (perf_sample_stack_field(a, h + 8, avail - 8, &sf) == 0) {
			uint64_t ssize;
			memcpy(&ssize, h + 8 + sf, 8);
			size_t data_off = 8 + sf + 8;
			if (ssize <= size - data_off && size - data_off - ssize >= 8 && ssize > keep + 512u) {
				size_t tail_off = data_off + (size_t)ssize, tail_len = size - tail_off;
				if (!(h = win_get(in, pos, data_off + keep, &err)))
					goto short_read;
				memcpy(in->cbuf, h, data_off + keep);
				/* the tail, and with it the records that follow */
				const uint8_t *t = win_get(in, pos + tail_off, tail_len, &err);
				if (!t)
					goto short_read;
				memcpy(in->cbuf + data_off + keep, t, tail_len);
				uint16_t nsize = (uint16_t)(data_off + keep + tail_len);
				uint64_t k64 = keep, dyn;
				memcpy(in->cbuf + 6, &nsize, 2);
				memcpy(in->cbuf + 8 + sf, &k64, 8);
				memcpy(&dyn, t, 8);
				if (dyn > keep) {
					*cut = (struct cut){ pos, size, true };
					memcpy(in->cbuf + data_off + keep, &k64, 8);
				}
				*rec = in->cbuf;
				*len = nsize;
				return 1;
			}
		}
	}
	if (!(h = win_get(in, pos, size, &err)))
		goto short_read;
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
		if (in->end - in->pos < payload)
			return -UW_ETRUNC;
		in->pos += payload;
	}
	*rec = h;
	return 1;
short_read:
	if (err == -UW_ETRUNC)
		*what = SHORT_FILE;
	return err;
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
	uint64_t off, end;       /* the record's offset; where the next starts */
	uint32_t len;
	int32_t aidx;            /* its attribute, when the reading found it; -1 */
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
	atomic_bool waiting;     /* the thread waits for the processing (prefix_decided) */
	struct ra_chunk *cur;    /* consumer's */
	uint64_t cur_end;        /* consumer's: where the record after its last one starts */
};

/* The thread: waits until the prefix at in->pos is decided. @return false when stopped. */
static bool ra_wait_decided(struct reader_input *in)
{
	struct ra *ra = in->ra;
	pthread_mutex_lock(&ra->mu);
	atomic_store(&ra->waiting, true);
	while (!ra->stop && !prefix_decided(in, in->pos))
		pthread_cond_wait(&ra->cv, &ra->mu);
	atomic_store(&ra->waiting, false);
	bool go = !ra->stop;
	pthread_mutex_unlock(&ra->mu);
	return go;
}

/* The consumer: the records before `end` are processed (a waiting thread is woken). */
static void processed_to(struct reader_input *in, uint64_t end)
{
	atomic_store(&in->done_off, end);
	struct ra *ra = in->ra;
	if (ra && atomic_load(&ra->waiting)) {
		pthread_mutex_lock(&ra->mu);
		pthread_cond_broadcast(&ra->cv);
		pthread_mutex_unlock(&ra->mu);
	}
}

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
	struct reader_input *in = arg;
	struct ra *ra = in->ra;
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
			if (in->pos < in->end && !prefix_decided(in, in->pos)) {
				/* the records read so far go first: the processing waited for needs them */
				if (c->len)
					break;
				if (!ra_wait_decided(in))
					return NULL;
			}
			int got = sparse_read(in, &rec, &len, &e.off, &e.cut, &e.aidx, &c->err_what);
			if (got <= 0) {
				c->err = got ? got : 1;
				c->err_off = e.off;
				break;
			}
			e.len = len;
			e.end = in->pos;
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

void reader_chunk_hold(struct ra_chunk *c)
{
	c->live++;
}

void reader_chunk_release(struct reader_input *in, struct ra_chunk *c)
{
	c->live--;
	ra_recycle(in->ra, c);
}

static int ra_next(struct reader_input *in, const uint8_t **rec, uint32_t *len, uint64_t *off)
{
	struct ra *ra = in->ra;
	struct ra_chunk *c = ra->cur;
	if (ra->cur_end)
		processed_to(in, ra->cur_end);
	memset(&in->cur_cut, 0, sizeof(in->cur_cut));
	in->cur_aidx = -1;
	in->cur_chunk = NULL;
	while (!c || c->pos == c->len) {
		if (c) {
			if (c->err == 1)
				return 0;
			if (c->err) {
				int err = c->err;
				c->err = 1; /* reported once */
				return err == -UW_ETRUNC || err == -UW_EFORMAT ? in_err(in, err, c->err_off, c->err_what) : err;
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
	in->cur_cut = e.cut;
	in->cur_aidx = e.aidx;
	in->cur_chunk = c;
	ra->cur_end = e.end;
	c->pos += sizeof(e) + ((e.len + 7u) & ~7u);
	return 1;
}

/* Stops the thread; the chunks stay (queued records may point into them) until ra_free. */
void reader_ra_stop(struct reader_input *in)
{
	struct ra *ra = in->ra;
	if (!ra || ra->joined)
		return;
	pthread_mutex_lock(&ra->mu);
	ra->stop = true;
	pthread_cond_broadcast(&ra->cv);
	pthread_mutex_unlock(&ra->mu);
	pthread_join(ra->thread, NULL);
	ra->joined = true;
}

static void ra_free(struct reader_input *in)
{
	struct ra *ra = in->ra;
	if (!ra)
		return;
	reader_ra_stop(in);
	for (struct ra_chunk *c = ra->all, *n; c; c = n) {
		n = c->all;
		free(c);
	}
	pthread_mutex_destroy(&ra->mu);
	pthread_cond_destroy(&ra->cv);
	free(ra);
	in->ra = NULL;
}

int reader_ra_start(struct reader_input *in)
{
	struct ra *ra = calloc(1, sizeof(*ra));
	if (!ra)
		return -ENOMEM;
	pthread_mutex_init(&ra->mu, NULL);
	pthread_cond_init(&ra->cv, NULL);
	atomic_init(&ra->waiting, false);
	atomic_store(&in->done_off, in->pos); /* (nothing before the records is to wait for) */
	in->ra = ra;
	if (pthread_create(&ra->thread, NULL, ra_main, in)) {
		pthread_mutex_destroy(&ra->mu);
		pthread_cond_destroy(&ra->cv);
		free(ra);
		in->ra = NULL;
	}
	return 0;
}

static int next_record_sparse(struct reader_input *in, const uint8_t **rec, uint32_t *len, uint64_t *off)
{
	if (in->ra)
		return ra_next(in, rec, len, off);
	processed_to(in, in->pos);
	const char *what = NULL;
	int got = sparse_read(in, rec, len, off, &in->cur_cut, &in->cur_aidx, &what);
	if (got < 0 && (got == -UW_ETRUNC || got == -UW_EFORMAT))
		return in_err(in, got, *off, what);
	return got;
}

int reader_next(struct reader_input *in, const uint8_t **rec, uint32_t *len, uint64_t *off)
{
	uint16_t size;
	if (in->sparse)
		return next_record_sparse(in, rec, len, off);
	in->cur_aidx = -1;
	*off = in->stream_off;
	int e = reader_fill(in, 8);
	if (e == -UW_ETRUNC && in->buflen == in->bufpos)
		return 0;
	if (e)
		return e == -UW_ETRUNC ? in_err(in, e, *off, "truncated record header (8 bytes expected)") : e;
	memcpy(&size, in->buf + in->bufpos + 6, 2);
	if (size < 8)
		return in_err(in, -UW_EFORMAT, *off, "record size smaller than its header");
	e = reader_fill(in, size);
	if (e)
		return e == -UW_ETRUNC ? in_err(in, e, *off, "record runs past the end of the input") : e;
	*rec = in->buf + in->bufpos;
	*len = size;
	in->bufpos += size;
	in->stream_off += size;
	return 1;
}

/* Skips payload bytes that follow some records (AUXTRACE, TRACING_DATA). */
int reader_skip_payload(struct reader_input *in, uint64_t n, uint64_t off)
{
	if (in->sparse)
		return 0; /* sparse_read skipped it */
	while (n) {
		size_t chunk = (size_t)UW_MIN(n, (uint64_t)1 << 16);
		int e = reader_fill(in, chunk);
		if (e)
			return e == -UW_ETRUNC ? in_err(in, e, off, "record payload runs past the end of the input") : e;
		in->bufpos += chunk;
		in->stream_off += chunk;
		n -= chunk;
	}
	return 0;
}


/* (read back into in->fullbuf) */
const uint8_t *reader_read_whole(struct reader_input *in, const struct cut *cut)
{
	size_t got = 0;
	while (got < cut->len) {
		ssize_t n = pread(in->fd, in->fullbuf + got, cut->len - got, (off_t)(cut->off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return NULL;
		got += (size_t)n;
	}
	return in->fullbuf;
}

void reader_input_init(struct reader_input *in, const struct reader_attrs *at)
{
	memset(in, 0, sizeof(*in));
	in->at = at;
	in->fd = -1;
	in->cur_aidx = -1;
}

int reader_input_open(struct reader_input *in, const char *path)
{
	if (strcmp(path, "-") == 0) {
		in->fd = 0;
	} else {
		in->fd = open(path, O_RDONLY | O_CLOEXEC);
		if (in->fd < 0)
			return -errno;
		in->close_fd = true;
	}
	struct stat st;
	bool regular = fstat(in->fd, &st) == 0 && S_ISREG(st.st_mode);
	if (regular && st.st_size > 0) {
		in->seekable = true;
		in->file_size = (uint64_t)st.st_size;
	}
	return 0;
}

struct part_name {
	unsigned long long n;
	char *path;
};

static int by_part_number(const void *a, const void *b)
{
	const struct part_name *x = a, *y = b;
	return x->n < y->n ? -1 : x->n > y->n;
}

int reader_dir_parts(const char *dir, size_t max, char ***names, size_t *n)
{
	*names = NULL;
	*n = 0;
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	struct part_name *v = NULL;
	size_t nv = 0, cap = 0;
	int err = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		/* data.N, N decimal digits without a sign or leading zeros (perf's names) */
		const char *num = e->d_name + 5;
		if (strncmp(e->d_name, "data.", 5) || !*num || strspn(num, "0123456789") != strlen(num) ||
		    (num[0] == '0' && num[1]) || strlen(num) > 9)
			continue;
		if (nv == max) {
			err = -E2BIG;
			break;
		}
		if (nv == cap) {
			cap = cap ? cap * 2 : 16;
			struct part_name *nn = realloc(v, cap * sizeof(*v));
			if (!nn) {
				err = -ENOMEM;
				break;
			}
			v = nn;
		}
		v[nv].n = strtoull(num, NULL, 10);
		if (asprintf(&v[nv].path, "%s/%s", dir, e->d_name) < 0) {
			err = -ENOMEM;
			break;
		}
		nv++;
	}
	closedir(d);
	char **out = err ? NULL : malloc((nv ? nv : 1) * sizeof(*out));
	if (!err && !out)
		err = -ENOMEM;
	if (nv)
		qsort(v, nv, sizeof(*v), by_part_number);
	for (size_t i = 0; i < nv; i++) {
		if (out)
			out[i] = v[i].path;
		else
			free(v[i].path);
	}
	free(v);
	if (!err) {
		*names = out;
		*n = nv;
	}
	return err;
}

int reader_input_head(struct reader_input *in, uint8_t h[16])
{
	int err = in->seekable ? reader_pread(in, h, 16, 0) : reader_fill(in, 16);
	if (!err && !in->seekable)
		memcpy(h, in->buf, 16);
	return err;
}

void reader_input_records(struct reader_input *in, uint64_t pos, uint64_t end)
{
	if (in->seekable) {
		in->pos = pos;
		in->end = end;
	} else {
		in->bufpos = pos;
		in->stream_off = pos;
	}
}

int reader_input_sparse(struct reader_input *in, bool cut_stacks)
{
	in->sparse = true;
	in->cut_stacks = cut_stacks;
	pthread_mutex_init(&in->psteps_mu, NULL);
	atomic_init(&in->done_off, 0);
	in->cbuf = malloc(1u << 16);
	in->fullbuf = malloc(1u << 16);
	return in->cbuf && in->fullbuf ? 0 : -ENOMEM;
}

void reader_input_free(struct reader_input *in)
{
	ra_free(in);
	if (in->close_fd)
		close(in->fd);
	free(in->buf);
	free(in->win);
	free(in->cbuf);
	free(in->fullbuf);
	if (in->sparse) {
		free(in->psteps);
		pthread_mutex_destroy(&in->psteps_mu);
	}
	memset(in, 0, sizeof(*in));
	in->fd = -1;
}
