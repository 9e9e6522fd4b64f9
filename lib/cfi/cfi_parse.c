/* SPDX-License-Identifier: MIT */
/*
 * CIE/FDE parsing and the CFA program interpreter (DWARF 5 §6.4.1-§6.4.2; the .eh_frame
 * variant follows the LSB Core specification, "Exception Frames"). Every read is bounded by the
 * entry it belongs to; malformed entries are reported, never trusted.
 */
#include "cfi/cfi.h"

#include <errno.h>
#include <stdlib.h>

#include "cfi/cfi_internal.h"

const struct cfi_arch cfi_arch_x86_64 = { .sp = 7, .fp = 6, .ra = 16, .nregs = 17, .saved = { 3, 12, 13, 14, 15 } };

/* DW_EH_PE_* pointer encodings */
enum {
	PE_absptr = 0x00, PE_uleb128 = 0x01, PE_udata2 = 0x02, PE_udata4 = 0x03, PE_udata8 = 0x04,
	PE_sleb128 = 0x09, PE_sdata2 = 0x0a, PE_sdata4 = 0x0b, PE_sdata8 = 0x0c,
	PE_pcrel = 0x10, PE_textrel = 0x20, PE_datarel = 0x30, PE_funcrel = 0x40, PE_aligned = 0x50,
	PE_indirect = 0x80, PE_omit = 0xff,
};

/* Reads a pointer of encoding enc. `apply` selects whether the relative part (pcrel) is added;
 * an FDE's pc_range uses only the value format. */
bool cfi_read_encoded(struct base_cursor *c, uint8_t enc, const struct cfi_section *s, bool apply,
                      uint64_t *out)
{
	if (enc == PE_omit) {
		*out = 0;
		return true;
	}
	uint64_t field_addr = s->addr + (uint64_t)(c->p - s->data);
	if ((enc & 0x70) == PE_aligned) {
		size_t off = (size_t)(c->p - s->data);
		size_t al = (off + 7) & ~(size_t)7;
		base_cur_skip(c, al - off);
		field_addr = s->addr + al;
	}
	uint64_t v;
	switch (enc & 0x0f) {
	case PE_absptr: v = base_cur_u64(c); break;
	case PE_uleb128: v = base_cur_uleb(c); break;
	case PE_udata2: v = base_cur_u16(c); break;
	case PE_udata4: v = base_cur_u32(c); break;
	case PE_udata8: v = base_cur_u64(c); break;
	case PE_sleb128: v = (uint64_t)base_cur_sleb(c); break;
	case PE_sdata2: v = (uint64_t)(int64_t)base_cur_s16(c); break;
	case PE_sdata4: v = (uint64_t)(int64_t)base_cur_s32(c); break;
	case PE_sdata8: v = (uint64_t)base_cur_s64(c); break;
	default: return false;
	}
	if (c->bad)
		return false;
	if (apply && v != 0) {
		switch (enc & 0x70) {
		case 0: break;
		case PE_pcrel: v += field_addr; break;
		case PE_aligned: break;
		default: return false; /* textrel/datarel/funcrel do not occur in FDE addresses */
		}
	}
	/* indirect pointers occur only for personality routines, which we skip */
	*out = v;
	return true;
}

/* A factored offset times the alignment factor, wrapping as the hardware would: hostile CFI
 * must not make it undefined behaviour (the result is then garbage, and bounds checks follow). */
static inline int64_t falign(uint64_t v, int64_t align)
{
	return (int64_t)(v * (uint64_t)align);
}

/* Reads the initial length and the id field. Narrows c to the entry. */
static int entry_header(const struct cfi_section *s, uint64_t off, struct base_cursor *c,
                        uint64_t *id, uint64_t *id_pos, uint64_t *next, bool *is64)
{
	if (off >= s->size)
		return -1;
	*c = base_cursor(s->data + off, s->size - off);
	if (base_cur_left(c) < 4)
		return -1;
	unsigned offsz;
	uint64_t len = base_cur_initial_length(c, &offsz);
	*is64 = offsz == 8;
	if (len == 0 && offsz == 4)
		return s->is_eh ? -1 : -UW_EFORMAT; /* .eh_frame terminator */
	if (c->bad && offsz == 4)
		return -UW_EFORMAT; /* a reserved length */
	if (c->bad || len > base_cur_left(c))
		return -UW_ETRUNC;
	c->end = c->p + len;
	*next = (uint64_t)(c->end - s->data);
	*id_pos = (uint64_t)(c->p - s->data);
	*id = *is64 ? base_cur_u64(c) : base_cur_u32(c);
	if (c->bad)
		return -UW_ETRUNC;
	return 0;
}

