/* SPDX-License-Identifier: MIT */
/*
 * The inline index's walk over a unit's DIEs, reading .debug_info and .debug_abbrev directly.
 *
 * Why not libdw here: indexing a unit visits every DIE (types, variables, parameters) to find the
 * few that carry code, and libdw's per-DIE calls (dwarf_siblingof, dwarf_tag, dwarf_child, each
 * decoding the abbreviation and attributes again) made the walk 120 ms of a 210 ms
 * `report --script` on a CPython recording (144 units). This walk decodes each DIE once and
 * skips attributes by form. It reads only what the index needs: tag, children, low/high pc; a DIE
 * with DW_AT_ranges is handed to libdw's dwarf_ranges (all of DWARF 2-5's range list forms).
 * Anything it does not know (an unknown form, split or type units, address indexes without a
 * base) makes it return -1, and the caller uses the libdw walk instead. test_dwarf checks that
 * both walks give the same nodes and ranges for every unit of real debug files.
 */
#include "symbolize/dwarf_walk.h"
#include "symbolize/dwarf_form.h"

#include <dwarf.h>
#include <stdlib.h>

struct abbrev {
	uint32_t tag;
	uint32_t first, nattr;   /* into specs */
	int32_t fixed;           /* bytes of all attributes when every form has a fixed size, else -1 */
	bool children;
	bool used;
	bool want;               /* a subprogram or inlined subroutine */
	bool sibling;            /* has DW_AT_sibling */
};

struct spec {
	uint32_t name, form;
	int64_t implicit;
};

struct abbrevs {
	struct abbrev *a;
	uint32_t na;
	struct spec *s;
	uint32_t ns, caps;
};

#define MAX_ABBREV_CODE 65536u

static inline uint64_t rd(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;
	memcpy(&v, p, n); /* little-endian hosts only (x86_64) */
	return v;
}

static void abbrevs_free(struct abbrevs *t)
{
	free(t->a);
	free(t->s);
}

static int abbrevs_parse(const uint8_t *p, const uint8_t *end, struct abbrevs *t)
{
	memset(t, 0, sizeof(*t));
	for (;;) {
		uint64_t code, tag;
		if (!base_uleb(&p, end, &code))
			return -1;
		if (code == 0)
			return 0;
		if (code >= MAX_ABBREV_CODE || !base_uleb(&p, end, &tag) || p >= end)
			return -1;
		bool children = *p++ != 0;
		if (code >= t->na) {
			uint32_t na = t->na ? t->na : 64;
			while (na <= code)
				na *= 2;
			struct abbrev *a = realloc(t->a, na * sizeof(*a));
			if (!a)
				return -1;
			memset(a + t->na, 0, (na - t->na) * sizeof(*a));
			t->a = a;
			t->na = na;
		}
		struct abbrev *ab = &t->a[code];
		if (ab->used)
			return -1; /* duplicate code */
		*ab = (struct abbrev){ (uint32_t)tag, t->ns, 0, 0, children, true,
				       tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine, false };
		for (;;) {
			uint64_t name, form;
			int64_t ic = 0;
			if (!base_uleb(&p, end, &name) || !base_uleb(&p, end, &form))
				return -1;
			if (name == 0 && form == 0)
				break;
			if (form == DW_FORM_implicit_const && !base_sleb(&p, end, &ic))
				return -1;
			if (t->ns == t->caps) {
				uint32_t cap = t->caps ? 2 * t->caps : 256;
				struct spec *s = realloc(t->s, cap * sizeof(*s));
				if (!s)
					return -1;
				t->s = s;
				t->caps = cap;
			}
			t->s[t->ns++] = (struct spec){ (uint32_t)name, (uint32_t)form, ic };
			ab->nattr++;
			ab->sibling |= name == DW_AT_sibling;
		}
	}
}

static void abbrevs_sizes(struct abbrevs *t, unsigned offsz, unsigned addrsz, unsigned version)
{
	for (uint32_t c = 0; c < t->na; c++) {
		struct abbrev *a = &t->a[c];
		if (!a->used)
			continue;
		int32_t total = 0;
		for (uint32_t i = 0; i < a->nattr && total >= 0; i++) {
			int sz = dwf_fixed_size(t->s[a->first + i].form, offsz, addrsz, version);
			total = sz < 0 ? -1 : total + sz;
		}
		a->fixed = total;
	}
}

