/* SPDX-License-Identifier: MIT */
/* libFuzzer target: SFrame sections (any version, ABI and byte order) decoded and compiled
 * into a rule table, then looked up. */
#include <stdint.h>
#include <string.h>

#include "cfi/cfi_find.h"
#include "cfi/sframe.h"

static int count(void *ctx, const struct sframe_row *r)
{
	(*(uint64_t *)ctx) += r->end - r->pc;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sframe_sec s;
	if (sframe_open(&s, data, size, 0x1000))
		return 0;
	uint64_t covered = 0;
	uint32_t nbad = 0;
	sframe_rows(&s, count, &covered, &nbad, 1u << 20);
	struct cfi_table t;
	if (cfi_table_build_sframe(&t, &cfi_arch_x86_64, &s) == 0) {
		for (uint64_t pc = t.base; pc < t.end && pc < t.base + 4096; pc += 7) {
			const struct cfi_rule *r;
			cfi_table_find(&t, pc, &r);
		}
		cfi_table_free(&t);
	}
	return 0;
}
