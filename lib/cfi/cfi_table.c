/* SPDX-License-Identifier: MIT */
/*
 * Compiles FDEs into the sorted row table (see cfi.h). Built once per module, on the first
 * unwind through it; never re-parsed per sample except for COMPLEX rows.
 *
 * Building is linear: FDE headers are collected first (a one-entry CIE cache makes that cheap,
 * as runs of FDEs share a CIE), sorted by start address only if the section is not already in
 * order, and then each FDE's program is run once, appending rows to the final arrays in pc order
 * with duplicate rules dropped as they come. No per-row sort is needed.
 */
#include <errno.h>
#include <stdlib.h>

#include "cfi/cfi.h"
#include "cfi/sframe.h"
#include "cfi/cfi_internal.h"

#define CFI_MAX_ROWS (64u << 20)
#define LAZY_BLOCK_SHIFT 12

struct fde_ref {
	uint64_t begin, end;
	uint64_t off;
	uint8_t sec;
};

struct builder {
	const struct cfi_arch *arch;
	struct cfi_table *t;
	uint64_t *pcs;   /* absolute pcs while building */
	struct cfi_rule *rules;
	size_t n, cap;
	unsigned secidx;
	uint64_t fde_off;
	uint32_t ncomplex;
};

static bool fits16(int64_t v)
{
	return v >= INT16_MIN && v <= INT16_MAX;
}

static struct cfi_rule compress(const struct builder *b, const struct cfi_state *st)
{
	const struct cfi_arch *a = b->arch;
	struct cfi_rule r = { 0 };
	const struct cfi_reg_rule *ra = &st->regs[a->ra], *bp = &st->regs[a->fp];
	if (st->signal)
		r.flags |= CFI_F_SIGNAL;
	if (ra->kind == CFI_R_UNDEF) {
		r.flags |= CFI_F_END;
		return r;
	}
	bool complex = st->cfa_is_expr || (st->cfa_reg != a->sp && st->cfa_reg != a->fp) ||
		       st->cfa_off < INT32_MIN || st->cfa_off > INT32_MAX || ra->kind != CFI_R_OFFSET ||
		       !fits16(ra->off);
	if (!complex) {
		switch (bp->kind) {
		case CFI_R_SAME: break;
		case CFI_R_UNDEF: r.flags |= CFI_F_BP_UNDEF; break;
		case CFI_R_OFFSET:
			if (fits16(bp->off)) {
				r.flags |= CFI_F_BP_SAVED;
				r.bp_off = (int16_t)bp->off;
			} else {
				complex = true;
			}
			break;
		default: complex = true;
		}
		for (unsigned i = 0; i < CFI_NSAVED && !complex; i++) {
			const struct cfi_reg_rule *rr = &st->regs[a->saved[i]];
			if (rr->kind == CFI_R_SAME || rr->kind == CFI_R_UNDEF)
				continue;
			if (rr->kind == CFI_R_OFFSET && rr->off % 8 == 0 && rr->off / 8 >= INT8_MIN &&
			    rr->off / 8 <= INT8_MAX && rr->off != 0)
				r.saved[i] = (int8_t)(rr->off / 8);
			else
				complex = true;
		}
	}
	if (complex) {
		r.flags = (uint8_t)((r.flags & CFI_F_SIGNAL) | CFI_F_COMPLEX);
		r.cfa_off = (int32_t)(uint32_t)b->fde_off;
		r.cfa_reg = (uint8_t)b->secidx;
		r.bp_off = 0;
		memset(r.saved, 0, sizeof(r.saved));
		return r;
	}
	r.cfa_reg = (uint8_t)st->cfa_reg;
	r.cfa_off = (int32_t)st->cfa_off;
	r.ra_off = (int16_t)ra->off;
	return r;
}

/* Appends a row; rows arrive in ascending pc order. A row at the pc of the last one replaces
 * it (the later state is the one in force), and a row repeating the rule in force is dropped. */
