/* SPDX-License-Identifier: MIT */
/* ELF symbol tables: a sorted array per module, built on first symbolization. */
#ifndef UW_SYMTAB_H
#define UW_SYMTAB_H

#include "base/base.h"
#include "elf/elfview.h"

struct sym {
	uint64_t start, end; /* module ELF addresses, end exclusive */
	const char *name;    /* into the ELF string table or the symtab's arena */
	const char *dname;   /* demangled (interned), set on first use; NULL: not yet */
};

struct symtab {
	struct sym *syms;
	size_t n;
	struct base_arena arena;
	const char *source; /* ".symtab" or ".dynsym" */
};

/* Builds from the best table: .symtab of dbg, else .symtab of elf, else .dynsym of elf; adds
 * name@plt entries for elf's PLT. Either ELF may be NULL. Names stay valid while both ELF
 * views and the symtab live. demangled: names will be shown demangled (aliases at one address
 * are then chosen by their demangled names, as perf does). */
int symtab_build(struct symtab *t, struct elfv *elf, struct elfv *dbg, bool demangled);
void symtab_free(struct symtab *t);
/* The source file addr2line names for a function without a line table (start and name as in the
 * table built from the same ELF views): a local function's STT_FILE in the table's file when
 * that file has a .debug_line, else NULL. Into the ELF's string table. */
const char *symtab_file_of(struct elfv *elf, struct elfv *dbg, uint64_t start, const char *name);
const struct sym *symtab_find(const struct symtab *t, uint64_t addr);

#endif
