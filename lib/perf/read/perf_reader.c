/* SPDX-License-Identifier: MIT */
/*
 * perf.data reading: file mode (tools/perf/Documentation/perf.data-file-format.txt) and pipe
 * mode, records put in timestamp order with FINISHED_ROUND (a record may be delivered once
 * every record written before the previous round marker has been delivered), then handed to
 * the tracker, and samples unwound and passed to the caller.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h> /* (PROT_* of MMAP records) */
#include <sys/stat.h>
#include <time.h>

#include "perf/read/reader.h"

void perf_reader_set_record_fn(struct uw_reader *r, perf_record_fn fn, void *ctx)
{
	r->record_fn = fn;
	r->record_ctx = ctx;
}

const struct perf_attr *perf_reader_attrs(const struct uw_reader *r, size_t *n)
{
	*n = r->at.nattrs;
	return r->at.attrs;
}

uint64_t perf_reader_held_oldest(const struct uw_reader *r, uint64_t *newest)
{
	*newest = r->newest_delivered;
	/* (samples waiting for a deferred callchain come late too) */
	return UW_MIN(unw_stitch_oldest(&r->stitch), reader_deferred_oldest(&r->def));
}

const uint8_t *perf_reader_current_sample(const struct uw_reader *r, uint32_t *len)
{
	*len = r->cur_len;
	return r->cur_rec;
}

const uint8_t *perf_reader_feature(const struct uw_reader *r, unsigned bit, size_t *n)
{
	if (bit >= FEAT_LAST || !r->hdr.ft.sec[bit].p) {
		*n = 0;
		return NULL;
	}
	*n = r->hdr.ft.sec[bit].n;
	return r->hdr.ft.sec[bit].p;
}

void reader_set_kunw_hook(struct uw_reader *r, reader_kunw_fn fn, void *ctx)
{
	r->kunw.fn = fn;
	r->kunw.ctx = ctx;
}

void reader_set_push_hook(struct uw_reader *r, perf_record_fn fn, void *ctx)
{
	r->push_fn = fn;
	r->push_ctx = ctx;
}

UW_API const char *uw_reader_info(const struct uw_reader *r, enum uw_info key)
{
	return (unsigned)key < UW_INFO__COUNT ? r->hdr.info[key] : NULL;
}

/* An error at a byte offset of the input, said in the session's message. */
static int reader_err(struct uw_reader *r, int err, uint64_t off, const char *what)
{
	return base_err(&r->s->log, err, "%s: at byte offset %llu: %s", r->cur_name ? r->cur_name : r->path,
			(unsigned long long)off, what);
}

/* A stage's error (-UW_ETRUNC, -UW_EFORMAT, ...) said with the offset and reason it kept
 * (none kept: err as it is); err returned. */
static int stage_err(struct uw_reader *r, int err, uint64_t off, const char **what)
{
	const char *w = *what;
	if (err >= 0 || !w)
		return err;
	*what = NULL;
	return reader_err(r, err, off, w);
}

static int reader_input_err(struct uw_reader *r, int err)
{
	return stage_err(r, err, r->cur->err_off, &r->cur->err_what);
}

/* ---- attributes */

/* The reader's share of the attributes the file header added (at least one): their statistics,
 * and the clock the first says. */
static int header_attrs_added(struct uw_reader *r)
{
	r->evst = calloc(r->at.nattrs, sizeof(*r->evst));
	if (!r->evst)
		return -ENOMEM;
	for (size_t i = 0; i < r->at.nattrs; i++)
		r->evst[i].sz = sizeof(*r->evst);
	/* perf record -k 1 (CLOCK_MONOTONIC): sample times compare with a jitdump's */
	const struct perf_attr *a = &r->at.attrs[0];
	r->t->clock_monotonic = (a->flags & PA_USE_CLOCKID) && a->clockid == CLOCK_MONOTONIC;
	return 0;
}

/* An attribute added (HEADER_ATTR, uw_reader_add_event) with its statistics (an error said at
 * offset off). */
static int reader_add_attr(struct uw_reader *r, const uint8_t *p, size_t size, const uint8_t *ids, size_t nids,
                           uint64_t off)
{
	/* its statistics first: an attribute added has them */
	struct uw_event_stats *ne = realloc(r->evst, (r->at.nattrs + 1) * sizeof(*ne));
	if (!ne)
		return -ENOMEM;
	r->evst = ne;
	memset(&ne[r->at.nattrs], 0, sizeof(*ne));
	ne[r->at.nattrs].sz = sizeof(*ne);
	const char *what = NULL;
	int err = reader_attrs_add(&r->at, p, size, ids, nids, &what);
	if (err)
		return what ? reader_err(r, err, off, what) : err;
	/* perf record -k 1 (CLOCK_MONOTONIC): sample times compare with a jitdump's */
	const struct perf_attr *a = &r->at.attrs[r->at.nattrs - 1];
	if (r->at.nattrs == 1)
		r->t->clock_monotonic = (a->flags & PA_USE_CLOCKID) && a->clockid == CLOCK_MONOTONIC;
	return 0;
}

