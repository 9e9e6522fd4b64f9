/* SPDX-License-Identifier: MIT */
/*
 * Stepping frames from a register set and a memory reader. The per-frame strategy is
 * CFI table -> PLT rule -> frame pointer -> stop, and every stop has a reason. The caller
 * provides the frames array; nothing is allocated per frame or per sample.
 */
#ifndef UW_UNWIND_H
#define UW_UNWIND_H

#include "base/base.h"
#include "cfi/cfi.h"
#include "elf/elfview.h"

#define UNW_MAX_REGS 17 /* x86_64: DWARF 0..16 (16 = return address / rip) */

/* x86_64 DWARF register numbers (System V psABI, figure 3.36) */
enum {
	UNW_X86_RAX = 0, UNW_X86_RDX = 1, UNW_X86_RCX = 2, UNW_X86_RBX = 3, UNW_X86_RSI = 4, UNW_X86_RDI = 5,
	UNW_X86_RBP = 6, UNW_X86_RSP = 7, UNW_X86_R8 = 8, UNW_X86_RIP = 16,
};

struct unw_regs {
	uint64_t r[UNW_MAX_REGS];
	uint32_t valid; /* bit per DWARF register */
};

/* Per-module unwind data, owned by the module (lib/module) or by lib/kernel's tables. */
struct unw_code {
	struct cfi_table *cfi;       /* NULL: no CFI (lookups update its cache) */
	struct cfi_table *sframe;    /* from .sframe: used where cfi has no row for the pc */
	struct {
		uint64_t lo, hi;     /* module-relative ranges of PLT sections */
	} plt[4];
	unsigned nplt;
};

/* A module's unwind tables, compiled from its ELF files (tables.c) by the module cache and by
 * lib/kernel alike, so that both take the same rows at every pc: CFI from .eh_frame and
 * .debug_frame (the file's own, else its debug file's), a second table from .sframe (or the
 * PT_GNU_SFRAME segment), and the PLT sections' ranges. */
struct unw_tables {
	struct cfi_table cfi, sframe;
	struct unw_code code;        /* points into cfi and sframe: do not copy the struct */
};
/* Builds t from elf (and dbg's .debug_frame when elf has none; dbg may be NULL). lazy: a large
 * .eh_frame with a search table and no .debug_frame is compiled FDE by FDE as pcs hit it (see
 * cfi.h), else everything now. The views must outlive t. @return the CFI table's error (0,
 * -ENOMEM, -UW_ELIMIT...: code.cfi is then NULL) and in *sframe_err the SFrame table's (its
 * section malformed or unsupported: code.sframe is NULL); the rest is built either way. */
int unw_tables_build(struct unw_tables *t, struct elfv *elf, struct elfv *dbg, bool lazy, int *sframe_err);
void unw_tables_free(struct unw_tables *t);

struct unw_pc_info {
	void *module;          /* opaque, copied into the frame; NULL: no mapping */
	uint64_t map_addr;     /* pc - map start + pgoff */
	uint64_t bias;         /* module-relative address = pc - bias */
	const struct unw_code *code; /* NULL when the module has no unwind data (yet, or at all) */
};

/* Looks up pc in the address space. @return false when no mapping holds pc. */
typedef bool (*unw_find_fn)(void *ctx, uint64_t pc, struct unw_pc_info *out);

/* The memory-read hook: stack bytes past the copy, pulled once, when a read first wants them
 * (a reader that kept a prefix of each sample's stack fetches the whole copy from its file),
 * so the unwind goes on in the same pass. */
struct unw_stack_more {
	/* @return the whole copy from data[0] (*size bytes; it begins with the prefix given),
	 * valid until the unwind ends; NULL when it cannot be had */
	const uint8_t *(*fetch)(void *ctx, uint64_t *size);
	void *ctx;
	const uint8_t *data;   /* what fetch gave */
	uint64_t size;
	bool tried;
};

struct unw_stack {
	uint64_t base;         /* address of data[0] (the sampled stack pointer) */
	const uint8_t *data;
	uint64_t size;
	/* optional: raised, when the walk ends, to the end offset (from data[0]) of the furthest
	 * read asked for, so a caller that passed a prefix of the stack learns whether the unwind
	 * wanted more */
	uint64_t *reach;
	struct unw_stack_more *more; /* optional */
};

struct unw_opts {
	unsigned max_frames;
	bool no_fp;
	const struct cfi_arch *arch;
	bool in_syscall; /* the sample was taken in a syscall: frame 0's pc follows the instruction */
	struct cfi_cache *cache; /* the calling thread's lookup cache (NULL: none) */
	/* NULL, or called with each frame as soon as it is found, with the registers it was found
	 * with (regs->valid says which are known), before its caller is looked for; frames[] is
	 * then not written (may be NULL). Non-zero stops the walk: UW_STOP_CALLBACK, the frame
	 * counted. */
	int (*on_frame)(void *ctx, const struct uw_frame *f, const struct unw_regs *regs);
	void *on_frame_ctx;
};

struct unw_result {
	unsigned n;
	enum uw_stop_reason stop;
	unsigned ncomplex;     /* slow-path steps */
	unsigned nfp;          /* frame-pointer steps */
	unsigned nsframe;      /* steps by SFrame rules */
};

/* Unwinds from regs (modified) into frames[0..opts->max_frames). */
void unw_run(const struct unw_opts *opts, struct unw_regs *regs, const struct unw_stack *stack,
             unw_find_fn find, void *find_ctx, struct uw_frame *frames, struct unw_result *res);

/* A walk begun elsewhere (in the kernel, lib/kernel): regs are those of frame `depth` of the
 * stack, found by `method`, its pc a return address when `is_call`. */
struct unw_resume {
	unsigned depth;  /* > 0 */
	uint8_t method;  /* enum uw_frame_method */
	bool is_call;
};
/* Like unw_run, from frame from->depth (NULL: from frame 0); frames[0] is that frame. */
void unw_run_from(const struct unw_opts *opts, const struct unw_resume *from, struct unw_regs *regs,
                  const struct unw_stack *stack, unw_find_fn find, void *find_ctx, struct uw_frame *frames,
                  struct unw_result *res);

/* x86_64: fills regs from a perf REGS_USER block (regs in mask bit order). */
/* perf's x86_64 register numbers (arch/x86/include/uapi/asm/perf_regs.h) */
enum { UNW_PERF_X86_CX = 2, UNW_PERF_X86_BP = 6, UNW_PERF_X86_SP = 7, UNW_PERF_X86_IP = 8, UNW_PERF_X86_R8 = 16 };
void unw_x86_64_from_perf(uint64_t mask, const uint64_t *vals, unsigned nvals, struct unw_regs *regs);
/* The perf register mask the x86_64 unwinder uses (general registers and ip). */
uint64_t unw_x86_64_perf_mask(void);

#endif
