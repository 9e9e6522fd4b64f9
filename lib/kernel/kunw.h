/* SPDX-License-Identifier: MIT */
/*
 * In-kernel unwinding (docs/kernel-unwind.md): an eBPF program attached to perf sampling events
 * walks each sampled thread's user stack with the unwind rows of lib/cfi, loaded into BPF maps,
 * and hands user space the frames; where it cannot go on (a module whose table is not loaded, a
 * DWARF expression), it hands the registers at that frame and a bounded stack copy, and user
 * space finishes the stack with lib/unwind exactly as it unwinds a perf stack copy.
 *
 * Three parts, prefix kunw_:
 *  - module tables (kunw_table.c): a module's CFI and SFrame rows converted into the program's
 *    table; plain C, built with or without libbpf;
 *  - the program (kunw_load.c): loading, attaching to perf event fds, feeding the maps (process
 *    mappings, module tables) and reading the ring buffer; only with UW_HAVE_KERNEL_UNWIND
 *    (libbpf, clang's BPF target, bpftool and the kernel's BTF at build time);
 *  - records (kunw_record.c): decoding ring-buffer records and finishing stacks in user space.
 *
 * Not thread-safe: one thread feeds and polls a struct kunw (a deferred one makes its swaps on
 * a thread of its own, behind that interface). Errors are negative errno values
 * (or UW_E* codes); nothing here prints (libbpf's own messages go through libbpf_set_print,
 * which is process-wide and left to the program).
 */
#ifndef UW_KUNW_H
#define UW_KUNW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfi/cfi.h"
#include "elf/elfview.h"
#include "unwind/unwind.h"
#include "kernel/kunw_abi.h"

/* ---------------------------------------------------------------- module tables */

/* A module's unwind tables compiled whole (the session's may be lazy) by lib/unwind, as the
 * module cache compiles them: the source of its kernel table, and what user space finishes
 * stacks with. elf's .eh_frame, .sframe and PLT sections, and elf's (else dbg's) .debug_frame
 * (dbg may be NULL). The views must outlive t. @return 0, -ENOMEM, -UW_ELIMIT (nothing kept
 * then); a malformed SFrame section is not used, as the module cache does not use it. */
int kunw_code_build(struct unw_tables *t, struct elfv *elf, struct elfv *dbg);

/* A module's table in the program's layout (kunw_abi.h): 64-byte lines of 64-bit words. */
struct kunw_table {
	uint64_t *words;
	uint32_t nwords;         /* KUNW_LINE_WORDS a line */
	uint32_t nrows, nrules, nblocks;
	/* rows by kind: handed to user space (DWARF expressions, CFA from another register, SFrame
	 * flexible rows), PLT stubs, signal frames, from SFrame */
	uint32_t nfallback, nplt, nsignal, nsframe;
};
/* Converts the rows of code (whole tables, as kunw_code_build makes; a lazy table is
 * -EINVAL) into t: for each pc the rule unw_run would take there (CFI, else SFrame, else the
 * PLT rule, else frame pointers). @return 0, -EINVAL, -ENOMEM, -UW_ELIMIT (a module spanning
 * more than 4 GiB, or more than 2^31 rows). */
int kunw_table_build(struct kunw_table *t, const struct unw_code *code);
void kunw_table_free(struct kunw_table *t);
/* The rule the program finds at module address rel (KUNW_K_NONE when none), by the same
 * search, and the module addresses [*lo, *hi) where the program's cache takes it to hold (for
 * tests; lo and hi may be NULL). @return false when the table does not hold together. */
bool kunw_table_find(const struct kunw_table *t, uint64_t rel, struct kunw_rule *out, uint32_t *lo, uint32_t *hi);
/* Bytes the table takes in its BPF map. */
static inline uint64_t kunw_table_bytes(const struct kunw_table *t)
{
	return (uint64_t)t->nwords * 8;
}

/* Tables kept between recordings (kunw_cache.c): DIR/BUILD-ID-KEY.kunw1 for the module's file
 * elf and its debug file dbg (NULL: none), malloc'd; NULL when there is no directory or elf has
 * no build-id. */
char *kunw_cache_path(const char *dir, struct elfv *elf, struct elfv *dbg);
/* The table at path into t when it was made from these files (their identities and headers)
 * by this build's table code and is whole, and at most max bytes (the maps' cap: a larger one
 * could not be loaded). @return 0, or a negative errno (-ENOENT: none, -UW_EFORMAT: another
 * file's, another build's, or damaged, -EFBIG: over max). */
