/* SPDX-License-Identifier: MIT */
/*
 * SFrame (.sframe, PT_GNU_SFRAME): the simple stack-trace format GNU as writes with --gsframe,
 * versions 1 (binutils 2.40), 2 (2.41-2.45) and 3 (2.46). Decoded here into rows of an
 * ABI-neutral form: for a pc range, how to find the CFA, and where the return address and the
 * frame pointer were saved. AMD64, AArch64 and s390x sections are decoded (little- and
 * big-endian); the x86_64 unwinder compiles AMD64 rows into its rule table (cfi_table.c).
 *
 * Every length, offset and count is checked against the section; rows come out in ascending
 * pc order per function (a repeated-block function, as PLTs are, expanded per block).
 */
#ifndef UW_SFRAME_H
#define UW_SFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SFRAME_MAGIC 0xdee2
enum sframe_abi {
	SFRAME_ABI_AARCH64_BE = 1,
	SFRAME_ABI_AARCH64_LE = 2,
	SFRAME_ABI_AMD64_LE = 3,
	SFRAME_ABI_S390X_BE = 4,
};
/* Header flags */
#define SFRAME_F_FDE_SORTED 0x1
#define SFRAME_F_FRAME_POINTER 0x2
#define SFRAME_F_FDE_FUNC_START_PCREL 0x4

/* A section, its header checked (sframe_open). */
struct sframe_sec {
	const uint8_t *data;
	size_t size;
	uint64_t addr;            /* the section's address in the module */
	uint8_t version, flags, abi;
	int8_t fixed_fp, fixed_ra; /* 0: not fixed */
	bool swap;                /* the section's byte order is not this machine's */
	uint32_t nfdes, nfres;
	size_t fdeoff, freoff, frelen; /* from the section's start */
	size_t fdesize;           /* 17 (v1), 20 (v2), 16 (v3: the index entry) */
};

/* Where a value (return address, frame pointer) is after a row's code ran. */
enum sframe_loc_kind {
	SFRAME_LOC_SAME = 0,      /* unchanged (in its register) */
	SFRAME_LOC_AT,            /* saved at base + off: base is the CFA, or register reg */
	SFRAME_LOC_VAL,           /* the value is base + off */
};
struct sframe_loc {
	uint8_t kind;
	bool from_reg;            /* base is register reg, not the CFA */
	uint16_t reg;             /* DWARF register number */
	int32_t off;
};

struct sframe_row {
	uint64_t pc, end;         /* module addresses [pc, end) */
	uint64_t func;            /* the function's start */
	uint8_t cfa_base;         /* SFRAME_CFA_SP, SFRAME_CFA_FP, or SFRAME_CFA_REG (flex) */
	uint16_t cfa_reg;         /* DWARF register (SFRAME_CFA_REG) */
	bool cfa_deref;           /* CFA = *(base + cfa_off) (flex) */
	int64_t cfa_off;
	bool ra_undefined;        /* an outermost frame: the stack ends here */
	struct sframe_loc ra, fp;
	bool signal;              /* a signal frame (v3): the caller's pc is exact */
	bool mangled_ra;          /* AArch64: the return address is signed (PAuth) */
	uint8_t pauth_key;        /* AArch64: 0 key A, 1 key B */
	bool flex;                /* from a flexible FDE (v3) */
};
enum { SFRAME_CFA_SP = 1, SFRAME_CFA_FP, SFRAME_CFA_REG };

/* Checks the header of a section at addr. @return 0, -UW_EMAGIC (not SFrame), -UW_EUNSUPP
 * (a version or ABI not known), -UW_EFORMAT/-UW_ETRUNC (malformed). */
int sframe_open(struct sframe_sec *s, const uint8_t *data, size_t size, uint64_t addr);

/* Calls fn for every row of every function, in the order of the function index; fn returns
 * non-zero to stop (that value is returned). A malformed function is skipped and counted in
 * *nbad (when not NULL). At most max_rows rows (-UW_ELIMIT past them). */
typedef int (*sframe_row_fn)(void *ctx, const struct sframe_row *row);
int sframe_rows(const struct sframe_sec *s, sframe_row_fn fn, void *ctx, uint32_t *nbad, uint64_t max_rows);

#endif
