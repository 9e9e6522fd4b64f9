/* SPDX-License-Identifier: MIT */
#include "unwind/unwind.h"

#include <errno.h>

#include "cfi/cfi_find.h"

enum step_status {
	STEP_OK,
	STEP_END,         /* outermost frame reached */
	STEP_NO_INFO,     /* no rule applies */
	STEP_MEM_HIGH,    /* read past the end of the stack copy */
	STEP_MEM_BAD,     /* read elsewhere outside the copy */
	STEP_BAD_CFI,
	STEP_DOWN,        /* the caller's frame would lie below the callee's (a loop, or garbage) */
	STEP_UNSUPP,      /* an SFrame rule the compact rules cannot follow */
};

/* The stack as the steps read it: the caller's copy, then, once the hook has given it, the
 * whole copy in its place, so that every later read takes the inline path. */
struct step_ctx {
	uint64_t base;
	const uint8_t *data;
	uint64_t size;
	uint64_t reach;              /* the end offset of the furthest read asked for */
	struct unw_stack_more *more; /* NULL once asked */
	const struct unw_regs *regs;
	enum step_status memfail;
};

/* A read outside the copy: the hook asked once for the whole copy, else the failure said. */
__attribute__((noinline)) static bool read_slow(struct step_ctx *c, uint64_t addr, void *buf, unsigned n)
{
	struct unw_stack_more *m = c->more;
	if (m) {
		c->more = NULL;
		if (!m->tried) {
			m->tried = true;
			m->data = m->fetch(m->ctx, &m->size);
		}
		if (m->data) {
			c->data = m->data;
			c->size = m->size;
			uint64_t off = addr - c->base;
			if (off <= c->size && c->size - off >= n) {
				memcpy(buf, c->data + off, n);
				return true;
			}
		}
	}
	c->memfail = addr >= c->base + c->size ? STEP_MEM_HIGH : STEP_MEM_BAD;
	return false;
}

/* Reads n bytes at addr (n a constant where it is inlined: no call to memcpy). An address
 * below the copy wraps to an offset past it. */
static inline bool stack_read(struct step_ctx *c, uint64_t addr, void *buf, unsigned n)
{
	uint64_t off = addr - c->base;
	if (off < ((uint64_t)1 << 32) && off + n > c->reach)
		c->reach = off + n;
	if (UW_LIKELY(off <= c->size && c->size - off >= n)) {
		memcpy(buf, c->data + off, n);
		return true;
	}
	return read_slow(c, addr, buf, n);
}

static bool read_u64(struct step_ctx *c, uint64_t addr, uint64_t *v)
{
	return stack_read(c, addr, v, 8);
}

static bool expr_reg(void *ctx, unsigned regno, uint64_t *val)
{
	struct step_ctx *c = ctx;
	if (regno >= UNW_MAX_REGS || !(c->regs->valid & (1u << regno)))
		return false;
	*val = c->regs->r[regno];
	return true;
}

static bool expr_mem(void *ctx, uint64_t addr, void *buf, unsigned n)
{
	return stack_read(ctx, addr, buf, n);
}

/* Fast path: one compiled rule. */
static enum step_status step_rule(struct step_ctx *c, const struct cfi_arch *a, const struct cfi_rule *r,
                                  struct unw_regs *regs)
{
	uint64_t base;
	if (r->cfa_reg == a->sp)
		base = regs->r[a->sp];
	else if (r->cfa_reg == a->fp && (regs->valid & (1u << a->fp)))
		base = regs->r[a->fp];
	else
		return STEP_BAD_CFI;
	uint64_t cfa = base + (int64_t)r->cfa_off, ra;
	if (!read_u64(c, cfa + (int64_t)r->ra_off, &ra))
		return c->memfail;
	if (r->flags & CFI_F_BP_SAVED) {
		uint64_t at = cfa + (int64_t)r->bp_off, v;
		/* A save slot below the stack pointer was popped already (epilogue after
		 * `pop %rbp`/`leave`, whose CFI keeps the old rule): the register holds the value. */
		if (at >= regs->r[a->sp]) {
			if (!read_u64(c, at, &v))
				return c->memfail;
			regs->r[a->fp] = v;
			regs->valid |= 1u << a->fp;
		}
	} else if (r->flags & CFI_F_BP_UNDEF) {
		regs->valid &= ~(1u << a->fp);
	}
	for (unsigned i = 0; i < CFI_NSAVED; i++) {
		if (!r->saved[i])
			continue;
		uint64_t at = cfa + 8 * (int64_t)r->saved[i], v;
		if (at < regs->r[a->sp])
			continue; /* popped already */
		if (!read_u64(c, at, &v))
			return c->memfail;
		regs->r[a->saved[i]] = v;
		regs->valid |= 1u << a->saved[i];
	}
	regs->r[a->sp] = cfa;
	regs->r[a->ra] = ra;
	return STEP_OK;
}

