/* SPDX-License-Identifier: MIT */
/*
 * A recording's description of itself: the file header, event attributes (and which one a
 * record belongs to), and the feature sections (build-ids, event names, host, clock, the stop
 * reasons unwound writes).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "perf/read/reader.h"

/* ---- attributes */

int reader_attrs_add(struct reader_attrs *at, const uint8_t *p, size_t size, const uint8_t *ids, size_t nids,
                     const char **what)
{
	if (at->nattrs >= READER_ATTRS_MAX) {
		*what = "more than 4096 event attributes";
		return -UW_ELIMIT;
	}
	struct perf_attr a;
	if (perf_attr_decode(p, size, &a)) {
		*what = "perf_event_attr smaller than the first ABI version";
		return -UW_EFORMAT;
	}
	struct perf_attr *na = realloc(at->attrs, (at->nattrs + 1) * sizeof(*na));
	if (!na)
		return -ENOMEM;
	at->attrs = na;
	a.name = perf_attr_default_name(&a);
	a.raw_size = (uint32_t)UW_MIN(size, (size_t)PERF_ATTR_MAX);
	memcpy(a.raw, p, a.raw_size);
	a.ids = nids ? malloc(nids * 8) : NULL;
	a.nids = a.ids ? nids : 0;
	if (a.ids)
		memcpy(a.ids, ids, nids * 8);
	at->attrs[at->nattrs] = a;
	for (size_t i = 0; i < nids; i++) {
		uint64_t id;
		memcpy(&id, ids + 8 * i, 8);
		if (base_map_put(&at->ids, id, (void *)(uintptr_t)(at->nattrs + 1))) {
			free(a.ids);
			return -ENOMEM;
		}
	}
	at->nattrs++;
	return 0;
}

void reader_attrs_free(struct reader_attrs *at)
{
	base_map_free(&at->ids);
	for (size_t i = 0; i < at->nattrs; i++)
		free(at->attrs[i].ids);
	free(at->attrs);
	at->attrs = NULL;
	at->nattrs = 0;
}