int kunw_cache_read(const char *path, struct elfv *elf, struct elfv *dbg, uint64_t max, struct kunw_table *t);
/* t written to path (made from elf and dbg) within the cache directory's cap (0: none), the
 * least recently used entries removed to make room. @return 0 or a negative errno. */
int kunw_cache_write(const char *path, struct elfv *elf, struct elfv *dbg, const struct kunw_table *t, uint64_t cap);

/* ---------------------------------------------------------------- records */

/* A record of the ring buffer, decoded in place (valid as long as the record's bytes). */
struct kunw_sample {
	const struct kunw_rec *rec;
	const uint64_t *kernel;  /* rec->nkernel kernel pcs, innermost first */
	const uint64_t *user;    /* rec->nuser user frames: pc | method << KUNW_METHOD_SHIFT */
	const uint64_t *regs;    /* (KUNW_F_REGS, else NULL) KUNW_NREGS registers, DWARF order */
	const uint8_t *stack;    /* rec->copy_len bytes from regs[KUNW_R_RSP] */
	const uint64_t *sum;     /* (KUNW_KIND_WAIT_SUM, else NULL) KUNW_SUM_WORDS words */
};
/* @return 0, or -UW_EFORMAT when the bytes are not a whole record. */
int kunw_sample_decode(const void *data, size_t size, struct kunw_sample *out);

struct kunw_result {
	unsigned n;              /* frames */
	unsigned nkernel;        /* frames[0..nkernel) walked by the program */
	enum uw_stop_reason stop;
	bool finished;           /* user space unwound frames[nkernel..n) from the copy */
};
/* The user stack of s as frames: the program's, then (a handed-over walk) user space's from the
 * registers and copy with unw_run_from. find resolves pcs as for unw_run (module, rel_pc).
 * Methods are enum uw_frame_method's; a frame's sp is 0 where the program walked it. */
void kunw_finish(const struct kunw_sample *s, const struct unw_opts *opts, unw_find_fn find, void *find_ctx,
                 struct uw_frame *frames, unsigned cap, struct kunw_result *res);
/* A verify-mode record (KUNW_F_VERIFY): the stack as user space unwinds it from frame 0's
 * registers and the copy alone, for comparing with the program's frames. */
void kunw_unwind_copy(const struct kunw_sample *s, const struct unw_opts *opts, unw_find_fn find, void *find_ctx,
                      struct uw_frame *frames, unsigned cap, struct unw_result *res);
enum uw_stop_reason kunw_stop_reason(unsigned kunw_stop);

/* ---------------------------------------------------------------- the program */

#ifdef UW_HAVE_KERNEL_UNWIND
struct kunw;

struct kunw_opts {
	unsigned max_frames;     /* user frames per sample (0: 1024; at most KUNW_MAX_FRAMES) */
	unsigned copy_bytes;     /* stack bytes handed over with a walk (0: 16384; at most
	                          * KUNW_COPY_MAX) */
	uint64_t max_bytes;      /* cap on the bytes of tables and mappings in BPF maps (0: 64 MiB) */
	unsigned max_procs;      /* processes with mappings loaded (0: 4096) */
	unsigned max_modules;    /* module tables loaded (0: 4096) */
	unsigned ring_bytes;     /* ring buffer (0: 32 MiB; a power of 2, >= 4096) */
	bool verify;             /* every record also carries frame 0's registers and a copy */
	bool switches;           /* also load the switch-out program (kunw_attach_switch); the
	                          * verifier then checks the walk twice */
	/* Swaps in the hashes of maps queued, made by kunw_commit on a thread of its own: each
	 * such update waits for an RCU grace period in the kernel (10-30 ms on a busy machine),
	 * which a recording loop cannot afford per process. */
	bool deferred;
	/* Stage timing (a diagnostic: where the program's time goes, kunw_timing_read). Also set
	 * by the environment variable UW_KUNW_TIMING=FILE, which has kunw_close append the stages
	 * to FILE (how a recorder built on this layer is measured without changing it). */
	bool timing;
	/* Waits timed in the kernel (kunw_wait.bpf.h, docs/offcpu.md): load the sched_switch, fork
	 * and exit programs (kunw_wait_attach), the sampling program that walks only the followed
	 * tasks' samples (kunw_attach_followed, instead of kunw_attach) and the end's iterator. */
	bool wait;
	bool wait_all;           /* every task followed but wait_self's (the recorder's process) */
	uint32_t wait_self;
	uint64_t wait_min_ns;    /* unwalked waits are written when their key's total reaches it
	                          * (0: 500 us) */
	unsigned wait_walks;     /* stacks walked per second and CPU at most (0: 500) */
	/* One sampling attribute (its records are its samples, or switch-outs by their kind): the
	 * records' event_id is left 0, the event's lookup (three dependent loads of the kernel's
	 * perf_event structs) saved per sample. */
	bool one_event;
};