static int push_row(struct builder *b, uint64_t pc, struct cfi_rule rule)
{
	if (b->n && b->pcs[b->n - 1] == pc) {
		b->n--;
		if (b->n && memcmp(&b->rules[b->n - 1], &rule, sizeof(rule)) == 0)
			return 0;
	} else if (b->n && memcmp(&b->rules[b->n - 1], &rule, sizeof(rule)) == 0) {
		return 0;
	}
	if (b->n == b->cap) {
		if (b->cap >= CFI_MAX_ROWS)
			return -UW_ELIMIT;
		size_t cap = b->cap ? b->cap * 2 : 1024;
		uint64_t *np = realloc(b->pcs, cap * sizeof(*np));
		if (!np)
			return -ENOMEM;
		b->pcs = np;
		struct cfi_rule *nr = realloc(b->rules, cap * sizeof(*nr));
		if (!nr)
			return -ENOMEM;
		b->rules = nr;
		b->cap = cap;
	}
	b->pcs[b->n] = pc;
	b->rules[b->n] = rule;
	b->n++;
	if (rule.flags & CFI_F_COMPLEX)
		b->ncomplex++;
	return 0;
}

static int emit_row(void *ctx, uint64_t loc, uint64_t next, const struct cfi_state *st)
{
	struct builder *b = ctx;
	(void)next;
	return push_row(b, loc, compress(b, st));
}

/* Collects the FDE headers of a section. */
static int collect(struct cfi_table *t, unsigned secidx, struct base_vec *out)
{
	const struct cfi_section *s = &t->sec[secidx];
	uint64_t off = 0, next;
	for (uint64_t guard = 0; off < s->size && guard <= s->size / 4 + 1; guard++, off = next) {
		struct cfi_fde fde;
		struct cfi_cie cie;
		int r = cfi_parse_entry(s, off, &next, &fde, &cie);
		if (r == -1)
			break;
		if (r < 0) {
			if (r == -UW_ETRUNC || next <= off)
				break; /* cannot find the next entry */
			t->nbad_fde++;
			continue;
		}
		if (next <= off)
			break;
		if (r == 0)
			continue;
		if (fde.pc_begin == fde.pc_end || fde.pc_begin == 0 || fde.pc_end - fde.pc_begin > (1ull << 31))
			continue; /* discarded (a removed COMDAT function), or absurd */
		struct fde_ref *f = base_vec_push(out);
		if (!f)
			return -ENOMEM;
		f->begin = fde.pc_begin;
		f->end = fde.pc_end;
		f->off = off;
		f->sec = (uint8_t)secidx;
	}
	return 0;
}

static int cmp_fde(const void *x, const void *y)
{
	const struct fde_ref *a = x, *b = y;
	if (a->begin != b->begin)
		return a->begin < b->begin ? -1 : 1;
	if (a->sec != b->sec)
		return a->sec < b->sec ? -1 : 1; /* .eh_frame first */
	return a->off < b->off ? -1 : a->off > b->off;
}

static int run_fde(struct builder *b, const struct fde_ref *f)
{
	struct cfi_table *t = b->t;
	struct cfi_fde fde;
	struct cfi_cie cie;
	uint64_t next;
	if (cfi_parse_entry(&t->sec[f->sec], f->off, &next, &fde, &cie) != 1)
		return 1;
	struct cfi_state init, st;
	b->fde_off = f->off;
	b->secidx = f->sec;
	if (cfi_init_state(b->arch, &cie, &init))
		return 1;
	st = init;
	uint64_t loc = fde.pc_begin;
	size_t before = b->n;
	uint32_t cbefore = b->ncomplex;
	int r = cfi_exec(b->arch, &cie, fde.insns, fde.insns_len, &st, &init, &loc, fde.pc_end - 1, emit_row, b);
	if (r == -ENOMEM || r == -UW_ELIMIT)
		return r;
	if (r < 0) {
		/* a program that fails part way describes nothing reliably: drop its rows */
		b->n = before;
		b->ncomplex = cbefore;
		return 1;
	}
	if (loc < fde.pc_end && (r = push_row(b, loc, compress(b, &st))))
		return r;
	struct cfi_rule none = { .flags = CFI_F_NONE };
	return push_row(b, fde.pc_end, none);
}

