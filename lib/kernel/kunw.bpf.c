/* SPDX-License-Identifier: MIT OR GPL-2.0 */
/*
 * Unwinding the sampled thread's user stack where it lives, at sample time: attached to perf
 * sampling events, this program walks the user stack with bpf_probe_read_user, using the rows
 * user space compiled from each module's CFI or SFrame (kunw_table.c), and writes one record
 * per sample to a ring buffer: the kernel callchain, the user frames with the method that found
 * each, and, where the walk reaches something it cannot follow (a module whose table is not
 * loaded, a DWARF expression), the registers at that frame and a bounded copy of the stack from
 * it, so user space finishes the stack with its unwinder.
 *
 * One frame is one call of walk_frame, run by bpf_loop (Linux 5.17): the verifier checks the
 * frame once, so the depth is a runtime limit (kunw_max_frames), not a program size. The step
 * follows lib/unwind/unwind.c rule for rule (the same stops, the same pc - 1 lookups, the same
 * frame-0 cases); anything it does not do itself is handed over rather than guessed.
 *
 * Built with clang -target bpf against the running kernel's BTF (vmlinux.h, CO-RE).
 */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

#include "kunw_abi.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* set before loading (kunw_open) */
const volatile __u32 kunw_max_frames = 1024;
const volatile __u32 kunw_copy_bytes = 16384;
const volatile __u32 kunw_verify = 0;
const volatile __u64 kunw_wakeup_bytes = 1 << 20;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} kunw_ring SEC(".maps");

/* one process's mappings (see kunw_abi.h); BPF_F_INNER_MAP: each is sized to its process */
struct kunw_proc_map {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_INNER_MAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct kunw_map);
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH_OF_MAPS);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__array(values, struct kunw_proc_map);
} kunw_procs SEC(".maps");

/* one module's table (see kunw_abi.h); BPF_F_INNER_MAP: each is sized to its module */
struct kunw_table_map {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_INNER_MAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH_OF_MAPS);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__array(values, struct kunw_table_map);
} kunw_modules SEC(".maps");

#define CHUNK 512 /* stack bytes read ahead for small frames */

/* The walk's state and the record being built, one per CPU (a perf_event program does not nest
 * on a CPU: the kernel skips it while another BPF program runs there). */
struct kunw_walk {
	__u64 regs[KUNW_NREGS];
	__u32 valid;
	__u32 n;             /* user frames written */
	__u64 sp0;           /* frame 0's stack pointer */
	struct kunw_map map; /* the mapping of the last pc (empty: none) */
	__u32 pid;
	__u32 nk;            /* kernel frames (user frames follow them in data) */
	__u8 is_call;        /* the current frame's pc is a return address */
	__u8 found_by;       /* the method that found the current frame */
	__u8 sp_stayed;
	__u8 in_syscall;
	__u8 stop, fb_reason;
	__u8 pad[2];
	__u64 sig[KUNW_NREGS]; /* a signal frame's registers, or a frame's 64-byte window, as read */
	__u64 chunk_at;      /* the stack's bytes [chunk_at, chunk_at + CHUNK) are in chunk; 0: none */
	__u64 chunk[CHUNK / 8];
	struct pt_regs pt;   /* the user registers of a sample taken in the kernel */
};

struct kunw_cache_ent {
	__u32 module, rel;   /* module 0: empty (ids start at 1) */
	struct kunw_rule rule;
};

struct kunw_scratch {
	struct kunw_walk w;
	struct kunw_cache_ent cache[KUNW_CACHE_SLOTS];
	struct kunw_rec rec;
	/* kernel[nk], user[n], stack copy; 4 KiB of slack for the page-wise copy's bound */
	__u64 data[KUNW_MAX_KFRAMES + KUNW_MAX_FRAMES + KUNW_COPY_MAX / 8 + 512];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* set to the number of possible CPUs */
	__type(key, __u32);
	__type(value, struct kunw_scratch);
} kunw_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct kunw_counters);
} kunw_stats SEC(".maps");

/* step results */
enum {
	S_OK = 0,
	S_END,
	S_MEM,
	S_BAD_CFI,
	S_NO_INFO,
	S_DOWN,
	S_FB_FP, /* frame 0: hand over (user space's heuristic) */
};

