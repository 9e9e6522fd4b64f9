/* SPDX-License-Identifier: MIT */
/*
 * Inline frames and source lines. libdw reads the DWARF (2-5: DW_AT_ranges, abstract origins,
 * .debug_rnglists, .debug_line_str, type units); the per-address search is ours.
 *
 * Why not dwarf_getscopes per address: it walks the unit's DIE tree from the root on every call
 * (and a second call, dwarf_getscopes_die, is needed for the concrete nesting), so a CPython
 * recording took 2 s for inline chains against 55 ms without. Here each unit is indexed once, on
 * its first query: one walk over its DIEs collects the ranges of every subprogram and inlined
 * subroutine with its enclosing scope, and a sweep flattens the nested ranges into sorted
 * segments, each naming the innermost scope over it. A lookup is then a binary search and a walk
 * up the parents; names and call sites are read only for scopes that are looked up, and kept.
 *
 * The walk is lazy by subprogram: the unit's walk records each function's ranges and jumps over
 * its subtree (DW_AT_sibling); a function's inlined subroutines are walked, and swept into
 * segments of its own, when one of its addresses is first asked for. On a CPython recording 557
 * of the 4,542 functions of the units touched are ever asked for, and their subtrees hold 18% of
 * the units' code DIEs.
 *
 * Threads: lookups may run at once on one handle. What units share (the units by address, the map
 * of units, the units opened for names, the package) and every call into libdw (its handles fill
 * caches of their own as they are read) are under the handle's lock, d->mu; a unit is indexed by
 * our own readers without libdw (libdw's view of it is made only for a fallback). A unit is
 * indexed once, under its own lock, which only a thread wanting the unit before its index is made
 * waits for; a function's subtree is walked once into a table of its own, under one of the unit's
 * function locks, chosen by the function. What is made then stays as it is and is read without a
 * lock (published with release, read with acquire); a node's name and call site are read once
 * and published in the node (a thread that finds another reading them reads its own copy). So
 * threads looking up addresses in one unit, even one function, wait only for what is made the
 * first time. A unit already looked up in, and a unit already opened for names, are found without
 * d->mu (the tables of units by address and by offset stay once built, and each entry's unit is
 * published with release, read with acquire). Lock order: a unit's or a function's, then d->mu.
 *
 * Files: this one holds the handle (its lock, the guard against libdw running out of memory),
 * a unit's index and the lookup; dwarf_inline_units.c the units by address and by offset,
 * dwarf_inline_split.c split units (.dwo, .dwp), dwarf_inline_libdw.c what is read through
 * libdw when the fast walk cannot. They share dwarf_inline_int.h.
 */
#include "symbolize/dwarf_inline_int.h"
#include "symbolize/dwarf_walk.h"
#include "symbolize/dwarf_line.h"
#include "symbolize/dwp.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static void find_sections(struct dwi *d)
{
	Elf *e = dwarf_getelf(d->dw);
	size_t shstrndx;
	if (!e || elf_getshdrstrndx(e, &shstrndx))
		return;
	struct dww_sections sec = { 0 };
	for (Elf_Scn *scn = elf_nextscn(e, NULL); scn; scn = elf_nextscn(e, scn)) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || (sh.sh_flags & SHF_COMPRESSED))
			continue;
		const char *name = elf_strptr(e, shstrndx, sh.sh_name);
		const uint8_t **dst = NULL;
		size_t *len = NULL;
		if (!name)
			continue;
		if (!strcmp(name, ".debug_info")) {
			dst = &sec.info;
			len = &sec.ninfo;
		} else if (!strcmp(name, ".debug_abbrev")) {
			dst = &sec.abbrev;
			len = &sec.nabbrev;
		} else if (!strcmp(name, ".debug_addr")) {
			dst = &sec.addr;
			len = &sec.naddr;
		} else if (!strcmp(name, ".debug_line")) {
			dst = &d->lsec.line;
			len = &d->lsec.nline;
		} else if (!strcmp(name, ".debug_line_str")) {
			dst = &d->lsec.line_str;
			len = &d->lsec.nline_str;
		} else if (!strcmp(name, ".debug_str")) {
			dst = &d->lsec.str;
			len = &d->lsec.nstr;
		} else if (!strcmp(name, ".debug_str_offsets")) {
			dst = &sec.str_offsets;
			len = &sec.nstr_offsets;
		} else if (!strcmp(name, ".debug_ranges")) {
			dst = &sec.ranges;
			len = &sec.nranges;
		} else if (!strcmp(name, ".debug_rnglists")) {
			dst = &sec.rnglists;
			len = &sec.nrnglists;
		} else if (!strcmp(name, ".debug_aranges")) {
			dst = &d->aranges_sec;
			len = &d->naranges_sec;
		} else {
			continue;
		}
		Elf_Data *data = elf_getdata(scn, NULL);
		if (data && data->d_buf && data->d_size) {
			*dst = data->d_buf;
			*len = data->d_size;
		}
	}
	sec.str = d->lsec.str;
	sec.nstr = d->lsec.nstr;
	sec.line_str = d->lsec.line_str;
	sec.nline_str = d->lsec.nline_str;
	if (sec.info && sec.abbrev)
		d->sec = sec;
}

