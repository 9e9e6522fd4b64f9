/* SPDX-License-Identifier: MIT */
/*
 * The recording's event attributes and the ids that name them (reader_attrs.c): a table the
 * reader fills and the other stages read (which attribute a record belongs to, found once).
 */
#ifndef UW_PERF_READER_ATTRS_H
#define UW_PERF_READER_ATTRS_H

#include "perf/perf.h"

/* A record of kernel unwinding's program (lib/kernel), pushed by a live recorder: {u64 event
 * id; struct kunw_rec ...}. A private type below the kernel's range that is never written. */
#define PR_UW_KUNW 60

#define READER_ATTRS_MAX 4096

struct reader_attrs {
	struct perf_attr *attrs;
	size_t nattrs;
	struct base_map ids;     /* id -> attr index + 1 */
};

/* An attribute (a raw perf_event_attr of size bytes) and its nids ids added. @return 0; -ENOMEM;
 * -UW_ELIMIT or -UW_EFORMAT with *what saying why. */
int reader_attrs_add(struct reader_attrs *at, const uint8_t *p, size_t size, const uint8_t *ids, size_t nids,
                     const char **what);
void reader_attrs_free(struct reader_attrs *at);
/* The attribute of an id (the first when none has it). */
const struct perf_attr *reader_attr_by_id(const struct reader_attrs *at, uint64_t id, unsigned *idx);
/* Which attribute a record belongs to (the first when it cannot tell). */
const struct perf_attr *reader_attr_of(const struct reader_attrs *at, const uint8_t *rec, uint32_t len, unsigned *idx);

#endif
