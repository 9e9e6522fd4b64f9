/* SPDX-License-Identifier: MIT */
/*
 * SFrame sections decoded into rows (sframe.h). Layouts:
 *   header (28 bytes, then an auxiliary header of sfh_auxhdr_len bytes):
 *     u16 magic 0xdee2 (its byte order tells the section's), u8 version, u8 flags, u8 abi,
 *     i8 fixed FP offset, i8 fixed RA offset, u8 auxhdr_len, u32 FDE count, u32 FRE count,
 *     u32 FRE bytes, u32 FDE sub-section offset, u32 FRE sub-section offset (after the headers)
 *   function descriptors:
 *     v1: i32 start, u32 size, u32 first FRE's offset, u32 FRE count, u8 info (17 bytes)
 *     v2: the same, then u8 repeat-block size, u16 padding (20 bytes)
 *     v3: an index entry i64 start, u32 size, u32 first FRE's offset (16 bytes); the rest is an
 *         attribute record at the start of the function's FREs: u16 FRE count, u8 info, u8 info2
 *         (FDE type: default or flexible), u8 repeat-block size
 *   FRE: the start offset in the function (1, 2 or 4 bytes, by the FDE's FRE type), u8 info
 *     (base register, number and size of the data words, AArch64's mangled-RA bit), the words.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "cfi/sframe.h"

#define HDR_SIZE 28u
#define MAX_WORDS 15u
#define SFRAME_MAX_BLOCKS 65536u /* repeated blocks of one function (PLT entries) */

static uint16_t rd16(const struct sframe_sec *s, size_t off)
{
	uint16_t v;
	memcpy(&v, s->data + off, 2);
	return s->swap ? __builtin_bswap16(v) : v;
}

static uint32_t rd32(const struct sframe_sec *s, size_t off)
{
	uint32_t v;
	memcpy(&v, s->data + off, 4);
	return s->swap ? __builtin_bswap32(v) : v;
}

static uint64_t rd64(const struct sframe_sec *s, size_t off)
{
	uint64_t v;
	memcpy(&v, s->data + off, 8);
	return s->swap ? __builtin_bswap64(v) : v;
}

/* An unsigned value of n bytes (1, 2, 4) */
static uint32_t rdn(const struct sframe_sec *s, size_t off, unsigned n)
{
	return n == 1 ? s->data[off] : n == 2 ? rd16(s, off) : rd32(s, off);
}

static int64_t sext(uint32_t v, unsigned n)
{
	return n == 1 ? (int8_t)v : n == 2 ? (int16_t)v : (int32_t)v;
}

int sframe_open(struct sframe_sec *s, const uint8_t *data, size_t size, uint64_t addr)
{
	memset(s, 0, sizeof(*s));
	if (!data || size < 4)
		return -UW_ETRUNC;
	uint16_t magic;
	memcpy(&magic, data, 2);
	if (magic == SFRAME_MAGIC)
		s->swap = false;
	else if (__builtin_bswap16(magic) == SFRAME_MAGIC)
		s->swap = true;
	else
		return -UW_EMAGIC;
	s->data = data;
	s->size = size;
	s->addr = addr;
	s->version = data[2];
	s->flags = data[3];
	if (s->version < 1 || s->version > 3)
		return -UW_EUNSUPP;
	if (size < HDR_SIZE)
		return -UW_ETRUNC;
	s->abi = data[4];
	if (s->abi < SFRAME_ABI_AARCH64_BE || s->abi > SFRAME_ABI_S390X_BE)
		return -UW_EUNSUPP;
	s->fixed_fp = (int8_t)data[5];
	s->fixed_ra = (int8_t)data[6];
	size_t hdr = HDR_SIZE + data[7];
	s->nfdes = rd32(s, 8);
	s->nfres = rd32(s, 12);
	uint64_t frelen = rd32(s, 16), fdeoff = rd32(s, 20), freoff = rd32(s, 24);
	s->fdesize = s->version == 1 ? 17 : s->version == 2 ? 20 : 16;
	if (hdr > size || fdeoff > size - hdr || freoff > size - hdr)
		return -UW_ETRUNC;
	s->fdeoff = hdr + (size_t)fdeoff;
	s->freoff = hdr + (size_t)freoff;
	if ((uint64_t)s->nfdes * s->fdesize > size - s->fdeoff || frelen > size - s->freoff)
		return -UW_ETRUNC;
	s->frelen = (size_t)frelen;
	return 0;
}