struct dwi *dwi_open(struct elfv *v, struct elfv *alt, const char *cache, uint64_t cache_cap, int *why)
{
	if (why)
		*why = 0;
	if (!v)
		return NULL;
	if (!elfv_has_section(v, ".debug_info"))
		return NULL;
	struct dwi *d = calloc(1, sizeof(*d));
	if (!d) {
		if (why)
			*why = -ENOMEM;
		return NULL;
	}
	Dwarf *dw = dwi_image_begin(v, cache, cache_cap, &d->main, why);
	if (!dw) {
		free(d);
		return NULL;
	}
	d->dw = dw;
	dwi_mutex_init(&d->mu);
	dwi_oom_handler(dw);
	/* names and abstract origins that dwz moved into a supplementary file */
	int alt_why = 0;
	if (alt && (d->alt = dwi_image_begin(alt, cache, cache_cap, &d->alt_file, &alt_why))) {
		dwi_oom_handler(d->alt);
		dwarf_setalt(dw, d->alt);
	} else if (alt_why == -ENOMEM && why) {
		*why = -ENOMEM; /* (the handle is made: the names dwz moved are missing) */
	}
	base_map_init(&d->cus);
	base_map_init(&d->attr_units);
	find_sections(d);
	char key[2 * ELFV_MAX_BUILD_ID + 20], *lpath;
	struct elfv_ident ident;
	if (cache && *cache && d->lsec.line && dwi_file_key(v, key, sizeof(key)) && elfv_ident(v, &ident) &&
	    asprintf(&lpath, "%s/%s.lines2", cache, key) >= 0) {
		d->lstore = dwl_store_open(lpath, &ident, cache_cap);
		free(lpath);
	}
	return d;
}

struct dwi_sub dwi_no_sub;

static void sub_free(struct dwi_sub *sb)
{
	if (!sb || sb == &dwi_no_sub)
		return;
	for (uint32_t i = 0; i < sb->nnodes; i++)
		sub_free(sb->nodes[i].sub);
	free(sb->nodes);
	free(sb->segs);
	free(sb);
}

void dwi_cu_free(struct dwi_cu *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nodes.len; i++)
		sub_free(((struct dwi_node *)base_vec_at(&c->nodes, i))->sub);
	base_vec_free(&c->nodes);
	dww_unit_free(c->unit);
	free(c->segs);
	dwl_free(c->lines);
	free(c->file_names);
	dwl_free(c->call_lines);
	dwp_close(c->dwo);
	elfv_close(c->dwo_view);
	pthread_mutex_destroy(&c->mu);
	for (unsigned i = 0; i < DWI_FN_LOCKS; i++)
		pthread_mutex_destroy(&c->fn_mu[i].mu);
	free(c);
}

void dwi_close(struct dwi *d)
{
	if (!d)
		return;
	if (d->oom) {
		/* libdw's state may be half made: left as it is (a leak, once, out of memory) */
		dwi_image_end(&d->main);
		dwi_image_end(&d->alt_file);
		return;
	}
	pthread_mutex_destroy(&d->mu);
	dwl_store_save(d->lstore); /* a cache: a failure to write it only costs the next run */
	size_t it = 0;
	void *val;
	while (base_map_next(&d->cus, &it, NULL, &val))
		dwi_cu_free(val);
	dwl_store_free(d->lstore);
	for (it = 0; base_map_next(&d->attr_units, &it, NULL, &val);)
		if (val != &dwi_no_unit)
			dww_unit_free(val);
	base_map_free(&d->attr_units);
	free(d->unit_offs);
	free(d->attr_unit_at);
	base_map_free(&d->cus);
	free(d->ar);
	dwarf_end(d->dw);
	dwi_image_end(&d->main);
	if (d->alt)
		dwarf_end(d->alt);
	dwi_image_end(&d->alt_file);
	free(d);
}

static inline bool range_less(const struct range *a, const struct range *b)
{
	if (a->lo != b->lo)
		return a->lo < b->lo;
	if (a->depth != b->depth)
		return a->depth < b->depth;
	return a->hi > b->hi;
}

/* Sorts ranges (range_less), keeping the order of equal ones: a merge sort over runs of 16 sorted by insertion, the
 * comparison inlined (qsort's call per comparison was a twentieth of the helper's time on the
 * CPython recording: 26,000 ranges in 350 sweeps, a quarter of neighbours out of order).
 * @return 0, -1 out of memory. */
static int sort_ranges(struct range *rs, size_t n)
{
	enum { RUN = 16 };
	for (size_t lo = 0; lo < n; lo += RUN) {
		size_t hi = UW_MIN(lo + RUN, n);
		for (size_t i = lo + 1; i < hi; i++) {
			struct range t = rs[i];
			size_t j = i;
			for (; j > lo && range_less(&t, &rs[j - 1]); j--)
				rs[j] = rs[j - 1];
			rs[j] = t;
		}
	}
	if (n <= RUN)
		return 0;
	struct range *tmp = malloc(n * sizeof(*tmp)), *src = rs, *dst = tmp;
	if (!tmp)
		return -1;
	for (size_t width = RUN; width < n; width *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * width) {
			size_t mid = UW_MIN(lo + width, n), hi = UW_MIN(lo + 2 * width, n), i = lo, j = mid, k = lo;
			if (mid == hi || !range_less(&src[mid], &src[mid - 1])) { /* already in order */
				memcpy(dst + lo, src + lo, (hi - lo) * sizeof(*dst));
				continue;
			}
			while (i < mid && j < hi)
				dst[k++] = range_less(&src[j], &src[i]) ? src[j++] : src[i++];
			memcpy(dst + k, src + i, (mid - i) * sizeof(*dst));
			k += mid - i;
			memcpy(dst + k, src + j, (hi - j) * sizeof(*dst));
		}
		struct range *t = src;
		src = dst;
		dst = t;
	}
	if (src != rs)
		memcpy(rs, src, n * sizeof(*rs));
	free(tmp);
	return 0;
}