static bool is_cie_id(const struct cfi_section *s, uint64_t id, bool is64)
{
	if (s->is_eh)
		return id == 0;
	return is64 ? id == UINT64_MAX : id == 0xffffffffu;
}

static int parse_cie_body(const struct cfi_section *s, struct base_cursor *c, struct cfi_cie *cie)
{
	memset(cie, 0, sizeof(*cie));
	cie->fde_enc = s->is_eh ? PE_absptr : PE_absptr;
	cie->addr_size = 8;
	uint8_t version = base_cur_u8(c);
	if (version != 1 && version != 3 && version != 4)
		return -UW_EUNSUPP;
	const char *aug = base_cur_str(c);
	if (!aug)
		return -UW_ETRUNC;
	if (strcmp(aug, "eh") == 0 || (aug[0] == 'e' && aug[1] == 'h'))
		base_cur_skip(c, 8), aug += 2;
	if (version == 4) {
		cie->addr_size = base_cur_u8(c);
		uint8_t seg = base_cur_u8(c);
		if (cie->addr_size != 8 || seg != 0)
			return -UW_EUNSUPP;
	}
	cie->code_align = base_cur_uleb(c);
	cie->data_align = base_cur_sleb(c);
	cie->ra_reg = version == 1 ? base_cur_u8(c) : (uint32_t)base_cur_uleb(c);
	if (c->bad)
		return -UW_ETRUNC;
	if (aug[0] == 'z') {
		cie->has_z = true;
		uint64_t alen = base_cur_uleb(c);
		if (c->bad || alen > base_cur_left(c))
			return -UW_ETRUNC;
		struct base_cursor a = *c;
		a.end = a.p + alen;
		c->p += alen;
		for (const char *q = aug + 1; *q; q++) {
			switch (*q) {
			case 'L': cie->lsda_enc = base_cur_u8(&a); break;
			case 'R': cie->fde_enc = base_cur_u8(&a); break;
			case 'S': cie->signal = true; break;
			case 'B': break;
			case 'G': break; /* AArch64 MTE tagged frames */
			case 'P': {
				uint8_t penc = base_cur_u8(&a);
				uint64_t dummy;
				if (!cfi_read_encoded(&a, penc & 0x7f, s, false, &dummy))
					return -UW_EFORMAT;
				break;
			}
			default:
				goto aug_done; /* unknown: the rest is skipped by the length */
			}
		}
	aug_done:
		if (a.bad)
			return -UW_ETRUNC;
	} else if (aug[0] != 0) {
		return -UW_EUNSUPP; /* without 'z' we cannot know the FDE layout */
	}
	cie->insns = c->p;
	cie->insns_len = base_cur_left(c);
	return 0;
}

