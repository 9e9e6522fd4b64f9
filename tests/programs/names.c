/* SPDX-License-Identifier: MIT */
/*
 * Functions whose names tests/e2e/names.sh overwrites, in the built file's symbol table, with
 * hostile bytes of the same length (HTML, ';', line breaks, malformed UTF-8): every output of
 * `unwound report` must stay well formed whatever a recording's names are. Built without debug
 * info, so the symbol table is the only place the names are.
 */
#include <stdio.h>

#define FN(i) __attribute__((noinline)) int uw_hostile_##i##_xxxxxxxxxxx(int x) { return x * (i + 3) + 1; }
FN(0) FN(1) FN(2) FN(3) FN(4) FN(5) FN(6) FN(7)

int main(int argc, char **argv)
{
	(void)argv;
	int v = argc;
	v = uw_hostile_0_xxxxxxxxxxx(v) + uw_hostile_1_xxxxxxxxxxx(v) + uw_hostile_2_xxxxxxxxxxx(v) +
	    uw_hostile_3_xxxxxxxxxxx(v) + uw_hostile_4_xxxxxxxxxxx(v) + uw_hostile_5_xxxxxxxxxxx(v) +
	    uw_hostile_6_xxxxxxxxxxx(v) + uw_hostile_7_xxxxxxxxxxx(v);
	printf("%d\n", v);
	return 0;
}
