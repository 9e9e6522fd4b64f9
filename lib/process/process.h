/* SPDX-License-Identifier: MIT */
/*
 * The process tracker and the module cache, and the session that owns them.
 *
 * Modules are keyed by build-id (else path + device + inode) and shared by every process that
 * maps them. A module is only a name until a pc hits it; then its ELF file is opened and
 * verified, and its unwind table and symbols are built on first use.
 */
#ifndef UW_PROCESS_H
#define UW_PROCESS_H

#include <pthread.h>

#include <stdio.h>

#include "base/base.h"
#include "elf/elfview.h"
#include "cfi/cfi.h"
#include "symbolize/dwarf_inline.h"
#include "symbolize/symtab.h"
#include "unwind/unwind.h"

/* PERF_RECORD_MISC_CPUMODE of a record taken in the kernel */
#define PROC_CPUMODE_KERNEL 1u

struct uw_module {
	const char *path;       /* interned, as recorded */
	const char *name;       /* basename */
	char build_id[2 * ELFV_MAX_BUILD_ID + 1];
	uint64_t key;
	uint32_t maj, min;
	uint64_t ino;
	uint32_t refs;          /* mappings referring to it */
	uint8_t state;          /* enum uw_module_state: the last opening's outcome (atomic stores) */
	bool special;           /* [vdso], [heap], //anon, ...: never opened as a file */
	bool opened;            /* its files are open, or could not be (atomic: published last;
	                         * cleared when an idle module lets go of them: module_unload) */
	bool cfi_done, syms_done; /* (cfi_done atomic: published once code is built) */
	struct elfv *elf;       /* the object file */
	struct elfv *dbg;       /* separate debug file, or NULL */
	struct elfv *mini;      /* MiniDebugInfo (.gnu_debugdata), or NULL */
	struct elfv *alt;       /* dwz supplementary file of its DWARF (.gnu_debugaltlink), or NULL */
	const char *opened_path;
	const char *dbg_path;
	struct cfi_table cfi;
	struct cfi_table sframe; /* compiled from .sframe (or PT_GNU_SFRAME), when there is one */
	struct unw_code code;
	struct symtab syms;
	struct base_map symcache; /* rel pc -> struct sym * (or a sentinel for none) */
	struct dwi *dwi;        /* DWARF for inline chains and lines, opened on first use */
	struct elfv *dwp_elf;   /* its split DWARF's package (.dwp), found when first needed */
	struct dwp *dwp;
	struct uw_session *session; /* for the package finder */
	bool dwi_tried;
	bool fetch_tried;       /* debuginfod asked for its debug file */
	struct base_map inlcache; /* rel pc -> struct inline_ent * */
	bool hit;               /* a frame landed in it (its build-id goes in what is written) */
	uint64_t steps[UW_METHOD_MAX]; /* unwinding steps from its pcs, by method (relaxed atomics) */
	bool key_by_path;       /* its identity is path, device and inode (no build-id) */
	struct uw_module *next_same_key; /* the session's chain of modules whose keys hash alike */
	bool jit;               /* a perf-PID.map: symbols from the map file, addresses absolute */
	bool jitdump;           /* one code load of a jitdump: shown as perf inject --jit's ELF file */
	bool idle;              /* live: no mapping refers to it; on the session's idle list */
	/* live: a process that maps it and where, to open the file it really maps */
	int32_t live_pid;
	uint64_t live_start, live_end;
};

struct map {
	uint64_t start, end, pgoff;
	struct uw_module *mod;
	uint64_t bias;          /* rel = pc - bias; valid when bias_known (both set by the first
	                         * unwinding that needs them, any thread: atomics, bias first) */
	bool bias_known;
	bool exec;
};

struct proc {
	int32_t pid;
	struct uw_module *jit;  /* /tmp/perf-PID.map, opened when a pc first needs it */
	bool jit_tried;
	struct jitdump *jd;     /* jit-PID.dump, read when the recording shows its mmap */
	bool jd_tried;
	int maps_fd;            /* live: /proc/PID/maps, for PROCMAP_QUERY (0: not opened, -1: none) */
	uint64_t missed[16];    /* live: pages recently asked about in vain */
	unsigned nmissed;
	uint32_t last_map;      /* index of the mapping the last lookup hit (a hint; relaxed
	                         * atomics: unwinding threads share it) */
	bool exited;
	uint64_t exit_time;
	uint64_t start_time;    /* its FORK or exec in the recording (recording time) */
	bool start_known;       /* else it ran before the recording's first event of it */
	struct base_vec maps;   /* struct map, sorted by start, disjoint */
	const char *comm;       /* interned */
};

