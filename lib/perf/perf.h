/* SPDX-License-Identifier: MIT */
#ifndef UW_PERF_H
#define UW_PERF_H

#include "base/base.h"
#include "perf/perf_format.h"
#include "process/process.h"

/* The parts of perf_event_attr we use, decoded from whatever size the file has. */
struct perf_attr {
	uint32_t type, size;
	uint64_t config, sample_type, read_format, flags;
	uint64_t branch_sample_type, sample_regs_user, sample_regs_intr;
	uint32_t sample_stack_user;
	int32_t clockid;          /* valid with PA_USE_CLOCKID */
	const char *name;
	unsigned nregs_user, nregs_intr;
	unsigned id_trailer_size; /* bytes of sample_id at the end of other records */
};

/* Decodes a raw perf_event_attr of `size` bytes (>= PERF_ATTR_SIZE_VER0). */
int perf_attr_decode(const uint8_t *p, size_t size, struct perf_attr *a);
/* A name for an attribute without an event description ("cpu-clock", "cycles", ...). */
const char *perf_attr_default_name(const struct perf_attr *a);

struct perf_sample {
	uint64_t id, ip, time, addr, period, cpu;
	uint32_t pid, tid;
	uint64_t nr_callchain;
	const uint8_t *callchain;  /* nr_callchain u64s, unaligned */
	uint64_t regs_abi;
	const uint8_t *regs;       /* nregs u64s */
	unsigned nregs;
	uint64_t stack_size, stack_dyn;
	const uint8_t *stack;
};

/* Decodes a SAMPLE record body (after the 8-byte header). */
int perf_sample_decode(const struct perf_attr *a, const uint8_t *p, size_t n, struct perf_sample *s);

/* Offset in a SAMPLE body of the user stack's u64 size field, from the first n bytes of the body.
 * @return 0; -ENOENT when the event records no stack; -UW_ETRUNC when n bytes do not reach it
 * (or the fields before it are malformed). */
int perf_sample_stack_field(const struct perf_attr *a, const uint8_t *p, size_t n, size_t *off);

struct perf_sample_id {
	uint32_t pid, tid;
	uint64_t time, id, cpu;
	bool has_time;
};
/* Decodes the sample_id trailer of a non-sample record (body without header). */
int perf_sample_id_decode(const struct perf_attr *a, const uint8_t *p, size_t n, struct perf_sample_id *sid);

#endif
