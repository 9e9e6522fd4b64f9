/* SPDX-License-Identifier: MIT */
/*
 * perf.data writer, file mode and pipe mode (tools/perf/Documentation/perf.data-file-format.txt).
 *
 * File mode, as perf lays it out: the header at 0, the id arrays, the attributes, the data
 * section, then a table of {offset, size} per feature bit set followed by the features' bodies.
 * The header and attributes are written before the first record with a data size of 0, and
 * perf_writer_sync brings the size up to date, so a file whose writer was killed is readable to
 * its last sync (perf report and unwound read it); perf_writer_finish adds the features and the
 * final header.
 *
 * Pipe mode ("-": standard output): a 16-byte header, an ATTR record per event, a FEATURE record
 * per feature with the end marker, FINISHED_INIT, then the records as they come, and the
 * build-ids as BUILD_ID records at the end (their table cannot go first: the modules a stack
 * lands in are known only as samples are unwound).
 *
 * Features the writer makes itself: EVENT_DESC (from the attributes), BUILD_ID, SAMPLE_TIME
 * (from the samples noted) and FEAT_UW_STOPS, each sample's stop reason in runs (file mode
 * only: perf ignores a feature bit it does not know in a file, but fails on one in a pipe).
 * Any other feature is the caller's bytes (perf_writer_set_feature).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perf/perf.h"

struct wattr {
	uint8_t raw[PERF_ATTR_MAX];
	uint32_t size;
	const char *name;
	uint64_t *ids;
	size_t nids;
};

struct fbuf {
	uint8_t *p;
	size_t n, cap;
	bool bad;
};

struct stop_run_w {
	uint32_t count;
	uint8_t reason;
};

struct perf_writer {
	int fd;
	struct uw_output *out; /* the file, given its path when published (output.c) */
	bool pipe;
	bool begun;
	uint64_t data_off, data_size, synced_size;
	struct wattr *attrs;
	size_t nattrs;
	uint32_t attr_size;    /* the largest attribute's (all are written at it in file mode) */
	uint8_t *buf;          /* data written through a buffer */
	size_t blen;
	int err;
	uint64_t since_round;
	/* round markers held back while samples still to come are older than what perf would
	 * flush at the next one (perf_writer_round_gate) */
	uint64_t (*gate)(void *ctx, uint64_t *newest);
	void *gate_ctx;
	uint64_t round_max;      /* the newest time written at the last marker */
	bool any_round;
	struct fbuf feat[FEAT_LAST];
	bool has[FEAT_LAST];
	struct perf_writer_buildid *bids;
	size_t nbids, bidcap;
	uint64_t first_time, last_time;
	bool any_time;
	struct stop_run_w *stops;
	size_t nstops, stopcap;
	uint64_t nsamples;
	bool stops_bad;
	/* runs past STOPS_IN_MEMORY go to an unnamed file (a long system-wide recording whose
	 * stop reasons alternate would otherwise hold 8 bytes a sample until the end) */
	int spill_fd;
	uint64_t nspilled;
	char *dir;               /* the output's directory, for the spill file */
};

#define STOPS_IN_MEMORY 65536

#define WBUF (1u << 20)
#define NAME_ALIGN 64

/* ---- raw output */

static void write_all(struct perf_writer *w, const void *p, size_t n)
{
	const uint8_t *q = p;
	while (n && !w->err) {
		ssize_t k = write(w->fd, q, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			w->err = k < 0 ? -errno : -EIO;
			break;
		}
		q += k;
		n -= (size_t)k;
	}
}

static void wflush(struct perf_writer *w)
{
	write_all(w, w->buf, w->blen);
	w->blen = 0;
}

static void wput(struct perf_writer *w, const void *p, size_t n)
{
	if (w->err || !n) /* (an event without ids has none to copy: NULL) */
		return;
	if (n > WBUF - w->blen)
		wflush(w);
	if (n > WBUF) {
		write_all(w, p, n);
		return;
	}
	memcpy(w->buf + w->blen, p, n);
	w->blen += n;
}

/* ---- growable byte buffers for feature bodies */

static void fput(struct fbuf *f, const void *p, size_t n)
{
	if (f->bad || !n)
		return;
	if (n > f->cap - f->n) {
		size_t cap = f->cap ? f->cap : 256;
		while (cap - f->n < n)
			cap *= 2;
		uint8_t *np = realloc(f->p, cap);
		if (!np) {
			f->bad = true;
			return;
		}
		f->p = np;
		f->cap = cap;
	}
	memcpy(f->p + f->n, p, n);
	f->n += n;
}