static int push_seg(struct base_vec *segs, uint64_t start, int32_t node)
{
	struct dwi_seg *last = segs->len ? base_vec_at(segs, segs->len - 1) : NULL;
	if (last && last->start == start) {
		last->node = node; /* the later, inner decision wins at the same address */
		if (segs->len > 1 && ((struct dwi_seg *)base_vec_at(segs, segs->len - 2))->node == node)
			segs->len--;
		return 0;
	}
	if (last && last->node == node)
		return 0;
	struct dwi_seg *s = base_vec_push(segs);
	if (!s)
		return -1;
	s->start = start;
	s->node = node;
	return 0;
}

struct range_ctx {
	struct fast_ctx *fc;
	const struct dww_die *w;
	int32_t id;
};

static int add_range(void *ctx, uint64_t lo, uint64_t hi)
{
	struct range_ctx *rc = ctx;
	if (rc->id < 0 &&
	    (rc->id = dwi_add_node(rc->fc->nodes, rc->w->off, rc->w->tag == DW_TAG_subprogram, rc->w->scope)) < 0)
		return -2;
	struct range *r = base_vec_push(rc->fc->ranges);
	if (!r)
		return -2;
	*r = (struct range){ lo, hi, rc->w->depth, rc->id };
	return 0;
}

int32_t dwi_on_die(void *ctx, const struct dww_die *w)
{
	struct fast_ctx *fc = ctx;
	bool sub = w->tag == DW_TAG_subprogram;
	int32_t id;
	if (w->has_pc) {
		if (w->hi <= w->lo)
			return -1;
		id = dwi_add_node(fc->nodes, w->off, sub, w->scope);
		struct range *r = id >= 0 ? base_vec_push(fc->ranges) : NULL;
		if (!r)
			return -2;
		*r = (struct range){ w->lo, w->hi, w->depth, id };
	} else {
		Dwarf_Die die;
		if (!w->ranges)
			return -1;
		/* our range list reader; libdw's when it declines (not for a package's unit, whose
		 * offsets libdw does not know: that DIE is then taken to have no code) */
		size_t keep_nodes = fc->nodes->len, keep_ranges = fc->ranges->len;
		struct range_ctx rc = { fc, w, -1 };
		int e = fc->unit ? dww_ranges(fc->unit, w, add_range, &rc) : -1;
		if (e == 0) {
			id = rc.id;
		} else if (e < -1) {
			return -2;
		} else {
			fc->nodes->len = keep_nodes;
			fc->ranges->len = keep_ranges;
			if (fc->unit && dww_is_split(fc->unit))
				return -1;
			/* (the tests' walks have no handle: one thread) */
			if (fc->d && !dwi_lock(fc->d))
				return -2;
			id = dwarf_offdie(fc->dw, w->off, &die) ? dwi_die_ranges(&die, sub, w->scope, w->depth, fc->nodes, fc->ranges)
							       : -2;
			if (fc->d)
				dwi_unlock(fc->d);
		}
	}
	/* a function the shallow walk jumps over: its subtree is walked when asked for */
	if (id >= 0 && sub && fc->shallow)
		((struct dwi_node *)base_vec_at(fc->nodes, (size_t)id))->lazy = true;
	return id;
}

/* Nodes and ranges of a unit: the fast walk, else libdw's. lazy: functions only, their subtrees
 * left for later, with the fast walk's unit kept in *unit for that (NULL when libdw walked all).
 * @return 0, -1 on failure. */
static int collect(struct dwi *d, Dwarf_Die *cudie, bool lazy, struct dww_unit **unit, struct base_vec *nodes,
                   struct base_vec *ranges)
{
	*unit = d->sec.info ? dww_unit_open(&d->sec, dwarf_dieoffset(cudie) - dwarf_cuoffset(cudie)) : NULL;
	if (*unit) {
		struct fast_ctx fc = { d->dw, nodes, ranges, lazy, *unit, d };
		int rc = dww_walk_unit(*unit, lazy, dwi_on_die, &fc);
		if (rc || !lazy) {
			dww_unit_free(*unit);
			*unit = NULL;
		}
		if (rc == 0)
			return 0;
		nodes->len = 0;
		ranges->len = 0;
	}
	if (!dwi_lock(d))
		return -1;
	int rc = dwi_collect_libdw(cudie, -1, nodes, ranges);
	dwi_unlock(d);
	return rc;
}

