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
#include <stdlib.h>
#include <unistd.h>

#include "elf/elfview.h"
#include "symbolize/dwarf_inline.h"
#include "dwarf_compare.h"

static int nfiles;
static char **files;

static void test_walks_agree(void **state)
{
	(void)state;
	for (int i = 0; i < nfiles; i++) {
		struct elfv *v = NULL;
		assert_int_equal(elfv_open(files[i], 0, &v), 0);
		struct dwi *d = dwi_open(v, NULL, NULL, 0, NULL);
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
		size_t nodes;
		dwi_compare_names(d, &nodes, &fast, &differ);
		printf("%s: %zu names and call sites, %zu read directly, %zu differ\n", files[i], nodes, fast, differ);
		assert_int_equal(differ, 0);
		assert_true(fast * 10 >= nodes * 9);
		dwi_compare_unit_lines(d, &units, &fast, &differ);
		printf("%s: %zu units' line programs, %zu read directly, %zu differ\n", files[i], units, fast, differ);
		assert_int_equal(differ, 0);
		assert_true(fast * 10 >= units * 9);
		dwi_compare_lines(d, &units, &fast, &differ);
		printf("%s: %zu line tables, %zu read directly, %zu lookups differ\n", files[i], units, fast, differ);
		assert_int_equal(differ, 0);
		assert_true(fast * 10 >= units * 9);
		dwi_close(d);
		elfv_close(v);
	}
}

/* Line rows kept between runs: written, read back whole, and damaged copies (a flipped row, cut
 * short, another file) give the same tables, decoded again where needed. */
static void test_line_store(void **state)
{
	(void)state;
	char dir[] = "/tmp/uw-test-lines-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[256];
	snprintf(path, sizeof(path), "%s/store.lines1", dir);
	for (int i = 0; i < nfiles; i++) {
		struct elfv *v = NULL;
		assert_int_equal(elfv_open(files[i], 0, &v), 0);
		struct dwi *d = dwi_open(v, NULL, NULL, 0, NULL);
		assert_non_null(d);
		size_t units, differ, stored, taken, added;
		unlink(path);
		/* first: all decoded and added, then written */
		assert_int_equal(dwi_compare_stored_lines(d, path, &units, &differ, &stored, &taken, &added), 1);
		printf("%s: %zu line tables stored\n", files[i], added);
		assert_int_equal(differ, 0);
		assert_int_equal(stored, 0);
		assert_int_equal(taken, 0);
		assert_true(added > 0 && added <= units);
		size_t all = added;
		/* again: all taken, nothing written */
		assert_int_equal(dwi_compare_stored_lines(d, path, &units, &differ, &stored, &taken, &added), 0);
		assert_int_equal(differ, 0);
		assert_int_equal(stored, all);
		assert_int_equal(taken, all);
		assert_int_equal(added, 0);
		/* the last row's line changed: that unit is decoded again (and written again) */
		FILE *f = fopen(path, "r+b");
		assert_non_null(f);
		assert_int_equal(fseek(f, -1, SEEK_END), 0);
		int c = fgetc(f);
		assert_int_equal(fseek(f, -1, SEEK_END), 0);
		fputc(c ^ 0x40, f);
		fclose(f);
		assert_int_equal(dwi_compare_stored_lines(d, path, &units, &differ, &stored, &taken, &added), 1);
		assert_int_equal(differ, 0);
		assert_int_equal(taken, all - 1);
		assert_int_equal(added, 1);
		assert_int_equal(dwi_compare_stored_lines(d, path, &units, &differ, &stored, &taken, &added), 0);
		assert_int_equal(taken, all);
		/* cut short, then another file under its name: ignored, written again */
		assert_int_equal(truncate(path, 100), 0);
		assert_int_equal(dwi_compare_stored_lines(d, path, &units, &differ, &stored, &taken, &added), 1);
		assert_int_equal(differ, 0);
		assert_int_equal(stored, 0);
		assert_int_equal(added, all);
		f = fopen(path, "wb");
		assert_non_null(f);
		fputs("UWLINES1 and then not a store at all", f);
		fclose(f);
		assert_int_equal(dwi_compare_stored_lines(d, path, &units, &differ, &stored, &taken, &added), 1);
		assert_int_equal(differ, 0);
		assert_int_equal(stored, 0);
		dwi_close(d);
		elfv_close(v);
	}
	unlink(path);
	rmdir(dir);
}

int main(int argc, char **argv)
{
	nfiles = argc - 1;
	files = argv + 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_walks_agree),
		cmocka_unit_test(test_line_store),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
