/* SPDX-License-Identifier: MIT */
/*
 * The tracker (public: struct uw_tracker): one recording's (or live session's) processes,
 * threads and their mappings, what the recording says of itself (build-ids by path, its kernel,
 * its clock), and uw_unwind_sample. Modules come from the session's cache (lib/module) and are
 * named by lib/symbolize; nothing here is shared between trackers.
 */
#ifndef UW_TRACKER_H
#define UW_TRACKER_H

#include "base/base.h"
#include "module/module.h"
#include "session/session.h"
#include "symbolize/symbolize.h"
#include "unwind/unwind.h"

/* PERF_RECORD_MISC_CPUMODE of a record taken in the kernel */
#define TRACKER_CPUMODE_KERNEL 1u

struct tracker_map {
	uint64_t start, end, pgoff;
	struct uw_module *mod;
	uint64_t bias;          /* rel = pc - bias; valid when bias_known (both set by the first
	                         * unwinding that needs them, any thread: atomics, bias first) */
	bool bias_known;
	bool exec;
};

struct tracker_proc {
	int32_t pid;
	struct uw_module *jit;  /* /tmp/perf-PID.map, opened when a pc first needs it */
	bool jit_tried;
	struct jitdump *jd;     /* jit-PID.dump, read when the recording shows its mmap */
	bool jd_tried;
	int maps_fd;            /* live: /proc/PID/maps, for PROCMAP_QUERY (0: not opened, -1: none) */
	int32_t maps_tid;       /* ... else /proc/PID/task/TID/maps of this thread (0: none): the
	                         * leader's is empty once it exited (tracker_vma_query) */
	uint64_t maps_dev, maps_ino; /* ... its identity (the program may close it: profiling itself) */
	uint64_t missed[16];    /* live: pages recently asked about in vain */
	unsigned nmissed;
	uint32_t last_map;      /* index of the mapping the last lookup hit (a hint; relaxed
	                         * atomics: unwinding threads share it) */
	bool exited;
	uint64_t exit_time;
	uint64_t start_time;    /* its FORK or exec in the recording (recording time) */
	bool start_known;       /* else it ran before the recording's first event of it */
	struct base_vec maps;   /* struct tracker_map, sorted by start, disjoint */
	struct maps_share *share; /* the list is shared with processes forked from it or it from
	                         * (copied at its first change: maps_own); NULL: its own */
	const char *comm;       /* interned */
};

/* How many processes hold one mapping list (fork shares it; the modules are referenced once). */
struct maps_share {
	uint32_t refs;
};

struct tracker_thread {
	int32_t tid, pid;
	const char *comm;       /* interned */
	bool exited;
	uint64_t exit_time;
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
	 * JIT symbols read when first needed (under jit_mu), or the modules hit (under hit_mu). A
	 * live tracker's mapping missed while reading is asked of the kernel under the write lock,
	 * and the walk redone. The feeding thread reads without the lock (no other thread writes). */
	pthread_rwlock_t rw;
	pthread_mutex_t jit_mu;
	struct base_map procs;     /* pid -> struct tracker_proc * */
	struct tracker_proc *last_proc; /* the one tracker_proc_get found last (freed: NULL; relaxed atomics) */
	struct base_map threads;   /* tid -> struct tracker_thread * */
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
	/* modules a frame landed in (bit m->id): their build-ids go in what is written. Read by
	 * any thread (atomics); bits set and the array grown under hit_mu (the arrays it outgrew
	 * kept until the tracker goes: a thread may still read one) */
	uint64_t *hit;
	size_t nhit;               /* words */
	pthread_mutex_t hit_mu;
	struct base_vec old_hits;  /* uint64_t * */
};

/* The write lock (events) and the read lock (unwinding, lookups) of the tracker. */
void tracker_wrlock(struct uw_tracker *t);
void tracker_rdlock(struct uw_tracker *t);
void tracker_unlock(struct uw_tracker *t);
/* A lookup cache for the calling thread's unwinding (NULL without memory: none), given back
 * after. */
struct cfi_cache *tracker_cache_take(struct uw_tracker *t);
void tracker_cache_give(struct uw_tracker *t, struct cfi_cache *c);

