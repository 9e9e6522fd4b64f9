/* SPDX-License-Identifier: MIT */
/*
 * Kernel unwinding for a reader's embedder (struct uw_kernel_unwind, the public header's
 * "kernel unwinding for a reader"): the program, maps and hand-over of live_kunw.c, fed by
 * the records a live profiler pushes into its reader (uw_reader_push) instead of uw_record's
 * rings. What uw_record does in its loop, the embedder does through these calls: each record
 * pushed is read as it is pushed (the reader's push hook: live_kunw_read), the program's records
 * are drained into the reader before each pass over the rings and the maps updated after its
 * round. The events are the embedder's: what the program needs of them is checked at attach
 * (their attribute as added to the reader), and refused with the reason. Events of several
 * attributes: each record says its event's id (Linux 6.2); on an older kernel, one attribute.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#include "kernel/kunw_abi.h"
#include "perf/live/live.h"
#include "perf/read/reader.h"

struct uw_kernel_unwind {
	struct uw_session *s;
	struct uw_reader *r;
	struct uw_kernel_unwind_opts o;
	struct live_kunw *lk;   /* loaded (NULL before) */
	unsigned aidx;          /* the attribute of the first event attached */
	uint8_t *attr_on;       /* per attribute of the reader: 1 when an event of it is attached */
	size_t nattr_on;
	uint32_t attached;      /* events attached */
	uint64_t copied;        /* samples of that attribute pushed from the rings (not walked) */
};

/* What a sample walked in the kernel can have (reader_kunw.c makes its record from these). */
#define KU_SAMPLE_TYPES                                                                                   \
	((uint64_t)(PS_IDENTIFIER | PS_IP | PS_TID | PS_TIME | PS_ID | PS_CPU | PS_PERIOD | PS_CALLCHAIN | \
		    PS_REGS_USER | PS_STACK_USER))

static const char *const ps_names[] = {
	"IP", "TID", "TIME", "ADDR", "READ", "CALLCHAIN", "ID", "CPU", "PERIOD", "STREAM_ID", "RAW",
	"BRANCH_STACK", "REGS_USER", "STACK_USER", "WEIGHT", "DATA_SRC", "IDENTIFIER", "TRANSACTION",
	"REGS_INTR", "PHYS_ADDR", "AUX", "CGROUP", "DATA_PAGE_SIZE", "CODE_PAGE_SIZE", "WEIGHT_STRUCT",
};

UW_API struct uw_kernel_unwind *uw_kernel_unwind_new(struct uw_reader *r, const struct uw_kernel_unwind_opts *opts)
{
	if (!r) {
		errno = EINVAL;
		return NULL;
	}
	struct base_log *log = &r->s->log;
	struct uw_kernel_unwind_opts o;
	int e = BASE_OPTS_COPY(&o, uw_kernel_unwind_opts, ring_bytes, opts);
	if (e == -E2BIG)
		base_err(log, e, "kernel unwinding: options with a field this library does not know set (a newer header's)");
	else if (e)
		base_err(log, e, "kernel unwinding: options without their size (UW_OPTS sets it)");
	else if (!r->pushed)
		e = base_err(log, -EINVAL, "kernel unwinding: %s is a reader of a file; it needs a reader of pushed records "
			     "(uw_reader_new)", r->path);
	else if (r->kunw_owner)
		e = base_err(log, -EBUSY, "kernel unwinding: the reader has one already");
	else if (o.max_frames > KUNW_MAX_FRAMES)
		e = base_err(log, -EINVAL, "kernel unwinding: max_frames %u: at most %u", o.max_frames, KUNW_MAX_FRAMES);
	else if (o.copy_bytes > KUNW_COPY_MAX)
		e = base_err(log, -EINVAL, "kernel unwinding: copy_bytes %u: at most %u", o.copy_bytes, KUNW_COPY_MAX);
	else if (o.ring_bytes && (o.ring_bytes < 4096 || (o.ring_bytes & (o.ring_bytes - 1))))
		e = base_err(log, -EINVAL, "kernel unwinding: ring_bytes %u: a power of two, at least 4096", o.ring_bytes);
	struct uw_kernel_unwind *ku = e ? NULL : calloc(1, sizeof(*ku));
	if (!ku) {
		if (!e)
			e = base_err(log, -ENOMEM, "kernel unwinding: out of memory");
		errno = -e;
		return NULL;
	}
	ku->s = r->s;
	ku->r = r;
	ku->o = o;
	r->kunw_owner = ku;
	return ku;
}

