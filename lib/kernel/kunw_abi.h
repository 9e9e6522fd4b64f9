/* SPDX-License-Identifier: MIT */
/*
 * What the eBPF program (kunw.bpf.c) and user space (kunw_*.c) share: the layout of the maps
 * user space fills and of the ring-buffer records the program writes. Included by both sides:
 * the program after vmlinux.h, user space after <linux/types.h>. Fixed-width types only, every
 * struct padded by hand (no implicit padding), so both compilers agree; see
 * docs/kernel-unwind.md for the design.
 *
 * x86_64 only, as the user-space unwinder is: registers are numbered as in DWARF (System V
 * psABI, figure 3.36; 16 is the return address, the pc).
 */
#ifndef UW_KUNW_ABI_H
#define UW_KUNW_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* ---- compile-time bounds (the program's arrays; runtime limits are at most these) */
#define KUNW_MAX_FRAMES 2048   /* user frames one record can hold */
#define KUNW_MAX_KFRAMES 128   /* kernel callchain entries (perf's default is 127) */
#define KUNW_COPY_MAX 32768    /* stack bytes handed over for user space to finish a stack */
#define KUNW_PROC_MAPS 8191    /* executable mappings per process */
#define KUNW_CACHE_SLOTS 1024  /* per-CPU cache of rows by (module, 16 bytes of code) */
#define KUNW_NREGS 17          /* DWARF 0..16 */
#define KUNW_BLOCK_SHIFT 8     /* rows' block index: one entry per 256 bytes of code */
#define KUNW_LINE_WORDS 8      /* a table is an array of 64-byte lines */
#define KUNW_INDEX_PER_LINE 15 /* block entries per index line (a 16th repeats the next line's first) */
#define KUNW_SEARCH_STEPS 9    /* rows in one block's search span <= 257 (distinct pcs) */
#define KUNW_MAP_STEPS 13      /* log2(KUNW_PROC_MAPS + 1) */
#define KUNW_GENS 65536        /* slots of kunw_gens: a process's at pid & (KUNW_GENS - 1) */
#define KUNW_YOUNG_MAPS 31     /* executable mappings a process may have in kunw_young */
#define KUNW_YOUNG_SLOTS 1024  /* slots of kunw_young: a process's at pid & (KUNW_YOUNG_SLOTS - 1) */

/* DWARF register numbers the walk uses */
#define KUNW_R_RBX 3
#define KUNW_R_RBP 6
#define KUNW_R_RSP 7
#define KUNW_R_R12 12
#define KUNW_R_RIP 16

/* ---- per-process mapping intervals: hash of maps, pid -> an array of struct kunw_map:
 * entry 0 is a header (start: the number of intervals n, end: a generation that changes with
 * every update, written into records), entries 1..n the process's executable mappings sorted
 * by start, not overlapping. The module-relative address of pc in a mapping is
 * pc - start + rel_start (rel_start: the module address the mapping's first byte holds). */
#define KUNW_MODULE_ANON 0u  /* executable memory without a module (JIT): frame pointers only */
#define KUNW_MODULE_NONE 0xffffffffu /* a module whose table is not loaded */
struct kunw_map {
	__u64 start, end;
	__u32 module;        /* the module's table: its slot in kunw_modules (the low kunw_slot_bits)
	                      * and a tag the table's header repeats (the slot's loads told apart);
	                      * KUNW_MODULE_ANON, or KUNW_MODULE_NONE. User space names modules by
	                      * id; the loader writes these. */
	__u32 rel_start;
};

/* ---- per-module tables: array of maps, slot -> an array of 64-byte lines (struct kunw_line),
 * so that a lookup brings a cache line (a search takes four or five):
 *   line 0          w[0] = span << 32 | base   rows cover module addresses [base, base + span)
 *                   w[1] = rows_at << 32 | rules_at, w[2] = nrows << 32 | index_at (line
 *                   indexes), w[3] = the module value its mappings carry (kunw_map.module)
 *   index_at...     u32 block[b], the first row whose pc >= base + (b << KUNW_BLOCK_SHIFT), for
 *                   b in 0..nblocks: KUNW_INDEX_PER_LINE a line (half-word i of line L is
 *                   block[15 L + i], low half first), the 16th half-word repeating block[15 (L + 1)]
 *                   so that block[b + 1] is in block[b]'s line
 *   rules_at...     the module's distinct rules, struct kunw_rule, four a line
 *   rows_at...      rule index << 32 | (pc - base), ascending pc, eight a line; a row holds until
 *                   the next
 */
