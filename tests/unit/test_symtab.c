/* SPDX-License-Identifier: MIT */
/* ELF symbol tables: how far a symbol without a size reaches, as perf's symbols__fixup_end
 * says (symtab_cases.S assembled at test time). */
#include <elf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "elf/elfview.h"
#include "symbolize/symtab.h"
#include "elf_sym.h"

static struct elfv *V;
static struct symtab Y;

static uint64_t addr_of(const char *name)
{
	return elf_sym_addr(V, name);
}

static void expect_name(uint64_t addr, const char *want)
{
	const struct sym *s = symtab_find(&Y, addr);
	if (!want) {
		if (s)
			fail_msg("%#llx: named %s, expected no symbol", (unsigned long long)addr, s->name);
		return;
	}
	if (!s)
		fail_msg("%#llx: no symbol, expected %s", (unsigned long long)addr, want);
	if (strcmp(s->name, want))
		fail_msg("%#llx: named %s, expected %s", (unsigned long long)addr, s->name, want);
}

static void test_sized(void **state)
{
	(void)state;
	expect_name(addr_of("sized_fn"), "sized_fn");
	expect_name(addr_of("sized_fn") + 3, "sized_fn");
}

/* a symbol without a size reaches the next symbol */
static void test_zero_size_middle(void **state)
{
	(void)state;
	expect_name(addr_of("zero_mid"), "zero_mid");
	expect_name(addr_of("zero_mid") + 31, "zero_mid");
	expect_name(addr_of("zero_last"), "zero_last");
}

/* the last symbol without a size reaches the end of the page after its own (perf names a sample
 * in _fini, the last function of a program and without a size, _fini+0x4; unwound named it
 * [unknown] and e2e.shlib.sframe_fp failed on such a sample) */
static void test_zero_size_last(void **state)
{
	(void)state;
	uint64_t a = addr_of("zero_last");
	expect_name(a + 4, "zero_last");
	expect_name(a + 64, "zero_last");
	uint64_t end = ((a + 4095) & ~(uint64_t)4095) + 4096;
	expect_name(end - 1, "zero_last");
	expect_name(end, NULL);
}

static int setup(void **state)
{
	(void)state;
	assert_int_equal(elfv_open(SYMTAB_CASES_PATH, 0, &V), 0);
	assert_int_equal(symtab_build(&Y, V, NULL, false), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	symtab_free(&Y);
	elfv_close(V);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sized),
		cmocka_unit_test(test_zero_size_middle),
		cmocka_unit_test(test_zero_size_last),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