struct unit {
	const uint8_t *start, *end;  /* whole unit */
	unsigned offsz, addrsz, version;
	uint64_t addr_base;
	bool have_addr_base;
	bool raw_addrx;              /* reading the unit DIE: address indexes stay indexes */
	bool split;
	uint64_t base_pc;            /* the unit's DW_AT_low_pc: base of its range lists */
	uint64_t rnglists_base, str_offsets_base, ranges_base;
	bool have_rnglists_base, have_str_offsets_base;
	uint64_t dwo_id;             /* a split unit's id (its header's, or DW_AT_GNU_dwo_id) */
	bool have_dwo_id;
	const struct dww_sections *sec;
};

/* Address idx of .debug_addr from the unit's base. */
static bool addr_at(const struct unit *u, uint64_t idx, uint64_t *out)
{
	const struct dww_sections *sec = u->sec;
	if (!u->have_addr_base || !sec->addr || u->addr_base > sec->naddr ||
	    idx >= (sec->naddr - u->addr_base) / u->addrsz)
		return false;
	*out = rd(sec->addr + u->addr_base + idx * u->addrsz, u->addrsz);
	return true;
}

/* Reads one attribute value of `form` at *pp. Sets *val for constants, addresses (resolved
 * through .debug_addr) and references; *is_addr tells whether it was of address class.
 * @return false on malformed or unknown input. */
static bool attr_value(const struct unit *u, uint64_t form, int64_t implicit, const uint8_t **pp, uint64_t *val,
                       bool *is_addr)
{
	const uint8_t *p = *pp, *end = u->end;
	uint64_t v = 0, n = 0;
	*is_addr = false;
	switch (form) {
	case DW_FORM_addr:
		n = u->addrsz;
		if ((size_t)(end - p) < n)
			return false;
		v = rd(p, (unsigned)n);
		p += n;
		*is_addr = true;
		break;
	case DW_FORM_addrx: case DW_FORM_addrx1: case DW_FORM_addrx2: case DW_FORM_addrx3: case DW_FORM_addrx4:
	case DW_FORM_GNU_addr_index: {
		uint64_t idx;
		if (form == DW_FORM_addrx || form == DW_FORM_GNU_addr_index) {
			if (!base_uleb(&p, end, &idx))
				return false;
		} else {
			n = form == DW_FORM_addrx1 ? 1 : form == DW_FORM_addrx2 ? 2 : form == DW_FORM_addrx3 ? 3 : 4;
			if ((size_t)(end - p) < n)
				return false;
			idx = rd(p, (unsigned)n);
			p += n;
		}
		if (u->raw_addrx) {
			v = idx;
			break;
		}
		if (!addr_at(u, idx, &v))
			return false;
		*is_addr = true;
		break;
	}
	case DW_FORM_data1: case DW_FORM_ref1: case DW_FORM_flag: case DW_FORM_strx1:
	case DW_FORM_data2: case DW_FORM_ref2: case DW_FORM_strx2: case DW_FORM_strx3:
	case DW_FORM_data4: case DW_FORM_ref4: case DW_FORM_ref_sup4: case DW_FORM_strx4:
	case DW_FORM_data8: case DW_FORM_ref8: case DW_FORM_ref_sig8: case DW_FORM_ref_sup8:
	case DW_FORM_strp: case DW_FORM_line_strp: case DW_FORM_sec_offset: case DW_FORM_strp_sup:
	case DW_FORM_GNU_strp_alt: case DW_FORM_GNU_ref_alt: case DW_FORM_ref_addr:
		n = (size_t)dwf_fixed_size(form, u->offsz, u->addrsz, u->version);
		if ((size_t)(end - p) < n)
			return false;
		v = rd(p, (unsigned)n);
		p += n;
		break;
	case DW_FORM_data16:
		if (end - p < 16)
			return false;
		p += 16;
		break;
	case DW_FORM_udata: case DW_FORM_ref_udata: case DW_FORM_strx: case DW_FORM_loclistx:
	case DW_FORM_rnglistx: case DW_FORM_GNU_str_index:
		if (!base_uleb(&p, end, &v))
			return false;
		break;
	case DW_FORM_sdata: {
		int64_t s;
		if (!base_sleb(&p, end, &s))
			return false;
		v = (uint64_t)s;
		break;
	}
	case DW_FORM_implicit_const:
		v = (uint64_t)implicit;
		break;
	case DW_FORM_flag_present:
		v = 1;
		break;
	case DW_FORM_string: {
		const uint8_t *z = memchr(p, 0, (size_t)(end - p));
		if (!z)
			return false;
		p = z + 1;
		break;
	}
	case DW_FORM_block1: case DW_FORM_block2: case DW_FORM_block4: case DW_FORM_block: case DW_FORM_exprloc:
		if (form == DW_FORM_block1 || form == DW_FORM_block2 || form == DW_FORM_block4) {
			n = form == DW_FORM_block1 ? 1 : form == DW_FORM_block2 ? 2 : 4;
			if ((size_t)(end - p) < n)
				return false;
			v = rd(p, (unsigned)n);
			p += n;
		} else if (!base_uleb(&p, end, &v)) {
			return false;
		}
		if ((uint64_t)(end - p) < v)
			return false;
		p += v;
		break;
	case DW_FORM_indirect: {
		uint64_t f;
		if (!base_uleb(&p, end, &f) || f == DW_FORM_indirect || f == DW_FORM_implicit_const)
			return false;
		*pp = p;
		return attr_value(u, f, 0, pp, val, is_addr);
	}
	default:
		return false; /* anything unknown: the libdw walk */
	}
	*pp = p;
	*val = v;
	return true;
}