int reader_add_attr(struct uw_reader *r, const uint8_t *p, size_t size, const uint8_t *ids, size_t nids,
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

const struct perf_attr *reader_attr_by_id(const struct reader_attrs *at, uint64_t id, unsigned *idx)
{
	uintptr_t v = (uintptr_t)base_map_get(&at->ids, id);
	unsigned i = v ? (unsigned)(v - 1) : 0;
	if (idx)
		*idx = i;
	return &at->attrs[i];
}

/* Which attribute a record belongs to. Samples carry the id first (IDENTIFIER) or at a fixed
 * position (ID); other records at the end of their sample_id trailer. */
const struct perf_attr *reader_attr_of(const struct reader_attrs *at, const uint8_t *rec, uint32_t len,
                                       unsigned *idx)
{
	const struct perf_attr *a0 = &at->attrs[0];
	if (idx)
		*idx = 0;
	if (at->nattrs == 1)
		return a0;
	uint32_t type;
	memcpy(&type, rec, 4);
	uint64_t st = a0->sample_type, id;
	const uint8_t *body = rec + 8;
	size_t n = len - 8;
	if (type == PR_SAMPLE || type == PR_UW_KUNW) {
		size_t pos;
		if (st & PS_IDENTIFIER || type == PR_UW_KUNW) {
			pos = 0;
		} else if (st & PS_ID) {
			pos = 8 * (!!(st & PS_IP) + !!(st & PS_TID) + !!(st & PS_TIME) + !!(st & PS_ADDR));
		} else {
			return a0;
		}
		if (pos + 8 > n)
			return a0;
		memcpy(&id, body + pos, 8);
		return reader_attr_by_id(at, id, idx);
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
	return reader_attr_by_id(at, id, idx);
}

/* ---- feature sections (file mode) */

void reader_build_ids(struct uw_reader *r, const uint8_t *p, uint64_t size)
{
	size_t off = 0;
	struct perf_bid_entry e;
	while (perf_bid_next(p, (size_t)size, &off, &e))
		tracker_note_build_id(r->t, e.path, e.id, e.len);
}

static void parse_event_desc(struct uw_reader *r, const uint8_t *p, uint64_t size)
{
	struct base_cursor c = base_cursor(p, size);
	uint32_t nr = base_cur_u32(&c), asz = base_cur_u32(&c);
	if (c.bad || asz < PERF_ATTR_SIZE_VER0)
		return;
	for (uint32_t i = 0; i < nr && i < r->at.nattrs; i++) {
		base_cur_skip(&c, asz);
		uint32_t nids = base_cur_u32(&c);
		uint32_t slen = base_cur_u32(&c);
		if (c.bad || slen > base_cur_left(&c))
			return;
		const char *nm = (const char *)c.p;
		size_t l = strnlen(nm, slen);
		c.p += slen;
		if (l)
			r->at.attrs[i].name = session_intern(r->s, nm, l);
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
	return session_intern(r->s, p, strnlen(p, len));
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

const uint8_t *perf_reader_feature(const struct uw_reader *r, unsigned bit, size_t *n)
{
	if (bit >= FEAT_LAST || !r->ft.sec[bit].p) {
		*n = 0;
		return NULL;
	}
	*n = r->ft.sec[bit].n;
	return r->ft.sec[bit].p;
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

void reader_features_free(struct reader_features *ft)
{
	for (unsigned i = 0; i < FEAT_LAST; i++)
		if (ft->sec[i].owned)
			free((void *)ft->sec[i].p);
	free(ft->stops);
	memset(ft, 0, sizeof(*ft));
}

void reader_feature(struct uw_reader *r, unsigned feat, const uint8_t *p, uint64_t size)
{
	struct base_cursor c = base_cursor(p, size);
	char buf[4096];
	switch (feat) {
	case FEAT_UW_STOPS:
		if (!parse_stops(&r->ft, p, size))
			base_log(&r->s->log, UW_LOG_WARN, "%s: the section of stop reasons is malformed: ignored", r->path);
		break;
	case FEAT_CLOCK_DATA: { /* u32 version, u32 clockid, u64 wall ns, u64 clockid ns */
		uint32_t version = base_cur_u32(&c), clockid = base_cur_u32(&c);
		uint64_t tod = base_cur_u64(&c), cl = base_cur_u64(&c);
		if (!c.bad && version >= 1 && r->at.nattrs && (r->at.attrs[0].flags & PA_USE_CLOCKID) &&
		    (uint32_t)r->at.attrs[0].clockid == clockid) {
			r->t->wall_offset = (int64_t)(tod - cl);
			r->t->wall_known = true;
			r->wall_exact = true;
		}
		break;
	}
	case FEAT_SAMPLE_TIME: /* u64 first, u64 last */
		base_cur_u64(&c);
		r->last_sample_time = base_cur_u64(&c);
		break;
	case FEAT_BUILD_ID:
		reader_build_ids(r, p, size);
		break;
	case FEAT_EVENT_DESC:
		parse_event_desc(r, p, size);
		break;
	case FEAT_HOSTNAME: r->info[UW_INFO_HOSTNAME] = feat_string(r, &c); break;
	case FEAT_OSRELEASE:
		r->info[UW_INFO_OSRELEASE] = feat_string(r, &c);
		tracker_note_kernel_release(r->t, r->info[UW_INFO_OSRELEASE]); /* its kernel's identity */
		break;
	case FEAT_VERSION: r->info[UW_INFO_PERF_VERSION] = feat_string(r, &c); break;
	case FEAT_ARCH: r->info[UW_INFO_ARCH] = feat_string(r, &c); break;
	case FEAT_NRCPUS: {
		uint32_t avail = base_cur_u32(&c), online = base_cur_u32(&c);
		if (!c.bad) {
			int n = snprintf(buf, sizeof(buf), "%u/%u", online, avail);
			r->info[UW_INFO_NRCPUS] = session_intern(r->s, buf, (size_t)n);
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
			r->info[UW_INFO_CMDLINE] = session_intern(r->s, buf, n);
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

/* A section of the file read whole into a new buffer (bounded by the file's size). */
static int read_section(struct uw_reader *r, uint64_t off, uint64_t size, uint8_t **out)
{
	*out = malloc(size ? (size_t)size : 1);
	if (!*out)
		return -ENOMEM;
	int err = reader_pread(&r->in, *out, (size_t)size, off);
	if (err) {
		free(*out);
		*out = NULL;
	}
	return err;
}

int reader_file_header(struct uw_reader *r)
{
	uint64_t fsize = r->in.file_size;
	uint8_t hdr[104] = { 0 };
	int err = reader_pread(&r->in, hdr, (size_t)UW_MIN(fsize, (uint64_t)sizeof(hdr)), 0);
	if (err)
		return err == -UW_ETRUNC ? reader_err(r, err, 0, "the file ends in its header") : err;
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
		return reader_err(r, -UW_ETRUNC, 0, "file header truncated (104 bytes expected)");
	else if (hsize < 104 || hsize > fsize)
		return reader_err(r, -UW_EFORMAT, 8, "bad header size");
	if (attr_size < PERF_ATTR_SIZE_VER0 + 16 || attr_size > 4096)
		return reader_err(r, -UW_EFORMAT, 16, "bad attribute entry size");
	if (attrs_off > fsize || attrs_size > fsize - attrs_off)
		return reader_err(r, -UW_ETRUNC, 24, "attribute section lies past the end of the file");
	if (data_off > fsize)
		return reader_err(r, -UW_ETRUNC, 40, "data section lies past the end of the file");
	uint64_t nattr = attrs_size / attr_size;
	if (nattr == 0)
		return reader_err(r, -UW_EFORMAT, 24, "no event attributes");
	uint8_t *attrs;
	if ((err = read_section(r, attrs_off, nattr * attr_size, &attrs)))
		return err == -UW_ETRUNC ? reader_err(r, err, attrs_off, "the file ends in its attribute section") : err;
	for (uint64_t i = 0; i < nattr && !err; i++) {
		const uint8_t *e = attrs + i * attr_size;
		uint64_t ids_off, ids_size;
		memcpy(&ids_off, e + attr_size - 16, 8);
		memcpy(&ids_size, e + attr_size - 8, 8);
		if (ids_off > fsize || ids_size > fsize - ids_off) {
			err = reader_err(r, -UW_ETRUNC, attrs_off + i * attr_size, "event id list lies past the end of the file");
			break;
		}
		uint8_t *ids;
		if ((err = read_section(r, ids_off, ids_size / 8 * 8, &ids))) {
			if (err == -UW_ETRUNC)
				err = reader_err(r, err, ids_off, "the file ends in an event id list");
			break;
		}
		err = reader_add_attr(r, e, attr_size - 16, ids, ids_size / 8, attrs_off + i * attr_size);
		free(ids);
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
		r->unfinished = no_features || data_size == 0;
		r->st.unfinished = r->unfinished;
		uint64_t counted = data_size;
		data_size = fsize - data_off;
		base_log(&r->s->log, UW_LOG_WARN,
			 "%s: the recording was not finished (%s): reading all %" PRIu64 " bytes of its data%s",
			 r->path, truncated ? "its data section runs past the end of the file"
				  : no_features && counted ? "no header features: its writer stopped before the end"
							     : "its header has no data size",
			 data_size, no_features && counted && counted < data_size ? ", past the size its header counts" : "");
	}
	r->in.pos = data_off;
	r->in.end = data_off + data_size;
	/* features follow the data section, one {offset, size} per set bit */
	uint64_t fpos = data_off + data_size;
	unsigned nfeat = 0;
	for (unsigned bit = 0; bit < FEAT_LAST; bit++)
		nfeat += !!(feat[bit / 64] & (1ull << (bit % 64)));
	uint8_t *table = NULL;
	if (!truncated && nfeat && fpos <= fsize) {
		uint64_t tsize = UW_MIN((uint64_t)nfeat * 16, fsize - fpos);
		if ((err = read_section(r, fpos, tsize, &table)))
			return err == -UW_ETRUNC ? reader_err(r, err, fpos, "the file ends in its feature table") : err;
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
			if ((err = read_section(r, off, size, &sec))) {
				free(table);
				return err == -UW_ETRUNC ? reader_err(r, err, off, "the file ends in a feature section") : err;
			}
			reader_feature(r, bit, sec, size);
			reader_keep_feature(&r->ft, bit, sec, (size_t)size, false);
		}
		free(table);
	}
	/* without clock data, wall-clock time from the file: perf writes it last, just after the
	 * last sample (approximate: used only to tell files older than a process) */
	struct stat st;
	if (!r->wall_exact && r->last_sample_time && fstat(r->in.fd, &st) == 0) {
		int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec, off;
		/* (a sample time no clock gives: no offset) */
		if (!__builtin_sub_overflow(mtime, (int64_t)r->last_sample_time, &off)) {
			r->t->wall_offset = off;
			r->t->wall_known = true;
		}
	}
	return 0;
}

