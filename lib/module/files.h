/* SPDX-License-Identifier: MIT */
/*
 * How the module cache finds and opens a module's files, split by source:
 *   debugfile.c   opening a file checked against a build-id; debug files; dwz; DWARF packages
 *   vdso.c        the [vdso] image
 *   debuginfod.c  fetching from debuginfod servers
 *   minidebug.c   MiniDebugInfo (.gnu_debugdata)
 *   jitmap.c      perf-PID.map symbol files
 */
#ifndef UW_MODULE_FILES_H
#define UW_MODULE_FILES_H

#include "process/process.h"

/* Files at paths a recording or a process names (the mapped path, a file next to it) may have
 * been replaced by a link since: those are opened without following one (MOD_UNTRUSTED); the
 * debug roots, perf's build-id cache (links by design) and /proc's magic links are followed. */
#define MOD_UNTRUSTED BASE_OPEN_NOFOLLOW

/* Opens path (base_open_file flags) as ELF, and keeps it only when its build-id is want_bid
 * (when given; *mismatch is set when not). *why: the error when it could not be opened. */
bool mod_try_open(struct uw_session *s, const char *path, unsigned flags, const char *want_bid, struct elfv **out,
                  bool *mismatch, int *why);
/* The same, path relative to dirfd (with BASE_OPEN_IN_ROOT: inside it as a root). */
bool mod_try_open_at(struct uw_session *s, int dirfd, const char *path, unsigned flags, const char *want_bid,
                     struct elfv **out, bool *mismatch, int *why);
bool mod_try_open_flags(struct uw_session *s, const char *path, unsigned flags, const char *want_bid,
                        struct elfv **out, bool *mismatch);
/* ... a path of the session's own (debug roots, the build-id cache): links followed */
bool mod_try_open_trusted(struct uw_session *s, const char *path, const char *want_bid, struct elfv **out,
                          bool *mismatch);
/* The module's separate debug file into m->dbg (when there is one). */
void mod_find_debug(struct uw_session *s, struct uw_module *m);
/* A file for the module from debuginfod (its debug file, or the executable): a path to free,
 * or NULL. */
char *mod_fetch(struct uw_session *s, const struct uw_module *m, bool debuginfo);
/* [vdso]: opened into m->elf. */
bool mod_open_vdso(struct uw_session *s, struct uw_module *m);
/* The module's MiniDebugInfo as an ELF view, or NULL. */
struct elfv *mod_open_minidebug(struct uw_session *s, struct uw_module *m);

#endif