/* A frame landed in m (its build-id goes in what this recording writes): a bit read, set once
 * under hit_mu. Any thread. */
void tracker_hit_set(struct uw_tracker *t, uint32_t id);
static inline void tracker_module_hit(struct uw_tracker *t, const struct uw_module *m)
{
	uint32_t w = m->id >> 6;
	size_t n = __atomic_load_n(&t->nhit, __ATOMIC_ACQUIRE);
	const uint64_t *h = __atomic_load_n(&t->hit, __ATOMIC_ACQUIRE);
	if (UW_UNLIKELY(w >= n || !(__atomic_load_n(&h[w], __ATOMIC_RELAXED) >> (m->id & 63) & 1)))
		tracker_hit_set(t, m->id);
}
/* Did a frame of this recording land in m? */
bool tracker_module_was_hit(const struct uw_tracker *t, const struct uw_module *m);
/* The recording shows process pid mapping its jitdump: read it (once). @return 0 or -ENOMEM. */
int tracker_jitdump_mmap(struct uw_tracker *t, int32_t pid, const char *path, size_t len);
/* The JIT symbol map of a process (/tmp/perf-PID.map), or NULL. */
struct uw_module *tracker_jit_module(struct uw_tracker *t, struct tracker_proc *p);
/* Records a build-id the recording gives for a path (HEADER_BUILD_ID, PERF_RECORD_HEADER_BUILD_ID). */
void tracker_note_build_id(struct uw_tracker *t, const char *path, const uint8_t *bid, size_t len);
void tracker_note_build_id_hex(struct uw_tracker *t, const char *path, const char *hex);
/* The release the recording's kernel ran (HEADER_OSRELEASE; called by the reader). */
void tracker_note_kernel_release(struct uw_tracker *t, const char *release);

/* ---- tracker (tracker.c) */
/* Live: fn is told of each mapping the tracker finds on demand (a recorder writes it out). */
typedef void (*tracker_map_fn)(void *ctx, int32_t pid, uint64_t start, uint64_t len, uint64_t pgoff, uint32_t maj,
                               uint32_t min, uint64_t ino, const char *path, const uint8_t *bid, size_t blen,
                               uint64_t time);
void tracker_on_new_map(struct uw_tracker *t, tracker_map_fn fn, void *ctx);
struct tracker_proc *tracker_proc_get(struct uw_tracker *t, int32_t pid, bool create);
/* The process a sample names. A live tracker that has not heard of it (it ran before the
 * events began, or their records were lost) makes it on first sight, so that its mappings are
 * asked of the kernel as pcs need them; one already gone from /proc is made as exited at time
 * (forgotten after the grace period). NULL for a process unknown to a tracker not live. */
struct tracker_proc *tracker_sample_proc(struct uw_tracker *t, int32_t pid, uint64_t time);
/* uw_unwind_sample for the thread that feeds the tracker (a uw_reader; in and res of this
 * version), with the memory-read hook: stack bytes past in->stack_size pulled through `more`
 * (NULL: none). Without the read lock unless the tracker is live. */
int tracker_unwind(struct uw_tracker *t, const struct uw_sample_regs *in, struct unw_stack_more *more,
                   struct uw_frame *frames, unsigned cap, struct uw_unwind_result *res);
/* A process forgotten: its mappings let go of their modules. */
void tracker_proc_free(struct uw_tracker *t, struct tracker_proc *p);
/* Live: the mapping holding pc, asked of the kernel (procmaps.c) and added to p; the
 * tracker's on_new_map is told. @return whether one was found. */
bool tracker_ask_kernel(struct uw_tracker *t, struct tracker_proc *p, uint64_t pc, uint64_t time);
struct tracker_thread *tracker_thread_get(struct uw_tracker *t, int32_t pid, int32_t tid, bool create);
int tracker_mmap(struct uw_tracker *t, int32_t pid, uint64_t addr, uint64_t len, uint64_t pgoff,
              uint32_t prot, struct uw_module *m);
/* A mapping event as perf records it (MMAP and MMAP2): the kernel's map noted, a jitdump read,
 * a module found or made by path and build-id (the recording's table supplies a missing one),
 * else path, device, inode and inode generation (0: none), then mapped. len/path as the record
 * has them (path need not be terminated). */