static const bool no_descend[] = {
	[DW_TAG_base_type] = true, [DW_TAG_pointer_type] = true, [DW_TAG_typedef] = true,
	[DW_TAG_const_type] = true, [DW_TAG_volatile_type] = true, [DW_TAG_array_type] = true,
	[DW_TAG_enumeration_type] = true, [DW_TAG_subroutine_type] = true, [DW_TAG_formal_parameter] = true,
	[DW_TAG_variable] = true, [DW_TAG_member] = true, [DW_TAG_enumerator] = true,
	[DW_TAG_subrange_type] = true, [DW_TAG_label] = true, [DW_TAG_call_site] = true,
	[DW_TAG_template_type_parameter] = true, [DW_TAG_template_value_parameter] = true,
	[DW_TAG_unspecified_parameters] = true,
	/* types hold member function declarations, never code: compilers place the concrete DIE
	 * of a method at namespace or unit level (DW_AT_specification) */
	[DW_TAG_structure_type] = true, [DW_TAG_class_type] = true, [DW_TAG_union_type] = true,
};

static bool descends(uint32_t tag)
{
	if (tag == DW_TAG_GNU_call_site)
		return false;
	return !(tag < UW_ARRAY_SIZE(no_descend) && no_descend[tag]);
}

#define MAX_LEVEL 256

struct dww_unit {
	struct unit u;
	struct abbrevs ab;
	const uint8_t *children;  /* the unit DIE's first child; NULL: none */
	/* the unit DIE's line program and directory (dww_unit_lines) */
	bool lines_ok;            /* both read as libdw reads them (no skeleton, no odd form) */
	uint64_t stmt_list;
	const char *comp_dir;     /* NULL: none */
};

void dww_unit_free(struct dww_unit *w)
{
	if (!w)
		return;
	abbrevs_free(&w->ab);
	free(w);
}

static const char *str_value(const struct unit *u, uint32_t form, const uint8_t *p, uint64_t v);

