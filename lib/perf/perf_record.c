/* SPDX-License-Identifier: MIT */
/*
 * Side-band records decoded (MMAP, MMAP2, COMM, FORK, EXIT, LOST, LOST_SAMPLES), for the
 * perf.data reader and for the public decoding of raw records (uw_record_decode) alike.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "perf/perf.h"

int perf_sideband_decode(const struct perf_attr *a, const uint8_t *rec, uint32_t len, bool bid_ok,
                         struct perf_sideband *out, const char **what)
{
	memset(out, 0, sizeof(*out));
	*what = NULL;
	uint32_t type;
	uint16_t misc;
	memcpy(&type, rec, 4);
	memcpy(&misc, rec + 4, 2);
	struct base_cursor c = base_cursor(rec + 8, len - 8);
	size_t trailer = a ? a->id_trailer_size : 0;
	if (trailer <= len - 8)
		c.end -= trailer;
	switch (type) {
	case PR_MMAP:
	case PR_MMAP2:
		out->pid = base_cur_s32(&c);
		out->tid = base_cur_s32(&c);
		out->addr = base_cur_u64(&c);
		out->len = base_cur_u64(&c);
		out->pgoff = base_cur_u64(&c);
		out->prot = (misc & PM_MMAP_DATA) ? PROT_READ : PROT_READ | PROT_EXEC;
		if (type == PR_MMAP2) {
			if ((misc & PM_MMAP_BUILD_ID) && bid_ok) {
				out->blen = base_cur_u8(&c);
				base_cur_skip(&c, 3);
				out->bid = c.p;
				base_cur_skip(&c, 20);
				if (out->blen > 20)
					out->blen = 20;
			} else {
				out->maj = base_cur_u32(&c);
				out->min = base_cur_u32(&c);
				out->ino = base_cur_u64(&c);
				out->ino_gen = base_cur_u64(&c);
			}
			out->prot = base_cur_u32(&c);
			out->flags = base_cur_u32(&c);
		}
		if (c.bad) {
			*what = type == PR_MMAP ? "MMAP record shorter than its fields" : "MMAP2 record shorter than its fields";
			return -UW_ETRUNC;
		}
		out->str = (const char *)c.p;
		out->str_len = strnlen(out->str, base_cur_left(&c));
		out->str_terminated = out->str_len < base_cur_left(&c);
		return 0;
	case PR_COMM:
		out->pid = base_cur_s32(&c);
		out->tid = base_cur_s32(&c);
		if (c.bad) {
			*what = "COMM record shorter than its fields";
			return -UW_ETRUNC;
		}
		out->str = (const char *)c.p;
		out->str_len = strnlen(out->str, base_cur_left(&c));
		out->str_terminated = out->str_len < base_cur_left(&c);
		out->exec = (misc & PM_COMM_EXEC) != 0;
		return 0;
	case PR_FORK:
	case PR_EXIT:
		out->pid = base_cur_s32(&c);
		out->ppid = base_cur_s32(&c);
		out->tid = base_cur_s32(&c);
		out->ptid = base_cur_s32(&c);
		out->time = base_cur_u64(&c);
		if (c.bad) {
			*what = type == PR_FORK ? "FORK record shorter than its fields" : "EXIT record shorter than its fields";
			return -UW_ETRUNC;
		}
		return 0;
	case PR_LOST:
		out->lost_id = base_cur_u64(&c);
		out->lost = base_cur_u64(&c);
		if (c.bad) {
			*what = "LOST record shorter than its fields";
			return -UW_ETRUNC;
		}
		return 0;
	case PR_LOST_SAMPLES:
		out->lost = base_cur_u64(&c);
		if (c.bad) {
			*what = "LOST_SAMPLES record shorter than its fields";
			return -UW_ETRUNC;
		}
		return 0;
	default:
		return -ENOENT;
	}
}

/* ---- the public decoding */

struct uw_event {
	struct perf_attr a;
};

UW_API struct uw_event *uw_event_new(const void *attr, size_t size)
{
	if (!attr || size < PERF_ATTR_SIZE_VER0 || size > 4096) {
		errno = EINVAL;
		return NULL;
	}
	struct uw_event *ev = calloc(1, sizeof(*ev));
	if (!ev) {
		errno = ENOMEM;
		return NULL;
	}
	if (perf_attr_decode(attr, size, &ev->a)) {
		free(ev);
		errno = EINVAL;
		return NULL;
	}
	return ev;
}

UW_API void uw_event_free(struct uw_event *ev)
{
	free(ev);
}