static void fput_u32(struct fbuf *f, uint32_t v)
{
	fput(f, &v, 4);
}

static void fput_u64(struct fbuf *f, uint64_t v)
{
	fput(f, &v, 8);
}

/* perf_header_string: u32 length (padded to 64), then the string, NUL-padded */
static void fput_str(struct fbuf *f, const char *s)
{
	size_t len = strlen(s) + 1, padded = (len + NAME_ALIGN - 1) / NAME_ALIGN * NAME_ALIGN;
	static const uint8_t zeros[NAME_ALIGN];
	fput_u32(f, (uint32_t)padded);
	fput(f, s, len);
	fput(f, zeros, padded - len);
}

void perf_feat_u32(struct perf_feat *f, uint32_t v)
{
	fput((struct fbuf *)f, &v, 4);
}

void perf_feat_u64(struct perf_feat *f, uint64_t v)
{
	fput((struct fbuf *)f, &v, 8);
}

void perf_feat_str(struct perf_feat *f, const char *s)
{
	fput_str((struct fbuf *)f, s);
}

void perf_feat_bytes(struct perf_feat *f, const void *p, size_t n)
{
	fput((struct fbuf *)f, p, n);
}

/* ---- opening */

int perf_writer_open(const char *path, struct perf_writer **out)
{
	*out = NULL;
	struct perf_writer *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->buf = malloc(WBUF);
	if (!w->buf) {
		free(w);
		return -ENOMEM;
	}
	/* recordings are private (0600, as perf's); "-" is a pipe-mode stream on standard output */
	w->spill_fd = -1;
	const char *sl = strrchr(path, '/');
	w->dir = sl ? strndup(path, (size_t)(sl - path + (sl == path))) : strdup(".");
	/* written without a name until published: a recording that fails or is killed before
	 * leaves the path as it was */
	int err = base_output_open_recording(path, 0600, &w->out);
	if (err) {
		w->fd = -1;
		perf_writer_close(w);
		return err;
	}
	w->fd = base_output_fd(w->out);
	/* and to a FIFO or device (/dev/stdout, /dev/null): nothing can be written back there; nor
	 * to a file open already (-o /dev/stdout with '>> FILE', or not at its start) */
	struct stat st;
	bool open_file = fstat(w->fd, &st) == 0 && S_ISREG(st.st_mode) && base_output_in_place(w->out) &&
			 ((fcntl(w->fd, F_GETFL) & O_APPEND) || lseek(w->fd, 0, SEEK_CUR) != 0);
	w->pipe = strcmp(path, "-") == 0 || (fstat(w->fd, &st) == 0 && !S_ISREG(st.st_mode)) || open_file;
	*out = w;
	return 0;
}

int perf_writer_publish(struct perf_writer *w)
{
	if (!w->err && w->out)
		w->err = base_output_publish(w->out);
	return w->err;
}

bool perf_writer_is_pipe(const struct perf_writer *w)
{
	return w->pipe;
}

int perf_writer_add_attr(struct perf_writer *w, const uint8_t *raw, uint32_t size, const char *name,
                         const uint64_t *ids, size_t nids)
{
	if (w->begun)
		return -EINVAL; /* attributes first */
	if (size > PERF_ATTR_MAX || size < PERF_ATTR_SIZE_VER0 || w->nattrs >= 4096)
		return -EINVAL;
	struct wattr *na = realloc(w->attrs, (w->nattrs + 1) * sizeof(*na));
	if (!na)
		return -ENOMEM;
	w->attrs = na;
	struct wattr *a = &w->attrs[w->nattrs];
	memset(a, 0, sizeof(*a));
	memcpy(a->raw, raw, size);
	memcpy(a->raw + 4, &size, 4);
	a->size = size;
	a->name = name;
	if (nids) {
		a->ids = malloc(nids * sizeof(*ids));
		if (!a->ids)
			return -ENOMEM;
		memcpy(a->ids, ids, nids * sizeof(*ids));
		a->nids = nids;
	}
	w->nattrs++;
	w->attr_size = UW_MAX(w->attr_size, size);
	return 0;
}