/* ---- samples handed on: held for their deferred callchains, stitched, delivered */

/* The deferred stage's counts into the reader's stats. */
static void deferred_counts(struct uw_reader *r)
{
	r->st.deferred_samples = r->def.n.samples;
	r->st.deferred_stitched = r->def.n.stitched;
	r->st.deferred_missing = r->def.n.missing;
	r->st.deferred_records = r->def.n.records;
	r->st.deferred_unmatched = r->def.n.unmatched;
	r->st.deferred_malformed = r->def.n.malformed;
}

/* The stitching stage's counts into the reader's stats. */
static void stitch_counts(struct uw_reader *r)
{
	r->st.stitched_samples = r->stitch.stitched_samples;
	r->st.stitched_frames = r->stitch.stitched_frames;
	r->st.stitch_failed = r->stitch.failed;
	r->st.stitch_given_up = r->stitch.given_up;
}

/* A sample to its consumer: counted, then given to opts.on_sample. */
static int deliver_sample(struct uw_reader *r, unsigned aidx, struct uw_sample *smp)
{
	struct uw_event_stats *es = &r->evst[aidx];
	if (smp->stop_reason != UW_STOP_NO_REGS || smp->nr_user) {
		r->st.stop_reasons[smp->stop_reason]++;
		es->stop_reasons[smp->stop_reason]++;
	}
	r->st.user_frames += smp->nr_user;
	for (unsigned i = 0; i < smp->nr_user; i++)
		r->st.frames_by_method[smp->user[i].method & (UW_METHOD_MAX - 1)]++;
	r->st.samples_delivered++;
	es->user_frames += smp->nr_user;
	es->samples_delivered++;
	es->period = es->period + smp->period < es->period ? UINT64_MAX : es->period + smp->period;
	if (r->o.on_sample && r->o.on_sample(r->o.ctx, smp))
		return -UW_ECANCELED;
	return 0;
}

/* The stitching stage's delivery: a sample it hands on, with the record writers see. */
static int stitched(void *ctx, unsigned aidx, struct uw_sample *smp, const uint8_t *rec, uint32_t len)
{
	struct uw_reader *r = ctx;
	const uint8_t *cur = r->cur_rec;
	uint32_t cur_len = r->cur_len;
	r->cur_rec = rec;
	r->cur_len = len;
	stitch_counts(r);
	int err = deliver_sample(r, aidx, smp);
	r->cur_rec = cur;
	r->cur_len = cur_len;
	return err;
}

int reader_stitch_sample(struct uw_reader *r, unsigned aidx, struct uw_sample *smp)
{
	int err = unw_stitch_sample(&r->stitch, aidx, smp, r->cur_rec, r->cur_len);
	stitch_counts(r);
	return err;
}

int reader_stitch_forget(struct uw_reader *r, uint32_t pid, uint32_t tid)
{
	int err = unw_stitch_forget(&r->stitch, pid, tid);
	stitch_counts(r);
	return err;
}

int reader_stitch_flush(struct uw_reader *r)
{
	int err = unw_stitch_flush(&r->stitch);
	stitch_counts(r);
	return err;
}

/* A SAMPLE record (how: as it comes to the sample stage). */
static int sample(struct uw_reader *r, unsigned aidx, const uint8_t *rec, uint32_t len, const struct cut *cut,
                  uint64_t ord, unsigned how)
{
	struct uw_sample smp;
	struct reader_sample_out out;
	out.stack_of = 0;
	switch (reader_sample_make(&r->smp, &r->at.attrs[aidx], aidx, &r->evst[aidx], rec, len, cut, ord, how, &smp, &out)) {
	case READER_MADE:
		/* (the stack prefix follows how far unwinding read) */
		if (out.stack_of && r->in.cut_stacks)
			reader_note_reach(&r->in, out.reach, out.stack_of);
		/* through stitching when it is on, else to the consumer */
		return r->o.stitch ? reader_stitch_sample(r, aidx, &smp) : deliver_sample(r, aidx, &smp);
	case READER_HOLD: {
		int err = reader_deferred_hold(&r->def, aidx, rec, len, out.tid, out.time, out.cookie, ord);
		deferred_counts(r);
		return err;
	}
	default:
		return 0;
	}
}

/* The deferred stage's delivery: a held sample (its chain rewritten, or missing). */
static int deferred_deliver(void *ctx, unsigned aidx, const uint8_t *rec, uint32_t len, uint64_t ord, bool missing)
{
	struct uw_reader *r = ctx;
	r->cur_rec = rec; /* (what writers see) */
	r->cur_len = len;
	return sample(r, aidx, rec, len, NULL, ord, READER_SAMPLE_REDELIVERED | (missing ? READER_SAMPLE_MISSING : 0));
}

