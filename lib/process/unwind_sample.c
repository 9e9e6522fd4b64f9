/* SPDX-License-Identifier: MIT */
/*
 * One sample's user stack unwound against a tracker: the registers as the kernel records them
 * (perf's layout), the stack copy, and the process's mappings. Every client unwinds through
 * here: the perf.data reader, the live recorder, and programs that capture their own samples.
 */
#include <errno.h>

#include "process/tracker.h"

UW_API uint64_t uw_regs_mask(enum uw_arch arch)
{
	return arch == UW_ARCH_X86_64 ? unw_x86_64_perf_mask() : 0;
}

/* (deprecated: the same as uw_regs_mask; kept for programs built against 0.1) */
UW_API uint64_t uw_perf_regs_user_mask(void)
{
	return uw_regs_mask(UW_ARCH_X86_64);
}

/* One frame's registers as the callback of uw_unwind_sample_walk sees them: those known. */
struct uw_frame_regs {
	struct unw_regs r;
};

/* x86_64 DWARF numbers: what a caller frame's registers can be trusted for. rip, rsp (the CFA
 * of the frame below) and rbp as the unwinder tracks it; the other callee-saved registers (rbx,
 * r12-r15: restored by CFI, else unchanged) until a step without CFI (frame pointer, PLT rule),
 * whose callee may have changed them unsaid; caller-saved registers only in frame 0 and in a
 * frame a signal interrupted (all restored from its signal frame). */
#define KNOWN_ALWAYS ((1u << UNW_X86_RIP) | (1u << UNW_X86_RSP) | (1u << UNW_X86_RBP))
#define KNOWN_CALLEE ((1u << UNW_X86_RBX) | (0xfu << 12))

/* A walk with a callback per frame (uw_unwind_sample_each, uw_unwind_sample_walk). */
struct walk {
	struct tracker_find_ctx *fc;
	uw_frame_fn each;          /* one of these */
	uw_frame_regs_fn fn;
	void *ctx;
	unsigned index;            /* frames seen in this pass */
	unsigned skip;             /* delivered by an earlier pass (one cut short by a miss) */
	bool abort_on_miss;        /* a live tracker's miss ends the pass, to be asked and redone */
	bool retry, stopped;
	bool callee_known;
	struct uw_module *prev;    /* the frame before's module (steps counted per module) */
};

static int on_frame(void *ctx, const struct uw_frame *f, const struct unw_regs *regs)
{
	struct walk *w = ctx;
	if (w->abort_on_miss && w->fc->miss_pc) {
		w->retry = true;
		return 1;
	}
	unsigned i = w->index++;
	bool full = i == 0 || f->method == UW_METHOD_SIGNAL;
	if (full)
		w->callee_known = true;
	else if (f->method == UW_METHOD_FP || f->method == UW_METHOD_PLT)
		w->callee_known = false;
	struct uw_module *prev = w->prev;
	w->prev = f->module;
	if (i < w->skip)
		return 0;
	if (i && prev && f->method < UW_METHOD_MAX)
		__atomic_fetch_add(&prev->steps[f->method], 1, __ATOMIC_RELAXED);
	int stop;
	if (w->fn) {
		struct uw_frame_regs fr = { *regs };
		if (!full)
			fr.r.valid &= KNOWN_ALWAYS | (w->callee_known ? KNOWN_CALLEE : 0);
		stop = w->fn(w->ctx, f, &fr);
	} else {
		stop = w->each(w->ctx, f);
	}
	w->stopped = stop != 0;
	return stop;
}

/* Unwinds into frames[0..cap), or frame by frame through w (frames NULL). Under the tracker's
 * read lock; a live tracker's pc in no mapping is asked of the kernel under the write lock
 * between passes, and the walk redone (a callback's frames already delivered are not again).
 * The thread that feeds a tracker not live (feeder: a uw_reader unwinding its own samples)
 * reads without the lock: no other thread writes to it (tracker.h), and the lock's two atomic
 * operations and calls were most of what the redesign added to a sample's instructions. */
