/* SPDX-License-Identifier: MIT */
/* lib/kernel without the kernel: the tables the BPF program searches, checked pc by pc against
 * the rows lib/unwind takes (libc, ld.so, the deep-recursion test program, the CFI test cases),
 * and records decoded and finished in user space. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "cfi/cfi_find.h"
#include "kernel/kunw.h"

struct kinds {
	unsigned n[KUNW_K_CFA_REG_END];
	unsigned plt_thresh11;
	unsigned cfa_reg; /* KUNW_K_CFA_REG + r, any r */
};

/* A COMPLEX row the table made a CFA-from-a-register rule: exactly the FDE's state at pc (CFA =
 * register + offset, the return address, rbp and the callee-saved registers at CFA offsets or
 * unchanged, every other register unchanged). */
static void expect_cfa_reg(const struct unw_code *code, const struct cfi_rule *r, uint64_t pc,
                           const struct kunw_rule *k)
{
	const struct cfi_arch *a = code->cfi->arch;
	struct cfi_state st;
	assert_int_equal(cfi_state_at(code->cfi, r->cfa_reg, (uint32_t)r->cfa_off, pc, &st), 0);
	assert_false(st.cfa_is_expr);
	assert_int_equal(k->kind - KUNW_K_CFA_REG, st.cfa_reg);
	assert_true(st.cfa_reg != a->sp && st.cfa_reg != a->fp);
	assert_int_equal(k->cfa_off, st.cfa_off);
	assert_int_equal(st.regs[a->ra].kind, CFI_R_OFFSET);
	assert_int_equal(k->ra_off, st.regs[a->ra].off);
	const struct cfi_reg_rule *bp = &st.regs[a->fp];
	assert_int_equal(!!(k->flags & KUNW_RF_BP_SAVED), bp->kind == CFI_R_OFFSET);
	assert_int_equal(!!(k->flags & KUNW_RF_BP_UNDEF), bp->kind == CFI_R_UNDEF);
	if (bp->kind == CFI_R_OFFSET)
		assert_int_equal(k->bp_off, bp->off);
	for (unsigned i = 0; i < a->nregs; i++) {
		const struct cfi_reg_rule *rr = &st.regs[i];
		int s = -1;
		for (unsigned j = 0; j < KUNW_NSAVED; j++)
			if (a->saved[j] == i)
				s = (int)j;
		if (s >= 0)
			assert_int_equal(k->saved[s] * 8, rr->kind == CFI_R_OFFSET ? rr->off : 0);
		else if (i != a->ra && i != a->fp)
			assert_int_equal(rr->kind, CFI_R_SAME);
	}
}

/* The rule lib/unwind takes at pc, as the program's table must say it. */
static void expect_rule(const struct unw_code *code, uint64_t pc, const struct kunw_rule *k, struct kinds *kinds)
{
	const struct cfi_rule *r;
	assert_true(k->kind < KUNW_K_CFA_REG_END);
	kinds->n[k->kind]++;
	if (code->cfi && cfi_table_search(code->cfi, pc, &r)) {
		assert_int_equal(!!(k->flags & KUNW_RF_SIGNAL), !!(r->flags & CFI_F_SIGNAL));
		assert_false(k->flags & KUNW_RF_SFRAME);
		if (r->flags & CFI_F_END) {
			assert_int_equal(k->kind, KUNW_K_END);
		} else if (r->flags & CFI_F_COMPLEX) {
			if (k->kind >= KUNW_K_CFA_REG && k->kind < KUNW_K_CFA_REG_END) {
				expect_cfa_reg(code, r, pc, k);
				kinds->cfa_reg++;
				return;
			}
			assert_true(k->kind == KUNW_K_PLT_EXPR || k->kind == KUNW_K_SIGNAL || k->kind == KUNW_K_FALLBACK);
			if (k->kind == KUNW_K_PLT_EXPR && k->cfa_off == 11)
				kinds->plt_thresh11++;
		} else {
			assert_int_equal(k->kind, r->cfa_reg == 7 ? KUNW_K_CFA_SP : KUNW_K_CFA_FP);
			assert_int_equal(k->cfa_off, r->cfa_off);
			assert_int_equal(k->ra_off, r->ra_off);
			assert_int_equal(!!(k->flags & KUNW_RF_BP_SAVED), !!(r->flags & CFI_F_BP_SAVED));
			assert_int_equal(!!(k->flags & KUNW_RF_BP_UNDEF), !!(r->flags & CFI_F_BP_UNDEF));
			if (r->flags & CFI_F_BP_SAVED)
				assert_int_equal(k->bp_off, r->bp_off);
			assert_memory_equal(k->saved, r->saved, sizeof(k->saved));
		}
		return;
	}
	if (code->sframe && cfi_table_search(code->sframe, pc, &r)) {
		assert_true(k->flags & KUNW_RF_SFRAME);
		return;
	}
	bool plt = false;
	for (unsigned i = 0; i < code->nplt; i++)
		plt |= pc >= code->plt[i].lo && pc < code->plt[i].hi;
	assert_int_equal(k->kind, plt ? KUNW_K_PLT : KUNW_K_NONE);
}

