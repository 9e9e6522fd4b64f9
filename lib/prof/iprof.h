/* SPDX-License-Identifier: MIT */
/*
 * In-process profiling (libunwound-prof.so), private to the library. It is built on the public
 * API only (include/unwound/unwound.h); nothing here reaches into libunwound's internals.
 *
 *   thread A ──timer──> SIGPROF ──> handler: registers + stack copy ──> ring of A ─┐
 *   thread B ──timer──> SIGPROF ──> handler: registers + stack copy ──> ring of B ─┼─> collector:
 *   ...                                                                          ─┘   unwind, add
 *
 * Files: prof_signal.c (the handler and the rings: the only code that runs in signal context),
 * prof_threads.c (the slot table, per-thread timers, /proc/self/task scans, the pthread_create
 * interposer), prof_collect.c (the collector thread), prof_maps.c (dlopen/dlclose: when the
 * tracker's mappings are forgotten), prof_dlclose.c (the dlclose interposer), prof.c (the public
 * calls, fork), prof_env.c (LD_PRELOAD mode: the environment, the file at exit). This header is
 * what they share (named apart from prof.c, whose calls only it uses: the files below prof.c
 * include it, prof.c calls them).
 */
#ifndef UW_PROF_IPROF_H
#define UW_PROF_IPROF_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <unwound/unwound.h>

#include "base/file.h" /* (base_fd_is, base_fd_identity: inline, nothing linked) */

/* The interposed functions, and what they call, may run before a sanitizer's runtime is
 * initialized (ThreadSanitizer's start installs its handlers with sigaction): never instrumented. */
#define IPROF_NO_SANITIZE __attribute__((no_sanitize("address", "thread", "undefined")))
/* The signal handler is not instrumented for ThreadSanitizer: it does not carry the acquire of
 * a handler (here of the slot's ring, published with release) into the handler's accesses, and
 * reports the ring's setup as racing with them. (Its deferral of signals to "safe points" also
 * moves samples.) The registry and the collector stay checked. */
#define IPROF_NO_TSAN __attribute__((no_sanitize("thread")))

/* perf's x86-64 register numbers (arch/x86/include/uapi/asm/perf_regs.h): the record keeps one
 * value per number, the collector passes those of uw_regs_mask(UW_ARCH_X86_64) */
#define IPROF_NREGS 24

/* A sample in a ring: this header, then stack_size bytes of stack from regs[SP] up, padded to 8. */
struct iprof_rec {
	uint32_t len;            /* the whole record, header included, a multiple of 8 */
	uint32_t kind;           /* IPROF_REC_* */
	uint32_t gen;            /* the mappings' generation when it was taken (prof_maps.c) */
	uint32_t overrun;        /* the timer's overrun: expiries since the last signal, less one */
	uint64_t time;           /* CLOCK_MONOTONIC, ns */
	uint64_t regs[IPROF_NREGS];
	uint32_t stack_size;
	uint8_t src;             /* IPROF_STACK_* */
	uint8_t cpumode;         /* 1: in a system call (the pc follows it), else 2 (user) */
	uint16_t reserved;
	char comm[16];           /* the thread's name then (PR_GET_NAME) */
};
#define IPROF_REC_PAD 1     /* the rest of the ring's space to its end is unused */
#define IPROF_REC_SAMPLE 2

#define IPROF_STACK_THREAD 1 /* within the thread's known stack */
#define IPROF_STACK_ALT 2    /* within the alternate signal stack it ran on */
#define IPROF_STACK_KERNEL 3 /* copied by process_vm_readv (bounds not known) */
#define IPROF_STACK_NONE 4   /* not copied */

/* One thread's single-producer (its handler), single-consumer (the collector) ring. */
struct iprof_ring {
	_Atomic uint64_t head;   /* bytes written, all time (the handler) */
	_Atomic uint64_t tail;   /* bytes consumed (the collector) */
	_Atomic uint32_t wake;   /* 1: the collector was woken and has not drained it since */
	uint32_t reserved;
	uint64_t size;           /* a power of two */
	uint64_t map_bytes;      /* what was mapped, this header included */
	uint8_t data[];
};

enum iprof_slot_state { SLOT_FREE = 0, SLOT_ACTIVE, SLOT_DEAD };

/*
 * A thread's slot. The table of slots is mapped once and never unmapped (a signal of a deleted
 * timer may still arrive: it must find memory, and a key that no longer matches). The handler
 * reads key, live, bounds and ring, and writes the counters; everything else is under the
 * registry's lock.
 */