#define BIT(r) (1u << (r))
/* Keeps clang from folding a bound into another register than the one the verifier checks. */
#define BARRIER_VAR(v) asm volatile("" : "+r"(v))

static __always_inline struct kunw_scratch *scratch(void)
{
	__u32 cpu = bpf_get_smp_processor_id();
	return bpf_map_lookup_elem(&kunw_scratch, &cpu);
}

static __always_inline struct kunw_counters *counters(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&kunw_stats, &zero);
}

static __always_inline bool read_u64(__u64 addr, __u64 *v)
{
	return bpf_probe_read_user(v, sizeof(*v), (const void *)addr) == 0;
}

/* ---- mappings */

/* The mapping of pc among the process's sorted intervals, copied to out. A global function:
 * the verifier checks it once, not once per path into it. @return 0 or -KUNW_FB_*. */
__noinline int kunw_find_map(__u32 pid, __u64 pc, struct kunw_map *out)
{
	void *p = bpf_map_lookup_elem(&kunw_procs, &pid);
	if (!p)
		return -KUNW_FB_NO_PROC;
	__u32 k = 0;
	struct kunw_map *m = bpf_map_lookup_elem(p, &k);
	if (!m || !out)
		return -KUNW_FB_TABLE;
	/* entries 1..n; lo: the first starting above pc */
	__u32 lo = 1, hi = (__u32)m->start + 1;
	for (int i = 0; i < KUNW_MAP_STEPS && lo < hi; i++) {
		k = lo + ((hi - lo) >> 1);
		m = bpf_map_lookup_elem(p, &k);
		if (!m)
			return -KUNW_FB_TABLE;
		if (m->start <= pc)
			lo = k + 1;
		else
			hi = k;
	}
	k = lo - 1;
	if (lo < hi || k == 0 || !(m = bpf_map_lookup_elem(p, &k)))
		return lo < hi ? -KUNW_FB_TABLE : -KUNW_FB_NO_MAP;
	if (pc >= m->end)
		return -KUNW_FB_NO_MAP;
	*out = *m;
	return 0;
}

/* Makes the walk's current mapping the one of pc. @return 0 or -KUNW_FB_*. */
static __always_inline int enter_map(struct kunw_walk *w, __u64 pc)
{
	if (pc >= w->map.start && pc < w->map.end)
		return 0;
	return kunw_find_map(w->pid, pc, &w->map);
}

static __always_inline bool pc_mapped(struct kunw_walk *w, __u64 pc)
{
	struct kunw_map m;
	return (pc >= w->map.start && pc < w->map.end) || kunw_find_map(w->pid, pc, &m) == 0;
}

/* ---- rows */

static __always_inline bool word(void *t, __u32 i, __u64 *v)
{
	__u64 *p = bpf_map_lookup_elem(t, &i);
	if (!p)
		return false;
	*v = *p;
	return true;
}

/* block[b] of the table (two u32 per word from word 2) */
static __always_inline bool block_at(void *t, __u32 b, __u32 *v)
{
	__u64 x;
	if (!word(t, 2 + (b >> 1), &x))
		return false;
	*v = (b & 1) ? (__u32)(x >> 32) : (__u32)x;
	return true;
}

/* The rule in force at address rel of a module, searched in its table: the block index
 * narrows the rows to at most 1025 (pcs are distinct, a block is 1 KiB), then a binary search
 * of KUNW_SEARCH_STEPS. A global function (checked once). @return 0, or -KUNW_FB_*. */
