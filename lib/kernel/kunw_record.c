/* SPDX-License-Identifier: MIT */
/*
 * The program's records: decoded in place, and the stacks they hold made whole. A record's
 * user frames are the program's; a walk it handed over (KUNW_STOP_FALLBACK) comes with the
 * registers of the frame it stopped at and a copy of the stack from there, and lib/unwind goes
 * on from that frame exactly as it unwinds a perf sample's stack copy.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "kernel/kunw.h"

int kunw_sample_decode(const void *data, size_t size, struct kunw_sample *out)
{
	const struct kunw_rec *r = data;
	if (size < sizeof(*r))
		return -UW_EFORMAT;
	size_t nregs = (r->flags & KUNW_F_REGS) ? KUNW_NREGS : 0;
	size_t nsum = r->kind == KUNW_KIND_WAIT_SUM ? KUNW_SUM_WORDS : 0;
	if (r->size > size || r->nkernel > KUNW_MAX_KFRAMES || r->nuser > KUNW_MAX_FRAMES || r->copy_len > KUNW_COPY_MAX ||
	    (!nregs && r->copy_len) || (nsum && (nregs || r->nkernel || r->nuser)) ||
	    sizeof(*r) + ((size_t)r->nkernel + r->nuser + nregs + nsum) * 8 + r->copy_len != r->size)
		return -UW_EFORMAT;
	const uint8_t *p = (const uint8_t *)data + sizeof(*r);
	out->rec = r;
	out->kernel = (const uint64_t *)p;
	out->user = out->kernel + r->nkernel;
	out->regs = nregs ? out->user + r->nuser : NULL;
	out->stack = (const uint8_t *)(out->user + r->nuser + nregs);
	out->sum = nsum ? out->user : NULL;
	return 0;
}

enum uw_stop_reason kunw_stop_reason(unsigned kunw_stop)
{
	switch (kunw_stop) {
	case KUNW_STOP_END: return UW_STOP_END_OF_STACK;
	case KUNW_STOP_MAX_FRAMES: return UW_STOP_MAX_FRAMES;
	case KUNW_STOP_NO_PROGRESS: return UW_STOP_NO_PROGRESS;
	case KUNW_STOP_NO_INFO: return UW_STOP_NO_UNWIND_INFO;
	case KUNW_STOP_BAD_MEMORY: return UW_STOP_BAD_MEMORY;
	case KUNW_STOP_BAD_CFI: return UW_STOP_BAD_CFI;
	case KUNW_STOP_NO_USER: return UW_STOP_NO_REGS;
	default: return UW_STOP_UNKNOWN;
	}
}

/* The record's registers and stack copy (KUNW_F_REGS), as unw_run takes them. */
static void regs_of(const struct kunw_sample *s, struct unw_regs *regs, struct unw_stack *stk)
{
	const struct kunw_rec *r = s->rec;
	memset(regs, 0, sizeof(*regs));
	for (unsigned i = 0; i < KUNW_NREGS && i < UNW_MAX_REGS; i++)
		regs->r[i] = s->regs[i];
	regs->valid = r->valid & ((1u << UNW_MAX_REGS) - 1);
	*stk = (struct unw_stack){ s->regs[KUNW_R_RSP], s->stack, r->copy_len, NULL, NULL };
}

void kunw_unwind_copy(const struct kunw_sample *s, const struct unw_opts *opts, unw_find_fn find, void *find_ctx,
                      struct uw_frame *frames, unsigned cap, struct unw_result *res)
{
	struct unw_regs regs;
	struct unw_stack stk;
	struct unw_opts o = *opts;
	memset(res, 0, sizeof(*res));
	if (!s->regs) {
		res->stop = UW_STOP_NO_REGS;
		return;
	}
	regs_of(s, &regs, &stk);
	o.max_frames = UW_MIN(o.max_frames, cap);
	bool frame0 = s->rec->flags & KUNW_F_VERIFY || s->rec->nuser == 0;
	o.in_syscall = frame0 && (s->rec->flags & KUNW_F_IN_SYSCALL);
	struct unw_resume from = { s->rec->nuser, s->rec->method, (s->rec->flags & KUNW_F_IS_CALL) != 0 };
	unw_run_from(&o, frame0 ? NULL : &from, &regs, &stk, find, find_ctx, frames, res);
}

