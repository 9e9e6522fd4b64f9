/* SPDX-License-Identifier: MIT */
/* The CFI compiler against .cfi_* directives assembled at test time (cfi_cases.S). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cfi/cfi_find.h"
#include "elf/elfview.h"
#include "symbolize/symtab.h"
#include "cfi_fixture.h"


static const struct cfi_rule *rule_at(uint64_t pc)
{
	const struct cfi_rule *r = NULL;
	assert_true(cfi_table_find(&T, pc, &r));
	return r;
}

static void test_frame_rows(void **state)
{
	(void)state;
	assert_int_equal(T.nbad_fde, 0);
	const struct cfi_rule *r = rule_at(addr_of("case_frame"));
	assert_int_equal(r->flags, 0);
	assert_int_equal(r->cfa_reg, 7);
	assert_int_equal(r->cfa_off, 8);
	assert_int_equal(r->ra_off, -8);
	r = rule_at(addr_of("case_frame_pushed"));
	assert_int_equal(r->cfa_reg, 7);
	assert_int_equal(r->cfa_off, 16);
	assert_int_equal(r->flags, CFI_F_BP_SAVED);
	assert_int_equal(r->bp_off, -16);
	r = rule_at(addr_of("case_frame_body") + 1);
	assert_int_equal(r->cfa_reg, 6);
	assert_int_equal(r->cfa_off, 16);
	/* after `pop %rbp` the rule for rbp is kept (CFA-16): the unwinder's epilogue case */
	r = rule_at(addr_of("case_frame_ret"));
	assert_int_equal(r->cfa_reg, 7);
	assert_int_equal(r->cfa_off, 8);
	assert_int_equal(r->flags, CFI_F_BP_SAVED);
}

static void test_labels_inside_functions(void **state)
{
	(void)state;
	/* a label inside a sized function names a place, not a function: the frame is the function's */
	const struct sym *sy = symtab_find(&Y, addr_of("case_frame_pushed"));
	assert_non_null(sy);
	assert_string_equal(sy->name, "case_frame");
	sy = symtab_find(&Y, addr_of("case_state_restored"));
	assert_non_null(sy);
	assert_string_equal(sy->name, "case_state");
}

static void test_remember_restore(void **state)
{
	(void)state;
	const struct cfi_rule *r = rule_at(addr_of("case_state_pushed"));
	assert_int_equal(r->cfa_off, 16);
	assert_int_equal(r->saved[0], -2); /* rbx at CFA - 16 */
	r = rule_at(addr_of("case_state_popped"));
	assert_int_equal(r->cfa_off, 8);
	assert_int_equal(r->saved[0], 0); /* .cfi_restore %rbx */
	r = rule_at(addr_of("case_state_restored"));
	assert_int_equal(r->cfa_off, 16); /* restored from the remembered state */
	assert_int_equal(r->saved[0], -2);
	assert_int_equal(r->cfa_reg, 7);
}

static void test_expression_is_complex(void **state)
{
	(void)state;
	uint64_t pc = addr_of("case_expr");
	const struct cfi_rule *r = rule_at(pc);
	assert_true(r->flags & CFI_F_COMPLEX);
	struct cfi_state st;
	assert_int_equal(cfi_state_at(&T, r->cfa_reg, (uint32_t)r->cfa_off, pc, &st), 0);
	assert_true(st.cfa_is_expr);
	assert_int_equal(st.cfa_expr_len, 3);
	assert_int_equal(st.regs[16].kind, CFI_R_OFFSET);
	assert_int_equal(st.regs[16].off, -8);
}

static void test_root_signal_big(void **state)
{
	(void)state;
	assert_true(rule_at(addr_of("case_root"))->flags & CFI_F_END);
	assert_true(rule_at(addr_of("case_signal"))->flags & CFI_F_SIGNAL);
	const struct cfi_rule *r = rule_at(addr_of("case_big_body"));
	assert_int_equal(r->cfa_off, 0x20008);
}

static void test_coverage_ends(void **state)
{
	(void)state;
	const struct cfi_rule *r;
	assert_false(cfi_table_find(&T, addr_of("case_nocfi"), &r));
	assert_false(cfi_table_find(&T, 0, &r));
	assert_false(cfi_table_find(&T, UINT64_MAX, &r));
	/* every pc inside case_frame is covered, by exactly the rows above */
	for (uint64_t pc = addr_of("case_frame"); pc < addr_of("case_state"); pc++)
		assert_true(cfi_table_find(&T, pc, &r));
}

static bool reg_cb(void *ctx, unsigned regno, uint64_t *val)
{
	(void)ctx;
	*val = 1000 + regno;
	return regno < 17;
}

static bool mem_cb(void *ctx, uint64_t addr, void *buf, unsigned n)
{
	(void)ctx;
	uint64_t v = addr * 2;
	memcpy(buf, &v, n);
	return addr < 100000;
}