/* Every pc of the file's code and 4 KiB around it. */
static void check_file(const char *path, struct kinds *kinds)
{
	struct elfv *v;
	int e = elfv_open(path, 0, &v);
	if (e) {
		fprintf(stderr, "%s: %s\n", path, uw_strerror(e));
		fail();
	}
	struct unw_tables c;
	struct kunw_table t;
	assert_int_equal(kunw_code_build(&c, v, NULL), 0);
	assert_int_equal(kunw_table_build(&t, &c.code), 0);
	memset(kinds, 0, sizeof(*kinds));
	uint64_t lo = UINT64_MAX, hi = 0;
	for (size_t i = 0; i < v->nloads; i++)
		if (v->loads[i].flags & 1 /* PF_X */) {
			lo = UW_MIN(lo, v->loads[i].vaddr);
			hi = UW_MAX(hi, v->loads[i].vaddr + v->loads[i].memsz);
		}
	assert_true(lo < hi);
	lo = lo > 4096 ? lo - 4096 : 0;
	for (uint64_t pc = lo; pc < hi + 4096; pc++) {
		struct kunw_rule k, got;
		uint32_t a, z;
		assert_true(kunw_table_find(&t, pc, &k, &a, &z));
		expect_rule(&c.code, pc, &k, kinds);
		/* the extent the program's cache keeps the rule for: the same rule at both ends */
		assert_true(a <= pc && pc < z);
		assert_true(kunw_table_find(&t, a, &got, NULL, NULL));
		assert_memory_equal(&got, &k, sizeof(k));
		assert_true(kunw_table_find(&t, z - 1, &got, NULL, NULL));
		assert_memory_equal(&got, &k, sizeof(k));
	}
	/* 8 bytes a row, the rules deduplicated, in 64-byte lines */
	assert_true(t.nrules < t.nrows || t.nrows < 4);
	assert_true(kunw_table_bytes(&t) <= (uint64_t)t.nrows * 8 + (uint64_t)t.nrules * 16 +
	                                        ((uint64_t)t.nblocks / KUNW_INDEX_PER_LINE + 1) * 64 + 3 * 64);
	kunw_table_free(&t);
	unw_tables_free(&c);
	elfv_close(v);
}

static void test_libc(void **state)
{
	(void)state;
	struct kinds k;
	check_file("/lib/x86_64-linux-gnu/libc.so.6", &k);
	/* __restore_rt's row is the kernel's signal frame; the rest is plain rows */
	assert_true(k.n[KUNW_K_SIGNAL] > 0);
	assert_true(k.n[KUNW_K_CFA_SP] > 100000);
}

static void test_ld_so(void **state)
{
	(void)state;
	struct kinds k;
	check_file("/lib64/ld-linux-x86-64.so.2", &k);
	assert_true(k.n[KUNW_K_CFA_SP] > 10000);
	/* _dl_runtime_resolve_{fxsave,xsave,xsavec}'s body: CFA = rbx + 32 (lazy binding) */
	assert_true(k.n[KUNW_K_CFA_REG + 3] > 0);
}

static void test_program(void **state)
{
	(void)state;
	struct kinds k;
	check_file(DEEPREC_PATH, &k);
	/* its .plt: the toolchains' expression, 11 bytes into each 16-byte stub */
	assert_true(k.plt_thresh11 > 0);
	assert_int_equal(k.n[KUNW_K_FALLBACK], 0);
}

static void test_cfi_cases(void **state)
{
	(void)state;
	struct kinds k;
	check_file(CFI_CASES_PATH, &k);
	/* expressions the program does not follow are handed over */
	assert_true(k.n[KUNW_K_FALLBACK] > 0);
}

/* ---- records */

static uint64_t REC[512];

static bool find_fp(void *ctx, uint64_t pc, struct unw_pc_info *out)
{
	(void)ctx;
	if (pc < 0x1000 || pc >= 0x2000)
		return false;
	out->module = REC;
	out->map_addr = pc;
	out->bias = 0;
	out->code = NULL; /* frame pointers only */
	return true;
}

