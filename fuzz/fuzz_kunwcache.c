/* SPDX-License-Identifier: MIT */
/* libFuzzer target: a kernel unwinding table kept between recordings (BUILD-ID-KEY.kunw1) read
 * back for this program's own file: whatever the file holds, it is refused or taken whole, and
 * the program's search over what is taken (kunw_table_find, step for step the BPF program's)
 * stays in bounds at every address asked; so does the search over the input's bytes taken as a
 * table's words (what a damaged entry with a right hash, or a wrong table, would hold).
 * Nothing is written back. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel/kunw.h"

static struct elfv *self_elf;

/* Every address the table's header covers (a step of 7, up to 64 KiB), its edges, and a few the
 * input names. */
static void search(const struct kunw_table *t, const uint8_t *data, size_t size)
{
	struct kunw_rule r;
	uint32_t lo, hi;
	uint64_t base = (uint32_t)t->words[0], span = t->words[0] >> 32;
	for (uint64_t a = base; a < base + span && a < base + 65536; a += 7)
		kunw_table_find(t, a, &r, &lo, &hi);
	kunw_table_find(t, base + span, &r, &lo, &hi);
	kunw_table_find(t, base ? base - 1 : 0, &r, &lo, &hi);
	for (size_t i = 0; i + 4 <= size && i < 256; i += 4) {
		uint32_t a;
		memcpy(&a, data + i, 4);
		kunw_table_find(t, a, &r, NULL, NULL);
	}
}
static char path[64];

/* With UW_KUNWCACHE_SEED=PATH, first writes this program's own table there (fuzz/run's seed:
 * its identity and hashes are right, so it is taken). */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (elfv_open("/proc/self/exe", 0, &self_elf))
		abort();
	snprintf(path, sizeof(path), "/tmp/fuzz-kunwcache.%d", (int)getpid());
	const char *seed = getenv("UW_KUNWCACHE_SEED");
	if (seed) {
		struct unw_tables c;
		struct kunw_table t;
		if (kunw_code_build(&c, self_elf, NULL))
			abort();
		int e = kunw_table_build(&t, &c.code);
		unw_tables_free(&c);
		if (e || kunw_cache_write(seed, self_elf, NULL, &t, 0))
			abort();
		kunw_table_free(&t);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* (a file of its own: the reader opens a path without following a link, and a memfd's
	 * /proc/self/fd path is one) */
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return 0;
	ssize_t w = write(fd, data, size);
	close(fd);
	if (w != (ssize_t)size)
		return 0;
	struct kunw_table t;
	if (kunw_cache_read(path, self_elf, NULL, (uint64_t)1 << 26, &t) == 0) {
		search(&t, data, size);
		kunw_table_free(&t);
	}
	unlink(path);
	/* the bytes themselves as a table's whole lines */
	size_t nwords = size / 64 * KUNW_LINE_WORDS;
	if (nwords && nwords <= (1u << 20)) {
		struct kunw_table raw = { 0 };
		raw.words = malloc(nwords * 8);
		if (raw.words) {
			memcpy(raw.words, data, nwords * 8);
			raw.nwords = (uint32_t)nwords;
			search(&raw, data, size);
			free(raw.words);
		}
	}
	return 0;
}