void kunw_finish(const struct kunw_sample *s, const struct unw_opts *opts, unw_find_fn find, void *find_ctx,
                 struct uw_frame *frames, unsigned cap, struct kunw_result *res)
{
	const struct kunw_rec *r = s->rec;
	memset(res, 0, sizeof(*res));
	unsigned n = UW_MIN((unsigned)r->nuser, cap);
	for (unsigned i = 0; i < n; i++) {
		uint64_t pc = s->user[i] & KUNW_PC_MASK;
		uint8_t method = (uint8_t)(s->user[i] >> KUNW_METHOD_SHIFT);
		struct unw_pc_info info = { 0 };
		bool mapped = find(find_ctx, pc, &info);
		struct uw_frame *f = &frames[i];
		memset(f, 0, sizeof(*f));
		f->pc = pc;
		f->module = info.module;
		f->map_addr = mapped ? info.map_addr : pc;
		f->rel_pc = pc - info.bias;
		f->method = method;
		/* a pc is a return address but in frame 0 and after a signal frame */
		f->is_call = i > 0 && method != UW_METHOD_SIGNAL;
	}
	res->n = res->nkernel = n;
	res->stop = kunw_stop_reason(r->stop);
	if (n < r->nuser) {
		res->stop = UW_STOP_MAX_FRAMES;
		return;
	}
	if (r->stop != KUNW_STOP_FALLBACK)
		return;
	struct unw_result ur;
	if (!s->regs || (r->flags & KUNW_F_VERIFY) || n >= cap) {
		res->stop = n >= cap ? UW_STOP_MAX_FRAMES : UW_STOP_UNKNOWN;
		return;
	}
	kunw_unwind_copy(s, opts, find, find_ctx, frames + n, cap - n, &ur);
	res->n = n + ur.n;
	res->stop = ur.stop;
	res->finished = true;
}

void kunw_timing_print(const struct kunw_timing *t, void *file)
{
	static const char *const names[KUNW_T__COUNT] = {
		"sample", "kernel callchain", "user registers", "walk", "  mapping searches", "  rule searches",
		"  stack reads", "hand-over copy", "record output", "clock pair", "process lookup", "record header",
	};
	FILE *f = file;
	uint64_t samples = t->n[KUNW_T_ALL];
	fprintf(f, "kernel unwinding stages: %" PRIu64 " samples (ns per sample; per call; calls and bytes per "
	           "sample; stages include the clock reads of stages inside them)\n",
	        samples);
	for (unsigned i = 0; i < KUNW_T__COUNT; i++) {
		if (!t->n[i])
			continue;
		double per = samples ? (double)t->ns[i] / (double)samples : 0;
		fprintf(f, "  %-20s %9.1f ns/sample %8.1f ns/call %7.2f calls/sample", names[i], per,
		        (double)t->ns[i] / (double)t->n[i], samples ? (double)t->n[i] / (double)samples : 0);
		if (t->bytes[i])
			fprintf(f, " %9.1f bytes/sample", samples ? (double)t->bytes[i] / (double)samples : 0);
		fprintf(f, "\n");
	}
}

/* The line of a verifier's log that says why (its last but the statistics it ends with and the
 * instructions it went through), else the log's start. */
const char *kunw_verifier_why(const char *log, size_t *n)
{
	const char *best = NULL, *p = log;
	size_t best_n = 0;
	while (*p) {
		const char *e = strchr(p, '\n');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		bool stat = !strncmp(p, "processed ", 10) || !strncmp(p, "verification time", 17) ||
			    !strncmp(p, "stack depth", 11) || !strncmp(p, "mark_precise", 12);
		bool insn = l && (p[0] >= '0' && p[0] <= '9') && memchr(p, ':', l);
		if (l && !stat && !insn && p[0] != ';' && p[0] != ' ' && p[0] != '\t') {
			best = p;
			best_n = l;
		}
		p += l + (e != NULL);
	}
	if (!best) {
		best = log;
		best_n = strcspn(log, "\n");
	}
	*n = best_n;
	return best;
}
