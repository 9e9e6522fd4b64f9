/* SPDX-License-Identifier: MIT */
/* The unwinder on SFrame alone: a version 3 AMD64 section built here (a DRAP function's flexible
 * rows, an ordinary row, an outermost function, a rule on a register the unwinder does not
 * track), compiled into its table and stepped through on a synthetic stack. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "cfi/cfi.h"
#include "cfi/sframe.h"
#include "unwind/unwind.h"

#define SEC_ADDR 0x3000u
#define BASE 0x7000u
static uint64_t STACK[128];
static struct cfi_table TABLE;
static struct unw_code CODE;

static bool find(void *ctx, uint64_t pc, struct unw_pc_info *out)
{
	(void)ctx;
	if (pc < 0x1000 || pc >= 0x2000)
		return false;
	out->module = &CODE;
	out->map_addr = pc;
	out->bias = 0;
	out->code = &CODE;
	return true;
}

/* ---- the section */
static uint8_t SEC[512];
static size_t fres_len;
static uint8_t FRES[256];

struct fn {
	uint32_t start, size;
	bool flex;
	unsigned nfres;
	struct { uint8_t start, sp_base; unsigned n; int8_t w[6]; } fre[4];
};

static size_t build(const struct fn *fns, unsigned nfn)
{
	size_t hdr = 28, idx = hdr;
	unsigned nfres = 0;
	fres_len = 0;
	for (unsigned i = 0; i < nfn; i++) {
		size_t at = idx + i * 16;
		uint32_t off = (uint32_t)fres_len;
		/* attribute record: FRE count, info (1-byte starts, pc increments), info2 (type), rep */
		uint16_t n = (uint16_t)fns[i].nfres;
		memcpy(FRES + fres_len, &n, 2);
		FRES[fres_len + 2] = 0;
		FRES[fres_len + 3] = fns[i].flex ? 1 : 0;
		FRES[fres_len + 4] = 0;
		fres_len += 5;
		for (unsigned k = 0; k < fns[i].nfres; k++) {
			FRES[fres_len++] = fns[i].fre[k].start;
			FRES[fres_len++] = (uint8_t)(fns[i].fre[k].sp_base | fns[i].fre[k].n << 1); /* 1-byte words */
			for (unsigned j = 0; j < fns[i].fre[k].n; j++)
				FRES[fres_len++] = (uint8_t)fns[i].fre[k].w[j];
		}
		nfres += fns[i].nfres;
		int64_t rel = (int64_t)fns[i].start - (int64_t)(SEC_ADDR + at); /* from the field itself */
		memcpy(SEC + at, &rel, 8);
		memcpy(SEC + at + 8, &fns[i].size, 4);
		memcpy(SEC + at + 12, &off, 4);
	}
	uint16_t magic = SFRAME_MAGIC;
	memcpy(SEC, &magic, 2);
	SEC[2] = 3;
	SEC[3] = SFRAME_F_FDE_SORTED | SFRAME_F_FDE_FUNC_START_PCREL;
	SEC[4] = SFRAME_ABI_AMD64_LE;
	SEC[5] = 0;
	SEC[6] = (uint8_t)(int8_t)-8;
	SEC[7] = 0;
	uint32_t v[5] = { nfn, nfres, (uint32_t)fres_len, 0, nfn * 16 };
	memcpy(SEC + 8, v, sizeof(v));
	memcpy(SEC + idx + nfn * 16, FRES, fres_len);
	return idx + nfn * 16 + fres_len;
}

static int setup(void **state)
{
	(void)state;
	static const struct fn fns[] = {
		/* a DRAP function: CFA = r10 (frame 0 only), then CFA = *(rbp - 8), rbp saved at *rbp */
		{ 0x1000, 0x40, true, 2, { { 0, 0, 2, { (10 << 3) | 1, 0 } },
					     { 0x10, 0, 5, { (6 << 3) | 3, -8, 0, (6 << 3) | 3, 0 } } } },
		/* a CFA from r20: not a register the x86-64 unwinder tracks */
		{ 0x1040, 0x40, true, 1, { { 0, 0, 2, { (20 << 3) | 1, 8 } } } },
		/* an ordinary row: CFA = rsp + 16, rbp at CFA - 16 */
		{ 0x1080, 0x40, false, 1, { { 0, 1, 2, { 16, -16 } } } },
		/* the outermost function: no rows */
		{ 0x10c0, 0x10, false, 0, { { 0 } } },
	};
	size_t n = build(fns, 4);
	struct sframe_sec s;
	assert_int_equal(sframe_open(&s, SEC, n, SEC_ADDR), 0);
	assert_int_equal(cfi_table_build_sframe(&TABLE, &cfi_arch_x86_64, &s), 0);
	assert_int_equal(TABLE.nbad_fde, 0);
	assert_int_equal(TABLE.nflex, 2);  /* the DRAP rows */
	assert_int_equal(TABLE.ncomplex, 1); /* the r20 row */
	CODE.sframe = &TABLE;
	TABLE.serial = 1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	cfi_table_free(&TABLE);
	return 0;
}

