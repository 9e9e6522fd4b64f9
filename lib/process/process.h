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
#include "session/session.h"
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
	struct unw_tables tabs;  /* its unwind tables (built on first use: cfi_done) */
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
	uint64_t bias;          /* rel = pc - bias; valid when bias_known */
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
	uint32_t last_map;      /* index of the mapping the last lookup hit (a hint) */
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
	struct ksym_state *ks;
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
	struct base_strings strings;
	struct base_arena arena;
	struct uw_session *s;    /* (its counters of what ran out only) */
};

/* The module cache's state on the session (part SESSION_MODULES; module.c). */
struct module_cache {
	struct uw_session *s;
	pthread_mutex_t mu;        /* shared state: see proc_lock */
	struct base_map modules;   /* key -> struct uw_module * */
	struct search_index *search; /* the search directories' files by name, made when first needed (search.c) */
	bool search_failed;
	struct debuginfod_client *dbgd; /* created on the first fetch */
	struct dbgd_api *dbgd_api; /* libdebuginfod, loaded then (debuginfod.c) */
	bool dbgd_tried;
	bool evict_idle;           /* a live tracker: modules no mapping refers to are unloaded in time */
	struct base_vec idle_mods; /* then: modules no mapping refers to, still loaded, oldest first */
	uint64_t cfi_serial;       /* the last unwind table's identity in lookup caches */
};
/* The session's module cache (made on first use); NULL without memory. */
struct module_cache *module_cache(struct uw_session *s);

/* The symbolizer's state on the session (part SESSION_SYMBOLS; symbolize.c). */
struct sym_state {
	struct uw_session *s;
	struct base_arena inl_arena; /* inline chains of every module */
	struct inl_worker *inlw;   /* started by the first lookup ahead */
	bool inlw_failed;          /* could not start one: lookups stay on the calling thread */
};
/* The session's (made on first use); NULL without memory. */
struct sym_state *sym_state(struct uw_session *s);

/* Kernel symbols on the session (part SESSION_KERNEL_SYMBOLS; kallsyms.c): tables read from
 * files, shared by every recording's kernel and kept until the session ends; each tracker's
 * kernel (struct uw_kernel). */
struct ksym_state {
	struct uw_session *s;
	pthread_mutex_t mu;        /* all of it, and the kernels' fields */
	struct ktab *ktabs;
	struct uw_kernel *kernels;
	struct uw_kernel *first_kernel; /* uw_symbolize_kernel's: the first tracker's */
	const char *kallsyms_default; /* uw_session_load_kallsyms's file (interned), or NULL */
	unsigned kallsyms_gen;     /* changes of it (kernels without a file of their own choose again) */
	uint64_t run_text;         /* the running kernel's _text (0: hidden), read once */
	bool run_text_tried;
};

/* One recording's (or live session's) processes and threads, and what the recording says about
 * itself (public: struct uw_tracker, tracker.c). */
struct uw_tracker {
	struct uw_session *s;
	struct uw_tracker_opts o;
	struct base_map procs;     /* pid -> struct proc * */
	struct proc *last_proc;    /* the one proc_get found last (freed: NULL) */
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
	struct uw_frame *frames;   /* uw_unwind_sample_each's (max_frames) */
	struct cfi_cache *cfi_cache; /* lookups of this tracker's unwinding (see cfi.h) */
};

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
/* ---- the module cache's lock (module.c) */
void proc_lock(struct uw_session *s);
void proc_unlock(struct uw_session *s);
/* A live tracker exists: modules no mapping refers to are freed in time. */
void proc_session_live(struct uw_session *s);
/* Opens the module's files if that was not tried yet (any thread: once). @return true when usable. */
bool proc_module_open(struct uw_session *s, struct uw_module *m);
/* Says a file of the module that could not be read whole (session_file_shrunk), once per file. */
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
bool ksym_running_build_id(char *hex);
/* A tracker's kernel (kallsyms.c): made with it (running: a live tracker's), dropped with it
 * unless handed out; kept (handed out) by uw_tracker_kernel. NULL without memory. */
struct uw_kernel *ksym_kernel_new(struct uw_session *s, bool running);
void ksym_kernel_drop(struct uw_kernel *k);
struct uw_kernel *ksym_kernel_keep(struct uw_kernel *k);
/* What the recording says of its kernel: its build-id, _text (the kernel MMAP's pgoff), and the
 * release it ran (HEADER_OSRELEASE). The first of each is kept. */
void ksym_kernel_note_build_id(struct uw_kernel *k, const char *hex);
void ksym_kernel_note_text(struct uw_kernel *k, uint64_t text);
void ksym_kernel_note_release(struct uw_kernel *k, const char *release);
/* A file given for the kernel's symbols (uw_tracker_load_kallsyms, uw_tracker_load_vmlinux;
 * path NULL: none, the default choice). */
int ksym_kernel_load(struct uw_kernel *k, const char *path, bool vmlinux);
/* The release the recording's kernel ran (HEADER_OSRELEASE; called by the reader). */
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
void proc_debuginfod_end(struct module_cache *c);
/* Unwind data, built on first use (NULL if none). */
const struct unw_code *proc_module_code(struct uw_session *s, struct uw_module *m);
const struct sym *proc_module_symbol(struct uw_session *s, struct uw_module *m, uint64_t rel);
/* The symbol at rel_pc: its name in the symbol table (system) and as shown (demangled unless the
 * session says not); NULLs without one. Takes the session's lock. */
void proc_symbol_names(struct uw_session *s, struct uw_module *m, uint64_t rel_pc, const char **sys,
                       const char **shown);
void proc_module_free(struct uw_module *m);
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
void proc_search_free(struct module_cache *c);

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
};
bool proc_find_pc(void *ctx, uint64_t pc, struct unw_pc_info *out);
/* The frame at ip of a callchain (or a sample's only ip): its module and addresses. */
void tracker_frame_at(struct proc_find_ctx *fc, uint64_t ip, uint8_t method, struct uw_frame *f);

#endif
