/* SPDX-License-Identifier: MIT */
/* libFuzzer target: ELF files with DWARF into the inline index (the fast DIE walk, our line
 * tables and range lists, libdw for the rest) at a spread of addresses. The file is also its
 * own DWARF package: seeds with skeleton units carry their package's sections (fuzz/run). */
#include <stdint.h>

#include "elf/elfview.h"
#include "symbolize/dwarf_inline.h"
#include "dwarf_compare.h"
#include "symbolize/dwp.h"

static struct dwp *package;

static struct dwp *find_package(void *ctx)
{
	return package = dwp_open(ctx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elfv *v = NULL;
	if (elfv_open_mem(data, size, &v))
		return 0;
	struct dwi *d = dwi_open(v, NULL, NULL, 0, NULL);
	package = NULL;
	dwi_set_package_finder(d, find_package, v);
	if (d) {
		struct base_strings strings;
		base_strings_init(&strings);
		struct dwi_frame f[DWI_MAX_DEPTH];
		for (uint64_t a = 0; a < 0x4000; a += 0x40)
			dwi_lookup(d, &strings, a, f, DWI_MAX_DEPTH, NULL);
		size_t u, fast, differ;
		dwi_compare_walks(d, &u, &fast, &differ);
		base_strings_free(&strings);
		dwi_close(d);
	}
	dwp_close(package);
	elfv_close(v);
	return 0;
}
