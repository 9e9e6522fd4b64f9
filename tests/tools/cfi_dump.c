/* SPDX-License-Identifier: MIT */
/* Dumps the compiled CFI row table of an ELF file: one line per row,
 * "<pc hex> <rule>", for tests that compare rows with the assembled .cfi_* directives. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "cfi/cfi_find.h"
#include "elf/elfview.h"

static void print_rule(uint64_t pc, const struct cfi_rule *r)
{
	printf("%" PRIx64 " ", pc);
	if (r->flags & CFI_F_NONE) {
		printf("none\n");
		return;
	}
	if (r->flags & CFI_F_END) {
		printf("end%s\n", r->flags & CFI_F_SIGNAL ? " signal" : "");
		return;
	}
	if (r->flags & CFI_F_COMPLEX) {
		printf("complex fde=%s+%#x%s\n", r->cfa_reg ? "debug_frame" : "eh_frame", (unsigned)r->cfa_off,
		       r->flags & CFI_F_SIGNAL ? " signal" : "");
		return;
	}
	printf("cfa=r%u%+d ra=cfa%+d", r->cfa_reg, r->cfa_off, r->ra_off);
	if (r->flags & CFI_F_BP_SAVED)
		printf(" bp=cfa%+d", r->bp_off);
	if (r->flags & CFI_F_BP_UNDEF)
		printf(" bp=undef");
	for (int i = 0; i < CFI_NSAVED; i++)
		if (r->saved[i])
			printf(" r%u=cfa%+d", cfi_arch_x86_64.saved[i], 8 * r->saved[i]);
	if (r->flags & CFI_F_SIGNAL)
		printf(" signal");
	printf("\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: cfi_dump FILE [PC...]\n");
		return 2;
	}
	struct elfv *v;
	int e = elfv_open(argv[1], 0, &v);
	if (e) {
		fprintf(stderr, "cfi_dump: %s: %s\n", argv[1], uw_strerror(e));
		return 1;
	}
	struct elfv_sec eh, df;
	struct cfi_section ehs = { 0 }, dfs = { 0 };
	if (elfv_section(v, ".eh_frame", &eh) == 0 && eh.data)
		ehs = (struct cfi_section){ eh.data, eh.size, eh.addr, true };
	if (elfv_section(v, ".debug_frame", &df) == 0 && df.data)
		dfs = (struct cfi_section){ df.data, df.size, df.addr, false };
	struct cfi_table t;
	e = cfi_table_build(&t, &cfi_arch_x86_64, &ehs, &dfs);
	if (e) {
		fprintf(stderr, "cfi_dump: %s\n", uw_strerror(e));
		return 1;
	}
	if (argc > 2) {
		for (int i = 2; i < argc; i++) {
			uint64_t pc = strtoull(argv[i], NULL, 16);
			const struct cfi_rule *r;
			if (cfi_table_find(&t, pc, &r))
				print_rule(pc, r);
			else
				printf("%" PRIx64 " none\n", pc);
		}
	} else {
		printf("# fdes=%u bad=%u complex=%u rows=%u\n", t.nfde, t.nbad_fde, t.ncomplex, t.n);
		for (uint32_t i = 0; i < t.n; i++)
			print_rule(t.base + t.pcs[i], &t.rules[i]);
	}
	cfi_table_free(&t);
	elfv_close(v);
	return 0;
}