/* Each record pushed into the reader, as it is pushed: a process's mappings read ahead. */
static int on_push(void *ctx, const uint8_t *rec, uint32_t len)
{
	struct uw_kernel_unwind *ku = ctx;
	uint32_t type;
	memcpy(&type, rec, 4);
	/* a sample the kernel wrote itself: its event had no program (a thread's copy of it, made
	 * before the attach) */
	unsigned aidx;
	if (type == PR_SAMPLE && ku->attached && ku->r->at.nattrs && reader_attr_of(&ku->r->at, rec, len, &aidx) &&
	    aidx < ku->nattr_on && ku->attr_on[aidx])
		ku->copied++;
	live_kunw_read(ku->lk, rec, len);
	return 0;
}

UW_API int uw_kernel_unwind_load(struct uw_kernel_unwind *ku)
{
	if (!ku)
		return -EINVAL;
	if (ku->lk)
		return base_err(&ku->s->log, -EALREADY, "kernel unwinding: loaded already");
	unsigned sf = ku->s->opts.max_frames;
	struct live_kunw_conf c = { .s = ku->s,
				    .max_frames = ku->o.max_frames ? ku->o.max_frames : UW_MIN(sf, (unsigned)KUNW_MAX_FRAMES),
				    .copy_bytes = ku->o.copy_bytes,
				    .ring_bytes = ku->o.ring_bytes,
				    .max_bytes = ku->o.max_bytes };
	char why[256];
	int e = live_kunw_open(&c, &ku->lk, why, sizeof(why));
	if (e)
		return base_err(&ku->s->log, e, "kernel unwinding: %s", why);
	live_kunw_start(ku->lk, ku->r);
	reader_set_push_hook(ku->r, on_push, ku);
	return 0;
}

/* Is the event's attribute (as added to the reader) one the program's records fit? */
static int check_attr(struct uw_kernel_unwind *ku, const struct perf_attr *a)
{
	struct base_log *log = &ku->s->log;
	uint64_t period = 0;
	if (a->raw_size >= 24)
		memcpy(&period, a->raw + 16, 8);
	if (!period)
		return base_err(log, -EINVAL, "kernel unwinding: the event %s is not a sampling event (sample_period or "
			        "sample_freq 0): the program runs at each sample", a->name);
	if (!(a->flags & PA_USE_CLOCKID) || a->clockid != CLOCK_MONOTONIC)
		return base_err(log, -EINVAL, "kernel unwinding: the event %s does not use CLOCK_MONOTONIC (the program's "
			        "times do, to be put in order with the side-band's): open it with use_clockid 1 and "
			        "clockid CLOCK_MONOTONIC", a->name);
	if (!(a->flags & PA_SAMPLE_ID_ALL) || !(a->sample_type & PS_TIME))
		return base_err(log, -EINVAL, "kernel unwinding: the event %s has no %s (the side-band records must carry "
			        "their time to be put in order with the program's records)", a->name,
			        !(a->sample_type & PS_TIME) ? "PERF_SAMPLE_TIME in sample_type" : "sample_id_all");
	uint64_t extra = a->sample_type & ~KU_SAMPLE_TYPES;
	if (extra) {
		unsigned b = (unsigned)__builtin_ctzll(extra);
		return base_err(log, -EINVAL, "kernel unwinding: the event %s samples PERF_SAMPLE_%s, which a sample walked "
			        "in the kernel does not have (sample_type within IDENTIFIER, IP, TID, TIME, ID, CPU, "
			        "PERIOD, CALLCHAIN, REGS_USER, STACK_USER)", a->name,
			        b < sizeof(ps_names) / sizeof(ps_names[0]) ? ps_names[b] : "(unknown bit)");
	}
	return 0;
}