struct kunw_line {
	__u64 w[KUNW_LINE_WORDS];
};

/* Rule kinds. A rule says how to find the caller's registers from a frame's. */
enum {
	KUNW_K_NONE = 0,     /* no unwind info: the frame-pointer rule */
	KUNW_K_CFA_SP,       /* CFA = rsp + cfa_off; ra at CFA + ra_off; rbp and saved as flagged */
	KUNW_K_CFA_FP,       /* CFA = rbp + cfa_off; the rest as above */
	KUNW_K_END,          /* return address undefined: the outermost frame */
	KUNW_K_PLT,          /* a PLT stub with no CFI: the return address is at rsp */
	KUNW_K_PLT_EXPR,     /* the toolchains' PLT expression: CFA = rsp + 8, + 8 when
	                      * (rip & 15) >= cfa_off; ra at CFA - 8 */
	KUNW_K_SIGNAL,       /* the kernel's x86_64 rt_sigframe: every register from its
	                      * ucontext at rsp + 40 (glibc's __restore_rt) */
	KUNW_K_FALLBACK,     /* a rule the program does not follow (DWARF expression, a
	                      * register's rule it cannot keep, SFrame flexible or unsupported
	                      * row): user space finishes */
	KUNW_K_CFA_REG = 16, /* + r (a DWARF register 0-15 but rsp and rbp): CFA = r + cfa_off;
	                      * the rest as KUNW_K_CFA_SP (lazy binding's _dl_runtime_resolve:
	                      * CFA = rbx + 32; a stack-realigning prologue's CFA = r10) */
	KUNW_K_CFA_REG_END = 32,
};
/* Rule flags */
#define KUNW_RF_BP_SAVED 0x01  /* rbp saved at CFA + bp_off */
#define KUNW_RF_BP_UNDEF 0x02  /* rbp undefined in the caller */
#define KUNW_RF_SIGNAL 0x04    /* the caller was interrupted: its pc is exact */
#define KUNW_RF_SFRAME 0x08    /* from .sframe (the frame's method says so) */
#define KUNW_RF_WINDOW 0x10    /* every slot read lies in the KUNW_WINDOW bytes below the CFA,
                                * 8-aligned: one read fetches them all */
#define KUNW_WINDOW 64
#define KUNW_NSAVED 5          /* rbx, r12..r15 */
struct kunw_rule {
	__s32 cfa_off;
	__u8 kind;
	__u8 flags;
	__s16 ra_off;
	__s16 bp_off;
	__s8 saved[KUNW_NSAVED]; /* reg (rbx, r12..r15) saved at CFA + 8 * saved[i]; 0: unchanged */
	__u8 slots;              /* (CFA rules) the slots read, a bit each: return address, rbp,
	                          * rbx, r12..r15 */
};

/* ---- records in the ring buffer (one per sample) */
/* Methods, as enum uw_frame_method numbers them (checked in kunw_table.c) */
#define KUNW_M_REGS 0
#define KUNW_M_CFI 1
#define KUNW_M_FP 2
#define KUNW_M_PLT 3
#define KUNW_M_SIGNAL 4
#define KUNW_M_SFRAME 6
/* a user frame is pc | method << KUNW_METHOD_SHIFT: user addresses stay below 2^57 (5-level
 * paging) and a frame is written only for a pc inside a known mapping */
#define KUNW_METHOD_SHIFT 60
#define KUNW_PC_MASK ((1ull << KUNW_METHOD_SHIFT) - 1)