struct dwl_table *dwi_unit_lines(struct dwi *d, Dwarf_Die *cudie)
{
	Dwarf_Attribute a;
	Dwarf_Word off;
	if (!d->lsec.line || !dwi_lock(d))
		return NULL;
	bool has = dwarf_formudata(dwarf_attr(cudie, DW_AT_stmt_list, &a), &off) == 0;
	const char *comp_dir = has ? dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir, &a)) : NULL;
	dwi_unlock(d);
	/* (the unit's table decoded or taken from the store without the handle's lock) */
	return has ? dwl_build_stored(&d->lsec, off, comp_dir, d->lstore) : NULL;
}

/* Every unit's line table both ways (tests): at each row's address of libdw's table, and one
 * byte before it, the file and line must agree. Counts units, units read by dwl, lookups that
 * differ. */
static int sweep(struct base_vec *ranges, int32_t base, struct base_vec *segs)
{
	struct range *rs = ranges->data;
	if (ranges->len > 1 && sort_ranges(rs, ranges->len))
		return -1;
	struct range open[256];
	unsigned no = 0;
	for (size_t i = 0; i <= ranges->len; i++) {
		uint64_t at = i < ranges->len ? rs[i].lo : UINT64_MAX;
		while (no && open[no - 1].hi <= at) {
			uint64_t end = open[no - 1].hi;
			no--;
			if (push_seg(segs, end, no ? open[no - 1].node : base))
				return -1;
		}
		if (i == ranges->len)
			break;
		if (no == UW_ARRAY_SIZE(open))
			continue; /* absurd nesting: keep the outer ranges */
		if (no && rs[i].hi > open[no - 1].hi)
			rs[i].hi = open[no - 1].hi; /* not nested (bad DWARF): clip to the parent */
		open[no++] = rs[i];
		if (push_seg(segs, rs[i].lo, rs[i].node))
			return -1;
	}
	return 0;
}

/* A unit not indexed yet. NULL without memory. */
static struct dwi_cu *cu_new(uint64_t unit_off, const Dwarf_Die *cudie)
{
	struct dwi_cu *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->unit_off = unit_off;
	if (cudie) {
		c->die = *cudie;
		c->die_ok = true;
	}
	c->nodes = (struct base_vec)BASE_VEC_INIT(struct dwi_node);
	dwi_mutex_init(&c->mu);
	for (unsigned i = 0; i < DWI_FN_LOCKS; i++)
		dwi_mutex_init(&c->fn_mu[i].mu);
	return c;
}

/* libdw's DIE of the unit, made on first need (under the handle's lock: libdw reads the unit's
 * header and abbreviations then, 30,000 instructions a unit of CPython's). NULL when libdw
 * cannot. Under the unit's lock. */
static Dwarf_Die *cu_die(struct dwi *d, struct dwi_cu *c)
{
	if (c->die_ok)
		return &c->die;
	if (!dwi_lock(d))
		return NULL;
	Dwarf_Off next;
	size_t hsize;
	c->die_ok = dwarf_nextcu(d->dw, c->unit_off, &next, &hsize, NULL, NULL, NULL) == 0 &&
		    dwarf_offdie(d->dw, c->unit_off + hsize, &c->die);
	dwi_unlock(d);
	return c->die_ok ? &c->die : NULL;
}

/* A unit indexed by our readers alone, libdw's view of it never made (nor the handle's lock
 * taken): the unit DIE's line program and directory read by dww, its table by dwl, its DIEs by
 * the fast walk. @return false, having kept nothing, when one of them cannot (libdw then). */
static bool cu_fill_fast(struct dwi *d, struct dwi_cu *c, bool lazy)
{
	uint64_t stmt_list;
	const char *comp_dir;
	struct dww_unit *u = d->sec.info && d->lsec.line ? dww_unit_open(&d->sec, c->unit_off) : NULL;
	if (!u || !dww_unit_lines(u, &stmt_list, &comp_dir) ||
	    !(c->lines = dwl_build_stored(&d->lsec, stmt_list, comp_dir, d->lstore))) {
		dww_unit_free(u);
		return false;
	}
	struct base_vec ranges = BASE_VEC_INIT(struct range), segs = BASE_VEC_INIT(struct dwi_seg);
	struct fast_ctx fc = { d->dw, &c->nodes, &ranges, lazy, u, d };
	if (dww_walk_unit(u, lazy, dwi_on_die, &fc) || sweep(&ranges, -1, &segs)) {
		for (size_t i = 0; i < c->nodes.len; i++)
			sub_free(((struct dwi_node *)base_vec_at(&c->nodes, i))->sub);
		c->nodes.len = 0;
		base_vec_free(&ranges);
		base_vec_free(&segs);
		dwl_free(c->lines);
		c->lines = NULL;
		dww_unit_free(u);
		return false;
	}
	base_vec_free(&ranges);
	if (lazy)
		c->unit = u;
	else
		dww_unit_free(u);
	c->segs = segs.data;
	c->nsegs = (uint32_t)segs.len;
	return true;
}

/* Indexes a unit: lazy (functions now, their inlined subroutines when asked for) or, for the
 * tests' reference, whole. @return false on failure. */
