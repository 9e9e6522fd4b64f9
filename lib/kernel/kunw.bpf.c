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
const volatile __u32 kunw_timing = 0; /* stage timing (a diagnostic; off: compiled away by the verifier) */
const volatile __u32 kunw_slot_mask = 4095; /* a module value's slot bits (kunw_map.module) */
const volatile __u32 kunw_event_ids = 1; /* records say their event (kunw_rec.event_id); 0 where user
                                          * space knows it (one sampling attribute) */

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

/* A young process's mappings (up to KUNW_YOUNG_MAPS) at pid & (KUNW_YOUNG_SLOTS - 1): an array
 * user space writes in place (mapped) under each slot's sequence count, so that a new process's
 * mappings reach the walk as soon as they are written (a swap into kunw_procs waits for an RCU
 * grace period; a hash's element replaced may be reused at once by the next update, under a walk
 * still reading it). A walk takes the store that holds the generation kunw_gens says (or,
 * without it, the newer of the two), and hands over when a slot's count says it was written
 * under its reads. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, KUNW_YOUNG_SLOTS);
	__type(key, __u32);
	__type(value, struct kunw_young);
} kunw_young SEC(".maps");

/* Each process's generation of mappings at pid & (KUNW_GENS - 1): pid << 32 | gen, 0: none.
 * User space writes it (mapped) once the process's mappings are swapped in. A walk whose
 * mappings the CPU's mcache remembers (by pid and generation) then looks up neither the hash of
 * maps nor the mappings' header: one load of a line 8 processes share, where the hash and the
 * header were 3 dependent loads, mostly cache misses, 350-500 ns of a sample here. A pid the
 * slot does not hold (another in it, or none yet) is looked up as before. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, KUNW_GENS);
	__type(key, __u32);
	__type(value, __u64);
} kunw_gens SEC(".maps");

/* one module's table (see kunw_abi.h); BPF_F_INNER_MAP: each is sized to its module */
struct kunw_table_map {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_INNER_MAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64[KUNW_LINE_WORDS]); /* struct kunw_line (its BTF as an array: a struct used only
	                                        * through pointers is a forward declaration there) */
};

/* by slot (an array: the lookup is a load, no hash) */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__array(values, struct kunw_table_map);
} kunw_modules SEC(".maps");

#define CHUNK 16384     /* stack bytes read ahead: most stacks in one read */
#define BIG_FRAME 256  /* a frame at least this large (CFA - sp) reads its own slots alone,
                        * unless the thread's stack end is known to be within CHUNK */
#define MCACHE 8       /* mappings remembered per CPU, by process and generation */
#define TOPS 64        /* threads' stack ends remembered per CPU */

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
	__u8 other_stack;    /* a signal frame moved the walk to another stack */
	__u8 pad;
	__u32 gen;           /* the generation of the process's mappings the walk uses */
	__u32 nmaps;         /* their number */
	__u64 top;           /* where the thread's stack ended when last walked whole (0: unknown) */
	__u64 reach;         /* the end of the highest stack slot this walk read */
	__u64 chunk_at, chunk_len; /* the stack's bytes [chunk_at, chunk_at + chunk_len) are in chunk */
	/* (the large parts last: the fields above share a few cache lines) */
	__u64 sig[KUNW_NREGS]; /* a signal frame's registers, or a frame's 64-byte window, as read */
	struct pt_regs pt;   /* the user registers of a sample taken in the kernel */
	__u64 chunk[CHUNK / 8];
};

/* A rule and the module addresses [lo, hi) where it holds (the row's extent). */
struct kunw_cache_ent {
	__u32 module;        /* 0: empty (ids start at 1) */
	__u32 lo, hi;
	__u32 pad;
	struct kunw_rule rule;
};

struct kunw_mcache_ent {
	__u32 pid, gen;
	struct kunw_map map;
};

struct kunw_top {
	__u32 tid, pid;
	__u64 top;
};

struct kunw_scratch {
	/* what every sample touches (within the reach of an instruction's 16-bit offset): the
	 * counters first (user space reads them at the value's start, kunw_counters), on the
	 * lines the sample's other state shares, not in a map of their own */
	struct kunw_counters cnt;
	__u64 unwoken;       /* record bytes this CPU wrote since it last woke the reader */
	__u32 mnext, pad;
	struct kunw_mcache_ent mcache[MCACHE];
	struct kunw_top tops[TOPS];
	__u64 regs0[KUNW_NREGS]; /* (verify mode) frame 0's registers */
	struct kunw_walk w;
	/* the record: its header, then (contiguous: written to the ring in one piece) kernel[nk],
	 * user[n], registers and stack copy; 4 KiB of slack for the page-wise copy's bound */
	struct kunw_rec rec;
	__u64 data[KUNW_MAX_KFRAMES + KUNW_MAX_FRAMES + KUNW_NREGS + KUNW_COPY_MAX / 8 + 512];
	struct kunw_cache_ent cache[KUNW_CACHE_SLOTS];
};
_Static_assert(__builtin_offsetof(struct kunw_scratch, data) ==
                   __builtin_offsetof(struct kunw_scratch, rec) + sizeof(struct kunw_rec),
               "a record is its header and the data after it");

/* (mappable: user space reads each CPU's counters in place, kunw_counters, not a copy of the
 * whole value per CPU) */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* set to the number of possible CPUs */
	__type(key, __u32);
	__type(value, struct kunw_scratch);
} kunw_scratch SEC(".maps");


struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct kunw_timing);
} kunw_times SEC(".maps");

/* The walk's context, on the sample's stack: what every frame uses, looked up once per sample. */
struct walk_ctx {
	struct kunw_scratch *s;
	struct kunw_counters *cnt;
	void *procs;         /* the process's mappings (an inner map of kunw_procs), or */
	struct kunw_young *young; /* ... its kunw_young slot */
	__u64 young_seq;     /* the slot's sequence count when looked up (even) */
	__u32 looked;        /* procs looked up (else at the first mapping the mcache lacks) */
};

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

