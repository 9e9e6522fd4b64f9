/* SPDX-License-Identifier: MIT */
/*
 * Compiles FDEs into the sorted row table (see cfi.h). Built once per module, on the first
 * unwind through it; never re-parsed per sample except for COMPLEX rows.
 */
#include <errno.h>
#include <stdlib.h>

#include "cfi/cfi.h"
#include "cfi/cfi_internal.h"

#define CFI_MAX_ROWS (64u << 20)

struct build_row {
	uint64_t pc;
	struct cfi_rule rule;
	uint8_t prio;  /* 0 .eh_frame, 1 .debug_frame, 2 terminator */
	uint32_t seq;
};

struct builder {
	const struct cfi_arch *arch;
	struct base_vec rows; /* struct build_row */
	uint8_t prio;
	unsigned secidx;
	uint64_t fde_off;
	uint32_t seq;
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

static int push_row(struct builder *b, uint64_t pc, struct cfi_rule rule, uint8_t prio)
{
	if (b->rows.len >= CFI_MAX_ROWS)
		return -UW_ELIMIT;
	struct build_row *row = base_vec_push(&b->rows);
	if (!row)
		return -ENOMEM;
	row->pc = pc;
	row->rule = rule;
	row->prio = prio;
	row->seq = b->seq++;
	if (rule.flags & CFI_F_COMPLEX)
		b->ncomplex++;
	return 0;
}

static int emit_row(void *ctx, uint64_t loc, uint64_t next, const struct cfi_state *st)
{
	struct builder *b = ctx;
	(void)next;
	return push_row(b, loc, compress(b, st), b->prio);
}

struct range {
	uint64_t lo, hi;
};

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static bool covered(const struct range *r, size_t n, uint64_t pc)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (r[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && pc < r[lo - 1].hi;
}

static int add_section(struct builder *b, struct cfi_table *t, unsigned secidx, const struct range *skip,
                       size_t nskip, struct base_vec *ranges)
{
	const struct cfi_section *s = &t->sec[secidx];
	uint64_t off = 0, next;
	b->secidx = secidx;
	b->prio = (uint8_t)secidx;
	/* Bound the walk: each entry is at least 8 bytes, so at most size/8 iterations. */
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
		if (r == 0)
			continue;
		if (next <= off)
			break;
		if (fde.pc_begin == fde.pc_end || fde.pc_begin == 0)
			continue; /* discarded (e.g. a removed COMDAT function) */
		if (nskip && covered(skip, nskip, fde.pc_begin))
			continue;
		if (fde.pc_end - fde.pc_begin > (1ull << 31))
			continue;
		t->nfde++;
		if (ranges) {
			struct range *rg = base_vec_push(ranges);
			if (!rg)
				return -ENOMEM;
			rg->lo = fde.pc_begin;
			rg->hi = fde.pc_end;
		}
		struct cfi_state init, st;
		b->fde_off = off;
		r = cfi_init_state(b->arch, &cie, &init);
		if (r == 0) {
			st = init;
			uint64_t loc = fde.pc_begin;
			size_t before = b->rows.len;
			r = cfi_exec(b->arch, &cie, fde.insns, fde.insns_len, &st, &init, &loc, fde.pc_end - 1,
				     emit_row, b);
			if (r < 0 && r != -ENOMEM && r != -UW_ELIMIT) {
				/* drop this FDE's rows: a partial program describes nothing reliably */
				b->rows.len = before;
				t->nbad_fde++;
				continue;
			}
			if (r == -ENOMEM || r == -UW_ELIMIT)
				return r;
			if (loc < fde.pc_end) {
				r = push_row(b, loc, compress(b, &st), b->prio);
				if (r)
					return r;
			}
		} else {
			t->nbad_fde++;
			continue;
		}
		struct cfi_rule none = { .flags = CFI_F_NONE };
		r = push_row(b, fde.pc_end, none, 2);
		if (r)
			return r;
	}
	return 0;
}

static int cmp_row(const void *a, const void *b)
{
	const struct build_row *x = a, *y = b;
	if (x->pc != y->pc)
		return x->pc < y->pc ? -1 : 1;
	if (x->prio != y->prio)
		return x->prio < y->prio ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
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
	struct builder b = { .arch = arch, .rows = BASE_VEC_INIT(struct build_row) };
	struct base_vec ranges = BASE_VEC_INIT(struct range);
	int err = 0;
	if (t->sec[0].data)
		err = add_section(&b, t, 0, NULL, 0, t->sec[1].data ? &ranges : NULL);
	if (!err && t->sec[1].data) {
		qsort(ranges.data, ranges.len, sizeof(struct range), cmp_range);
		err = add_section(&b, t, 1, ranges.data, ranges.len, NULL);
	}
	base_vec_free(&ranges);
	if (err)
		goto fail;
	t->ncomplex = b.ncomplex;
	if (!b.rows.len) {
		base_vec_free(&b.rows);
		return 0;
	}
	struct build_row *rows = b.rows.data;
	qsort(rows, b.rows.len, sizeof(*rows), cmp_row);
	/* keep the first row per pc and drop rows that repeat the rule in force */
	size_t n = 0;
	for (size_t i = 0; i < b.rows.len; i++) {
		/* only the first (highest-priority) row of a pc counts, even when it is dropped
		 * below for repeating the rule in force */
		if (i && rows[i - 1].pc == rows[i].pc)
			continue;
		if (n && memcmp(&rows[n - 1].rule, &rows[i].rule, sizeof(struct cfi_rule)) == 0)
			continue;
		rows[n++] = rows[i];
	}
	/* leading terminators say nothing */
	size_t first = 0;
	while (first < n && (rows[first].rule.flags & CFI_F_NONE))
		first++;
	if (first == n) {
		base_vec_free(&b.rows);
		return 0;
	}
	t->base = rows[first].pc;
	uint64_t span = rows[n - 1].pc - t->base;
	if (span > UINT32_MAX) {
		/* a module spanning more than 4 GiB of code: not something a row table covers */
		err = -UW_ELIMIT;
		goto fail;
	}
	t->n = (uint32_t)(n - first);
	t->pcs = malloc(t->n * sizeof(*t->pcs));
	t->rules = malloc(t->n * sizeof(*t->rules));
	t->nblocks = (uint32_t)((span >> CFI_BLOCK_SHIFT) + 1);
	t->block = malloc(((size_t)t->nblocks + 1) * sizeof(*t->block));
	if (!t->pcs || !t->rules || !t->block) {
		err = -ENOMEM;
		goto fail;
	}
	for (uint32_t i = 0; i < t->n; i++) {
		t->pcs[i] = (uint32_t)(rows[first + i].pc - t->base);
		t->rules[i] = rows[first + i].rule;
	}
	t->end = t->base + span + 1;
	uint32_t row = 0;
	for (uint32_t blk = 0; blk <= t->nblocks; blk++) {
		uint64_t start = (uint64_t)blk << CFI_BLOCK_SHIFT;
		while (row < t->n && t->pcs[row] < start)
			row++;
		t->block[blk] = row;
	}
	base_vec_free(&b.rows);
	return 0;
fail:
	base_vec_free(&b.rows);
	cfi_table_free(t);
	return err;
}

void cfi_table_free(struct cfi_table *t)
{
	free(t->pcs);
	free(t->rules);
	free(t->block);
	t->pcs = NULL;
	t->rules = NULL;
	t->block = NULL;
	t->n = 0;
}
