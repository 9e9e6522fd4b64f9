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
/* Marks a cache file used now (its mtime). */
void base_cache_touch(int fd);

#endif