struct dww_unit *dww_unit_open(const struct dww_sections *sec, uint64_t cu_off)
{
	if (!sec->info || cu_off >= sec->ninfo || !sec->abbrev)
		return NULL;
	struct dww_unit *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	struct unit *u = &w->u;
	u->sec = sec;
	const uint8_t *p = sec->info + cu_off, *iend = sec->info + sec->ninfo;
	if (iend - p < 11)
		goto bad;
	struct base_cursor lc = base_cursor(p, (size_t)(iend - p));
	uint64_t len = base_cur_initial_length(&lc, &u->offsz);
	if (lc.bad)
		goto bad;
	p = lc.p;
	if (len > (uint64_t)(iend - p) || len < 7)
		goto bad;
	u->start = sec->info + cu_off;
	u->end = p + len;
	u->version = (unsigned)rd(p, 2);
	p += 2;
	uint64_t abbrev_off;
	if (u->version >= 2 && u->version <= 4) {
		if (u->end - p < (ptrdiff_t)u->offsz + 1)
			goto bad;
		abbrev_off = rd(p, u->offsz);
		p += u->offsz;
		u->addrsz = *p++;
	} else if (u->version == 5) {
		uint8_t ut = *p++;
		/* skeleton and type units: the libdw walk; split units only from a package */
		if (sec->split ? ut != DW_UT_split_compile : ut != DW_UT_compile && ut != DW_UT_partial)
			goto bad;
		u->addrsz = *p++;
		if (u->end - p < (ptrdiff_t)u->offsz + (sec->split ? 8 : 0))
			goto bad;
		abbrev_off = rd(p, u->offsz);
		p += u->offsz;
		if (sec->split) { /* a split unit's id */
			u->dwo_id = rd(p, 8);
			u->have_dwo_id = true;
			p += 8;
		}
	} else {
		goto bad;
	}
	if (u->addrsz != 4 && u->addrsz != 8)
		goto bad;
	if (abbrev_off >= sec->nabbrev)
		goto bad;
	if (abbrevs_parse(sec->abbrev + abbrev_off, sec->abbrev + sec->nabbrev, &w->ab))
		goto bad;
	abbrevs_sizes(&w->ab, u->offsz, u->addrsz, u->version);
	/* a split unit's bases: its skeleton's, and the starts of its contributions (after the
	 * DWARF 5 headers of .debug_str_offsets and .debug_rnglists) */
	u->split = sec->split;
	if (u->split) {
		u->addr_base = sec->skel_addr_base;
		u->have_addr_base = true;
		u->base_pc = sec->skel_low_pc;
		u->ranges_base = sec->skel_ranges_base;
		u->str_offsets_base = u->version >= 5 ? (u->offsz == 4 ? 8 : 16) : 0;
		u->have_str_offsets_base = true;
		u->rnglists_base = u->offsz == 4 ? 12 : 20;
		u->have_rnglists_base = u->version >= 5;
	}
	/* the unit DIE: its bases. Its low pc may be an address index written before the address
	 * base (clang): read as an index, resolved after. */
	uint64_t code;
	if (!base_uleb(&p, u->end, &code) || code == 0 || code >= w->ab.na || !w->ab.a[code].used)
		goto bad;
	const struct abbrev *a = &w->ab.a[code];
	uint64_t low = 0, dir_v = 0;
	uint32_t low_form = 0, dir_form = 0;
	const uint8_t *dir_at = NULL;
	bool has_stmt = false, odd = false;
	u->raw_addrx = true;
	for (uint32_t i = 0; i < a->nattr; i++) {
		const struct spec *sp = &w->ab.s[a->first + i];
		const uint8_t *at = p;
		uint64_t v;
		bool is_addr;
		if (!attr_value(u, sp->form, sp->implicit, &p, &v, &is_addr))
			goto bad;
		switch (sp->name) {
		case DW_AT_stmt_list:
			/* (the forms libdw's dwarf_formudata takes as a line program's offset) */
			has_stmt = sp->form == DW_FORM_sec_offset || sp->form == DW_FORM_data4 || sp->form == DW_FORM_data8;
			odd |= !has_stmt;
			w->stmt_list = v;
			break;
		case DW_AT_comp_dir:
			dir_form = sp->form;
			dir_at = at;
			dir_v = v;
			break;
		case DW_AT_dwo_name: case DW_AT_GNU_dwo_name:
			odd = true; /* a skeleton: its lines and units through libdw */
			break;
		case DW_AT_addr_base: case DW_AT_GNU_addr_base:
			u->addr_base = v;
			u->have_addr_base = true;
			break;
		case DW_AT_rnglists_base:
			u->rnglists_base = v;
			u->have_rnglists_base = true;
			break;
		case DW_AT_str_offsets_base:
			u->str_offsets_base = v;
			u->have_str_offsets_base = true;
			break;
		case DW_AT_low_pc:
			low = v;
			low_form = sp->form;
			break;
		case DW_AT_GNU_dwo_id:
			if (u->split && !u->have_dwo_id) {
				u->dwo_id = v;
				u->have_dwo_id = true;
			}
			odd |= !u->split;
			break;
		default:
			break;
		}
	}
	u->raw_addrx = false;
	if (low_form == DW_FORM_addr) {
		u->base_pc = low;
	} else if (low_form) {
		/* an index: through .debug_addr (a unit without the base cannot be walked) */
		if (!addr_at(u, low, &u->base_pc))
			goto bad;
	}
	w->children = a->children ? p : NULL;
	/* (the directory read after the loop: a string index needs DW_AT_str_offsets_base, which
	 * may come after it) */
	if (dir_form && !(w->comp_dir = str_value(u, dir_form, dir_at, dir_v)))
		odd = true; /* another file's string (dwz), or one not read here */
	w->lines_ok = has_stmt && !odd && !u->split;
	return w;
bad:
	dww_unit_free(w);
	return NULL;
}

