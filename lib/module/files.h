/* SPDX-License-Identifier: MIT */
/*
 * How the module layer finds and opens a module's files, split by source (internal to
 * lib/module):
 *   debugfile.c   opening a file checked against a build-id; debug files; dwz; split DWARF
 *   vdso.c        the [vdso] image
 *   debuginfod.c  fetching from debuginfod servers
 *   minidebug.c   MiniDebugInfo (.gnu_debugdata)
 *   search.c      the search directories' index
 */
#ifndef UW_MODULE_FILES_H
#define UW_MODULE_FILES_H

#include "module/module.h"

/* Files at paths a recording or a process names (the mapped path, a file next to it) may have
 * been replaced by a link since: those are opened without following one (MODULE_UNTRUSTED); the
 * debug roots, perf's build-id cache (links by design) and /proc's magic links are followed. */
#define MODULE_UNTRUSTED BASE_OPEN_NOFOLLOW

/* Opens path (base_open_file flags) as ELF, and keeps it only when its build-id is want_bid
 * (when given; *mismatch is set when not). *why: the error when it could not be opened. */
bool module_try_open(struct uw_session *s, const char *path, unsigned flags, const char *want_bid,
                     struct elfv **out, bool *mismatch, int *why);
/* The same, path relative to dirfd (with BASE_OPEN_IN_ROOT: inside it as a root). */
bool module_try_open_at(struct uw_session *s, int dirfd, const char *path, unsigned flags, const char *want_bid,
                        struct elfv **out, bool *mismatch, int *why);
/* ... a path of the session's own (debug roots, the build-id cache): links followed */
bool module_try_open_trusted(struct uw_session *s, const char *path, const char *want_bid, struct elfv **out,
                             bool *mismatch);
/* The module's separate debug file into m->dbg (when there is one). */
void module_find_debug(struct uw_session *s, struct uw_module *m);
/* A file of build-id bid (hex) from debuginfod (its debug file, or the executable; path: the
 * module's, for what is said): a path to free, or NULL. Any thread. */
char *module_fetch(struct uw_session *s, const char *path, const char *bid, bool debuginfo);
/* [vdso]: opened into m->elf. */
bool module_open_vdso(struct uw_session *s, struct uw_module *m);
/* The paths in the search directories of files named like name's basename, one at a time:
 * the first with after NULL, the next after the one given; NULL at the end. Any thread. */
const char *module_search_next(struct uw_session *s, const char *name, const char *after);

#endif