static void test_decode(void **state)
{
	(void)state;
	struct kunw_sample s;
	struct kunw_rec *r = (struct kunw_rec *)REC;
	memset(REC, 0, sizeof(REC));
	r->nkernel = 2;
	r->nuser = 3;
	/* frames alone */
	r->size = sizeof(*r) + 5 * 8;
	assert_int_equal(sizeof(*r), 64);
	assert_int_equal(kunw_sample_decode(REC, r->size, &s), 0);
	assert_ptr_equal(s.kernel, (uint64_t *)(r + 1));
	assert_ptr_equal(s.user, s.kernel + 2);
	assert_null(s.regs);
	r->copy_len = 16; /* a copy without registers */
	r->size += 16;
	assert_int_equal(kunw_sample_decode(REC, r->size, &s), -UW_EFORMAT);
	/* registers and a copy after the frames */
	r->flags = KUNW_F_REGS;
	r->size = sizeof(*r) + (5 + KUNW_NREGS) * 8 + 16;
	assert_int_equal(kunw_sample_decode(REC, r->size, &s), 0);
	assert_ptr_equal(s.regs, s.user + 3);
	assert_ptr_equal(s.stack, (uint8_t *)(s.regs + KUNW_NREGS));
	assert_int_equal(kunw_sample_decode(REC, r->size - 1, &s), -UW_EFORMAT);
	r->copy_len = 24;
	assert_int_equal(kunw_sample_decode(REC, sizeof(REC), &s), -UW_EFORMAT);
	r->copy_len = 16;
	r->nuser = KUNW_MAX_FRAMES + 1;
	assert_int_equal(kunw_sample_decode(REC, sizeof(REC), &s), -UW_EFORMAT);
}

/* A walk handed over at its third frame: the registers there and the stack from its sp; user
 * space goes on by the frame-pointer rule to the root. */
static void test_finish(void **state)
{
	(void)state;
	struct kunw_rec *r = (struct kunw_rec *)REC;
	memset(REC, 0, sizeof(REC));
	const uint64_t sp = 0x7000;
	r->nkernel = 1;
	r->nuser = 2;
	r->stop = KUNW_STOP_FALLBACK;
	r->fb_reason = KUNW_FB_NO_TABLE;
	r->flags = KUNW_F_REGS | KUNW_F_IS_CALL;
	r->method = KUNW_M_CFI;
	r->valid = (1u << KUNW_NREGS) - 1;
	uint64_t *p = (uint64_t *)(r + 1);
	p[0] = 0xffffffff81000000ull;                        /* kernel */
	p[1] = 0x1000;                                       /* frame 0 */
	p[2] = 0x1010 | (uint64_t)KUNW_M_CFI << KUNW_METHOD_SHIFT;
	uint64_t *regs = p + 3;                              /* the registers of the third frame */
	regs[KUNW_R_RIP] = 0x1020;
	regs[KUNW_R_RSP] = sp;
	regs[KUNW_R_RBP] = sp + 16;
	uint64_t stack[4] = { 0, 0, 0 /* caller's rbp: the root */, 0x1030 };
	memcpy(regs + KUNW_NREGS, stack, sizeof(stack));
	r->copy_len = sizeof(stack);
	r->size = sizeof(*r) + (3 + KUNW_NREGS) * 8 + sizeof(stack);
	struct kunw_sample s;
	assert_int_equal(kunw_sample_decode(REC, r->size, &s), 0);
	struct uw_frame f[8];
	struct kunw_result res;
	struct unw_opts o = { .max_frames = 8, .arch = &cfi_arch_x86_64 };
	kunw_finish(&s, &o, find_fp, NULL, f, 8, &res);
	assert_int_equal(res.nkernel, 2);
	assert_true(res.finished);
	assert_int_equal(res.n, 4);
	assert_int_equal(res.stop, UW_STOP_END_OF_STACK);
	const uint64_t pcs[4] = { 0x1000, 0x1010, 0x1020, 0x1030 };
	const uint8_t methods[4] = { UW_METHOD_REGS, UW_METHOD_CFI, UW_METHOD_CFI, UW_METHOD_FP };
	for (unsigned i = 0; i < 4; i++) {
		assert_int_equal(f[i].pc, pcs[i]);
		assert_int_equal(f[i].method, methods[i]);
		assert_int_equal(f[i].is_call, i > 0);
	}
	/* capped: the program's frames only, said so */
	kunw_finish(&s, &o, find_fp, NULL, f, 2, &res);
	assert_int_equal(res.n, 2);
	assert_int_equal(res.stop, UW_STOP_MAX_FRAMES);
}


/* One FDE of 100,000 states alternating CFA = rbx + 8 (COMPLEX to lib/cfi: a row each) and
 * CFA = rsp + 8: each converted (KUNW_K_CFA_REG + rbx, KUNW_K_CFA_SP), and the FDE's program run
 * once, not once per COMPLEX row (which took its length each: 50,000 x 150 KiB on average). */