/* Walks the DIEs from p, the first child of a DIE whose code scope is scope0, to the end of
 * that DIE's children. shallow: a subprogram with code is reported but not entered. */
static int walk(struct dww_unit *w, const uint8_t *p, int32_t scope0, bool shallow, dww_fn fn, void *ctx)
{
	const struct unit *u = &w->u;
	const struct abbrevs *ab = &w->ab;
	const struct dww_sections *sec = u->sec;
	uint64_t code;
	/* level: the first children are at level 1. scope[l]: the innermost code-carrying DIE
	 * around level l (-1: none). skip_level > 0 while inside a DIE whose children hold no
	 * code (types, parameters, ...) or are not to be walked. */
	int32_t scope[MAX_LEVEL + 2];
	unsigned level = 1, skip_level = 0;
	scope[1] = scope0;
	while (p < u->end) {
		const uint8_t *die = p;
		if (!base_uleb(&p, u->end, &code))
			return -1;
		if (code == 0) {
			if (level == 1)
				return 0; /* the children end */
			level--;
			if (skip_level && level < skip_level)
				skip_level = 0;
			continue;
		}
		if (code >= ab->na || !ab->a[code].used)
			return -1;
		const struct abbrev *a = &ab->a[code];
		bool want = !skip_level && a->want;
		/* most DIEs: nothing to read, and often a fixed size to step over */
		if (!want && a->fixed >= 0 && (skip_level || !a->sibling || !a->children || descends(a->tag))) {
			if (u->end - p < a->fixed)
				return -1;
			p += a->fixed;
			if (a->children) {
				if (!skip_level && !descends(a->tag))
					skip_level = level + 1;
				if (++level > MAX_LEVEL)
					return -1;
				scope[level] = skip_level ? -1 : scope[level - 1];
			}
			continue;
		}
		uint64_t lo = 0, hi = 0, sibling = 0, ranges = 0;
		uint32_t ranges_form = 0;
		bool has_lo = false, has_hi = false, hi_addr = false, has_ranges = false;
		for (uint32_t i = 0; i < a->nattr; i++) {
			const struct spec *sp = &ab->s[a->first + i];
			uint64_t v;
			bool is_addr;
			if (!attr_value(u, sp->form, sp->implicit, &p, &v, &is_addr))
				return -1;
			switch (sp->name) {
			case DW_AT_sibling:
				sibling = v;
				break;
			case DW_AT_low_pc:
				lo = v;
				has_lo = is_addr;
				break;
			case DW_AT_high_pc:
				hi = v;
				hi_addr = is_addr;
				has_hi = true;
				break;
			case DW_AT_ranges:
				has_ranges = true;
				ranges = v;
				ranges_form = sp->form;
				break;
			default:
				break;
			}
		}
		int32_t mine = skip_level ? -1 : scope[level];
		bool entered = true;
		if (want) {
			struct dww_die d = { (uint64_t)(die - sec->info), a->tag, level - 1, scope[level], false, 0, 0, false,
					     0, 0 };
			if (has_lo && has_hi) {
				d.has_pc = true;
				d.lo = lo;
				d.hi = hi_addr ? hi : lo + hi;
			} else if (has_ranges) {
				d.ranges = true;
				d.ranges_form = ranges_form;
				d.ranges_val = ranges;
			}
			int32_t id = fn(ctx, &d);
			if (id < -1)
				return -1;
			if (id >= 0) {
				mine = id;
				if (shallow && a->tag == DW_TAG_subprogram)
					entered = false; /* its subtree is walked when one of its addresses is asked for */
			}
		}
		if (!a->children)
			continue;
		/* a subprogram without code (a declaration, an abstract instance) holds none below it:
		 * inlined copies and nested functions sit in concrete instances */
		bool nocode = want && a->tag == DW_TAG_subprogram && !(has_lo && has_hi) && !has_ranges;
		if (!skip_level && (!descends(a->tag) || nocode || !entered)) {
			/* its subtree holds no code, or is not walked now: jump over it when it says
			 * where it ends */
			if (sibling && sibling < (uint64_t)(u->end - u->start) && u->start + sibling > p) {
				p = u->start + sibling;
				continue;
			}
			skip_level = level + 1;
		}
		if (++level > MAX_LEVEL)
			return -1;
		scope[level] = mine;
	}
	return 0; /* the unit ends without its closing null entries: as libdw, not an error */
}

