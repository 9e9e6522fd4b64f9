/* SPDX-License-Identifier: MIT */
/*
 * Prints an SFrame section as decoded rows, one per line:
 *   func 0xSTART  [0xPC, 0xEND)  cfa=sp+16  ra=cfa-8  fp=cfa-16  [undefined] [signal] ...
 * usage: sframe_dump FILE            (an ELF file: its .sframe section or PT_GNU_SFRAME segment)
 *        sframe_dump --raw FILE ADDR (a bare section, at that address)
 * The tests compare it with fixtures' expected rows and with objdump --sframe of binutils.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfi/cfi.h"
#include "cfi/sframe.h"
#include "elf/elfview.h"

static const char *abi_name(uint8_t abi)
{
	switch (abi) {
	case SFRAME_ABI_AARCH64_BE: return "aarch64-be";
	case SFRAME_ABI_AARCH64_LE: return "aarch64";
	case SFRAME_ABI_AMD64_LE: return "amd64";
	case SFRAME_ABI_S390X_BE: return "s390x";
	default: return "?";
	}
}

static void loc(const char *name, const struct sframe_loc *l)
{
	if (l->kind == SFRAME_LOC_SAME)
		return;
	printf("  %s=", name);
	if (l->kind == SFRAME_LOC_AT)
		printf("[");
	if (l->from_reg)
		printf("r%u", l->reg);
	else
		printf("cfa");
	if (l->off || !l->from_reg)
		printf("%+d", l->off);
	if (l->kind == SFRAME_LOC_AT)
		printf("]");
}

static int on_row(void *ctx, const struct sframe_row *r)
{
	(void)ctx;
	printf("func 0x%" PRIx64 "  [0x%" PRIx64 ", 0x%" PRIx64 ")", r->func, r->pc, r->end);
	if (r->ra_undefined) {
		printf("  ra=undefined%s\n", r->signal ? "  signal" : "");
		return 0;
	}
	const char *base = r->cfa_base == SFRAME_CFA_SP ? "sp" : r->cfa_base == SFRAME_CFA_FP ? "fp" : NULL;
	printf("  cfa=");
	if (r->cfa_deref)
		printf("[");
	if (base)
		printf("%s", base);
	else
		printf("r%u", r->cfa_reg);
	printf("%+" PRId64, r->cfa_off);
	if (r->cfa_deref)
		printf("]");
	loc("ra", &r->ra);
	loc("fp", &r->fp);
	if (r->signal)
		printf("  signal");
	if (r->mangled_ra)
		printf("  ra-signed(key %c)", r->pauth_key ? 'B' : 'A');
	if (r->flex)
		printf("  flex");
	printf("\n");
	return 0;
}

int main(int argc, char **argv)
{
	const uint8_t *data = NULL;
	size_t size = 0;
	uint64_t addr = 0;
	struct elfv *v = NULL;
	uint8_t *raw = NULL;
	if (argc == 4 && !strcmp(argv[1], "--raw")) {
		FILE *f = fopen(argv[2], "rb");
		if (!f)
			return 1;
		raw = malloc(1 << 24);
		size = raw ? fread(raw, 1, 1 << 24, f) : 0;
		fclose(f);
		data = raw;
		addr = strtoull(argv[3], NULL, 0);
	} else if (argc == 2) {
		if (elfv_open(argv[1], 0, &v)) {
			fprintf(stderr, "sframe_dump: %s: not an ELF file\n", argv[1]);
			return 1;
		}
		uint64_t sz = 0;
		if (elfv_sframe(v, &data, &sz, &addr))
			size = (size_t)sz;
	} else {
		fprintf(stderr, "usage: sframe_dump FILE | --raw FILE ADDR\n");
		return 2;
	}
	struct sframe_sec s;
	int err = sframe_open(&s, data, size, addr);
	if (err) {
		fprintf(stderr, "sframe_dump: no usable SFrame section (%d)\n", err);
		return 1;
	}
	printf("version %u  abi %s  flags 0x%x  fixed-fp %d  fixed-ra %d  functions %u  fres %u\n", s.version,
	       abi_name(s.abi), s.flags, s.fixed_fp, s.fixed_ra, s.nfdes, s.nfres);
	uint32_t nbad = 0;
	err = sframe_rows(&s, on_row, NULL, &nbad, (uint64_t)1 << 24);
	printf("malformed functions: %u\n", nbad);
	/* the unwinder's table from it (AMD64), said on stderr */
	struct cfi_table t;
	int terr = cfi_table_build_sframe(&t, &cfi_arch_x86_64, &s);
	if (!terr) {
		fprintf(stderr, "table: %u rows, %u flexible, %u unsupported\n", t.n, t.nflex, t.ncomplex);
		cfi_table_free(&t);
	} else {
		fprintf(stderr, "table: not built (%d)\n", terr);
	}
	elfv_close(v);
	free(raw);
	return err ? 1 : 0;
}