/* One FRE as read: its start (from the function's, or from its block's), info, words. */
struct fre {
	uint32_t start;
	uint8_t info;
	uint8_t n, wsize;
	uint32_t w[MAX_WORDS];
};

/* A function descriptor, whatever the version */
struct fde {
	uint64_t start, size;
	size_t fres;              /* its first FRE, from the section's start */
	uint32_t nfres;
	uint8_t fre_type, pctype, pauth, rep, type;
	bool signal;
};

static int read_fde(const struct sframe_sec *s, uint32_t i, struct fde *f)
{
	size_t at = s->fdeoff + (size_t)i * s->fdesize;
	uint64_t fre_off;
	uint8_t info, info2 = 0;
	int64_t start;
	memset(f, 0, sizeof(*f));
	if (s->version < 3) {
		start = (int32_t)rd32(s, at);
		f->size = rd32(s, at + 4);
		fre_off = rd32(s, at + 8);
		f->nfres = rd32(s, at + 12);
		info = s->data[at + 16];
		f->rep = s->version == 2 ? s->data[at + 17] : 0;
		if (fre_off > s->frelen)
			return -UW_EFORMAT;
		f->fres = s->freoff + (size_t)fre_off;
	} else {
		start = (int64_t)rd64(s, at);
		f->size = rd32(s, at + 8);
		fre_off = rd32(s, at + 12);
		/* the attribute record begins the function's FREs */
		if (fre_off > s->frelen || s->frelen - fre_off < 5)
			return -UW_EFORMAT;
		size_t a = s->freoff + (size_t)fre_off;
		f->nfres = rd16(s, a);
		info = s->data[a + 2];
		info2 = s->data[a + 3];
		f->rep = s->data[a + 4];
		f->fres = a + 5;
		f->signal = (info >> 7) & 1;
	}
	f->fre_type = info & 0xf;
	f->pctype = (info >> 4) & 1;
	/* Version 1 has no block size: its only repeated blocks are the x86-64 PLT's, whose
	 * entries are 16 bytes (GNU ld 2.40's .plt descriptor) */
	if (s->version == 1 && f->pctype && s->abi == SFRAME_ABI_AMD64_LE)
		f->rep = 16;
	f->pauth = (info >> 5) & 1;
	f->type = info2 & 0x1f;
	if (f->fre_type > 2 || f->type > 1 || !f->size)
		return -UW_EFORMAT;
	/* the start: from the field itself (FUNC_START_PCREL), else from the section's start */
	uint64_t base = s->addr + ((s->flags & SFRAME_F_FDE_FUNC_START_PCREL) ? at : 0);
	f->start = base + (uint64_t)start;
	if (f->start + f->size < f->start)
		return -UW_EFORMAT;
	return 0;
}

/* The FREs of a function, read and checked: ascending starts inside the function (or its
 * repeated block). @return the count, or a negative error. */
static int64_t read_fres(const struct sframe_sec *s, const struct fde *f, struct fre **out)
{
	static const unsigned asize[3] = { 1, 2, 4 };
	unsigned as = asize[f->fre_type];
	size_t pos = f->fres, end = s->freoff + s->frelen;
	if (f->nfres > (end - pos) / (as + 1))
		return -UW_EFORMAT; /* more FREs than their bytes could hold */
	struct fre *v = f->nfres ? malloc(f->nfres * sizeof(*v)) : NULL;
	if (f->nfres && !v)
		return -ENOMEM;
	uint64_t limit = f->pctype ? f->rep : f->size;
	for (uint32_t j = 0; j < f->nfres; j++) {
		struct fre *r = &v[j];
		if (end - pos < as + 1)
			goto bad;
		r->start = rdn(s, pos, as);
		r->info = s->data[pos + as];
		pos += as + 1;
		r->n = (r->info >> 1) & 0xf;
		unsigned code = (r->info >> 5) & 3;
		if (code == 3)
			goto bad;
		r->wsize = (uint8_t)(1u << code);
		if ((size_t)r->n * r->wsize > end - pos)
			goto bad;
		for (unsigned k = 0; k < r->n; k++, pos += r->wsize)
			r->w[k] = rdn(s, pos, r->wsize);
		if (r->start >= limit || (j && r->start < v[j - 1].start))
			goto bad;
	}
	*out = v;
	return f->nfres;
bad:
	free(v);
	return -UW_EFORMAT;
}