__noinline int kunw_search_rule(__u32 module, __u64 rel, struct kunw_rule *out)
{
	void *t = bpf_map_lookup_elem(&kunw_modules, &module);
	if (!t)
		return -KUNW_FB_NO_TABLE;
	if (!out)
		return -KUNW_FB_TABLE;
	__u64 h0, h1;
	if (!word(t, 0, &h0) || !word(t, 1, &h1))
		return -KUNW_FB_TABLE;
	__u32 base = (__u32)h0, span = (__u32)(h0 >> 32);
	__u32 rules_at = (__u32)h1, rows_at = (__u32)(h1 >> 32);
	if (rel < base || rel - base >= span) {
		__builtin_memset(out, 0, sizeof(*out)); /* KUNW_K_NONE */
		return 0;
	}
	__u32 off = (__u32)(rel - base), b = off >> KUNW_BLOCK_SHIFT, lo, hi;
	if (!block_at(t, b, &lo) || !block_at(t, b + 1, &hi))
		return -KUNW_FB_TABLE;
	/* the row in force is in [block[b] - 1, block[b + 1] - 1] */
	lo = lo ? lo - 1 : 0;
	if (hi <= lo)
		hi = lo + 1;
	__u64 row;
	for (int i = 0; i < KUNW_SEARCH_STEPS && hi - lo > 1; i++) {
		__u32 mid = lo + ((hi - lo) >> 1);
		if (!word(t, rows_at + mid, &row))
			return -KUNW_FB_TABLE;
		if ((__u32)row <= off)
			lo = mid;
		else
			hi = mid;
	}
	if (hi - lo > 1 || !word(t, rows_at + lo, &row))
		return -KUNW_FB_TABLE;
	if ((__u32)row > off) {
		__builtin_memset(out, 0, sizeof(*out));
		return 0;
	}
	__u32 ri = (__u32)(row >> 32);
	__u64 r[2];
	if (!word(t, rules_at + 2 * ri, &r[0]) || !word(t, rules_at + 2 * ri + 1, &r[1]))
		return -KUNW_FB_TABLE;
	__builtin_memcpy(out, r, sizeof(*out));
	return 0;
}

/* The rule at module address rel of module, through the per-CPU cache (return addresses repeat
 * within a stack and across samples; module ids are never reused, so an entry never lies).
 * @return 0, or -KUNW_FB_*. */
static __always_inline int rule_at(struct kunw_scratch *s, struct kunw_counters *cnt, __u32 module, __u64 rel,
                                   struct kunw_rule *out)
{
	if (rel >> 32) {
		__builtin_memset(out, 0, sizeof(*out));
		return 0;
	}
	__u32 slot = ((__u32)rel * 2654435761u ^ module * 40503u) & (KUNW_CACHE_SLOTS - 1);
	struct kunw_cache_ent *e = &s->cache[slot];
	if (e->module == module && e->rel == (__u32)rel) {
		*out = e->rule;
		if (cnt)
			cnt->cache_hits++;
		return 0;
	}
	if (cnt)
		cnt->cache_misses++;
	int err = kunw_search_rule(module, rel, out);
	if (err)
		return err;
	e->module = module;
	e->rel = (__u32)rel;
	e->rule = *out;
	return 0;
}

/* ---- steps (lib/unwind/unwind.c: step_rule, step_fp, step_plt, the signal frame) */

/* CFA from rsp or rbp, return address, rbp and the callee-saved registers from the stack. A
 * save slot below the stack pointer was popped already (an epilogue whose CFI keeps the old
 * rule): the register holds the value. When every slot lies in the 64 bytes below the CFA
 * (KUNW_RF_WINDOW: nearly every rule), they are read with one read (a read costs far more than
 * its bytes), else one by one. A global function (checked once); which slots a rule has comes
 * from the table (r->slots), so the verifier does not follow each combination apart. */
#define SLOTS (2 + KUNW_NSAVED) /* return address, rbp, rbx, r12..r15 */