int tracker_map_event(struct uw_tracker *t, int32_t pid, uint32_t cpumode, uint64_t addr, uint64_t len,
                      uint64_t pgoff, uint32_t prot, uint32_t maj, uint32_t min, uint64_t ino, uint64_t ino_gen, const uint8_t *bid,
                      size_t blen, const char *path, size_t pathlen);
int tracker_fork(struct uw_tracker *t, int32_t pid, int32_t ppid, int32_t tid, int32_t ptid, uint64_t time);
int tracker_set_comm(struct uw_tracker *t, int32_t pid, int32_t tid, const char *comm, size_t len, bool exec, uint64_t time);
void tracker_exit(struct uw_tracker *t, int32_t pid, int32_t tid, uint64_t time);
/* Frees processes that exited more than the grace period before `now`. */
void tracker_sweep(struct uw_tracker *t, uint64_t now);
/* The name a sample's thread goes by (its COMM, its process's, else ":TID"); interned. */
const char *tracker_comm(struct uw_tracker *t, uint32_t pid, uint32_t tid);
/* The build-id the recording gives for a path (interned hex), or NULL. */
const char *tracker_build_id(const struct uw_tracker *t, const char *path, size_t len);
const struct tracker_map *tracker_find_map(struct tracker_proc *p, uint64_t addr);
/* ---- live VMA sources (procmaps.c) */
/* One line of /proc/PID/maps, parsed in place (the path's newline is cut; "//anon" when the
 * mapping has no name, as perf names it). @return false when the line is malformed. */
struct tracker_maps_line {
	uint64_t start, end, pgoff, ino;
	uint32_t maj, min;
	bool read, write, exec;
	const char *path;
};
bool tracker_maps_parse(char *line, struct tracker_maps_line *out);
/* The executable mapping of process pid that holds pc, as the kernel says now: PROCMAP_QUERY
 * on /proc/PID/maps (*maps_fd: opened on first use, 0 before, -1 when it cannot be), else a scan
 * of its text. @return TRACKER_VMA_QUERIED or TRACKER_VMA_SCANNED with *v, or 0: none. */
struct tracker_vma {
	uint64_t start, end, pgoff, ino;
	uint32_t maj, min;
	size_t blen;
	uint8_t bid[ELFV_MAX_BUILD_ID];
	char name[4096];              /* its path ("//anon": none) */
};
enum { TRACKER_VMA_QUERIED = 1, TRACKER_VMA_SCANNED };
/* (p's /proc/PID/maps, opened the first time and kept: p->maps_fd) */
int tracker_vma_query(struct tracker_proc *p, uint64_t pc, struct tracker_vma *v);
/* pc -> mapping, module and bias (unwinder callback; ctx is struct tracker_find_ctx) */
struct tracker_find_ctx {
	struct uw_tracker *t;
	struct tracker_proc *p;
	uint64_t time;          /* the sample's (JIT code is named as it was then); UINT64_MAX: now */
	/* true: the caller holds the read lock; a live tracker's pc in no mapping is not asked of
	 * the kernel then but kept in miss_pc (the first one), for the caller to ask
	 * (tracker_resolve_miss) and walk again. false: the feeding thread, which asks at once. */
	bool locked;
	uint64_t miss_pc;
};
bool tracker_find_pc(void *ctx, uint64_t pc, struct unw_pc_info *out);
/* Under the read lock: the process pid of a sample (tracker_sample_proc: made under the write
 * lock when a live tracker meets it first; the read lock is held again on return). */
struct tracker_proc *tracker_sample_proc_rd(struct uw_tracker *t, int32_t pid, uint64_t time);
/* Under the read lock, with fc->miss_pc set: asks the kernel for it under the write lock (the
 * read lock is held again on return; fc->p found again). @return true when a mapping was
 * found (walk again). */
bool tracker_resolve_miss(struct tracker_find_ctx *fc, int32_t pid);
/* The frame at ip of a callchain (or a sample's only ip): its module and addresses. */
void tracker_frame_at(struct tracker_find_ctx *fc, uint64_t ip, uint8_t method, struct uw_frame *f);

#endif