/* A save slot outside the frame [sp, CFA) is not the frame's, and the register holds its
 * value: a rule computed from a register the epilogue restored already (the DRAP functions'
 * rbp at [rbp], kept after `leave`, when rbp is the caller's) names the caller's memory, or no
 * address; one below the stack pointer was popped already. */
static bool slot_outside_frame(uint64_t at, uint64_t sp, uint64_t cfa)
{
	return at < sp || at >= cfa;
}

/* Slow path: the full rule set from the FDE, with DWARF expressions. */
static enum step_status step_full(struct step_ctx *c, const struct cfi_arch *a, const struct cfi_state *st,
                                  struct unw_regs *regs)
{
	struct cfi_expr_ctx x = { expr_reg, expr_mem, c };
	uint64_t cfa;
	if (st->cfa_is_expr) {
		int e = cfi_expr_eval(&x, st->cfa_expr, st->cfa_expr_len, false, 0, &cfa);
		if (e)
			return e == -EFAULT ? c->memfail : STEP_BAD_CFI;
	} else {
		if (st->cfa_reg >= UNW_MAX_REGS || !(regs->valid & (1u << st->cfa_reg)))
			return STEP_BAD_CFI;
		cfa = regs->r[st->cfa_reg] + (uint64_t)st->cfa_off;
	}
	struct unw_regs out = *regs;
	unsigned nregs = UW_MIN(a->nregs, UNW_MAX_REGS);
	for (unsigned i = 0; i < nregs; i++) {
		const struct cfi_reg_rule *rr = &st->regs[i];
		uint64_t v, at;
		int e;
		switch (rr->kind) {
		case CFI_R_SAME:
			continue;
		case CFI_R_UNDEF:
			if (i == a->ra)
				return STEP_END;
			out.valid &= ~(1u << i);
			continue;
		case CFI_R_OFFSET:
			at = cfa + (uint64_t)rr->off;
			if (i != a->ra && at < regs->r[a->sp])
				continue; /* popped already (see step_rule) */
			if (!read_u64(c, at, &v))
				return c->memfail;
			break;
		case CFI_R_VAL_OFFSET:
			v = cfa + (uint64_t)rr->off;
			break;
		case CFI_R_REG:
			if (rr->reg >= UNW_MAX_REGS || !(regs->valid & (1u << rr->reg)))
				return STEP_BAD_CFI;
			v = regs->r[rr->reg];
			break;
		case CFI_R_EXPR:
			e = cfi_expr_eval(&x, rr->expr, rr->expr_len, true, cfa, &at);
			if (e)
				return e == -EFAULT ? c->memfail : STEP_BAD_CFI;
			/* (not in a signal frame: its registers lie in the signal frame, which may be on
			 * another stack) */
			if (i != a->ra && !st->signal && slot_outside_frame(at, regs->r[a->sp], cfa))
				continue;
			if (!read_u64(c, at, &v))
				return c->memfail;
			break;
		case CFI_R_VAL_EXPR:
			e = cfi_expr_eval(&x, rr->expr, rr->expr_len, true, cfa, &v);
			if (e)
				return e == -EFAULT ? c->memfail : STEP_BAD_CFI;
			break;
		default:
			return STEP_BAD_CFI;
		}
		out.r[i] = v;
		out.valid |= 1u << i;
	}
	if (st->regs[a->ra].kind == CFI_R_SAME)
		return STEP_BAD_CFI; /* a return address "unchanged" would loop */
	/* The CFA is the caller's stack pointer unless a rule says otherwise (DWARF 5 §6.4.1) */
	if (st->regs[a->sp].kind == CFI_R_SAME)
		out.r[a->sp] = cfa;
	out.valid |= 1u << a->sp;
	*regs = out;
	return STEP_OK;
}

