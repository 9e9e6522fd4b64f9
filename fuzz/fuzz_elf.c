/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the ELF view, CFI tables (full and lazy) and symbol tables of one file. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cfi/cfi_find.h"
#include "elf/elfview.h"
#include "symbolize/symtab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elfv *v;
	if (elfv_open_mem(data, size, &v))
		return 0;
	struct elfv_sec eh, hdr, df;
	struct cfi_section es = { 0 }, hs = { 0 }, ds = { 0 };
	if (elfv_section(v, ".eh_frame", &eh) == 0 && eh.data)
		es = (struct cfi_section){ eh.data, eh.size, eh.addr, true };
	if (elfv_section(v, ".eh_frame_hdr", &hdr) == 0 && hdr.data)
		hs = (struct cfi_section){ hdr.data, hdr.size, hdr.addr, false };
	if (elfv_section(v, ".debug_frame", &df) == 0 && df.data)
		ds = (struct cfi_section){ df.data, df.size, df.addr, false };
	struct cfi_table t;
	const struct cfi_rule *r;
	if (cfi_table_build(&t, &cfi_arch_x86_64, &es, &ds) == 0) {
		for (uint64_t i = 0; i < 256; i++)
			cfi_table_find(&t, t.base + i * 13, &r);
		cfi_table_free(&t);
	}
	if (cfi_table_build_lazy(&t, &cfi_arch_x86_64, &es, &hs) == 0) {
		for (uint64_t i = 0; i < 256; i++)
			cfi_table_find(&t, eh.addr - 0x10000 + i * 977, &r);
		cfi_table_free(&t);
	}
	struct symtab st;
	if (symtab_build(&st, v, NULL, true) == 0) {
		for (uint64_t i = 0; i < 64; i++)
			symtab_find(&st, i * 4099);
		symtab_free(&st);
	}
	elfv_close(v);
	return 0;
}