struct iprof_slot {
	_Atomic uint64_t key;    /* the timer's sigev_value: IPROF_KEY(generation, index) */
	_Atomic uint32_t live;   /* 1: the handler may write to the ring */
	_Atomic uint32_t busy;   /* handlers inside (a count: see prof_signal.c) */
	_Atomic uintptr_t lo, hi;/* the thread's stack; hi 0: not known */
	struct iprof_ring *_Atomic ring;
	/* counters, written by the handler */
	_Atomic uint64_t n_samples, n_dropped, n_kernel_copy, n_no_copy, n_altstack, n_overruns;
	_Atomic uint64_t n_dropped_periods; /* the dropped samples' periods (1 + their overruns) */
	/* the registry's (lock) */
	timer_t timer;
	int32_t tid;
	uint8_t state;           /* enum iprof_slot_state */
	uint8_t has_timer;
	uint8_t own;             /* registered by the thread itself (exact bounds; its exit is seen) */
	uint8_t main;            /* the main thread */
	uint64_t start_ticks;    /* /proc/self/task/TID/stat's starttime (a reused tid is another thread) */
	/* the timer's periods on the thread's CPU clock (CPU-time mode), to count those it ran after
	 * its last signal (prof_threads.c): */
	uint64_t period_ns;
	uint64_t cpu_first;      /* the thread's CPU time at its first expiry at the latest; 0: not counted */
	uint64_t cpu_end;        /* ... when its timer was deleted; 0: not known (the thread was gone) */
	uint64_t tail_periods;   /* the periods between its last signal and cpu_end */
	char end_comm[16];       /* its name when its timer went ("": not read) */
	uint8_t tail_cause;      /* why no signal took those periods (enum uw_lost_cause) */
	/* the collector's */
	const char *comm;        /* interned (prof_collect.c) */
	uint64_t comm_read_ns;
	uint64_t last_sample_ns;
	uint64_t seen_samples;   /* n_samples when last looked at */
	uint64_t lost_added;     /* n_dropped, n_dropped_periods already in the profile (collector) */
	uint64_t lost_periods_added;
	/* the thread's last sample, held back until the next one comes or the slot ends: the
	 * periods its thread ran after it (tail_periods) are added to its weight */
	struct uw_sample pend;
	struct uw_frame *pend_frames;
	unsigned pend_cap;
	bool has_pend;
};

#define IPROF_KEY_MAGIC 0x5577ull
#define IPROF_KEY(gen, idx) ((IPROF_KEY_MAGIC << 48) | ((uint64_t)(uint32_t)(gen) << 16) | (uint64_t)(uint16_t)(idx))
#define IPROF_KEY_INDEX(k) ((unsigned)((k) & 0xffff))
#define IPROF_KEY_IS_OURS(k) (((k) >> 48) == IPROF_KEY_MAGIC)
#define IPROF_MAX_SLOTS 65536u

/* the slot table and what the handler needs, shared by every profiler of the process's life */
struct iprof_global {
	struct iprof_slot *_Atomic tab; /* IPROF_MAX_SLOTS slots, mapped at the first start */
	_Atomic uint32_t gen;          /* the mappings' generation (prof_maps.c) */
	_Atomic uint64_t foreign, stale;
	_Atomic uint32_t wake;         /* the collector's futex word: bumped and woken to wake it (no
	                                * descriptor: a program that closes every descriptor it did
	                                * not open, or reuses their numbers, cannot take it) */
	_Atomic int waking;            /* a collector runs: wake it */
	_Atomic uint32_t stack_bytes;  /* the copy's cap */
	_Atomic int pid;
	int signo;
	pthread_mutex_t lock;          /* the registry: slots' states, the running profiler */
	pthread_mutex_t work_lock;     /* held by the collector through a pass, and across fork (taken
	                                * before lock): a child is never forked while the collector
	                                * allocates or holds a lock of its own or of the library's */
	/* dlclose's wait for a collector's pass (prof_collect.c) */
	pthread_mutex_t sync_lock;
	pthread_cond_t sync_cond;
	uint64_t sync_req, sync_done;  /* under sync_lock */
	struct uw_prof *running;       /* under lock; also read with acquire by the interposers */
	/* the program's handler for each signal ours is installed for (what it had before, or what
	 * it asked for since: prof_signal.c); never freed (the handler may be reading one) */
	_Atomic(const struct sigaction *) prev[65];
	_Atomic uint8_t installed[65];
	bool forked;                   /* in a child of fork: nothing runs any more */
};
extern struct iprof_global iprof_g;

struct iprof_comm;

/* a mapping the kernel showed at a frame's pc in this pass (prof_maps.c) */
struct iprof_vma {
	uint64_t start, end, off, ino;
	uint32_t maj, min;
	const struct uw_module *mod; /* the frame's module */
	bool ok;                     /* the module's file */
};
#define IPROF_NVMAS 64