/* The frame-pointer convention: [bp] = caller's bp, [bp + 8] = return address. */
static enum step_status step_fp(struct step_ctx *c, const struct cfi_arch *a, struct unw_regs *regs)
{
	if (!(regs->valid & (1u << a->fp)))
		return STEP_NO_INFO;
	uint64_t bp = regs->r[a->fp], nbp, ra;
	/* the psABI marks the outermost frame with a zero frame pointer (set by _start) */
	if (bp == 0)
		return STEP_END;
	if (bp & 7)
		return STEP_NO_INFO;
	if (bp < regs->r[a->sp])
		/* into the part of the copy already unwound: a chain that loops back down the
		 * stack; anywhere else, rbp is not a frame pointer here */
		return bp >= c->base ? STEP_DOWN : STEP_NO_INFO;
	if (!read_u64(c, bp, &nbp) || !read_u64(c, bp + 8, &ra))
		return c->memfail;
	regs->r[a->fp] = nbp;
	regs->r[a->sp] = bp + 16;
	regs->r[a->ra] = ra;
	return STEP_OK;
}

/* The address of an SFrame flexible rule: the CFA or a register, plus off. */
static enum step_status flex_addr(const struct cfi_loc *l, uint64_t cfa, const struct unw_regs *regs, uint64_t *at)
{
	uint64_t base = cfa;
	if (l->from_reg) {
		if (l->reg >= UNW_MAX_REGS || !(regs->valid & (1u << l->reg)))
			return STEP_BAD_CFI;
		base = regs->r[l->reg];
	}
	*at = base + (int64_t)l->off;
	return STEP_OK;
}

/* A value by an SFrame flexible rule: its address, read when AT. */
static enum step_status flex_value(struct step_ctx *c, const struct cfi_loc *l, uint64_t cfa,
                                   const struct unw_regs *regs, uint64_t *out)
{
	uint64_t at;
	enum step_status s = flex_addr(l, cfa, regs, &at);
	if (s != STEP_OK)
		return s;
	if (l->kind == CFI_LOC_VAL) {
		*out = at;
		return STEP_OK;
	}
	return read_u64(c, at, out) ? STEP_OK : c->memfail;
}

/* A step by an SFrame v3 flexible row (a realigned stack's DRAP register, a value in a
 * register): the CFA from any register the unwinder knows, read from memory if the rule says
 * so; the return address and frame pointer by their own rules. */
static enum step_status step_flex(struct step_ctx *c, const struct cfi_arch *a, const struct cfi_flex *fx,
                                  struct unw_regs *regs)
{
	if (fx->cfa_reg >= UNW_MAX_REGS || !(regs->valid & (1u << fx->cfa_reg)))
		return STEP_BAD_CFI;
	uint64_t cfa = regs->r[fx->cfa_reg] + (int64_t)fx->cfa_off, ra, fp = 0;
	if (fx->cfa_deref && !read_u64(c, cfa, &cfa))
		return c->memfail;
	enum step_status s = flex_value(c, &fx->ra, cfa, regs, &ra);
	if (s != STEP_OK)
		return s;
	bool fp_set = false;
	if (fx->fp.kind != CFI_LOC_SAME) {
		uint64_t at;
		s = flex_addr(&fx->fp, cfa, regs, &at);
		if (s != STEP_OK)
			return s;
		if (fx->fp.kind != CFI_LOC_AT || !slot_outside_frame(at, regs->r[a->sp], cfa)) {
			s = flex_value(c, &fx->fp, cfa, regs, &fp);
			if (s != STEP_OK)
				return s;
			fp_set = true;
		}
	}
	if (fp_set) {
		regs->r[a->fp] = fp;
		regs->valid |= 1u << a->fp;
	}
	regs->r[a->sp] = cfa;
	regs->r[a->ra] = ra;
	return STEP_OK;
}