__noinline int kunw_step_rule(struct kunw_walk *w, const struct kunw_rule *r)
{
	if (!w || !r)
		return S_BAD_CFI;
	__u64 sp = w->regs[KUNW_R_RSP], base;
	if (r->kind == KUNW_K_CFA_SP)
		base = sp;
	else if (w->valid & BIT(KUNW_R_RBP))
		base = w->regs[KUNW_R_RBP];
	else
		return S_BAD_CFI;
	__u64 cfa = base + (__s64)r->cfa_off;
	__u32 has = r->slots;
	__s64 off[SLOTS] = { r->ra_off, r->bp_off };
	for (int i = 0; i < KUNW_NSAVED; i++)
		off[2 + i] = 8 * (__s64)r->saved[i];
	__u64 val[SLOTS] = { 0 };
	bool got = false;
	if (r->flags & KUNW_RF_WINDOW) {
		/* a small frame reads CHUNK bytes from its window up: its callers' slots come with it */
		__u64 lo = cfa - KUNW_WINDOW, at = w->chunk_at;
		if (!at || lo < at || cfa > at + CHUNK || ((lo - at) & 7)) {
			at = 0;
			if (cfa - sp < CHUNK / 2 && !bpf_probe_read_user(w->chunk, CHUNK, (const void *)lo))
				at = lo;
			w->chunk_at = at;
		}
		if (at) {
			__u64 first = (lo - at) >> 3;
			for (int i = 0; i < SLOTS; i++)
				val[i] = w->chunk[(first + ((off[i] + KUNW_WINDOW) >> 3)) & (CHUNK / 8 - 1)];
			got = true;
		} else if (!bpf_probe_read_user(w->sig, KUNW_WINDOW, (const void *)lo)) {
			for (int i = 0; i < SLOTS; i++)
				val[i] = w->sig[((off[i] + KUNW_WINDOW) >> 3) & (KUNW_WINDOW / 8 - 1)];
			got = true;
		}
	}
	for (int i = 0; i < SLOTS && !got; i++) {
		__u64 at = cfa + off[i];
		if (((has >> i) & 1) && (i == 0 || at >= sp) && !read_u64(at, &val[i]))
			return S_MEM;
	}
	/* everything read: commit */
	if ((has & 2) && cfa + off[1] >= sp) {
		w->regs[KUNW_R_RBP] = val[1];
		w->valid |= BIT(KUNW_R_RBP);
	} else if (r->flags & KUNW_RF_BP_UNDEF) {
		w->valid &= ~BIT(KUNW_R_RBP);
	}
	if ((has & 4) && cfa + off[2] >= sp) {
		w->regs[KUNW_R_RBX] = val[2];
		w->valid |= BIT(KUNW_R_RBX);
	}
	for (int i = 1; i < KUNW_NSAVED; i++) {
		if (((has >> (2 + i)) & 1) && cfa + off[2 + i] >= sp) {
			w->regs[KUNW_R_R12 + i - 1] = val[2 + i];
			w->valid |= BIT(KUNW_R_R12 + i - 1);
		}
	}
	w->regs[KUNW_R_RSP] = cfa;
	w->regs[KUNW_R_RIP] = val[0];
	return S_OK;
}

/* The frame-pointer convention: [rbp] = caller's rbp, [rbp + 8] = return address. The caller
 * commits what it reads (pair: rbp, return address). */
static __always_inline int step_fp(struct kunw_walk *w, __u64 pair[2])
{
	if (!(w->valid & BIT(KUNW_R_RBP)))
		return S_NO_INFO;
	__u64 bp = w->regs[KUNW_R_RBP];
	/* the psABI marks the outermost frame with a zero frame pointer */
	if (bp == 0)
		return S_END;
	if (bp & 7)
		return S_NO_INFO;
	/* below the stack pointer: into the part of the stack already walked (a chain looping
	 * back down), else rbp is no frame pointer here */
	if (bp < w->regs[KUNW_R_RSP])
		return bp >= w->sp0 ? S_DOWN : S_NO_INFO;
	if (bpf_probe_read_user(pair, 2 * sizeof(__u64), (const void *)bp))
		return S_MEM;
	return S_OK;
}

/* Return address at the stack pointer: a PLT stub (nothing pushed), or the toolchains' PLT
 * expression, whose CFA is 8 higher once the stub's push ran ((rip & 15) >= threshold). */
static __always_inline int step_plt(struct kunw_walk *w, __u64 pc, const struct kunw_rule *r)
{
	__u64 cfa = w->regs[KUNW_R_RSP] + 8, ra;
	if (r->kind == KUNW_K_PLT_EXPR && (__s64)(pc & 15) >= r->cfa_off)
		cfa += 8;
	if (!read_u64(cfa - 8, &ra))
		return S_MEM;
	w->regs[KUNW_R_RSP] = cfa;
	w->regs[KUNW_R_RIP] = ra;
	return S_OK;
}

