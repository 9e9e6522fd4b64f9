/* SPDX-License-Identifier: MIT */
/* The inline index's fast DIE walk must give the same nodes and ranges as the walk through libdw,
 * its lazy form (functions walked when asked for) the same chains as the whole walk,
 * for every unit of real debug files: the test programs' own (DWARF 5, built at test time), and
 * a large system one when given (CPython's, from python3.11-dbg, in CI). Files come as arguments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "elf/elfview.h"
#include "symbolize/dwarf_inline.h"

static int nfiles;
static char **files;

static void test_walks_agree(void **state)
{
	(void)state;
	for (int i = 0; i < nfiles; i++) {
		struct elfv *v = NULL;
		assert_int_equal(elfv_open(files[i], &v), 0);
		struct dwi *d = dwi_open(v, NULL, NULL, NULL);
		assert_non_null(d);
		size_t units, fast, differ;
		dwi_compare_walks(d, &units, &fast, &differ);
		printf("%s: %zu units, %zu walked fast, %zu differ\n", files[i], units, fast, differ);
		assert_true(units > 0);
		assert_int_equal(differ, 0);
		assert_true(fast * 10 >= units * 9); /* the fast walk handles nearly all */
		size_t addrs;
		dwi_compare_lookups(d, &units, &addrs, &differ);
		printf("%s: %zu units indexed lazily and whole, %zu addresses, %zu chains differ\n", files[i], units, addrs,
		       differ);
		assert_true(addrs > 0);
		assert_int_equal(differ, 0);
		dwi_compare_lines(d, &units, &fast, &differ);
		printf("%s: %zu line tables, %zu read directly, %zu lookups differ\n", files[i], units, fast, differ);
		assert_int_equal(differ, 0);
		assert_true(fast * 10 >= units * 9);
		dwi_close(d);
		elfv_close(v);
	}
}

int main(int argc, char **argv)
{
	nfiles = argc - 1;
	files = argv + 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_walks_agree),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
