/* SPDX-License-Identifier: MIT */
/*
 * A module's rows in the kernel program's layout (kunw_abi.h). The program must take, at every
 * pc, the step lib/unwind takes there, so the table is built from the same tables unw_run
 * searches, merged in its order: the CFI row where CFI covers the pc, else the SFrame row, else
 * the PLT rule inside a PLT section, else nothing (frame pointers). Rules are deduplicated per
 * module (libc: 28,490 rows, 379 distinct rules), so a row is 8 bytes: its pc's offset and its
 * rule's index.
 *
 * What converts: every compact rule (CFA from rsp or rbp plus an offset, return address, rbp
 * and rbx/r12-r15 saved at CFA offsets, or undefined), the outermost-frame rule, the PLT stub
 * rule; of the rules lib/cfi marks COMPLEX (re-interpreted from the FDE), three shapes every
 * x86_64 program has are recognised and converted: the toolchains' PLT expression, the kernel's
 * signal frame as glibc's __restore_rt describes it, and a CFA from another register with
 * compact rules for the rest (ld.so's _dl_runtime_resolve, through which every lazily bound
 * call's first run goes: CFA = rbx + 32). Any other COMPLEX rule (a DWARF expression, a
 * register kept in another) and SFrame's flexible and unsupported rows become KUNW_K_FALLBACK:
 * the program hands the walk to user space there.
 */
#include <errno.h>
#include <stdlib.h>

#include "cfi/cfi_find.h"
#include "kernel/kunw.h"

/* the program's methods are the public ones */
_Static_assert(KUNW_M_REGS == UW_METHOD_REGS && KUNW_M_CFI == UW_METHOD_CFI && KUNW_M_FP == UW_METHOD_FP &&
               KUNW_M_PLT == UW_METHOD_PLT && KUNW_M_SIGNAL == UW_METHOD_SIGNAL && KUNW_M_SFRAME == UW_METHOD_SFRAME,
               "kernel methods number as enum uw_frame_method");
_Static_assert(sizeof(struct kunw_rule) == 16, "a rule is two words");
_Static_assert(sizeof(struct kunw_map) == 24 && sizeof(struct kunw_rec) % 8 == 0, "shared layouts");
_Static_assert(KUNW_NSAVED == CFI_NSAVED, "the callee-saved registers of cfi_arch");

/* ---------------------------------------------------------------- whole tables from ELF */

int kunw_code_build(struct unw_tables *t, struct elfv *elf, struct elfv *dbg)
{
	int sframe_err;
	int err = unw_tables_build(t, elf, dbg, false, &sframe_err);
	if (!err && sframe_err == -ENOMEM)
		err = sframe_err;
	if (err)
		unw_tables_free(t);
	return err;
}

/* ---------------------------------------------------------------- COMPLEX rules */

/* DWARF 5 §7.7.1 opcodes */
enum {
	OP_deref = 0x06, OP_and = 0x1a, OP_plus = 0x22, OP_shl = 0x24, OP_ge = 0x2a, OP_lit0 = 0x30,
	OP_breg0 = 0x70,
};

/* An expression that is exactly DW_OP_breg<reg> <off>, optionally followed by DW_OP_deref. */
static bool breg_expr(const uint8_t *e, uint32_t len, unsigned reg, int64_t *off, bool *deref)
{
	if (!e || len < 2 || e[0] != OP_breg0 + reg)
		return false;
	struct base_cursor c = base_cursor(e + 1, len - 1);
	*off = base_cur_sleb(&c);
	if (c.bad)
		return false;
	*deref = false;
	if (base_cur_left(&c) == 1 && *c.p == OP_deref) {
		*deref = true;
		return true;
	}
	return base_cur_left(&c) == 0;
}

/* The PLT expression binutils and lld write for .plt (System V x86_64 psABI §4.4.3's lazy
 * stubs): CFA = rsp + 8 + ((rip & 15) >= K) << 3, the return address at CFA - 8, nothing else
 * saved. @return K, or -1. */