static bool cu_fill(struct dwi *d, struct dwi_cu *c, bool lazy)
{
	Dwarf_Die *cudie = NULL;
	bool fast = cu_fill_fast(d, c, lazy);
	if (!fast) {
		if (!(cudie = cu_die(d, c)))
			return false;
		c->lines = dwi_unit_lines(d, cudie);
	}
	/* (no memory: each lookup interns its file's name) */
	c->file_names = c->lines && dwl_nfiles(c->lines) ? calloc(dwl_nfiles(c->lines), sizeof(*c->file_names)) : NULL;
	if (fast)
		return true;
	/* (without our table, libdw's: a lookup it fails for want of memory is said, in position_at) */
	if (!c->lines && dwi_lock(d)) {
		if (dwarf_getsrcfiles(cudie, &c->files, &c->nfiles) != 0)
			c->files = NULL;
		dwi_unlock(d);
	}
	struct base_vec ranges = BASE_VEC_INIT(struct range), segs = BASE_VEC_INIT(struct dwi_seg);
	bool fail;
	/* split DWARF: the skeleton unit here has no DIEs below it; its split unit (in the .dwo
	 * DW_AT_dwo_name names, else in the package; both read here, never by libdw: no subdie is
	 * asked of dwarf_cu_info) has them, with the call sites' file table. Addresses and lines
	 * stay the skeleton's. */
	uint8_t ut = 0;
	uint64_t dwo_id = 0;
	bool info = false;
	if (dwi_lock(d)) {
		info = dwarf_cu_info(cudie->cu, NULL, &ut, NULL, NULL, &dwo_id, NULL, NULL) == 0;
		dwi_unlock(d);
	}
	if (info && ut == DW_UT_skeleton) {
		/* no unit found: no inline frames (names from the symbol table) */
		fail = dwi_split_unit(d, c, cudie, dwo_id) &&
		       dww_walk_unit(c->unit, true, dwi_on_die, &(struct fast_ctx){ d->dw, &c->nodes, &ranges, true, c->unit, d });
	} else {
		fail = collect(d, cudie, lazy, &c->unit, &c->nodes, &ranges) != 0;
	}
	if (fail || sweep(&ranges, -1, &segs)) {
		base_vec_free(&ranges);
		base_vec_free(&segs);
		return false;
	}
	base_vec_free(&ranges);
	c->segs = segs.data;
	c->nsegs = (uint32_t)segs.len;
	return true;
}

struct dwi_cu *dwi_cu_index(struct dwi *d, Dwarf_Die *cudie, bool lazy)
{
	struct dwi_cu *c = cu_new(dwarf_dieoffset(cudie) - dwarf_cuoffset(cudie), cudie);
	if (c && !cu_fill(d, c, lazy)) {
		dwi_cu_free(c);
		return NULL;
	}
	return c;
}

/* Walks a lazily indexed subprogram's subtree (node id of c->nodes): its inlined subroutines
 * become the nodes of a subtree of its own, swept into its own segments, published for lookups
 * without a lock. On failure the function keeps no inline frames (its name stays). Under the
 * function's lock; c->nodes does not change. */
static const struct dwi_sub *expand(struct dwi *d, struct dwi_cu *c, int32_t id)
{
	struct dwi_node *n = base_vec_at(&c->nodes, (size_t)id);
	Dwarf_Off off = n->off;
	struct base_vec nodes = BASE_VEC_INIT(struct dwi_node), ranges = BASE_VEC_INIT(struct range),
			segs = BASE_VEC_INIT(struct dwi_seg);
	/* (the subtree's scope -1 is the function) */
	struct fast_ctx fc = { d->dw, &nodes, &ranges, false, c->unit, d };
	int rc = c->unit ? dww_walk_subtree(c->unit, off, -1, dwi_on_die, &fc) : -1;
	if (rc && !c->own && dwi_lock(d)) {
		/* a form the fast walk does not know, below the part the unit's walk jumped over */
		nodes.len = 0;
		ranges.len = 0;
		Dwarf_Die die;
		rc = dwarf_offdie(d->dw, off, &die) ? dwi_collect_libdw(&die, -1, &nodes, &ranges) : -1;
		dwi_unlock(d);
	}
	struct dwi_sub *sb = NULL;
	if (!rc && !sweep(&ranges, -1, &segs) && (sb = malloc(sizeof(*sb)))) {
		*sb = (struct dwi_sub){ nodes.data, (uint32_t)nodes.len, (uint32_t)segs.len, segs.data };
	} else {
		base_vec_free(&nodes);
		base_vec_free(&segs);
	}
	base_vec_free(&ranges);
	if (!sb)
		sb = &dwi_no_sub;
	__atomic_store_n(&n->sub, sb, __ATOMIC_RELEASE);
	return sb;
}

/* The segment of segs over addr: its node, or -1. */
static int32_t seg_node(const struct dwi_seg *segs, uint32_t nsegs, uint64_t addr)
{
	size_t k = base_upper_bound(segs, nsegs, sizeof(*segs), offsetof(struct dwi_seg, start), addr);
	return k ? segs[k - 1].node : -1;
}

/* The nodes of the chain over addr in unit c (indexed), innermost first, a function's subtree
 * walked when first needed (under the function lock of the chain's outermost node of c->nodes,
 * taken only then). @return -1 when no scope covers addr. */
