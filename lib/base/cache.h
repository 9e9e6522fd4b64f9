/* SPDX-License-Identifier: MIT */
/* A cache directory with a size cap (the DWARF cache's files, the kernel unwinder's tables). */
#ifndef UW_BASE_CACHE_H
#define UW_BASE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A cache directory with a size cap: before `bytes` are written to path, room is made for them.
 * The directory is not looked at on every write: the process keeps an estimate of what it holds
 * (a scan at its first write there, then what it wrote since), and only when the estimate says
 * the new file would cross the cap are the cache files beside it (names ending in one of
 * suffixes, NULL-terminated, and temporaries left by a writer that died) summed again and the
 * least recently used (oldest mtime; a use touches it) removed, down to 7/8 of the cap so the
 * next scan is many writes away. @return true when it fits (cap 0: no cap), false when it alone
 * is larger than the cap. */
bool base_cache_admit(const char *path, uint64_t bytes, uint64_t cap, const char *const *suffixes);
/* The kinds of files in the cache directory (NULL-terminated), all under its one cap: the DWARF
 * cache's images and line rows (lib/symbolize/dwarf_cache.c), the kernel unwinder's tables
 * (lib/kernel/kunw_cache.c); the "1" files are older layouts, removed first as no longer read. */
extern const char *const base_cache_files[];
/* Marks a cache file used now (its mtime). */
void base_cache_touch(int fd);

/* Whether the cache file open at fd may be believed: a regular file owned by the user this
 * process runs as (its effective uid) that neither its group nor others may write. Anyone who
 * can write an entry can make it say anything its checks recompute (their hashes are no
 * secrets), so an entry of anyone else's is never read. */
bool base_cache_entry_ok(int fd);

/* The cache directory dir made ready to use: its missing components created (0700), and dir
 * itself checked, opened without following a link: a directory of this user's (effective uid)
 * that neither group nor others may write. @return 0, or -errno with why (a sentence, for a log
 * line) written: -ELOOP a symbolic link, -EPERM another user's or writable by others,
 * -ENOTDIR not a directory, or why it could not be made. */
int base_cache_dir_ready(const char *dir, char *why, size_t whylen);

/* Forgets what the process estimated of every cache directory (tests: the next write scans). */
void base_cache_forget(void);

#endif