/* The DWARF numbers of the stack and frame pointers, per ABI */
static void abi_regs(uint8_t abi, uint16_t *sp, uint16_t *fp)
{
	switch (abi) {
	case SFRAME_ABI_AMD64_LE: *sp = 7, *fp = 6; break;
	case SFRAME_ABI_S390X_BE: *sp = 15, *fp = 11; break;
	default: *sp = 31, *fp = 29; break; /* AArch64 */
	}
}

/* A flexible FDE's rule for one value: control word c, offset o. */
static struct sframe_loc flex_loc(uint32_t c, int64_t o)
{
	struct sframe_loc l = { 0 };
	l.from_reg = c & 1;
	l.kind = (c >> 1) & 1 ? SFRAME_LOC_AT : SFRAME_LOC_VAL;
	l.reg = (uint16_t)(c >> 3);
	l.off = (int32_t)o;
	return l;
}

/* The rule of one FRE. @return false when its words do not describe one. */
static bool decode(const struct sframe_sec *s, const struct fde *f, const struct fre *r, struct sframe_row *row)
{
	uint16_t sp, fp;
	abi_regs(s->abi, &sp, &fp);
	int64_t w[MAX_WORDS];
	for (unsigned k = 0; k < r->n; k++)
		w[k] = sext(r->w[k], r->wsize);
	row->signal = f->signal;
	row->pauth_key = f->pauth;
	row->mangled_ra = s->abi <= SFRAME_ABI_AARCH64_LE && ((r->info >> 7) & 1);
	row->flex = f->type == 1;
	row->ra = row->fp = (struct sframe_loc){ SFRAME_LOC_SAME, false, 0, 0 };
	if (!r->n) {
		row->ra_undefined = true; /* (v2 errata 2, v3): the outermost frame */
		return true;
	}
	/* AMD64 keeps the return address at a fixed offset from the CFA */
	struct sframe_loc ra_fixed = { SFRAME_LOC_AT, false, 0, s->fixed_ra };
	bool amd64 = s->abi == SFRAME_ABI_AMD64_LE, s390x = s->abi == SFRAME_ABI_S390X_BE;
	if (amd64 && !s->fixed_ra)
		return false;
	if (row->flex) {
		/* pairs of (control word, offset) for CFA, RA, FP; a lone 0 is padding */
		if (r->n < 2 || !(r->w[0] & 1))
			return false; /* the CFA's base is a register */
		struct sframe_loc c = flex_loc(r->w[0], w[1]);
		row->cfa_deref = c.kind == SFRAME_LOC_AT;
		row->cfa_off = s390x ? (int64_t)c.off * 8 + 160 : c.off; /* (biased and scaled here too) */
		row->cfa_reg = c.reg;
		row->cfa_base = c.reg == sp && !row->cfa_deref   ? SFRAME_CFA_SP
				: c.reg == fp && !row->cfa_deref ? SFRAME_CFA_FP
								 : SFRAME_CFA_REG;
		unsigned i = 2;
		row->ra = amd64 ? ra_fixed : row->ra;
		if (i < r->n) {
			if (r->w[i]) {
				if (i + 1 >= r->n)
					return false;
				row->ra = flex_loc(r->w[i], w[i + 1]);
				i += 2;
			} else {
				i++;
			}
		}
		if (i < r->n && r->w[i]) {
			if (i + 1 >= r->n)
				return false;
			row->fp = flex_loc(r->w[i], w[i + 1]);
		}
		return true;
	}
	row->cfa_base = (r->info & 1) ? SFRAME_CFA_SP : SFRAME_CFA_FP;
	row->cfa_reg = (r->info & 1) ? sp : fp;
	row->cfa_off = w[0];
	if (amd64) {
		row->ra = ra_fixed;
		if (r->n >= 2)
			row->fp = (struct sframe_loc){ SFRAME_LOC_AT, false, 0, (int32_t)w[1] };
		else if (s->fixed_fp)
			row->fp = (struct sframe_loc){ SFRAME_LOC_AT, false, 0, s->fixed_fp };
		return r->n <= 2;
	}
	if (s390x) {
		/* the CFA offset is stored less 160 and divided by 8; v2 keeps a register-held RA
		 * or FP as (DWARF number << 1) | 1 */
		row->cfa_off = w[0] * 8 + 160;
		for (unsigned k = 1; k < r->n && k <= 2; k++) {
			struct sframe_loc *l = k == 1 ? &row->ra : &row->fp;
			if (k == 1 && w[k] == 0)
				continue; /* padding: the RA was not saved */
			if (s->version == 2 && (w[k] & 1))
				*l = (struct sframe_loc){ SFRAME_LOC_VAL, true, (uint16_t)((uint64_t)w[k] >> 1), 0 };
			else
				*l = (struct sframe_loc){ SFRAME_LOC_AT, false, 0, (int32_t)w[k] };
		}
		return r->n <= 3;
	}
	/* AArch64: the frame record (FP, LR) saved, or not yet */
	if (r->n >= 2)
		row->ra = (struct sframe_loc){ SFRAME_LOC_AT, false, 0, (int32_t)w[1] };
	if (r->n >= 3)
		row->fp = (struct sframe_loc){ SFRAME_LOC_AT, false, 0, (int32_t)w[2] };
	return r->n <= 3;
}