static int chain_nodes(struct dwi *d, struct dwi_cu *c, uint64_t addr, struct dwi_node **out, unsigned cap)
{
	int32_t id = seg_node(c->segs, c->nsegs, addr);
	if (id < 0 || (size_t)id >= c->nodes.len)
		return -1;
	/* (c->nodes, their parents and the subtrees once published stay as they are) */
	unsigned n = 0;
	struct dwi_node *f = base_vec_at(&c->nodes, (size_t)id);
	if (f->lazy) {
		const struct dwi_sub *sb = __atomic_load_n(&f->sub, __ATOMIC_ACQUIRE);
		if (!sb) {
			/* (a lazy node is a subprogram: the outermost of its chain) */
			pthread_mutex_t *mu = &c->fn_mu[(uint32_t)id % DWI_FN_LOCKS].mu;
			dwi_lock_hold(mu);
			if (!(sb = __atomic_load_n(&f->sub, __ATOMIC_RELAXED)))
				sb = expand(d, c, id);
			dwi_lock_release(mu);
		}
		for (int32_t k = seg_node(sb->segs, sb->nsegs, addr); k >= 0 && (uint32_t)k < sb->nnodes && n < cap;) {
			struct dwi_node *nd = &sb->nodes[k];
			out[n++] = nd;
			if (nd->subprogram)
				return (int)n;
			k = nd->parent;
		}
	}
	for (int32_t k = id; k >= 0 && (size_t)k < c->nodes.len && n < cap;) {
		struct dwi_node *nd = base_vec_at(&c->nodes, (size_t)k);
		out[n++] = nd;
		k = nd->subprogram ? -1 : nd->parent;
	}
	return (int)n;
}

/* The DIE offsets of the chain over addr, innermost first. */
unsigned dwi_chain(struct dwi *d, struct dwi_cu *c, uint64_t addr, Dwarf_Off *out, unsigned cap)
{
	struct dwi_node *nodes[DWI_MAX_DEPTH];
	int n = chain_nodes(d, c, addr, nodes, UW_MIN(cap, (unsigned)DWI_MAX_DEPTH));
	for (int i = 0; i < n; i++)
		out[i] = nodes[i]->off;
	return n < 0 ? 0 : (unsigned)n;
}

/* The unit holding the DIE at off, opened for dww_attrs (and kept); NULL when dww cannot read it. */
static struct dww_unit *attr_unit(struct dwi *d, struct dwi_cu *c, uint64_t off)
{
	if (c->unit && dww_unit_has(c->unit, off))
		return c->unit;
	/* (the units opened for names are shared by the handle's units; each is read only) */
	return dwi_attr_unit(d, off);
}

/* The unit read for a DIE a node refers to: a package's unit refers only to itself; the others
 * to any unit of .debug_info. */
static struct dww_unit *ref_unit(struct dwi *d, struct dwi_cu *c, uint64_t off)
{
	if (c->own)
		return dww_unit_has(c->unit, off) ? c->unit : NULL;
	return attr_unit(d, c, off);
}

/* A node's name and call site read by dww_attrs, as libdw would give them (die_name: the linkage
 * name through abstract origins and specifications, else the name likewise; the call site of the
 * DIE itself). A package's split unit (own) is read only here, as far as it goes.
 * @return false when a form or a unit is not handled here: libdw then. */
bool dwi_attrs_resolve(struct dwi *d, struct dwi_cu *c, struct dwi_node *n, struct base_strings *strings)
{
	bool own = c->own;
	if (!own && (!d->sec.info || c->ndw || !c->lines))
		return false;
	struct dww_unit *u = ref_unit(d, c, n->off);
	struct dww_attrs at, o;
	if (!u || dww_attrs(u, n->off, &at) || (at.elsewhere && !own))
		return own;
	const char *link = at.linkage, *name = at.name;
	uint64_t next = at.origin;
	/* libdw follows up to 16 DIEs */
	for (unsigned hop = 0; !link && next; hop++) {
		struct dww_unit *ou = hop < 16 ? ref_unit(d, c, next) : NULL;
		if (!ou || dww_attrs(ou, next, &o) || (o.elsewhere && !own)) {
			if (!own)
				return false;
			break;
		}
		link = o.linkage;
		if (!name)
			name = o.name;
		next = o.origin;
	}
	n->name = dwi_intern(strings, link ? link : name);
	if (n->subprogram)
		return true;
	/* a package's call files name its own line table's files (GCC's .debug_line.dwo), or, when
	 * it has none (clang), the skeleton's */
	const struct dwl_table *t = c->call_lines ? c->call_lines : c->lines;
	if (at.has_call_file && t) {
		char buf[4096];
		n->call_file = at.call_file <= UINT32_MAX ? dwi_intern(strings, dwl_file(t, (uint32_t)at.call_file, buf, sizeof(buf))) : NULL;
	}
	if (at.has_call_line)
		n->call_line = (uint32_t)at.call_line;
	return true;
}

/* A node's name and call site into *out (name, call_file, call_line): read once and published
 * in the node for every thread (n->named: 0 not yet, 1 being read, 2 published with release); a
 * thread that finds another reading them reads its own copy (the same interned strings). */
