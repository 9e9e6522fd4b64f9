/* SPDX-License-Identifier: MIT */
/* libFuzzer target: ELF files with DWARF into the inline index (the fast DIE walk, our line
 * tables, libdw for the rest) at a spread of addresses. */
#include <stdint.h>

#include "elf/elfview.h"
#include "symbolize/dwarf_inline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elfv *v = NULL;
	if (elfv_open_mem(data, size, &v))
		return 0;
	struct dwi *d = dwi_open(v, NULL, NULL);
	if (d) {
		struct base_intern strings;
		base_intern_init(&strings);
		struct dwi_frame f[DWI_MAX_DEPTH];
		for (uint64_t a = 0; a < 0x4000; a += 0x40)
			dwi_lookup(d, &strings, a, f, DWI_MAX_DEPTH);
		size_t u, fast, differ;
		dwi_compare_walks(d, &u, &fast, &differ);
		base_intern_free(&strings);
		dwi_close(d);
	}
	elfv_close(v);
	return 0;
}
