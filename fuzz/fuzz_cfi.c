/* SPDX-License-Identifier: MIT */
/* libFuzzer target: raw .eh_frame / .debug_frame bytes into the table compiler, lookups, the
 * slow-path interpreter and the kernel unwinder's table built from them (every FDE state behind
 * a COMPLEX row converted). The first byte picks the section kind. */
#include <stdint.h>

#include "cfi/cfi_find.h"
#include "kernel/kunw.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	struct cfi_section s = { data + 1, size - 1, 0x400000, (data[0] & 1) == 0 };
	struct cfi_table t;
	if (cfi_table_build(&t, &cfi_arch_x86_64, s.is_eh ? &s : NULL, s.is_eh ? NULL : &s))
		return 0;
	for (uint32_t i = 0; i < t.n && i < 512; i++) {
		const struct cfi_rule *r;
		uint64_t pc = t.base + t.pcs[i];
		if (cfi_table_find(&t, pc, &r) && (r->flags & CFI_F_COMPLEX)) {
			struct cfi_state st;
			cfi_state_at(&t, r->cfa_reg, (uint32_t)r->cfa_off, pc, &st);
		}
	}
	struct unw_code code = { .cfi = &t };
	struct kunw_table kt;
	if (!kunw_table_build(&kt, &code)) {
		for (uint32_t i = 0; i < t.n && i < 512; i++) {
			struct kunw_rule k;
			kunw_table_find(&kt, t.pcs[i] + t.base, &k, NULL, NULL);
		}
		kunw_table_free(&kt);
	}
	cfi_table_free(&t);
	return 0;
}
