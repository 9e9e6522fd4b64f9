/* SPDX-License-Identifier: MIT */
/* A cache directory with a size cap (the DWARF cache's files). */
#ifndef UW_BASE_CACHE_H
#define UW_BASE_CACHE_H

#include <stdbool.h>
#include <stdint.h>

/* A cache directory with a size cap: before `bytes` are written to path, the cache files beside
 * it (names ending in one of suffixes, NULL-terminated) are summed and the least recently used
 * (oldest mtime; a use touches it) removed until the new file fits. @return true when it fits
 * (cap 0: no cap), false when it alone is larger than the cap. */
bool base_cache_admit(const char *path, uint64_t bytes, uint64_t cap, const char *const *suffixes);
/* The kinds of files in the cache directory (NULL-terminated), all under its one cap: the DWARF
 * cache's images and line rows (lib/symbolize/dwarf_cache.c), the kernel unwinder's tables
 * (lib/kernel/kunw_cache.c); the "1" files are older layouts, removed first as no longer read. */
extern const char *const base_cache_files[];
/* Marks a cache file used now (its mtime). */
void base_cache_touch(int fd);

#endif