/* ---- stage timing (kunw_timing): a stage's start, and its end added to its counters */
static __always_inline __u64 t_start(void)
{
	return kunw_timing ? bpf_ktime_get_ns() : 0;
}

static __always_inline void t_stop(__u32 stage, __u64 t0, __u64 bytes)
{
	if (!kunw_timing)
		return;
	__u64 t1 = bpf_ktime_get_ns();
	__u32 zero = 0;
	struct kunw_timing *t = bpf_map_lookup_elem(&kunw_times, &zero);
	if (!t || stage >= KUNW_T__COUNT)
		return;
	t->ns[stage] += t1 - t0;
	t->n[stage]++;
	t->bytes[stage] += bytes;
}

/* bpf_probe_read_user, timed as a read of the walk */
static __always_inline long read_user(void *dst, __u32 size, __u64 addr)
{
	__u64 t0 = t_start();
	long e = bpf_probe_read_user(dst, size, (const void *)addr);
	t_stop(KUNW_T_READ, t0, size);
	return e;
}

static __always_inline bool read_u64(__u64 addr, __u64 *v)
{
	return read_user(v, sizeof(*v), addr) == 0;
}

/* ---- mappings */

/* The mapping of pc among the sorted intervals of process pid's generation gen (its inner map
 * of kunw_procs, looked up here: a global function, checked once by the verifier, cannot be
 * handed a map; their number from its header), copied to out. @return 0 or -KUNW_FB_*. */
__noinline int kunw_find_map(__u32 pid, __u32 gen, __u64 pc, struct kunw_map *out)
{
	__u32 zero = 0;
	struct kunw_map *m;
	void *procs = bpf_map_lookup_elem(&kunw_procs, &pid);
	struct kunw_map *h = procs ? bpf_map_lookup_elem(procs, &zero) : NULL;
	/* (swapped since the walk looked: another generation) */
	if (!out || !h || (__u32)h->end != gen)
		return -KUNW_FB_NO_PROC;
	__u32 k, lo = 1, hi = (__u32)h->start + 1;
	/* entries 1..n; lo: the first starting above pc */
	for (int i = 0; i < KUNW_MAP_STEPS && lo < hi; i++) {
		k = lo + ((hi - lo) >> 1);
		m = bpf_map_lookup_elem(procs, &k);
		if (!m)
			return -KUNW_FB_TABLE;
		if (m->start <= pc)
			lo = k + 1;
		else
			hi = k;
	}
	k = lo - 1;
	if (lo < hi || k == 0 || !(m = bpf_map_lookup_elem(procs, &k)))
		return lo < hi ? -KUNW_FB_TABLE : -KUNW_FB_NO_MAP;
	if (pc >= m->end)
		return -KUNW_FB_NO_MAP;
	*out = *m;
	return 0;
}

/* The slot's sequence count, read before what it guards (x86: loads are not reordered with
 * older loads; the barrier keeps the compiler from moving them). */
static __always_inline __u64 young_seq(struct kunw_young *v)
{
	__u64 q = *(volatile __u64 *)&v->seq;
	asm volatile("" ::: "memory");
	return q;
}

/* The mapping of pc among a young process's n sorted intervals (v->m[1..n], n <= 31), copied to
 * out; -KUNW_FB_NO_PROC when the slot was written meanwhile (its count no longer seq). A global
 * function: the verifier checks it once, not at each of its callers' states (as a static one,
 * with kunw_find_map, it was 60% of the instructions the verifier went through: 0.45 s of every
 * start of a recording).
 * @return 0 or -KUNW_FB_*. */
__noinline int kunw_find_young(struct kunw_young *v, __u32 n, __u64 seq, __u64 pc, struct kunw_map *out)
{
	if (!v || !out)
		return -KUNW_FB_NO_PROC;
	__u32 k, lo = 1, hi = (n > KUNW_YOUNG_MAPS ? KUNW_YOUNG_MAPS : n) + 1;
	/* entries 1..n; lo: the first starting above pc */
	for (int i = 0; i < 5 && lo < hi; i++) {
		k = lo + ((hi - lo) >> 1);
		if (v->m[k & KUNW_YOUNG_MAPS].start <= pc)
			lo = k + 1;
		else
			hi = k;
	}
	k = (lo - 1) & KUNW_YOUNG_MAPS;
	int err = lo < hi ? -KUNW_FB_TABLE : k == 0 ? -KUNW_FB_NO_MAP : 0;
	if (!err) {
		*out = v->m[k];
		if (pc >= out->end)
			err = -KUNW_FB_NO_MAP;
	}
	asm volatile("" ::: "memory");
	if (*(volatile __u64 *)&v->seq != seq)
		return -KUNW_FB_NO_PROC;
	return err;
}

/* The young slot of the walk's process, if it holds generation gen (any, when gen is 0) and is
 * not being written: its count (even), else 1. */
static __always_inline __u64 young_of(struct kunw_young *v, __u32 pid, __u32 gen)
{
	if (!v)
		return 1;
	__u64 q = young_seq(v);
	if ((q & 1) || v->m[0].module != pid || !(__u32)v->m[0].end || (gen && (__u32)v->m[0].end != gen))
		return 1;
	return q;
}

/* The process's mappings looked up, the walk's generation known from kunw_gens: in kunw_young
 * or kunw_procs, whichever holds that generation (else they were swapped since: the walk hands
 * over). @return 0 or -KUNW_FB_NO_PROC. */