struct thread {
	int32_t tid, pid;
	const char *comm;       /* interned */
	bool exited;
	uint64_t exit_time;
};

/* A kernel symbol table read from one file: a kallsyms text, searched in place, or a vmlinux's
 * ELF symbols (kallsyms.c). */
struct ktab {
	struct ktab *next;
	const char *path;          /* interned */
	bool vmlinux;
	uint64_t dev, ino, size;   /* the file's identity (0 for /proc files) */
	int64_t mtime_ns;
	uint64_t side_cap;
	/* under the session's lock: read on a helper thread (running), joined once (ready) */
	bool started, running, ready;
	pthread_t th;
	/* what was read: written by the reader, read by others once it is joined */
	int err;
	uint64_t text;             /* _text in the file (0: not found) */
	struct ksym *ksyms;        /* kallsyms: what is not searched in place, sorted */
	size_t nksyms;
	char *buf;                 /* the file's text; ksym names point into it */
	size_t kcore_len;          /* its first kcore_len bytes: the image's symbols, sorted, searched in place */
	size_t map_len;            /* when non-zero, buf is a mapping of this size */
	struct elfv *elf;          /* vmlinux: the file, its symbols, its build-id */
	struct symtab syms;
	char build_id[2 * ELFV_MAX_BUILD_ID + 1];
};

/* One recording's kernel (public: struct uw_kernel): what the recording says of it and the
 * symbols chosen for it. Made with its tracker, on the session's list; kept after the tracker
 * when handed out (samples carry it), else freed with it. Fields under the session's lock. */
struct uw_kernel {
	struct uw_kernel *next;
	struct uw_session *s;
	char build_id[2 * ELFV_MAX_BUILD_ID + 1]; /* "" unknown */
	char release[65];          /* uname -r of the recording's machine (HEADER_OSRELEASE), "" unknown */
	uint64_t text;             /* _text of the recorded kernel (its MMAP's pgoff), 0 unknown */
	bool running;              /* a live tracker's: the running kernel */
	const char *kallsyms, *vmlinux; /* files given for it (interned), or NULL */
	bool given_bad;            /* a file given could not be used: no symbols unless another is */
	bool kept;                 /* handed out: outlives its tracker */
	bool prefetch;             /* read its symbols ahead once it is known (uw_tracker_load_*) */
	bool decided;              /* tab and delta chosen (gen: the session's kallsyms_gen then) */
	unsigned gen;
	struct ktab *tab;          /* NULL: no symbols ([unknown]) */
	uint64_t delta;            /* recorded kernel's _text minus the file's */
};

struct ksym {
	uint64_t addr;
	const char *name;   /* into the kallsyms text (not terminated) until first used */
	uint32_t len;
	bool interned;      /* name is a NUL-terminated interned copy */
};

/* Inline chains looked up on a helper thread ahead of their use (uw_symbolize_inline_ahead).
 * Jobs run in order; the helper reads only the module's DWARF handle (opened by the calling
 * thread first) and keeps the names and entries it makes in its own strings and arena. */
struct inl_job {
	struct uw_module *m;
	uint64_t pc;
	const void *res;        /* struct inline_ent (session.c) when done; NULL: out of memory */
};

struct inl_worker {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t work, done_cv;
	bool stop;
	struct inl_job *jobs;
	size_t njobs, cap, taken, done;
	struct base_intern strings;
	struct base_arena arena;
	struct uw_session *s;    /* (its counters of what ran out only) */
};

