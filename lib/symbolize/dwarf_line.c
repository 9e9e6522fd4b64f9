/* SPDX-License-Identifier: MIT */
/*
 * Line tables read directly from .debug_line (DWARF 2-5).
 *
 * Why not libdw's dwarf_getsrclines: it allocates a record per row in a linked list, copies them
 * into an array and sorts it with qsort; for a CPython recording (144 units) that was 70 ms of a
 * 175 ms `report --script`. Here a unit's program is decoded once into a flat array of 16-byte
 * rows; its sequences are already in address order inside, so only the sequences are ordered
 * (most units need nothing). File names are joined with their directory only when asked for.
 * Anything not handled (VLIW op_index, string forms needing .debug_str_offsets) returns NULL and
 * the caller falls back to libdw. test_dwarf compares every row's lookup with libdw's. The
 * decoded rows kept between runs (the line store) are in dwarf_cache.c.
 */
#include "symbolize/dwarf_line_int.h"
#include "symbolize/dwarf_form.h"

#include <dwarf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* A little-endian value of n bytes (1-8) at the cursor. */
static uint64_t cur_n(struct base_cursor *c, unsigned n)
{
	uint64_t v = 0;
	if (!base_cur_need(c, n))
		return 0;
	memcpy(&v, c->p, n);
	c->p += n;
	return v;
}

/* A string from an offset into .debug_str or .debug_line_str. */
static const char *sec_str(const uint8_t *sec, size_t n, uint64_t off)
{
	if (!sec || off >= n || !memchr(sec + off, 0, n - off))
		return NULL;
	return (const char *)sec + off;
}

/* One entry field of a DWARF 5 directory or file table. @return false when not handled. */
static bool entry_field(struct base_cursor *r, const struct dwl_sections *sec, unsigned offsz, uint64_t form, const char **str,
                        uint64_t *val)
{
	*str = NULL;
	*val = 0;
	switch (form) {
	case DW_FORM_string:
		*str = base_cur_str(r);
		return *str != NULL;
	case DW_FORM_line_strp:
		*str = sec_str(sec->line_str, sec->nline_str, cur_n(r, offsz));
		return *str != NULL && !r->bad;
	case DW_FORM_strp:
		*str = sec_str(sec->str, sec->nstr, cur_n(r, offsz));
		return *str != NULL && !r->bad;
	case DW_FORM_data1: case DW_FORM_data2: case DW_FORM_data4: case DW_FORM_data8: case DW_FORM_data16: {
		unsigned n = (unsigned)dwf_fixed_size(form, offsz, 8, 5);
		*val = cur_n(r, n > 8 ? 8 : n); /* (a 16-byte value: only skipped) */
		if (n > 8)
			base_cur_skip(r, n - 8);
		return !r->bad;
	}
	case DW_FORM_udata:
		*val = base_cur_uleb(r);
		return !r->bad;
	case DW_FORM_block: {
		uint64_t n = base_cur_uleb(r);
		if (r->bad || (uint64_t)(r->end - r->p) < n)
			return false;
		r->p += n;
		return true;
	}
	default:
		return false; /* strx forms need the unit's string offsets base: libdw */
	}
}

/* A DWARF 5 directory or file table. */
static bool v5_table(struct base_cursor *r, const struct dwl_sections *sec, unsigned offsz, bool files, struct dwl_table *t)
{
	uint8_t nfmt = (uint8_t)cur_n(r, 1);
	uint64_t fmt[32][2];
	if (r->bad || nfmt > 32)
		return false;
	for (unsigned i = 0; i < nfmt; i++) {
		fmt[i][0] = base_cur_uleb(r);
		fmt[i][1] = base_cur_uleb(r);
	}
	uint64_t count = base_cur_uleb(r);
	if (r->bad || count > (uint64_t)(r->end - r->p) || count > (1u << 24))
		return false;
	if (files) {
		t->files = calloc(count ? count : 1, sizeof(*t->files));
		if (!t->files)
			return false;
	} else {
		t->dirs = calloc(count ? count : 1, sizeof(*t->dirs));
		if (!t->dirs)
			return false;
	}
	for (uint64_t k = 0; k < count; k++) {
		const char *path = NULL;
		uint64_t dir = 0;
		for (unsigned i = 0; i < nfmt; i++) {
			const char *s;
			uint64_t v;
			if (!entry_field(r, sec, offsz, fmt[i][1], &s, &v))
				return false;
			if (fmt[i][0] == DW_LNCT_path)
				path = s;
			else if (fmt[i][0] == DW_LNCT_directory_index)
				dir = v;
		}
		if (!path)
			return false;
		if (files)
			t->files[t->nfiles++] = (struct dwl_file){ path, (uint32_t)UW_MIN(dir, (uint64_t)UINT32_MAX) };
		else
			t->dirs[t->ndirs++] = path;
	}
	return true;
}