static __noinline int procs_of(struct walk_ctx *c)
{
	__u32 zero = 0;
	struct kunw_walk *w = &c->s->w;
	c->looked = 1;
	__u32 yk = w->pid & (KUNW_YOUNG_SLOTS - 1);
	c->young = bpf_map_lookup_elem(&kunw_young, &yk);
	__u64 q = young_of(c->young, w->pid, w->gen);
	if (c->young && !(q & 1)) {
		w->nmaps = (__u32)c->young->m[0].start;
		c->young_seq = q;
		c->cnt->young++;
		return 0;
	}
	c->young = NULL;
	c->procs = bpf_map_lookup_elem(&kunw_procs, &w->pid);
	struct kunw_map *h = c->procs ? bpf_map_lookup_elem(c->procs, &zero) : NULL;
	if (!h || (__u32)h->end != w->gen) {
		c->procs = NULL;
		return -KUNW_FB_NO_PROC;
	}
	w->nmaps = (__u32)h->start;
	return 0;
}

/* The mapping of pc: from the per-CPU mappings of the process's generation the walk uses (a
 * walk crosses a few modules, the same from sample to sample), else searched and remembered. */
static __always_inline int lookup_map(struct walk_ctx *c, __u64 pc, struct kunw_map *out)
{
	struct kunw_scratch *s = c->s;
	struct kunw_walk *w = &s->w;
	for (int i = 0; i < MCACHE; i++) {
		struct kunw_mcache_ent *e = &s->mcache[i];
		if (e->pid == w->pid && e->gen == w->gen && pc >= e->map.start && pc < e->map.end) {
			*out = e->map;
			return 0;
		}
	}
	__u64 t0 = t_start();
	int err = c->looked ? 0 : procs_of(c);
	if (!err)
		err = c->young ? kunw_find_young(c->young, w->nmaps, c->young_seq, pc, out) :
		      c->procs ? kunw_find_map(w->pid, w->gen, pc, out) : -KUNW_FB_NO_PROC;
	t_stop(KUNW_T_MAP, t0, 0);
	if (err)
		return err;
	struct kunw_mcache_ent *e = &s->mcache[s->mnext++ & (MCACHE - 1)];
	e->pid = w->pid;
	e->gen = w->gen;
	e->map = *out;
	return 0;
}

/* Makes the walk's current mapping the one of pc. @return 0 or -KUNW_FB_*. */
static __always_inline int enter_map(struct walk_ctx *c, __u64 pc)
{
	struct kunw_walk *w = &c->s->w;
	if (pc >= w->map.start && pc < w->map.end)
		return 0;
	return lookup_map(c, pc, &w->map);
}

static __always_inline bool pc_mapped(struct walk_ctx *c, __u64 pc)
{
	struct kunw_walk *w = &c->s->w;
	struct kunw_map m;
	return (pc >= w->map.start && pc < w->map.end) || lookup_map(c, pc, &m) == 0;
}

/* ---- rows */

static __always_inline struct kunw_line *line(void *t, __u32 i)
{
	return bpf_map_lookup_elem(t, &i);
}

/* The rule in force at address rel of a module, searched in its table (kunw_abi.h): the block
 * index narrows the rows to those of 256 bytes of code (at most 257: pcs are distinct), then a
 * binary search of KUNW_SEARCH_STEPS, a line of eight rows fetched only when a probe leaves the
 * last one. out gets the rule and the module addresses [lo, hi) where it holds, for the cache
 * (the row's extent as far as its line tells, else the address alone); out->module is the
 * caller's. A global function (checked once). @return 0, or -KUNW_FB_*. */
__noinline int kunw_search_rule(__u32 module, __u64 rel, struct kunw_cache_ent *out)
{
	__u32 slot = module & kunw_slot_mask;
	void *t = module == KUNW_MODULE_NONE ? NULL : bpf_map_lookup_elem(&kunw_modules, &slot);
	if (!t)
		return -KUNW_FB_NO_TABLE;
	if (!out)
		return -KUNW_FB_TABLE;
	__builtin_memset(&out->rule, 0, sizeof(out->rule)); /* KUNW_K_NONE */
	/* (rel < 2^32: the caller's) */
	out->lo = (__u32)rel;
	out->hi = (__u32)rel + 1;
	struct kunw_line *h = line(t, 0), *x, *cur = NULL;
	if (!h)
		return -KUNW_FB_TABLE;
	/* a slot loaded again since the mappings were: not this module's table */
	if ((__u32)h->w[3] != module)
		return -KUNW_FB_NO_TABLE;
	__u32 base = (__u32)h->w[0], span = (__u32)(h->w[0] >> 32);
	__u32 rules_at = (__u32)h->w[1], rows_at = (__u32)(h->w[1] >> 32);
	__u32 index_at = (__u32)h->w[2], nrows = (__u32)(h->w[2] >> 32);
	if (rel < base || rel - base >= span)
		return 0;
	__u32 off = (__u32)(rel - base), b = off >> KUNW_BLOCK_SHIFT, i = b % KUNW_INDEX_PER_LINE;
	if (!(x = line(t, index_at + b / KUNW_INDEX_PER_LINE)))
		return -KUNW_FB_TABLE;
	/* (the verifier does not bound a remainder: the bound said again) */
	BARRIER_VAR(i);
	if (i >= KUNW_INDEX_PER_LINE)
		return -KUNW_FB_TABLE;
	__u32 lo = (__u32)(x->w[i >> 1] >> ((i & 1) * 32));
	__u32 hi = (__u32)(x->w[(i + 1) >> 1] >> (((i + 1) & 1) * 32)), have = 0xffffffff;
	/* the row in force is in [block[b] - 1, block[b + 1] - 1]: pc(lo) <= off < pc(hi) */
	lo = lo ? lo - 1 : 0;
	if (hi <= lo)
		hi = lo + 1;
	/* a binary search, a line fetched only when the probe leaves the last one */
	for (int p = 0; p < KUNW_SEARCH_STEPS && hi - lo > 1; p++) {
		__u32 mid = lo + ((hi - lo) >> 1);
		if (!cur || (mid >> 3) != have) {
			if (!(cur = line(t, rows_at + (mid >> 3))))
				return -KUNW_FB_TABLE;
			have = mid >> 3;
		}
		if ((__u32)cur->w[mid & 7] <= off)
			lo = mid;
		else
			hi = mid;
	}
	if (hi - lo > 1 || lo >= nrows)
		return -KUNW_FB_TABLE;
	if (!cur || have != lo >> 3)
		cur = line(t, rows_at + (lo >> 3));
	if (!cur)
		return -KUNW_FB_TABLE;
	__u64 row = cur->w[lo & 7];
	if ((__u32)row > off)
		return 0;
	__u32 ri = (__u32)(row >> 32);
	struct kunw_line *r = line(t, rules_at + (ri >> 2));
	if (!r)
		return -KUNW_FB_TABLE;
	__u32 at = (ri & 3) * 2;
	__u64 rw[2] = { r->w[at & 7], r->w[(at + 1) & 7] };
	__builtin_memcpy(&out->rule, rw, sizeof(out->rule));
	/* the row holds from its pc to the next row's; that one is known in this line, else only
	 * the address asked for is vouched for */
	out->lo = base + (__u32)row;
	if ((lo & 7) != 7 && lo + 1 < nrows)
		out->hi = base + (__u32)cur->w[(lo + 1) & 7];
	return 0;
}

