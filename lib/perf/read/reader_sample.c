/* SPDX-License-Identifier: MIT */
/*
 * A sample record into a struct uw_sample: the filters, the kernel callchain, and the user
 * part: unwound by the tracker from the registers and stack copy, or taken from the
 * callchain the file has (frame-pointer recordings, unwound's output) and judged. The stage's
 * state is struct reader_samples; it says what became of the record and the reader hands the
 * sample on (to stitching, then the consumer) or holds it for its deferred callchain.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cfi/cfi_find.h"
#include "perf/read/reader_deferred.h"
#include "perf/read/reader_sample.h"

static bool in_list(const int *v, size_t n, uint32_t x)
{
	for (size_t i = 0; i < n; i++)
		if ((uint32_t)v[i] == x)
			return true;
	return false;
}

/* Does the sample pass the pid, tid and comm filters? */
bool reader_sample_wanted(const struct uw_reader_opts *o, uint32_t pid, uint32_t tid, const char *comm)
{
	if ((o->pid && pid != (uint32_t)o->pid) || (o->tid && tid != (uint32_t)o->tid))
		return false;
	if ((o->npids && !in_list(o->pids, o->npids, pid)) || (o->ntids && !in_list(o->tids, o->ntids, tid)))
		return false;
	if (o->comm && (!comm || strcmp(comm, o->comm) != 0))
		return false;
	if (o->ncomms) {
		bool any = false;
		for (size_t i = 0; i < o->ncomms && !any; i++)
			any = comm && o->comms[i] && strcmp(comm, o->comms[i]) == 0;
		if (!any)
			return false;
	}
	return true;
}

/*
 * A callchain read from the file, judged by its outermost frame: a root when its module's CFI
 * marks the return address undefined there (the same test the unwinder stops on), cut short
 * when that CFI gives it a caller. A return address is looked up one byte back, inside its
 * call; unwound writes callers at the return address - 1 already, which stays inside the call.
 */
static enum uw_stop_reason judge_chain(struct tracker_find_ctx *fc, const struct uw_frame *outer, bool is_first)
{
	struct unw_pc_info info = { 0 };
	if (!outer->pc || !fc->p || !tracker_find_pc(fc, outer->pc, &info))
		return UW_STOP_NO_MODULE;
	const struct cfi_rule *rule;
	uint64_t lookup = outer->pc - (is_first ? 0 : 1) - info.bias;
	struct cfi_cache *cache = tracker_cache_take(fc->t); /* (other threads may unwind with the tracker) */
	bool found = info.code && ((info.code->cfi && cfi_table_find_cached(info.code->cfi, cache, lookup, &rule)) ||
				   (info.code->sframe && cfi_table_find_cached(info.code->sframe, cache, lookup, &rule)));
	tracker_cache_give(fc->t, cache);
	if (!found)
		return UW_STOP_UNKNOWN;
	return (rule->flags & CFI_F_END) ? UW_STOP_END_OF_STACK : UW_STOP_CHAIN_CUT;
}

/* A cut sample's whole stack, read back from the file when unwinding first wants bytes past
 * the cut (the unwinder's memory-read hook: the unwind goes on in the same pass). */
struct whole_ctx {
	struct reader_samples *ss;
	const struct perf_attr *a;
	const struct cut *cut;
	struct uw_sample *smp;
};

static const uint8_t *fetch_whole(void *ctx, uint64_t *size)
{
	struct whole_ctx *w = ctx;
	struct reader_samples *ss = w->ss;
	const uint8_t *whole = reader_read_whole(ss->in, w->cut);
	struct perf_sample ws;
	if (!whole || perf_sample_decode(w->a, whole + 8, w->cut->len - 8, &ws) || !ws.regs_abi || !ws.stack_dyn)
		return NULL;
	*size = ss->o->stack_limit ? UW_MIN(ws.stack_dyn, ss->o->stack_limit & ~7ull) : ws.stack_dyn;
	w->smp->stack = ws.stack;
	w->smp->stack_size = ws.stack_dyn;
	ss->st->stack_rereads++;
	ss->st->stack_bytes_read += ws.stack_size;
	return ws.stack;
}

/* The user part of a sample with a register and stack copy: unwound by the tracker, the bytes
 * past a cut copy pulled from the file when the unwinding wants them. */