struct perf_feat *perf_writer_feature(struct perf_writer *w, unsigned bit)
{
	if (bit >= FEAT_LAST || bit == FEAT_EVENT_DESC || bit == FEAT_BUILD_ID || bit == FEAT_UW_STOPS ||
	    (w->begun && w->pipe))
		return NULL;
	w->feat[bit].n = 0;
	w->feat[bit].bad = false;
	w->has[bit] = true;
	return (struct perf_feat *)&w->feat[bit];
}

int perf_writer_set_feature(struct perf_writer *w, unsigned bit, const void *p, size_t n)
{
	struct perf_feat *f = perf_writer_feature(w, bit);
	if (!f)
		return -EINVAL;
	perf_feat_bytes(f, p, n);
	return w->feat[bit].bad ? -ENOMEM : 0;
}

/* EVENT_DESC: u32 nr, u32 attr size, then per event the attribute, u32 nr of ids, the name as
 * a perf string, the ids. */
static void event_desc(struct perf_writer *w, struct fbuf *f)
{
	fput_u32(f, (uint32_t)w->nattrs);
	fput_u32(f, w->attr_size);
	for (size_t i = 0; i < w->nattrs; i++) {
		uint8_t a[PERF_ATTR_MAX] = { 0 };
		memcpy(a, w->attrs[i].raw, w->attrs[i].size);
		fput(f, a, w->attr_size);
		fput_u32(f, (uint32_t)w->attrs[i].nids);
		fput_str(f, w->attrs[i].name ? w->attrs[i].name : "");
		fput(f, w->attrs[i].ids, 8 * w->attrs[i].nids);
	}
}

static uint32_t rec_header(uint8_t *b, uint32_t type, uint16_t misc, size_t size)
{
	uint16_t sz = (uint16_t)size;
	memcpy(b, &type, 4);
	memcpy(b + 4, &misc, 2);
	memcpy(b + 6, &sz, 2);
	return (uint32_t)size;
}

/* Pipe mode: what perf writes before its records. */
static void begin_pipe(struct perf_writer *w)
{
	uint64_t hdr[2] = { PERF_MAGIC2, 16 };
	wput(w, hdr, sizeof(hdr));
	for (size_t i = 0; i < w->nattrs; i++) {
		uint8_t b[8 + PERF_ATTR_MAX];
		size_t n = 8 + w->attrs[i].size + 8 * w->attrs[i].nids;
		if (n > 65535)
			n = 65535 & ~(size_t)7; /* ids past what a record holds are dropped */
		memset(b, 0, sizeof(b));
		rec_header(b, PR_HEADER_ATTR, 0, n);
		memcpy(b + 8, w->attrs[i].raw, w->attrs[i].size);
		wput(w, b, 8 + w->attrs[i].size);
		wput(w, w->attrs[i].ids, n - 8 - w->attrs[i].size);
	}
	struct fbuf ed = { 0 };
	event_desc(w, &ed);
	for (unsigned bit = 1; bit < FEAT_LAST; bit++) {
		struct fbuf *f = bit == FEAT_EVENT_DESC ? &ed : &w->feat[bit];
		if ((bit != FEAT_EVENT_DESC && !w->has[bit]) || f->bad || f->n > 65535 - 16 ||
		    bit == FEAT_SAMPLE_TIME)
			continue;
		uint8_t b[16] = { 0 };
		uint64_t id = bit;
		rec_header(b, PR_HEADER_FEATURE, 0, 16 + ((f->n + 7) & ~(size_t)7));
		memcpy(b + 8, &id, 8);
		wput(w, b, 16);
		wput(w, f->p, f->n);
		static const uint8_t zeros[8];
		wput(w, zeros, ((f->n + 7) & ~(size_t)7) - f->n);
	}
	free(ed.p);
	uint8_t b[16] = { 0 };
	uint64_t last = FEAT_PERF_LAST;
	rec_header(b, PR_HEADER_FEATURE, 0, 16);
	memcpy(b + 8, &last, 8);
	wput(w, b, 16);
	rec_header(b, PR_FINISHED_INIT, 0, 8);
	wput(w, b, 8);
}