/* The per-CPU rule cache's entry for module address r32 of module (its slot: the 16-byte granule
 * of code and the module), and whether it holds the row there. */
static __always_inline struct kunw_cache_ent *cache_ent(struct kunw_scratch *s, __u32 module, __u32 r32)
{
	__u32 slot = ((r32 >> 4) * 2654435761u ^ module * 40503u) & (KUNW_CACHE_SLOTS - 1);
	return &s->cache[slot];
}

static __always_inline bool cache_holds(const struct kunw_cache_ent *e, __u32 module, __u32 r32)
{
	return e->module == module && r32 >= e->lo && r32 < e->hi;
}

/* The rule at module address rel of module, through the per-CPU cache of rows: an entry holds
 * a row's rule and extent, in the slot of a 16-byte granule of code (return addresses repeat
 * within a stack and across samples, and frame 0's pcs fall in the same hot rows); module ids
 * are never reused, so an entry never lies. @return 0, or -KUNW_FB_*. */
static __always_inline int rule_at(struct walk_ctx *c, __u32 module, __u64 rel, struct kunw_rule *out)
{
	if (rel >> 32) {
		__builtin_memset(out, 0, sizeof(*out));
		return 0;
	}
	__u32 r32 = (__u32)rel;
	struct kunw_cache_ent *e = cache_ent(c->s, module, r32);
	if (cache_holds(e, module, r32)) {
		*out = e->rule;
		c->cnt->cache_hits++;
		return 0;
	}
	c->cnt->cache_misses++;
	e->module = 0;
	__u64 t0 = t_start();
	int err = kunw_search_rule(module, rel, e);
	t_stop(KUNW_T_RULE, t0, 0);
	if (err)
		return err;
	e->module = module;
	*out = e->rule;
	return 0;
}

/* ---- steps (lib/unwind/unwind.c: step_rule, step_fp, step_plt, the signal frame) */

/* Reads the stack ahead into the chunk from lo, for a frame whose slots lie in [lo, end): up to
 * CHUNK bytes, to where the thread's stack ended when last walked whole if that is known (one
 * read for the whole stack), else to the end of end's page (mapped: the frame's slots are
 * there); a frame of BIG_FRAME bytes or more with its stack's end not in reach reads its window
 * alone (a read of a few cache lines costs far less than one of pages). @return whether
 * [lo, end) is in the chunk. */
static __always_inline bool chunk_fill(struct kunw_walk *w, __u64 lo, __u64 end, __u64 frame)
{
	__u64 len, top = w->top;
	if (top >= end && top - lo <= CHUNK) {
		len = top - lo;
	} else if (frame >= BIG_FRAME) {
		return false;
	} else if (top >= end) {
		len = CHUNK;
	} else {
		len = (((end - 1) | 4095) + 1) - lo;
		if (len > CHUNK)
			len = CHUNK;
	}
	BARRIER_VAR(len);
	if (len > CHUNK || len < end - lo)
		return false;
	if (read_user(w->chunk, (__u32)len, lo)) {
		/* a thread's stack end remembered wrongly (its tid reused): read to the page's end */
		__u64 pe = ((end - 1) | 4095) + 1;
		len = pe - lo;
		BARRIER_VAR(len);
		if (top < end || len > CHUNK || len < end - lo || read_user(w->chunk, (__u32)len, lo)) {
			w->chunk_len = 0;
			return false;
		}
	}
	w->chunk_at = lo;
	w->chunk_len = len;
	return true;
}

/* CFA from rsp or rbp, return address, rbp and the callee-saved registers from the stack. A
 * save slot below the stack pointer was popped already (an epilogue whose CFI keeps the old
 * rule): the register holds the value. When every slot lies in the 64 bytes below the CFA
 * (KUNW_RF_WINDOW: nearly every rule), they are taken from the bytes read ahead (chunk_fill) or
 * from one read of those 64 bytes, else read one by one. A global function (checked once); which
 * slots a rule has comes from the table (r->slots), so the verifier does not follow each
 * combination apart. */
#define SLOTS (2 + KUNW_NSAVED) /* return address, rbp, rbx, r12..r15 */

/* A CFA rule's step with its slots in win, the 64 bytes below the CFA (KUNW_RF_WINDOW): the
 * caller's registers from them; a save slot below the stack pointer sp was popped already (the
 * register holds the value). */