struct uw_session {
	pthread_mutex_t mu;        /* shared state: see proc_lock */
	struct base_log log;
	struct uw_session_opts opts;
	char *debug_dirs, *buildid_dir, *sysroot;
	char *search_path;         /* ':'-separated search directories, or NULL */
	struct search_index *search; /* their files by name, made when first needed (search.c) */
	bool search_failed;
	char *dwarf_cache;       /* NULL: none */
	struct base_intern strings;
	struct base_map modules;   /* key -> struct uw_module * */
	struct debuginfod_client *dbgd; /* created on the first fetch */
	struct dbgd_api *dbgd_api; /* libdebuginfod, loaded then (module.c) */
	bool evict_idle;           /* a live tracker: modules no mapping refers to are unloaded in time */
	struct base_vec idle_mods; /* then: modules no mapping refers to, still loaded, oldest first */
	bool dbgd_tried;
	struct base_arena inl_arena; /* inline chains of every module */
	struct inl_worker *inlw;   /* started by the first lookup ahead */
	bool inlw_failed;          /* could not start one: lookups stay on the calling thread */
	/* kernel symbols (kallsyms.c): tables read from files, shared by every recording's kernel
	 * and kept until the session ends; each tracker's kernel (struct uw_kernel) */
	struct ktab *ktabs;
	struct uw_kernel *kernels;
	struct uw_kernel *first_kernel; /* uw_symbolize_kernel's: the first tracker's */
	const char *kallsyms_default; /* uw_session_load_kallsyms's file (interned), or NULL */
	unsigned kallsyms_gen;     /* changes of it (kernels without a file of their own choose again) */
	uint64_t run_text;         /* the running kernel's _text (0: hidden), read once */
	bool run_text_tried;
	uint64_t cfi_serial;       /* the last unwind table's identity in lookup caches */
	/* what ran out or changed under the session (uw_session_stats; atomics, any thread) */
	struct {
		uint64_t no_fd, nomem, shrunk, dbgd_capped, dbgd_timeout;
	} res;
};

/* One recording's (or live session's) processes and threads, and what the recording says about
 * itself (public: struct uw_tracker, tracker.c). */
struct uw_tracker {
	struct uw_session *s;
	struct uw_tracker_opts o;
	/* Threads: events change the processes, threads and mappings under the write lock, taken
	 * by the thread that feeds the tracker (tracker_wrlock: the event calls, a reader's records);
	 * unwinding and lookups read them under the read lock, any number of threads at once. What
	 * they change while reading is a hint (last_proc, proc.last_map: relaxed atomics), a value
	 * computed alike by all (map.bias), a lookup cache taken for the call (tracker_cache_take),
	 * or JIT symbols read when first needed (under jit_mu). A live tracker's mapping missed
	 * while reading is asked of the kernel under the write lock, and the walk redone. The
	 * feeding thread reads without the lock (no other thread writes). */
	pthread_rwlock_t rw;
	pthread_mutex_t jit_mu;
	struct base_map procs;     /* pid -> struct proc * */
	struct proc *last_proc;    /* the one proc_get found last (freed: NULL; relaxed atomics) */
	struct base_map threads;   /* tid -> struct thread * */
	struct base_map buildids;  /* hash(path) -> interned build-id hex (from the recording) */
	uint64_t since_sweep;
	struct uw_kernel *kernel;  /* the recording's kernel (kallsyms.c) */
	bool clock_monotonic;      /* the recording's times are CLOCK_MONOTONIC (perf record -k 1) */
	/* the recording's times in wall-clock time: wall ns = time + wall_offset (perf record -k's
	 * CLOCK_DATA, or the file's mtime at its last sample; live: the clocks now) */
	int64_t wall_offset;
	bool wall_known;
	/* live: told of each mapping found on demand (the recorder writes an MMAP2 for it) */
	void (*on_new_map)(void *ctx, int32_t pid, uint64_t start, uint64_t len, uint64_t pgoff, uint32_t maj,
	                   uint32_t min, uint64_t ino, const char *path, const uint8_t *bid, size_t blen, uint64_t time);
	void *on_new_map_ctx;
	struct uw_tracker_stats st;
	/* lookup caches of this tracker's unwinding (see cfi.h), one per thread unwinding at once:
	 * the first in a slot taken by atomic exchange, more on a list under cache_mu */
	struct cfi_cache *cfi_cache;
	pthread_mutex_t cache_mu;
	struct base_vec spare_caches; /* struct cfi_cache * */
};

/* The write lock (events) and the read lock (unwinding, lookups) of the tracker. */
void tracker_wrlock(struct uw_tracker *t);
void tracker_rdlock(struct uw_tracker *t);
void tracker_unlock(struct uw_tracker *t);
/* A lookup cache for the calling thread's unwinding (NULL without memory: none), given back
 * after. */
struct cfi_cache *tracker_cache_take(struct uw_tracker *t);
void tracker_cache_give(struct uw_tracker *t, struct cfi_cache *c);

/* ---- modules (module.c) */
/* The module of that identity (build-id hex, "" when unknown: then path, device and inode),
 * made when new. NULL without memory. */
struct uw_module *proc_module_get(struct uw_session *s, const char *path, size_t pathlen, const char *hex,
                                  uint32_t maj, uint32_t min, uint64_t ino);