int cfi_parse_entry(const struct cfi_section *s, uint64_t off, uint64_t *next, struct cfi_fde *fde,
                    struct cfi_cie *cie)
{
	struct base_cursor c;
	uint64_t id, id_pos;
	bool is64;
	int r = entry_header(s, off, &c, &id, &id_pos, next, &is64);
	if (r)
		return r;
	if (is_cie_id(s, id, is64))
		return 0;
	/* FDE: find its CIE */
	uint64_t cie_off;
	if (s->is_eh) {
		if (id > id_pos)
			return -UW_EFORMAT;
		cie_off = id_pos - id;
	} else {
		cie_off = id;
	}
	if (cie_off == off)
		return -UW_EFORMAT;
	struct base_cursor cc;
	uint64_t cid, cid_pos, cnext;
	bool cis64;
	r = entry_header(s, cie_off, &cc, &cid, &cid_pos, &cnext, &cis64);
	if (r)
		return r == -1 ? -UW_EFORMAT : r;
	if (!is_cie_id(s, cid, cis64))
		return -UW_EFORMAT; /* an FDE pointing at an FDE */
	r = parse_cie_body(s, &cc, cie);
	if (r)
		return r;
	memset(fde, 0, sizeof(*fde));
	fde->cie_off = cie_off;
	uint64_t begin, range;
	uint8_t enc = s->is_eh ? cie->fde_enc : PE_absptr;
	if (!cfi_read_encoded(&c, enc, s, true, &begin) ||
	    !cfi_read_encoded(&c, enc & 0x0f, s, false, &range))
		return -UW_ETRUNC;
	if (cie->has_z) {
		uint64_t alen = base_cur_uleb(&c);
		base_cur_skip(&c, alen);
	}
	if (c.bad)
		return -UW_ETRUNC;
	fde->pc_begin = begin;
	fde->pc_end = begin + range;
	if (fde->pc_end < begin)
		return -UW_EFORMAT;
	fde->insns = c.p;
	fde->insns_len = base_cur_left(&c);
	return 1;
}

/* ---- the interpreter */

#define CFI_STATE_STACK 8

static void set_rule(struct cfi_state *st, uint64_t reg, uint8_t kind, int64_t off)
{
	if (reg >= CFI_MAX_REGS)
		return; /* registers we do not track (vector registers) */
	st->regs[reg].kind = kind;
	st->regs[reg].off = off;
}

/* Executes insns. Calls emit(ctx, loc, st) with the state in force from loc up to the next
 * advance; stops before any advance that passes stop_pc. */
