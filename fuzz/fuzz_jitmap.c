/* SPDX-License-Identifier: MIT */
/* libFuzzer target: perf-PID.map text into the symbol table, then lookups. */
#include <stdint.h>
#include <stdio.h>

#include "process/process.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	FILE *f = fmemopen((void *)data, size, "r");
	if (!f)
		return 0;
	struct symtab t = { 0 };
	if (jitmap_parse(f, &t, (size_t)1 << 24) == 0)
		for (uint64_t a = 0; a < 64; a++)
			symtab_find(&t, a * 0x100);
	fclose(f);
	symtab_free(&t);
	return 0;
}
