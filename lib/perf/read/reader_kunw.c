/* SPDX-License-Identifier: MIT */
/*
 * Samples whose user stack was walked in the kernel (live recording with kernel unwinding,
 * lib/kernel): the recorder pushes each record of the program's ring buffer as a private
 * record (PR_UW_KUNW: the event's id, then the struct kunw_rec), queued in time order with the
 * side-band records like a sample. Delivered, it becomes the same struct uw_sample a stack
 * copy gives: the program's frames (methods UW_METHOD_BPF_*), finished in user space by
 * lib/unwind from the registers and stack copy the program handed over where its walk
 * stopped, checked by the recorder's hook (mapping generations), and a PERF_RECORD_SAMPLE in
 * the event's layout for writers (its header fields; the chain comes from the frames).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "perf/read/reader.h"
#include "kernel/kunw.h"

void reader_set_kunw_hook(struct uw_reader *r, reader_kunw_fn fn, void *ctx)
{
	r->kunw.fn = fn;
	r->kunw.ctx = ctx;
}

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
static int verify(struct uw_reader *r, const struct kunw_sample *ks, const struct unw_opts *uo,
                  struct tracker_find_ctx *fc, struct kunw_result *res)
{
	unsigned max = r->s->opts.max_frames;
	if (!r->kunw.vframes && !(r->kunw.vframes = calloc(max, sizeof(*r->kunw.vframes))))
		return -ENOMEM;
	struct unw_result ur;
	kunw_unwind_copy(ks, uo, tracker_find_pc, fc, r->kunw.vframes, max, &ur);
	bool handed = ks->rec->stop == KUNW_STOP_FALLBACK;
	if (ur.stop == UW_STOP_END_OF_STACK) {
		unsigned n = handed ? res->nkernel : res->n;
		bool same = handed ? n <= ur.n : n == ur.n;
		for (unsigned i = 0; same && i < n; i++)
			same = r->frames[i].pc == r->kunw.vframes[i].pc;
		r->kunw.compared++;
		if (!same && r->kunw.differ++ < 5) {
			unsigned i = 0;
			while (i < n && i < ur.n && r->frames[i].pc == r->kunw.vframes[i].pc)
				i++;
			base_log(&r->s->log, UW_LOG_WARN,
				 "kernel unwinding verify: pid %u time %llu: %u frames in the kernel (%u walked, stop %u), %u from "
				 "the copy; first difference at frame %u: %#llx vs %#llx",
				 ks->rec->pid, (unsigned long long)ks->rec->time, res->n, res->nkernel, ks->rec->stop, ur.n, i,
				 (unsigned long long)(i < n ? r->frames[i].pc : 0),
				 (unsigned long long)(i < ur.n ? r->kunw.vframes[i].pc : 0));
		}
	}
	if (handed) {
		memcpy(r->frames, r->kunw.vframes, ur.n * sizeof(*r->frames));
		res->n = ur.n;
		res->nkernel = 0;
		res->stop = ur.stop;
		res->finished = true;
	}
	return 0;
}

int reader_kunw_sample(struct uw_reader *r, unsigned aidx, const uint8_t *rec, uint32_t len, uint64_t ord)
{
	(void)ord;
	const struct perf_attr *a = &r->at.attrs[aidx];
	struct uw_event_stats *es = &r->evst[aidx];
	r->st.samples++;
	es->samples++;
	uint64_t id;
	struct kunw_sample ks;
	if (len < 16 || kunw_sample_decode(rec + 16, len - 16, &ks)) {
		r->st.malformed_samples++;
		return 0;
	}
	memcpy(&id, rec + 8, 8);
	const struct kunw_rec *kr = ks.rec;
	if (r->o.event && strcmp(a->name, r->o.event) != 0)
		return 0;
	struct tracker_proc *p = tracker_sample_proc(r->t, (int32_t)kr->pid, kr->time);
	const char *comm = tracker_comm(r->t, kr->pid, kr->tid);
	if (!kr->pid && !kr->tid && comm && comm[0] == ':')
		comm = "swapper";
	if (p && p->exited)
		r->st.exit_before_sample++;
	bool kmode = kr->flags & KUNW_F_KERNEL_MODE;
	uint16_t misc = kmode ? PM_KERNEL : PM_USER;
	uint64_t ip = kmode ? (kr->nkernel ? ks.kernel[0] : 0) : (kr->nuser ? ks.user[0] & KUNW_PC_MASK : kr->regs[KUNW_R_RIP]);
	uint32_t rlen = raw_sample(r->kunw.raw, a->sample_type, id, misc, ip, kr);
	if (!rlen) {
		r->st.malformed_samples++;
		return 0;
	}
	r->cur_rec = r->kunw.raw;
	r->cur_len = rlen;
	if (!reader_sample_wanted(r, kr->pid, kr->tid, comm))
		return 0;

	struct uw_sample smp = { .sz = sizeof(smp) };
	smp.pid = kr->pid;
	smp.tid = kr->tid;
	smp.cpu = kr->cpu;
	smp.has_cpu = (a->sample_type & PS_CPU) != 0;
	smp.time = kr->time;
	smp.period = kr->period ? kr->period : 1;
	smp.ip = ip;
	smp.cpumode = misc;
	smp.attr_index = aidx;
	smp.comm = comm;
	smp.event_name = a->name;
	smp.recorded_kernel = uw_tracker_kernel(r->t);
	smp.has_callchain = true;
	unsigned nk = 0;
	/* (the kernel's part only where the event samples the kernel) */
	for (unsigned i = 0; i < kr->nkernel && nk < r->kcap && !(a->flags & (1ull << 5)) /* exclude_kernel */; i++)
		r->kbuf[nk++] = ks.kernel[i];
	smp.kernel = r->kbuf;
	smp.nr_kernel = nk;
	smp.user = r->frames;
	if (kr->stop == KUNW_STOP_NO_USER) {
		smp.stop_reason = UW_STOP_NO_REGS;
		r->st.samples_no_user++;
		es->samples_no_user++;
	} else if (kr->stop == KUNW_STOP_FALLBACK && !kr->nuser && !kr->copy_len) {
		/* handed over at frame 0 with no stack readable (a sample in execve, the old stack
		 * gone): as a copy with no bytes, no user frame (a register pc alone may be the old
		 * program's) */
		smp.stop_reason = UW_STOP_STACK_EXHAUSTED;
	} else {
		struct uw_tracker *t = r->t;
		struct unw_opts uo = { r->s->opts.max_frames, t->s->opts.no_fp_fallback != 0, &cfi_arch_x86_64, false,
				       t->cfi_cache, NULL, NULL };
		struct tracker_find_ctx fc = { t, p, kr->time, false, 0 };
		struct kunw_result res;
		kunw_finish(&ks, &uo, tracker_find_pc, &fc, r->frames, r->s->opts.max_frames, &res);
		if ((kr->flags & KUNW_F_VERIFY) && verify(r, &ks, &uo, &fc, &res) < 0)
			return -ENOMEM;
		for (unsigned i = 0; i < res.nkernel; i++)
			r->frames[i].method = bpf_method(r->frames[i].method);
		if (res.finished) {
			smp.stack = ks.stack;
			smp.stack_size = kr->copy_len;
		}
		smp.nr_user = res.n;
		smp.stop_reason = (uint8_t)res.stop;
		if (r->kunw.fn)
			r->kunw.fn(r->kunw.ctx, &ks, p, &smp, res.nkernel, res.finished);
		smp.user_ip = smp.nr_user ? r->frames[0].pc : 0;
	}
	return r->o.stitch ? reader_stitch_sample(r, aidx, &smp) : reader_deliver_sample(r, aidx, &smp);
}