int cfi_exec(const struct cfi_arch *arch, const struct cfi_cie *cie, const uint8_t *insns, size_t len,
             struct cfi_state *st, const struct cfi_state *init, uint64_t *loc, uint64_t stop_pc,
             cfi_emit_fn emit, void *ctx)
{
	struct base_cursor c = base_cursor(insns, len);
	struct cfi_state stack[CFI_STATE_STACK];
	unsigned depth = 0;
	(void)arch;
	while (base_cur_left(&c) > 0) {
		uint8_t op = base_cur_u8(&c);
		uint64_t adv = 0, reg, newloc;
		bool advance = false;
		switch (op >> 6) {
		case 1: /* DW_CFA_advance_loc */
			adv = (op & 0x3f) * cie->code_align;
			advance = true;
			break;
		case 2: /* DW_CFA_offset */
			reg = op & 0x3f;
			set_rule(st, reg, CFI_R_OFFSET, falign(base_cur_uleb(&c), cie->data_align));
			continue;
		case 3: /* DW_CFA_restore */
			reg = op & 0x3f;
			if (reg < CFI_MAX_REGS)
				st->regs[reg] = init ? init->regs[reg] : (struct cfi_reg_rule){ 0 };
			continue;
		}
		switch (advance ? 0x100 : op) {
		case 0x100: /* DW_CFA_advance_loc, decoded above */
			break;
		case 0x00: /* nop */
			break;
		case 0x01: { /* set_loc */
			uint64_t v = base_cur_u64(&c);
			if (v < *loc)
				return -UW_EFORMAT;
			adv = v - *loc;
			advance = true;
			break;
		}
		case 0x02: adv = base_cur_u8(&c) * cie->code_align; advance = true; break;
		case 0x03: adv = base_cur_u16(&c) * cie->code_align; advance = true; break;
		case 0x04: adv = (uint64_t)base_cur_u32(&c) * cie->code_align; advance = true; break;
		case 0x05: /* offset_extended */
			reg = base_cur_uleb(&c);
			set_rule(st, reg, CFI_R_OFFSET, falign(base_cur_uleb(&c), cie->data_align));
			break;
		case 0x06: /* restore_extended */
			reg = base_cur_uleb(&c);
			if (reg < CFI_MAX_REGS)
				st->regs[reg] = init ? init->regs[reg] : (struct cfi_reg_rule){ 0 };
			break;
		case 0x07: set_rule(st, base_cur_uleb(&c), CFI_R_UNDEF, 0); break;
		case 0x08: set_rule(st, base_cur_uleb(&c), CFI_R_SAME, 0); break;
		case 0x09: { /* register */
			reg = base_cur_uleb(&c);
			uint64_t r2 = base_cur_uleb(&c);
			set_rule(st, reg, CFI_R_REG, 0);
			if (reg < CFI_MAX_REGS)
				st->regs[reg].reg = (uint16_t)UW_MIN(r2, 0xffffu);
			break;
		}
		case 0x0a: /* remember_state */
			if (depth >= CFI_STATE_STACK)
				return -UW_ELIMIT;
			stack[depth++] = *st;
			break;
		case 0x0b: { /* restore_state: the CFA rule is not part of what is restored? It is:
			      * DWARF 5 §6.4.2.4 restores all register rules; GCC and every unwinder
			      * restore the CFA as well. */
			if (!depth)
				return -UW_EFORMAT;
			bool sig = st->signal;
			*st = stack[--depth];
			st->signal = sig;
			break;
		}
		case 0x0c: /* def_cfa */
			st->cfa_reg = (uint16_t)UW_MIN(base_cur_uleb(&c), 0xffffu);
			st->cfa_off = (int64_t)base_cur_uleb(&c);
			st->cfa_is_expr = false;
			break;
		case 0x0d: /* def_cfa_register */
			st->cfa_reg = (uint16_t)UW_MIN(base_cur_uleb(&c), 0xffffu);
			st->cfa_is_expr = false;
			break;
		case 0x0e: st->cfa_off = (int64_t)base_cur_uleb(&c); break;
		case 0x0f: { /* def_cfa_expression */
			uint64_t l = base_cur_uleb(&c);
			if (l > base_cur_left(&c))
				return -UW_ETRUNC;
			st->cfa_is_expr = true;
			st->cfa_expr = c.p;
			st->cfa_expr_len = (uint32_t)l;
			c.p += l;
			break;
		}
		case 0x10: /* expression */
		case 0x16: { /* val_expression */
			reg = base_cur_uleb(&c);
			uint64_t l = base_cur_uleb(&c);
			if (c.bad || l > base_cur_left(&c))
				return -UW_ETRUNC;
			if (reg < CFI_MAX_REGS) {
				st->regs[reg].kind = op == 0x10 ? CFI_R_EXPR : CFI_R_VAL_EXPR;
				st->regs[reg].expr = c.p;
				st->regs[reg].expr_len = (uint32_t)l;
			}
			c.p += l;
			break;
		}
		case 0x11: /* offset_extended_sf */
			reg = base_cur_uleb(&c);
			set_rule(st, reg, CFI_R_OFFSET, falign((uint64_t)base_cur_sleb(&c), cie->data_align));
			break;
		case 0x12: /* def_cfa_sf */
			st->cfa_reg = (uint16_t)UW_MIN(base_cur_uleb(&c), 0xffffu);
			st->cfa_off = falign((uint64_t)base_cur_sleb(&c), cie->data_align);
			st->cfa_is_expr = false;
			break;
		case 0x13: st->cfa_off = falign((uint64_t)base_cur_sleb(&c), cie->data_align); break;
		case 0x14: /* val_offset */
			reg = base_cur_uleb(&c);
			set_rule(st, reg, CFI_R_VAL_OFFSET, falign(base_cur_uleb(&c), cie->data_align));
			break;
		case 0x15: /* val_offset_sf */
			reg = base_cur_uleb(&c);
			set_rule(st, reg, CFI_R_VAL_OFFSET, falign((uint64_t)base_cur_sleb(&c), cie->data_align));
			break;
		case 0x2d: break; /* GNU_window_save (SPARC) / AArch64 negate_ra_state: no rule here */
		case 0x2e: base_cur_uleb(&c); break; /* GNU_args_size */
		case 0x2f: /* GNU_negative_offset_extended */
			reg = base_cur_uleb(&c);
			set_rule(st, reg, CFI_R_OFFSET, falign(0 - base_cur_uleb(&c), cie->data_align));
			break;
		default:
			return -UW_EUNSUPP;
		}
		if (c.bad)
			return -UW_ETRUNC;
		if (advance) {
			newloc = *loc + adv;
			if (newloc < *loc)
				return -UW_EFORMAT;
			if (adv == 0)
				continue;
			if (emit) {
				int r = emit(ctx, *loc, newloc, st);
				if (r)
					return r;
			}
			if (newloc > stop_pc)
				return 1; /* the state in force at stop_pc is in *st */
			*loc = newloc;
		}
	}
	if (c.bad)
		return -UW_ETRUNC;
	return 0;
}