static void test_many_complex_states(void **state)
{
	(void)state;
	enum { N = 100000 };
	size_t cap = 64 + 3 * (size_t)N + 16;
	uint8_t *b = calloc(1, cap), *p = b;
#define PUT32(v) do { uint32_t v_ = (v); memcpy(p, &v_, 4); p += 4; } while (0)
	assert_non_null(b);
	/* CIE: version 1, "zR", code 1, data -8, ra 16, udata4 pointers; CFA = rsp + 8, ra at CFA - 8 */
	static const uint8_t cie[] = { 1, 'z', 'R', 0, 1, 0x78, 16, 1, 0x03, 0x0c, 7, 8, 0x90, 1, 0, 0 };
	PUT32(4 + sizeof(cie));
	PUT32(0);
	memcpy(p, cie, sizeof(cie));
	p += sizeof(cie);
	uint8_t *fde = p;
	p += 4; /* (its length, below) */
	PUT32((uint32_t)(p - b)); /* the CIE pointer: back to offset 0 */
	PUT32(0x1000);            /* pc_begin (absolute) */
	PUT32(N);                 /* pc_range: a byte a state */
	*p++ = 0;                 /* augmentation data */
	for (int i = 1; i < N; i++) {
		*p++ = 0x41;                            /* DW_CFA_advance_loc 1 */
		*p++ = 0x0d;                            /* DW_CFA_def_cfa_register */
		*p++ = (i & 1) ? 3 : 7;                 /* rbx, rsp */
	}
	while ((p - fde) % 4)
		*p++ = 0;
	uint32_t flen = (uint32_t)(p - fde - 4);
	memcpy(fde, &flen, 4);
	PUT32(0); /* terminator */
#undef PUT32
	struct cfi_section sec = { b, (uint64_t)(p - b), 0x100000, true };
	struct cfi_table t;
	assert_int_equal(cfi_table_build(&t, &cfi_arch_x86_64, &sec, NULL), 0);
	assert_true(t.n >= N);
	struct unw_code code = { .cfi = &t };
	struct kunw_table kt;
	struct timespec t0, t1;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	assert_int_equal(kunw_table_build(&kt, &code), 0);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
	double cpu = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	printf("100,000 states, half of them COMPLEX: table built in %.3f s of CPU\n", cpu);
	for (uint64_t pc = 0x1000; pc < 0x1000 + N; pc += 997) {
		struct kunw_rule k;
		assert_true(kunw_table_find(&kt, pc, &k, NULL, NULL));
		if ((pc - 0x1000) & 1) {
			assert_int_equal(k.kind, KUNW_K_CFA_REG + 3);
			assert_int_equal(k.cfa_off, 8);
			assert_int_equal(k.ra_off, -8);
		} else {
			assert_int_equal(k.kind, KUNW_K_CFA_SP);
		}
	}
	/* (linear: milliseconds; once per row it was tens of seconds) */
	assert_true(cpu < 2.0);
	kunw_table_free(&kt);
	cfi_table_free(&t);
	free(b);
}

/* The reason a refused program's verifier log gives (kunw_open's err ends with the log): the
 * line that says why, not the statistics after it nor the instructions before. */
static void test_verifier_why(void **state)
{
	(void)state;
	static const char log[] =
		"; __u64 *v = &w->chunk[first]; @ kunw.bpf.c:612\n"
		"2145: (0f) r2 += r3                   ; frame1: R2=map_value(map=kunw_scratch,ks=4,vs=93480)\n"
		"2146: (79) r1 = *(u64 *)(r2 +0)\n"
		"R2 unbounded memory access, make sure to bounds check any such access\n"
		"processed 48213 insns (limit 1000000) max_states_per_insn 4 total_states 2510 peak_states 1960\n"
		"verification time 58310 usec\n"
		"stack depth 120+96\n";
	size_t n;
	const char *w = kunw_verifier_why(log, &n);
	assert_int_equal(n, strlen("R2 unbounded memory access, make sure to bounds check any such access"));
	assert_memory_equal(w, "R2 unbounded", 12);
	/* a log of instructions only, or of one line, or empty: its first line */
	w = kunw_verifier_why("12: (85) call bpf_loop#181\n13: (95) exit\n", &n);
	assert_int_equal(n, strlen("12: (85) call bpf_loop#181"));
	w = kunw_verifier_why("loading the BPF program: Permission denied", &n);
	assert_int_equal(n, strlen("loading the BPF program: Permission denied"));
	w = kunw_verifier_why("", &n);
	assert_int_equal(n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_libc),
		cmocka_unit_test(test_ld_so),
		cmocka_unit_test(test_program),
		cmocka_unit_test(test_cfi_cases),
		cmocka_unit_test(test_many_complex_states),
		cmocka_unit_test(test_decode),
		cmocka_unit_test(test_finish),
		cmocka_unit_test(test_verifier_why),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
