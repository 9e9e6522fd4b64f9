/* SPDX-License-Identifier: MIT */
/*
 * The module cache (public: struct uw_module): one module per object file, keyed by build-id
 * (else path, device and inode), shared by every process and tracker of the session, its handle
 * alive as long as the session. A module is only a name until a pc hits it; then its files are
 * opened (live through the process that maps it, else by path, the build-id cache, the search
 * directories or debuginfod, always checked against the recorded build-id), and its unwind
 * tables are built on first use. Prefix: module_.
 *
 * Locks: the cache's (the map of modules, the idle list, the references of a live session) and
 * one per module (m->mu: opening its files and building what is made of them, each once, so a
 * debuginfod fetch of 30 s blocks only the threads that need that module). What the symbolizer
 * makes of a module's files is its own (m->ext), made under m->mu and let go through the hooks it
 * gives: the module layer calls nothing above it. Whoever reads what is loaded beyond the unwind
 * tables (symbols, DWARF) holds m->use for reading while it does (module_use), so a module is
 * unloaded only when no one does; unwinding needs no lock (a mapping referring to the module
 * keeps it loaded).
 */
#ifndef UW_MODULE_H
#define UW_MODULE_H

#include <pthread.h>

#include "base/base.h"
#include "elf/elfview.h"
#include "session/session.h"
#include "unwind/unwind.h"

/* What a layer above makes of a module's files (the symbolizer's symbols and DWARF), embedded in
 * its own struct: let go when the module unloads (its files are closed next; unload is called
 * with no module_use holder and m->mu held) and freed with the module. */
struct module_ext;
struct module_ext_ops {
	void (*unload)(struct module_ext *e);
	void (*free)(struct module_ext *e);
};
struct module_ext {
	const struct module_ext_ops *ops;
};

struct uw_module {
	/* identity: set when made, never changed (but build_id, see uw_module_build_id) */
	const char *path;       /* interned, as recorded */
	const char *name;       /* basename */
	char build_id[2 * ELFV_MAX_BUILD_ID + 1];
	uint64_t key;
	uint32_t maj, min;
	uint64_t ino;
	uint64_t ino_gen;       /* the inode's generation as recorded (MMAP2), 0: not known. Set
	                         * once (atomic), by the first record that gives one */
	bool key_by_path;       /* its identity is path, device and inode (no build-id) */
	bool special;           /* [vdso], [heap], //anon, ...: never opened as a file */
	bool jit;               /* JIT code (lib/symbolize): symbols from a perf map, addresses absolute */
	bool jitdump;           /* one code load of a jitdump: shown as perf inject --jit's ELF file */
	uint32_t id;            /* its number in the session (0, 1, ...): trackers' per-module bits */
	struct uw_module *next_same_key; /* the cache's chain of modules whose keys hash alike */
	/* lifetime (under the cache's lock in a live session; atomics otherwise) */
	uint32_t refs;          /* mappings referring to it */
	bool idle;              /* live: no mapping refers to it; on the idle list */
	/* its files: opened once under mu, published by opened (cleared when an idle module lets
	 * go of them: module_unload) */
	pthread_mutex_t mu;
	pthread_rwlock_t use;   /* module_use: read; unloading: write */
	uint8_t state;          /* enum uw_module_state: the last opening's outcome (atomic stores) */
	bool opened;            /* its files are open, or could not be (atomic: published last) */
	struct elfv *elf;       /* the object file */
	struct elfv *dbg;       /* separate debug file, or NULL */
	struct elfv *mini;      /* MiniDebugInfo (.gnu_debugdata), or NULL */
	struct elfv *alt;       /* dwz supplementary file of its DWARF (.gnu_debugaltlink), or NULL */
	const char *opened_path;
	const char *dbg_path;
	bool fetch_tried;       /* debuginfod asked for its debug file */
	/* live: a process that maps it and where, to open the file it really maps */
	int32_t live_pid;
	uint64_t live_start, live_end;
	bool live;              /* a live tracker saw it mapped (a file of this machine: its device
	                         * and inode must be the recorded ones), set once under mu */
	/* unwinding */
	bool cfi_done;          /* tabs built (atomic: published last) */
	struct unw_tables tabs;
	uint64_t steps[UW_METHOD_MAX]; /* unwinding steps from its pcs, by method (relaxed atomics) */
	/* the symbolizer's (atomic: published once, under mu) */
	struct module_ext *ext;
};

/* The cache's state on the session (part SESSION_MODULES). */
struct module_cache {
	struct uw_session *s;
	pthread_mutex_t mu;        /* modules, idle_mods, references while evict_idle */
	struct base_map modules;   /* key -> struct uw_module * (chains: next_same_key) */
	uint32_t nmodules;
	bool evict_idle;           /* a live tracker: modules no mapping refers to are unloaded in time */
	struct base_vec idle_mods; /* then: modules no mapping refers to, still loaded, oldest first */
	uint64_t cfi_serial;       /* the last unwind table's identity in lookup caches (atomic) */
};

/* ---- the cache (module.c) */
/* The session's module cache (made on first use); NULL without memory. */
struct module_cache *module_cache(struct uw_session *s);
/* The module of that identity (build-id hex, "" when unknown: then path, device and inode),
 * made when new. NULL without memory. Any thread. */
struct uw_module *module_get(struct uw_session *s, const char *path, size_t pathlen, const char *hex,
                             uint32_t maj, uint32_t min, uint64_t ino);
/* The same, with the inode's generation the record gives (MMAP2's ino_generation; 0: none): a
 * module known by path is another file when both generations are known and differ (an inode
 * number the filesystem gave again to a new file), and one without a generation yet takes it. */