/* A mapping starts or stops referring to it (an unreferenced one may be unloaded, evict_idle). */
void proc_module_ref(struct uw_session *s, struct uw_module *m);
void proc_module_unref(struct uw_session *s, struct uw_module *m);
/* A frame landed in it (any thread: the first frame in it marks it; its build-id goes in what is
 * written). */
static inline void proc_module_hit(struct uw_module *m)
{
	if (!__atomic_load_n(&m->hit, __ATOMIC_RELAXED))
		__atomic_store_n(&m->hit, true, __ATOMIC_RELAXED);
}
/* ---- the session's shared state (session.c): its lock, its strings */
void proc_lock(struct uw_session *s);
/* A file not opened or work given up because a resource ran out (err: -EMFILE, -ENFILE,
 * -ENOMEM...; what: the file or the work): counted for uw_session_stats and said (the first of
 * each kind as a warning). */
void proc_resource_fail(struct uw_session *s, int err, const char *what);
/* A file that was shorter when read than when it was opened: counted and said, once per view. */
void proc_file_shrunk(struct uw_session *s, struct elfv *v, const char *path);
void proc_unlock(struct uw_session *s);
/* Interned in the session's strings (alive with the session); NULL without memory. */
const char *proc_intern(struct uw_session *s, const char *str, size_t len);
/* A live tracker exists: modules no mapping refers to are freed in time. */
void proc_session_live(struct uw_session *s);
/* Opens the module's files if that was not tried yet (any thread: once). @return true when usable. */
bool proc_module_open(struct uw_session *s, struct uw_module *m);
/* Says a file of the module that could not be read whole (proc_file_shrunk), once per file. */
void proc_module_said_reads(struct uw_session *s, struct uw_module *m);
/* A module whose state is set without opening files (JIT code): published. Under the lock. */
void proc_module_set_opened(struct uw_module *m, enum uw_module_state state);
/* Has the module been opened (or tried)? */
bool proc_module_is_opened(const struct uw_module *m);
/* The module's separate debug file from debuginfod when it has none and no DWARF of its own
 * (first call only; the module must be open). */
void proc_module_fetch_debug(struct uw_session *s, struct uw_module *m);
/* The dwz supplementary file named by v's .gnu_debugaltlink (v: the module's file with DWARF),
 * found by build-id in the debug roots, by its path, or through debuginfod; NULL if none.
 * Kept in m->alt. */
struct elfv *proc_module_altfile(struct uw_session *s, struct uw_module *m, struct elfv *v, const char *vpath);
/* The DWARF package of a module's split units (dwi's package finder; ctx is the module): next
 * to the module or its debug file as NAME.dwp, or under the debug roots; NULL when none. */
struct dwp *proc_module_package(void *ctx);
/* A split unit's .dwo (dwi's opener; ctx is the module): by its name, beside the module's
 * files, in its compilation directory; a view the caller owns, or NULL. */
struct elfv *proc_module_dwo(void *ctx, const char *name, const char *comp_dir);
/* perf-PID.map text into a symbol table (fuzzed), sorted by start (stable: of entries at one
 * address the last written wins); at most max_entries lines (-UW_ELIMIT). */
int jitmap_parse(const char *text, size_t len, struct symtab *t, size_t max_entries);
/* The side-file cap (uw_session_opts.max_side_file_bytes, default SIDE_FILE_MAX). */
#define SIDE_FILE_MAX ((uint64_t)2 << 30)
/* The cap on one debuginfod download (uw_session_opts.max_debuginfod_bytes). */
#define DEBUGINFOD_MAX_BYTES ((uint64_t)1 << 30)
uint64_t proc_side_cap(const struct uw_session *s);
/* jitdump (jitdump.c) */
struct jitdump;
/* Is this the path of a jitdump file ("jit-PID.dump")? */
bool jitdump_is_path(const char *path, size_t len);
/* Parses a jitdump image (bounds-checked; fuzzed). */
int jitdump_parse(struct uw_session *s, const uint8_t *p, size_t size, struct jitdump **out);
void jitdump_free(struct jitdump *jd);
/* The recording shows process pid mapping its jitdump: read it (once). */
int proc_jitdump_mmap(struct uw_tracker *t, int32_t pid, const char *path, size_t len);
/* Where perf inject --jit puts a load's code in the ELF file it writes for it (after the ELF and
 * program headers, 16-aligned): frame addresses are shown relative to that file, as perf does. */