/* File mode: the header, the id arrays and the attributes, then the data section starts. */
static void begin_file(struct perf_writer *w)
{
	uint64_t off = 104;
	for (size_t i = 0; i < w->nattrs; i++)
		off += 8 * w->attrs[i].nids;
	off += (uint64_t)w->nattrs * (w->attr_size + 16);
	w->data_off = (off + 7) & ~7ull;
	uint64_t hdr[13] = { PERF_MAGIC2, 104, w->attr_size + 16, 0, (uint64_t)w->nattrs * (w->attr_size + 16),
			     w->data_off, 0, 0, 0, 0, 0, 0, 0 };
	uint64_t ids_at = 104;
	hdr[3] = ids_at;
	for (size_t i = 0; i < w->nattrs; i++)
		hdr[3] += 8 * w->attrs[i].nids;
	wput(w, hdr, sizeof(hdr));
	for (size_t i = 0; i < w->nattrs; i++)
		wput(w, w->attrs[i].ids, 8 * w->attrs[i].nids);
	for (size_t i = 0; i < w->nattrs; i++) {
		uint8_t a[PERF_ATTR_MAX] = { 0 };
		memcpy(a, w->attrs[i].raw, w->attrs[i].size);
		memcpy(a + 4, &w->attr_size, 4);
		wput(w, a, w->attr_size);
		uint64_t sec[2] = { ids_at, 8 * w->attrs[i].nids };
		wput(w, sec, 16);
		ids_at += 8 * w->attrs[i].nids;
	}
	static const uint8_t zeros[8];
	wput(w, zeros, w->data_off - off);
}

int perf_writer_begin(struct perf_writer *w)
{
	if (w->begun)
		return w->err;
	w->begun = true;
	if (w->pipe)
		begin_pipe(w);
	else
		begin_file(w);
	wflush(w);
	return w->err;
}

void perf_writer_round_gate(struct perf_writer *w, uint64_t (*oldest)(void *ctx, uint64_t *newest), void *ctx)
{
	w->gate = oldest;
	w->gate_ctx = ctx;
}

/* May a marker go now? Then the newest time written, for the next one's test. */
static bool round_ok(struct perf_writer *w, uint64_t *newest)
{
	*newest = w->any_time ? w->last_time : 0;
	if (!w->gate)
		return true;
	uint64_t n = 0, oldest = w->gate(w->gate_ctx, &n);
	if (n > *newest)
		*newest = n;
	return !w->any_round || oldest > w->round_max;
}

int perf_writer_record(struct perf_writer *w, const void *rec, size_t len)
{
	if (!w->begun && perf_writer_begin(w))
		return w->err;
	wput(w, rec, len);
	w->data_size += len;
	/* a round marker now and then, so readers can deliver in time order without holding
	 * the whole file (records come in time order, but for samples a reader held: perf, at
	 * a marker, delivers what is no newer than the newest event before the previous marker,
	 * so the marker waits until the oldest sample still to come is newer than that) */
	uint64_t newest;
	if (++w->since_round >= 8192 && w->since_round % 256 == 0 && round_ok(w, &newest)) {
		w->since_round = 0;
		uint8_t fr[8];
		rec_header(fr, PR_FINISHED_ROUND, 0, 8);
		wput(w, fr, 8);
		w->data_size += 8;
		w->round_max = newest;
		w->any_round = true;
	}
	return w->err;
}

void perf_writer_sample(struct perf_writer *w, bool has_time, uint64_t time, uint8_t reason)
{
	if (has_time) {
		if (!w->any_time || time < w->first_time)
			w->first_time = time;
		if (!w->any_time || time > w->last_time)
			w->last_time = time;
		w->any_time = true;
	}
	w->nsamples++;
	if (w->stops_bad)
		return;
	if (w->nstops && w->stops[w->nstops - 1].reason == reason && w->stops[w->nstops - 1].count < UINT32_MAX) {
		w->stops[w->nstops - 1].count++;
		return;
	}
	if (w->nstops == STOPS_IN_MEMORY) {
		/* spill the runs so far: a file without a name, beside the output (else in /tmp) */
		if (w->spill_fd < 0 && (w->spill_fd = open(w->dir ? w->dir : ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600)) < 0)
			w->spill_fd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
		size_t n = w->nstops * sizeof(*w->stops);
		if (w->spill_fd < 0 || pwrite(w->spill_fd, w->stops, n, (off_t)(w->nspilled * sizeof(*w->stops))) != (ssize_t)n) {
			w->stops_bad = true;
			return;
		}
		w->nspilled += w->nstops;
		w->nstops = 0;
	}
	if (w->nstops == w->stopcap) {
		size_t cap = w->stopcap ? 2 * w->stopcap : 256;
		struct stop_run_w *nv = realloc(w->stops, cap * sizeof(*nv));
		if (!nv) {
			w->stops_bad = true; /* then not written: readers judge the callchains */
			return;
		}
		w->stops = nv;
		w->stopcap = cap;
	}
	w->stops[w->nstops++] = (struct stop_run_w){ 1, reason };
}