static int plt_expr(const struct cfi_arch *a, const struct cfi_state *st)
{
	static const uint8_t head[] = { OP_breg0 + 7, 8, 0x80, 0, OP_lit0 + 15, OP_and };
	static const uint8_t tail[] = { OP_ge, OP_lit0 + 3, OP_shl, OP_plus };
	const uint8_t *e = st->cfa_expr;
	if (!st->cfa_is_expr || st->cfa_expr_len != sizeof(head) + 1 + sizeof(tail) || memcmp(e, head, sizeof(head)) ||
	    memcmp(e + sizeof(head) + 1, tail, sizeof(tail)))
		return -1;
	uint8_t k = e[sizeof(head)];
	if (k < OP_lit0 || k > OP_lit0 + 15)
		return -1;
	for (unsigned i = 0; i < a->nregs; i++) {
		const struct cfi_reg_rule *r = &st->regs[i];
		if (i == a->ra ? r->kind != CFI_R_OFFSET || r->off != -8 : r->kind != CFI_R_SAME)
			return -1;
	}
	return k - OP_lit0;
}

/* The kernel's x86_64 rt_sigframe (arch/x86/include/uapi/asm/sigcontext.h): once the handler
 * returned into the restorer, rsp points at the ucontext, whose mcontext starts 40 bytes in
 * with r8..r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip. True when every register's rule
 * and the CFA's say exactly that (glibc's __restore_rt), which the program then reads itself. */
static bool sigframe(const struct cfi_state *st)
{
	/* mcontext slot of each DWARF register 0..16 */
	static const uint8_t slot[KUNW_NREGS] = { 13, 12, 14, 11, 9, 8, 10, 15, 0, 1, 2, 3, 4, 5, 6, 7, 16 };
	int64_t off;
	bool deref;
	if (!st->signal || !st->cfa_is_expr || !breg_expr(st->cfa_expr, st->cfa_expr_len, 7, &off, &deref) || !deref ||
	    off != 40 + 8 * 15)
		return false;
	for (unsigned i = 0; i < KUNW_NREGS; i++) {
		const struct cfi_reg_rule *r = &st->regs[i];
		if (r->kind != CFI_R_EXPR || !breg_expr(r->expr, r->expr_len, 7, &off, &deref) || deref ||
		    off != 40 + 8 * slot[i])
			return false;
	}
	return true;
}

/* ---------------------------------------------------------------- conversion */

/* A COMPLEX row that is a compact rule but for its CFA register (not rsp or rbp): CFA = reg +
 * offset, the return address and rbp at CFA offsets (or rbp unchanged or undefined), rbx and
 * r12-r15 at CFA offsets or unchanged, every other register unchanged. lib/unwind's step_full
 * then does what the program's compact step does with that base. k gets the rule's kind
 * (KUNW_K_CFA_REG + reg), offsets and saved slots. */
static bool cfa_reg_rule(const struct cfi_arch *a, const struct cfi_state *st, struct kunw_rule *k)
{
	if (st->cfa_is_expr || st->cfa_reg >= KUNW_K_CFA_REG_END - KUNW_K_CFA_REG || st->cfa_reg == a->sp ||
	    st->cfa_reg == a->fp || st->cfa_reg >= a->nregs || st->cfa_off < INT32_MIN || st->cfa_off > INT32_MAX)
		return false;
	const struct cfi_reg_rule *ra = &st->regs[a->ra], *bp = &st->regs[a->fp];
	if (ra->kind != CFI_R_OFFSET || ra->off < INT16_MIN || ra->off > INT16_MAX)
		return false;
	if (bp->kind == CFI_R_OFFSET && bp->off >= INT16_MIN && bp->off <= INT16_MAX) {
		k->flags |= KUNW_RF_BP_SAVED;
		k->bp_off = (int16_t)bp->off;
	} else if (bp->kind == CFI_R_UNDEF) {
		k->flags |= KUNW_RF_BP_UNDEF;
	} else if (bp->kind != CFI_R_SAME) {
		return false;
	}
	uint64_t others = (1ull << a->nregs) - 1;
	others &= ~(1ull << a->ra | 1ull << a->fp);
	for (unsigned i = 0; i < CFI_NSAVED; i++) {
		const struct cfi_reg_rule *rr = &st->regs[a->saved[i]];
		others &= ~(1ull << a->saved[i]);
		if (rr->kind == CFI_R_SAME)
			continue;
		/* (undefined: step_full forgets the register, which the program cannot) */
		if (rr->kind != CFI_R_OFFSET || rr->off % 8 || rr->off == 0 || rr->off / 8 < INT8_MIN ||
		    rr->off / 8 > INT8_MAX)
			return false;
		k->saved[i] = (int8_t)(rr->off / 8);
	}
	/* rsp among them: unchanged, so that the CFA becomes the caller's stack pointer */
	for (unsigned i = 0; i < a->nregs; i++)
		if ((others >> i & 1) && st->regs[i].kind != CFI_R_SAME)
			return false;
	k->kind = (uint8_t)(KUNW_K_CFA_REG + st->cfa_reg);
	k->cfa_off = (int32_t)st->cfa_off;
	k->ra_off = (int16_t)ra->off;
	return true;
}

