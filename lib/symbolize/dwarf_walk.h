/* SPDX-License-Identifier: MIT */
/* A fast walk over one unit's DIEs for the inline index (see dwarf_walk.c). */
#ifndef UW_DWARF_WALK_H
#define UW_DWARF_WALK_H

#include "base/base.h"

struct dww_sections {
	const uint8_t *info, *abbrev, *addr;
	size_t ninfo, nabbrev, naddr;
	/* read by dww_ranges and dww_attrs (NULL: absent) */
	const uint8_t *str, *str_offsets, *ranges, *rnglists, *line_str;
	size_t nstr, nstr_offsets, nranges, nrnglists, nline_str;
	/* A split unit (of a .dwp): info, abbrev, str_offsets and rnglists are its contributions,
	 * str the package's; addr and ranges are the skeleton's file's, and these its skeleton's. */
	bool split;
	uint64_t skel_addr_base, skel_ranges_base, skel_low_pc;
};

/* A subprogram or inlined subroutine. */
struct dww_die {
	uint64_t off;        /* in .debug_info */
	uint32_t tag;
	uint32_t depth;      /* 0: a child of the unit DIE */
	int32_t scope;       /* the id the callback gave the innermost enclosing code DIE; -1: none */
	bool has_pc;         /* [lo, hi) from DW_AT_low_pc/DW_AT_high_pc */
	uint64_t lo, hi;
	bool ranges;         /* no low/high pc but DW_AT_ranges: dww_ranges, or libdw */
	uint32_t ranges_form;
	uint64_t ranges_val;
};

/* Called for each subprogram and inlined subroutine in file order. @return an id >= 0 when the
 * DIE has code (it then encloses the DIEs below it), -1 when not, < -1 to stop the walk. */
typedef int32_t (*dww_fn)(void *ctx, const struct dww_die *d);

/* A unit's header and abbreviations decoded once, for walks in parts: NULL when not handled. */
struct dww_unit;
struct dww_unit *dww_unit_open(const struct dww_sections *sec, uint64_t cu_off);
void dww_unit_free(struct dww_unit *w);
/* The unit's DIEs; shallow: a subprogram with code is reported (the callback's id >= 0) but its
 * subtree is not walked. @return 0, or -1 when the unit (or a form in it) is not handled here or
 * is malformed (the caller then uses libdw). */
int dww_walk_unit(struct dww_unit *w, bool shallow, dww_fn fn, void *ctx);
/* The DIEs below the one at die_off (in .debug_info), whose id is scope. @return as dww_walk_unit. */
int dww_walk_subtree(struct dww_unit *w, uint64_t die_off, int32_t scope, dww_fn fn, void *ctx);

/* The ranges of a DIE's DW_AT_ranges (d->ranges): DWARF 2-4 .debug_ranges and DWARF 5
 * .debug_rnglists (offsets and rnglistx, every entry kind), fn called for each non-empty one.
 * @return 0, -1 when malformed or a needed section is missing, or fn's error (< 0). */
typedef int (*dww_range_fn)(void *ctx, uint64_t lo, uint64_t hi);
int dww_ranges(const struct dww_unit *w, const struct dww_die *d, dww_range_fn fn, void *ctx);

/* The attributes of the DIE at die_off that name a frame. Strings point into the sections. */
struct dww_attrs {
	const char *name, *linkage;  /* DW_AT_name; DW_AT_linkage_name or DW_AT_MIPS_linkage_name */
	uint64_t origin;             /* DW_AT_abstract_origin, else DW_AT_specification: a DIE
	                              * offset in .debug_info (maybe another unit's), or 0 */
	uint64_t call_file, call_line;
	bool has_call_file, has_call_line;
	/* one of these is in a form not read here: another file's (dwz), a type signature, a
	 * string section that is missing, or bad */
	bool elsewhere;
};
int dww_attrs(const struct dww_unit *w, uint64_t die_off, struct dww_attrs *out);
bool dww_is_split(const struct dww_unit *w);
/* The unit DIE's line program offset (DW_AT_stmt_list) and compilation directory (NULL: none),
 * as libdw's dwarf_formudata and dwarf_formstring give them. false when libdw must be asked: no
 * line program, a split-DWARF skeleton or split unit, a form not read here (a directory in a dwz
 * supplementary file). */
bool dww_unit_lines(const struct dww_unit *w, uint64_t *stmt_list, const char **comp_dir);
/* A split unit's id (DWARF 5: its header's; GNU DWARF 4: DW_AT_GNU_dwo_id). false: none. */
bool dww_dwo_id(const struct dww_unit *w, uint64_t *id);
/* Whether the DIE at die_off is inside the unit. */
bool dww_unit_has(const struct dww_unit *w, uint64_t die_off);
/* The offset of the unit header after the one at off in .debug_info (0 at the end or when
 * malformed). */
uint64_t dww_next_unit(const struct dww_sections *sec, uint64_t off);

#endif
