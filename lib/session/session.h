/* SPDX-License-Identifier: MIT */
/*
 * The session (public: struct uw_session): its options and limits, its log, its strings, what
 * ran out under it, and what the layers above keep on it. Prefix: session_.
 *
 * Shared by every thread and every recording: nothing here belongs to one recording (that is the
 * tracker's, lib/process). The layers above keep their state in parts (the module cache, the
 * symbolizer's), attached on first use and freed by the destructor each layer gave, the top
 * layer's first, when the session ends: the session calls nothing above it.
 */
#ifndef UW_SESSION_H
#define UW_SESSION_H

#include <pthread.h>

#include "base/base.h"
#include "elf/elfview.h"

/* The parts, bottom layer first (freed in the reverse order). */
enum session_part {
	SESSION_DEBUGINFOD, /* lib/module: libdebuginfod and its clients */
	SESSION_SEARCH,   /* lib/module: the search directories' index */
	SESSION_MODULES,  /* lib/module: the module cache */
	SESSION_SYMBOLS,  /* lib/symbolize: the inline helper thread */
	SESSION_KERNEL_SYMBOLS, /* lib/symbolize: kernel symbol tables and each recording's kernel */
	SESSION_PART__N
};

struct uw_session {
	struct base_log log;
	struct uw_session_opts opts; /* (its strings are not kept: the copies below are) */
	char *debug_dirs, *buildid_dir, *sysroot;
	char *search_path;         /* ':'-separated search directories, or NULL */
	char *dwarf_cache;         /* the cache directory as named (session_cache_dir); NULL: none */
	int cache_state;           /* 0 not checked yet, 1 usable, 2 refused (under mu) */
	struct base_strings strings; /* names handed out: alive with the session, any thread */
	pthread_mutex_t mu;        /* attaching parts */
	struct {
		void *data;        /* published last (release) */
		void (*free)(void *data);
	} parts[SESSION_PART__N];
	/* what ran out or changed under the session (uw_session_stats; atomics, any thread) */
	struct {
		uint64_t no_fd, nomem, shrunk, dbgd_capped, dbgd_timeout;
	} res;
};

/* A layer's part, or NULL before it is attached. Any thread. */
static inline void *session_part(const struct uw_session *s, enum session_part p)
{
	return __atomic_load_n(&s->parts[p].data, __ATOMIC_ACQUIRE);
}
/* Attaches data (made by the caller) as part p, freed with free_fn when the session ends.
 * @return the part: data, or the one another thread attached first (then data is freed now). */
void *session_part_attach(struct uw_session *s, enum session_part p, void *data, void (*free_fn)(void *data));

/* Interned in the session's strings (alive with the session); NULL without memory. Any thread. */
static inline const char *session_intern(struct uw_session *s, const char *str, size_t len)
{
	return base_strings_intern(&s->strings, str, len);
}

/* A file not opened or work given up because a resource ran out (err: -EMFILE, -ENFILE,
 * -ENOMEM...; what: the file or the work): counted for uw_session_stats and said (the first of
 * each kind as a warning). Any thread. */
void session_resource_fail(struct uw_session *s, int err, const char *what);
/* A file that was shorter when read than when it was opened: counted and said, once per view. */
void session_file_shrunk(struct uw_session *s, struct elfv *v, const char *path);

/* The cache directory (the DWARF cache's and the kernel unwinder's tables'), made and checked
 * on first use (base_cache_dir_ready: not a link, this user's, no one else's to write); NULL
 * when there is none, or when it was refused: then one warning says why, and the session goes
 * on without a cache. Any thread. */
const char *session_cache_dir(struct uw_session *s);

/* ---- limits */
/* The side-file cap (uw_session_opts.max_side_file_bytes, default SESSION_SIDE_FILE_MAX). */
#define SESSION_SIDE_FILE_MAX ((uint64_t)2 << 30)
uint64_t session_side_cap(const struct uw_session *s);
/* The decompression cap of views (uw_session_opts.max_inflate_bytes, default ELFV_MAX_INFLATE). */
uint64_t session_view_cap(const struct uw_session *s);
/* The cap on one debuginfod download (uw_session_opts.max_debuginfod_bytes, default this). */
#define SESSION_DEBUGINFOD_MAX_BYTES ((uint64_t)1 << 30)

#endif