/* The slots a CFA rule's step reads, and whether one read of the KUNW_WINDOW bytes below the CFA
 * holds them all. */
static void cfa_slots(struct kunw_rule *k)
{
	int64_t offs[2 + KUNW_NSAVED] = { k->ra_off, k->bp_off };
	k->slots = 1 | ((k->flags & KUNW_RF_BP_SAVED) ? 2 : 0);
	for (unsigned i = 0; i < KUNW_NSAVED; i++) {
		offs[2 + i] = 8 * (int64_t)k->saved[i];
		if (k->saved[i])
			k->slots |= (uint8_t)(4u << i);
	}
	bool window = true;
	for (unsigned i = 0; i < 2 + KUNW_NSAVED; i++)
		if ((k->slots & (1u << i)) && (offs[i] < -KUNW_WINDOW || offs[i] > -8 || (offs[i] & 7)))
			window = false;
	if (window)
		k->flags |= KUNW_RF_WINDOW;
}

/* The program's rule for one state of an FDE whose row lib/cfi marks COMPLEX: the shapes above,
 * else KUNW_K_FALLBACK. */
static struct kunw_rule convert_state(const struct cfi_arch *a, const struct cfi_state *st)
{
	struct kunw_rule k = { 0 }, c = { 0 };
	int thr;
	k.kind = KUNW_K_FALLBACK;
	if ((thr = plt_expr(a, st)) >= 0) {
		k.kind = KUNW_K_PLT_EXPR;
		k.cfa_off = thr;
	} else if (sigframe(st)) {
		k.kind = KUNW_K_SIGNAL;
	} else if (cfa_reg_rule(a, st, &c)) {
		k = c;
		cfa_slots(&k);
	}
	return k;
}

/* The states of the FDEs behind the CFI table's COMPLEX rows, converted: each FDE's program run
 * once (lib/cfi keeps one row for consecutive COMPLEX states, and interprets the FDE at a pc
 * each time; doing so per pc here would cost the FDE's length per row). Sorted by FDE, then pc. */
struct cstate {
	uint64_t fde; /* section << 32 | offset, as the row says it */
	uint64_t lo, hi;
	struct kunw_rule k;
};

struct cstates {
	struct base_vec v; /* struct cstate */
	const struct cfi_arch *a;
	uint64_t fde;
};

/* states kept at most (48 MiB): a file whose COMPLEX FDEs hold more has the rest handed over */
#define MAX_CSTATES (1u << 20)

static int cstate_add(void *ctx, uint64_t lo, uint64_t hi, const struct cfi_state *st)
{
	struct cstates *c = ctx;
	if (c->v.len >= MAX_CSTATES)
		return -UW_ELIMIT;
	struct cstate *s = base_vec_push(&c->v);
	if (!s)
		return -ENOMEM;
	*s = (struct cstate){ c->fde, lo, hi, convert_state(c->a, st) };
	return 0;
}

