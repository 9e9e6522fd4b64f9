/* SPDX-License-Identifier: MIT */
/*
 * The recording's event attributes (the table struct reader_attrs, this file's only state): added
 * as the header or the records give them, and which one a record belongs to.
 */
#include <errno.h>
#include <stdlib.h>

#include "perf/read/reader_attrs.h"

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
