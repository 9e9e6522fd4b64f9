/* SPDX-License-Identifier: MIT */
/*
 * A recording's description of itself: the file header and the feature sections (build-ids,
 * event names, host, clock, the stop reasons unwound writes). The stage's state is struct
 * reader_header; it adds the attributes to the table it is given (reader_attrs.c), reads the
 * file through the input stage, and keeps an error's offset and reason for the reader to say.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "perf/read/reader_header.h"

/* ---- feature sections (file mode) */

/* An error at a byte offset of the file: what and where kept for the reader to say; err returned. */
static int hdr_err(struct reader_header *h, int err, uint64_t off, const char *what)
{
	h->err_off = off;
	h->err_what = what;
	return err;
}

void reader_build_ids(struct reader_header *h, const uint8_t *p, uint64_t size)
{
	size_t off = 0;
	struct perf_bid_entry e;
	while (perf_bid_next(p, (size_t)size, &off, &e))
		tracker_note_build_id(h->t, e.path, e.id, e.len);
}

static void parse_event_desc(struct reader_header *h, struct reader_attrs *at, const uint8_t *p, uint64_t size)
{
	struct base_cursor c = base_cursor(p, size);
	uint32_t nr = base_cur_u32(&c), asz = base_cur_u32(&c);
	if (c.bad || asz < PERF_ATTR_SIZE_VER0)
		return;
	for (uint32_t i = 0; i < nr && i < at->nattrs; i++) {
		base_cur_skip(&c, asz);
		uint32_t nids = base_cur_u32(&c);
		uint32_t slen = base_cur_u32(&c);
		if (c.bad || slen > base_cur_left(&c))
			return;
		const char *nm = (const char *)c.p;
		size_t l = strnlen(nm, slen);
		c.p += slen;
		if (l)
			at->attrs[i].name = session_intern(h->s, nm, l);
		if (nids > base_cur_left(&c) / 8)
			return;
		base_cur_skip(&c, (size_t)nids * 8);
	}
}

/* A perf header string: u32 length (padded), then the bytes, NUL-terminated within it. */
static const char *feat_string(struct reader_header *h, struct base_cursor *c)
{
	uint32_t len = base_cur_u32(c);
	if (c->bad || len > base_cur_left(c)) {
		c->bad = true;
		return NULL;
	}
	const char *p = (const char *)c->p;
	c->p += len;
	return session_intern(h->s, p, strnlen(p, len));
}

/* FEAT_UW_STOPS (perf_writer.c): u32 version (1), u32 0, u64 samples, u64 runs, then the runs
 * as {u32 count, u8 reason, 3 bytes 0}, in the order the samples lie in the data section. */
/* FEAT_UW_STOPS into ft's runs. @return false when malformed (nothing kept). */
static bool parse_stops(struct reader_features *ft, const uint8_t *p, uint64_t size)
{
	struct base_cursor c = base_cursor(p, size);
	uint32_t version = base_cur_u32(&c);
	base_cur_u32(&c);
	uint64_t nsamples = base_cur_u64(&c), nruns = base_cur_u64(&c);
	if (c.bad || version != 1 || nruns > base_cur_left(&c) / 8 || ft->stops) {
		return false;
	}
	struct stop_run *v = nruns ? malloc(nruns * sizeof(*v)) : NULL;
	if (nruns && !v)
		return true; /* (no memory: the reasons are found again) */
	uint64_t first = 0;
	for (uint64_t i = 0; i < nruns; i++) {
		uint32_t count = base_cur_u32(&c);
		uint8_t reason = base_cur_u8(&c);
		base_cur_skip(&c, 3);
		if (!count || reason >= UW_STOP__COUNT) {
			free(v);
			return false;
		}
		v[i] = (struct stop_run){ first, count, reason };
		first += count;
	}
	if (first != nsamples) {
		free(v);
		return false;
	}
	ft->stops = v;
	ft->nstops = (size_t)nruns;
	return true;
}

/* The stop reason the file states for the sample of ordinal ord; -1 when it states none. */
int reader_stated_stop(const struct reader_features *ft, uint64_t ord)
{
	size_t k = base_upper_bound(ft->stops, ft->nstops, sizeof(*ft->stops), offsetof(struct stop_run, first), ord);
	if (!k)
		return -1;
	const struct stop_run *run = &ft->stops[k - 1];
	return ord - run->first < run->count ? run->reason : -1;
}

/* Keeps a feature section's bytes for writers (a copy unless they lie in the mapping). */
void reader_keep_feature(struct reader_features *ft, unsigned bit, const uint8_t *p, size_t n, bool copy)
{
	struct feat_sec *f = &ft->sec[bit];
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
	*f = (struct feat_sec){ p, n, true };
}

static void features_free(struct reader_features *ft)
{
	for (unsigned i = 0; i < FEAT_LAST; i++)
		if (ft->sec[i].owned)
			free((void *)ft->sec[i].p);
	free(ft->stops);
	memset(ft, 0, sizeof(*ft));
}