void dwl_free(struct dwl_table *t)
{
	if (!t)
		return;
	if (t->store)
		dwl_store_forget(t->store, t->fresh_idx);
	if (!t->borrowed)
		free(t->rows);
	free(t->files);
	free(t->dirs);
	free(t);
}

struct seq {
	size_t first, n;
	uint64_t start;
};

static int cmp_seq(const void *a, const void *b)
{
	const struct seq *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->first < y->first ? -1 : x->first > y->first;
}

/* Orders the sequences by start address (each is in address order inside). */
static bool order_sequences(struct dwl_table *t, struct seq *seqs, size_t nseq)
{
	bool sorted = true;
	for (size_t i = 1; i < nseq && sorted; i++)
		sorted = seqs[i].start >= seqs[i - 1].start;
	if (sorted)
		return true;
	qsort(seqs, nseq, sizeof(*seqs), cmp_seq);
	struct dwl_row *nr = malloc(t->nrows * sizeof(*nr));
	if (!nr)
		return false;
	size_t at = 0;
	for (size_t i = 0; i < nseq; i++) {
		memcpy(nr + at, t->rows + seqs[i].first, seqs[i].n * sizeof(*nr));
		at += seqs[i].n;
	}
	free(t->rows);
	t->rows = nr;
	return true;
}

struct dwl_table *dwl_build(const struct dwl_sections *sec, uint64_t off, const char *comp_dir)
{
	return dwl_build_stored(sec, off, comp_dir, NULL);
}