/* The kernel's rt_sigframe (arch/x86/include/asm/sigframe.h): once the handler returned into
 * the restorer, rsp points at the ucontext, whose mcontext (40 bytes in) holds r8..r15, rdi,
 * rsi, rbp, rbx, rdx, rax, rcx, rsp, rip. glibc's CFI for __restore_rt says the same with
 * DWARF expressions; the table marks the rows whose expressions say exactly this. */
static __always_inline int step_signal(struct kunw_walk *w)
{
	if (bpf_probe_read_user(w->sig, sizeof(w->sig), (const void *)(w->regs[KUNW_R_RSP] + 40)))
		return S_MEM;
	for (int i = 0; i < 8; i++)
		w->regs[8 + i] = w->sig[i];
	w->regs[5] = w->sig[8];   /* rdi */
	w->regs[4] = w->sig[9];   /* rsi */
	w->regs[6] = w->sig[10];  /* rbp */
	w->regs[3] = w->sig[11];  /* rbx */
	w->regs[1] = w->sig[12];  /* rdx */
	w->regs[0] = w->sig[13];  /* rax */
	w->regs[2] = w->sig[14];  /* rcx */
	w->regs[7] = w->sig[15];  /* rsp */
	w->regs[16] = w->sig[16]; /* rip */
	w->valid = (1u << KUNW_NREGS) - 1;
	return S_OK;
}

/* ---- one frame */

static __always_inline void emit(struct kunw_scratch *s, __u64 pc)
{
	struct kunw_walk *w = &s->w;
	__u32 i = w->nk + w->n;
	if (i < KUNW_MAX_KFRAMES + KUNW_MAX_FRAMES) {
		s->data[i] = pc | (__u64)w->found_by << KUNW_METHOD_SHIFT;
		w->n++;
	}
}

static __always_inline __u8 stop_of(int st)
{
	switch (st) {
	case S_END: return KUNW_STOP_END;
	case S_MEM: return KUNW_STOP_BAD_MEMORY;
	case S_BAD_CFI: return KUNW_STOP_BAD_CFI;
	case S_DOWN: return KUNW_STOP_NO_PROGRESS;
	default: return KUNW_STOP_NO_INFO;
	}
}