static __always_inline void step_window(struct kunw_walk *w, const struct kunw_rule *r, const __u64 *win, __u64 cfa,
					__u64 sp)
{
#define WIN(off) win[((__u64)((off) + KUNW_WINDOW) >> 3) & 7]
	__u32 has = r->slots;
	__u64 ra = WIN(r->ra_off);
	if ((has & 2) && cfa + r->bp_off >= sp) {
		w->regs[KUNW_R_RBP] = WIN(r->bp_off);
		w->valid |= BIT(KUNW_R_RBP);
	} else if (r->flags & KUNW_RF_BP_UNDEF) {
		w->valid &= ~BIT(KUNW_R_RBP);
	}
	if (has & 0x7c) {
		__s64 o = 8 * (__s64)r->saved[0];
		if ((has & 4) && cfa + o >= sp) {
			w->regs[KUNW_R_RBX] = WIN(o);
			w->valid |= BIT(KUNW_R_RBX);
		}
		for (int i = 1; i < KUNW_NSAVED; i++) {
			o = 8 * (__s64)r->saved[i];
			if (((has >> (2 + i)) & 1) && cfa + o >= sp) {
				w->regs[KUNW_R_R12 + i - 1] = WIN(o);
				w->valid |= BIT(KUNW_R_R12 + i - 1);
			}
		}
	}
#undef WIN
	w->regs[KUNW_R_RSP] = cfa;
	w->regs[KUNW_R_RIP] = ra;
}

/* The 64 bytes below cfa (a rule's window) in the bytes read ahead, or NULL when those do not
 * hold them. */
static __always_inline __u64 *chunk_window(struct kunw_walk *w, __u64 cfa)
{
	__u64 lo = cfa - KUNW_WINDOW, at = w->chunk_at;
	if (!w->chunk_len || lo < at || cfa > at + w->chunk_len || ((lo - at) & 7))
		return NULL;
	__u64 first = (lo - at) >> 3;
	BARRIER_VAR(first);
	if (first > CHUNK / 8 - KUNW_WINDOW / 8)
		return NULL;
	return &w->chunk[first];
}