/* The table from a builder's rows (taken from it). */
static int table_from_rows(struct cfi_table *t, struct builder *b)
{
	int err = 0;
	/* leading terminators say nothing */
	size_t first = 0;
	while (first < b->n && (b->rules[first].flags & CFI_F_NONE))
		first++;
	if (first == b->n)
		return err;
	t->base = b->pcs[first];
	uint64_t span = b->pcs[b->n - 1] - t->base;
	if (span > UINT32_MAX) {
		/* a module spanning more than 4 GiB of code: not something a row table covers */
		err = -UW_ELIMIT;
		return err;
	}
	t->n = (uint32_t)(b->n - first);
	t->pcs = malloc(t->n * sizeof(*t->pcs));
	t->nblocks = (uint32_t)((span >> CFI_BLOCK_SHIFT) + 1);
	t->block = malloc(((size_t)t->nblocks + 1) * sizeof(*t->block));
	if (!t->pcs || !t->block) {
		err = -ENOMEM;
		return err;
	}
	for (uint32_t i = 0; i < t->n; i++)
		t->pcs[i] = (uint32_t)(b->pcs[first + i] - t->base);
	if (first)
		memmove(b->rules, b->rules + first, t->n * sizeof(*b->rules));
	t->rules = b->rules;
	b->rules = NULL;
	t->end = t->base + span + 1;
	uint32_t row = 0;
	for (uint32_t blk = 0; blk <= t->nblocks; blk++) {
		uint64_t start = (uint64_t)blk << CFI_BLOCK_SHIFT;
		while (row < t->n && t->pcs[row] < start)
			row++;
		t->block[blk] = row;
	}
	return 0;
}

int cfi_table_build(struct cfi_table *t, const struct cfi_arch *arch, const struct cfi_section *eh,
                    const struct cfi_section *dbg)
{
	memset(t, 0, sizeof(*t));
	t->arch = arch;
	if (eh && eh->data)
		t->sec[0] = *eh, t->sec[0].is_eh = true;
	if (dbg && dbg->data)
		t->sec[1] = *dbg, t->sec[1].is_eh = false;
	struct base_vec fdes = BASE_VEC_INIT(struct fde_ref);
	struct builder b = { .arch = arch, .t = t };
	int err = 0;
	for (unsigned i = 0; i < 2 && !err; i++)
		if (t->sec[i].data)
			err = collect(t, i, &fdes);
	if (err)
		goto out;
	struct fde_ref *f = fdes.data;
	bool sorted = true;
	for (size_t i = 1; i < fdes.len && sorted; i++)
		sorted = cmp_fde(&f[i - 1], &f[i]) < 0;
	if (!sorted)
		qsort(f, fdes.len, sizeof(*f), cmp_fde);
	uint64_t covered_to = 0;
	for (size_t i = 0; i < fdes.len; i++) {
		if (f[i].begin < covered_to) {
			/* overlaps an FDE already compiled (.debug_frame duplicating .eh_frame, or a
			 * broken table): the first one wins */
			if (f[i].sec == 0)
				t->nbad_fde++;
			continue;
		}
		int r = run_fde(&b, &f[i]);
		if (r < 0) {
			err = r;
			goto out;
		}
		if (r > 0) {
			t->nbad_fde++;
			continue;
		}
		t->nfde++;
		covered_to = f[i].end;
	}
	t->ncomplex = b.ncomplex;
	err = table_from_rows(t, &b);
out:
	free(b.pcs);
	free(b.rules);
	base_vec_free(&fdes);
	if (err)
		cfi_table_free(t);
	return err;
}

/* ---- SFrame (sframe.c): rows compiled into the same rules */

struct sf_row {
	uint64_t pc, end;
	struct cfi_rule rule;
};

struct sf_ctx {
	const struct cfi_arch *arch;
	struct base_vec rows;     /* struct sf_row */
	struct base_vec flex;     /* struct cfi_flex */
	uint32_t nunsupp;
};