/* Walks one frame. @return true to go on. */
static __always_inline bool frame(struct kunw_scratch *s, struct kunw_counters *cnt)
{
	struct kunw_walk *w = &s->w;
	__u64 pc = w->regs[KUNW_R_RIP];
	if (pc == 0 && w->n > 0) {
		w->stop = KUNW_STOP_END;
		return false;
	}
	if (w->n >= kunw_max_frames || w->n >= KUNW_MAX_FRAMES || w->nk + w->n >= KUNW_MAX_KFRAMES + KUNW_MAX_FRAMES) {
		w->stop = KUNW_STOP_MAX_FRAMES;
		return false;
	}
	int e = enter_map(w, pc);
	struct kunw_rule r;
	if (!e) {
		/* every frame but the first and those a signal interrupted: the pc is a return
		 * address, and the call is the instruction before it */
		__u64 rel = (w->is_call ? pc - 1 : pc) - w->map.start + w->map.rel_start;
		if (w->map.module == KUNW_MODULE_ANON) {
			__builtin_memset(&r, 0, sizeof(r));
		} else {
			e = rule_at(s, cnt, w->map.module, rel, &r);
			/* in a syscall, frame 0's pc follows the instruction and may be past its
			 * function's rows (rt_sigreturn): the instruction before has the same */
			if (!e && r.kind == KUNW_K_NONE && w->n == 0 && w->in_syscall)
				e = rule_at(s, cnt, w->map.module, rel - 1, &r);
		}
	}
	if (e) {
		w->stop = KUNW_STOP_FALLBACK;
		w->fb_reason = (__u8)-e;
		return false;
	}
	__u8 method = (r.flags & KUNW_RF_SFRAME) ? KUNW_M_SFRAME : KUNW_M_CFI;
	__u64 old_sp = w->regs[KUNW_R_RSP];
	int st;
	switch (r.kind) {
	case KUNW_K_CFA_SP:
	case KUNW_K_CFA_FP:
		st = kunw_step_rule(w, &r);
		break;
	case KUNW_K_END:
		st = S_END;
		break;
	case KUNW_K_PLT:
		method = KUNW_M_PLT;
		st = step_plt(w, pc, &r);
		break;
	case KUNW_K_PLT_EXPR:
		st = step_plt(w, pc, &r);
		break;
	case KUNW_K_SIGNAL:
		st = step_signal(w);
		break;
	case KUNW_K_NONE: {
		__u64 pair[2];
		method = KUNW_M_FP;
		st = step_fp(w, pair);
		/* frame 0 with nothing usable from the frame pointer (none, or a return address
		 * outside every mapping): user space tries the return address at the stack pointer
		 * (_init, _fini: nothing pushed yet) */
		if (w->n == 0 && st != S_END && (st != S_OK || (pair[1] != 0 && !pc_mapped(w, pair[1])))) {
			st = S_FB_FP;
		} else if (st == S_OK) {
			w->regs[KUNW_R_RSP] = w->regs[KUNW_R_RBP] + 16;
			w->regs[KUNW_R_RBP] = pair[0];
			w->regs[KUNW_R_RIP] = pair[1];
		}
		break;
	}
	default:
		w->stop = KUNW_STOP_FALLBACK;
		w->fb_reason = KUNW_FB_RULE;
		return false;
	}
	if (st == S_FB_FP) {
		w->stop = KUNW_STOP_FALLBACK;
		w->fb_reason = KUNW_FB_FP;
		return false;
	}
	if (r.flags & KUNW_RF_SIGNAL)
		method = KUNW_M_SIGNAL;
	emit(s, pc);
	if (st != S_OK) {
		w->stop = stop_of(st);
		return false;
	}
	/* The stack grows down: a caller's frame is above its callee's; the stack pointer may stay
	 * put for one step when the pc changes (__vfork), never twice in a row. */
	__u64 new_sp = w->regs[KUNW_R_RSP];
	if (new_sp < old_sp || (new_sp == old_sp && (w->sp_stayed || w->regs[KUNW_R_RIP] == pc))) {
		w->stop = KUNW_STOP_NO_PROGRESS;
		return false;
	}
	w->sp_stayed = new_sp == old_sp;
	w->is_call = !(r.flags & KUNW_RF_SIGNAL);
	w->found_by = method;
	return true;
}

static long walk_frame(__u32 i, void *ctx)
{
	(void)i;
	(void)ctx;
	struct kunw_scratch *s = scratch();
	if (!s)
		return 1;
	return frame(s, counters()) ? 0 : 1;
}

/* ---- the sample */

/* A u64 of the sampled registers (perf_event contexts are read 8 bytes at a time). */
#define CTX_REG(ctx, field) (*(const __u64 *)((const char *)&(ctx)->regs + __builtin_offsetof(struct pt_regs, field)))

