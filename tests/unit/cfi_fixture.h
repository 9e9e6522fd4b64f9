/* SPDX-License-Identifier: MIT */
/* Shared by the CFI and unwinder unit tests: cfi_cases.S assembled into a shared object, its
 * compiled CFI table and its symbols. */
#ifndef UW_TEST_CFI_FIXTURE_H
#define UW_TEST_CFI_FIXTURE_H

#include <elf.h>

#include "cfi/cfi.h"
#include "elf/elfview.h"
#include "symbolize/symtab.h"
#include "elf_sym.h"

static struct elfv *V;
static struct cfi_table T;
static struct symtab Y;

/* Any symbol of the object by name (elf_sym.h) */
static uint64_t addr_of(const char *name)
{
	return elf_sym_addr(V, name);
}

static int fixture_setup(void **state)
{
	(void)state;
	assert_int_equal(elfv_open(CFI_CASES_PATH, 0, &V), 0);
	struct elfv_sec eh;
	assert_int_equal(elfv_section(V, ".eh_frame", &eh), 0);
	struct cfi_section s = { eh.data, eh.size, eh.addr, true };
	assert_int_equal(cfi_table_build(&T, &cfi_arch_x86_64, &s, NULL), 0);
	assert_int_equal(symtab_build(&Y, V, NULL, false), 0);
	return 0;
}

static int fixture_teardown(void **state)
{
	(void)state;
	cfi_table_free(&T);
	symtab_free(&Y);
	elfv_close(V);
	return 0;
}

#endif