struct dwl_table *dwl_build_stored(const struct dwl_sections *sec, uint64_t off, const char *comp_dir,
                                   struct dwl_store *st)
{
	if (!sec->line || off >= sec->nline)
		return NULL;
	struct base_cursor r = base_cursor(sec->line + off, sec->nline - off);
	unsigned offsz;
	uint64_t len = base_cur_initial_length(&r, &offsz);
	if (r.bad || len > (uint64_t)(r.end - r.p))
		return NULL;
	r.end = r.p + len;
	const uint8_t *unit = sec->line + off;
	size_t unit_len = (size_t)(r.end - unit);
	unsigned version = (unsigned)cur_n(&r, 2);
	if (version < 2 || version > 5)
		return NULL;
	if (version == 5) {
		unsigned asz = (unsigned)cur_n(&r, 1);
		cur_n(&r, 1); /* segment selector size */
		if (asz != 8 && asz != 4)
			return NULL;
	}
	uint64_t hlen = cur_n(&r, offsz);
	if (r.bad || hlen > (uint64_t)(r.end - r.p))
		return NULL;
	const uint8_t *prog = r.p + hlen;
	unsigned min_inst = (unsigned)cur_n(&r, 1);
	unsigned max_ops = version >= 4 ? (unsigned)cur_n(&r, 1) : 1;
	bool default_stmt = cur_n(&r, 1) != 0;
	int line_base = (int8_t)cur_n(&r, 1);
	unsigned line_range = (unsigned)cur_n(&r, 1);
	unsigned opcode_base = (unsigned)cur_n(&r, 1);
	(void)default_stmt;
	if (r.bad || max_ops != 1 || line_range == 0 || opcode_base == 0)
		return NULL;
	uint8_t std_len[256] = { 0 };
	for (unsigned i = 1; i < opcode_base; i++)
		std_len[i] = (uint8_t)cur_n(&r, 1);
	struct dwl_table *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	if (version == 5) {
		if (!v5_table(&r, sec, offsz, false, t) || !v5_table(&r, sec, offsz, true, t))
			goto fail;
	} else {
		/* directory 0 is the unit's directory; file 0 does not exist (index from 1) */
		size_t cap = 16;
		t->dirs = malloc(cap * sizeof(*t->dirs));
		if (!t->dirs)
			goto fail;
		t->dirs[t->ndirs++] = comp_dir;
		for (;;) {
			const char *d = base_cur_str(&r);
			if (!d)
				goto fail;
			if (!*d)
				break;
			if (t->ndirs == cap) {
				const char **nd = realloc(t->dirs, 2 * cap * sizeof(*nd));
				if (!nd)
					goto fail;
				t->dirs = nd;
				cap *= 2;
			}
			t->dirs[t->ndirs++] = d;
		}
		cap = 16;
		t->files = malloc(cap * sizeof(*t->files));
		if (!t->files)
			goto fail;
		t->files[t->nfiles++] = (struct dwl_file){ "???", 0 };
		for (;;) {
			const char *f = base_cur_str(&r);
			if (!f)
				goto fail;
			if (!*f)
				break;
			uint64_t dir = base_cur_uleb(&r);
			base_cur_uleb(&r);
			base_cur_uleb(&r);
			if (r.bad)
				goto fail;
			if (t->nfiles == cap) {
				struct dwl_file *nf = realloc(t->files, 2 * cap * sizeof(*nf));
				if (!nf)
					goto fail;
				t->files = nf;
				cap *= 2;
			}
			t->files[t->nfiles++] = (struct dwl_file){ f, (uint32_t)UW_MIN(dir, (uint64_t)UINT32_MAX) };
		}
	}
	if (r.bad || prog > r.end)
		goto fail;
	/* rows decoded by an earlier run, for these very bytes */
	if (st && dwl_store_take(st, off, unit, unit_len, t))
		return t;
	/* the program */
	r.p = prog;
	size_t cap = 256, nseq = 0, seqcap = 16, seq_first = 0;
	t->rows = malloc(cap * sizeof(*t->rows));
	struct seq *seqs = malloc(seqcap * sizeof(*seqs));
	if (!t->rows || !seqs) {
		free(seqs);
		goto fail;
	}
	uint64_t addr = 0;
	uint32_t file = 1, line = 1;
	bool ok = true;
	while (r.p < r.end && ok) {
		uint8_t op = *r.p++;
		bool emit = false, end = false;
		if (op >= opcode_base) {
			unsigned adj = op - opcode_base;
			addr += (uint64_t)(adj / line_range) * min_inst;
			line += (uint32_t)(line_base + (int)(adj % line_range));
			emit = true;
		} else if (op == 0) {
			uint64_t n = base_cur_uleb(&r);
			if (r.bad || n == 0 || n > (uint64_t)(r.end - r.p)) {
				ok = false;
				break;
			}
			const uint8_t *next = r.p + n;
			uint8_t sub = *r.p++;
			if (sub == DW_LNE_end_sequence) {
				emit = end = true;
			} else if (sub == DW_LNE_set_address) {
				unsigned asz = (unsigned)(n - 1);
				if (asz != 8 && asz != 4) {
					ok = false;
					break;
				}
				addr = cur_n(&r, asz);
			} else if (sub == DW_LNE_define_file) {
				ok = false; /* DWARF 2-4 only, and never emitted by current compilers: libdw */
				break;
			}
			r.p = next;
		} else {
			switch (op) {
			case DW_LNS_copy:
				emit = true;
				break;
			case DW_LNS_advance_pc:
				addr += base_cur_uleb(&r) * min_inst;
				break;
			case DW_LNS_advance_line:
				line += (uint32_t)base_cur_sleb(&r);
				break;
			case DW_LNS_set_file:
				file = (uint32_t)base_cur_uleb(&r);
				break;
			case DW_LNS_const_add_pc:
				addr += (uint64_t)((255 - opcode_base) / line_range) * min_inst;
				break;
			case DW_LNS_fixed_advance_pc:
				addr += cur_n(&r, 2);
				break;
			default:
				/* set_column, negate_stmt, basic_block, prologue_end, epilogue_begin,
				 * set_isa and unknown ones: skip their operands */
				for (unsigned i = 0; i < std_len[op]; i++)
					base_cur_uleb(&r);
				break;
			}
			if (r.bad)
				ok = false;
		}
		if (!emit)
			continue;
		if (t->nrows == cap) {
			struct dwl_row *nr = realloc(t->rows, 2 * cap * sizeof(*nr));
			if (!nr) {
				ok = false;
				break;
			}
			t->rows = nr;
			cap *= 2;
		}
		/* within a sequence addresses do not decrease; a row that would is dropped */
		struct dwl_row *prev = t->nrows > seq_first ? &t->rows[t->nrows - 1] : NULL;
		if (prev && addr < prev->addr) {
			ok = false;
			break;
		}
		/* Rows a lookup can never return are not kept (a third to a half of GCC's): one at the
		 * address of the next (the last row at an address answers for it), and one that says
		 * what the row before it said (that row answers up to the next change). */
		struct dwl_row row = { addr, (file & ~END_SEQ) | (end ? END_SEQ : 0), line };
		if (prev && prev->addr == addr) {
			*prev = row;
		} else if (!end && prev && !(prev->file & END_SEQ) && prev->file == row.file && prev->line == line) {
			continue;
		} else {
			t->rows[t->nrows++] = row;
		}
		if (end) {
			if (nseq == seqcap) {
				struct seq *ns = realloc(seqs, 2 * seqcap * sizeof(*ns));
				if (!ns) {
					ok = false;
					break;
				}
				seqs = ns;
				seqcap *= 2;
			}
			/* an empty sequence (it ends where it starts) covers nothing: dropped, so the
			 * sequences do not overlap */
			if (t->rows[seq_first].addr == addr)
				t->nrows = seq_first;
			else
				seqs[nseq++] = (struct seq){ seq_first, t->nrows - seq_first, t->rows[seq_first].addr };
			seq_first = t->nrows;
			addr = 0;
			file = 1;
			line = 1;
		}
	}
	/* rows after the last end_sequence belong to no sequence: dropped, as libdw does */
	t->nrows = seq_first;
	ok = ok && order_sequences(t, seqs, nseq);
	free(seqs);
	if (!ok)
		goto fail;
	if (st)
		dwl_store_add(st, off, unit, unit_len, t);
	return t;
fail:
	dwl_free(t);
	return NULL;
}