#define JITDUMP_TEXT_OFFSET 0x80
/* The module of the JIT code load naming pc at time in p, or NULL. */
struct uw_module *proc_jitdump_find(struct uw_tracker *t, struct proc *p, uint64_t pc, uint64_t time);
/* The running kernel's build-id (hex), from /sys/kernel/notes. */
bool running_kernel_build_id(char *hex);
/* A tracker's kernel (kallsyms.c): made with it (running: a live tracker's), dropped with it
 * unless handed out; kept (handed out) by uw_tracker_kernel. */
struct uw_kernel *proc_kernel_new(struct uw_session *s, bool running);
void proc_kernel_drop(struct uw_session *s, struct uw_kernel *k);
struct uw_kernel *proc_kernel_keep(struct uw_kernel *k);
/* What the recording says of its kernel: its build-id, _text (the kernel MMAP's pgoff), and the
 * release it ran (HEADER_OSRELEASE; called by the reader). The first of each is kept. */
void proc_kernel_note_build_id(struct uw_tracker *t, const char *hex);
void proc_kernel_note_text(struct uw_tracker *t, uint64_t text);
void tracker_note_kernel_release(struct uw_tracker *t, const char *release);
/* Recording: a module no mapping refers to any more is kept on an idle list; beyond
 * IDLE_MODULES_MAX the oldest let go of their files, tables and symbols (module_unload), so a
 * system-wide recorder's memory follows the programs that run, not all that ever ran. The
 * handle itself (sizeof(struct uw_module), 1.3 KiB, and its interned path) stays for the
 * session's life, one per distinct file: frames kept by a profiler can be named later, their
 * files opened again. */
#define IDLE_MODULES_MAX 64
void proc_module_idle(struct uw_session *s, struct uw_module *m);
void proc_module_busy(struct uw_session *s, struct uw_module *m);
/* Ends the session's debuginfod client. */
void proc_debuginfod_end(struct uw_session *s);
/* Unwind data, built on first use (NULL if none). */
const struct unw_code *proc_module_code(struct uw_session *s, struct uw_module *m);
const struct sym *proc_module_symbol(struct uw_session *s, struct uw_module *m, uint64_t rel);
/* The symbol at rel_pc: its name in the symbol table (system) and as shown (demangled unless the
 * session says not); NULLs without one. Takes the session's lock. */
void proc_symbol_names(struct uw_session *s, struct uw_module *m, uint64_t rel_pc, const char **sys,
                       const char **shown);
void proc_module_free(struct uw_module *m);
/* The helper thread of inline lookups, ended (symbolize.c); kernel symbols and kernels freed
 * (kallsyms.c). */
void proc_inline_end(struct uw_session *s);
void proc_kallsyms_end(struct uw_session *s);
/* Waits for the inline lookups pending on the helper thread (before a module is freed). */
void proc_inline_idle(struct uw_session *s);
/* Lookups asked of the helper so far; whether the first n of them are done (no waiting). */
size_t proc_inline_asked(struct uw_session *s);
bool proc_inline_done(struct uw_session *s, size_t n);
/* The JIT symbol map of a process (/tmp/perf-PID.map under the sysroot), or NULL. */
struct uw_module *proc_jit_module(struct uw_tracker *t, struct proc *p);
/* Records a build-id the recording gives for a path (HEADER_BUILD_ID, PERF_RECORD_HEADER_BUILD_ID). */
void proc_note_build_id(struct uw_tracker *t, const char *path, const uint8_t *bid, size_t len);
void proc_note_build_id_hex(struct uw_tracker *t, const char *path, const char *hex);

/* ---- search directories (search.c) */
/* The paths in the search directories of files named like name's basename, one at a time:
 * the first with after NULL, the next after the one given; NULL at the end. */
const char *proc_search_next(struct uw_session *s, const char *name, const char *after);
void proc_search_free(struct uw_session *s);

/* ---- tracker (tracker.c) */
/* Live: fn is told of each mapping the tracker finds on demand (a recorder writes it out). */
typedef void (*tracker_map_fn)(void *ctx, int32_t pid, uint64_t start, uint64_t len, uint64_t pgoff, uint32_t maj,
                               uint32_t min, uint64_t ino, const char *path, const uint8_t *bid, size_t blen,
                               uint64_t time);
void tracker_on_new_map(struct uw_tracker *t, tracker_map_fn fn, void *ctx);
struct proc *proc_get(struct uw_tracker *t, int32_t pid, bool create);
/* The process a sample names. A live tracker that has not heard of it (it ran before the
 * events began, or their records were lost) makes it on first sight, so that its mappings are
 * asked of the kernel as pcs need them; one already gone from /proc is made as exited at time
 * (forgotten after the grace period). NULL for a process unknown to a tracker not live. */