void reader_feature(struct reader_header *h, struct reader_attrs *at, unsigned feat, const uint8_t *p, uint64_t size)
{
	struct base_cursor c = base_cursor(p, size);
	char buf[4096];
	switch (feat) {
	case FEAT_UW_STOPS:
		if (!parse_stops(&h->ft, p, size))
			base_log(&h->s->log, UW_LOG_WARN, "%s: the section of stop reasons is malformed: ignored", h->path);
		break;
	case FEAT_CLOCK_DATA: { /* u32 version, u32 clockid, u64 wall ns, u64 clockid ns */
		uint32_t version = base_cur_u32(&c), clockid = base_cur_u32(&c);
		uint64_t tod = base_cur_u64(&c), cl = base_cur_u64(&c);
		if (!c.bad && version >= 1 && at->nattrs && (at->attrs[0].flags & PA_USE_CLOCKID) &&
		    (uint32_t)at->attrs[0].clockid == clockid) {
			h->t->wall_offset = (int64_t)(tod - cl);
			h->t->wall_known = true;
			h->wall_exact = true;
		}
		break;
	}
	case FEAT_SAMPLE_TIME: /* u64 first, u64 last */
		base_cur_u64(&c);
		h->last_sample_time = base_cur_u64(&c);
		break;
	case FEAT_BUILD_ID:
		reader_build_ids(h, p, size);
		break;
	case FEAT_EVENT_DESC:
		parse_event_desc(h, at, p, size);
		break;
	case FEAT_HOSTNAME: h->info[UW_INFO_HOSTNAME] = feat_string(h, &c); break;
	case FEAT_OSRELEASE:
		h->info[UW_INFO_OSRELEASE] = feat_string(h, &c);
		tracker_note_kernel_release(h->t, h->info[UW_INFO_OSRELEASE]); /* its kernel's identity */
		break;
	case FEAT_VERSION: h->info[UW_INFO_PERF_VERSION] = feat_string(h, &c); break;
	case FEAT_ARCH: h->info[UW_INFO_ARCH] = feat_string(h, &c); break;
	case FEAT_NRCPUS: {
		uint32_t avail = base_cur_u32(&c), online = base_cur_u32(&c);
		if (!c.bad) {
			int n = snprintf(buf, sizeof(buf), "%u/%u", online, avail);
			h->info[UW_INFO_NRCPUS] = session_intern(h->s, buf, (size_t)n);
		}
		break;
	}
	case FEAT_CMDLINE: {
		uint32_t nr = base_cur_u32(&c);
		size_t n = 0;
		for (uint32_t i = 0; i < nr && i < 4096 && !c.bad; i++) {
			const char *a = feat_string(h, &c);
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
			h->info[UW_INFO_CMDLINE] = session_intern(h->s, buf, n);
		break;
	}
	default:
		break;
	}
}

/* A section of the file read whole into a new buffer (bounded by the file's size). */
static int read_section(struct reader_input *in, uint64_t off, uint64_t size, uint8_t **out)
{
	*out = malloc(size ? (size_t)size : 1);
	if (!*out)
		return -ENOMEM;
	int err = reader_pread(in, *out, (size_t)size, off);
	if (err) {
		free(*out);
		*out = NULL;
	}
	return err;
}

int reader_file_header(struct reader_header *h, struct reader_input *in, struct reader_attrs *at)
{
	uint64_t fsize = in->file_size;
	uint8_t hdr[104] = { 0 };
	int err = reader_pread(in, hdr, (size_t)UW_MIN(fsize, (uint64_t)sizeof(hdr)), 0);
	if (err)
		return err == -UW_ETRUNC ? hdr_err(h, err, 0, "the file ends in its header") : err;
	struct base_cursor c = base_cursor(hdr, (size_t)UW_MIN(fsize, (uint64_t)sizeof(hdr)));
	base_cur_u64(&c); /* magic */
	uint64_t hsize = base_cur_u64(&c), attr_size = base_cur_u64(&c);
	uint64_t attrs_off = base_cur_u64(&c), attrs_size = base_cur_u64(&c);
	uint64_t data_off = base_cur_u64(&c), data_size = base_cur_u64(&c);
	base_cur_u64(&c);
	base_cur_u64(&c); /* event_types (unused since 2012) */
	uint64_t feat[4];
	for (int i = 0; i < 4; i++)
		feat[i] = base_cur_u64(&c);
	/* the first format ended the header before the feature bitmap (72 bytes) */
	if (hsize == 72 && fsize >= 72)
		memset(feat, 0, sizeof(feat));
	else if (c.bad)
		return hdr_err(h, -UW_ETRUNC, 0, "file header truncated (104 bytes expected)");
	else if (hsize < 104 || hsize > fsize)
		return hdr_err(h, -UW_EFORMAT, 8, "bad header size");
	if (attr_size < PERF_ATTR_SIZE_VER0 + 16 || attr_size > 4096)
		return hdr_err(h, -UW_EFORMAT, 16, "bad attribute entry size");
	if (attrs_off > fsize || attrs_size > fsize - attrs_off)
		return hdr_err(h, -UW_ETRUNC, 24, "attribute section lies past the end of the file");
	if (data_off > fsize)
		return hdr_err(h, -UW_ETRUNC, 40, "data section lies past the end of the file");
	uint64_t nattr = attrs_size / attr_size;
	if (nattr == 0)
		return hdr_err(h, -UW_EFORMAT, 24, "no event attributes");
	uint8_t *attrs;
	if ((err = read_section(in, attrs_off, nattr * attr_size, &attrs)))
		return err == -UW_ETRUNC ? hdr_err(h, err, attrs_off, "the file ends in its attribute section") : err;
	for (uint64_t i = 0; i < nattr && !err; i++) {
		const uint8_t *e = attrs + i * attr_size;
		uint64_t ids_off, ids_size;
		memcpy(&ids_off, e + attr_size - 16, 8);
		memcpy(&ids_size, e + attr_size - 8, 8);
		if (ids_off > fsize || ids_size > fsize - ids_off) {
			err = hdr_err(h, -UW_ETRUNC, attrs_off + i * attr_size, "event id list lies past the end of the file");
			break;
		}
		uint8_t *ids;
		if ((err = read_section(in, ids_off, ids_size / 8 * 8, &ids))) {
			if (err == -UW_ETRUNC)
				err = hdr_err(h, err, ids_off, "the file ends in an event id list");
			break;
		}
		const char *what = NULL;
		err = reader_attrs_add(at, e, attr_size - 16, ids, ids_size / 8, &what);
		free(ids);
		if (err && what)
			err = hdr_err(h, err, attrs_off + i * attr_size, what);
	}
	free(attrs);
	if (err)
		return err;
	bool truncated = false;
	/* Every finished file has features (perf writes its host at least); none, and the writer
	 * stopped before its end: a perf killed before it wrote its header (data size 0), or an
	 * unwound record killed between the data size it keeps up to date and its end. Everything
	 * there is read, and a record cut short at the end ends the data. */
	bool no_features = hsize >= 104 && !(feat[0] | feat[1] | feat[2] | feat[3]);
	if (data_size == 0 || data_size > fsize - data_off || no_features) {
		if (data_size > fsize - data_off)
			truncated = true; /* damaged, not unfinished: a record cut short is an error */
		h->unfinished = no_features || data_size == 0;
		uint64_t counted = data_size;
		data_size = fsize - data_off;
		base_log(&h->s->log, UW_LOG_WARN,
			 "%s: the recording was not finished (%s): reading all %" PRIu64 " bytes of its data%s",
			 h->path, truncated ? "its data section runs past the end of the file"
				  : no_features && counted ? "no header features: its writer stopped before the end"
							     : "its header has no data size",
			 data_size, no_features && counted && counted < data_size ? ", past the size its header counts" : "");
	}
	h->data_off = data_off;
	h->data_end = data_off + data_size;
	/* features follow the data section, one {offset, size} per set bit */
	uint64_t fpos = data_off + data_size;
	unsigned nfeat = 0;
	for (unsigned bit = 0; bit < FEAT_LAST; bit++)
		nfeat += !!(feat[bit / 64] & (1ull << (bit % 64)));
	uint8_t *table = NULL;
	if (!truncated && nfeat && fpos <= fsize) {
		uint64_t tsize = UW_MIN((uint64_t)nfeat * 16, fsize - fpos);
		if ((err = read_section(in, fpos, tsize, &table)))
			return err == -UW_ETRUNC ? hdr_err(h, err, fpos, "the file ends in its feature table") : err;
		unsigned k = 0;
		for (unsigned bit = 0; bit < FEAT_LAST; bit++) {
			if (!(feat[bit / 64] & (1ull << (bit % 64))))
				continue;
			if ((uint64_t)k * 16 + 16 > tsize)
				break;
			uint64_t off, size;
			memcpy(&off, table + k * 16, 8);
			memcpy(&size, table + k * 16 + 8, 8);
			k++;
			if (off > fsize || size > fsize - off)
				continue;
			uint8_t *sec;
			if ((err = read_section(in, off, size, &sec))) {
				free(table);
				return err == -UW_ETRUNC ? hdr_err(h, err, off, "the file ends in a feature section") : err;
			}
			reader_feature(h, at, bit, sec, size);
			reader_keep_feature(&h->ft, bit, sec, (size_t)size, false);
		}
		free(table);
	}
	/* without clock data, wall-clock time from the file: perf writes it last, just after the
	 * last sample (approximate: used only to tell files older than a process) */
	struct stat st;
	if (!h->wall_exact && h->last_sample_time && fstat(in->fd, &st) == 0) {
		int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec, off;
		/* (a sample time no clock gives: no offset) */
		if (!__builtin_sub_overflow(mtime, (int64_t)h->last_sample_time, &off)) {
			h->t->wall_offset = off;
			h->t->wall_known = true;
		}
	}
	return 0;
}

void reader_header_init(struct reader_header *h, struct uw_session *s, struct uw_tracker *t, const char *path)
{
	memset(h, 0, sizeof(*h));
	h->s = s;
	h->t = t;
	h->path = path;
}

void reader_header_free(struct reader_header *h)
{
	features_free(&h->ft);
}