static void unwind_user(struct reader_samples *ss, const struct perf_attr *a, const struct perf_sample *ps, uint16_t misc,
                        const struct cut *cut, uint64_t time, struct uw_sample *smp, struct reader_sample_out *out)
{
	/* the register block may be unaligned inside the record: copy it (at most 64 bits set) */
	memcpy(ss->regbuf, ps->regs, ps->nregs * 8);
	smp->stack = ps->stack;
	smp->stack_size = ps->stack_dyn;
	uint64_t dyn = ps->stack_dyn;
	if (ss->o->stack_limit && dyn > ss->o->stack_limit)
		dyn = ss->o->stack_limit & ~7ull; /* (as a smaller copy would have been) */
	/* (zeroed whole: its padding is checked) */
	UW_OPTS(uw_sample_regs, in, .pid = ps->pid, .tid = ps->tid, .time = time, .abi = (uint32_t)ps->regs_abi,
		.regs = ss->regbuf, .regs_mask = a->sample_regs_user, .stack = ps->stack, .stack_size = dyn,
		.cpumode = misc & PM_CPUMODE_MASK);
	struct uw_unwind_result res = { .sz = sizeof(res) };
	struct whole_ctx wc = { ss, a, cut, smp };
	struct unw_stack_more more = { fetch_whole, &wc, NULL, 0, false };
	bool cut_short = cut && cut->cut && !(ss->o->stack_limit && ps->stack_dyn >= ss->o->stack_limit);
	tracker_unwind(ss->t, &in, cut_short ? &more : NULL, ss->frames, ss->s->opts.max_frames, &res);
	smp->user_ip = res.ip;
	smp->user_sp = res.sp;
	smp->user_fp = res.fp;
	ss->st->stack_bytes_read += ps->stack_size;
	if (ps->stack_size) {
		out->reach = res.stack_used;
		out->stack_of = cut && cut->cut ? cut->len : ps->stack_size;
	}
	smp->nr_user = res.nr_frames;
	smp->stop_reason = (uint8_t)res.stop;
}

enum reader_made reader_sample_make(struct reader_samples *ss, const struct perf_attr *a, unsigned aidx,
                                    struct uw_event_stats *es, const uint8_t *rec, uint32_t len,
                                    const struct cut *cut, uint64_t ord, unsigned how, struct uw_sample *smp,
                                    struct reader_sample_out *out)
{
	struct uw_reader_stats *st = ss->st;
	struct perf_sample ps;
	uint16_t misc;
	memcpy(&misc, rec + 4, 2);
	if (!(how & READER_SAMPLE_REDELIVERED)) {
		st->samples++;
		es->samples++;
	}
	if (perf_sample_decode(a, rec + 8, len - 8, &ps)) {
		/* a malformed sample is dropped, not fatal: the rest of the file is fine */
		if (!st->malformed_samples++)
			base_log(&ss->s->log, UW_LOG_WARN,
				 "%s: sample %" PRIu64 " (%u bytes, event %u, sample_type %#" PRIx64 ") does not decode: "
				 "dropped (the summary counts any others)",
				 ss->path, st->samples, len, aidx, a ? a->sample_type : 0);
		return READER_DROPPED;
	}
	if (ss->o->event && strcmp(a->name, ss->o->event) != 0)
		return READER_DROPPED;
	/* (live: a process no event told of is made, its mappings asked of the kernel) */
	struct tracker_proc *p = tracker_sample_proc(ss->t, (int32_t)ps.pid, (a->sample_type & PS_TIME) ? ps.time : UINT64_MAX);
	const char *comm = tracker_comm(ss->t, ps.pid, ps.tid);
	/* the idle task, which no COMM names: perf calls it swapper (machine__idle_thread) */
	if (!ps.pid && !ps.tid && comm && comm[0] == ':')
		comm = "swapper";
	if (!reader_sample_wanted(ss->o, ps.pid, ps.tid, comm))
		return READER_DROPPED;
	/* a user part to come in a deferred callchain record (fp recordings: no stack copy): the
	 * sample waits for it (reader_deferred.c) */
	uint64_t cookie, at;
	if (!(how & READER_SAMPLE_REDELIVERED) && (a->sample_type & PS_CALLCHAIN) && !(ps.regs_abi && ps.stack_dyn) &&
	    reader_deferred_cookie(&ps, &cookie, &at)) {
		out->tid = ps.tid;
		out->time = ps.time;
		out->cookie = cookie;
		return READER_HOLD;
	}
	if (p && p->exited)
		st->exit_before_sample++;

	*smp = (struct uw_sample){ .sz = sizeof(*smp) };
	smp->pid = ps.pid;
	smp->tid = ps.tid;
	smp->cpu = (uint32_t)ps.cpu;
	smp->has_cpu = (a->sample_type & PS_CPU) != 0;
	smp->time = ps.time;
	smp->period = ps.period ? ps.period : 1;
	smp->ip = ps.ip;
	smp->cpumode = misc & PM_CPUMODE_MASK;
	smp->attr_index = aidx;
	smp->comm = comm;
	smp->event_name = a->name;
	smp->recorded_kernel = uw_tracker_kernel(ss->t); /* (its kernel frames are named with it) */