static int unwind(struct uw_tracker *t, const struct uw_sample_regs *in, struct unw_stack_more *more,
                  struct uw_frame *frames, unsigned cap, struct walk *w, bool feeder, struct uw_unwind_result *res)
{
	res->nr_frames = 0;
	res->stack_used = 0;
	res->nr_fp = res->nr_complex = res->nr_sframe = 0;
	res->ip = res->sp = res->fp = 0;
	if (in->abi != UW_REGS_ABI_64 || !in->regs || !in->regs_mask) {
		/* no registers (a kernel thread), or a 32-bit process: nothing to unwind from */
		res->stop = UW_STOP_NO_REGS;
		return 0;
	}
	struct unw_regs regs0;
	/* (one value per bit of the mask: the decoding stops at the mask's last bit) */
	unw_x86_64_from_perf(in->regs_mask, in->regs, 64, &regs0);
	res->ip = regs0.r[UNW_X86_RIP];
	res->sp = regs0.r[UNW_X86_RSP];
	res->fp = regs0.r[UNW_X86_RBP];
	/* In a syscall (not a fault or an interrupt, whose pc is exact), the user pc follows the
	 * `syscall` instruction, which left that same pc in rcx: the kernel's saved rcx equals its
	 * saved rip. */
	bool in_syscall = in->cpumode == TRACKER_CPUMODE_KERNEL && (regs0.valid & (1u << UNW_X86_RCX)) &&
			  (regs0.valid & (1u << UNW_X86_RIP)) && regs0.r[UNW_X86_RCX] == regs0.r[UNW_X86_RIP];
	unsigned max = UW_MIN(cap, t->s->opts.max_frames);
	struct cfi_cache *cache = tracker_cache_take(t);
	struct unw_opts uo = { max, t->s->opts.no_fp_fallback != 0, &cfi_arch_x86_64, in_syscall, cache,
			       w ? on_frame : NULL, w };
	uint64_t reach = 0;
	struct unw_result r;
	bool lock = !feeder || t->o.live;
	if (lock)
		tracker_rdlock(t);
	/* (not live: no lock taken or given back on the way) */
	struct tracker_find_ctx fc = { t, tracker_sample_proc_rd(t, (int32_t)in->pid, in->time), in->time, true, 0 };
	for (unsigned tries = 0;; tries++) {
		struct unw_regs regs = regs0;
		reach = 0;
		struct unw_stack stk = { regs0.r[UNW_X86_RSP], in->stack, in->stack ? in->stack_size : 0, &reach, more };
		if (w) {
			w->fc = &fc;
			w->skip = w->index;
			w->index = 0;
			w->prev = NULL;
			w->retry = false;
			w->abort_on_miss = tries < 8;
		}
		fc.miss_pc = 0;
		unw_run(&uo, &regs, &stk, tracker_find_pc, &fc, frames, &r);
		bool cut = w && w->retry;
		if ((w && w->stopped) || !fc.miss_pc)
			break;
		bool found = tracker_resolve_miss(&fc, (int32_t)in->pid);
		if (!cut && (!found || tries >= 8))
			break;
	}
	if (lock)
		tracker_unlock(t);
	tracker_cache_give(t, cache);
	res->nr_frames = r.n;
	res->stop = r.stop;
	res->stack_used = reach;
	res->nr_fp = r.nfp;
	res->nr_complex = r.ncomplex;
	res->nr_sframe = r.nsframe;
	/* each step counted against the module it was taken from (the callee's): a frame's method
	 * says how its caller, the next frame, was found (walks count as they go) */
	for (unsigned i = 1; !w && i < r.n; i++) {
		struct uw_module *m = frames[i - 1].module;
		unsigned how = frames[i].method;
		if (m && how < UW_METHOD_MAX)
			__atomic_fetch_add(&m->steps[how], 1, __ATOMIC_RELAXED);
	}
	return 0;
}