struct uw_module *module_get_gen(struct uw_session *s, const char *path, size_t pathlen, const char *hex,
                                 uint32_t maj, uint32_t min, uint64_t ino, uint64_t ino_gen);
/* A mapping starts or stops referring to it (an unreferenced one may be unloaded: module_live). */
void module_ref(struct uw_session *s, struct uw_module *m);
void module_unref(struct uw_session *s, struct uw_module *m);
/* A live tracker exists: from now on a module no mapping refers to goes on an idle list; beyond
 * MODULE_IDLE_MAX the oldest let go of their files, tables, symbols and DWARF (module_unload),
 * so a system-wide recorder's memory follows the programs that run, not all that ever ran. The
 * handle itself (about 1.3 KiB, and its interned path) stays for the session's life, one per
 * distinct file: frames kept by a profiler can be named later, their files opened again. */
#define MODULE_IDLE_MAX 64
void module_live(struct uw_session *s);
/* Opened again while unreferenced (to name frames of processes gone): back on the idle list. */
void module_idle(struct uw_session *s, struct uw_module *m);

/* ---- what is loaded, for the layers above (module.c) */
/* Reading what is loaded beyond its unwind tables (symbols, DWARF, the ext): the module is not
 * unloaded meanwhile. Any thread; may nest in one thread (not around module_unref). */
static inline void module_use(struct uw_module *m)
{
	pthread_rwlock_rdlock(&m->use);
}
static inline void module_unuse(struct uw_module *m)
{
	pthread_rwlock_unlock(&m->use);
}
/* The ext (NULL: none yet). */
static inline struct module_ext *module_ext(const struct uw_module *m)
{
	return __atomic_load_n(&m->ext, __ATOMIC_ACQUIRE);
}
/* Sets it, under m->mu, when it has none. */
void module_ext_set(struct uw_module *m, struct module_ext *e);

/* ---- perf's build-id cache, written (bidcache.c) */
/* The bytes of a file (from src_fd, else mem) kept as DIR/NAME/HEX/LEAF with the link
 * DIR/.build-id/HE/X... -> ../../NAME/HEX, as perf record keeps them (NAME: an absolute path or
 * [special]; LEAF: elf, vdso or kallsyms); nothing done when the entry is there. @return 0,
 * -EINVAL for a name or build-id the cache cannot hold, -errno. */
int bidcache_store(const char *dir, const char *name, const char *hex, const char *leaf, int src_fd, const void *mem,
                   uint64_t size);
/* Whether DIR/.build-id/HE/X.../LEAF is there. */
bool bidcache_has(const char *dir, const char *hex, const char *leaf);
/* The module's file (the one its frames were read from, or the one at its path when its build-id
 * is the recorded one) kept in the session's build-id cache (buildid_dir). Any thread.
 * @return 0 (also when there is nothing to keep), -errno. */
int module_keep_in_cache(struct uw_session *s, struct uw_module *m);

/* ---- opening (open.c) */
/* Opens the module's files if that was not done yet (any thread: once; again after an unload).
 * @return true when usable. */
bool module_open(struct uw_session *s, struct uw_module *m);
/* Whether it has been opened (or tried). */
static inline bool module_is_opened(const struct uw_module *m)
{
	return __atomic_load_n(&m->opened, __ATOMIC_ACQUIRE);
}
/* A module whose state is set without opening files (JIT code): published. Under m->mu. */
void module_set_opened(struct uw_module *m, enum uw_module_state state);
/* Its unwind tables, built on first use (NULL if none: the files could not be opened). Any thread. */
const struct unw_code *module_code(struct uw_session *s, struct uw_module *m);
/* Says a file of the module that could not be read whole (session_file_shrunk), once per file.
 * Under m->mu. */
void module_said_reads(struct uw_session *s, struct uw_module *m);
/* Live: the process pid maps it at [start, end): its files are opened through that process
 * (/proc/PID/map_files, else its root) when they are first needed. The first such is kept. */
void module_note_live(struct uw_module *m, int32_t pid, uint64_t start, uint64_t end);

/* ---- its other files, for the symbolizer (debugfile.c, minidebug.c): under m->mu, open */
/* The separate debug file from debuginfod when it has none and no DWARF of its own (once). */
void module_fetch_debug(struct uw_session *s, struct uw_module *m);
/* Its MiniDebugInfo as an ELF view (the caller keeps it in m->mini), or NULL. */
struct elfv *module_open_minidebug(struct uw_session *s, struct uw_module *m);
/* The dwz supplementary file named by v's .gnu_debugaltlink (v: the module's file with DWARF,
 * at vpath), found by build-id in the debug roots, by its path, or through debuginfod; NULL if
 * none. Kept in m->alt. */
struct elfv *module_altfile(struct uw_session *s, struct uw_module *m, struct elfv *v, const char *vpath);
/* A split unit's .dwo: by its name (absolute: under the sysroot), beside the module's files, in
 * its compilation directory; a view the caller owns, or NULL. Any thread (the module loaded). */
struct elfv *module_dwo_open(struct uw_session *s, const struct uw_module *m, const char *name,
                             const char *comp_dir);
/* The places the DWARF package (.dwp) of its split units may be, one at a time: *i starts at 0.
 * @return false after the last. */
bool module_package_path(struct uw_session *s, const struct uw_module *m, unsigned *i, char *p, size_t cap);
/* Opens path as ELF, a path a recording or a file names (not through a link, never a FIFO or
 * device), checked against want_bid when given. NULL when it cannot be used (said as a
 * resource that ran out when that is why). */
struct elfv *module_open_named(struct uw_session *s, const char *path, const char *want_bid);

#endif
