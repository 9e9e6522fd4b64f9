/* SPDX-License-Identifier: MIT */
/* libFuzzer target: perf-PID.map text into the symbol table (sorted), then lookups. */
#include <stdint.h>
#include <stdlib.h>

#include "symbolize/symbolize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct symtab t = { 0 };
	if (jit_map_parse((const char *)data, size, &t, (size_t)1 << 24) == 0) {
		for (size_t i = 1; i < t.n; i++)
			if (t.syms[i - 1].start > t.syms[i].start)
				abort(); /* not sorted */
		for (uint64_t a = 0; a < 64; a++)
			symtab_find(&t, a * 0x100);
	}
	symtab_free(&t);
	return 0;
}
