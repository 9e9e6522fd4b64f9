/* SPDX-License-Identifier: MIT */
/* Line tables of one unit, decoded from .debug_line (see dwarf_line.c). */
#ifndef UW_DWARF_LINE_H
#define UW_DWARF_LINE_H

#include "base/base.h"
#include "elf/elfview.h"

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

/* Rows decoded by earlier runs from the file ident names, kept in a file (DIR/BUILD-ID-KEY.lines2,
 * see dwarf_line.c). open never fails but for memory: a missing or damaged file, or one made
 * from another file, gives an empty store. A table built
 * through a store takes its rows from there when the unit's bytes are the same, else decodes
 * them and adds them; save writes the file again when rows were added (through a temporary
 * file and a rename). The store must outlive its tables; tables of different units may be built
 * through it at once (save and free: one thread, none building). */
struct dwl_store;
struct dwl_store *dwl_store_open(const char *path, const struct elfv_ident *ident, uint64_t cap);
struct dwl_table *dwl_build_stored(const struct dwl_sections *sec, uint64_t off, const char *comp_dir,
                                   struct dwl_store *st);
/* @return 1 written, 0 nothing to write, negative errno */
int dwl_store_save(struct dwl_store *st);
void dwl_store_free(struct dwl_store *st);
/* Tests: the same rows */
bool dwl_same(const struct dwl_table *a, const struct dwl_table *b);
/* Tests: units in the file, units taken from it, units decoded (and added) */
void dwl_store_counts(const struct dwl_store *st, size_t *stored, size_t *taken, size_t *added);

/* The row in force at addr: its file index and line. false outside every sequence. */
bool dwl_find(const struct dwl_table *t, uint64_t addr, uint32_t *file, uint32_t *line);

/* File idx as libdw's dwarf_filesrc names it (directory joined unless the name is absolute),
 * possibly written into buf; NULL for a bad index. */
const char *dwl_file(const struct dwl_table *t, uint32_t idx, char *buf, size_t cap);
/* The number of files (indexes dwl_file takes are below it). */
uint32_t dwl_nfiles(const struct dwl_table *t);

#endif
