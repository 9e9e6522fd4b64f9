/* SPDX-License-Identifier: MIT */
/* perf_event_attr decoding and the SAMPLE layout (include/uapi/linux/perf_event.h). */
#include "perf/perf.h"

#include <errno.h>

int perf_attr_decode(const uint8_t *p, size_t size, struct perf_attr *a)
{
	memset(a, 0, sizeof(*a));
	if (size < PERF_ATTR_SIZE_VER0)
		return -UW_EFORMAT;
	struct base_cursor c = base_cursor(p, size);
	a->type = base_cur_u32(&c);
	a->size = base_cur_u32(&c);
	a->config = base_cur_u64(&c);
	base_cur_u64(&c); /* sample_period / freq */
	a->sample_type = base_cur_u64(&c);
	a->read_format = base_cur_u64(&c);
	a->flags = base_cur_u64(&c);
	/* wakeup (4), bp_type (4), config1 (8), config2 (8): up to offset 72 */
	if (size >= 80) {
		memcpy(&a->branch_sample_type, p + 72, 8);
	}
	if (size >= 96) {
		memcpy(&a->sample_regs_user, p + 80, 8);
		memcpy(&a->sample_stack_user, p + 88, 4);
		memcpy(&a->clockid, p + 92, 4);
	}
	if (size >= 104)
		memcpy(&a->sample_regs_intr, p + 96, 8);
	a->nregs_user = (unsigned)__builtin_popcountll(a->sample_regs_user);
	a->nregs_intr = (unsigned)__builtin_popcountll(a->sample_regs_intr);
	unsigned t = 0;
	if (a->flags & PA_SAMPLE_ID_ALL) {
		uint64_t st = a->sample_type;
		t += (st & PS_TID) ? 8 : 0;
		t += (st & PS_TIME) ? 8 : 0;
		t += (st & PS_ID) ? 8 : 0;
		t += (st & PS_STREAM_ID) ? 8 : 0;
		t += (st & PS_CPU) ? 8 : 0;
		t += (st & PS_IDENTIFIER) ? 8 : 0;
	}
	a->id_trailer_size = t;
	return 0;
}

const char *perf_attr_default_name(const struct perf_attr *a)
{
	static const char *const hw[] = { "cycles", "instructions", "cache-references", "cache-misses",
					  "branches", "branch-misses", "bus-cycles",
					  "stalled-cycles-frontend", "stalled-cycles-backend", "ref-cycles" };
	static const char *const sw[] = { "cpu-clock", "task-clock", "page-faults", "context-switches",
					  "cpu-migrations", "minor-faults", "major-faults",
					  "alignment-faults", "emulation-faults", "dummy", "bpf-output",
					  "cgroup-switches" };
	if (a->type == 0 && a->config < UW_ARRAY_SIZE(hw))
		return hw[a->config];
	if (a->type == 1 && a->config < UW_ARRAY_SIZE(sw))
		return sw[a->config];
	if (a->type == 2)
		return "tracepoint";
	return "unknown";
}

static void skip_read(const struct perf_attr *a, struct base_cursor *c)
{
	uint64_t rf = a->read_format;
	unsigned per = 1 + !!(rf & PF_ID) + !!(rf & PF_LOST);
	if (rf & PF_GROUP) {
		uint64_t nr = base_cur_u64(c);
		base_cur_skip(c, 8 * (!!(rf & PF_TOTAL_TIME_ENABLED) + !!(rf & PF_TOTAL_TIME_RUNNING)));
		if (nr > base_cur_left(c) / 8 / per) {
			c->bad = true;
			return;
		}
		base_cur_skip(c, nr * 8 * per);
	} else {
		base_cur_skip(c, 8 * (per + !!(rf & PF_TOTAL_TIME_ENABLED) + !!(rf & PF_TOTAL_TIME_RUNNING)));
	}
}