/* A PLT stub pushes nothing: the return address is at the stack pointer. */
static enum step_status step_plt(struct step_ctx *c, const struct cfi_arch *a, struct unw_regs *regs)
{
	uint64_t ra;
	if (!read_u64(c, regs->r[a->sp], &ra))
		return c->memfail;
	regs->r[a->sp] += 8;
	regs->r[a->ra] = ra;
	return STEP_OK;
}

static bool return_address_at_sp(struct step_ctx *c, const struct cfi_arch *a, const struct unw_regs *regs,
                                 unw_find_fn find, void *find_ctx, struct cfi_cache *cache)
{
	uint64_t ra;
	const struct cfi_rule *r;
	struct unw_pc_info info = { 0 };
	if (!read_u64(c, regs->r[a->sp], &ra) || ra == 0 || !find(find_ctx, ra, &info) || !info.code)
		return false;
	return (info.code->cfi && cfi_table_find_cached(info.code->cfi, cache, ra - 1 - info.bias, &r)) ||
	       (info.code->sframe && cfi_table_find_cached(info.code->sframe, cache, ra - 1 - info.bias, &r));
}

static bool fp_target_mapped(const struct cfi_arch *a, const struct unw_regs *regs, unw_find_fn find,
                             void *find_ctx)
{
	struct unw_pc_info info = { 0 };
	uint64_t ra = regs->r[a->ra];
	return ra == 0 || find(find_ctx, ra, &info);
}

static bool in_plt(const struct unw_code *code, uint64_t rel)
{
	for (unsigned i = 0; i < code->nplt; i++)
		if (rel >= code->plt[i].lo && rel < code->plt[i].hi)
			return true;
	return false;
}

static enum uw_stop_reason stop_of(enum step_status s)
{
	switch (s) {
	case STEP_END: return UW_STOP_END_OF_STACK;
	case STEP_MEM_HIGH: return UW_STOP_STACK_EXHAUSTED;
	case STEP_MEM_BAD: return UW_STOP_BAD_MEMORY;
	case STEP_BAD_CFI: return UW_STOP_BAD_CFI;
	case STEP_DOWN: return UW_STOP_NO_PROGRESS;
	case STEP_UNSUPP: return UW_STOP_SFRAME_RULE;
	default: return UW_STOP_NO_UNWIND_INFO;
	}
}

void unw_run(const struct unw_opts *opts, struct unw_regs *regs, const struct unw_stack *stack,
             unw_find_fn find, void *find_ctx, struct uw_frame *frames, struct unw_result *res)
{
	unw_run_from(opts, NULL, regs, stack, find, find_ctx, frames, res);
}