int dww_walk_unit(struct dww_unit *w, bool shallow, dww_fn fn, void *ctx)
{
	return w->children ? walk(w, w->children, -1, shallow, fn, ctx) : 0;
}

int dww_walk_subtree(struct dww_unit *w, uint64_t die_off, int32_t scope, dww_fn fn, void *ctx)
{
	const struct unit *u = &w->u;
	const uint8_t *p = u->sec->info + die_off;
	uint64_t code;
	if (die_off >= u->sec->ninfo || p < u->start || p >= u->end || !base_uleb(&p, u->end, &code) || code == 0 ||
	    code >= w->ab.na || !w->ab.a[code].used)
		return -1;
	const struct abbrev *a = &w->ab.a[code];
	for (uint32_t i = 0; i < a->nattr; i++) {
		const struct spec *sp = &w->ab.s[a->first + i];
		uint64_t v;
		bool is_addr;
		if (!attr_value(u, sp->form, sp->implicit, &p, &v, &is_addr))
			return -1;
	}
	return a->children ? walk(w, p, scope, false, fn, ctx) : 0;
}

/* ---- range lists and names, read here for split units from a package (libdw 0.188 cannot
 * open those) and for the ranges of every unit (one call less through libdw per DIE) */

/* DWARF 2-4: pairs of addresses relative to the base; (0, 0) ends, (-1, a) sets the base */
static int ranges_v4(const struct unit *u, uint64_t off, dww_range_fn fn, void *ctx)
{
	const struct dww_sections *sec = u->sec;
	if (!sec->ranges || off >= sec->nranges)
		return -1;
	const uint8_t *p = sec->ranges + off, *end = sec->ranges + sec->nranges;
	uint64_t base = u->base_pc, mask = u->addrsz == 8 ? UINT64_MAX : 0xffffffffu;
	while ((size_t)(end - p) >= 2u * u->addrsz) {
		uint64_t a = rd(p, u->addrsz), b = rd(p + u->addrsz, u->addrsz);
		p += 2u * u->addrsz;
		if (a == 0 && b == 0)
			return 0;
		if (a == mask) {
			base = b;
			continue;
		}
		if (b > a) {
			int rc = fn(ctx, base + a, base + b);
			if (rc)
				return rc;
		}
	}
	return -1; /* no end of list */
}