/* The user registers of the sample, in DWARF order. @return false when there are none. */
static __always_inline bool user_regs(struct bpf_perf_event_data *ctx, struct kunw_scratch *s)
{
	struct kunw_walk *w = &s->w;
	struct pt_regs *pt = &w->pt;
	if ((CTX_REG(ctx, cs) & 3) == 3) {
		pt->ax = CTX_REG(ctx, ax);
		pt->dx = CTX_REG(ctx, dx);
		pt->cx = CTX_REG(ctx, cx);
		pt->bx = CTX_REG(ctx, bx);
		pt->si = CTX_REG(ctx, si);
		pt->di = CTX_REG(ctx, di);
		pt->bp = CTX_REG(ctx, bp);
		pt->sp = CTX_REG(ctx, sp);
		pt->r8 = CTX_REG(ctx, r8);
		pt->r9 = CTX_REG(ctx, r9);
		pt->r10 = CTX_REG(ctx, r10);
		pt->r11 = CTX_REG(ctx, r11);
		pt->r12 = CTX_REG(ctx, r12);
		pt->r13 = CTX_REG(ctx, r13);
		pt->r14 = CTX_REG(ctx, r14);
		pt->r15 = CTX_REG(ctx, r15);
		pt->ip = CTX_REG(ctx, ip);
		pt->csx = CTX_REG(ctx, cs);
	} else {
		/* in the kernel: the registers user space left at its entry */
		struct task_struct *task = bpf_get_current_task_btf();
		if (!BPF_CORE_READ(task, mm))
			return false; /* a kernel thread */
		struct pt_regs *u = (struct pt_regs *)bpf_task_pt_regs(task);
		if (bpf_probe_read_kernel(pt, sizeof(*pt), u))
			return false;
		s->rec.flags |= KUNW_F_KERNEL_MODE;
		/* a syscall (not a fault or an interrupt, whose pc is exact) left its return pc in
		 * rcx as well */
		if (pt->cx == pt->ip) {
			w->in_syscall = 1;
			s->rec.flags |= KUNW_F_IN_SYSCALL;
		}
	}
	if ((pt->csx & 0xffff) != 0x33)
		return false; /* not __USER_CS: a 32-bit task */
	__u64 *r = w->regs;
	r[0] = pt->ax;
	r[1] = pt->dx;
	r[2] = pt->cx;
	r[3] = pt->bx;
	r[4] = pt->si;
	r[5] = pt->di;
	r[6] = pt->bp;
	r[7] = pt->sp;
	r[8] = pt->r8;
	r[9] = pt->r9;
	r[10] = pt->r10;
	r[11] = pt->r11;
	r[12] = pt->r12;
	r[13] = pt->r13;
	r[14] = pt->r14;
	r[15] = pt->r15;
	r[16] = pt->ip;
	w->valid = (1u << KUNW_NREGS) - 1;
	return true;
}

/* Copies the stack from sp into the record at byte pos, page by page, up to kunw_copy_bytes or
 * the first page that cannot be read (the stack's end). @return bytes copied. */
static __always_inline __u32 copy_stack(struct kunw_scratch *s, __u32 pos, __u64 sp)
{
	__u32 want = kunw_copy_bytes, got = 0;
	if (want > KUNW_COPY_MAX)
		want = KUNW_COPY_MAX;
	for (int i = 0; i < KUNW_COPY_MAX / 4096 + 1; i++) {
		if (got >= want)
			break;
		__u64 addr = sp + got;
		__u32 chunk = 4096 - (__u32)(addr & 4095), at = pos + got;
		if (chunk > want - got)
			chunk = want - got;
		/* (the bounds checked on the registers the helper gets) */
		BARRIER_VAR(chunk);
		BARRIER_VAR(at);
		if (at > sizeof(s->data) - 4096 || chunk > 4096)
			break;
		if (bpf_probe_read_user((char *)s->data + at, chunk, (const void *)addr))
			break;
		got += chunk;
	}
	return got;
}

/* A sample of an event: its stack walked, the record written. kind says what the event is to
 * user space (KUNW_KIND_*): one body, two entry programs below, because what is attached to
 * an event is inherited with it (a thread's copy of a per-task event gets the program, not the
 * attach cookie). */