static void run(const struct unw_opts *opts, const struct unw_resume *from, struct unw_regs *regs,
                struct step_ctx *c, unw_find_fn find, void *find_ctx, struct uw_frame *frames, struct unw_result *res)
{
	const struct cfi_arch *a = opts->arch;
	/* frame 0 and frames interrupted by a signal have an exact pc */
	bool is_call = from && from->depth && from->is_call;
	uint8_t found_by = from && from->depth ? from->method : UW_METHOD_REGS;
	/* the stack's own frame 0 (not the first frame of a resumed walk) */
	const bool resumed = from && from->depth;
#define FRAME0() (res->n == 1 && !resumed)
	bool sp_stayed = false;
	res->n = 0;
	res->ncomplex = res->nfp = res->nsframe = 0;
	res->stop = UW_STOP_END_OF_STACK;
	const uint32_t need = (1u << a->sp) | (1u << a->ra);
	if ((regs->valid & need) != need) {
		res->stop = UW_STOP_NO_REGS;
		return;
	}
	for (;;) {
		uint64_t pc = regs->r[a->ra];
		if (pc == 0 && res->n > 0) {
			res->stop = UW_STOP_END_OF_STACK;
			return;
		}
		if (res->n >= opts->max_frames) {
			res->stop = UW_STOP_MAX_FRAMES;
			return;
		}
		struct unw_pc_info info = { 0 };
		bool mapped = find(find_ctx, pc, &info);
		struct uw_frame one;
		struct uw_frame *f = opts->on_frame ? &one : &frames[res->n];
		res->n++;
		memset(f, 0, sizeof(*f));
		f->pc = pc;
		f->module = info.module;
		f->map_addr = mapped ? info.map_addr : pc;
		f->rel_pc = pc - info.bias;
		f->is_call = is_call;
		f->method = found_by;
		f->sp = regs->r[a->sp];
		if (opts->on_frame && opts->on_frame(opts->on_frame_ctx, f, regs)) {
			res->stop = UW_STOP_CALLBACK;
			return;
		}
		uint64_t lookup = (is_call ? pc - 1 : pc) - info.bias;
		uint64_t old_sp = regs->r[a->sp];
		enum step_status s = STEP_NO_INFO;
		const struct cfi_rule *rule = NULL;
		uint8_t method = UW_METHOD_CFI;
		bool signal = false;
		c->memfail = STEP_MEM_BAD;
		bool found = info.code && info.code->cfi && cfi_table_find_cached(info.code->cfi, opts->cache, lookup, &rule);
		/* A sample taken in a syscall has the user pc just after the `syscall` instruction,
		 * which may be the end of its FDE (rt_sigreturn in __restore_rt): the instruction
		 * before it has the same rules. */
		if (!found && FRAME0() && opts->in_syscall && info.code && info.code->cfi &&
		    cfi_table_find_cached(info.code->cfi, opts->cache, lookup - 1, &rule)) {
			found = true;
			lookup--;
		}
		/* where CFI has no row for the pc, the module's SFrame section (a program built with
		 * --gsframe may have no .eh_frame at all) */
		bool via_sframe = false;
		if (!found && info.code && info.code->sframe) {
			found = cfi_table_find_cached(info.code->sframe, opts->cache, lookup, &rule);
			if (!found && FRAME0() && opts->in_syscall &&
			    cfi_table_find_cached(info.code->sframe, opts->cache, lookup - 1, &rule)) {
				found = true;
				lookup--;
			}
			via_sframe = found;
		}
		if (found) {
			signal = rule->flags & CFI_F_SIGNAL;
			if (via_sframe) {
				method = UW_METHOD_SFRAME;
				res->nsframe++;
			}
			if (rule->flags & CFI_F_END) {
				s = STEP_END;
			} else if (rule->flags & CFI_F_UNSUPP) {
				s = STEP_UNSUPP;
			} else if (via_sframe && (rule->flags & CFI_F_FLEX)) {
				const struct cfi_table *t = info.code->sframe;
				s = (uint32_t)rule->cfa_off < t->nflex ? step_flex(c, a, &t->flex[rule->cfa_off], regs)
								       : STEP_BAD_CFI;
			} else if (rule->flags & CFI_F_COMPLEX) {
				struct cfi_state st;
				res->ncomplex++;
				if (cfi_state_at(info.code->cfi, rule->cfa_reg, (uint32_t)rule->cfa_off, lookup, &st))
					s = STEP_BAD_CFI;
				else
					s = step_full(c, a, &st, regs);
			} else {
				s = step_rule(c, a, rule, regs);
			}
			if (signal)
				method = UW_METHOD_SIGNAL;
		} else if (info.code && in_plt(info.code, lookup)) {
			method = UW_METHOD_PLT;
			s = step_plt(c, a, regs);
		} else if (!opts->no_fp) {
			method = UW_METHOD_FP;
			res->nfp++;
			struct unw_regs saved = *regs;
			s = step_fp(c, a, regs);
			/* Frame 0 at the first instruction of a function without CFI (crti's _init,
			 * run by ld.so; _fini, run at exit): nothing pushed yet, the return address is
			 * at the stack pointer. Taken only when the frame pointer gives nothing usable
			 * (no frame, or a return address outside every mapping: rbp is then some
			 * caller's data) and the value looks like a return address: its module's CFI
			 * covers the call before it. */
			bool fp_usable = s == STEP_END || (s == STEP_OK && fp_target_mapped(a, regs, find, find_ctx));
			if (!fp_usable && FRAME0() && return_address_at_sp(c, a, &saved, find, find_ctx, opts->cache)) {
				*regs = saved;
				method = UW_METHOD_PLT;
				s = step_plt(c, a, regs);
			}
			if (s == STEP_NO_INFO && !mapped) {
				res->stop = UW_STOP_NO_MODULE;
				return;
			}
		}
		if (s != STEP_OK) {
			res->stop = (s == STEP_NO_INFO && !mapped) ? UW_STOP_NO_MODULE : stop_of(s);
			return;
		}
		/* The stack grows down: a caller's frame is above its callee's. A signal frame may
		 * jump anywhere above, but never below. The stack pointer may stay put for one step
		 * when the return address was in a register (__vfork pops it into rdi), provided
		 * the pc changes; twice in a row would be a loop. */
		uint64_t new_sp = regs->r[a->sp];
		if (new_sp < old_sp || (new_sp == old_sp && (sp_stayed || regs->r[a->ra] == pc))) {
			res->stop = UW_STOP_NO_PROGRESS;
			return;
		}
		sp_stayed = new_sp == old_sp;
		is_call = !signal;
		found_by = method;
	}
#undef FRAME0
}