static void node_resolve(struct dwi *d, struct dwi_cu *c, struct dwi_node *n, struct base_strings *strings,
                         struct dwi_node *out)
{
	uint8_t st = __atomic_load_n(&n->named, __ATOMIC_ACQUIRE);
	if (st == 2) {
		/* (field by field: n's subtree pointer may be written meanwhile) */
		out->name = n->name;
		out->call_file = n->call_file;
		out->call_line = n->call_line;
		return;
	}
	uint8_t expect = 0;
	bool mine = st == 0 && __atomic_compare_exchange_n(&n->named, &expect, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
	/* (only what stays is read from n: its DIE and kind) */
	*out = (struct dwi_node){ .off = n->off, .subprogram = n->subprogram };
	if (!dwi_attrs_resolve(d, c, out, strings) && dwi_lock(d)) {
		dwi_libdw_resolve(d, c, out, strings);
		dwi_unlock(d);
	}
	if (mine) {
		n->name = out->name;
		n->call_file = out->call_file;
		n->call_line = out->call_line;
		__atomic_store_n(&n->named, 2, __ATOMIC_RELEASE);
	}
}

/* ---- units by address */

/* The unit over addr, indexed on first use, its lock held (cu_unlock); NULL when none. */
/* The entry of d->ar over addr, or SIZE_MAX. */
static size_t arange_at(const struct dwi *d, uint64_t addr)
{
	size_t k = base_upper_bound(d->ar, d->nar, sizeof(*d->ar), offsetof(struct dwi_arange, lo), addr);
	/* ranges of different units do not overlap in valid DWARF; look a little further back
	 * in case they do */
	for (size_t i = k, guard = 0; i > 0 && guard < 8; i--, guard++)
		if (addr < d->ar[i - 1].hi)
			return i - 1;
	return SIZE_MAX;
}

/* The unit, indexed on its first use (under its lock, which other threads wanting it wait for);
 * NULL when it cannot be. The index stays once made: read without the lock. */
static struct dwi_cu *unit_ready(struct dwi *d, struct dwi_cu *c, bool *busy)
{
	uint8_t st = __atomic_load_n(&c->state, __ATOMIC_ACQUIRE);
	if (st == CU_NEW) {
		/* (another thread indexing it: a caller that does not wait is told) */
		if (!busy) {
			dwi_lock_hold(&c->mu);
		} else if (!dwi_lock_try(&c->mu)) {
			*busy = true;
			return NULL;
		}
		if ((st = __atomic_load_n(&c->state, __ATOMIC_RELAXED)) == CU_NEW) {
			errno = 0;
			st = cu_fill(d, c, true) ? CU_INDEXED : CU_FAILED;
			if (st == CU_FAILED && errno == ENOMEM)
				__atomic_store_n(&d->oom, true, __ATOMIC_RELAXED);
			__atomic_store_n(&c->state, st, __ATOMIC_RELEASE);
		}
		dwi_lock_release(&c->mu);
	}
	return st == CU_INDEXED ? c : NULL;
}

static struct dwi_cu *unit_at(struct dwi *d, uint64_t addr, bool *busy)
{
	/* a unit already looked up in is found without the handle's lock: the table of units by
	 * address and the units it points to stay once published (every lookup took the handle's
	 * lock for this, the lock two threads symbolizing one module waited for most) */
	size_t ai = SIZE_MAX;
	if (__atomic_load_n(&d->ar_ready, __ATOMIC_ACQUIRE) && (ai = arange_at(d, addr)) != SIZE_MAX) {
		struct dwi_cu *c = __atomic_load_n(&d->ar[ai].cu, __ATOMIC_ACQUIRE);
		if (c)
			return unit_ready(d, c, busy);
	}
	/* (the handle's lock held by another thread, maybe for long: libdw's first search of the
	 * module's units by address; a caller that does not wait is told) */
	if (busy) {
		if (!dwi_lock_try(&d->mu)) {
			*busy = true;
			return NULL;
		}
		if (__atomic_load_n(&d->oom, __ATOMIC_RELAXED)) {
			dwi_lock_release(&d->mu);
			return NULL;
		}
	} else if (!dwi_lock(d)) {
		return NULL;
	}
	if (!d->ar_built)
		dwi_aranges_build(d);
	uint64_t unit = UINT64_MAX;
	ai = arange_at(d, addr);
	if (ai != SIZE_MAX)
		unit = d->ar[ai].unit;
	Dwarf_Die cudie;
	bool have_die = false;
	if (unit == UINT64_MAX) {
		/* not in .debug_aranges (an incomplete table): libdw's search over the units */
		if (d->ar_from_units || !dwarf_addrdie(d->dw, (Dwarf_Addr)addr, &cudie)) {
			dwi_unlock(d);
			return NULL;
		}
		unit = dwarf_dieoffset(&cudie) - dwarf_cuoffset(&cudie);
		have_die = true;
	}
	struct dwi_cu *c = base_map_get(&d->cus, unit);
	if (!c) {
		/* indexed below, under its own lock: others meanwhile look up in other units (and
		 * libdw's view of it, when needed, is made then) */
		if (!(c = cu_new(unit, have_die ? &cudie : NULL)) || base_map_put(&d->cus, unit, c)) {
			__atomic_store_n(&d->oom, true, __ATOMIC_RELAXED); /* (ours: said as libdw's are) */
			if (c)
				dwi_cu_free(c);
			dwi_unlock(d);
			return NULL;
		}
	}
	if (ai != SIZE_MAX)
		__atomic_store_n(&d->ar[ai].cu, c, __ATOMIC_RELEASE);
	dwi_unlock(d);
	return unit_ready(d, c, busy);
}

static unsigned lookup(struct dwi *d, struct base_strings *strings, uint64_t addr, struct dwi_frame *out,
                       unsigned cap, bool *busy);
static int chain_at(struct dwi *d, struct dwi_cu *c, struct base_strings *strings, uint64_t addr,
                    struct dwi_frame *out, unsigned cap);
static void position_at(struct dwi *d, struct dwi_cu *c, struct base_strings *strings, uint64_t addr,
                        const char **file, uint32_t *line);

unsigned dwi_lookup(struct dwi *d, struct base_strings *strings, uint64_t addr, struct dwi_frame *out,
                    unsigned cap, bool *busy)
{
	if (!d || !cap || __atomic_load_n(&d->oom, __ATOMIC_RELAXED))
		return 0;
	struct dwi_guard g = { .prev = dwi_guard_top };
	dwi_guard_top = &g;
	if (setjmp(g.jb)) {
		/* (g is read back through a pointer the calls that filled it had) */
		volatile struct dwi_guard *vg = &g;
		dwi_guard_top = vg->prev;
		__atomic_store_n(&d->oom, true, __ATOMIC_RELAXED);
		for (unsigned i = vg->nheld; i-- > 0;)
			pthread_mutex_unlock(vg->held[i]);
		return 0;
	}
	errno = 0;
	unsigned n = lookup(d, strings, addr, out, cap, busy);
	dwi_guard_top = g.prev;
	/* nothing found where an allocation failed on the way (libdw's own, which return errors
	 * rather than call its handler, or ours): said, never an answer silently without lines */
	if (!n && errno == ENOMEM)
		__atomic_store_n(&d->oom, true, __ATOMIC_RELAXED);
	return n;
}

bool dwi_out_of_memory(const struct dwi *d)
{
	return d && __atomic_load_n(&d->oom, __ATOMIC_RELAXED);
}

static unsigned lookup(struct dwi *d, struct base_strings *strings, uint64_t addr, struct dwi_frame *out,
                       unsigned cap, bool *busy)
{
	struct dwi_cu *c = unit_at(d, addr, busy);
	if (!c)
		return 0;
	int n = chain_at(d, c, strings, addr, out, cap);
	/* the innermost position, from the line table: after the function's lock is let go (the
	 * table stays once the unit is indexed; the file's name is interned under the strings'
	 * lock, which two threads otherwise both waited for under the unit's) */
	const char *file = NULL;
	uint32_t line = 0;
	if (n)
		position_at(d, c, strings, addr, &file, &line);
	if (n < 0) {
		/* no function DIE covers addr (GCC's LTO units leave some out) but the line table
		 * may: a position without a DWARF name; the ELF symbol names the frame */
		if (!file)
			return 0;
		out[0] = (struct dwi_frame){ NULL, file, line };
		return 1;
	}
	out[0].file = file;
	out[0].line = line;
	return (unsigned)n;
}

/* The source position of addr in unit c (indexed; its lock not needed). */
static void position_at(struct dwi *d, struct dwi_cu *c, struct base_strings *strings, uint64_t addr,
                        const char **file, uint32_t *line)
{
	uint32_t fidx;
	if (c->lines) {
		char buf[4096];
		if (!dwl_find(c->lines, addr, &fidx, line))
			return;
		/* each file's name interned once per unit (the strings' lock and table were taken at
		 * every lookup; two threads may both intern it first: the same string) */
		const char **slot = c->file_names && fidx < dwl_nfiles(c->lines) ? &c->file_names[fidx] : NULL;
		const char *f = slot ? __atomic_load_n(slot, __ATOMIC_ACQUIRE) : NULL;
		if (!f && (f = dwi_intern(strings, dwl_file(c->lines, fidx, buf, sizeof(buf)))) && slot)
			__atomic_store_n(slot, f, __ATOMIC_RELEASE);
		*file = f;
	} else if (c->die_ok && dwi_lock(d)) {
		errno = 0;
		Dwarf_Line *l = dwarf_getsrc_die(&c->die, (Dwarf_Addr)addr);
		if (!l && errno == ENOMEM) /* (said by the caller: a line lost is not silent) */
			__atomic_store_n(&d->oom, true, __ATOMIC_RELAXED);
		if (l) {
			int ln = 0;
			dwarf_lineno(l, &ln);
			*file = dwi_intern(strings, dwarf_linesrc(l, NULL, NULL));
			*line = ln > 0 ? (uint32_t)ln : 0;
		}
		dwi_unlock(d);
	}
}

/* The chain over addr in its unit c, innermost first; the innermost frame's file and line are
 * left for the caller (position_at). @return the frames, or -1 when no scope covers addr. */
static int chain_at(struct dwi *d, struct dwi_cu *c, struct base_strings *strings, uint64_t addr,
                    struct dwi_frame *out, unsigned cap)
{
	struct dwi_node *nodes[DWI_MAX_DEPTH];
	int k = chain_nodes(d, c, addr, nodes, UW_MIN(cap, (unsigned)DWI_MAX_DEPTH));
	const char *file = NULL;
	uint32_t line = 0;
	for (int i = 0; i < k; i++) {
		struct dwi_node nd;
		node_resolve(d, c, nodes[i], strings, &nd);
		out[i].name = nd.name;
		out[i].file = file;
		out[i].line = line;
		file = nd.call_file; /* where this inlined copy sits in its caller */
		line = nd.call_line;
	}
	return k;
}
