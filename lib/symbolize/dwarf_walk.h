/* SPDX-License-Identifier: MIT */
/* A fast walk over one unit's DIEs for the inline index (see dwarf_walk.c). */
#ifndef UW_DWARF_WALK_H
#define UW_DWARF_WALK_H

#include "base/base.h"

struct dww_sections {
	const uint8_t *info, *abbrev, *addr;
	size_t ninfo, nabbrev, naddr;
};

/* A subprogram or inlined subroutine. */
struct dww_die {
	uint64_t off;        /* in .debug_info */
	uint32_t tag;
	uint32_t depth;      /* 0: a child of the unit DIE */
	int32_t scope;       /* the id the callback gave the innermost enclosing code DIE; -1: none */
	bool has_pc;         /* [lo, hi) from DW_AT_low_pc/DW_AT_high_pc */
	uint64_t lo, hi;
	bool ranges;         /* no low/high pc but DW_AT_ranges: ask libdw */
};

/* Called for each subprogram and inlined subroutine in file order. @return an id >= 0 when the
 * DIE has code (it then encloses the DIEs below it), -1 when not, < -1 to stop the walk. */
typedef int32_t (*dww_fn)(void *ctx, const struct dww_die *d);

/* Walks the unit at cu_off. @return 0, or -1 when the unit (or a form in it) is not handled here
 * or is malformed (the caller then uses libdw). */
int dww_walk(const struct dww_sections *sec, uint64_t cu_off, dww_fn fn, void *ctx);

/* A unit's header and abbreviations decoded once, for walks in parts: NULL when not handled. */
struct dww_unit;
struct dww_unit *dww_unit_open(const struct dww_sections *sec, uint64_t cu_off);
void dww_unit_free(struct dww_unit *w);
/* The unit's DIEs; shallow: a subprogram with code is reported (the callback's id >= 0) but its
 * subtree is not walked. @return as dww_walk. */
int dww_walk_unit(struct dww_unit *w, bool shallow, dww_fn fn, void *ctx);
/* The DIEs below the one at die_off (in .debug_info), whose id is scope. @return as dww_walk. */
int dww_walk_subtree(struct dww_unit *w, uint64_t die_off, int32_t scope, dww_fn fn, void *ctx);

#endif