void unw_run_from(const struct unw_opts *opts, const struct unw_resume *from, struct unw_regs *regs,
                  const struct unw_stack *stack, unw_find_fn find, void *find_ctx, struct uw_frame *frames,
                  struct unw_result *res)
{
	struct step_ctx c = { stack->base, stack->data, stack->size, 0, stack->more, regs, STEP_MEM_BAD };
	run(opts, from, regs, &c, find, find_ctx, frames, res);
	if (stack->reach && c.reach > *stack->reach)
		*stack->reach = c.reach;
}

/* perf_regs x86_64 order (PERF_REG_X86_*): AX BX CX DX SI DI BP SP IP FLAGS CS SS DS ES FS GS
 * R8..R15, to DWARF numbers (-1: not a DWARF register the unwinder uses) */
static const int8_t x86_perf_to_dwarf[24] = {
	UNW_X86_RAX, UNW_X86_RBX, UNW_X86_RCX, UNW_X86_RDX, UNW_X86_RSI, UNW_X86_RDI, UNW_X86_RBP, UNW_X86_RSP,
	UNW_X86_RIP, -1, -1, -1, -1, -1, -1, -1, UNW_X86_R8, UNW_X86_R8 + 1, UNW_X86_R8 + 2, UNW_X86_R8 + 3,
	UNW_X86_R8 + 4, UNW_X86_R8 + 5, UNW_X86_R8 + 6, UNW_X86_R8 + 7,
};

void unw_x86_64_from_perf(uint64_t mask, const uint64_t *vals, unsigned nvals, struct unw_regs *regs)
{
	memset(regs, 0, sizeof(*regs));
	unsigned k = 0;
	/* the mask's set bits, lowest first (their values are in that order) */
	for (uint64_t m = mask; m && k < nvals; m &= m - 1) {
		unsigned bit = (unsigned)__builtin_ctzll(m);
		uint64_t v = vals[k++];
		if (bit < UW_ARRAY_SIZE(x86_perf_to_dwarf) && x86_perf_to_dwarf[bit] >= 0) {
			int d = x86_perf_to_dwarf[bit];
			regs->r[d] = v;
			regs->valid |= 1u << d;
		}
	}
}

uint64_t unw_x86_64_perf_mask(void)
{
	/* AX..IP and R8..R15 */
	return ((1ull << (UNW_PERF_X86_IP + 1)) - 1) | (0xffull << UNW_PERF_X86_R8);
}