bool dwl_find(const struct dwl_table *t, uint64_t addr, uint32_t *file, uint32_t *line)
{
	if (!t || !t->nrows || addr < t->rows[0].addr)
		return false;
	size_t lo = 0, hi = t->nrows; /* last row with addr <= target, in [lo, hi) */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->rows[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	const struct dwl_row *row = &t->rows[lo];
	if (row->file & END_SEQ)
		return false;
	*file = row->file;
	*line = row->line;
	return true;
}

const char *dwl_file(const struct dwl_table *t, uint32_t idx, char *buf, size_t cap)
{
	if (!t || idx >= t->nfiles || !cap)
		return NULL;
	const struct dwl_file *f = &t->files[idx];
	/* as libdw names it: the directory and the name joined, unless the name is absolute */
	const char *dir = f->dir < t->ndirs ? t->dirs[f->dir] : NULL;
	if (f->name[0] == '/' || !dir)
		return f->name;
	int n = snprintf(buf, cap, "%s/%s", dir, f->name);
	return n > 0 && (size_t)n < cap ? buf : f->name;
}

uint32_t dwl_nfiles(const struct dwl_table *t)
{
	return t ? t->nfiles : 0;
}

bool dwl_same(const struct dwl_table *a, const struct dwl_table *b)
{
	return a && b && a->nrows == b->nrows && a->nfiles == b->nfiles &&
	       (!a->nrows || !memcmp(a->rows, b->rows, a->nrows * sizeof(*a->rows)));
}
