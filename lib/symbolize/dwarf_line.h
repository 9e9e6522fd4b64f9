/* SPDX-License-Identifier: MIT */
/* Line tables of one unit, decoded from .debug_line (see dwarf_line.c). */
#ifndef UW_DWARF_LINE_H
#define UW_DWARF_LINE_H

#include "base/base.h"

struct dwl_sections {
	const uint8_t *line, *line_str, *str;
	size_t nline, nline_str, nstr;
};

struct dwl_table;

/* The table of the line program at off; comp_dir (the unit's DW_AT_comp_dir, may be NULL) is
 * directory 0 before DWARF 5. NULL when malformed or not handled (the caller uses libdw). Names
 * point into the sections, which must outlive the table. */
struct dwl_table *dwl_build(const struct dwl_sections *sec, uint64_t off, const char *comp_dir);
void dwl_free(struct dwl_table *t);

/* The row in force at addr: its file index and line. false outside every sequence. */
bool dwl_find(const struct dwl_table *t, uint64_t addr, uint32_t *file, uint32_t *line);

/* File idx as libdw's dwarf_filesrc names it (directory joined unless the name is absolute),
 * possibly written into buf; NULL for a bad index. */
const char *dwl_file(const struct dwl_table *t, uint32_t idx, char *buf, size_t cap);
uint32_t dwl_nfiles(const struct dwl_table *t);

#endif
