/* SPDX-License-Identifier: MIT */
/*
 * Call frame information: parsing .eh_frame / .debug_frame (DWARF 5 §6.4, LSB "Exception
 * Frames") and compiling it into one compact sorted row table per module.
 *
 * The table is the hot path. Each row is a 32-bit pc offset (from the table base) in one array
 * and a 16-byte rule in another; a coarse block index narrows the binary search (the kernel's
 * ORC layout). A rule describes only what stepping needs on the fast path: the CFA as
 * register + offset, where the return address and the frame pointer are saved. Anything else
 * (DWARF expressions, registers saved in registers, ...) is marked COMPLEX and re-derived from
 * the FDE for that one pc by the interpreter, which keeps the table small and exact.
 *
 * The lookup itself (cfi_table_find_cached, ...) is in cfi_find.h, for callers: it calls into
 * cfi_table.c, which includes only this header.
 */
#ifndef UW_CFI_H
#define UW_CFI_H

#include <stdbool.h>
#include <stdint.h>

#include <pthread.h>

#include "base/base.h"

#define CFI_NSAVED 5

/* Register numbering the table compiler needs from the architecture. */
struct cfi_arch {
	uint8_t sp, fp, ra; /* DWARF numbers: x86_64 7, 6, 16 */
	uint8_t nregs;      /* registers tracked by the interpreter (<= CFI_MAX_REGS) */
	/* other callee-saved registers the fast path restores (x86_64: rbx, r12-r15): a frame
	 * may define its CFA from one of them (stack realignment, _dl_runtime_resolve) */
	uint8_t saved[CFI_NSAVED];
};
extern const struct cfi_arch cfi_arch_x86_64;

#define CFI_MAX_REGS 33

/* ---- full rules, as produced by the interpreter (DWARF 5 §6.4.1) */
enum cfi_rule_kind {
	CFI_R_SAME = 0,    /* same value (also the default for callee-saved registers) */
	CFI_R_UNDEF,       /* undefined */
	CFI_R_OFFSET,      /* saved at CFA + off */
	CFI_R_VAL_OFFSET,  /* value is CFA + off */
	CFI_R_REG,         /* value is in register reg */
	CFI_R_EXPR,        /* saved at the address computed by expr (CFA pushed first) */
	CFI_R_VAL_EXPR,    /* value computed by expr (CFA pushed first) */
};
struct cfi_reg_rule {
	uint8_t kind;
	uint16_t reg;
	int64_t off;
	const uint8_t *expr;
	uint32_t expr_len;
};
struct cfi_state {
	bool cfa_is_expr;
	uint16_t cfa_reg;
	int64_t cfa_off;
	const uint8_t *cfa_expr;
	uint32_t cfa_expr_len;
	bool signal;  /* the FDE's CIE has augmentation 'S' */
	struct cfi_reg_rule regs[CFI_MAX_REGS];
};

/* ---- compact rules in the table */
enum {
	CFI_F_END = 1 << 0,     /* return address undefined: outermost frame */
	CFI_F_BP_SAVED = 1 << 1,/* frame pointer saved at CFA + bp_off */
	CFI_F_SIGNAL = 1 << 2,  /* signal trampoline: the caller's pc is exact */
	CFI_F_COMPLEX = 1 << 3, /* re-interpret the FDE at fde_off (see cfi_state_at) */
	CFI_F_NONE = 1 << 4,    /* no CFI covers this range */
	CFI_F_BP_UNDEF = 1 << 5,/* frame pointer undefined */
	CFI_F_UNSUPP = 1 << 6,  /* (SFrame) a rule the unwinder cannot follow: it stops, saying so */
	CFI_F_FLEX = 1 << 7,    /* (SFrame v3 flexible rows) cfa_off indexes the table's flex rules */
};

/* A rule of SFrame's flexible rows (DRAP, realigned stacks): what a compact rule cannot hold.
 * A value is the CFA or register reg, plus off, read from memory at that address when deref. */
struct cfi_loc {
	uint8_t kind;     /* CFI_LOC_* */
	uint8_t reg;      /* DWARF register, when from_reg */
	bool from_reg;    /* the base is a register, not the CFA */
	int32_t off;
};
enum { CFI_LOC_SAME = 0, CFI_LOC_AT, CFI_LOC_VAL };
struct cfi_flex {
	uint8_t cfa_reg;
	bool cfa_deref;   /* CFA = *(reg + cfa_off) */
	int32_t cfa_off;
	struct cfi_loc ra, fp;
};
struct cfi_rule {
	int32_t cfa_off;   /* CFA = reg(cfa_reg) + cfa_off; COMPLEX: FDE offset in its section */
	int16_t ra_off;    /* return address saved at CFA + ra_off */
	int16_t bp_off;
	uint8_t cfa_reg;   /* COMPLEX: which section (0 .eh_frame, 1 .debug_frame) */
	uint8_t flags;
	int8_t saved[CFI_NSAVED]; /* arch->saved[i] saved at CFA + 8 * saved[i]; 0: unchanged */
	uint8_t pad;
};
_Static_assert(sizeof(struct cfi_rule) == 16, "cfi_rule is packed to 16 bytes");