	/* the kernel callchain: the part after PERF_CONTEXT_KERNEL; user entries are used only
	 * when the sample carries no user stack to unwind (frame-pointer recordings) */
	unsigned nk = 0, nu_chain = 0;
	bool chain_full = false; /* user entries past max_frames */
	uint64_t ctx = 0;
	struct tracker_find_ctx fc = { .t = ss->t, .p = p, .time = (a->sample_type & PS_TIME) ? ps.time : UINT64_MAX };
	/* (in user mode the registers are unwound even with no stack bytes: their pc is the leaf,
	 * the frame perf reports, when the kernel could not copy a byte at the stack pointer, a
	 * page not yet faulted in; in the kernel the registers are the user ones saved on entry,
	 * and in execve they may be the old program's) */
	bool user_mode = (misc & PM_CPUMODE_MASK) != PM_KERNEL;
	bool have_stack = ps.regs_abi && ps.regs && (ps.stack_dyn || (user_mode && (a->sample_type & PS_STACK_USER)));
	for (uint64_t i = 0; i < ps.nr_callchain; i++) {
		uint64_t ip;
		memcpy(&ip, ps.callchain + 8 * i, 8);
		if (ip >= PC_MAX) {
			ctx = ip;
			continue;
		}
		if (ctx == PC_KERNEL && nk < ss->kcap) {
			ss->kbuf[nk++] = ip;
		} else if (ctx == PC_USER && !have_stack && !ps.regs_abi && nu_chain < ss->s->opts.max_frames) {
			tracker_frame_at(&fc, ip, nu_chain ? UW_METHOD_CALLCHAIN : UW_METHOD_REGS, &ss->frames[nu_chain]);
			nu_chain++;
		} else if (ctx == PC_USER && nu_chain == ss->s->opts.max_frames) {
			chain_full = true;
		}
	}
	smp->kernel = ss->kbuf;
	smp->nr_kernel = nk;
	smp->user = ss->frames;
	smp->has_callchain = (a->sample_type & (PS_CALLCHAIN | PS_REGS_USER)) != 0;
	if (have_stack) {
		unwind_user(ss, a, &ps, misc, cut, fc.time, smp, out);
	} else if (nu_chain) {
		smp->nr_user = nu_chain;
		int stated = ss->ft->stops ? reader_stated_stop(ss->ft, ord) : -1;
		if (stated >= 0) {
			smp->stop_reason = (uint8_t)stated;
			st->stops_stated++;
		} else if (chain_full) {
			smp->stop_reason = UW_STOP_MAX_FRAMES;
		} else {
			smp->stop_reason = (uint8_t)judge_chain(&fc, &ss->frames[nu_chain - 1], nu_chain == 1);
			st->stops_judged++;
		}
	} else if (how & READER_SAMPLE_MISSING) {
		smp->stop_reason = UW_STOP_DEFERRED_MISSING;
	} else if (!(a->sample_type & (PS_CALLCHAIN | PS_REGS_USER))) {
		/* no callchain at all: the sample's ip is the only frame */
		if ((misc & PM_CPUMODE_MASK) == PM_KERNEL) {
			ss->kbuf[0] = ps.ip;
			smp->nr_kernel = 1;
		} else {
			tracker_frame_at(&fc, ps.ip, UW_METHOD_REGS, &ss->frames[0]);
			smp->nr_user = 1;
		}
		smp->stop_reason = UW_STOP_NONE;
	} else if (!ps.regs_abi && (a->sample_type & PS_REGS_USER)) {
		smp->nr_user = 0;
		smp->stop_reason = UW_STOP_NO_REGS; /* a kernel thread: no user stack */
		st->samples_no_user++;
		es->samples_no_user++;
	} else if (a->sample_type & PS_REGS_USER) {
		/* registers but no stack bytes, taken in the kernel */
		smp->stop_reason = UW_STOP_STACK_EXHAUSTED;
	} else if (user_mode) {
		/* a user-mode sample whose callchain has no user part: the sample's ip is the leaf,
		 * as perf reports it */
		if (a->sample_type & PS_IP) {
			tracker_frame_at(&fc, ps.ip, UW_METHOD_REGS, &ss->frames[0]);
			smp->nr_user = 1;
		}
		smp->stop_reason = UW_STOP_UNKNOWN;
	} else {
		/* a callchain with only a kernel part, taken in the kernel: a kernel thread, or user
		 * frames left out (exclude_callchain_user) */
		smp->stop_reason = UW_STOP_NO_REGS;
		st->samples_no_user++;
		es->samples_no_user++;
	}
	return READER_MADE;
}

int reader_samples_init(struct reader_samples *ss, struct uw_session *s, struct uw_tracker *t,
                        const struct uw_reader_opts *o, struct uw_reader_stats *st, const char *path,
                        struct reader_input *in, const struct reader_features *ft)
{
	*ss = (struct reader_samples){ .s = s, .t = t, .o = o, .st = st, .path = path, .in = in, .ft = ft };
	ss->frames = calloc(s->opts.max_frames, sizeof(*ss->frames));
	ss->regbuf = calloc(64, sizeof(*ss->regbuf));
	ss->kcap = reader_kernel_frames(o);
	ss->kbuf = calloc(ss->kcap, sizeof(*ss->kbuf));
	return ss->frames && ss->regbuf && ss->kbuf ? 0 : -ENOMEM;
}

void reader_samples_free(struct reader_samples *ss)
{
	free(ss->frames);
	free(ss->regbuf);
	free(ss->kbuf);
	ss->frames = NULL;
	ss->regbuf = NULL;
	ss->kbuf = NULL;
}
