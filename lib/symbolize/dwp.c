/* SPDX-License-Identifier: MIT */
/*
 * DWARF package files: the .dwo sections of many split units concatenated, with .debug_cu_index
 * giving each unit's contribution to each section by its id (DWARF 5 §7.3.5; version 2 is the
 * GNU extension for DWARF 4 that gold's dwp writes, version 5 is llvm-dwp's). libdw 0.188 does
 * not read packages (elfutils reads them from 0.191), so the index is ours, and the units are
 * walked by dwarf_walk.c.
 */
#include "symbolize/dwp.h"

#include <stdlib.h>

enum { DWP_MAX_COLS = 16 };

struct dwp {
	struct elfv *v;
	bool single;          /* one .dwo file: its sections are its unit's (no index) */
	const uint8_t *index;
	size_t nindex;
	uint32_t version, ncols, nunits, nslots;
	const uint8_t *hashes, *rows, *offsets, *sizes;
	int col[9];           /* column of each section id (DW_SECT_*), -1: none */
	struct elfv_sec info, abbrev, line, str, str_offsets, rnglists;
};

static uint32_t u32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static uint64_t u64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static void sec_or_empty(struct elfv *v, const char *name, struct elfv_sec *out)
{
	if (elfv_section(v, name, out) || !out->data)
		memset(out, 0, sizeof(*out));
}

struct dwp *dwp_open(struct elfv *v)
{
	struct elfv_sec idx;
	if (!v || elfv_section(v, ".debug_cu_index", &idx) || !idx.data || idx.size < 16)
		return NULL;
	struct dwp *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->v = v;
	p->index = idx.data;
	p->nindex = (size_t)idx.size;
	/* version 5: a 2-byte version and 2 bytes of padding; version 2: a 4-byte version */
	uint32_t ver = u32(p->index);
	p->version = (ver & 0xffff) == 5 ? 5 : ver;
	p->ncols = u32(p->index + 4);
	p->nunits = u32(p->index + 8);
	p->nslots = u32(p->index + 12);
	if ((p->version != 2 && p->version != 5) || p->ncols == 0 || p->ncols > DWP_MAX_COLS ||
	    (p->nslots & (p->nslots - 1)) || p->nunits > p->nslots)
		goto bad;
	uint64_t need = 16 + (uint64_t)p->nslots * 12 + (uint64_t)p->ncols * 4 + (uint64_t)p->nunits * p->ncols * 8;
	if (need > p->nindex)
		goto bad;
	p->hashes = p->index + 16;
	p->rows = p->hashes + (size_t)p->nslots * 8;
	const uint8_t *ids = p->rows + (size_t)p->nslots * 4;
	p->offsets = ids + (size_t)p->ncols * 4;
	p->sizes = p->offsets + (size_t)p->nunits * p->ncols * 4;
	for (size_t i = 0; i < UW_ARRAY_SIZE(p->col); i++)
		p->col[i] = -1;
	for (uint32_t c = 0; c < p->ncols; c++) {
		uint32_t id = u32(ids + 4 * c);
		if (id < UW_ARRAY_SIZE(p->col))
			p->col[id] = (int)c;
	}
	/* DW_SECT_INFO 1 and DW_SECT_ABBREV 3 in both versions */
	if (p->col[1] < 0 || p->col[3] < 0)
		goto bad;
	sec_or_empty(v, ".debug_info.dwo", &p->info);
	sec_or_empty(v, ".debug_abbrev.dwo", &p->abbrev);
	sec_or_empty(v, ".debug_line.dwo", &p->line);
	sec_or_empty(v, ".debug_str.dwo", &p->str);
	sec_or_empty(v, ".debug_str_offsets.dwo", &p->str_offsets);
	sec_or_empty(v, ".debug_rnglists.dwo", &p->rnglists);
	if (!p->info.data || !p->abbrev.data)
		goto bad;
	return p;
bad:
	free(p);
	return NULL;
}

