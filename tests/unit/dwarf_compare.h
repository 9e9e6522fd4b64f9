/* SPDX-License-Identifier: MIT */
/* The inline index against libdw (dwarf_compare.c). */
#ifndef UW_DWARF_COMPARE_H
#define UW_DWARF_COMPARE_H

#include <stddef.h>

struct dwi;

/* Tests: walks every unit with the fast walk and with libdw and counts units, units the fast walk
 * handled, and units where the two disagree. */
int dwi_compare_walks(struct dwi *d, size_t *units, size_t *fast, size_t *differ);
/* Tests: chains through the lazily walked index against the whole walk's, at the first, middle
 * and last address of every segment of every unit: units, addresses, addresses that differ. */
int dwi_compare_lookups(struct dwi *d, size_t *units, size_t *addrs, size_t *differ);
/* Tests: every node's name and call site read by dww_attrs against libdw's: nodes, nodes read
 * by dww_attrs, nodes that differ. */
int dwi_compare_names(struct dwi *d, size_t *nodes, size_t *fast, size_t *differ);
/* Tests: every unit's line program offset and directory read by dww_unit_lines against libdw's:
 * units, units dww read, units that differ. */
int dwi_compare_unit_lines(struct dwi *d, size_t *units, size_t *fast, size_t *differ);
/* Tests: line tables read by dwl against libdw's (see dwarf_inline.c). */
int dwi_compare_lines(struct dwi *d, size_t *units, size_t *fast, size_t *differ);
/* Tests: every unit's line table through a store of rows at path against one decoded now, then
 * the store saved: units, units whose table differs, and the store's counts (dwl_store_counts).
 * @return dwl_store_save's result. */
int dwi_compare_stored_lines(struct dwi *d, const char *path, size_t *units, size_t *differ, size_t *stored,
                             size_t *taken, size_t *added);

#endif
