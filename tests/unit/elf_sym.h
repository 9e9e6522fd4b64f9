/* SPDX-License-Identifier: MIT */
/* For unit tests: any symbol's address by name, read from .symtab directly (labels inside
 * functions included; symtab_build keeps only what names frames). Fails the test when absent. */
#ifndef UW_TEST_ELF_SYM_H
#define UW_TEST_ELF_SYM_H

#include <elf.h>
#include <string.h>

#include "elf/elfview.h"

static uint64_t elf_sym_addr(struct elfv *v, const char *name)
{
	struct elfv_sec st, str;
	if (elfv_section(v, ".symtab", &st) == 0 && elfv_section_at(v, st.link, &str) == 0) {
		for (size_t i = 1; i < st.size / sizeof(Elf64_Sym); i++) {
			Elf64_Sym sym;
			memcpy(&sym, st.data + i * sizeof(sym), sizeof(sym));
			if (sym.st_name < str.size && !strcmp((const char *)str.data + sym.st_name, name))
				return sym.st_value;
		}
	}
	fail_msg("no symbol %s", name);
	return 0;
}

#endif
