/* SPDX-License-Identifier: MIT */
/* libFuzzer target: a file of line rows kept between runs (BUILD-ID-KEY.lines2) read back for a
 * small line program: whatever the file holds, the table is the program's or its rows are taken
 * only when they pass the checks; lookups stay in bounds. Nothing is written back. */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "fuzz_file.h"
#include "symbolize/dwarf_line.h"

/* A DWARF 4 line program: one file, rows at 0x1000, 0x1004, 0x1010, the end at 0x1020. */
static const uint8_t prog[] = {
	0, 0, 0, 0,                   /* unit_length, set below */
	4, 0,                         /* version */
	27, 0, 0, 0,                  /* header_length */
	1, 1, 1, (uint8_t)-5, 14, 13, /* min_inst, max_ops, default_is_stmt, line_base, line_range, opcode_base */
	0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1, /* standard opcode lengths */
	0,                            /* no include directories */
	'a', '.', 'c', 0, 0, 0, 0, 0, /* file 1: "a.c", dir 0, mtime 0, length 0; end of files */
	0, 9, 2, 0, 0x10, 0, 0, 0, 0, 0, 0, /* DW_LNE_set_address 0x1000 */
	1,                            /* copy */
	2, 4, 3, 2, 1,                /* advance_pc 4, advance_line 2, copy */
	2, 12, 3, 1, 1,               /* advance_pc 12, advance_line 1, copy */
	2, 16, 0, 1, 1,               /* advance_pc 16, end_sequence */
};

static uint8_t line[sizeof(prog)];
/* the file the rows are for (any: the same for the seed and every input) */
static const struct elfv_ident ident = { 1, 2, 3, 4, 5 };

/* With UW_LINESTORE_SEED=PATH, first writes the store of the program there (fuzz/run's seed:
 * its hashes are right, so the rows are taken). */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	uint32_t len = (uint32_t)(sizeof(prog) - 4);
	memcpy(line, prog, sizeof(prog));
	memcpy(line, &len, 4);
	const char *seed = getenv("UW_LINESTORE_SEED");
	if (seed) {
		struct dwl_sections sec = { .line = line, .nline = sizeof(line) };
		struct dwl_store *st = dwl_store_open(seed, &ident, 0);
		struct dwl_table *t = st ? dwl_build_stored(&sec, 0, "/src", st) : NULL;
		if (!t || dwl_store_save(st) != 1)
			abort();
		dwl_free(t);
		dwl_store_free(st);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	int fd = fuzz_file(data, size, path);
	if (fd < 0)
		return 0;
	struct dwl_store *st = dwl_store_open(path, &ident, 0);
	close(fd);
	if (!st)
		return 0;
	struct dwl_sections sec = { .line = line, .nline = sizeof(line) };
	struct dwl_table *t = dwl_build_stored(&sec, 0, "/src", st), *ref = dwl_build(&sec, 0, "/src");
	if (!t || !ref || !dwl_same(t, ref))
		abort(); /* a table that is not the program's */
	for (uint64_t a = 0xff0; a < 0x1030; a++) {
		uint32_t f, l;
		char buf[64];
		if (dwl_find(t, a, &f, &l))
			dwl_file(t, f, buf, sizeof(buf));
	}
	dwl_free(ref);
	dwl_free(t);
	dwl_store_free(st);
	return 0;
}