struct proc *tracker_sample_proc(struct uw_tracker *t, int32_t pid, uint64_t time);
/* uw_unwind_sample for the library's own callers (in and res of this version), with the
 * memory-read hook: stack bytes past in->stack_size pulled through `more` (NULL: none). */
int tracker_unwind(struct uw_tracker *t, const struct uw_sample_regs *in, struct unw_stack_more *more,
                   struct uw_frame *frames, unsigned cap, struct uw_unwind_result *res);
/* A process forgotten: its mappings let go of their modules. */
void proc_free(struct uw_tracker *t, struct proc *p);
/* Live: the mapping holding pc, asked of the kernel (procmaps.c) and added to p; the
 * tracker's on_new_map is told. @return whether one was found. */
bool proc_ask_kernel(struct uw_tracker *t, struct proc *p, uint64_t pc, uint64_t time);
struct thread *proc_thread(struct uw_tracker *t, int32_t pid, int32_t tid, bool create);
int proc_mmap(struct uw_tracker *t, int32_t pid, uint64_t addr, uint64_t len, uint64_t pgoff,
              uint32_t prot, struct uw_module *m);
/* A mapping event as perf records it (MMAP and MMAP2): the kernel's map noted, a jitdump read,
 * a module found or made by path and build-id (the recording's table supplies a missing one),
 * then mapped. len/path as the record has them (path need not be terminated). */
int tracker_map_event(struct uw_tracker *t, int32_t pid, uint32_t cpumode, uint64_t addr, uint64_t len,
                      uint64_t pgoff, uint32_t prot, uint32_t maj, uint32_t min, uint64_t ino, const uint8_t *bid,
                      size_t blen, const char *path, size_t pathlen);
int proc_fork(struct uw_tracker *t, int32_t pid, int32_t ppid, int32_t tid, int32_t ptid, uint64_t time);
int proc_comm(struct uw_tracker *t, int32_t pid, int32_t tid, const char *comm, size_t len, bool exec, uint64_t time);
void proc_exit(struct uw_tracker *t, int32_t pid, int32_t tid, uint64_t time);
/* Frees processes that exited more than the grace period before `now`. */
void proc_sweep(struct uw_tracker *t, uint64_t now);
/* The name a sample's thread goes by (its COMM, its process's, else ":TID"); interned. */
const char *tracker_comm(struct uw_tracker *t, uint32_t pid, uint32_t tid);
/* The build-id the recording gives for a path (interned hex), or NULL. */
const char *tracker_build_id(const struct uw_tracker *t, const char *path, size_t len);
const struct map *proc_find_map(struct proc *p, uint64_t addr);
/* One line of /proc/PID/maps, parsed in place (the path's newline is cut; "//anon" when the
 * mapping has no name, as perf names it). @return false when the line is malformed. */
struct proc_maps_line {
	uint64_t start, end, pgoff, ino;
	uint32_t maj, min;
	bool read, write, exec;
	const char *path;
};
bool proc_maps_parse(char *line, struct proc_maps_line *out);
/* pc -> mapping, module and bias (unwinder callback; ctx is struct proc_find_ctx) */
struct proc_find_ctx {
	struct uw_tracker *t;
	struct proc *p;
	uint64_t time;          /* the sample's (JIT code is named as it was then); UINT64_MAX: now */
	/* true: the caller holds the read lock; a live tracker's pc in no mapping is not asked of
	 * the kernel then but kept in miss_pc (the first one), for the caller to ask
	 * (tracker_resolve_miss) and walk again. false: the feeding thread, which asks at once. */
	bool locked;
	uint64_t miss_pc;
};
bool proc_find_pc(void *ctx, uint64_t pc, struct unw_pc_info *out);
/* Under the read lock: the process pid of a sample (tracker_sample_proc: made under the write
 * lock when a live tracker meets it first; the read lock is held again on return). */
struct proc *tracker_sample_proc_rd(struct uw_tracker *t, int32_t pid, uint64_t time);
/* Under the read lock, with fc->miss_pc set: asks the kernel for it under the write lock (the
 * read lock is held again on return; fc->p found again). @return true when a mapping was
 * found (walk again). */
bool tracker_resolve_miss(struct proc_find_ctx *fc, int32_t pid);
/* The frame at ip of a callchain (or a sample's only ip): its module and addresses. */
void tracker_frame_at(struct proc_find_ctx *fc, uint64_t ip, uint8_t method, struct uw_frame *f);

#endif