/* Why the walk ended */
enum {
	KUNW_STOP_END = 0,       /* the outermost frame */
	KUNW_STOP_MAX_FRAMES,
	KUNW_STOP_NO_PROGRESS,   /* the stack pointer did not move up */
	KUNW_STOP_NO_INFO,       /* frame-pointer rule: no frame pointer (beyond frame 0) */
	KUNW_STOP_BAD_MEMORY,    /* a read of the stack failed */
	KUNW_STOP_BAD_CFI,       /* a rule that cannot apply (CFA from an undefined rbp) */
	KUNW_STOP_NO_USER,       /* no user registers: a kernel thread, or a 32-bit task */
	KUNW_STOP_FALLBACK,      /* handed to user space: registers and a stack copy follow */
	KUNW_STOP__COUNT
};
/* Why a walk was handed to user space */
enum {
	KUNW_FB_NONE = 0,
	KUNW_FB_NO_PROC,         /* the process has no mappings loaded */
	KUNW_FB_NO_MAP,          /* pc in none of its mappings */
	KUNW_FB_NO_TABLE,        /* the module's table is not loaded */
	KUNW_FB_RULE,            /* a rule the program does not follow */
	KUNW_FB_FP,              /* frame 0 without CFI and no usable frame pointer: user space
	                          * has a heuristic for it */
	KUNW_FB_TABLE,           /* a table that does not hold together */
	KUNW_FB__COUNT
};

/* Record flags */
#define KUNW_F_KERNEL_MODE 0x01  /* the sample interrupted the kernel */
#define KUNW_F_IN_SYSCALL 0x02   /* ...in a syscall: frame 0's pc follows the instruction */
#define KUNW_F_REGS 0x04         /* regs and a stack copy follow the frames */
#define KUNW_F_VERIFY 0x08       /* (verify mode) regs and copy are frame 0's, for checking */
#define KUNW_F_IS_CALL 0x10      /* the regs' pc is a return address */

/* What the event sampled is (struct kunw_rec.kind) */
#define KUNW_KIND_SAMPLE 0       /* a sampling event (CPU samples) */
#define KUNW_KIND_SWITCH 1       /* a context-switches event: a switch-out (record --off-cpu) */
/* waits timed in the kernel (kunw_wait.bpf.h, kunw_opts.wait) */
#define KUNW_KIND_WAIT 2         /* a switch-out walked at the sched_switch tracepoint: period is
                                  * the wait's key */
#define KUNW_KIND_WAIT_IN 3      /* the switch-in that ends a walked wait (no frames) */
#define KUNW_KIND_WAIT_SUM 4     /* unwalked waits of one key: period their time (ns); no frames,
                                  * the header followed by __u64 sum[KUNW_SUM_WORDS] */
#define KUNW_SUM_WORDS 3         /* a KUNW_KIND_WAIT_SUM's words: the key, the user pc, how many */

struct kunw_rec {
	__u32 size;          /* of the whole record */
	__u16 nkernel;       /* kernel callchain entries */
	__u16 nuser;         /* user frames walked */
	__u8 stop;           /* KUNW_STOP_* */
	__u8 flags;          /* KUNW_F_* */
	__u8 method;         /* (KUNW_F_REGS) the method that found the frame of regs */
	__u8 fb_reason;      /* (KUNW_STOP_FALLBACK) KUNW_FB_* */
	__u32 pid, tid;
	__u32 cpu;
	__u32 copy_len;      /* stack bytes after the registers, from regs[KUNW_R_RSP] up */
	__u32 gen;           /* the process's mapping generation the walk used */
	__u32 valid;         /* (KUNW_F_REGS) valid registers, bit per DWARF number */
	__u32 kind;          /* KUNW_KIND_*: which entry program wrote it (kunw_attach,
	                      * kunw_attach_switch) */
	__u64 time;          /* CLOCK_MONOTONIC, ns (bpf_ktime_get_ns) */
	__u64 period;
	__u64 event_id;      /* the sampled event's id as its samples carry it (PERF_SAMPLE_ID:
	                      * an inherited copy's is its parent's); 0 where the kernel cannot
	                      * say (no bpf_cast_to_kern_ctx: before Linux 6.2) */
	/* followed by __u64 kernel[nkernel], __u64 user[nuser], and with KUNW_F_REGS
	 * __u64 regs[KUNW_NREGS] (DWARF order) and __u8 stack[copy_len] (from regs[KUNW_R_RSP]
	 * up): a record without them is 64 bytes and its frames */
};

/* ---- counters (per-CPU array, one element): what the program did */
/* A slot of kunw_young (an array user space writes in place, mapped): a process's mappings,
 * m[0] = {n, generation, pid}, m[1..n] sorted, as the inner maps of kunw_procs hold them; seq
 * odd while user space writes the slot (a reader that sees it odd, or changed after its reads,
 * hands the stack over). */