/* A PR_UW_KUNW record (a live recorder's). */
static int kunw_sample(struct uw_reader *r, unsigned aidx, const uint8_t *rec, uint32_t len)
{
	struct uw_sample smp;
	int made = reader_kunw_make(&r->kunw, &r->at.attrs[aidx], aidx, &r->evst[aidx], rec, len, &smp);
	if (made != READER_MADE)
		return made < 0 ? made : 0;
	r->cur_rec = r->kunw.raw;
	r->cur_len = r->kunw.raw_len;
	return r->o.stitch ? reader_stitch_sample(r, aidx, &smp) : deliver_sample(r, aidx, &smp);
}

/* ---- opening */

/* What every reader has: options, buffers, its tracker. */
static int reader_init(struct uw_reader *r, struct uw_session *s, const struct uw_reader_opts *opts, const char *path,
                       bool live)
{
	int oe = BASE_OPTS_COPY(&r->o, uw_reader_opts, stack_limit, opts);
	if (oe)
		return oe;
	if (!r->o.max_queue_bytes)
		r->o.max_queue_bytes = QUEUE_BYTES_DEFAULT;
	r->s = s;
	reader_input_init(&r->in, &r->at);
	r->cur = &r->in;
	unw_stitch_init(&r->stitch, s->opts.max_frames, stitched, r);
	reader_deferred_init(&r->def, &r->at, deferred_deliver, r);
	r->path = strdup(path);
	base_map_init(&r->at.ids);
	r->st.sz = sizeof(r->st);
	if (!r->path)
		return -ENOMEM;
	r->t = r->o.tracker;
	if (!r->t) {
		UW_OPTS(uw_tracker_opts, to, .live = live);
		r->t = uw_tracker_new(s, &to);
		if (!r->t)
			return -ENOMEM;
		r->own_tracker = true;
	}
	reader_header_init(&r->hdr, s, r->t, r->path);
	reader_kunw_init(&r->kunw, s, r->t, &r->o, &r->st);
	return reader_samples_init(&r->smp, s, r->t, &r->o, &r->st, r->path, &r->in, &r->hdr.ft);
}

/* A directory recording's parts (DIR/data.N), opened; the header read says its format. */
static int open_parts(struct uw_reader *r, const char *dir)
{
	char **names;
	size_t n;
	int err = reader_dir_parts(dir, DIR_MAX_PARTS, &names, &n);
	if (err == -E2BIG)
		return base_err(&r->s->log, -UW_ELIMIT, "%s: more than %u data.N files", dir, DIR_MAX_PARTS);
	if (err)
		return base_err(&r->s->log, err, "%s: %s", dir, strerror(-err));
	size_t flen;
	const uint8_t *f = perf_reader_feature(r, FEAT_DIR_FORMAT, &flen);
	uint64_t version = 0;
	if (f && flen >= 8)
		memcpy(&version, f, 8);
	if (n && !f)
		err = base_err(&r->s->log, -UW_EFORMAT, "%s: data.N files, but %s says no directory format "
			       "(no DIR_FORMAT feature)", dir, r->dir_data);
	else if (f && version != 1)
		err = base_err(&r->s->log, -UW_EUNSUPP, "%s: directory format version %llu (perf writes 1)",
			       r->dir_data, (unsigned long long)version);
	if (!err && n && !(r->parts = calloc(n, sizeof(*r->parts))))
		err = -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (err) {
			free(names[i]);
			continue;
		}
		struct reader_part *p = &r->parts[r->nparts];
		reader_input_init(&p->in, &r->at);
		p->name = names[i];
		r->nparts++;
		/* (a regular file only: opening a FIFO someone put there would wait for a writer) */
		struct stat st;
		if (stat(p->name, &st))
			err = -errno;
		else if (!S_ISREG(st.st_mode))
			err = -EINVAL;
		else
			err = reader_input_open(&p->in, p->name);
		if (err == -EINVAL)
			err = base_err(&r->s->log, -UW_EFORMAT, "%s: not a regular file", p->name);
		else if (err)
			err = base_err(&r->s->log, err, "%s: %s", p->name, strerror(-err));
		p->done = !err && !p->in.file_size;
		r->total_bytes += p->in.file_size;
		r->st.bytes += p->in.file_size;
	}
	free(names);
	return err;
}

static int process_record(struct uw_reader *r, const uint8_t *rec, uint32_t len, uint64_t off);