/* A section holding CFI, in the module's ELF address space. */
struct cfi_section {
	const uint8_t *data;
	uint64_t size;
	uint64_t addr;   /* sh_addr (for pc-relative pointers) */
	bool is_eh;      /* .eh_frame (else .debug_frame) */
};

/* Lazy mode: rows of one FDE, compiled on its first lookup. */
struct cfi_fde_rows {
	uint64_t begin, end;
	uint32_t n;
	uint32_t *pcs;          /* pc - begin */
	struct cfi_rule *rules;
};

struct cfi_table {
	/* Lazy mode (large modules with a usable .eh_frame_hdr): the header's sorted search table
	 * finds the FDE of a pc, and each FDE is compiled once, when a pc first hits it. A profile
	 * touches a small share of a big program's functions (cc1: 45k FDEs), so this is much
	 * cheaper than compiling all of them; per pc, the cost is the same binary search. */
	bool lazy;
	const uint8_t *hdr_table; /* (int32 initial_loc, int32 fde) pairs, datarel to hdr_addr */
	uint64_t hdr_addr;
	uint32_t hdr_count;
	struct cfi_fde_rows **fde_rows; /* per table entry: NULL not yet compiled (atomic: published
	                                 * once compiled, under lazy_mu) */
	pthread_mutex_t lazy_mu;  /* compiles of FDEs (several threads may unwind at once) */
	int32_t hdr_first;        /* initial_loc of entry 0 */
	uint32_t *hdr_block;      /* first entry at or after each 4 KiB block from hdr_first */
	uint32_t hdr_nblocks;
	struct base_arena arena;
	/* full mode */
	uint64_t base;          /* pc of row 0 */
	uint64_t end;           /* one past the last covered pc */
	uint32_t n;
	uint32_t *pcs;          /* pc - base, ascending */
	struct cfi_rule *rules;
	uint32_t *block;        /* block[i] = first row with pc >= base + (i << CFI_BLOCK_SHIFT) */
	uint32_t nblocks;
	struct cfi_section sec[2]; /* [0] .eh_frame, [1] .debug_frame */
	const struct cfi_arch *arch;
	uint64_t text_end_hint;
	/* statistics */
	uint32_t nfde, nbad_fde, ncomplex; /* (SFrame: ncomplex counts unsupported rows) */
	bool sframe;            /* compiled from an .sframe section */
	struct cfi_flex *flex;  /* (SFrame) the rules of CFI_F_FLEX rows */
	uint32_t nflex;
	/* the table's identity in lookup caches (set by its owner, unique in a session: a freed
	 * table's memory may hold another) */
	uint64_t serial;
};

/* Caches of recent lookups (return addresses repeat across samples), one set per thread of
 * unwinding: tables are shared, caches are not. A table gets a direct-mapped cache of its own
 * in the set (found by the table's serial), made when first used; at most CFI_CACHE_TABLES
 * tables have one, the oldest made going first. */
#define CFI_CACHE_BITS 12
#define CFI_CACHE_TABLES 64
struct cfi_cache_ent {
	uint64_t tag;            /* pc + 1; 0: empty */
	const struct cfi_rule *rule; /* NULL: no rule covers pc */
};
struct cfi_cache {
	/* serial -> entries: a direct-mapped index in front of the map of every cache made */
	struct {
		uint64_t serial;
		struct cfi_cache_ent *ents;
	} recent[64];
	struct base_map by_serial; /* serial -> struct cfi_cache_ent[1 << CFI_CACHE_BITS] */
	uint64_t made[CFI_CACHE_TABLES]; /* serials, in the order their caches were made */
	unsigned nmade, oldest;
};
struct cfi_cache *cfi_cache_new(void);
void cfi_cache_free(struct cfi_cache *c);
/* The entries of table serial in c, made when new; NULL without memory. */
struct cfi_cache_ent *cfi_cache_entries(struct cfi_cache *c, uint64_t serial);
#define CFI_BLOCK_SHIFT 10

/* Compiles an SFrame section (AMD64) into a table: the same rows, the same lookup. */
struct sframe_sec;
int cfi_table_build_sframe(struct cfi_table *t, const struct cfi_arch *arch, const struct sframe_sec *s);

/* Compiles the FDEs of eh (may have NULL data) and dbg (may have NULL data) into a table.
 * FDEs from .eh_frame win where both cover a pc. Malformed entries are skipped and counted.
 * @return 0 (possibly an empty table) or -ENOMEM / -UW_ELIMIT. */
int cfi_table_build(struct cfi_table *t, const struct cfi_arch *arch, const struct cfi_section *eh,
                    const struct cfi_section *dbg);
void cfi_table_free(struct cfi_table *t);