struct kunw_young {
	__u64 seq;
	struct kunw_map m[KUNW_YOUNG_MAPS + 1];
};

struct kunw_counters {
	__u64 samples;
	__u64 records;
	__u64 lost;              /* the ring was full */
	__u64 frames;            /* user frames walked */
	__u64 cache_hits, cache_misses;
	__u64 stops[KUNW_STOP__COUNT];
	__u64 fallbacks[KUNW_FB__COUNT];
	__u64 young;             /* lookups of a process's mappings that found them in kunw_young
	                          * (a walk looks up none when the CPU keeps them) */
};

/* ---- (kunw_opts.timing, a diagnostic) where the program's time goes: nanoseconds, counts and
 * bytes per stage, per-CPU array, one element. Nested stages include their inner stages and the
 * clock reads those take (KUNW_T_CLOCK: the cost of one pair of reads, to subtract). */
enum {
	KUNW_T_ALL = 0,      /* the whole sample, from the program's start to its end */
	KUNW_T_KSTACK,       /* bpf_get_stack: the kernel callchain */
	KUNW_T_REGS,         /* the user registers */
	KUNW_T_WALK,         /* the walk (bpf_loop), stages below included */
	KUNW_T_MAP,          /* mapping searches (a pc outside the walk's last interval) */
	KUNW_T_RULE,         /* rule searches in a table (rule cache misses) */
	KUNW_T_READ,         /* the walk's reads of the stack (bytes: bytes read) */
	KUNW_T_COPY,         /* the hand-over's stack copy (bytes: bytes copied) */
	KUNW_T_OUTPUT,       /* the record's end: generation, counters, ring buffer (bytes: record) */
	KUNW_T_CLOCK,        /* a pair of clock reads back to back */
	KUNW_T_PROC,         /* the process's mappings looked up (its hash of maps, their header) */
	KUNW_T_HEAD,         /* the record's header: scratch, ids, time, the event */
	KUNW_T__COUNT
};
struct kunw_timing {
	__u64 ns[KUNW_T__COUNT];
	__u64 n[KUNW_T__COUNT];
	__u64 bytes[KUNW_T__COUNT];
};

/* ---- waits timed in the kernel (kunw_wait.bpf.h): kw_procs values, counters */
#define KUNW_WAIT_PROC_ALL 1      /* every thread of the process is followed */
#define KUNW_WAIT_PROC_SIDEBAND 2 /* the process's side-band records are wanted (a thread of it
                                   * followed) */
struct kunw_wait_counters {
	__u64 waits;             /* switch-outs of followed threads (waits begun) */
	__u64 walked;            /* of those, walked at the switch */
	__u64 ns;                /* unwalked waits' time (ns) */
	__u64 records;           /* records written (switch-ins, totals) */
	__u64 lost;              /* ... that did not fit in the ring */
	__u64 untimed;           /* switches (out or in) of followed threads with no state to time
	                          * them in: their task storage could not be made there (the
	                          * kernel refuses while its per-CPU task storage lock is held) */
	__u64 missed_ins;        /* switch-ins of followed threads the tracepoint never showed (a
	                          * switch-out found the last wait still open): closed at the
	                          * thread's last arrival on a CPU (sched_info) */
};

/* A followed thread's state (the task storage of kunw_wait.bpf.h, kw_tasks): made by the
 * program at the thread's first switch or fork, or by user space for the threads followed at
 * the start (kunw_wait_follow_*: followed 1, the rest zero). */
#define KW_SLOTS 8

struct kw_slot {
	__u64 key, ip;
	__u64 ns;                /* unwalked waits' time not yet written */
	__u32 n;                 /* ... and their number */
	__u32 walks;             /* walks of this key since the slot took it */
};

struct kw_task {
	__u8 followed;
	__u8 walked;             /* the open wait was walked (its out is CLOCK_MONOTONIC) */
	__u8 victim;             /* the next slot to take for a new key */
	__u8 slot;               /* the open wait's slot */
	__u32 pad;
	__u64 out;               /* the open wait's start; 0: none */
	struct kw_slot s[KW_SLOTS];
};

#endif