static void run(struct unw_regs *r, struct uw_frame *f, struct unw_result *res)
{
	struct unw_stack st = { BASE, (const uint8_t *)STACK, sizeof(STACK), NULL, NULL };
	struct cfi_cache *cache = cfi_cache_new();
	struct unw_opts o = { .max_frames = 16, .arch = &cfi_arch_x86_64, .cache = cache };
	unw_run(&o, r, &st, find, NULL, f, res);
	cfi_cache_free(cache);
}

static void put(uint64_t addr, uint64_t v)
{
	STACK[(addr - BASE) / 8] = v;
}

static void test_drap_rows(void **state)
{
	(void)state;
	memset(STACK, 0, sizeof(STACK));
	/* in the DRAP function's body: rbp = BASE + 0x40; *(rbp - 8) is the CFA, *rbp the caller's
	 * rbp; the return address at CFA - 8 is in the ordinary function, whose CFA is rsp + 16 */
	uint64_t cfa = BASE + 0x100;
	put(BASE + 0x38, cfa);
	put(BASE + 0x40, 0x4444);     /* the caller's rbp */
	put(cfa - 8, 0x1090);         /* into the ordinary function */
	put(cfa + 16 - 8, 0x10c4);    /* into the outermost one */
	put(cfa + 16 - 16, 0x5555);   /* rbp saved by the ordinary function */
	struct unw_regs r = { 0 };
	r.r[16] = 0x1018;
	r.r[7] = BASE;
	r.r[6] = BASE + 0x40;
	r.valid = (1u << 6) | (1u << 7) | (1u << 16);
	struct uw_frame f[16];
	struct unw_result res;
	run(&r, f, &res);
	assert_int_equal(res.stop, UW_STOP_END_OF_STACK);
	assert_int_equal(res.n, 3);
	assert_int_equal(res.nsframe, 3);
	assert_int_equal(f[1].pc, 0x1090);
	assert_int_equal(f[1].method, UW_METHOD_SFRAME);
	assert_int_equal(f[1].sp, cfa);
	assert_int_equal(f[2].pc, 0x10c4);
	assert_int_equal(f[2].sp, cfa + 16);
	assert_int_equal(r.r[6], 0x5555);
}

static void test_drap_entry_from_r10(void **state)
{
	(void)state;
	memset(STACK, 0, sizeof(STACK));
	/* before the frame is set up: CFA = r10 (known in frame 0) */
	put(BASE + 0x20 - 8, 0x10c4);
	struct unw_regs r = { 0 };
	r.r[16] = 0x1004;
	r.r[7] = BASE;
	r.r[10] = BASE + 0x20;
	r.valid = (1u << 7) | (1u << 10) | (1u << 16);
	struct uw_frame f[16];
	struct unw_result res;
	run(&r, f, &res);
	assert_int_equal(res.stop, UW_STOP_END_OF_STACK);
	assert_int_equal(res.n, 2);
	assert_int_equal(f[1].pc, 0x10c4);
	/* without r10 the rule cannot be followed: said, no frame guessed */
	r = (struct unw_regs){ 0 };
	r.r[16] = 0x1004;
	r.r[7] = BASE;
	r.valid = (1u << 7) | (1u << 16);
	run(&r, f, &res);
	assert_int_equal(res.n, 1);
	assert_int_equal(res.stop, UW_STOP_BAD_CFI);
}

static void test_rule_not_followed(void **state)
{
	(void)state;
	memset(STACK, 0, sizeof(STACK));
	struct unw_regs r = { 0 };
	r.r[16] = 0x1050;
	r.r[7] = BASE;
	r.valid = (1u << 7) | (1u << 16);
	struct uw_frame f[16];
	struct unw_result res;
	run(&r, f, &res);
	assert_int_equal(res.n, 1);
	assert_int_equal(res.stop, UW_STOP_SFRAME_RULE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_drap_rows),
		cmocka_unit_test(test_drap_entry_from_r10),
		cmocka_unit_test(test_rule_not_followed),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