static void test_expressions(void **state)
{
	(void)state;
	struct cfi_expr_ctx x = { reg_cb, mem_cb, NULL };
	uint64_t out;
	/* breg7 +8; deref -> (1007 + 8) * 2 */
	const uint8_t e1[] = { 0x77, 0x08, 0x06 };
	assert_int_equal(cfi_expr_eval(&x, e1, sizeof(e1), false, 0, &out), 0);
	assert_int_equal(out, 2030);
	/* the PLT expression: breg7 +8; breg16 +0; lit15; and; lit11; ge; lit3; shl; plus */
	const uint8_t plt[] = { 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22 };
	assert_int_equal(cfi_expr_eval(&x, plt, sizeof(plt), false, 0, &out), 0);
	assert_int_equal(out, 1007 + 8 + (((1016 & 15) >= 11) << 3));
	/* hostile: stack underflow, unknown op, endless loop (skip -3), truncated operand */
	const uint8_t under[] = { 0x22 };
	assert_int_not_equal(cfi_expr_eval(&x, under, sizeof(under), false, 0, &out), 0);
	const uint8_t unk[] = { 0xff };
	assert_int_not_equal(cfi_expr_eval(&x, unk, sizeof(unk), false, 0, &out), 0);
	const uint8_t loop[] = { 0x2f, 0xfd, 0xff };
	assert_int_not_equal(cfi_expr_eval(&x, loop, sizeof(loop), true, 0, &out), 0);
	const uint8_t trunc[] = { 0x0e, 0x01 };
	assert_int_not_equal(cfi_expr_eval(&x, trunc, sizeof(trunc), false, 0, &out), 0);
}

static void test_malformed_sections(void **state)
{
	(void)state;
	/* a CIE pointing at itself, a length past the end, an FDE whose CIE is an FDE */
	uint8_t buf[64];
	memset(buf, 0, sizeof(buf));
	uint32_t w[] = { 12, 4, 0x01000000, 0 };        /* FDE with CIE pointer 4 -> itself */
	memcpy(buf, w, sizeof(w));
	struct cfi_section s = { buf, sizeof(buf), 0x1000, true };
	struct cfi_table t;
	assert_int_equal(cfi_table_build(&t, &cfi_arch_x86_64, &s, NULL), 0);
	assert_int_equal(t.n, 0);
	cfi_table_free(&t);
	uint32_t big[] = { 0xfffffff0u };
	memcpy(buf, big, 4);
	assert_int_equal(cfi_table_build(&t, &cfi_arch_x86_64, &s, NULL), 0);
	assert_int_equal(t.n, 0);
	cfi_table_free(&t);
	/* random bytes must never crash or hang */
	uint32_t seed = 12345;
	uint8_t rnd[4096];
	for (int round = 0; round < 2000; round++) {
		for (size_t i = 0; i < sizeof(rnd); i++) {
			seed = seed * 1103515245u + 12345u;
			rnd[i] = (uint8_t)(seed >> 16);
		}
		/* plausible lengths so entries are actually parsed */
		for (size_t off = 0; off + 8 < sizeof(rnd); off += 24) {
			uint32_t l = 20;
			memcpy(rnd + off, &l, 4);
		}
		struct cfi_section rs = { rnd, sizeof(rnd), 0x400000, round & 1 };
		assert_true(cfi_table_build(&t, &cfi_arch_x86_64, &rs, NULL) == 0);
		const struct cfi_rule *r;
		for (uint64_t pc = 0; pc < 64; pc++)
			(void)cfi_table_find(&t, t.base + pc * 7, &r);
		cfi_table_free(&t);
	}
}

/* The lazy table (per-FDE compilation through .eh_frame_hdr) answers exactly as the full
 * table at every pc of a real library's text. */
static void test_lazy_matches_full(void **state)
{
	(void)state;
	const char *path = "/usr/lib/x86_64-linux-gnu/libc.so.6";
	struct elfv *v;
	assert_int_equal(elfv_open(path, 0, &v), 0);
	struct elfv_sec eh, hdr, text;
	assert_int_equal(elfv_section(v, ".eh_frame", &eh), 0);
	assert_int_equal(elfv_section(v, ".eh_frame_hdr", &hdr), 0);
	assert_int_equal(elfv_section(v, ".text", &text), 0);
	struct cfi_section es = { eh.data, eh.size, eh.addr, true }, hs = { hdr.data, hdr.size, hdr.addr, false };
	struct cfi_table full, lazy;
	assert_int_equal(cfi_table_build(&full, &cfi_arch_x86_64, &es, NULL), 0);
	assert_int_equal(cfi_table_build_lazy(&lazy, &cfi_arch_x86_64, &es, &hs), 0);
	assert_true(lazy.lazy);
	uint64_t found = 0;
	for (uint64_t pc = text.addr - 16; pc < text.addr + text.size + 16; pc++) {
		const struct cfi_rule *a = NULL, *b = NULL;
		bool fa = cfi_table_find(&full, pc, &a), fb = cfi_table_find(&lazy, pc, &b);
		if (fa != fb)
			fail_msg("pc %#llx: full %d lazy %d", (unsigned long long)pc, fa, fb);
		if (fa) {
			found++;
			if (memcmp(a, b, sizeof(*a)) != 0)
				fail_msg("pc %#llx: rules differ", (unsigned long long)pc);
		}
	}
	assert_true(found > text.size / 2);
	/* a header that does not describe this .eh_frame is refused, not trusted */
	uint8_t bad[64];
	memcpy(bad, hdr.data, sizeof(bad));
	bad[3] = 0x1b; /* another table encoding */
	struct cfi_section bs = { bad, sizeof(bad), hdr.addr, false };
	struct cfi_table t;
	assert_int_equal(cfi_table_build_lazy(&t, &cfi_arch_x86_64, &es, &bs), -UW_EUNSUPP);
	cfi_table_free(&full);
	cfi_table_free(&lazy);
	elfv_close(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frame_rows),      cmocka_unit_test(test_remember_restore),
		cmocka_unit_test(test_expression_is_complex), cmocka_unit_test(test_root_signal_big),
		cmocka_unit_test(test_coverage_ends),   cmocka_unit_test(test_expressions),
		cmocka_unit_test(test_malformed_sections),
		cmocka_unit_test(test_lazy_matches_full),
		cmocka_unit_test(test_labels_inside_functions),
	};
	return cmocka_run_group_tests(tests, fixture_setup, fixture_teardown);
}