static bool fits32(int64_t v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

/* A value's rule, when the unwinder tracks its register (x86_64: DWARF 0-16). */
static bool sf_loc(const struct sframe_loc *in, struct cfi_loc *out)
{
	*out = (struct cfi_loc){ 0 };
	if (in->kind == SFRAME_LOC_SAME)
		return true;
	if (in->from_reg && in->reg > 16)
		return false;
	out->kind = in->kind == SFRAME_LOC_AT ? CFI_LOC_AT : CFI_LOC_VAL;
	out->from_reg = in->from_reg;
	out->reg = (uint8_t)in->reg;
	out->off = in->off;
	return true;
}

/* An AMD64 row as a compact rule: a CFA from the stack or frame pointer, the return address
 * and frame pointer saved relative to it. Flexible rows (v3: a CFA from another register or
 * read from memory, values in registers) become CFI_F_FLEX rules; what the unwinder cannot
 * follow (a register it does not track) is CFI_F_UNSUPP: it stops there and says why, rather
 * than take a wrong frame. */
static struct cfi_rule sf_rule(struct sf_ctx *c, const struct sframe_row *row, bool *unsupp, int *err)
{
	const struct cfi_arch *a = c->arch;
	struct cfi_rule r = { 0 };
	*unsupp = false;
	if (row->signal)
		r.flags |= CFI_F_SIGNAL;
	if (row->ra_undefined) {
		r.flags |= CFI_F_END;
		return r;
	}
	bool simple = (row->cfa_base == SFRAME_CFA_SP || row->cfa_base == SFRAME_CFA_FP) && !row->cfa_deref &&
		      fits32(row->cfa_off) && row->ra.kind == SFRAME_LOC_AT && !row->ra.from_reg && fits16(row->ra.off) &&
		      (row->fp.kind == SFRAME_LOC_SAME ||
		       (row->fp.kind == SFRAME_LOC_AT && !row->fp.from_reg && fits16(row->fp.off)));
	if (simple) {
		r.cfa_reg = row->cfa_base == SFRAME_CFA_SP ? a->sp : a->fp;
		r.cfa_off = (int32_t)row->cfa_off;
		r.ra_off = (int16_t)row->ra.off;
		if (row->fp.kind == SFRAME_LOC_AT) {
			r.flags |= CFI_F_BP_SAVED;
			r.bp_off = (int16_t)row->fp.off;
		}
		return r;
	}
	struct cfi_flex fx = { .cfa_reg = (uint8_t)row->cfa_reg, .cfa_deref = row->cfa_deref };
	bool ok = row->cfa_reg <= 16 && fits32(row->cfa_off) && row->ra.kind != SFRAME_LOC_SAME &&
		  sf_loc(&row->ra, &fx.ra) && sf_loc(&row->fp, &fx.fp);
	if (!ok || c->flex.len >= INT32_MAX) {
		*unsupp = true;
		r.flags = (uint8_t)((r.flags & CFI_F_SIGNAL) | CFI_F_UNSUPP);
		return r;
	}
	fx.cfa_off = (int32_t)row->cfa_off;
	struct cfi_flex *slot = base_vec_push(&c->flex);
	if (!slot) {
		*err = -ENOMEM;
		return r;
	}
	*slot = fx;
	r.flags |= CFI_F_FLEX;
	r.cfa_off = (int32_t)(c->flex.len - 1);
	return r;
}

static int sf_add(void *ctx, const struct sframe_row *row)
{
	struct sf_ctx *c = ctx;
	struct sf_row *r = base_vec_push(&c->rows);
	if (!r)
		return -ENOMEM;
	bool unsupp;
	int err = 0;
	*r = (struct sf_row){ row->pc, row->end, sf_rule(c, row, &unsupp, &err) };
	c->nunsupp += unsupp;
	return err;
}

static int cmp_sf_row(const void *x, const void *y)
{
	const struct sf_row *a = x, *b = y;
	return a->pc < b->pc ? -1 : a->pc > b->pc;
}

int cfi_table_build_sframe(struct cfi_table *t, const struct cfi_arch *arch, const struct sframe_sec *s)
{
	memset(t, 0, sizeof(*t));
	t->arch = arch;
	if (s->abi != SFRAME_ABI_AMD64_LE || arch != &cfi_arch_x86_64)
		return -UW_EUNSUPP; /* (the unwinder is x86_64's) */
	struct sf_ctx c = { .arch = arch, .rows = BASE_VEC_INIT(struct sf_row), .flex = BASE_VEC_INIT(struct cfi_flex) };
	uint32_t nbad = 0;
	/* one row per FRE, and repeated blocks (PLTs) expanded: bounded by the section's size
	 * plus a million rows for those */
	int err = sframe_rows(s, sf_add, &c, &nbad, UW_MIN((uint64_t)CFI_MAX_ROWS, (uint64_t)s->nfres + (1u << 20)));
	struct builder b = { .arch = arch, .t = t };
	if (err)
		goto out;
	struct sf_row *r = c.rows.data;
	/* (GNU ld sorts functions; a section that is not sorted is sorted here) */
	if (c.rows.len && !(s->flags & SFRAME_F_FDE_SORTED))
		qsort(r, c.rows.len, sizeof(*r), cmp_sf_row);
	uint64_t covered_to = 0;
	for (size_t i = 0; i < c.rows.len && !err; i++) {
		if (r[i].pc < covered_to) {
			nbad++; /* overlaps what an earlier function covers */
			continue;
		}
		err = push_row(&b, r[i].pc, r[i].rule);
		/* a gap after it: not covered */
		if (!err && (i + 1 == c.rows.len || r[i + 1].pc != r[i].end))
			err = push_row(&b, r[i].end, (struct cfi_rule){ .flags = CFI_F_NONE });
		covered_to = r[i].end;
	}
	t->nfde = s->nfdes - UW_MIN(nbad, s->nfdes);
	t->nbad_fde = nbad;
	t->ncomplex = c.nunsupp;
	t->sframe = true;
	if (!err)
		err = table_from_rows(t, &b);
	if (!err && c.flex.len) {
		t->flex = c.flex.data; /* (taken from the vector) */
		t->nflex = (uint32_t)c.flex.len;
		c.flex = BASE_VEC_INIT(struct cfi_flex);
	}
out:
	free(b.pcs);
	free(b.rules);
	base_vec_free(&c.rows);
	base_vec_free(&c.flex);
	if (err)
		cfi_table_free(t);
	return err;
}

/* ---- lazy mode */

/* .eh_frame_hdr (LSB): version 1, eh_frame_ptr_enc, fde_count_enc, table_enc, then the encoded
 * eh_frame pointer and count, then the table. Only the layout every linker emits is used:
 * table_enc DW_EH_PE_datarel | DW_EH_PE_sdata4 (0x3b), entries relative to the header. */
int cfi_table_build_lazy(struct cfi_table *t, const struct cfi_arch *arch, const struct cfi_section *eh,
                         const struct cfi_section *hdr)
{
	memset(t, 0, sizeof(*t));
	if (!eh || !eh->data || !hdr || !hdr->data || hdr->size < 12)
		return -UW_EUNSUPP;
	const uint8_t *h = hdr->data;
	if (h[0] != 1 || h[3] != 0x3b)
		return -UW_EUNSUPP;
	struct cfi_section hs = *hdr;
	struct base_cursor c = base_cursor(h + 4, hdr->size - 4);
	uint64_t ehp, count;
	if (!cfi_read_encoded(&c, h[1], &hs, true, &ehp) || !cfi_read_encoded(&c, h[2], &hs, true, &count))
		return -UW_EUNSUPP;
	if (ehp != eh->addr || count == 0 || count > base_cur_left(&c) / 8 || count > UINT32_MAX)
		return -UW_EUNSUPP;
	const uint8_t *tab = c.p;
	/* the table must be sorted and point into .eh_frame: checked once, here */
	int64_t prev = INT64_MIN;
	for (uint64_t i = 0; i < count; i++) {
		int32_t loc, fde;
		memcpy(&loc, tab + 8 * i, 4);
		memcpy(&fde, tab + 8 * i + 4, 4);
		uint64_t fa = hdr->addr + (uint64_t)(int64_t)fde;
		if (loc < prev || fa < eh->addr || fa - eh->addr >= eh->size)
			return -UW_EUNSUPP;
		prev = loc;
	}
	t->arch = arch;
	t->sec[0] = *eh;
	t->sec[0].is_eh = true;
	t->lazy = true;
	pthread_mutex_init(&t->lazy_mu, NULL);
	t->hdr_table = tab;
	t->hdr_addr = hdr->addr;
	t->hdr_count = (uint32_t)count;
	t->nfde = (uint32_t)count;
	t->fde_rows = calloc(count, sizeof(*t->fde_rows));
	if (!t->fde_rows)
		return -ENOMEM;
	/* coarse index over the search table, as in the full table: most lookups then search a
	 * handful of neighbouring entries instead of the whole table */
	int32_t first, last;
	memcpy(&first, tab, 4);
	memcpy(&last, tab + 8 * (count - 1), 4);
	t->hdr_first = first;
	t->hdr_nblocks = (uint32_t)(((uint64_t)((int64_t)last - first) >> LAZY_BLOCK_SHIFT) + 1);
	t->hdr_block = malloc(((size_t)t->hdr_nblocks + 1) * sizeof(*t->hdr_block));
	if (!t->hdr_block) {
		free(t->fde_rows);
		t->fde_rows = NULL;
		t->lazy = false;
		pthread_mutex_destroy(&t->lazy_mu);
		return -ENOMEM;
	}
	uint32_t e = 0;
	for (uint32_t blk = 0; blk <= t->hdr_nblocks; blk++) {
		int64_t start = (int64_t)first + ((int64_t)blk << LAZY_BLOCK_SHIFT);
		for (;;) {
			int32_t loc;
			if (e >= count)
				break;
			memcpy(&loc, tab + 8 * (size_t)e, 4);
			if (loc >= start)
				break;
			e++;
		}
		t->hdr_block[blk] = e;
	}
	base_arena_init(&t->arena, 64 * 1024);
	return 0;
}

static struct cfi_fde_rows lazy_none;

static struct cfi_fde_rows *lazy_compile(struct cfi_table *t, uint32_t idx)
{
	int32_t fde;
	memcpy(&fde, t->hdr_table + 8 * (size_t)idx + 4, 4);
	struct fde_ref f = { .off = t->hdr_addr + (uint64_t)(int64_t)fde - t->sec[0].addr, .sec = 0 };
	struct cfi_fde parsed;
	struct cfi_cie cie;
	uint64_t next;
	if (cfi_parse_entry(&t->sec[0], f.off, &next, &parsed, &cie) != 1 || parsed.pc_end <= parsed.pc_begin ||
	    parsed.pc_end - parsed.pc_begin > (1ull << 31)) {
		t->nbad_fde++;
		return &lazy_none;
	}
	f.begin = parsed.pc_begin;
	f.end = parsed.pc_end;
	struct builder b = { .arch = t->arch, .t = t };
	int r = run_fde(&b, &f);
	struct cfi_fde_rows *out = &lazy_none;
	if (r == 0 && b.n) {
		out = base_arena_alloc(&t->arena, sizeof(*out));
		uint32_t *pcs = base_arena_alloc(&t->arena, b.n * sizeof(*pcs));
		struct cfi_rule *rules = base_arena_alloc(&t->arena, b.n * sizeof(*rules));
		if (!out || !pcs || !rules) {
			out = &lazy_none;
		} else {
			out->begin = f.begin;
			out->end = f.end;
			out->n = (uint32_t)b.n;
			for (size_t i = 0; i < b.n; i++)
				pcs[i] = (uint32_t)(b.pcs[i] - f.begin);
			memcpy(rules, b.rules, b.n * sizeof(*rules));
			out->pcs = pcs;
			out->rules = rules;
			t->ncomplex += b.ncomplex;
		}
	} else if (r) {
		t->nbad_fde++;
	}
	free(b.pcs);
	free(b.rules);
	return out;
}

bool cfi_lazy_find(struct cfi_table *t, uint64_t pc, const struct cfi_rule **rule)
{
	/* last table entry whose start is <= pc */
	int64_t rel = (int64_t)(pc - t->hdr_addr);
	if (rel > INT32_MAX || rel < INT32_MIN)
		return false;
	if (rel < t->hdr_first)
		return false;
	/* the entry in force is in [block[b] - 1, block[b + 1] - 1] */
	uint64_t blk = (uint64_t)(rel - t->hdr_first) >> LAZY_BLOCK_SHIFT;
	uint32_t lo, hi;
	if (blk >= t->hdr_nblocks) {
		lo = t->hdr_count - 1;
		hi = t->hdr_count;
	} else {
		lo = t->hdr_block[blk] ? t->hdr_block[blk] - 1 : 0;
		hi = t->hdr_block[blk + 1];
		if (hi <= lo)
			hi = lo + 1;
	}
	/* first entry with start > rel, searched in [lo, hi) */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int32_t loc;
		memcpy(&loc, t->hdr_table + 8 * (size_t)mid, 4);
		if (loc <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return false;
	struct cfi_fde_rows *fr = __atomic_load_n(&t->fde_rows[lo - 1], __ATOMIC_ACQUIRE);
	if (!fr) {
		/* compiled once: the first thread to need it compiles, others wait and take it */
		pthread_mutex_lock(&t->lazy_mu);
		fr = t->fde_rows[lo - 1];
		if (!fr) {
			fr = lazy_compile(t, lo - 1);
			__atomic_store_n(&t->fde_rows[lo - 1], fr, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&t->lazy_mu);
	}
	if (!fr->n || pc < fr->begin || pc >= fr->end)
		return false;
	uint32_t off = (uint32_t)(pc - fr->begin), a = 0, b = fr->n;
	while (b - a > 1) {
		uint32_t mid = a + (b - a) / 2;
		if (fr->pcs[mid] <= off)
			a = mid;
		else
			b = mid;
	}
	if (fr->pcs[a] > off || (fr->rules[a].flags & CFI_F_NONE))
		return false;
	*rule = &fr->rules[a];
	return true;
}

struct cfi_cache *cfi_cache_new(void)
{
	struct cfi_cache *c = calloc(1, sizeof(*c));
	if (c)
		base_map_init(&c->by_serial);
	return c;
}

void cfi_cache_free(struct cfi_cache *c)
{
	if (!c)
		return;
	size_t it = 0;
	void *v;
	while (base_map_next(&c->by_serial, &it, NULL, &v))
		free(v);
	base_map_free(&c->by_serial);
	free(c);
}

struct cfi_cache_ent *cfi_cache_entries(struct cfi_cache *c, uint64_t serial)
{
	struct cfi_cache_ent *e = base_map_get(&c->by_serial, serial);
	if (!e) {
		if (c->nmade == CFI_CACHE_TABLES) {
			/* the oldest made goes: its memory serves the new one */
			uint64_t old = c->made[c->oldest];
			e = base_map_del(&c->by_serial, old);
			if (c->recent[old & 63].serial == old)
				c->recent[old & 63].serial = 0;
			if (e)
				memset(e, 0, sizeof(*e) << CFI_CACHE_BITS);
			c->made[c->oldest] = serial;
			c->oldest = (c->oldest + 1) % CFI_CACHE_TABLES;
		} else {
			c->made[c->nmade++] = serial;
		}
		if (!e && !(e = calloc((size_t)1 << CFI_CACHE_BITS, sizeof(*e))))
			return NULL;
		if (base_map_put(&c->by_serial, serial, e)) {
			free(e);
			return NULL;
		}
	}
	unsigned slot = (unsigned)serial & 63;
	c->recent[slot].serial = serial;
	c->recent[slot].ents = e;
	return e;
}

bool cfi_cache_fill(struct cfi_table *t, struct cfi_cache_ent *e, uint64_t pc, const struct cfi_rule **rule)
{
	bool found = t->lazy ? cfi_lazy_find(t, pc, rule) : cfi_rows_search(t, pc, rule);
	e->tag = pc + 1;
	e->rule = found ? *rule : NULL;
	return found;
}

void cfi_table_free(struct cfi_table *t)
{
	if (t->lazy) {
		pthread_mutex_destroy(&t->lazy_mu);
		free(t->fde_rows);
		free(t->hdr_block);
		t->hdr_block = NULL;
		base_arena_free(&t->arena);
		t->fde_rows = NULL;
		t->lazy = false;
	}
	free(t->pcs);
	free(t->rules);
	free(t->block);
	free(t->flex);
	t->flex = NULL;
	t->nflex = 0;
	t->pcs = NULL;
	t->rules = NULL;
	t->block = NULL;
	t->n = 0;
}