/* DWARF 5 .debug_rnglists entries from off */
static int rnglists_v5(const struct unit *u, uint64_t off, dww_range_fn fn, void *ctx)
{
	const struct dww_sections *sec = u->sec;
	if (!sec->rnglists || off >= sec->nrnglists)
		return -1;
	const uint8_t *p = sec->rnglists + off, *end = sec->rnglists + sec->nrnglists;
	uint64_t base = u->base_pc;
	unsigned asz = u->addrsz;
	while (p < end) {
		uint8_t kind = *p++;
		uint64_t a, b, lo, hi;
		switch (kind) {
		case DW_RLE_end_of_list:
			return 0;
		case DW_RLE_base_addressx:
			if (!base_uleb(&p, end, &a) || !addr_at(u, a, &base))
				return -1;
			continue;
		case DW_RLE_startx_endx:
			if (!base_uleb(&p, end, &a) || !base_uleb(&p, end, &b) || !addr_at(u, a, &lo) || !addr_at(u, b, &hi))
				return -1;
			break;
		case DW_RLE_startx_length:
			if (!base_uleb(&p, end, &a) || !base_uleb(&p, end, &b) || !addr_at(u, a, &lo))
				return -1;
			hi = lo + b;
			break;
		case DW_RLE_offset_pair:
			if (!base_uleb(&p, end, &a) || !base_uleb(&p, end, &b))
				return -1;
			lo = base + a;
			hi = base + b;
			break;
		case DW_RLE_base_address:
			if ((size_t)(end - p) < asz)
				return -1;
			base = rd(p, asz);
			p += asz;
			continue;
		case DW_RLE_start_end:
			if ((size_t)(end - p) < 2u * asz)
				return -1;
			lo = rd(p, asz);
			hi = rd(p + asz, asz);
			p += 2u * asz;
			break;
		case DW_RLE_start_length:
			if ((size_t)(end - p) < asz)
				return -1;
			lo = rd(p, asz);
			p += asz;
			if (!base_uleb(&p, end, &b))
				return -1;
			hi = lo + b;
			break;
		default:
			return -1;
		}
		if (hi > lo) {
			int rc = fn(ctx, lo, hi);
			if (rc)
				return rc;
		}
	}
	return -1;
}

int dww_ranges(const struct dww_unit *w, const struct dww_die *d, dww_range_fn fn, void *ctx)
{
	const struct unit *u = &w->u;
	uint64_t off = d->ranges_val;
	if (!d->ranges)
		return -1;
	if (u->version < 5) {
		if (d->ranges_form != DW_FORM_sec_offset && d->ranges_form != DW_FORM_data4 &&
		    d->ranges_form != DW_FORM_data8)
			return -1;
		/* a GNU split unit's offsets are from its skeleton's DW_AT_GNU_ranges_base */
		if (u->split && (off += u->ranges_base) < u->ranges_base)
			return -1;
		return ranges_v4(u, off, fn, ctx);
	}
	if (d->ranges_form == DW_FORM_rnglistx) {
		/* the offset table after the list's header, entries relative to its start */
		const struct dww_sections *sec = u->sec;
		uint64_t at;
		if (!u->have_rnglists_base || !sec->rnglists || u->rnglists_base > sec->nrnglists ||
		    off >= (sec->nrnglists - u->rnglists_base) / u->offsz)
			return -1;
		at = u->rnglists_base + off * u->offsz;
		off = u->rnglists_base + rd(sec->rnglists + at, u->offsz);
		if (off < u->rnglists_base)
			return -1;
	} else if (d->ranges_form != DW_FORM_sec_offset) {
		return -1;
	}
	return rnglists_v5(u, off, fn, ctx);
}

/* A string attribute's value (the form's value v, read from p before the attribute), or NULL. */
static const char *str_value(const struct unit *u, uint32_t form, const uint8_t *p, uint64_t v)
{
	const struct dww_sections *sec = u->sec;
	const uint8_t *s = NULL, *end = NULL;
	switch (form) {
	case DW_FORM_string:
		s = p;
		end = u->end;
		break;
	case DW_FORM_strp:
		if (!sec->str || v >= sec->nstr)
			return NULL;
		s = sec->str + v;
		end = sec->str + sec->nstr;
		break;
	case DW_FORM_line_strp:
		if (!sec->line_str || v >= sec->nline_str)
			return NULL;
		s = sec->line_str + v;
		end = sec->line_str + sec->nline_str;
		break;
	case DW_FORM_strx: case DW_FORM_strx1: case DW_FORM_strx2: case DW_FORM_strx3: case DW_FORM_strx4:
	case DW_FORM_GNU_str_index: {
		if (!u->have_str_offsets_base || !sec->str_offsets || !sec->str ||
		    u->str_offsets_base > sec->nstr_offsets || v >= (sec->nstr_offsets - u->str_offsets_base) / u->offsz)
			return NULL;
		uint64_t so = rd(sec->str_offsets + u->str_offsets_base + v * u->offsz, u->offsz);
		if (so >= sec->nstr)
			return NULL;
		s = sec->str + so;
		end = sec->str + sec->nstr;
		break;
	}
	default:
		return NULL;
	}
	return memchr(s, 0, (size_t)(end - s)) ? (const char *)s : NULL;
}

