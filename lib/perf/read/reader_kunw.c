/* SPDX-License-Identifier: MIT */
/*
 * Samples whose user stack was walked in the kernel (live recording with kernel unwinding,
 * lib/kernel): the recorder pushes each record of the program's ring buffer as a private
 * record (PR_UW_KUNW: the event's id, then the struct kunw_rec), queued in time order with the
 * side-band records like a sample. Delivered, it becomes the same struct uw_sample a stack
 * copy gives: the program's frames (methods UW_METHOD_BPF_*), finished in user space by
 * lib/unwind from the registers and stack copy the program handed over where its walk
 * stopped, checked by the recorder's hook (mapping generations), and a PERF_RECORD_SAMPLE in
 * the event's layout for writers (its header fields; the chain comes from the frames). The
 * stage's state is struct reader_kunw (its own frame buffers, made at its first sample).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "perf/read/reader_kunw.h"
#include "kernel/kunw.h"

/* The sample record writers decode: the event's layout with the record's id, pc, ids, time,
 * cpu and period, an empty callchain and no registers or stack. @return its length, 0 when the
 * layout has fields this cannot fill. */
static uint32_t raw_sample(uint8_t *b, uint64_t st, uint64_t id, uint16_t misc, uint64_t ip,
                           const struct kunw_rec *kr)
{
	if (st & ~(uint64_t)(PS_IDENTIFIER | PS_IP | PS_TID | PS_TIME | PS_ID | PS_CPU | PS_PERIOD | PS_CALLCHAIN |
			     PS_REGS_USER | PS_STACK_USER))
		return 0;
	size_t at = 8;
	uint64_t v[16];
	unsigned n = 0;
	if (st & PS_IDENTIFIER)
		v[n++] = id;
	if (st & PS_IP)
		v[n++] = ip;
	if (st & PS_TID)
		v[n++] = (uint64_t)kr->tid << 32 | kr->pid;
	if (st & PS_TIME)
		v[n++] = kr->time;
	if (st & PS_ID)
		v[n++] = id;
	if (st & PS_CPU)
		v[n++] = kr->cpu;
	if (st & PS_PERIOD)
		v[n++] = kr->period;
	if (st & PS_CALLCHAIN)
		v[n++] = 0;
	if (st & PS_REGS_USER)
		v[n++] = 0; /* abi: none */
	if (st & PS_STACK_USER)
		v[n++] = 0; /* size */
	memcpy(b + at, v, n * 8);
	at += n * 8;
	uint32_t type = PR_SAMPLE;
	uint16_t size = (uint16_t)at;
	memcpy(b, &type, 4);
	memcpy(b + 4, &misc, 2);
	memcpy(b + 6, &size, 2);
	return (uint32_t)at;
}

/* The program's methods as the frames say them: walked in the kernel. */
static uint8_t bpf_method(uint8_t m)
{
	switch (m) {
	case UW_METHOD_REGS: return UW_METHOD_REGS;
	case UW_METHOD_FP: return UW_METHOD_BPF_FP;
	default: return UW_METHOD_BPF_ROWS;
	}
}

/* Verify mode (tests): the record also holds frame 0's registers and a copy of the stack;
 * lib/unwind over that copy is what `--unwind copy` would have given. Where it reached a root,
 * the program's frames must be the same pcs, frame for frame (methods differ by design). A walk
 * the program handed over cannot be finished from frame 0's registers: the copy's stack is
 * delivered instead. */
static int verify(struct reader_kunw *k, const struct kunw_sample *ks, const struct unw_opts *uo,
                  struct tracker_find_ctx *fc, struct kunw_result *res)
{
	unsigned max = k->s->opts.max_frames;
	if (!k->vframes && !(k->vframes = calloc(max, sizeof(*k->vframes))))
		return -ENOMEM;
	struct unw_result ur;
	kunw_unwind_copy(ks, uo, tracker_find_pc, fc, k->vframes, max, &ur);
	bool handed = ks->rec->stop == KUNW_STOP_FALLBACK;
	if (ur.stop == UW_STOP_END_OF_STACK) {
		unsigned n = handed ? res->nkernel : res->n;
		bool same = handed ? n <= ur.n : n == ur.n;
		for (unsigned i = 0; same && i < n; i++)
			same = k->frames[i].pc == k->vframes[i].pc;
		k->compared++;
		if (!same && k->differ++ < 5) {
			unsigned i = 0;
			while (i < n && i < ur.n && k->frames[i].pc == k->vframes[i].pc)
				i++;
			base_log(&k->s->log, UW_LOG_WARN,
				 "kernel unwinding verify: pid %u time %llu: %u frames in the kernel (%u walked, stop %u), %u from "
				 "the copy; first difference at frame %u: %#llx vs %#llx",
				 ks->rec->pid, (unsigned long long)ks->rec->time, res->n, res->nkernel, ks->rec->stop, ur.n, i,
				 (unsigned long long)(i < n ? k->frames[i].pc : 0),
				 (unsigned long long)(i < ur.n ? k->vframes[i].pc : 0));
		}
	}
	if (handed) {
		memcpy(k->frames, k->vframes, ur.n * sizeof(*k->frames));
		res->n = ur.n;
		res->nkernel = 0;
		res->stop = ur.stop;
		res->finished = true;
	}
	return 0;
}

void reader_kunw_init(struct reader_kunw *k, struct uw_session *s, struct uw_tracker *t,
                      const struct uw_reader_opts *o, struct uw_reader_stats *st)
{
	*k = (struct reader_kunw){ .s = s, .t = t, .o = o, .st = st, .kcap = reader_kernel_frames(o) };
}

