/* SPDX-License-Identifier: MIT */
#ifndef UW_CFI_INTERNAL_H
#define UW_CFI_INTERNAL_H
#include "cfi/cfi.h"

/* Called by the interpreter with the state in force over [loc, next). Non-zero stops it. */
typedef int (*cfi_emit_fn)(void *ctx, uint64_t loc, uint64_t next, const struct cfi_state *st);

bool cfi_read_encoded(struct base_cursor *c, uint8_t enc, const struct cfi_section *s, bool apply,
                      uint64_t *out);
int cfi_init_state(const struct cfi_arch *arch, const struct cfi_cie *cie, struct cfi_state *st);
int cfi_exec(const struct cfi_arch *arch, const struct cfi_cie *cie, const uint8_t *insns, size_t len,
             struct cfi_state *st, const struct cfi_state *init, uint64_t *loc, uint64_t stop_pc,
             cfi_emit_fn emit, void *ctx);
#endif
