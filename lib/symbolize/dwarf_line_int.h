/* SPDX-License-Identifier: MIT */
/* A line table's insides: shared by its decoder (dwarf_line.c) and the line store of the DWARF
 * cache (dwarf_cache.c). */
#ifndef UW_DWARF_LINE_INT_H
#define UW_DWARF_LINE_INT_H

#include "symbolize/dwarf_line.h"

struct dwl_row {
	uint64_t addr;
	uint32_t file;  /* bit 31: end of a sequence */
	uint32_t line;
};

#define END_SEQ 0x80000000u

struct dwl_file {
	const char *name;    /* into the section data */
	uint32_t dir;
};

struct dwl_table {
	struct dwl_row *rows;
	size_t nrows;
	bool borrowed;       /* rows are the store's (mapped), not the table's */
	struct dwl_store *store; /* decoded here, to be saved in the store (fresh[fresh_idx]) */
	size_t fresh_idx;
	struct dwl_file *files;
	uint32_t nfiles;
	const char **dirs;   /* into the section data (dirs[0] may be comp_dir) */
	uint32_t ndirs;
};

/* (dwarf_cache.c) A unit's rows taken from the store when its program (off, the bytes unit[len])
 * is the one stored: t then borrows them. */
bool dwl_store_take(struct dwl_store *st, uint64_t off, const uint8_t *unit, size_t len, struct dwl_table *t);
/* t's rows, decoded now, to be saved with the store (kept only while t lives). */
void dwl_store_add(struct dwl_store *st, uint64_t off, const uint8_t *unit, size_t len, struct dwl_table *t);
/* t (fresh[idx]) is freed: its rows are not saved. */
void dwl_store_forget(struct dwl_store *st, size_t idx);

#endif