int reader_kunw_make(struct reader_kunw *k, const struct perf_attr *a, unsigned aidx, struct uw_event_stats *es,
                     const uint8_t *rec, uint32_t len, struct uw_sample *smp)
{
	struct uw_reader_stats *st = k->st;
	if (!k->frames) {
		k->frames = calloc(k->s->opts.max_frames, sizeof(*k->frames));
		k->kbuf = calloc(k->kcap, sizeof(*k->kbuf));
		if (!k->frames || !k->kbuf)
			return -ENOMEM;
	}
	st->samples++;
	es->samples++;
	uint64_t id;
	struct kunw_sample ks;
	if (len < 16 || kunw_sample_decode(rec + 16, len - 16, &ks)) {
		st->malformed_samples++;
		return READER_DROPPED;
	}
	memcpy(&id, rec + 8, 8);
	const struct kunw_rec *kr = ks.rec;
	if (k->o->event && strcmp(a->name, k->o->event) != 0)
		return READER_DROPPED;
	struct tracker_proc *p = tracker_sample_proc(k->t, (int32_t)kr->pid, kr->time);
	const char *comm = tracker_comm(k->t, kr->pid, kr->tid);
	if (!kr->pid && !kr->tid && comm && comm[0] == ':')
		comm = "swapper";
	if (p && p->exited)
		st->exit_before_sample++;
	bool kmode = kr->flags & KUNW_F_KERNEL_MODE;
	uint16_t misc = kmode ? PM_KERNEL : PM_USER;
	/* bpf_get_stack in a perf_event program gives the event's own callchain where the event
	 * has one (PERF_SAMPLE_CALLCHAIN), its context marker (PERF_CONTEXT_KERNEL) first: the
	 * kernel's frames are its addresses (the marker was the sample's ip, and written twice) */
	unsigned k0 = 0;
	while (k0 < kr->nkernel && ks.kernel[k0] >= PC_MAX)
		k0++;
	uint64_t ip = kmode ? (k0 < kr->nkernel ? ks.kernel[k0] : 0)
	                    : (kr->nuser ? ks.user[0] & KUNW_PC_MASK : ks.regs ? ks.regs[KUNW_R_RIP] : 0);
	k->raw_len = raw_sample(k->raw, a->sample_type, id, misc, ip, kr);
	if (!k->raw_len) {
		st->malformed_samples++;
		return READER_DROPPED;
	}
	if (!reader_sample_wanted(k->o, kr->pid, kr->tid, comm))
		return READER_DROPPED;

	*smp = (struct uw_sample){ .sz = sizeof(*smp) };
	smp->pid = kr->pid;
	smp->tid = kr->tid;
	smp->cpu = kr->cpu;
	smp->has_cpu = (a->sample_type & PS_CPU) != 0;
	smp->time = kr->time;
	smp->period = kr->period ? kr->period : 1;
	smp->ip = ip;
	smp->cpumode = misc;
	smp->attr_index = aidx;
	smp->comm = comm;
	smp->event_name = a->name;
	smp->recorded_kernel = uw_tracker_kernel(k->t);
	smp->has_callchain = true;
	unsigned nk = 0;
	/* (the kernel's part only where the event samples the kernel) */
	for (unsigned i = k0; i < kr->nkernel && nk < k->kcap && !(a->flags & (1ull << 5)) /* exclude_kernel */; i++)
		if (ks.kernel[i] < PC_MAX) /* (a marker further on: none seen, none kept) */
			k->kbuf[nk++] = ks.kernel[i];
	smp->kernel = k->kbuf;
	smp->nr_kernel = nk;
	smp->user = k->frames;
	if (kr->stop == KUNW_STOP_NO_USER) {
		smp->stop_reason = UW_STOP_NO_REGS;
		st->samples_no_user++;
		es->samples_no_user++;
	} else if (kr->stop == KUNW_STOP_FALLBACK && !kr->nuser && !kr->copy_len && kmode) {
		/* handed over at frame 0 with no stack readable, in the kernel (a sample in execve,
		 * the old stack gone): as a copy with no bytes, no user frame (a register pc alone may
		 * be the old program's). In user mode the registers are finished below: their pc is
		 * the leaf (a stack page not yet faulted in, as a new thread's first instants) */
		smp->stop_reason = UW_STOP_STACK_EXHAUSTED;
	} else {
		struct uw_tracker *t = k->t;
		struct unw_opts uo = { k->s->opts.max_frames, t->s->opts.no_fp_fallback != 0, &cfi_arch_x86_64, false,
				       t->cfi_cache, NULL, NULL };
		struct tracker_find_ctx fc = { t, p, kr->time, false, 0 };
		struct kunw_result res;
		kunw_finish(&ks, &uo, tracker_find_pc, &fc, k->frames, k->s->opts.max_frames, &res);
		if ((kr->flags & KUNW_F_VERIFY) && verify(k, &ks, &uo, &fc, &res) < 0)
			return -ENOMEM;
		for (unsigned i = 0; i < res.nkernel; i++)
			k->frames[i].method = bpf_method(k->frames[i].method);
		if (res.finished) {
			smp->stack = ks.stack;
			smp->stack_size = kr->copy_len;
		}
		smp->nr_user = res.n;
		smp->stop_reason = (uint8_t)res.stop;
		if (k->fn)
			k->fn(k->ctx, &ks, p, smp, res.nkernel, res.finished);
		smp->user_ip = smp->nr_user ? k->frames[0].pc : 0;
	}
	return READER_MADE;
}

void reader_kunw_free(struct reader_kunw *k)
{
	free(k->frames);
	free(k->kbuf);
	free(k->vframes);
	k->frames = k->vframes = NULL;
	k->kbuf = NULL;
}