__noinline int kunw_step_rule(struct kunw_walk *w, const struct kunw_rule *r)
{
	if (!w || !r)
		return S_BAD_CFI;
	__u64 sp = w->regs[KUNW_R_RSP], base;
	if (r->kind == KUNW_K_CFA_SP) {
		base = sp;
	} else {
		/* rbp, or another register (KUNW_K_CFA_REG + r), if the walk knows its value */
		__u32 reg = r->kind == KUNW_K_CFA_FP ? KUNW_R_RBP : (__u32)r->kind - KUNW_K_CFA_REG;
		if (reg >= KUNW_K_CFA_REG_END - KUNW_K_CFA_REG || !(w->valid & BIT(reg)))
			return S_BAD_CFI;
		base = w->regs[reg & 15];
	}
	__u64 cfa = base + (__s64)r->cfa_off;
	__u32 has = r->slots;
	if (r->flags & KUNW_RF_WINDOW) {
		/* the window: 8 words, word k at cfa - 64 + 8 k, so a slot at cfa + off is word
		 * (off + 64) / 8 */
		__u64 lo = cfa - KUNW_WINDOW, *win = chunk_window(w, cfa);
		if (!win && chunk_fill(w, lo, cfa, cfa - sp))
			win = chunk_window(w, cfa);
		if (!win && !read_user(w->sig, KUNW_WINDOW, lo))
			win = w->sig;
		if (win) {
			step_window(w, r, win, cfa, sp);
			return S_OK;
		}
	}
	/* slot by slot, all read before any register changes */
	__s64 off[SLOTS] = { r->ra_off, r->bp_off };
	for (int i = 0; i < KUNW_NSAVED; i++)
		off[2 + i] = 8 * (__s64)r->saved[i];
	__u64 val[SLOTS] = { 0 };
	for (int i = 0; i < SLOTS; i++) {
		__u64 at = cfa + off[i];
		if (((has >> i) & 1) && (i == 0 || at >= sp) && !read_u64(at, &val[i]))
			return S_MEM;
	}
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
	if (read_user(pair, 2 * sizeof(__u64), bp))
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
	if (read_user(w->sig, sizeof(w->sig), w->regs[KUNW_R_RSP] + 40))
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
	/* (the interrupted stack may be another one: an alternate signal stack's handler) */
	w->other_stack = 1;
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

/* The walk holds as many frames as it may. */
static __always_inline bool frames_full(const struct kunw_walk *w)
{
	return w->n >= kunw_max_frames || w->n >= KUNW_MAX_FRAMES || w->nk + w->n >= KUNW_MAX_KFRAMES + KUNW_MAX_FRAMES;
}

/* The common frame, in fewer steps than frame() takes: a return address (not frame 0, not
 * after a signal frame) in the last pc's mapping, its row in the CPU's rule cache, a CFA rule
 * whose slots lie in the 64 bytes below a CFA above the stack pointer, and those bytes read
 * ahead already. Anything else (the frame limit too) is frame()'s, with nothing changed here.
 * @return whether the frame was walked. */
static __always_inline bool fast_frame(struct kunw_scratch *s)
{
	struct kunw_walk *w = &s->w;
	__u64 pc = w->regs[KUNW_R_RIP];
	if (!w->is_call || pc < w->map.start || pc >= w->map.end || frames_full(w))
		return false;
	__u32 module = w->map.module;
	__u64 rel = pc - 1 - w->map.start + w->map.rel_start;
	if (module == KUNW_MODULE_ANON || (rel >> 32))
		return false;
	__u32 r32 = (__u32)rel;
	struct kunw_cache_ent *e = cache_ent(s, module, r32);
	if (!cache_holds(e, module, r32))
		return false;
	struct kunw_rule r = e->rule;
	if ((r.flags & (KUNW_RF_WINDOW | KUNW_RF_SIGNAL)) != KUNW_RF_WINDOW)
		return false;
	__u64 sp = w->regs[KUNW_R_RSP], base;
	if (r.kind == KUNW_K_CFA_SP)
		base = sp;
	else if (r.kind == KUNW_K_CFA_FP && (w->valid & BIT(KUNW_R_RBP)))
		base = w->regs[KUNW_R_RBP];
	else
		return false;
	__u64 cfa = base + (__s64)r.cfa_off, *win = cfa > sp ? chunk_window(w, cfa) : NULL;
	if (!win)
		return false;
	s->cnt.cache_hits++;
	emit(s, pc);
	step_window(w, &r, win, cfa, sp);
	if (cfa > w->reach)
		w->reach = cfa;
	w->sp_stayed = 0;
	w->found_by = (r.flags & KUNW_RF_SFRAME) ? KUNW_M_SFRAME : KUNW_M_CFI;
	return true;
}

#define FAST_BATCH 32 /* frames a call of kunw_fast_frames walks at most */

/* The common frames (fast_frame) in a row, up to FAST_BATCH: a global function, so that the
 * verifier checks this loop once, not again with each pass over the walk's callback.
 * @return how many were walked. */
__noinline int kunw_fast_frames(struct kunw_scratch *s)
{
	if (!s)
		return 0;
	int n = 0;
	for (int i = 0; i < FAST_BATCH; i++) {
		if (!fast_frame(s))
			break;
		n++;
	}
	return n;
}

/* Walks one frame. @return true to go on. */
static __always_inline bool frame(struct walk_ctx *c)
{
	struct kunw_scratch *s = c->s;
	struct kunw_walk *w = &s->w;
	__u64 pc = w->regs[KUNW_R_RIP];
	if (pc == 0 && w->n > 0) {
		w->stop = KUNW_STOP_END;
		return false;
	}
	if (frames_full(w)) {
		w->stop = KUNW_STOP_MAX_FRAMES;
		return false;
	}
	int e = enter_map(c, pc);
	struct kunw_rule r;
	if (!e) {
		/* every frame but the first and those a signal interrupted: the pc is a return
		 * address, and the call is the instruction before it */
		__u64 rel = (w->is_call ? pc - 1 : pc) - w->map.start + w->map.rel_start;
		if (w->map.module == KUNW_MODULE_ANON) {
			__builtin_memset(&r, 0, sizeof(r));
		} else {
			e = rule_at(c, w->map.module, rel, &r);
			/* in a syscall, frame 0's pc follows the instruction and may be past its
			 * function's rows (rt_sigreturn): the instruction before has the same */
			if (!e && r.kind == KUNW_K_NONE && w->n == 0 && w->in_syscall)
				e = rule_at(c, w->map.module, rel - 1, &r);
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
		if (w->n == 0 && st != S_END && (st != S_OK || (pair[1] != 0 && !pc_mapped(c, pair[1])))) {
			st = S_FB_FP;
		} else if (st == S_OK) {
			w->regs[KUNW_R_RSP] = w->regs[KUNW_R_RBP] + 16;
			w->regs[KUNW_R_RBP] = pair[0];
			w->regs[KUNW_R_RIP] = pair[1];
		}
		break;
	}
	default:
		if (r.kind >= KUNW_K_CFA_REG && r.kind < KUNW_K_CFA_REG_END) {
			st = kunw_step_rule(w, &r);
			break;
		}
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
	/* every slot a step reads lies below the caller's stack pointer (a signal frame aside) */
	if (new_sp > w->reach)
		w->reach = new_sp;
	w->sp_stayed = new_sp == old_sp;
	w->is_call = !(r.flags & KUNW_RF_SIGNAL);
	w->found_by = method;
	return true;
}

static long walk_frame(__u32 i, void *ctx)
{
	(void)i;
	if (kunw_fast_frames(((struct walk_ctx *)ctx)->s))
		return 0;
	return frame(ctx) ? 0 : 1;
}

/* ---- the sample */

/* A u64 of the sampled registers (perf_event contexts are read 8 bytes at a time). */
#define CTX_REG(ctx, field) (*(const __u64 *)((const char *)&(ctx)->regs + __builtin_offsetof(struct pt_regs, field)))

/* The registers user space left at task's entry into the kernel (task: current), in DWARF
 * order. @return false when there are none (a kernel thread, a 32-bit task). */
static __always_inline bool task_user_regs(struct task_struct *task, struct kunw_scratch *s)
{
	struct kunw_walk *w = &s->w;
	__u64 *r = w->regs;
	struct pt_regs *pt = &w->pt;
	/* the task is in the kernel whatever follows: a kernel thread's (or the idle task's)
	 * sample is a kernel sample at its kernel pc, as perf writes it, not a user one at 0 */
	s->rec.flags |= KUNW_F_KERNEL_MODE;
	if (!BPF_CORE_READ(task, mm))
		return false; /* a kernel thread */
	struct pt_regs *u = (struct pt_regs *)bpf_task_pt_regs(task);
	if (bpf_probe_read_kernel(pt, sizeof(*pt), u))
		return false;
	/* a syscall (not a fault or an interrupt, whose pc is exact) left its return pc in rcx as
	 * well */
	if (pt->cx == pt->ip) {
		w->in_syscall = 1;
		s->rec.flags |= KUNW_F_IN_SYSCALL;
	}
	if ((pt->csx & 0xffff) != 0x33)
		return false; /* not __USER_CS: a 32-bit task */
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


/* The user registers of the sample, in DWARF order. @return false when there are none. */
static __always_inline bool user_regs(struct bpf_perf_event_data *ctx, struct kunw_scratch *s, bool user_mode)
{
	struct kunw_walk *w = &s->w;
	__u64 *r = w->regs;
	if (user_mode) {
		r[0] = CTX_REG(ctx, ax);
		r[1] = CTX_REG(ctx, dx);
		r[2] = CTX_REG(ctx, cx);
		r[3] = CTX_REG(ctx, bx);
		r[4] = CTX_REG(ctx, si);
		r[5] = CTX_REG(ctx, di);
		r[6] = CTX_REG(ctx, bp);
		r[7] = CTX_REG(ctx, sp);
		r[8] = CTX_REG(ctx, r8);
		r[9] = CTX_REG(ctx, r9);
		r[10] = CTX_REG(ctx, r10);
		r[11] = CTX_REG(ctx, r11);
		r[12] = CTX_REG(ctx, r12);
		r[13] = CTX_REG(ctx, r13);
		r[14] = CTX_REG(ctx, r14);
		r[15] = CTX_REG(ctx, r15);
		r[16] = CTX_REG(ctx, ip);
		w->valid = (1u << KUNW_NREGS) - 1;
		/* not __USER_CS: a 32-bit task */
		return (CTX_REG(ctx, cs) & 0xffff) == 0x33;
	}
	/* in the kernel: the registers user space left at its entry */
	return task_user_regs(bpf_get_current_task_btf(), s);
}

/* Copies the stack from sp into the record at byte pos, up to kunw_copy_bytes. The main
 * thread's stack is mapped from sp up to the page of its initial stack pointer (mm->start_stack:
 * every frame lies below it), which one read copies; otherwise, or when that read fails (sp not
 * on that stack), page by page up to the first page that cannot be read (the stack's end).
 * @return bytes copied. */
static __always_inline __u32 copy_stack(struct kunw_scratch *s, __u32 pos, __u64 sp, bool whole)
{
	__u32 want = kunw_copy_bytes, got = 0;
	if (want > KUNW_COPY_MAX)
		want = KUNW_COPY_MAX;
	if (!whole && s->rec.pid == s->rec.tid) {
		struct task_struct *task = bpf_get_current_task_btf();
		__u64 end = (BPF_CORE_READ(task, mm, start_stack) | 4095) + 1;
		if (sp < end && end - sp < want) {
			__u32 len = (__u32)(end - sp), at = pos;
			BARRIER_VAR(len);
			BARRIER_VAR(at);
			if (at <= sizeof(s->data) - KUNW_COPY_MAX && len <= KUNW_COPY_MAX &&
			    !bpf_probe_read_user((char *)s->data + at, len, (const void *)sp))
				return len;
		}
	}
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

/* The walk from frame 0's registers (have_regs: in s->w.regs, from user_regs or
 * task_user_regs) and the record written to the ring: s->rec's header filled in but for the
 * walk's fields, its nk kernel frames in s->data. The body every entry program shares. */
static __always_inline void walk_output(struct kunw_scratch *s, struct kunw_counters *cnt, __u32 nk, bool have_regs,
					__u64 t_all)
{
	__u32 zero = 0;
	struct kunw_walk *w = &s->w;
	struct kunw_rec *rec = &s->rec;
	w->n = 0;
	w->nk = nk;
	w->pid = rec->pid;
	w->is_call = 0;
	w->found_by = KUNW_M_REGS;
	w->sp_stayed = 0;
	w->other_stack = 0;
	w->stop = KUNW_STOP_END;
	w->fb_reason = KUNW_FB_NONE;
	w->map.start = w->map.end = 0;
	w->chunk_len = 0;
	/* the process's mappings, one generation for the whole walk */
	struct walk_ctx c = { .s = s, .cnt = cnt };
	__u64 tp0 = t_start();
	__u32 gk = w->pid & (KUNW_GENS - 1);
	__u64 *gp = bpf_map_lookup_elem(&kunw_gens, &gk);
	__u64 g = gp ? *gp : 0;
	__u32 why = KUNW_FB_NONE; /* a reason to hand over before walking */
	if (g && (__u32)(g >> 32) == w->pid && (__u32)g) {
		/* (the mappings themselves: at the first the mcache lacks) */
		w->gen = (__u32)g;
		w->nmaps = 0;
	} else {
		/* the newer of the process's two stores (a process moved from one to the other keeps
		 * the older until user space removes it) */
		c.looked = 1;
		c.procs = bpf_map_lookup_elem(&kunw_procs, &w->pid);
		struct kunw_map *h = c.procs ? bpf_map_lookup_elem(c.procs, &zero) : NULL;
		__u32 yk = w->pid & (KUNW_YOUNG_SLOTS - 1);
		struct kunw_young *y = bpf_map_lookup_elem(&kunw_young, &yk);
		__u64 q = young_of(y, w->pid, 0);
		if (y && !(q & 1) && (!h || (__s32)((__u32)y->m[0].end - (__u32)h->end) > 0)) {
			c.young = y;
			c.young_seq = q;
			c.procs = NULL;
			w->gen = (__u32)y->m[0].end;
			w->nmaps = (__u32)y->m[0].start;
			cnt->young++;
		} else {
			w->gen = h ? (__u32)h->end : 0;
			w->nmaps = h ? (__u32)h->start : 0;
			why = !c.procs ? KUNW_FB_NO_PROC : !h ? KUNW_FB_TABLE : KUNW_FB_NONE;
		}
	}
	t_stop(KUNW_T_PROC, tp0, 0);
	rec->gen = w->gen;
	__u32 copy = 0;
	__u64 t0;
	if (!have_regs) {
		w->stop = KUNW_STOP_NO_USER;
	} else {
		w->sp0 = w->regs[KUNW_R_RSP];
		w->reach = w->sp0;
		/* where the thread's stack ended when last walked whole: the walk reads up to there */
		struct kunw_top *tp = &s->tops[rec->tid & (TOPS - 1)];
		w->top = tp->tid == rec->tid && tp->pid == rec->pid && tp->top > w->sp0 ? tp->top : 0;
		/* frame 0's registers, kept for verify mode */
		if (kunw_verify) {
			__builtin_memcpy(s->regs0, w->regs, sizeof(s->regs0));
			rec->valid = w->valid;
		}
		t0 = t_start();
		if (why != KUNW_FB_NONE) {
			w->stop = KUNW_STOP_FALLBACK;
			w->fb_reason = why;
		} else {
			bpf_loop(kunw_max_frames + 1, walk_frame, &c, 0);
		}
		t_stop(KUNW_T_WALK, t0, 0);
		if (w->stop == KUNW_STOP_END && !w->other_stack && w->reach > w->sp0) {
			tp->tid = rec->tid;
			tp->pid = rec->pid;
			tp->top = w->reach;
		}
		/* the registers (those of the frame handed over, or frame 0's) after the frames, and
		 * the stack from there */
		__u64 *regs = NULL;
		if (w->stop == KUNW_STOP_FALLBACK) {
			regs = w->regs;
			rec->valid = w->valid;
			rec->method = w->found_by;
			rec->flags |= KUNW_F_REGS | (w->is_call ? KUNW_F_IS_CALL : 0);
		} else if (kunw_verify) {
			regs = s->regs0;
			rec->flags |= KUNW_F_REGS | KUNW_F_VERIFY;
		}
		if (regs) {
			__u32 words = nk + w->n;
			if (words > KUNW_MAX_KFRAMES + KUNW_MAX_FRAMES)
				words = KUNW_MAX_KFRAMES + KUNW_MAX_FRAMES;
			__builtin_memcpy(&s->data[words], regs, KUNW_NREGS * 8);
			t0 = t_start();
			copy = copy_stack(s, (words + KUNW_NREGS) * 8, regs[KUNW_R_RSP], kunw_verify);
			t_stop(KUNW_T_COPY, t0, copy);
		}
	}
	t0 = t_start();
	__u32 nu = w->n;
	if (nu > KUNW_MAX_FRAMES)
		nu = KUNW_MAX_FRAMES;
	rec->nuser = (__u16)nu;
	rec->stop = w->stop;
	rec->fb_reason = w->fb_reason;
	rec->copy_len = copy;
	cnt->frames += nu;
	__u32 stop = w->stop, fb = w->fb_reason;
	BARRIER_VAR(stop);
	BARRIER_VAR(fb);
	if (stop < KUNW_STOP__COUNT)
		cnt->stops[stop]++;
	if (fb < KUNW_FB__COUNT)
		cnt->fallbacks[fb]++;
	__u64 size = sizeof(*rec) + (__u64)(nk + nu + ((rec->flags & KUNW_F_REGS) ? KUNW_NREGS : 0)) * 8 + copy;
	if (size > sizeof(*rec) + sizeof(s->data))
		size = sizeof(*rec) + sizeof(s->data);
	rec->size = (__u32)size;
	/* Waking the reader costs more than a whole walk (~3.5 us of an interrupt per record on
	 * this VM): it is woken each time this CPU wrote kunw_wakeup_bytes (the loader's share of
	 * an eighth of the ring), and reads at its own pace otherwise (kunw_poll's timeout). */
	__u64 flags = BPF_RB_NO_WAKEUP;
	s->unwoken += size;
	if (s->unwoken >= kunw_wakeup_bytes) {
		s->unwoken = 0;
		flags = BPF_RB_FORCE_WAKEUP;
	}
	if (bpf_ringbuf_output(&kunw_ring, rec, size, flags))
		cnt->lost++;
	else
		cnt->records++;
	t_stop(KUNW_T_OUTPUT, t0, size);
	t_stop(KUNW_T_ALL, t_all, 0);
}

/* The kernel's context of a perf_event program (Linux 6.2): its event. */
extern void *bpf_cast_to_kern_ctx(void *obj) __ksym __weak;

/* The sampled event's id as its samples carry it (PERF_SAMPLE_ID): an inherited copy's is its
 * parent's; 0 where the kernel cannot say. */
static __always_inline __u64 event_id(struct bpf_perf_event_data *ctx)
{
	if (!bpf_cast_to_kern_ctx)
		return 0;
	struct bpf_perf_event_data_kern *k = bpf_cast_to_kern_ctx(ctx);
	struct perf_event *ev = BPF_CORE_READ(k, event);
	struct perf_event *parent = BPF_CORE_READ(ev, parent);
	return parent ? BPF_CORE_READ(parent, id) : BPF_CORE_READ(ev, id);
}

/* A sample of an event: its stack walked, the record written. kind says what the event is to
 * user space (KUNW_KIND_*): one body, two entry programs below, because what is attached to
 * an event is inherited with it (a thread's copy of a per-task event gets the program, not the
 * attach cookie). */
static __always_inline int sample(struct bpf_perf_event_data *ctx, __u32 kind)
{
	__u64 t_all = t_start();
	if (kunw_timing) {
		__u64 c0 = t_start();
		t_stop(KUNW_T_CLOCK, c0, 0);
	}
	__u64 th0 = t_start();
	__u32 cpu = bpf_get_smp_processor_id();
	struct kunw_scratch *s = bpf_map_lookup_elem(&kunw_scratch, &cpu);
	if (!s)
		return 0;
	struct kunw_counters *cnt = &s->cnt;
	cnt->samples++;
	struct kunw_rec *rec = &s->rec;
	__u64 id = bpf_get_current_pid_tgid();
	__builtin_memset(rec, 0, sizeof(*rec));
	rec->pid = (__u32)(id >> 32);
	rec->tid = (__u32)id;
	rec->cpu = cpu;
	rec->time = bpf_ktime_get_ns();
	rec->period = ctx->sample_period;
	rec->kind = kind;
	rec->event_id = kunw_event_ids ? event_id(ctx) : 0;
	t_stop(KUNW_T_HEAD, th0, 0);
	/* the kernel callchain: none when the sample interrupted user space */
	bool user_mode = (CTX_REG(ctx, cs) & 3) == 3;
	__u32 nk = 0;
	if (!user_mode) {
		__u64 t0 = t_start();
		long kb = bpf_get_stack(ctx, s->data, KUNW_MAX_KFRAMES * 8, 0);
		t_stop(KUNW_T_KSTACK, t0, 0);
		nk = kb > 0 ? (__u32)kb / 8 : 0;
		if (nk > KUNW_MAX_KFRAMES)
			nk = KUNW_MAX_KFRAMES;
	}
	rec->nkernel = (__u16)nk;

	s->w.in_syscall = 0;
	__u64 t0 = t_start();
	bool have_regs = user_regs(ctx, s, user_mode);
	t_stop(KUNW_T_REGS, t0, 0);
	walk_output(s, cnt, nk, have_regs, t_all);
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