UW_API int uw_record_decode(const struct uw_event *ev, const void *rec, size_t len, struct uw_record *out)
{
	if (!out || out->sz < offsetof(struct uw_record, misc) + sizeof(out->misc))
		return -EINVAL;
	size_t want = out->sz;
	struct uw_record r;
	memset(&r, 0, sizeof(r));
	r.sz = want;
	int err = 0;
	const char *what = NULL;
	const uint8_t *p = rec;
	if (!ev || !rec) {
		err = -EINVAL;
		what = "no event or no record";
		goto done;
	}
	if ((uintptr_t)p % 8) {
		err = -EINVAL;
		what = "record not 8-byte aligned";
		goto done;
	}
	if (len < 8) {
		err = -UW_ETRUNC;
		what = "record shorter than its 8-byte header";
		goto done;
	}
	uint16_t size;
	memcpy(&r.type, p, 4);
	memcpy(&r.misc, p + 4, 2);
	memcpy(&size, p + 6, 2);
	if (size < 8) {
		err = -UW_EFORMAT;
		what = "record size smaller than its header";
		goto done;
	}
	if (size > len) {
		err = -UW_ETRUNC;
		what = "record longer than the bytes given";
		goto done;
	}
	const struct perf_attr *a = &ev->a;
	r.regs_mask = a->sample_regs_user;
	if (r.type == PR_SAMPLE) {
		struct perf_sample s;
		if (perf_sample_decode(a, p + 8, size - 8u, &s)) {
			err = -UW_EFORMAT;
			what = "SAMPLE fields past the record's end (callchain, registers or stack)";
			goto done;
		}
		r.has_sample_id = 1;
		r.has_time = (a->sample_type & PS_TIME) != 0;
		r.time = s.time;
		r.pid = s.pid;
		r.tid = s.tid;
		r.id = s.id;
		r.stream_id = s.stream_id;
		r.cpu = (uint32_t)s.cpu;
		r.ip = s.ip;
		r.addr = s.addr;
		r.period = s.period;
		r.nr_callchain = s.nr_callchain;
		r.callchain = (const uint64_t *)(const void *)s.callchain;
		r.regs_abi = s.regs_abi;
		r.regs = (const uint64_t *)(const void *)s.regs;
		r.stack = s.stack;
		r.stack_size = s.stack ? s.stack_dyn : 0;
		goto done;
	}
	/* the sample_id trailer */
	if (r.type < PR_HEADER_ATTR && (a->flags & PA_SAMPLE_ID_ALL) && a->id_trailer_size) {
		struct perf_sample_id sid;
		if (size - 8u < a->id_trailer_size) {
			err = -UW_ETRUNC;
			what = "record shorter than its sample_id trailer";
			goto done;
		}
		perf_sample_id_decode(a, p + 8, size - 8u, &sid);
		r.has_sample_id = 1;
		r.has_time = sid.has_time;
		r.time = sid.time;
		r.pid = sid.pid;
		r.tid = sid.tid;
		r.id = sid.id;
		r.cpu = (uint32_t)sid.cpu;
		if (a->sample_type & PS_STREAM_ID) {
			/* (after tid, time and id: perf_sample_id_decode skips it) */
			const uint8_t *t = p + size - a->id_trailer_size;
			size_t o = 8 * (!!(a->sample_type & PS_TID) + !!(a->sample_type & PS_TIME) + !!(a->sample_type & PS_ID));
			memcpy(&r.stream_id, t + o, 8);
		}
	}
	struct perf_sideband sb;
	const struct perf_attr *ta = r.has_sample_id ? a : NULL;
	int e = perf_sideband_decode(ta, p, size, (a->flags & PA_BUILD_ID) != 0, &sb, &what);
	if (e == -ENOENT)
		goto done; /* a type without fields we decode */
	if (e) {
		err = e;
		goto done;
	}
	switch (r.type) {
	case PR_MMAP:
	case PR_MMAP2:
		if (!sb.str_terminated) {
			err = -UW_EFORMAT;
			what = "MMAP path not terminated within the record";
			goto done;
		}
		r.pid = (uint32_t)sb.pid;
		r.tid = (uint32_t)sb.tid;
		r.map_addr = sb.addr;
		r.map_len = sb.len;
		r.pgoff = sb.pgoff;
		r.prot = sb.prot;
		r.flags = sb.flags;
		r.maj = sb.maj;
		r.min = sb.min;
		r.ino = sb.ino;
		r.ino_generation = sb.ino_gen;
		r.build_id = sb.bid;
		r.build_id_size = (uint32_t)sb.blen;
		r.path = sb.str;
		break;
	case PR_COMM:
		if (!sb.str_terminated) {
			err = -UW_EFORMAT;
			what = "COMM name not terminated within the record";
			goto done;
		}
		r.pid = (uint32_t)sb.pid;
		r.tid = (uint32_t)sb.tid;
		r.comm = sb.str;
		r.exec = sb.exec;
		break;
	case PR_FORK:
	case PR_EXIT:
		r.pid = (uint32_t)sb.pid;
		r.tid = (uint32_t)sb.tid;
		r.ppid = (uint32_t)sb.ppid;
		r.ptid = (uint32_t)sb.ptid;
		if (!r.has_time) {
			r.time = sb.time;
			r.has_time = 1;
		}
		break;
	default: /* LOST, LOST_SAMPLES */
		r.lost = sb.lost;
		break;
	}
done:
	if (err)
		memset((char *)&r + offsetof(struct uw_record, type), 0,
		       sizeof(r) - offsetof(struct uw_record, type));
	r.error = err ? what : NULL;
	memcpy(out, &r, UW_MIN(want, sizeof(r)));
	if (want > sizeof(r))
		memset((char *)out + sizeof(r), 0, want - sizeof(r));
	out->sz = want;
	return err;
}