static __always_inline int sample(struct bpf_perf_event_data *ctx, __u32 kind)
{
	struct kunw_scratch *s = scratch();
	struct kunw_counters *cnt = counters();
	if (!s || !cnt)
		return 0;
	cnt->samples++;
	struct kunw_walk *w = &s->w;
	struct kunw_rec *rec = &s->rec;
	__u64 id = bpf_get_current_pid_tgid();
	__builtin_memset(rec, 0, sizeof(*rec));
	rec->pid = (__u32)(id >> 32);
	rec->tid = (__u32)id;
	rec->cpu = bpf_get_smp_processor_id();
	rec->time = bpf_ktime_get_ns();
	rec->period = ctx->sample_period;
	rec->kind = kind;
	long kb = bpf_get_stack(ctx, s->data, KUNW_MAX_KFRAMES * 8, 0);
	__u32 nk = kb > 0 ? (__u32)kb / 8 : 0;
	if (nk > KUNW_MAX_KFRAMES)
		nk = KUNW_MAX_KFRAMES;
	rec->nkernel = (__u16)nk;

	w->n = 0;
	w->nk = nk;
	w->pid = rec->pid;
	w->in_syscall = 0;
	w->is_call = 0;
	w->found_by = KUNW_M_REGS;
	w->sp_stayed = 0;
	w->stop = KUNW_STOP_END;
	w->fb_reason = KUNW_FB_NONE;
	w->map.start = w->map.end = 0;
	w->chunk_at = 0;
	__u32 copy = 0;
	if (!user_regs(ctx, s)) {
		w->stop = KUNW_STOP_NO_USER;
	} else {
		w->sp0 = w->regs[KUNW_R_RSP];
		/* frame 0's registers, kept for verify mode */
		__builtin_memcpy(rec->regs, w->regs, sizeof(rec->regs));
		rec->valid = w->valid;
		bpf_loop(kunw_max_frames + 1, walk_frame, NULL, 0);
		if (w->stop == KUNW_STOP_FALLBACK) {
			__builtin_memcpy(rec->regs, w->regs, sizeof(rec->regs));
			rec->valid = w->valid;
			rec->method = w->found_by;
			rec->flags |= KUNW_F_REGS | (w->is_call ? KUNW_F_IS_CALL : 0);
		} else if (kunw_verify) {
			rec->flags |= KUNW_F_REGS | KUNW_F_VERIFY;
		}
		if (rec->flags & KUNW_F_REGS) {
			__u32 words = nk + w->n;
			if (words > KUNW_MAX_KFRAMES + KUNW_MAX_FRAMES)
				words = KUNW_MAX_KFRAMES + KUNW_MAX_FRAMES;
			copy = copy_stack(s, words * 8, rec->regs[KUNW_R_RSP]);
		}
	}
	__u32 nu = w->n;
	if (nu > KUNW_MAX_FRAMES)
		nu = KUNW_MAX_FRAMES;
	rec->nuser = (__u16)nu;
	rec->stop = w->stop;
	rec->fb_reason = w->fb_reason;
	void *p = bpf_map_lookup_elem(&kunw_procs, &w->pid);
	__u32 zero = 0;
	struct kunw_map *h = p ? bpf_map_lookup_elem(p, &zero) : NULL;
	if (h)
		rec->gen = (__u32)h->end;
	rec->copy_len = copy;
	cnt->frames += nu;
	__u32 stop = w->stop, fb = w->fb_reason;
	BARRIER_VAR(stop);
	BARRIER_VAR(fb);
	if (stop < KUNW_STOP__COUNT)
		cnt->stops[stop]++;
	if (fb < KUNW_FB__COUNT)
		cnt->fallbacks[fb]++;
	__u64 size = sizeof(*rec) + (__u64)(nk + nu) * 8 + copy;
	if (size > sizeof(*rec) + sizeof(s->data))
		size = sizeof(*rec) + sizeof(s->data);
	rec->size = (__u32)size;
	/* Waking the reader costs more than a whole walk (~3.5 us of an interrupt per record on
	 * this VM): it is woken once the ring holds kunw_wakeup_bytes, and reads at its own pace
	 * otherwise (kunw_poll's timeout). */
	__u64 flags = bpf_ringbuf_query(&kunw_ring, BPF_RB_AVAIL_DATA) >= kunw_wakeup_bytes ? BPF_RB_FORCE_WAKEUP
	                                                                                   : BPF_RB_NO_WAKEUP;
	if (bpf_ringbuf_output(&kunw_ring, rec, size, flags))
		cnt->lost++;
	else
		cnt->records++;
	/* the sample is delivered here, not in perf's buffer */
	return 0;
}

/* A sampling event's sample (CPU samples). */
SEC("perf_event")
int kunw_sample(struct bpf_perf_event_data *ctx)
{
	return sample(ctx, KUNW_KIND_SAMPLE);
}

/* A switch-out (the context-switches software event of record --off-cpu): the stack the thread
 * blocks in, walked in its context at the switch. Loaded only when asked for (kunw_opts.switches):
 * the verifier checks the body again. */
SEC("perf_event")
int kunw_switch(struct bpf_perf_event_data *ctx)
{
	return sample(ctx, KUNW_KIND_SWITCH);
}

/* waits timed at the sched_switch tracepoint (record --off-cpu): its own file */
#include "kunw_wait.bpf.h"