struct dwp *dwp_open_dwo(struct elfv *v)
{
	struct dwp *p = v ? calloc(1, sizeof(*p)) : NULL;
	if (!p)
		return NULL;
	p->v = v;
	p->single = true;
	sec_or_empty(v, ".debug_info.dwo", &p->info);
	sec_or_empty(v, ".debug_abbrev.dwo", &p->abbrev);
	sec_or_empty(v, ".debug_line.dwo", &p->line);
	sec_or_empty(v, ".debug_str.dwo", &p->str);
	sec_or_empty(v, ".debug_str_offsets.dwo", &p->str_offsets);
	sec_or_empty(v, ".debug_rnglists.dwo", &p->rnglists);
	if (!p->info.data || !p->abbrev.data) {
		free(p);
		return NULL;
	}
	return p;
}

bool dwp_is_dwo(const struct dwp *p)
{
	return p->single;
}

void dwp_close(struct dwp *p)
{
	free(p);
}

/* The row of dwo_id (1-based), 0 when absent: open addressing with a second hash (§7.3.5.3) */
static uint32_t find_row(const struct dwp *p, uint64_t id)
{
	if (!p->nslots)
		return 0;
	uint64_t mask = p->nslots - 1, h = id & mask, step = ((id >> 32) & mask) | 1;
	for (uint32_t probe = 0; probe < p->nslots; probe++) {
		uint32_t row = u32(p->rows + 4 * h);
		if (row == 0)
			return 0;
		if (u64(p->hashes + 8 * h) == id)
			return row <= p->nunits ? row : 0;
		h = (h + step) & mask;
	}
	return 0;
}

/* The unit's part of a section: false when the column is absent or out of the section. */
static bool slice(const struct dwp *p, uint32_t row, int sect, const struct elfv_sec *s, const uint8_t **out,
                  size_t *n)
{
	int c = sect >= 0 && sect < (int)UW_ARRAY_SIZE(p->col) ? p->col[sect] : -1;
	*out = NULL;
	*n = 0;
	if (c < 0 || !s->data)
		return false;
	size_t at = ((size_t)(row - 1) * p->ncols + (size_t)c) * 4;
	uint64_t off = u32(p->offsets + at), size = u32(p->sizes + at);
	if (off > s->size || size > s->size - off)
		return false;
	*out = s->data + off;
	*n = (size_t)size;
	return true;
}

int dwp_unit(const struct dwp *p, uint64_t dwo_id, struct dww_sections *sec, struct dwl_sections *lsec)
{
	if (p->single) {
		/* the file's sections whole (the caller checks the unit's id) */
		sec->info = p->info.data, sec->ninfo = (size_t)p->info.size;
		sec->abbrev = p->abbrev.data, sec->nabbrev = (size_t)p->abbrev.size;
		sec->str_offsets = p->str_offsets.data, sec->nstr_offsets = (size_t)p->str_offsets.size;
		sec->rnglists = p->rnglists.data, sec->nrnglists = (size_t)p->rnglists.size;
		sec->str = p->str.data, sec->nstr = (size_t)p->str.size;
		lsec->line = p->line.data, lsec->nline = (size_t)p->line.size;
		lsec->str = p->str.data, lsec->nstr = (size_t)p->str.size;
		lsec->line_str = NULL, lsec->nline_str = 0;
		return 0;
	}
	uint32_t row = find_row(p, dwo_id);
	if (!row)
		return -1;
	/* section ids: 1 info, 3 abbrev, 4 line, 6 str_offsets in both versions; 8 rnglists in 5 */
	if (!slice(p, row, 1, &p->info, &sec->info, &sec->ninfo) ||
	    !slice(p, row, 3, &p->abbrev, &sec->abbrev, &sec->nabbrev))
		return -1;
	slice(p, row, 6, &p->str_offsets, &sec->str_offsets, &sec->nstr_offsets);
	if (p->version == 5)
		slice(p, row, 8, &p->rnglists, &sec->rnglists, &sec->nrnglists);
	else
		sec->rnglists = NULL, sec->nrnglists = 0;
	sec->str = p->str.data;
	sec->nstr = (size_t)p->str.size;
	slice(p, row, 4, &p->line, &lsec->line, &lsec->nline);
	lsec->str = p->str.data;
	lsec->nstr = (size_t)p->str.size;
	lsec->line_str = NULL;
	lsec->nline_str = 0;
	return 0;
}
