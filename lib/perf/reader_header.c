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

#include "perf/reader.h"

/* ---- attributes */

int reader_add_attr(struct uw_reader *r, const uint8_t *p, size_t size, const uint8_t *ids, size_t nids,
                    uint64_t off)
{
	if (r->nattrs >= 4096)
		return reader_err(r, -UW_ELIMIT, off, "more than 4096 event attributes");
	struct perf_attr a;
	if (perf_attr_decode(p, size, &a))
		return reader_err(r, -UW_EFORMAT, off, "perf_event_attr smaller than the first ABI version");
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
		r->t->clock_monotonic = (a.flags & PA_USE_CLOCKID) && a.clockid == CLOCK_MONOTONIC;
	for (size_t i = 0; i < nids; i++) {
		uint64_t id;
		memcpy(&id, ids + 8 * i, 8);
		if (base_map_put(&r->ids, id, (void *)(uintptr_t)(r->nattrs + 1)))
			return -ENOMEM;
	}
	r->nattrs++;
	return 0;
}

const struct perf_attr *reader_attr_by_id(const struct uw_reader *r, uint64_t id, unsigned *idx)
{
	uintptr_t v = (uintptr_t)base_map_get(&r->ids, id);
	unsigned i = v ? (unsigned)(v - 1) : 0;
	if (idx)
		*idx = i;
	return &r->attrs[i];
}

/* Which attribute a record belongs to. Samples carry the id first (IDENTIFIER) or at a fixed
 * position (ID); other records at the end of their sample_id trailer. */
const struct perf_attr *reader_attr_of(const struct uw_reader *r, const uint8_t *rec, uint32_t len,
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
		return reader_attr_by_id(r, id, idx);
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
	return reader_attr_by_id(r, id, idx);
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
			r->attrs[i].name = session_intern(r->s, nm, l);
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
int reader_stated_stop(const struct uw_reader *r, uint64_t ord)
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
void reader_keep_feature(struct uw_reader *r, unsigned bit, const uint8_t *p, size_t n, bool copy)
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

void reader_feature(struct uw_reader *r, unsigned feat, const uint8_t *p, uint64_t size)
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

int reader_file_header(struct uw_reader *r)
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
		return reader_err(r, -UW_ETRUNC, 0, "file header truncated (104 bytes expected)");
	/* the first format ended the header before the feature bitmap (72 bytes) */
	if (hsize == 72)
		memset(feat, 0, sizeof(feat));
	else if (hsize < 104 || hsize > r->map_size)
		return reader_err(r, -UW_EFORMAT, 8, "bad header size");
	if (attr_size < PERF_ATTR_SIZE_VER0 + 16 || attr_size > 4096)
		return reader_err(r, -UW_EFORMAT, 16, "bad attribute entry size");
	if (attrs_off > r->map_size || attrs_size > r->map_size - attrs_off)
		return reader_err(r, -UW_ETRUNC, 24, "attribute section lies past the end of the file");
	if (data_off > r->map_size)
		return reader_err(r, -UW_ETRUNC, 40, "data section lies past the end of the file");
	uint64_t nattr = attrs_size / attr_size;
	if (nattr == 0)
		return reader_err(r, -UW_EFORMAT, 24, "no event attributes");
	for (uint64_t i = 0; i < nattr; i++) {
		const uint8_t *e = r->map + attrs_off + i * attr_size;
		uint64_t ids_off, ids_size;
		memcpy(&ids_off, e + attr_size - 16, 8);
		memcpy(&ids_size, e + attr_size - 8, 8);
		if (ids_off > r->map_size || ids_size > r->map_size - ids_off)
			return reader_err(r, -UW_ETRUNC, attrs_off + i * attr_size, "event id list lies past the end of the file");
		int err = reader_add_attr(r, e, attr_size - 16, r->map + ids_off, ids_size / 8, attrs_off + i * attr_size);
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
		reader_keep_feature(r, bit, r->map + off, (size_t)size, false);
		reader_feature(r, bit, r->map + off, size);
	}
	/* without clock data, wall-clock time from the file: perf writes it last, just after the
	 * last sample (approximate: used only to tell files older than a process) */
	struct stat st;
	if (!r->wall_exact && r->last_sample_time && fstat(r->fd, &st) == 0) {
		int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec, off;
		/* (a sample time no clock gives: no offset) */
		if (!__builtin_sub_overflow(mtime, (int64_t)r->last_sample_time, &off)) {
			r->t->wall_offset = off;
			r->t->wall_known = true;
		}
	}
	return 0;
}