/* Opens and loads the program (the verifier runs here). On failure, a message (the end of the
 * verifier's log, or what failed) is in err. @return 0 or a negative error: -ELIBACC (libbpf.so.1,
 * or UNWOUND_LIBBPF's file, cannot be loaded: the first call loads it), -EPERM (no CAP_BPF/CAP_PERFMON), -ENOSYS (kernel
 * without BPF), -EINVAL (bad options), ... */
int kunw_open(const struct kunw_opts *o, struct kunw **out, char *err, size_t errlen);
void kunw_close(struct kunw *k);
/* What kunw_open would refuse at once, in a few milliseconds (no verifier): libbpf that cannot
 * be loaded (-ELIBACC), no BPF (-ENOSYS), no privilege to make a map (-EPERM); err says why.
 * For a caller that loads the program on a thread and wants these said before it begins. */
int kunw_probe(char *err, size_t errlen);

/* Attaches the program to a perf event fd (a sampling event: its samples are then delivered as
 * records instead of in the event's own buffer, so the kernel copies no stack for them). The fd
 * stays the caller's. */
int kunw_attach(struct kunw *k, int perf_fd);
/* Do the program's records say which event they are a sample of (kunw_rec.event_id: the
 * kernel has bpf_cast_to_kern_ctx, Linux 6.2)? Else they are samples of the first attached. */
bool kunw_event_ids(const struct kunw *k);
/* The same for a context-switches software event (kunw_opts.switches): the same walk at each
 * switch-out, its records of kind KUNW_KIND_SWITCH (kunw_attach's: KUNW_KIND_SAMPLE). Another
 * entry program, not an attach cookie: a per-task event's copies in new threads (inherit) get
 * the program but not the cookie. -EINVAL without kunw_opts.switches. */
int kunw_attach_switch(struct kunw *k, int perf_fd);

/* Sets the executable mappings of process pid (any order; copied), replacing what it had:
 * at once, for every CPU. Mappings whose module has no table loaded yet are handed to user
 * space when a walk reaches them. A process with KUNW_YOUNG_MAPS or fewer, that never had more,
 * goes to its slot of kunw_young (if free), at once even when deferred (no grace period to wait
 * for); past that, to kunw_procs for good, deferred or not as every swap. @return 0, -E2BIG (more than KUNW_PROC_MAPS), -EINVAL
 * (overlapping), -ENOSPC (the byte cap or max_procs reached: the process's stacks are then
 * handed over from frame 0), or the kernel's error. */
int kunw_proc_set(struct kunw *k, uint32_t pid, const struct kunw_map *maps, unsigned n);
int kunw_proc_drop(struct kunw *k, uint32_t pid);
/* The generation the last kunw_proc_set gave (records carry the one their walk used). */
uint32_t kunw_gen(const struct kunw *k);
/* A file descriptor that polls readable when the ring has records to wake the reader for. */
int kunw_ring_fd(const struct kunw *k);

/* Loads a module's table under id (>= 1, never reused while k lives: records name modules by
 * id only through mappings, and the program's cache trusts an id to keep its rules).
 * @return 0, -EEXIST, -ENOSPC (the byte cap or max_modules reached: walks reaching the module
 * are handed to user space), or the kernel's error. */
int kunw_module_add(struct kunw *k, uint32_t id, const struct kunw_table *t);
int kunw_module_drop(struct kunw *k, uint32_t id);

/* Deferred (kunw_opts.deferred): kunw_proc_set, kunw_proc_drop, kunw_module_add and
 * kunw_module_drop build their maps at once but only queue the swap into the program's maps
 * (the accounting and the generation are at once); kunw_commit hands what is queued to the
 * committer thread, which makes the swaps in order, a batch per map (one grace period each,
 * the tables' before the mappings'). wait: returns once all is made. Not deferred: nothing to
 * do. @return 0 or -ENOMEM (nothing handed over then: tried again at the next commit). */