int perf_writer_add_buildid(struct perf_writer *w, const char *path, const uint8_t *id, size_t len, bool kernel)
{
	if (!len || len > 20)
		return 0;
	for (size_t i = 0; i < w->nbids; i++)
		if (strcmp(w->bids[i].path, path) == 0)
			return 0;
	if (w->nbids == w->bidcap) {
		size_t cap = w->bidcap ? 2 * w->bidcap : 64;
		struct perf_writer_buildid *nv = realloc(w->bids, cap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		w->bids = nv;
		w->bidcap = cap;
	}
	struct perf_writer_buildid *b = &w->bids[w->nbids];
	memset(b, 0, sizeof(*b));
	b->path = strdup(path);
	if (!b->path)
		return -ENOMEM;
	memcpy(b->id, id, len);
	b->len = len;
	b->kernel = kernel;
	w->nbids++;
	return 0;
}

/* A HEADER_BUILD_ID entry (the same in the feature and as a pipe-mode record): header (misc:
 * cpumode and PERF_RECORD_MISC_BUILD_ID_SIZE), pid (-1: the host), 20 bytes of id, its size, 3 bytes of
 * padding, the path, padded to 8. */
static void buildid_entry(struct fbuf *f, const struct perf_writer_buildid *b)
{
	size_t nl = strlen(b->path) + 1, rec = (8 + 4 + 24 + nl + 7) & ~(size_t)7;
	if (rec > 65535)
		return;
	uint8_t hdr[8 + 4 + 24] = { 0 };
	/* the machine: the host's (perf's HOST_KERNEL_ID) for every entry; perf report puts an entry
	 * of pid 0 on a guest machine of that number, and then reads the build-id of the file at
	 * the path instead, so a file that changed since the recording would be taken for it */
	int32_t pid = -1;
	rec_header(hdr, PR_HEADER_BUILD_ID, (uint16_t)((b->kernel ? PM_KERNEL : PM_USER) | PM_BUILD_ID_SIZE), rec);
	memcpy(hdr + 8, &pid, 4);
	memcpy(hdr + 12, b->id, UW_MIN(b->len, (size_t)20));
	hdr[12 + 20] = (uint8_t)UW_MIN(b->len, (size_t)20);
	static const uint8_t zeros[8];
	fput(f, hdr, sizeof(hdr));
	fput(f, b->path, nl);
	fput(f, zeros, rec - sizeof(hdr) - nl);
}

int perf_writer_sync(struct perf_writer *w)
{
	wflush(w);
	if (w->err || w->pipe || !w->begun || w->synced_size == w->data_size)
		return w->err;
	/* the data section's size, at byte 48 of the header */
	if (pwrite(w->fd, &w->data_size, 8, 48) != 8)
		w->err = errno ? -errno : -EIO;
	w->synced_size = w->data_size;
	return w->err;
}

/* The stop reasons' runs, {u32 count, u8 reason, 3 bytes 0} each: those spilled to the unnamed
 * file, then those in memory, a chunk at a time (memory stays bounded to the end). */
static void write_stops(struct perf_writer *w)
{
	struct stop_run_w chunk[1024];
	uint64_t total = w->nspilled + w->nstops;
	for (uint64_t done = 0; done < total && !w->err;) {
		size_t k;
		if (done < w->nspilled) {
			k = (size_t)UW_MIN(w->nspilled - done, (uint64_t)1024);
			if (pread(w->spill_fd, chunk, k * sizeof(*chunk), (off_t)(done * sizeof(*chunk))) !=
			    (ssize_t)(k * sizeof(*chunk))) {
				w->err = -EIO;
				break;
			}
		} else {
			k = (size_t)UW_MIN(total - done, (uint64_t)1024);
			memcpy(chunk, w->stops + (done - w->nspilled), k * sizeof(*chunk));
		}
		for (size_t i = 0; i < k; i++) {
			uint8_t run[8] = { 0 };
			memcpy(run, &chunk[i].count, 4);
			run[4] = chunk[i].reason;
			wput(w, run, 8);
		}
		done += k;
	}
}

static int finish_pipe(struct perf_writer *w)
{
	struct fbuf f = { 0 };
	for (size_t i = 0; i < w->nbids; i++)
		buildid_entry(&f, &w->bids[i]);
	if (f.bad)
		w->err = -ENOMEM;
	wput(w, f.p, f.n);
	free(f.p);
	uint8_t fr[8];
	rec_header(fr, PR_FINISHED_ROUND, 0, 8);
	wput(w, fr, 8);
	wflush(w);
	return w->err;
}

int perf_writer_finish(struct perf_writer *w)
{
	if (!w->begun && perf_writer_begin(w))
		return w->err;
	if (w->pipe)
		return finish_pipe(w);
	wflush(w);
	if (w->err)
		return w->err;
	/* the features the writer makes */
	struct fbuf *bid = &w->feat[FEAT_BUILD_ID];
	bid->n = 0;
	for (size_t i = 0; i < w->nbids; i++)
		buildid_entry(bid, &w->bids[i]);
	w->has[FEAT_BUILD_ID] = w->nbids != 0;
	w->feat[FEAT_EVENT_DESC].n = 0;
	if (w->nattrs) {
		event_desc(w, &w->feat[FEAT_EVENT_DESC]);
		w->has[FEAT_EVENT_DESC] = true;
	}
	if (w->any_time) {
		struct fbuf *st = &w->feat[FEAT_SAMPLE_TIME];
		st->n = 0;
		fput_u64(st, w->first_time);
		fput_u64(st, w->last_time);
		w->has[FEAT_SAMPLE_TIME] = true;
	}
	/* the stop reasons: their header here, the runs streamed below (write_stops) */
	uint64_t nruns = w->nspilled + w->nstops;
	if (w->nsamples && !w->stops_bad) {
		struct fbuf *sr = &w->feat[FEAT_UW_STOPS];
		sr->n = 0;
		fput_u32(sr, 1);
		fput_u32(sr, 0);
		fput_u64(sr, w->nsamples);
		fput_u64(sr, nruns);
		w->has[FEAT_UW_STOPS] = true;
	}
	/* the table of {offset, size} after the data, then the bodies */
	uint64_t feat[4] = { 0 };
	size_t nfeat = 0;
	for (unsigned i = 1; i < FEAT_LAST; i++) {
		if (w->has[i] && !w->feat[i].bad) {
			feat[i / 64] |= 1ull << (i % 64);
			nfeat++;
		}
	}
	uint64_t at = w->data_off + w->data_size + 16 * nfeat;
	for (unsigned i = 1; i < FEAT_LAST; i++) {
		if (!(feat[i / 64] & (1ull << (i % 64))))
			continue;
		uint64_t n = w->feat[i].n + (i == FEAT_UW_STOPS ? 8 * nruns : 0);
		uint64_t sec[2] = { at, n };
		wput(w, sec, 16);
		at += n;
	}
	for (unsigned i = 1; i < FEAT_LAST; i++) {
		if (feat[i / 64] & (1ull << (i % 64)))
			wput(w, w->feat[i].p, w->feat[i].n);
		if (i == FEAT_UW_STOPS && (feat[i / 64] & (1ull << (i % 64))))
			write_stops(w);
	}
	wflush(w);
	/* the data size and the feature bits: the file is whole */
	if (!w->err && pwrite(w->fd, &w->data_size, 8, 48) != 8)
		w->err = errno ? -errno : -EIO;
	if (!w->err && pwrite(w->fd, feat, sizeof(feat), 72) != (ssize_t)sizeof(feat))
		w->err = errno ? -errno : -EIO;
	/* complete: at its path now */
	return perf_writer_publish(w);
}

void perf_writer_close(struct perf_writer *w)
{
	if (!w)
		return;
	base_output_discard(w->out); /* (a file published stays) */
	if (w->spill_fd >= 0)
		close(w->spill_fd);
	free(w->dir);
	for (size_t i = 0; i < w->nattrs; i++)
		free(w->attrs[i].ids);
	for (size_t i = 0; i < w->nbids; i++)
		free((void *)w->bids[i].path);
	for (unsigned i = 0; i < FEAT_LAST; i++)
		free(w->feat[i].p);
	free(w->bids);
	free(w->stops);
	free(w->attrs);
	free(w->buf);
	free(w);
}