/* The caller's input, as this library's struct: used as it is when it is this version's, else
 * copied (an older caller's shorter one zero-extended). NULL when it cannot be. */
static const struct uw_sample_regs *take(const struct uw_sample_regs *in, struct uw_sample_regs *cp,
                                         const struct uw_unwind_result *res, int *err)
{
	*err = -EINVAL;
	if (!in || !res || res->sz < offsetof(struct uw_unwind_result, stop) + sizeof(res->stop))
		return NULL;
	if (in->sz == sizeof(*in)) {
		/* (the padding after the last field must be zero too) */
		if ((*err = BASE_OPTS_CHECK(in, uw_sample_regs, cpumode)))
			return NULL;
		cp = (struct uw_sample_regs *)in;
	} else if ((*err = BASE_OPTS_COPY(cp, uw_sample_regs, cpumode, in))) {
		return NULL;
	} else if (in->sz < offsetof(struct uw_sample_regs, stack_size) + 8) {
		*err = -EINVAL;
		return NULL;
	}
	*err = -EINVAL;
	return cp->stack_size && !cp->stack ? NULL : cp;
}

/* The result into the caller's struct, as much of it as its size holds. */
static void give(struct uw_unwind_result *out, const struct uw_unwind_result *r)
{
	size_t sz = out->sz;
	memcpy(out, r, UW_MIN(sz, sizeof(*r)));
	out->sz = sz;
}

UW_API int uw_unwind_sample(struct uw_tracker *t, const struct uw_sample_regs *in, struct uw_frame *frames,
                            unsigned cap, struct uw_unwind_result *res)
{
	struct uw_sample_regs cp;
	int err;
	const struct uw_sample_regs *x = take(in, &cp, res, &err);
	if (!x)
		return err;
	if (!t || (cap && !frames))
		return -EINVAL;
	if (res->sz == sizeof(*res))
		return unwind(t, x, NULL, frames, cap, NULL, false, res);
	struct uw_unwind_result r = { .sz = sizeof(r) };
	err = unwind(t, x, NULL, frames, cap, NULL, false, &r);
	give(res, &r);
	return err;
}

static int walk(struct uw_tracker *t, const struct uw_sample_regs *in, struct walk *w, struct uw_unwind_result *res)
{
	struct uw_sample_regs cp;
	int err;
	const struct uw_sample_regs *x = take(in, &cp, res, &err);
	if (!x)
		return err;
	if (!t)
		return -EINVAL;
	struct uw_unwind_result r = { .sz = sizeof(r) };
	err = unwind(t, x, NULL, NULL, t->s->opts.max_frames, w, false, &r);
	give(res, &r);
	return err;
}

UW_API int uw_unwind_sample_each(struct uw_tracker *t, const struct uw_sample_regs *in, uw_frame_fn fn, void *ctx,
                                 struct uw_unwind_result *res)
{
	if (!fn)
		return -EINVAL;
	struct walk w = { .each = fn, .ctx = ctx };
	return walk(t, in, &w, res);
}

UW_API int uw_unwind_sample_walk(struct uw_tracker *t, const struct uw_sample_regs *in, uw_frame_regs_fn fn,
                                 void *ctx, struct uw_unwind_result *res)
{
	if (!fn)
		return -EINVAL;
	struct walk w = { .fn = fn, .ctx = ctx };
	return walk(t, in, &w, res);
}

UW_API int uw_frame_reg(const struct uw_frame_regs *regs, unsigned regno, uint64_t *val)
{
	if (!regs || !val)
		return -EINVAL;
	if (regno >= UNW_MAX_REGS || !(regs->r.valid & (1u << regno)))
		return -ENOENT;
	*val = regs->r.r[regno];
	return 0;
}

int tracker_unwind(struct uw_tracker *t, const struct uw_sample_regs *in, struct unw_stack_more *more,
                   struct uw_frame *frames, unsigned cap, struct uw_unwind_result *res)
{
	return unwind(t, in, more, frames, cap, NULL, true, res);
}