int sframe_rows(const struct sframe_sec *s, sframe_row_fn fn, void *ctx, uint32_t *nbad, uint64_t max_rows)
{
	uint64_t nrows = 0;
	int rc = 0;
	for (uint32_t i = 0; i < s->nfdes && !rc; i++) {
		struct fde f;
		struct fre *v = NULL;
		int64_t n = read_fde(s, i, &f);
		if (!n)
			n = read_fres(s, &f, &v);
		if (n == -ENOMEM)
			return -ENOMEM;
		/* a repeated block without a size is not used */
		if (n >= 0 && f.pctype && !f.rep)
			n = -UW_EFORMAT;
		if (n < 0) {
			if (nbad)
				(*nbad)++;
			continue;
		}
		struct sframe_row row = { .func = f.start };
		if (n == 0) {
			/* (v3) a function without FREs is an outermost frame */
			if (s->version >= 3 && f.type == 0) {
				row.pc = f.start;
				row.end = f.start + f.size;
				row.ra_undefined = true;
				rc = ++nrows > max_rows ? -UW_ELIMIT : fn(ctx, &row);
			}
			continue;
		}
		uint64_t blocks = f.pctype ? (f.size + f.rep - 1) / f.rep : 1, span = f.pctype ? f.rep : f.size;
		if (blocks > SFRAME_MAX_BLOCKS) {
			/* a repeated block (a PLT) of more entries than any program has */
			if (nbad)
				(*nbad)++;
			free(v);
			continue;
		}
		bool bad = false;
		for (uint64_t b = 0; b < blocks && !rc && !bad; b++) {
			uint64_t base = f.start + b * span, stop = UW_MIN(base + span, f.start + f.size);
			for (int64_t j = 0; j < n && !rc && !bad; j++) {
				struct sframe_row r = row;
				r.pc = base + v[j].start;
				r.end = j + 1 < n ? base + v[j + 1].start : stop;
				if (r.pc >= stop || r.pc >= r.end)
					continue;
				if (r.end > stop)
					r.end = stop;
				if (!decode(s, &f, &v[j], &r)) {
					if (nbad)
						(*nbad)++; /* (the rows given so far stand: they were right) */
					bad = true;
					break;
				}
				rc = ++nrows > max_rows ? -UW_ELIMIT : fn(ctx, &r);
			}
		}
		free(v);
	}
	return rc;
}