int kunw_commit(struct kunw *k, bool wait);
/* Swaps the committer could not make (the kernel refused them: walks that reach what is
 * missing hand the stack over). */
uint64_t kunw_commit_failed(struct kunw *k);

/* Bytes held in BPF maps for tables and mappings (what max_bytes caps). */
uint64_t kunw_bytes(const struct kunw *k);

/* Called for each record; a non-zero return stops the poll and is returned by it. */
typedef int (*kunw_sample_fn)(void *ctx, const struct kunw_sample *s);
/* In the end of a verifier's log (kunw_open's err when the program was refused), the line that
 * says why: the last but the statistics and the instructions the verifier went through (else the
 * first line). @return where it starts in log; *n its length. */
const char *kunw_verifier_why(const char *log, size_t *n);

/* Waits up to timeout_ms for records and passes each to fn. The program wakes a waiting reader
 * only each time a CPU wrote its share of an eighth of the ring (a wakeup per record costs more
 * than the walk): records
 * arrive in batches, at the latest after timeout_ms. @return the records consumed, fn's non-zero
 * return, or a negative error. */
int kunw_poll(struct kunw *k, int timeout_ms, kunw_sample_fn fn, void *ctx);

/* The program's counters, summed over CPUs. */
int kunw_counters(struct kunw *k, struct kunw_counters *out);
/* The program's run count and time (kernel.bpf_stats_enabled or bpf_enable_stats) and the
 * instructions the verifier processed; the switch-out program's run count and time apart. */
struct kunw_prog_info {
	uint64_t run_cnt, run_time_ns;
	uint32_t verified_insns;
	uint32_t xlated_bytes, jited_bytes;
	uint64_t switch_run_cnt, switch_run_time_ns; /* the switch-out program's (kunw_opts.switches) */
	uint64_t wait_run_cnt, wait_run_time_ns;     /* the sched_switch program's (kunw_opts.wait) */
};
int kunw_prog_info(struct kunw *k, struct kunw_prog_info *out);
/* The stage timing (kunw_opts.timing), summed over CPUs. -ENOENT without timing. */
int kunw_timing_read(struct kunw *k, struct kunw_timing *out);

/* ---- waits timed in the kernel (kunw_opts.wait) */
/* The sampling program for events opened per CPU: a sample of a task not followed is dropped. */
int kunw_attach_followed(struct kunw *k, int perf_fd);
/* Followed: process pid, all its threads (a command, -p); or thread tid alone, the side-band of
 * its process pid wanted (-t). Before kunw_wait_attach. */
int kunw_wait_follow_proc(struct kunw *k, uint32_t pid);
int kunw_wait_follow_thread(struct kunw *k, uint32_t tid, uint32_t pid);
/* The sched_switch, fork and exit programs attached (they time nothing until kunw_wait_on). */
int kunw_wait_attach(struct kunw *k);
/* The recording runs (on) or not: waits begun, switch-ins and samples counted only while on. */
void kunw_wait_on(struct kunw *k, bool on);
/* A thread user space found blocked at the start (its switch-out made by it at mono time t0):
 * its next switch-in is written as a KUNW_KIND_WAIT_IN record. add false: not blocked after all
 * (taken back). */
int kunw_wait_blocked(struct kunw *k, uint32_t tid, uint64_t t0, bool add);
/* Does process pid's side-band matter (a thread of it followed)? 1, 0, or a negative error. */
int kunw_wait_sideband(struct kunw *k, uint32_t pid);
/* Followed targets alive: the processes (a command, -p, and the processes they created) or
 * threads (-t, and the threads they created) that have not exited. */
int64_t kunw_wait_live(struct kunw *k);
/* The end at mono (CLOCK_MONOTONIC): the waits off, every followed thread's open unwalked wait
 * (up to mono) and its keys' totals written into the ring (KUNW_KIND_WAIT_SUM records, for
 * kunw_poll). @return 0 or a negative error. */
int kunw_wait_end(struct kunw *k, uint64_t mono);
/* The wait programs' counters, summed over CPUs. */
int kunw_wait_counters(struct kunw *k, struct kunw_wait_counters *out);
#endif
/* The stages of t as text lines (what kunw_close writes for UW_KUNW_TIMING). */
void kunw_timing_print(const struct kunw_timing *t, void *file);

#endif