static int cmp_cstate(const void *x, const void *y)
{
	const struct cstate *a = x, *b = y;
	if (a->fde != b->fde)
		return a->fde < b->fde ? -1 : 1;
	return a->lo < b->lo ? -1 : a->lo > b->lo;
}

static uint64_t row_fde(const struct cfi_rule *r)
{
	return (uint64_t)r->cfa_reg << 32 | (uint32_t)r->cfa_off;
}

static int complex_states(const struct cfi_table *t, struct cstates *out)
{
	struct base_map seen;
	base_map_init(&seen);
	out->a = t->arch;
	int err = 0;
	for (uint32_t i = 0; i < t->n && !err; i++) {
		const struct cfi_rule *r = &t->rules[i];
		if (!(r->flags & CFI_F_COMPLEX) || base_map_has(&seen, row_fde(r)))
			continue;
		out->fde = row_fde(r);
		if (base_map_put(&seen, out->fde, (void *)(uintptr_t)1)) {
			err = -ENOMEM;
			break;
		}
		size_t before = out->v.len;
		int e = cfi_fde_states(t, r->cfa_reg, (uint32_t)r->cfa_off, cstate_add, out);
		if (e == -ENOMEM)
			err = e;
		else if (e)
			out->v.len = before; /* (nothing reliable: its rows are handed over) */
		if (e == -UW_ELIMIT)
			break;
	}
	base_map_free(&seen);
	if (!err && out->v.len)
		qsort(out->v.data, out->v.len, sizeof(struct cstate), cmp_cstate);
	return err;
}

/* The converted state of row r's FDE at pc, else KUNW_K_FALLBACK. */
static struct kunw_rule complex_at(const struct cstates *cs, const struct cfi_rule *r, uint64_t pc)
{
	const struct cstate *v = cs->v.data;
	uint64_t fde = row_fde(r);
	size_t lo = 0, hi = cs->v.len;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid].fde < fde || (v[mid].fde == fde && v[mid].lo <= pc))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && v[lo - 1].fde == fde && v[lo - 1].lo <= pc && pc < v[lo - 1].hi)
		return v[lo - 1].k;
	return (struct kunw_rule){ .kind = KUNW_K_FALLBACK };
}

static struct kunw_rule convert(const struct cfi_table *t, const struct cstates *cs, const struct cfi_rule *r,
                                bool sframe, uint64_t pc)
{
	const struct cfi_arch *a = t->arch;
	struct kunw_rule k = { 0 };
	if (r->flags & CFI_F_END) {
		k.kind = KUNW_K_END;
	} else if ((r->flags & CFI_F_UNSUPP) || (sframe && (r->flags & (CFI_F_FLEX | CFI_F_COMPLEX)))) {
		k.kind = KUNW_K_FALLBACK;
	} else if (r->flags & CFI_F_COMPLEX) {
		k = complex_at(cs, r, pc);
	} else if (r->cfa_reg == a->sp || r->cfa_reg == a->fp) {
		k.kind = r->cfa_reg == a->sp ? KUNW_K_CFA_SP : KUNW_K_CFA_FP;
		k.cfa_off = r->cfa_off;
		k.ra_off = r->ra_off;
		if (r->flags & CFI_F_BP_SAVED) {
			k.flags |= KUNW_RF_BP_SAVED;
			k.bp_off = r->bp_off;
		} else if (r->flags & CFI_F_BP_UNDEF) {
			k.flags |= KUNW_RF_BP_UNDEF;
		}
		memcpy(k.saved, r->saved, sizeof(k.saved));
		cfa_slots(&k);
	} else {
		k.kind = KUNW_K_FALLBACK;
	}
	if (r->flags & CFI_F_SIGNAL)
		k.flags |= KUNW_RF_SIGNAL;
	if (sframe)
		k.flags |= KUNW_RF_SFRAME;
	return k;
}

static bool in_plt(const struct unw_code *code, uint64_t pc)
{
	for (unsigned i = 0; i < code->nplt; i++)
		if (pc >= code->plt[i].lo && pc < code->plt[i].hi)
			return true;
	return false;
}