struct uw_prof {
	struct uw_prof_opts o;
	char *output;
	struct uw_session *s;
	bool own_session;
	struct uw_tracker *t;
	struct uw_profile *profile;
	struct uw_module *self;         /* this library: its frames (the thread trampoline) left out */
	uint64_t regs_mask;
	uint64_t period_ns;
	int pid;
	int signo;
	unsigned nslots;                /* max_threads */
	unsigned hwm;                   /* slots [0, hwm) may be in use (registry lock) */
	uint64_t ring_bytes;
	/* the collector */
	pthread_t collector;
	bool collector_running;
	int collector_tid;
	_Atomic int stopping;
	_Atomic int alone;              /* the program's threads are all gone, its main thread's
	                                 * pthread_exit waiting for the library's (iprof_scan_threads) */
	void *task_dir;                 /* /proc/self/task (a DIR, the collector's) */
	uint64_t task_dev, task_ino;    /* ... its identity (the program may close its descriptor) */
	unsigned *snap;                 /* the collector's list of slots in a pass */
	uint8_t *snap_dead;
	uint64_t main_stack_ns;         /* when the main thread's mapping was last read */
	uint32_t tracker_gen;
	unsigned long long dl_adds, dl_subs;
	/* the kernel's mappings at the frames' pcs (prof_maps.c: the collector's) */
	struct iprof_vma vmas[IPROF_NVMAS];
	unsigned nvmas;
	int maps_fd;                    /* /proc/self/maps (0: not opened, -1: cannot be) */
	uint64_t maps_dev, maps_ino;    /* ... its identity */
	bool maps_scan;                 /* no PROCMAP_QUERY: its text is read */
	uint64_t maps_changed;          /* samples unwound again: their mapping had changed */
	uint64_t next_scan_ns, next_check_ns;
	struct iprof_comm *comms;
	struct uw_frame *frames;
	/* internal threads (the collector's helpers): never sampled (registry lock) */
	int internal[16];
	unsigned ninternal;
	/* totals of slots freed, and the collector's (registry lock for the first group) */
	uint64_t f_samples, f_dropped, f_kernel_copy, f_no_copy, f_altstack, f_overruns, f_tail;
	uint64_t threads, threads_refused;
	_Atomic uint64_t unwound, root, map_resets, collector_cpu_ns;
	_Atomic uint64_t stops[UW_STOP_MAX];
	_Atomic uint64_t lost_periods[UW_LOST__COUNT]; /* the profile's lost samples' periods, by cause */
	_Atomic int handler_replaced;
	uint64_t foreign0, stale0;      /* the process's counts when it started */
	uint64_t start_wall_ns, start_mono_ns, stop_mono_ns;
	bool stopped;
	int stop_err;
	int forked_off;                 /* a child's copy: nothing to stop or free */
};

/* prof_signal.c */
void iprof_handler(int sig, siginfo_t *si, void *uc);
struct iprof_ring *iprof_ring_new(uint64_t size);
void iprof_ring_free(struct iprof_ring *r);
/* Calls fn on each record in the ring for which keep(rec) is true, in order, and consumes
 * them; stops at the first for which it is false. @return records consumed. */
typedef bool (*iprof_rec_fn)(void *ctx, const struct iprof_rec *rec);
unsigned iprof_ring_drain(struct iprof_ring *r, iprof_rec_fn fn, void *ctx);
int iprof_install_handler(int signo);
void iprof_handler_check(struct uw_prof *p);

/* prof_threads.c */
int iprof_slots_init(void);
int iprof_register_self(uint64_t *key);
int iprof_main_stack(uintptr_t *lo, uintptr_t *hi);
void iprof_unregister_self(uint64_t key);
void iprof_scan_threads(struct uw_prof *p, uint64_t now_ns);
void iprof_check_threads(struct uw_prof *p, uint64_t now_ns);
void iprof_release_slot(struct uw_prof *p, struct iprof_slot *sl);
void iprof_quiesce_slot(struct iprof_slot *sl);
/* end: why it goes (UW_LOST_THREAD_ENDED or UW_LOST_PROFILER_STOPPED), the cause of the periods
 * after its last signal unless the signal was blocked (UW_LOST_SIGNALS_BLOCKED) */
void iprof_kill_slot(struct iprof_slot *sl, uint8_t end);
void iprof_flush_pending(struct uw_prof *p, struct iprof_slot *sl);
void iprof_drop_pending(struct iprof_slot *sl);
bool iprof_is_internal(struct uw_prof *p, int tid);
void iprof_note_internal(int tid, bool add);
extern _Thread_local int iprof_tls_internal;

/* prof_collect.c */
/* Wakes the collector (async-signal-safe: an atomic and a futex system call). */
void iprof_wake(void);
int iprof_collector_start(struct uw_prof *p);
void iprof_collector_stop(struct uw_prof *p);
void iprof_collector_sync(unsigned timeout_ms);
void iprof_comms_free(struct uw_prof *p);

/* prof_maps.c */
void iprof_maps_check(struct uw_prof *p);
/* Whether the frames' mappings are those the kernel shows at their pcs (asked once a pass per
 * mapping); with unname, a frame whose is not loses its module ("[unknown]"). */
bool iprof_maps_verify(struct uw_prof *p, struct uw_frame *frames, unsigned n, bool unname);
void iprof_maps_close(struct uw_prof *p);
int iprof_tracker_reset(struct uw_prof *p);

/* prof_threads.c */
int iprof_gettid(void);

/* The time on clock clk in ns (0 when it cannot be read). */
static inline uint64_t iprof_now_ns(clockid_t clk)
{
	struct timespec ts;
	if (clock_gettime(clk, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