/* Every field before the user stack. */
static int decode_head(const struct perf_attr *a, struct base_cursor *cur, struct perf_sample *s)
{
	struct base_cursor c = *cur;
	uint64_t st = a->sample_type;
	if (st & PS_IDENTIFIER)
		s->id = base_cur_u64(&c);
	if (st & PS_IP)
		s->ip = base_cur_u64(&c);
	if (st & PS_TID) {
		s->pid = base_cur_u32(&c);
		s->tid = base_cur_u32(&c);
	}
	if (st & PS_TIME)
		s->time = base_cur_u64(&c);
	if (st & PS_ADDR)
		s->addr = base_cur_u64(&c);
	if (st & PS_ID)
		s->id = base_cur_u64(&c);
	if (st & PS_STREAM_ID)
		s->stream_id = base_cur_u64(&c);
	if (st & PS_CPU) {
		s->cpu = base_cur_u32(&c);
		base_cur_u32(&c);
	}
	if (st & PS_PERIOD)
		s->period = base_cur_u64(&c);
	if (st & PS_READ)
		skip_read(a, &c);
	if (st & PS_CALLCHAIN) {
		uint64_t nr = base_cur_u64(&c);
		if (c.bad || nr > base_cur_left(&c) / 8)
			return -UW_EFORMAT;
		s->nr_callchain = nr;
		s->callchain = c.p;
		c.p += nr * 8;
	}
	if (st & PS_RAW) {
		uint32_t sz = base_cur_u32(&c);
		base_cur_skip(&c, sz);
	}
	if (st & PS_BRANCH_STACK) {
		uint64_t nr = base_cur_u64(&c);
		if (a->branch_sample_type & PA_BRANCH_HW_INDEX_SAMPLE)
			base_cur_u64(&c);
		if (c.bad || nr > base_cur_left(&c) / 24)
			return -UW_EFORMAT;
		base_cur_skip(&c, nr * 24);
	}
	if (st & PS_REGS_USER) {
		s->regs_abi = base_cur_u64(&c);
		if (s->regs_abi) {
			s->nregs = a->nregs_user;
			if (!base_cur_need(&c, (size_t)s->nregs * 8))
				return -UW_EFORMAT;
			s->regs = c.p;
			c.p += s->nregs * 8;
		}
	}
	*cur = c;
	return c.bad ? -UW_EFORMAT : 0;
}

int perf_sample_decode(const struct perf_attr *a, const uint8_t *p, size_t n, struct perf_sample *s)
{
	memset(s, 0, sizeof(*s));
	struct base_cursor c = base_cursor(p, n);
	if (decode_head(a, &c, s))
		return -UW_EFORMAT;
	if (a->sample_type & PS_STACK_USER) {
		uint64_t sz = base_cur_u64(&c);
		if (c.bad || sz > base_cur_left(&c))
			return -UW_EFORMAT;
		s->stack = c.p;
		s->stack_size = sz;
		c.p += sz;
		if (sz) {
			s->stack_dyn = base_cur_u64(&c);
			if (s->stack_dyn > sz)
				s->stack_dyn = sz;
		}
	}
	/* later fields (weight, data_src, ...) are not needed */
	return c.bad ? -UW_EFORMAT : 0;
}

int perf_sample_stack_field(const struct perf_attr *a, const uint8_t *p, size_t n, size_t *off)
{
	if (!(a->sample_type & PS_STACK_USER))
		return -ENOENT;
	struct perf_sample s;
	memset(&s, 0, sizeof(s));
	struct base_cursor c = base_cursor(p, n);
	if (decode_head(a, &c, &s) || !base_cur_need(&c, 8))
		return -UW_ETRUNC;
	*off = (size_t)(c.p - p);
	return 0;
}

int perf_sample_id_decode(const struct perf_attr *a, const uint8_t *p, size_t n, struct perf_sample_id *sid)
{
	memset(sid, 0, sizeof(*sid));
	if (!a->id_trailer_size || n < a->id_trailer_size)
		return -ENOENT;
	struct base_cursor c = base_cursor(p + n - a->id_trailer_size, a->id_trailer_size);
	uint64_t st = a->sample_type;
	if (st & PS_TID) {
		sid->pid = base_cur_u32(&c);
		sid->tid = base_cur_u32(&c);
	}
	if (st & PS_TIME) {
		sid->time = base_cur_u64(&c);
		sid->has_time = true;
	}
	if (st & PS_ID)
		sid->id = base_cur_u64(&c);
	if (st & PS_STREAM_ID)
		base_cur_u64(&c);
	if (st & PS_CPU) {
		sid->cpu = base_cur_u32(&c);
		base_cur_u32(&c);
	}
	if (st & PS_IDENTIFIER)
		sid->id = base_cur_u64(&c);
	return 0;
}