int dww_attrs(const struct dww_unit *w, uint64_t die_off, struct dww_attrs *out)
{
	const struct unit *u = &w->u;
	const uint8_t *p = u->sec->info + die_off;
	uint64_t code;
	memset(out, 0, sizeof(*out));
	if (die_off >= u->sec->ninfo || p < u->start || p >= u->end || !base_uleb(&p, u->end, &code) || code == 0 ||
	    code >= w->ab.na || !w->ab.a[code].used)
		return -1;
	const struct abbrev *a = &w->ab.a[code];
	uint64_t unit_off = (uint64_t)(u->start - u->sec->info), spec = 0;
	bool abstract = false;
	for (uint32_t i = 0; i < a->nattr; i++) {
		const struct spec *sp = &w->ab.s[a->first + i];
		const uint8_t *at = p;
		uint64_t v;
		bool is_addr;
		if (!attr_value(u, sp->form, sp->implicit, &p, &v, &is_addr))
			return -1;
		switch (sp->name) {
		case DW_AT_name:
			if (!(out->name = str_value(u, sp->form, at, v)))
				out->elsewhere = true;
			break;
		case DW_AT_linkage_name: case DW_AT_MIPS_linkage_name:
			if (!out->linkage && !(out->linkage = str_value(u, sp->form, at, v)))
				out->elsewhere = true;
			break;
		case DW_AT_abstract_origin: case DW_AT_specification: {
			/* as libdw follows them: the abstract origin first */
			uint64_t to = 0;
			switch (sp->form) {
			case DW_FORM_ref1: case DW_FORM_ref2: case DW_FORM_ref4: case DW_FORM_ref8:
			case DW_FORM_ref_udata:
				to = unit_off + v;
				break;
			case DW_FORM_ref_addr:
				to = v;
				break;
			default:
				out->elsewhere = true; /* another file's (dwz), a signature: not followed */
				break;
			}
			if (sp->name == DW_AT_abstract_origin) {
				out->origin = to;
				abstract = true;
			} else {
				spec = to;
			}
			break;
		}
		case DW_AT_call_file:
			out->call_file = v;
			out->has_call_file = true;
			break;
		case DW_AT_call_line:
			out->call_line = v;
			out->has_call_line = true;
			break;
		default:
			break;
		}
	}
	if (!abstract)
		out->origin = spec;
	return 0;
}

bool dww_unit_has(const struct dww_unit *w, uint64_t die_off)
{
	if (!w) /* a unit that could not be opened holds nothing */
		return false;
	const uint8_t *p = w->u.sec->info + die_off;
	return die_off < w->u.sec->ninfo && p >= w->u.start && p < w->u.end;
}

uint64_t dww_next_unit(const struct dww_sections *sec, uint64_t off)
{
	if (!sec->info || off >= sec->ninfo || sec->ninfo - off < 4)
		return 0;
	struct base_cursor c = base_cursor(sec->info + off, sec->ninfo - off);
	unsigned offsz;
	uint64_t len = base_cur_initial_length(&c, &offsz);
	if (c.bad || len > base_cur_left(&c))
		return 0;
	return off + (uint64_t)(c.p - (sec->info + off)) + len;
}

bool dww_dwo_id(const struct dww_unit *w, uint64_t *id)
{
	*id = w->u.dwo_id;
	return w->u.have_dwo_id;
}

bool dww_unit_lines(const struct dww_unit *w, uint64_t *stmt_list, const char **comp_dir)
{
	*stmt_list = w->stmt_list;
	*comp_dir = w->comp_dir;
	return w->lines_ok;
}

bool dww_is_split(const struct dww_unit *w)
{
	return w->u.split;
}