/* The rule unw_run takes at pc (lib/unwind/unwind.c: CFI, SFrame, PLT, frame pointer). */
static struct kunw_rule rule_at(const struct unw_code *code, const struct cstates *cs, uint64_t pc)
{
	const struct cfi_rule *r;
	if (code->cfi && cfi_table_search(code->cfi, pc, &r))
		return convert(code->cfi, cs, r, false, pc);
	if (code->sframe && cfi_table_search(code->sframe, pc, &r))
		return convert(code->sframe, cs, r, true, pc);
	struct kunw_rule k = { 0 };
	if (in_plt(code, pc))
		k.kind = KUNW_K_PLT;
	return k;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

/* Every pc where the rule may change: the rows of both tables, their ends, the PLT bounds, and
 * where the state of an FDE behind a COMPLEX row changes. */
static int boundaries(const struct unw_code *code, const struct cstates *cs, struct base_vec *out)
{
	const struct cfi_table *tabs[2] = { code->cfi, code->sframe };
	for (unsigned k = 0; k < 2; k++) {
		const struct cfi_table *t = tabs[k];
		if (!t)
			continue;
		if (t->lazy)
			return -EINVAL;
		if (base_vec_reserve(out, out->len + t->n + 1))
			return -ENOMEM;
		for (uint32_t i = 0; i < t->n; i++)
			*(uint64_t *)base_vec_push(out) = t->base + t->pcs[i];
		*(uint64_t *)base_vec_push(out) = t->end;
	}
	/* (room for all first: a push may move the vector, and with it a slot taken before) */
	if (base_vec_reserve(out, out->len + 2 * (size_t)code->nplt + 2 * cs->v.len))
		return -ENOMEM;
	for (size_t i = 0; i < cs->v.len; i++) {
		const struct cstate *c = base_vec_at(&cs->v, i);
		*(uint64_t *)base_vec_push(out) = c->lo;
		*(uint64_t *)base_vec_push(out) = c->hi;
	}
	for (unsigned i = 0; i < code->nplt; i++) {
		*(uint64_t *)base_vec_push(out) = code->plt[i].lo;
		*(uint64_t *)base_vec_push(out) = code->plt[i].hi;
	}
	qsort(out->data, out->len, sizeof(uint64_t), cmp_u64);
	return 0;
}

struct rules {
	struct base_vec v;     /* struct kunw_rule */
	struct base_map index; /* hash of a rule -> index + 1 */
};

/* The index of rule r in the module's distinct rules, added when new. @return -1 without memory. */
static int64_t rule_index(struct rules *rs, const struct kunw_rule *r)
{
	uint64_t h = base_hash_bytes(r, sizeof(*r));
	uintptr_t got = (uintptr_t)base_map_get(&rs->index, h);
	if (got && memcmp(base_vec_at(&rs->v, got - 1), r, sizeof(*r)) == 0)
		return (int64_t)got - 1;
	if (got) {
		/* two rules with one hash: look through all */
		for (size_t i = 0; i < rs->v.len; i++)
			if (memcmp(base_vec_at(&rs->v, i), r, sizeof(*r)) == 0)
				return (int64_t)i;
	}
	struct kunw_rule *slot = base_vec_push(&rs->v);
	if (!slot)
		return -1;
	*slot = *r;
	if (!got && base_map_put(&rs->index, h, (void *)(uintptr_t)rs->v.len))
		return -1;
	return (int64_t)rs->v.len - 1;
}

struct row {
	uint64_t pc;
	uint32_t rule;
};

/* Lays out the table's lines (kunw_abi.h) from its rows and rules. */
static int lay_out(struct kunw_table *t, const struct row *rows, size_t n, const struct rules *rs)
{
	uint64_t base = n ? rows[0].pc : 0, span = n ? rows[n - 1].pc - base + 1 : 0;
	if (base + span > UINT32_MAX || n > INT32_MAX)
		return -UW_ELIMIT;
	uint64_t nblocks = span ? ((span - 1) >> KUNW_BLOCK_SHIFT) + 1 : 0;
	uint64_t index_at = 1, index_lines = nblocks / KUNW_INDEX_PER_LINE + 1;
	uint64_t rules_at = index_at + index_lines, rows_at = rules_at + (rs->v.len + 3) / 4;
	uint64_t nlines = rows_at + (n + 7) / 8, nwords = nlines * KUNW_LINE_WORDS;
	if (nwords > INT32_MAX)
		return -UW_ELIMIT;
	uint64_t *w = calloc(nwords, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w[0] = span << 32 | base;
	w[1] = rows_at << 32 | rules_at;
	w[2] = (uint64_t)n << 32 | index_at;
	/* block[b]: the first row at or after base + (b << shift), for b in 0..nblocks; each line's
	 * 16th half-word repeats the next line's first (n beyond the last block) */
	uint32_t *half = (uint32_t *)(w + index_at * KUNW_LINE_WORDS);
	size_t row = 0;
	for (uint64_t b = 0; b < (index_lines + 1) * KUNW_INDEX_PER_LINE; b++) {
		uint64_t start = base + (b << KUNW_BLOCK_SHIFT);
		while (row < n && rows[row].pc < start)
			row++;
		uint64_t line = b / KUNW_INDEX_PER_LINE, at = b % KUNW_INDEX_PER_LINE;
		if (line < index_lines)
			half[line * 2 * KUNW_LINE_WORDS + at] = (uint32_t)row;
		if (at == 0 && line > 0)
			half[(line - 1) * 2 * KUNW_LINE_WORDS + KUNW_INDEX_PER_LINE] = (uint32_t)row;
	}
	if (rs->v.len) /* (none: a module whose every pc takes the frame-pointer rule) */
		memcpy(&w[rules_at * KUNW_LINE_WORDS], rs->v.data, rs->v.len * sizeof(struct kunw_rule));
	for (size_t i = 0; i < n; i++)
		w[rows_at * KUNW_LINE_WORDS + i] = (uint64_t)rows[i].rule << 32 | (rows[i].pc - base);
	t->words = w;
	t->nwords = (uint32_t)nwords;
	t->nrows = (uint32_t)n;
	t->nrules = (uint32_t)rs->v.len;
	t->nblocks = (uint32_t)nblocks;
	return 0;
}

int kunw_table_build(struct kunw_table *t, const struct unw_code *code)
{
	memset(t, 0, sizeof(*t));
	struct base_vec pcs = BASE_VEC_INIT(uint64_t), rows = BASE_VEC_INIT(struct row);
	struct rules rs = { BASE_VEC_INIT(struct kunw_rule), { 0 } };
	base_map_init(&rs.index);
	struct cstates cs = { BASE_VEC_INIT(struct cstate), NULL, 0 };
	int err = code->cfi && !code->cfi->lazy ? complex_states(code->cfi, &cs) : 0;
	if (!err)
		err = boundaries(code, &cs, &pcs);
	if (err)
		goto out;
	const uint64_t *p = pcs.data;
	struct kunw_rule last = { 0 }; /* KUNW_K_NONE: leading pcs without a rule say nothing */
	for (size_t i = 0; i < pcs.len; i++) {
		if (i && p[i] == p[i - 1])
			continue;
		struct kunw_rule k = rule_at(code, &cs, p[i]);
		if (memcmp(&k, &last, sizeof(k)) == 0)
			continue;
		last = k;
		int64_t idx = rule_index(&rs, &k);
		struct row *r = base_vec_push(&rows);
		if (idx < 0 || !r) {
			err = -ENOMEM;
			goto out;
		}
		*r = (struct row){ p[i], (uint32_t)idx };
		switch (k.kind) {
		case KUNW_K_FALLBACK: t->nfallback++; break;
		case KUNW_K_PLT:
		case KUNW_K_PLT_EXPR: t->nplt++; break;
		case KUNW_K_SIGNAL: t->nsignal++; break;
		default: break;
		}
		if (k.flags & KUNW_RF_SFRAME)
			t->nsframe++;
	}
	struct kunw_table counts = *t;
	err = lay_out(t, rows.data, rows.len, &rs);
	if (!err) {
		t->nfallback = counts.nfallback;
		t->nplt = counts.nplt;
		t->nsignal = counts.nsignal;
		t->nsframe = counts.nsframe;
	}
out:
	base_vec_free(&cs.v);
	base_vec_free(&pcs);
	base_vec_free(&rows);
	base_vec_free(&rs.v);
	base_map_free(&rs.index);
	if (err)
		memset(t, 0, sizeof(*t));
	return err;
}

void kunw_table_free(struct kunw_table *t)
{
	free(t->words);
	memset(t, 0, sizeof(*t));
}

/* ---------------------------------------------------------------- the program's search */

static const uint64_t *line_at(const struct kunw_table *t, uint64_t l)
{
	return (l + 1) * KUNW_LINE_WORDS <= t->nwords ? t->words + l * KUNW_LINE_WORDS : NULL;
}

/* kunw.bpf.c's kunw_search_rule, step for step (the same bounds) */
bool kunw_table_find(const struct kunw_table *t, uint64_t rel, struct kunw_rule *out, uint32_t *lo_out,
                     uint32_t *hi_out)
{
	memset(out, 0, sizeof(*out));
	uint32_t dummy[2];
	lo_out = lo_out ? lo_out : &dummy[0];
	hi_out = hi_out ? hi_out : &dummy[1];
	*lo_out = (uint32_t)rel;
	*hi_out = (uint32_t)rel + 1;
	const uint64_t *h = line_at(t, 0), *x, *cur = NULL;
	if (!h)
		return false;
	if (rel >> 32)
		return true;
	uint32_t base = (uint32_t)h[0], span = (uint32_t)(h[0] >> 32);
	uint32_t rules_at = (uint32_t)h[1], rows_at = (uint32_t)(h[1] >> 32);
	uint32_t index_at = (uint32_t)h[2], nrows = (uint32_t)(h[2] >> 32);
	if (rel < base || rel - base >= span)
		return true;
	uint32_t off = (uint32_t)(rel - base), b = off >> KUNW_BLOCK_SHIFT;
	uint32_t i = b % KUNW_INDEX_PER_LINE;
	if (!(x = line_at(t, (uint64_t)index_at + b / KUNW_INDEX_PER_LINE)))
		return false;
	const uint32_t *half = (const uint32_t *)x;
	uint32_t lo = half[i], hi = half[i + 1], have = UINT32_MAX;
	/* the row in force is in [block[b] - 1, block[b + 1] - 1]: pc(lo) <= off < pc(hi) */
	lo = lo ? lo - 1 : 0;
	if (hi <= lo)
		hi = lo + 1;
	for (int p = 0; p < KUNW_SEARCH_STEPS && hi - lo > 1; p++) {
		uint32_t mid = lo + ((hi - lo) >> 1);
		if (!cur || (mid >> 3) != have) {
			if (!(cur = line_at(t, (uint64_t)rows_at + (mid >> 3))))
				return false;
			have = mid >> 3;
		}
		if ((uint32_t)cur[mid & 7] <= off)
			lo = mid;
		else
			hi = mid;
	}
	if (hi - lo > 1 || lo >= nrows)
		return false;
	if ((!cur || have != lo >> 3) && !(cur = line_at(t, (uint64_t)rows_at + (lo >> 3))))
		return false;
	uint64_t row = cur[lo & 7];
	if ((uint32_t)row > off)
		return true;
	uint64_t ri = row >> 32;
	const uint64_t *r = line_at(t, rules_at + (ri >> 2));
	if (!r)
		return false;
	memcpy(out, r + (ri & 3) * 2, sizeof(*out));
	/* the row holds from its pc to the next row's; that one is known in this line, else only
	 * the pc asked for is vouched for */
	*lo_out = base + (uint32_t)row;
	*hi_out = (lo & 7) != 7 && lo + 1 < nrows ? base + (uint32_t)cur[(lo + 1) & 7] : (uint32_t)rel + 1;
	return true;
}