const char *perf_record_type_name(uint32_t type)
{
	static const char *const names[PR_TYPES] = {
		[PR_MMAP] = "MMAP", [PR_LOST] = "LOST", [PR_COMM] = "COMM", [PR_EXIT] = "EXIT",
		[PR_THROTTLE] = "THROTTLE", [PR_UNTHROTTLE] = "UNTHROTTLE", [PR_FORK] = "FORK", [PR_READ] = "READ",
		[PR_SAMPLE] = "SAMPLE", [PR_MMAP2] = "MMAP2", [PR_AUX] = "AUX", [PR_ITRACE_START] = "ITRACE_START",
		[PR_LOST_SAMPLES] = "LOST_SAMPLES", [PR_SWITCH] = "SWITCH", [PR_SWITCH_CPU_WIDE] = "SWITCH_CPU_WIDE",
		[PR_NAMESPACES] = "NAMESPACES", [PR_KSYMBOL] = "KSYMBOL", [PR_BPF_EVENT] = "BPF_EVENT",
		[PR_CGROUP] = "CGROUP", [PR_TEXT_POKE] = "TEXT_POKE", [PR_AUX_OUTPUT_HW_ID] = "AUX_OUTPUT_HW_ID",
		[PR_CALLCHAIN_DEFERRED] = "CALLCHAIN_DEFERRED", [PR_HEADER_ATTR] = "ATTR",
		[PR_HEADER_EVENT_TYPE] = "EVENT_TYPE", [PR_HEADER_TRACING_DATA] = "TRACING_DATA",
		[PR_HEADER_BUILD_ID] = "BUILD_ID", [PR_FINISHED_ROUND] = "FINISHED_ROUND", [PR_ID_INDEX] = "ID_INDEX",
		[PR_AUXTRACE_INFO] = "AUXTRACE_INFO", [PR_AUXTRACE] = "AUXTRACE", [PR_AUXTRACE_ERROR] = "AUXTRACE_ERROR",
		[PR_THREAD_MAP] = "THREAD_MAP", [PR_CPU_MAP] = "CPU_MAP", [PR_STAT_CONFIG] = "STAT_CONFIG",
		[PR_STAT] = "STAT", [PR_STAT_ROUND] = "STAT_ROUND", [PR_EVENT_UPDATE] = "EVENT_UPDATE",
		[PR_TIME_CONV] = "TIME_CONV", [PR_HEADER_FEATURE] = "FEATURE", [PR_COMPRESSED] = "COMPRESSED",
		[PR_FINISHED_INIT] = "FINISHED_INIT", [PR_COMPRESSED2] = "COMPRESSED2",
		[PR_BPF_METADATA] = "BPF_METADATA", [PR_SCHEDSTAT_CPU] = "SCHEDSTAT_CPU",
		[PR_SCHEDSTAT_DOMAIN] = "SCHEDSTAT_DOMAIN",
	};
	return type < PR_TYPES && names[type] ? names[type] : "unknown";
}

bool perf_bid_next(const uint8_t *p, size_t size, size_t *off, struct perf_bid_entry *e)
{
	/* {perf_event_header, pid, u8 build_id[24] (its size in the 21st byte with
	 * PERF_RECORD_MISC_BUILD_ID_SIZE), filename} */
	enum { HDR = 8, PID = 4, ID = 24, NAME = HDR + PID + ID };
	while (*off <= size && size - *off >= NAME) {
		const uint8_t *rec = p + *off;
		uint16_t misc, rsize;
		memcpy(&misc, rec + 4, 2);
		memcpy(&rsize, rec + 6, 2);
		if (rsize < NAME || rsize > size - *off)
			return false;
		*off += rsize;
		const uint8_t *bid = rec + HDR + PID;
		size_t blen = (misc & PM_BUILD_ID_SIZE) ? UW_MIN((size_t)bid[20], (size_t)20) : 20;
		if (!(misc & PM_BUILD_ID_SIZE))
			while (blen > 16 && bid[blen - 1] == 0)
				blen--;
		const char *fn = (const char *)(rec + NAME);
		size_t fl = strnlen(fn, rsize - (size_t)NAME);
		if (!fl || fl == rsize - (size_t)NAME)
			continue; /* no path, or one not terminated */
		*e = (struct perf_bid_entry){ fn, bid, blen, (misc & PM_CPUMODE_MASK) == PM_KERNEL };
		return true;
	}
	return false;
}