/* The parts' records, DIR_TURN bytes of each in turn (the header's went before). */
static int run_parts(struct uw_reader *r)
{
	size_t left = 0;
	for (size_t i = 0; i < r->nparts; i++)
		left += !r->parts[i].done;
	int err = 0;
	struct perf_decomp *own = r->decomp;
	while (left && !err) {
		for (size_t i = 0; i < r->nparts && !err; i++) {
			struct reader_part *p = &r->parts[i];
			if (p->done)
				continue;
			r->cur = &p->in;
			r->cur_name = p->name;
			r->decomp = p->decomp;
			const uint8_t *rec;
			uint32_t len;
			uint64_t off, turn = 0;
			int got = 1;
			while (turn < DIR_TURN && (got = reader_input_err(r, reader_next(&p->in, &rec, &len, &off))) == 1) {
				turn += len;
				r->parts_read += len;
				if ((err = process_record(r, rec, len, off)))
					break;
			}
			if (!err && got == -UW_ETRUNC && r->hdr.unfinished) {
				base_log(&r->s->log, UW_LOG_WARN, "%s: %s", p->name, base_errmsg(&r->s->log));
				r->st.records_cut = 1;
				got = 0;
			}
			if (!err && got < 0)
				err = got;
			if (!err && got == 0) {
				p->done = true;
				left--;
			}
			p->decomp = r->decomp;
		}
	}
	r->decomp = own;
	r->cur = &r->in;
	r->cur_name = r->dir_data;
	return err;
}

UW_API struct uw_reader *uw_reader_open(struct uw_session *s, const char *path,
                                        const struct uw_reader_opts *opts)
{
	if (!s || !path) {
		errno = EINVAL;
		return NULL;
	}
	base_errmsg_clear(&s->log); /* (a failure below without its own message is named at fail) */
	struct uw_reader *r = calloc(1, sizeof(*r));
	if (!r) {
		base_err(&s->log, -ENOMEM, "%s: %s", path, strerror(ENOMEM));
		errno = ENOMEM;
		return NULL;
	}
	int err = reader_init(r, s, opts, strcmp(path, "-") == 0 ? "<stdin>" : path, false);
	if (err == -EINVAL) {
		free(r);
		errno = EINVAL;
		return NULL;
	}
	if (err)
		goto fail;
	/* a directory: perf record --threads's, its header in DIR/data */
	struct stat dst;
	if (strcmp(path, "-") && stat(path, &dst) == 0 && S_ISDIR(dst.st_mode)) {
		if (asprintf(&r->dir_data, "%s/data", path) < 0) {
			r->dir_data = NULL;
			err = -ENOMEM;
			goto fail;
		}
		r->cur_name = r->dir_data;
	}
	err = reader_input_open(&r->in, r->dir_data ? r->dir_data : path);
	if (err) {
		if (r->dir_data && err == -ENOENT)
			err = base_err(&s->log, -UW_EMAGIC, "%s: a directory, and not a perf.data directory (perf record "
				       "--threads writes its header as DIR/data): no %s", path, r->dir_data);
		else
			err = base_err(&s->log, err, "%s: %s", r->dir_data ? r->dir_data : path, strerror(-err));
		goto fail;
	}
	uint64_t magic = 0, hsize = 0;
	uint8_t h[16];
	err = reader_input_head(&r->in, h);
	if (err) {
		if (!r->in.seekable)
			err = reader_err(r, err, 0, "input too short for a perf.data header");
		else if (err == -UW_ETRUNC)
			err = reader_err(r, err, 0, "file too short for a perf.data header");
		goto fail;
	}
	memcpy(&magic, h, 8);
	memcpy(&hsize, h + 8, 8);
	if (magic == PERF_MAGIC2_SWAPPED) {
		err = reader_err(r, -UW_EUNSUPP, 0, "big-endian perf.data files are not supported");
		goto fail;
	}
	if (magic != PERF_MAGIC2 && magic != PERF_MAGIC1) {
		err = reader_err(r, -UW_EMAGIC, 0, "not a perf.data file (magic PERFILE2 or PERFFILE expected)");
		goto fail;
	}
	r->st.bytes = r->in.file_size;
	if (hsize == 16) { /* pipe mode */
		reader_input_records(&r->in, 16, r->in.file_size);
	} else {
		if (!r->in.seekable) {
			err = reader_err(r, -UW_EUNSUPP, 0, "file-mode perf.data needs a seekable file, not a pipe");
			goto fail;
		}
		r->file_mode = true;
		err = stage_err(r, reader_file_header(&r->hdr, &r->in, &r->at), r->hdr.err_off, &r->hdr.err_what);
		if (!err)
			err = header_attrs_added(r);
		if (err)
			goto fail;
		reader_input_records(&r->in, r->hdr.data_off, r->hdr.data_end);
		r->st.unfinished = r->hdr.unfinished;
	}
	r->total_bytes = r->in.seekable ? r->in.end : 0;
	if (r->dir_data && (err = open_parts(r, path)))
		goto fail;
	/* records read in windows with pread; a sample's stack cut to a prefix unless full_stacks */
	if (r->in.seekable && (err = reader_input_sparse(&r->in, !r->o.full_stacks)))
		goto fail;
	return r;
fail:
	uw_reader_free(r);
	if (!*base_errmsg(&s->log)) /* (out of memory on the way, most often) */
		base_err(&s->log, err, "%s: %s", path, uw_strerror(err));
	/* errno values and project codes alike (UW_EMAGIC, UW_ETRUNC, ...: uw_strerror names them) */
	errno = err < 0 ? -err : EPROTO;
	return NULL;
}