int cfi_init_state(const struct cfi_arch *arch, const struct cfi_cie *cie, struct cfi_state *st)
{
	memset(st, 0, sizeof(*st));
	st->signal = cie->signal;
	uint64_t loc = 0;
	int r = cfi_exec(arch, cie, cie->insns, cie->insns_len, st, NULL, &loc, UINT64_MAX, NULL, NULL);
	return r < 0 ? r : 0;
}

int cfi_run(const struct cfi_arch *arch, const struct cfi_cie *cie, const struct cfi_fde *fde,
            uint64_t pc, struct cfi_state *st)
{
	struct cfi_state init;
	int r = cfi_init_state(arch, cie, &init);
	if (r)
		return r;
	*st = init;
	uint64_t loc = fde->pc_begin;
	r = cfi_exec(arch, cie, fde->insns, fde->insns_len, st, &init, &loc, pc, NULL, NULL);
	return r < 0 ? r : 0;
}

/* (cfi_fde_states) the rows cfi_exec passes, clipped to the FDE's end, to the caller's function */
struct states_ctx {
	cfi_state_fn fn;
	void *ctx;
	uint64_t end;
};

static int state_row(void *ctx, uint64_t loc, uint64_t next, const struct cfi_state *st)
{
	struct states_ctx *c = ctx;
	return loc < c->end ? c->fn(c->ctx, loc, next < c->end ? next : c->end, st) : 0;
}

/* The FDE at fde_off in section secidx, which must cover pc (any, when pc is UINT64_MAX).
 * @return 0 or a negative error. */
static int fde_covering(const struct cfi_table *t, unsigned secidx, uint64_t fde_off, uint64_t pc,
                        struct cfi_fde *fde, struct cfi_cie *cie)
{
	if (secidx > 1 || !t->sec[secidx].data)
		return -UW_ENOCFI;
	uint64_t next;
	int r = cfi_parse_entry(&t->sec[secidx], fde_off, &next, fde, cie);
	if (r != 1)
		return r < -1 ? r : -UW_EFORMAT;
	if (pc != UINT64_MAX && (pc < fde->pc_begin || pc >= fde->pc_end))
		return -UW_ENOCFI;
	return 0;
}

int cfi_fde_states(const struct cfi_table *t, unsigned secidx, uint64_t fde_off, cfi_state_fn fn, void *ctx)
{
	struct cfi_fde fde;
	struct cfi_cie cie;
	int r = fde_covering(t, secidx, fde_off, UINT64_MAX, &fde, &cie);
	if (r)
		return r;
	if (fde.pc_end <= fde.pc_begin)
		return 0;
	struct cfi_state init, st;
	if ((r = cfi_init_state(t->arch, &cie, &init)))
		return r;
	st = init;
	uint64_t loc = fde.pc_begin;
	struct states_ctx c = { fn, ctx, fde.pc_end };
	r = cfi_exec(t->arch, &cie, fde.insns, fde.insns_len, &st, &init, &loc, fde.pc_end - 1, state_row, &c);
	if (r < 0 || r > 1)
		return r;
	/* (no row passed the end: the last state holds to it) */
	return r == 0 && loc < fde.pc_end ? fn(ctx, loc, fde.pc_end, &st) : 0;
}

int cfi_state_at(const struct cfi_table *t, unsigned secidx, uint64_t fde_off, uint64_t pc,
                 struct cfi_state *out)
{
	struct cfi_fde fde;
	struct cfi_cie cie;
	int r = fde_covering(t, secidx, fde_off, pc, &fde, &cie);
	return r ? r : cfi_run(t->arch, &cie, &fde, pc, out);
}
