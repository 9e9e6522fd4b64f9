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

UW_API uint64_t uw_perf_regs_user_mask(void)
{
	return uw_regs_mask(UW_ARCH_X86_64);
}

/* perf_event.h: PERF_SAMPLE_REGS_ABI_64 */
#define REGS_ABI_64 2u

static int unwind(struct uw_tracker *t, const struct uw_sample_regs *in, struct uw_frame *frames, unsigned cap,
                  struct uw_unwind_result *res)
{
	res->nr_frames = 0;
	res->stack_used = 0;
	res->nr_fp = res->nr_complex = res->nr_sframe = 0;
	res->ip = res->sp = res->fp = 0;
	if (in->abi != REGS_ABI_64 || !in->regs || !in->regs_mask) {
		/* no registers (a kernel thread), or a 32-bit process: nothing to unwind from */
		res->stop = UW_STOP_NO_REGS;
		return 0;
	}
	struct unw_regs regs;
	/* (one value per bit of the mask: the decoding stops at the mask's last bit) */
	unw_x86_64_from_perf(in->regs_mask, in->regs, 64, &regs);
	res->ip = regs.r[UNW_X86_RIP];
	res->sp = regs.r[UNW_X86_RSP];
	res->fp = regs.r[UNW_X86_RBP];
	/* In a syscall (not a fault or an interrupt, whose pc is exact), the user pc follows the
	 * `syscall` instruction, which left that same pc in rcx: the kernel's saved rcx equals its
	 * saved rip. */
	bool in_syscall = in->cpumode == TRACKER_CPUMODE_KERNEL && (regs.valid & (1u << UNW_X86_RCX)) &&
			  (regs.valid & (1u << UNW_X86_RIP)) && regs.r[UNW_X86_RCX] == regs.r[UNW_X86_RIP];
	unsigned max = UW_MIN(cap, t->s->opts.max_frames);
	struct unw_opts uo = { max, t->s->opts.no_fp_fallback != 0, &cfi_arch_x86_64, in_syscall, t->cfi_cache };
	uint64_t reach = 0;
	struct unw_stack stk = { regs.r[UNW_X86_RSP], in->stack, in->stack ? in->stack_size : 0, &reach };
	struct tracker_find_ctx fc = { t, tracker_sample_proc(t, (int32_t)in->pid, in->time), in->time };
	struct unw_result r;
	unw_run(&uo, &regs, &stk, tracker_find_pc, &fc, frames, &r);
	res->nr_frames = r.n;
	res->stop = r.stop;
	res->stack_used = reach;
	res->nr_fp = r.nfp;
	res->nr_complex = r.ncomplex;
	res->nr_sframe = r.nsframe;
	/* each step counted against the module it was taken from (the callee's): a frame's method
	 * says how its caller, the next frame, was found */
	for (unsigned i = 1; i < r.n; i++) {
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
                                         const struct uw_unwind_result *res)
{
	if (!in || !res || res->sz < offsetof(struct uw_unwind_result, stop) + sizeof(res->stop))
		return NULL;
	if (in->sz == sizeof(*in))
		cp = (struct uw_sample_regs *)in;
	else if (base_opts_copy(cp, sizeof(*cp), in) || cp->sz < offsetof(struct uw_sample_regs, stack_size) + 8)
		return NULL;
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
	const struct uw_sample_regs *x = take(in, &cp, res);
	if (!t || (cap && !frames) || !x)
		return -EINVAL;
	if (res->sz == sizeof(*res))
		return unwind(t, x, frames, cap, res);
	struct uw_unwind_result r = { .sz = sizeof(r) };
	int err = unwind(t, x, frames, cap, &r);
	give(res, &r);
	return err;
}

UW_API int uw_unwind_sample_each(struct uw_tracker *t, const struct uw_sample_regs *in, uw_frame_fn fn, void *ctx,
                                 struct uw_unwind_result *res)
{
	struct uw_sample_regs cp;
	const struct uw_sample_regs *x = take(in, &cp, res);
	if (!t || !fn || !x)
		return -EINVAL;
	struct uw_unwind_result r = { .sz = sizeof(r) };
	int err = unwind(t, x, t->frames, t->s->opts.max_frames, &r);
	for (unsigned i = 0; !err && i < r.nr_frames; i++) {
		if (fn(ctx, &t->frames[i])) {
			r.nr_frames = i + 1;
			r.stop = UW_STOP_MAX_FRAMES;
			break;
		}
	}
	give(res, &r);
	return err;
}