/* Like cfi_table_build, in lazy mode from .eh_frame and its .eh_frame_hdr (hdr: data, size,
 * addr; is_eh ignored). @return 0, or -UW_EUNSUPP when the header cannot serve (then build the
 * full table), -ENOMEM. */
int cfi_table_build_lazy(struct cfi_table *t, const struct cfi_arch *arch, const struct cfi_section *eh,
                         const struct cfi_section *hdr);
bool cfi_lazy_find(struct cfi_table *t, uint64_t pc, const struct cfi_rule **rule);

/* The search of a full-mode table (t->lazy false) for the rule covering pc. @return false when
 * none does. (Lookups go through cfi_find.h, which chooses between this and cfi_lazy_find;
 * always inlined so that the unwinder's code is the same as with one search function.) */
__attribute__((always_inline)) static inline bool cfi_rows_search(const struct cfi_table *t, uint64_t pc,
                                                                  const struct cfi_rule **rule)
{
	if (UW_UNLIKELY(pc < t->base || pc >= t->end || !t->n))
		return false;
	uint64_t rel = pc - t->base;
	uint32_t b = (uint32_t)(rel >> CFI_BLOCK_SHIFT);
	/* block[b] is the first row at or after the block start: the row in force is in
	 * [block[b] - 1, block[b + 1] - 1] */
	uint32_t lo = t->block[b] ? t->block[b] - 1 : 0, hi = t->block[b + 1];
	if (hi <= lo)
		hi = lo + 1;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (t->pcs[mid] <= (uint32_t)rel)
			lo = mid;
		else
			hi = mid;
	}
	if (t->pcs[lo] > (uint32_t)rel)
		return false;
	const struct cfi_rule *r = &t->rules[lo];
	if (r->flags & CFI_F_NONE)
		return false;
	*rule = r;
	return true;
}

/* A lookup that missed the cache: searched, and the entry filled. */
bool cfi_cache_fill(struct cfi_table *t, struct cfi_cache_ent *e, uint64_t pc, const struct cfi_rule **rule);

/* Slow path: the full rule set at pc for a COMPLEX rule (or any pc covered by an FDE at fde_off
 * in section secidx). @return 0 or a negative error. */
int cfi_state_at(const struct cfi_table *t, unsigned secidx, uint64_t fde_off, uint64_t pc,
                 struct cfi_state *out);
/* Every state of the FDE at fde_off in section secidx, in pc order: fn(ctx, lo, hi, state) for
 * each range [lo, hi) where one holds (a table's COMPLEX row stands for all its FDE's consecutive
 * COMPLEX states, which may differ; this reads them all in one pass). @return 0, fn's non-zero
 * return, or a negative error (the FDE's program fails part way: the table has no rows of it). */
typedef int (*cfi_state_fn)(void *ctx, uint64_t lo, uint64_t hi, const struct cfi_state *st);
int cfi_fde_states(const struct cfi_table *t, unsigned secidx, uint64_t fde_off, cfi_state_fn fn, void *ctx);

/* ---- DWARF expressions (DWARF 5 §2.5), as used by CFI */
struct cfi_expr_ctx {
	/* register value by DWARF number; false if unknown */
	bool (*reg)(void *ctx, unsigned regno, uint64_t *val);
	/* 8-byte (or n-byte) memory read; false if unreadable */
	bool (*mem)(void *ctx, uint64_t addr, void *buf, unsigned n);
	void *ctx;
};
/* Evaluates expr with `initial` pushed (when push_initial), result in *out.
 * @return 0, or -UW_EFORMAT (bad op, stack under/overflow, step limit), -EFAULT (memory). */
int cfi_expr_eval(const struct cfi_expr_ctx *c, const uint8_t *expr, size_t len, bool push_initial,
                  uint64_t initial, uint64_t *out);

/* ---- low-level parsing, exposed for tests and fuzzing */
struct cfi_cie {
	uint64_t code_align;
	int64_t data_align;
	uint32_t ra_reg;
	uint8_t fde_enc;     /* DW_EH_PE_* for pc_begin */
	uint8_t lsda_enc;
	bool has_z, signal;
	uint8_t addr_size;
	const uint8_t *insns;
	size_t insns_len;
};
struct cfi_fde {
	uint64_t pc_begin, pc_end;
	const uint8_t *insns;
	size_t insns_len;
	uint64_t cie_off;
};
/* Parses the entry at off. *next receives the offset of the following entry.
 * @return 1 for an FDE (fde and cie filled), 0 for a CIE or padding, -1 at the terminator/end,
 * negative error (< -1) on malformed data. */
int cfi_parse_entry(const struct cfi_section *s, uint64_t off, uint64_t *next, struct cfi_fde *fde,
                    struct cfi_cie *cie);
/* Runs CIE initial instructions then the FDE's up to (and including rows at) pc. */
int cfi_run(const struct cfi_arch *arch, const struct cfi_cie *cie, const struct cfi_fde *fde,
            uint64_t pc, struct cfi_state *st);

#endif