UW_API int uw_kernel_unwind_attach(struct uw_kernel_unwind *ku, int perf_fd)
{
	if (!ku)
		return -EINVAL;
	struct base_log *log = &ku->s->log;
	if (!ku->lk)
		return base_err(log, -EINVAL, "kernel unwinding: not loaded (uw_kernel_unwind_load before attaching)");
	uint64_t id;
	if (perf_fd < 0 || ioctl(perf_fd, PERF_EVENT_IOC_ID, &id) < 0)
		return base_err(log, -EINVAL, "kernel unwinding: descriptor %d is not a perf event (%s)", perf_fd,
				perf_fd < 0 ? "negative" : strerror(errno));
	uintptr_t v = (uintptr_t)base_map_get(&ku->r->at.ids, id);
	if (!v)
		return base_err(log, -ENOENT, "kernel unwinding: the event of descriptor %d (id %llu) is not one of the "
			        "reader's: add it with its ids (uw_reader_add_event) before attaching it", perf_fd,
			        (unsigned long long)id);
	unsigned aidx = (unsigned)(v - 1);
	const struct perf_attr *a = &ku->r->at.attrs[aidx];
	int e = check_attr(ku, a);
	if (e)
		return e;
	if (ku->attached && aidx != ku->aidx && !live_kunw_event_ids(ku->lk))
		return base_err(log, -EINVAL, "kernel unwinding: the event %s is not of the attribute of the events attached "
			        "(%s, the reader's event %u): on this kernel the program's records do not say which "
			        "event they come from (that needs bpf_cast_to_kern_ctx, Linux 6.2)", a->name,
			        ku->r->at.attrs[ku->aidx].name, ku->aidx);
	if (aidx >= ku->nattr_on) {
		uint8_t *on = realloc(ku->attr_on, aidx + 1);
		if (!on)
			return base_err(log, -ENOMEM, "kernel unwinding: out of memory");
		memset(on + ku->nattr_on, 0, aidx + 1 - ku->nattr_on);
		ku->attr_on = on;
		ku->nattr_on = aidx + 1;
	}
	e = live_kunw_attach(ku->lk, perf_fd, false);
	if (e)
		return base_err(log, e, "kernel unwinding: the program could not be attached to the event %s: %s", a->name,
				strerror(-e));
	/* (libbpf enables an event it attaches to: off again until the caller enables it) */
	ioctl(perf_fd, PERF_EVENT_IOC_DISABLE, 0);
	ku->attr_on[aidx] = 1;
	if (!ku->attached++) {
		ku->aidx = aidx;
		live_kunw_ids(ku->lk, id, 0, 0);
	}
	return 0;
}

static int not_loaded(const struct uw_kernel_unwind *ku)
{
	return ku ? base_err(&ku->s->log, -EINVAL, "kernel unwinding: not loaded (uw_kernel_unwind_load)") : -EINVAL;
}

UW_API int uw_kernel_unwind_fd(const struct uw_kernel_unwind *ku)
{
	return ku && ku->lk ? live_kunw_fd(ku->lk) : not_loaded(ku);
}

UW_API int uw_kernel_unwind_drain(struct uw_kernel_unwind *ku)
{
	return ku && ku->lk ? live_kunw_drain(ku->lk) : not_loaded(ku);
}

UW_API int uw_kernel_unwind_update(struct uw_kernel_unwind *ku)
{
	return ku && ku->lk ? live_kunw_update(ku->lk) : not_loaded(ku);
}

UW_API int uw_kernel_unwind_prime(struct uw_kernel_unwind *ku, unsigned timeout_ms)
{
	if (!ku || !ku->lk)
		return not_loaded(ku);
	return live_kunw_prime(ku->lk, (uint64_t)(timeout_ms ? timeout_ms : 60000) * 1000000u);
}

UW_API int uw_kernel_unwind_stats(struct uw_kernel_unwind *ku, struct uw_kernel_unwind_stats *st)
{
	if (!ku || !st || st->sz < sizeof(size_t))
		return -EINVAL;
	struct uw_kernel_unwind_stats all;
	memset(&all, 0, sizeof(all));
	live_kunw_stats(ku->lk, &all);
	all.copied = ku->copied;
	/* an older caller gets the fields it knows of; a newer one zeros past ours */
	size_t want = st->sz;
	memcpy(st, &all, UW_MIN(want, sizeof(all)));
	if (want > sizeof(all))
		memset((char *)st + sizeof(all), 0, want - sizeof(all));
	st->sz = want;
	return 0;
}

UW_API void uw_kernel_unwind_free(struct uw_kernel_unwind *ku)
{
	if (!ku)
		return;
	if (ku->lk)
		reader_set_push_hook(ku->r, NULL, NULL);
	live_kunw_close(ku->lk);
	ku->r->kunw_owner = NULL;
	free(ku->attr_on);
	free(ku);
}
