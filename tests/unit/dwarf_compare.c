/* SPDX-License-Identifier: MIT */
/*
 * The inline index's fast paths against libdw, for the tests (test_dwarf) and the fuzzer: the
 * DIE walk, lazily walked units, names and call sites, line tables, and stored line rows.
 */
#include <dwarf.h>
#include <errno.h>
#include <string.h>

#include "symbolize/dwarf_inline_int.h"
#include "dwarf_compare.h"

/* Every unit walked both ways (tests): units, units the fast walk handled, units that differ. */
int dwi_compare_walks(struct dwi *d, size_t *units, size_t *fast, size_t *differ)
{
	*units = *fast = *differ = 0;
	Dwarf_Off off = 0, next;
	size_t hsize;
	while (dwarf_nextcu(d->dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cudie;
		if (dwarf_offdie(d->dw, off + hsize, &cudie)) {
			struct base_vec n1 = BASE_VEC_INIT(struct dwi_node), r1 = BASE_VEC_INIT(struct range);
			struct base_vec n2 = BASE_VEC_INIT(struct dwi_node), r2 = BASE_VEC_INIT(struct range);
			struct dww_unit *w = d->sec.info ? dww_unit_open(&d->sec, off) : NULL;
			struct fast_ctx fc = { d->dw, &n1, &r1, false, w, NULL };
			(*units)++;
			if (w && dww_walk_unit(w, false, dwi_on_die, &fc) == 0) {
				(*fast)++;
				if (dwi_collect_libdw(&cudie, -1, &n2, &r2) || n1.len != n2.len || r1.len != r2.len ||
				    (n1.len && memcmp(n1.data, n2.data, n1.len * sizeof(struct dwi_node))) ||
				    (r1.len && memcmp(r1.data, r2.data, r1.len * sizeof(struct range))))
					(*differ)++;
			}
			base_vec_free(&n1);
			base_vec_free(&r1);
			base_vec_free(&n2);
			base_vec_free(&r2);
			dww_unit_free(w);
		}
		off = next;
	}
	return 0;
}

/* Every unit's line program offset and directory read by dww (dww_unit_lines) against libdw's:
 * units, units dww read, units that differ. */
int dwi_compare_unit_lines(struct dwi *d, size_t *units, size_t *fast, size_t *differ)
{
	*units = *fast = *differ = 0;
	Dwarf_Off off = 0, next;
	size_t hsize;
	while (dwarf_nextcu(d->dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cudie;
		struct dww_unit *w = d->sec.info ? dww_unit_open(&d->sec, off) : NULL;
		uint64_t stmt;
		const char *dir;
		if (dwarf_offdie(d->dw, off + hsize, &cudie)) {
			(*units)++;
			if (w && dww_unit_lines(w, &stmt, &dir)) {
				Dwarf_Attribute a;
				Dwarf_Word lstmt;
				(*fast)++;
				bool has = dwarf_formudata(dwarf_attr(&cudie, DW_AT_stmt_list, &a), &lstmt) == 0;
				const char *ldir = dwarf_formstring(dwarf_attr(&cudie, DW_AT_comp_dir, &a));
				if (!has || lstmt != stmt || !ldir != !dir || (dir && strcmp(dir, ldir)))
					(*differ)++;
			}
		}
		dww_unit_free(w);
		off = next;
	}
	return 0;
}

/* The unit's line table through dwl, or NULL (libdw's then). */

int dwi_compare_stored_lines(struct dwi *d, const char *path, size_t *units, size_t *differ, size_t *stored,
                             size_t *taken, size_t *added)
{
	*units = *differ = 0;
	struct elfv_ident ident = { 1, 2, 3, 4, 5 }; /* one file: the same for every store of the test */
	struct dwl_store *st = dwl_store_open(path, &ident, 0);
	if (!st)
		return -ENOMEM;
	struct base_vec keep = BASE_VEC_INIT(struct dwl_table *);
	Dwarf_Off off = 0, next;
	size_t hsize;
	while (dwarf_nextcu(d->dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cudie;
		Dwarf_Attribute a;
		Dwarf_Word loff;
		if (dwarf_offdie(d->dw, off + hsize, &cudie) &&
		    dwarf_formudata(dwarf_attr(&cudie, DW_AT_stmt_list, &a), &loff) == 0) {
			const char *dir = dwarf_formstring(dwarf_attr(&cudie, DW_AT_comp_dir, &a));
			struct dwl_table *t = dwl_build_stored(&d->lsec, loff, dir, st), *ref = dwl_build(&d->lsec, loff, dir);
			struct dwl_table **slot = t ? base_vec_push(&keep) : NULL;
			(*units)++;
			if ((t != NULL) != (ref != NULL) || (t && !dwl_same(t, ref)))
				(*differ)++;
			dwl_free(ref);
			if (slot)
				*slot = t;
			else
				dwl_free(t);
		}
		off = next;
	}
	dwl_store_counts(st, stored, taken, added);
	int rc = dwl_store_save(st);
	for (size_t i = 0; i < keep.len; i++)
		dwl_free(*(struct dwl_table **)base_vec_at(&keep, i));
	base_vec_free(&keep);
	dwl_store_free(st);
	return rc;
}


int dwi_compare_lines(struct dwi *d, size_t *units, size_t *fast, size_t *differ)
{
	*units = *fast = *differ = 0;
	Dwarf_Off off = 0, next;
	size_t hsize;
	while (dwarf_nextcu(d->dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cudie;
		if (dwarf_offdie(d->dw, off + hsize, &cudie)) {
			(*units)++;
			struct dwl_table *t = dwi_unit_lines(d, &cudie);
			Dwarf_Lines *lines;
			size_t n;
			if (t && dwarf_getsrclines(&cudie, &lines, &n) == 0) {
				(*fast)++;
				/* at both ends of every row that covers code (the last of rows at the same
				 * address, followed by a higher one): empty sequences, which libdw keeps and
				 * answers from, cover nothing */
				for (size_t i = 0; i + 1 < n; i++) {
					Dwarf_Line *li = dwarf_onesrcline(lines, i), *lj = dwarf_onesrcline(lines, i + 1);
					Dwarf_Addr a, b;
					bool endseq;
					dwarf_lineaddr(li, &a);
					dwarf_lineaddr(lj, &b);
					if (dwarf_lineendsequence(li, &endseq) || endseq || b <= a)
						continue;
					/* a row at the address of an end marker may be an empty sequence's */
					bool e2 = false;
					Dwarf_Addr pa = 0;
					if (i > 0 && (dwarf_lineaddr(dwarf_onesrcline(lines, i - 1), &pa) ||
						      dwarf_lineendsequence(dwarf_onesrcline(lines, i - 1), &e2) || (e2 && pa == a)))
						continue;
					Dwarf_Addr at[2] = { a, b - 1 };
					for (int k = 0; k < 2; k++) {
						Dwarf_Line *l = dwarf_getsrc_die(&cudie, at[k]);
						uint32_t fi, ln;
						bool mine = dwl_find(t, at[k], &fi, &ln);
						char buf[4096];
						int lno = 0;
						if (l)
							dwarf_lineno(l, &lno);
						const char *f1 = l ? dwarf_linesrc(l, NULL, NULL) : NULL;
						const char *f2 = mine ? dwl_file(t, fi, buf, sizeof(buf)) : NULL;
						if ((l != NULL) != mine || (mine && ((uint32_t)lno != ln || !f1 || !f2 || strcmp(f1, f2)))) {
							(*differ)++;
						}
					}
				}
			}
			dwl_free(t);
		}
		off = next;
	}
	return 0;
}

/* The index of a unit: its nodes and ranges, then the flattening sweep. */
/* Sweep: nested ranges into segments, each naming the innermost range from its start on (base
 * outside every range). Ranges by start, outer first; a stack of open ranges; a segment starts
 * wherever the innermost open range changes. @return 0, -1 out of memory. */

int dwi_compare_lookups(struct dwi *d, size_t *units, size_t *addrs, size_t *differ)
{
	*units = *addrs = *differ = 0;
	Dwarf_Off off = 0, next;
	size_t hsize;
	while (dwarf_nextcu(d->dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cudie;
		if (dwarf_offdie(d->dw, off + hsize, &cudie)) {
			struct dwi_cu *lazy = dwi_cu_index(d, &cudie, true), *whole = dwi_cu_index(d, &cudie, false);
			if (lazy && whole) {
				(*units)++;
				/* the first, middle and last address of every segment of the whole index */
				for (uint32_t i = 0; i + 1 < whole->nsegs; i++) {
					uint64_t lo = whole->segs[i].start, hi = whole->segs[i + 1].start;
					uint64_t at[3] = { lo, lo + (hi - lo) / 2, hi - 1 };
					for (unsigned k = 0; k < 3; k++) {
						Dwarf_Off a1[DWI_MAX_DEPTH], a2[DWI_MAX_DEPTH];
						unsigned n1 = dwi_chain(d, whole, at[k], a1, DWI_MAX_DEPTH);
						unsigned n2 = dwi_chain(d, lazy, at[k], a2, DWI_MAX_DEPTH);
						(*addrs)++;
						if (n1 != n2 || (n1 && memcmp(a1, a2, n1 * sizeof(a1[0]))))
							(*differ)++;
					}
				}
			}
			dwi_cu_free(lazy);
			dwi_cu_free(whole);
		}
		off = next;
	}
	return 0;
}


int dwi_compare_names(struct dwi *d, size_t *nodes, size_t *fast, size_t *differ)
{
	*nodes = *fast = *differ = 0;
	struct base_strings strings;
	base_strings_init(&strings);
	Dwarf_Off off = 0, next;
	size_t hsize;
	while (dwarf_nextcu(d->dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cudie;
		struct dwi_cu *c = dwarf_offdie(d->dw, off + hsize, &cudie) ? dwi_cu_index(d, &cudie, false) : NULL;
		for (size_t i = 0; c && !c->own && i < c->nodes.len; i++) {
			struct dwi_node *n = base_vec_at(&c->nodes, i), a = *n, b = *n;
			(*nodes)++;
			dwi_libdw_resolve(d, c, &a, &strings);
			if (!dwi_attrs_resolve(d, c, &b, &strings))
				continue;
			(*fast)++;
			/* interned: equal strings are the same pointer */
			if (a.name != b.name || a.call_file != b.call_file || a.call_line != b.call_line)
				(*differ)++;
		}
		dwi_cu_free(c);
		off = next;
	}
	base_strings_free(&strings);
	return 0;
}