UW_API void uw_reader_free(struct uw_reader *r)
{
	if (!r)
		return;
	reader_ra_stop(&r->in);
	reader_order_free(&r->q); /* (before the input's chunks its records may lie in) */
	reader_input_free(&r->in);
	for (size_t i = 0; i < r->nparts; i++) {
		reader_input_free(&r->parts[i].in);
		perf_decomp_free(r->parts[i].decomp);
		free(r->parts[i].name);
	}
	free(r->parts);
	free(r->dir_data);
	reader_attrs_free(&r->at);
	free(r->evst);
	reader_header_free(&r->hdr);
	perf_decomp_free(r->decomp);
	reader_deferred_free(&r->def);
	free(r->fixbuf);
	unw_stitch_free(&r->stitch);
	reader_samples_free(&r->smp);
	reader_kunw_free(&r->kunw);
	free(r->path);
	if (r->own_tracker)
		uw_tracker_free(r->t);
	free(r);
}

UW_API unsigned uw_reader_nr_events(const struct uw_reader *r)
{
	return (unsigned)r->at.nattrs;
}

UW_API const char *uw_reader_event_name(const struct uw_reader *r, unsigned idx)
{
	return idx < r->at.nattrs ? r->at.attrs[idx].name : NULL;
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

static int reader_deliver(struct uw_reader *r, unsigned aidx, const uint8_t *rec, uint32_t len, uint64_t time,
                   const struct cut *cut, uint64_t ord)
{
	uint32_t type;
	uint16_t misc;
	memcpy(&type, rec, 4);
	memcpy(&misc, rec + 4, 2);
	const uint8_t *b = rec + 8;
	size_t n = len - 8;
	if (time > r->newest_delivered)
		r->newest_delivered = time;
	struct base_cursor c = base_cursor(b, n);
	const struct perf_attr *a = &r->at.attrs[aidx];
	size_t trailer = (a && type != PR_SAMPLE) ? a->id_trailer_size : 0;
	if (trailer <= n)
		c.end -= trailer;
	if (++r->since_sweep >= 4096 && time) {
		r->since_sweep = 0;
		tracker_sweep(r->t, time);
	}
	/* PERF_RECORD_MISC_MMAP_BUILD_ID means a build-id in place of device and inode only when
	 * the event asked for build-ids: the kernel (seen on 6.18) sets it on the MMAP2 records of
	 * every event once one session's event has build_id, over device and inode (perf's
	 * perf_event_mmap_output() ORs it into the shared record). Such a record is read as perf's
	 * format says, and writers get it without the flag (perf 6.1 aborts on the file else). */
	bool bid_flag = type == PR_MMAP2 && (misc & PM_MMAP_BUILD_ID);
	if (bid_flag && !(a && (a->flags & PA_BUILD_ID))) {
		bid_flag = false;
		if (r->record_fn) {
			if (!r->fixbuf && !(r->fixbuf = malloc(1u << 16)))
				return -ENOMEM;
			uint16_t m = misc & (uint16_t)~PM_MMAP_BUILD_ID;
			memcpy(r->fixbuf, rec, len);
			memcpy(r->fixbuf + 4, &m, 2);
			rec = r->fixbuf;
		}
	}
	/* (deferred callchains go into the samples they complete: writers see those) */
	if (r->record_fn && type != PR_SAMPLE && type != PR_CALLCHAIN_DEFERRED && type != PR_UW_KUNW &&
	    type < PR_HEADER_ATTR) {
		int e = r->record_fn(r->record_ctx, rec, len);
		if (e)
			return e;
	}
	switch (type) {
	case PR_SAMPLE:
		r->cur_rec = rec;
		r->cur_len = len;
		return sample(r, aidx, rec, len, cut, ord, 0);
	case PR_UW_KUNW:
		return kunw_sample(r, aidx, rec, len);
	case PR_MMAP:
	case PR_MMAP2: {
		struct perf_sideband sb;
		const char *what;
		if (perf_sideband_decode(a, rec, len, bid_flag, &sb, &what)) {
			r->t->st.malformed_mmap++;
			return 0;
		}
		int e = tracker_map_event(r->t, sb.pid, misc & PM_CPUMODE_MASK, sb.addr, sb.len, sb.pgoff, sb.prot, sb.maj,
					  sb.min, sb.ino, sb.ino_gen, sb.bid, sb.blen, sb.str, sb.str_len);
		return e == -ENOMEM ? e : 0;
	}
	case PR_COMM: {
		struct perf_sideband sb;
		const char *what;
		if (perf_sideband_decode(a, rec, len, false, &sb, &what)) {
			r->t->st.malformed_comm++;
			return 0;
		}
		if (tracker_set_comm(r->t, sb.pid, sb.tid, sb.str, sb.str_len, sb.exec, time) == -ENOMEM)
			return -ENOMEM;
		/* (an exec: another program, whose stacks the earlier ones say nothing of) */
		return sb.exec ? reader_stitch_forget(r, (uint32_t)sb.pid, (uint32_t)sb.tid) : 0;
	}
	case PR_FORK:
	case PR_EXIT: {
		struct perf_sideband sb;
		const char *what;
		if (perf_sideband_decode(a, rec, len, false, &sb, &what)) {
			if (type == PR_FORK)
				r->t->st.malformed_fork++;
			else
				r->t->st.malformed_exit++;
			return 0;
		}
		if (type == PR_FORK) {
			if (tracker_fork(r->t, sb.pid, sb.ppid, sb.tid, sb.ptid, time ? time : sb.time) == -ENOMEM)
				return -ENOMEM;
			/* (a thread number reused, its old thread's EXIT lost) */
			return reader_stitch_forget(r, (uint32_t)sb.pid, (uint32_t)sb.tid);
		}
		tracker_exit(r->t, sb.pid, sb.tid, time ? time : sb.time);
		return reader_stitch_forget(r, (uint32_t)sb.pid, (uint32_t)sb.tid);
	}
	/* One loss is reported twice: the kernel writes LOST when a ring overflows, and perf
	 * record (6.0+) writes LOST_SAMPLES at the end from each event's lost count (read with
	 * PERF_FORMAT_LOST). perf report's "Total Lost Samples" is the sum of LOST_SAMPLES; the
	 * LOST records count as the loss only in a recording without LOST_SAMPLES. Samples a BPF
	 * filter dropped (PERF_RECORD_MISC_LOST_SAMPLES_BPF, perf 6.3+) were not lost: perf since
	 * then counts them apart. */
	case PR_LOST:
		base_cur_u64(&c);
		r->lost_in_lost += base_cur_u64(&c);
		r->st.lost_records++;
		r->st.lost_events = r->any_lost_samples ? r->lost_in_samples : r->lost_in_lost;
		return 0;
	case PR_LOST_SAMPLES:
		if (misc & PM_LOST_SAMPLES_BPF)
			return 0;
		r->lost_in_samples += base_cur_u64(&c);
		r->any_lost_samples = true;
		r->st.lost_events = r->lost_in_samples;
		return 0;
	case PR_CALLCHAIN_DEFERRED: {
		int err = reader_deferred_record(&r->def, aidx, rec, len, time);
		deferred_counts(r);
		return err;
	}
	default:
		return 0;
	}
}

static void progress(struct uw_reader *r, uint64_t off)
{
	if (r->o.on_progress && off - r->last_progress >= (1u << 20)) {
		r->last_progress = off;
		r->o.on_progress(r->o.ctx, off, r->total_bytes);
	}
}

/* Delivers queued records with time <= limit (all of them when all is set; at least the first
 * at_least), oldest first; at the end (all), the samples the deferred and stitching stages hold. */
static int reader_flush(struct uw_reader *r, uint64_t limit, bool all, size_t at_least)
{
	size_t n = reader_order_ready(&r->q, limit, all, at_least);
	int err = 0;
	for (size_t i = 0; i < n; i++) {
		const struct qent *e = &r->q.q[i];
		if (!err)
			err = reader_deliver(r, e->aidx, e->rec, e->len, e->time, &e->cut, e->ord);
		if (e->chunk)
			reader_chunk_release(&r->in, e->chunk);
	}
	reader_order_drop(&r->q, n);
	/* the end: samples still waiting for a deferred callchain go without it */
	if (all && !err) {
		err = reader_deferred_flush(&r->def);
		deferred_counts(r);
	}
	/* and those held for a stitching decision as they are */
	if (all && !err)
		err = reader_stitch_flush(r);
	return err;
}

/* A record into the time-order queue, or delivered at once when late. */
static int reader_enqueue(struct uw_reader *r, unsigned aidx, const uint8_t *rec, uint32_t len, uint64_t time)
{
	const struct cut *cut = r->inner ? &(struct cut){ 0 } : &r->cur->cur_cut;
	if (reader_order_late(&r->q, time)) {
		r->st.late_records++;
		return reader_deliver(r, aidx, rec, len, time, cut, r->cur_ord);
	}
	struct qent e = { .time = time, .ord = r->cur_ord, .rec = rec, .len = len, .cut = *cut,
			  .chunk = r->inner ? NULL : r->cur->cur_chunk, .aidx = aidx };
	int over = reader_order_push(&r->q, &e, r->o.max_queue_bytes);
	if (over < 0)
		return over;
	if (e.chunk)
		reader_chunk_hold(e.chunk);
	/* over the memory cap: deliver the older half, as perf does */
	return over ? reader_flush(r, 0, false, r->q.qlen / 2) : 0;
}

/* A record the reader does not use: counted by type (unknown past the types it knows). */
static void count_unused(struct uw_reader *r, uint32_t type)
{
	if (type >= PR_TYPES) {
		r->st.unknown_records++;
	} else {
		r->st.skipped_records++;
		r->skipped_by_type[type]++;
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
			  ? reader_err(r, -UW_EFORMAT, r->decomp_off, "a compressed record inside a compressed record")
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
			return reader_err(r, -UW_EFORMAT, off, "COMPRESSED2 record too short");
		memcpy(&dsz, rec + 8, 8);
		if (dsz > len - 16u)
			return reader_err(r, -UW_EFORMAT, off, "COMPRESSED2 data size runs past the record");
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
		return reader_err(r, err, off, what);
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
	if (type != 2 || !base_map_has(&r->at.ids, id))
		return;
	unsigned idx;
	reader_attr_by_id(&r->at, id, &idx);
	size_t l = strnlen((const char *)rec + 24, len - 24);
	if (l)
		r->at.attrs[idx].name = session_intern(r->s, (const char *)rec + 24, l);
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
		progress(r, r->cur == &r->in ? off : r->in.end + r->parts_read);
	if (type >= 64) {
		switch (type) {
		case PR_FINISHED_ROUND:
			err = reader_flush(r, r->q.round_limit, false, 0);
			r->q.round_limit = r->q.max_time;
			break;
		case PR_HEADER_ATTR: {
			if (len < 8 + PERF_ATTR_SIZE_VER0) {
				err = reader_err(r, -UW_EFORMAT, off, "HEADER_ATTR record too short");
				break;
			}
			uint32_t asz;
			memcpy(&asz, rec + 12, 4);
			if (asz < PERF_ATTR_SIZE_VER0 || asz > len - 8)
				asz = len - 8 < 128 ? len - 8 : 128;
			size_t nids = (len - 8 - asz) / 8;
			err = reader_add_attr(r, rec + 8, asz, rec + 8 + asz, nids, off);
			break;
		}
		case PR_HEADER_BUILD_ID:
			reader_build_ids(&r->hdr, rec, len);
			break;
		case PR_HEADER_FEATURE: /* pipe mode: u64 feature id, then the section's bytes */
			if (len >= 16) {
				uint64_t feat;
				memcpy(&feat, rec + 8, 8);
				/* (an empty one is the end marker) */
				if (feat < FEAT_LAST && feat != FEAT_BUILD_ID && len > 16) {
					reader_keep_feature(&r->hdr.ft, (unsigned)feat, rec + 16, len - 16, true);
					reader_feature(&r->hdr, &r->at, (unsigned)feat, rec + 16, len - 16);
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
			err = reader_input_err(r, reader_skip_payload(r->cur, ((uint64_t)sz + 7) & ~7ull, off));
			break;
		}
		case PR_AUXTRACE: {
			uint64_t sz = 0;
			if (len >= 16)
				memcpy(&sz, rec + 8, 8);
			r->st.skipped_records++;
			r->skipped_by_type[type]++;
			err = reader_input_err(r, reader_skip_payload(r->cur, sz, off));
			break;
		}
		case PR_COMPRESSED:
		case PR_COMPRESSED2:
			err = decompress(r, type, rec, len, off);
			break;
		case PR_FINISHED_INIT:
			break;
		default:
			count_unused(r, type);
			break;
		}
	} else if (!r->at.nattrs) {
		err = reader_err(r, -UW_ENOATTR, off, "event record before any event attribute");
	} else {
		switch (type) {
		case PR_SAMPLE:
		case PR_UW_KUNW:
			r->cur_ord = r->sample_ord++;
			break;
		case PR_MMAP: case PR_MMAP2: case PR_COMM: case PR_FORK: case PR_EXIT: case PR_LOST:
		case PR_LOST_SAMPLES: case PR_THROTTLE: case PR_UNTHROTTLE: case PR_CALLCHAIN_DEFERRED:
			break;
		default:
			count_unused(r, type);
			break;
		}
		/* its attribute, found once (by the input when it looked already) and carried */
		unsigned aidx;
		if (!r->inner && r->cur->cur_aidx >= 0 && (size_t)r->cur->cur_aidx < r->at.nattrs)
			aidx = (unsigned)r->cur->cur_aidx;
		else
			reader_attr_of(&r->at, rec, len, &aidx);
		bool has;
		uint64_t t = reader_record_time(&r->at.attrs[aidx], rec, len, &has);
		if (!has)
			t = r->q.max_time; /* no timestamp: keep it in file order */
		err = reader_enqueue(r, aidx, rec, len, t);
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
	if (!r || !st || st->sz < sizeof(size_t) || idx >= r->at.nattrs)
		return -EINVAL;
	size_t want = st->sz;
	memcpy(st, &r->evst[idx], UW_MIN(want, sizeof(*st)));
	if (want > sizeof(*st))
		memset((char *)st + sizeof(*st), 0, want - sizeof(*st));
	st->sz = want;
	return 0;
}

/* ---- records pushed one at a time (a live profiler's rings; uw_record) */

UW_API struct uw_reader *uw_reader_new(struct uw_session *s, const struct uw_reader_opts *opts)
{
	if (!s) {
		errno = EINVAL;
		return NULL;
	}
	struct uw_reader *r = calloc(1, sizeof(*r));
	if (!r) {
		errno = ENOMEM;
		return NULL;
	}
	int err = reader_init(r, s, opts, "<pushed>", true);
	if (err) {
		uw_reader_free(r);
		errno = -err;
		return NULL;
	}
	r->pushed = true;
	return r;
}

UW_API int uw_reader_add_event(struct uw_reader *r, const void *attr, size_t size, const uint64_t *ids, size_t nids,
                               const char *name)
{
	if (!r || !attr || (nids && !ids) || nids > ((size_t)1 << 20))
		return -EINVAL;
	int err = reader_add_attr(r, attr, size, (const uint8_t *)ids, nids, 0);
	if (!err && name)
		r->at.attrs[r->at.nattrs - 1].name = session_intern(r->s, name, strlen(name));
	return err;
}

UW_API int uw_reader_push(struct uw_reader *r, const void *rec, size_t len)
{
	if (!r || !rec)
		return -EINVAL;
	if (r->fatal)
		return r->fatal;
	uint16_t size = 0;
	if (len >= 8)
		memcpy(&size, (const uint8_t *)rec + 6, 2);
	if (len < 8 || size != len)
		return -UW_EFORMAT; /* (not fatal: the record is refused, nothing else) */
	int err = r->push_fn ? r->push_fn(r->push_ctx, rec, (uint32_t)len) : 0;
	if (!err)
		err = process_record(r, rec, (uint32_t)len, 0);
	if (err)
		r->fatal = err;
	return err;
}

UW_API int uw_reader_round(struct uw_reader *r)
{
	static const uint8_t fr[8] = { PR_FINISHED_ROUND, 0, 0, 0, 0, 0, 8, 0 };
	return uw_reader_push(r, fr, sizeof(fr));
}

UW_API int uw_reader_flush(struct uw_reader *r)
{
	if (!r)
		return -EINVAL;
	int err = r->fatal ? r->fatal : reader_flush(r, 0, true, 0);
	r->fatal = err;
	return err;
}

UW_API int uw_reader_wall_clock(const struct uw_reader *r, uint64_t time, uint64_t *wall)
{
	if (!r || !wall || !r->t->wall_known)
		return -ENOENT;
	*wall = time + (uint64_t)r->t->wall_offset;
	return 0;
}

UW_API struct uw_tracker *uw_reader_tracker(struct uw_reader *r)
{
	return r ? r->t : NULL;
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
	if (r->in.fd < 0)
		return -EINVAL; /* records are pushed to it */
	if (r->in.sparse && r->file_mode && !r->in.ra && r->in.end - r->in.pos >= (4u << 20) && (err = reader_ra_start(&r->in)))
		return err;
	while ((got = reader_input_err(r, reader_next(&r->in, &rec, &len, &off))) == 1) {
		if ((err = process_record(r, rec, len, off)))
			break;
	}
	if (got == -UW_ETRUNC && r->hdr.unfinished) {
		/* where the writer stopped: the end of what there is */
		base_log(&r->s->log, UW_LOG_WARN, "%s: %s", r->cur_name ? r->cur_name : r->path, base_errmsg(&r->s->log));
		r->st.records_cut = 1;
		got = 0;
	}
	if (got < 0 && !err)
		err = got;
	reader_ra_stop(&r->in);
	if (!err && r->nparts)
		err = run_parts(r);
	/* deliver what was read, even when the input ended badly */
	int ferr = (err == -UW_ECANCELED || err == -ENOMEM) ? 0 : reader_flush(r, 0, true, 0);
	if (!err)
		err = ferr;
	if (r->o.on_progress && r->in.seekable)
		r->o.on_progress(r->o.ctx, r->in.end, r->in.end);
	r->fatal = err ? err : 0;
	return err;
}
