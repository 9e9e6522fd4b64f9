/* SPDX-License-Identifier: MIT */
/* Unwinder steps on synthetic stacks, with the CFI of cfi_cases.S. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cfi/cfi.h"
#include "elf/elfview.h"
#include "symbolize/symtab.h"
#include "cfi_fixture.h"
#include "unwind/unwind.h"

static struct unw_code CODE;
static uint64_t STACK[512]; /* base 0x7000 */
#define BASE 0x7000u
#define MODULE_END 0x100000u

static bool find(void *ctx, uint64_t pc, struct unw_pc_info *out)
{
	(void)ctx;
	if (pc >= MODULE_END)
		return false;
	out->module = &CODE;
	out->map_addr = pc;
	out->bias = 0;
	out->code = &CODE;
	return true;
}

static void put(uint64_t addr, uint64_t v)
{
	STACK[(addr - BASE) / 8] = v;
}

/* Registers at pc with stack pointer sp and frame pointer bp (run() marks them valid). */
static struct unw_regs regs_at(uint64_t pc, uint64_t sp, uint64_t bp)
{
	struct unw_regs r = { 0 };
	r.r[16] = pc;
	r.r[7] = sp;
	r.r[6] = bp;
	return r;
}

/* (valid: registers known beyond pc, sp and bp) */
static void run_valid(struct unw_regs *r, uint32_t valid, struct uw_frame *f, struct unw_result *res)
{
	struct unw_stack st = { BASE, (const uint8_t *)STACK, sizeof(STACK), NULL, NULL };
	struct unw_opts o = { .max_frames = 64, .arch = &cfi_arch_x86_64 };
	r->valid = (1u << 6) | (1u << 7) | (1u << 16) | valid;
	unw_run(&o, r, &st, find, NULL, f, res);
}

static void run(struct unw_regs *r, struct uw_frame *f, struct unw_result *res)
{
	run_valid(r, 0, f, res);
}

/* The memory-read hook: a copy cut to its first 8 bytes, the rest pulled once when a read
 * wants it, unwinds as the whole copy does, in one pass; a hook that cannot give it: the
 * unwind stops where the cut copy ends. */
static unsigned fetches;
static const uint8_t *fetch_all(void *ctx, uint64_t *size)
{
	fetches++;
	*size = sizeof(STACK);
	return ctx;
}
static const uint8_t *fetch_none(void *ctx, uint64_t *size)
{
	(void)ctx, (void)size;
	fetches++;
	return NULL;
}

static void test_read_hook(void **state)
{
	(void)state;
	memset(STACK, 0, sizeof(STACK));
	put(BASE + 0x10, 0x5555);
	put(BASE + 0x18, addr_of("case_root") + 1);
	for (int give = 1; give >= 0; give--) {
		struct unw_regs r = regs_at(addr_of("case_frame_body") + 1, BASE, BASE + 0x10);
		r.valid = (1u << 6) | (1u << 7) | (1u << 16);
		uint64_t reach = 0;
		struct unw_stack_more more = { give ? fetch_all : fetch_none, STACK, NULL, 0, false };
		struct unw_stack st = { BASE, (const uint8_t *)STACK, 8, &reach, &more };
		struct unw_opts o = { .max_frames = 64, .arch = &cfi_arch_x86_64 };
		struct uw_frame f[64];
		struct unw_result res;
		fetches = 0;
		unw_run(&o, &r, &st, find, NULL, f, &res);
		assert_int_equal(fetches, 1);
		assert_true(reach >= 0x20); /* it wanted the return address */
		if (give) {
			assert_int_equal(res.n, 2);
			assert_int_equal(res.stop, UW_STOP_END_OF_STACK);
			assert_int_equal(f[1].pc, addr_of("case_root") + 1);
			assert_int_equal(f[1].method, UW_METHOD_CFI);
		} else {
			assert_int_equal(res.n, 1);
			assert_int_equal(res.stop, UW_STOP_STACK_EXHAUSTED);
		}
	}
}

static void test_cfa_from_rbp_then_root(void **state)
{
	(void)state;
	memset(STACK, 0, sizeof(STACK));
	struct unw_regs r = regs_at(addr_of("case_frame_body") + 1, BASE, BASE + 0x10);
	put(BASE + 0x10, 0x5555);                 /* saved rbp */
	put(BASE + 0x18, addr_of("case_root") + 1); /* return address */
	struct uw_frame f[64];
	struct unw_result res;
	run(&r, f, &res);
	assert_int_equal(res.n, 2);
	assert_int_equal(res.stop, UW_STOP_END_OF_STACK);
	assert_int_equal(f[0].pc, addr_of("case_frame_body") + 1);
	assert_int_equal(f[0].method, UW_METHOD_REGS);
	assert_int_equal(f[1].pc, addr_of("case_root") + 1);
	assert_int_equal(f[1].is_call, 1);
	assert_int_equal(f[1].method, UW_METHOD_CFI);
	assert_int_equal(r.r[6], 0x5555);
	assert_int_equal(r.r[7], BASE + 0x20);
}

static void test_epilogue_keeps_popped_rbp(void **state)
{
	(void)state;
	memset(STACK, 0, sizeof(STACK));
	/* bp: already popped: this is the caller's value */
	struct unw_regs r = regs_at(addr_of("case_frame_ret"), BASE + 8, 0x1234);
	put(BASE, 0xdead); /* stale slot below sp: must not be read */
	put(BASE + 8, addr_of("case_root") + 1);
	struct uw_frame f[64];
	struct unw_result res;
	run(&r, f, &res);
	assert_int_equal(res.n, 2);
	assert_int_equal(res.stop, UW_STOP_END_OF_STACK);
	assert_int_equal(r.r[6], 0x1234);
}

/* A DRAP function (realigned stack): in its body rbp is read from [rbp]; after `leave` the
 * same rule would read the caller's memory at the caller's rbp (or fail on a value that is no
 * address): the slot lies outside the frame, rbp is kept. */
static void test_drap_epilogue_keeps_restored_rbp(void **state)
{
	(void)state;
	uint64_t cfa = BASE + 0x40, callers[] = { 0x5555, BASE + 0x100 };
	for (unsigned k = 0; k < 2; k++) {
		memset(STACK, 0, sizeof(STACK));
		put(cfa - 8, addr_of("case_root") + 1); /* the return address */
		put(BASE + 0x28, addr_of("case_root") + 1); /* its copy, realigned */
		put(BASE + 0x20, 0x4242);               /* the caller's rbp, saved */
		put(BASE + 0x18, cfa);                  /* the DRAP register, saved */
		put(BASE + 0x100, 0xdead);              /* the caller's memory: not to be read */
		/* in the body */
		struct unw_regs r = regs_at(addr_of("case_drap_body"), BASE + 0x18, BASE + 0x20);
		struct uw_frame f[64];
		struct unw_result res;
		run(&r, f, &res);
		assert_int_equal(res.n, 2);
		assert_int_equal(res.stop, UW_STOP_END_OF_STACK);
		assert_int_equal(r.r[6], 0x4242);
		/* after `leave`: rbp is the caller's */
		r = regs_at(addr_of("case_drap_left"), BASE + 0x28, callers[k]);
		r.r[10] = cfa;
		run_valid(&r, 1u << 10, f, &res);
		assert_int_equal(res.n, 2);
		assert_int_equal(res.stop, UW_STOP_END_OF_STACK);
		assert_int_equal(f[1].pc, addr_of("case_root") + 1);
		assert_int_equal(r.r[6], callers[k]);
	}
}

static void test_frame_pointer_fallback(void **state)
{
	(void)state;
	memset(STACK, 0, sizeof(STACK));
	struct unw_regs r = regs_at(addr_of("case_nocfi"), BASE, BASE + 0x100);
	put(BASE + 0x100, 0);          /* outermost: next rbp is zero */
	put(BASE + 0x108, 0x900000);   /* an address in no mapping (JIT code, say) */
	struct uw_frame f[64];
	struct unw_result res;
	run(&r, f, &res);
	assert_int_equal(res.n, 2);
	assert_int_equal(f[1].pc, 0x900000);
	assert_int_equal(f[1].method, UW_METHOD_FP);
	assert_null(f[1].module);
	assert_int_equal(res.stop, UW_STOP_END_OF_STACK);
}

static void test_expression_loop_stops(void **state)
{
	(void)state;
	memset(STACK, 0, sizeof(STACK));
	struct unw_regs r = { 0 };
	uint64_t pc = addr_of("case_expr");
	r.r[16] = pc;
	r.r[7] = BASE;
	/* CFA = *(rsp + 8) = BASE + 8: the return address at BASE is case_expr + 1 again,
	 * and the next CFA computed from the new rsp does not move */
	put(BASE, pc + 1);
	put(BASE + 8, BASE + 8);
	put(BASE + 16, BASE + 8);
	struct uw_frame f[64];
	struct unw_result res;
	run(&r, f, &res);
	assert_int_equal(res.stop, UW_STOP_NO_PROGRESS);
	assert_int_equal(res.n, 2);
	assert_true(res.ncomplex >= 1);
}

static void test_signal_frame_exact_pc(void **state)
{
	(void)state;
	memset(STACK, 0, sizeof(STACK));
	struct unw_regs r = regs_at(addr_of("case_signal"), BASE, 0);
	put(BASE, addr_of("case_root")); /* the interrupted pc: exact, at the function start */
	struct uw_frame f[64];
	struct unw_result res;
	run(&r, f, &res);
	assert_int_equal(res.n, 2);
	assert_int_equal(f[1].is_call, 0); /* looked up at pc, not pc - 1 */
	assert_int_equal(f[1].method, UW_METHOD_SIGNAL);
	assert_int_equal(res.stop, UW_STOP_END_OF_STACK);
}

static void test_syscall_return_at_fde_end(void **state)
{
	(void)state;
	/* a sample in a syscall: the user pc follows the `syscall` instruction and may be the first
	 * byte after the FDE (rt_sigreturn); the row of the instruction before applies */
	memset(STACK, 0, sizeof(STACK));
	uint64_t end = addr_of("case_signal") + 2; /* nop; ret: the FDE ends here */
	put(BASE, addr_of("case_root"));
	struct unw_stack st = { BASE, (const uint8_t *)STACK, sizeof(STACK), NULL, NULL };
	struct unw_opts o = { .max_frames = 64, .arch = &cfi_arch_x86_64, .in_syscall = true };
	struct unw_regs r = { .r = { [6] = 0, [7] = BASE, [16] = end }, .valid = (1u << 6) | (1u << 7) | (1u << 16) };
	struct uw_frame f[64];
	struct unw_result res;
	unw_run(&o, &r, &st, find, NULL, f, &res);
	assert_int_equal(res.n, 2);
	assert_int_equal(f[1].method, UW_METHOD_SIGNAL);
	/* not in a syscall: an exact pc at a function start must not borrow the previous row */
	o.in_syscall = false;
	r = (struct unw_regs){ .r = { [6] = 0, [7] = BASE, [16] = end }, .valid = (1u << 6) | (1u << 7) | (1u << 16) };
	unw_run(&o, &r, &st, find, NULL, f, &res);
	assert_int_equal(res.n, 1);
	assert_int_equal(res.stop, UW_STOP_END_OF_STACK); /* frame-pointer fallback: rbp 0 */
}

static void test_return_address_in_register(void **state)
{
	(void)state;
	memset(STACK, 0, sizeof(STACK));
	struct uw_frame f[64];
	struct unw_result res;
	struct unw_stack st = { BASE, (const uint8_t *)STACK, sizeof(STACK), NULL, NULL };
	struct unw_opts o = { .max_frames = 64, .arch = &cfi_arch_x86_64 };
	struct unw_regs r = { .r = { [5] = addr_of("case_root") + 1, [6] = 0, [7] = BASE, [16] = addr_of("case_vfork_popped") },
			      .valid = (1u << 5) | (1u << 6) | (1u << 7) | (1u << 16) };
	unw_run(&o, &r, &st, find, NULL, f, &res);
	assert_int_equal(res.n, 2);
	assert_int_equal(f[1].pc, addr_of("case_root") + 1);
	assert_int_equal(res.stop, UW_STOP_END_OF_STACK);
	assert_int_equal(r.r[7], BASE); /* the stack pointer did not move, once */
}

static void test_function_entry_without_cfi(void **state)
{
	(void)state;
	/* frame 0 at the first instruction of code without CFI, frame pointer unusable: the return
	 * address at the stack pointer is taken when the caller's CFI covers the call */
	memset(STACK, 0, sizeof(STACK));
	put(BASE, addr_of("case_root") + 1);
	struct uw_frame f[64];
	struct unw_result res;
	/* bp: garbage: below the stack */
	struct unw_regs r = regs_at(addr_of("case_nocfi"), BASE, 0x10);
	run(&r, f, &res);
	assert_int_equal(res.n, 2);
	assert_int_equal(f[1].pc, addr_of("case_root") + 1);
	assert_int_equal(f[1].method, UW_METHOD_PLT);
	assert_int_equal(res.stop, UW_STOP_END_OF_STACK);
	/* not a return address (no CFI before it): no guess */
	memset(STACK, 0, sizeof(STACK));
	put(BASE, 0x900000);
	r = regs_at(addr_of("case_nocfi"), BASE, 0x10);
	run(&r, f, &res);
	assert_int_equal(res.n, 1);
	assert_int_not_equal(res.stop, UW_STOP_END_OF_STACK);
	/* crti's _fini run at exit: rbp is the caller's data and points into the stack, where
	 * the "return address" is outside every mapping; the one at the stack pointer wins */
	memset(STACK, 0, sizeof(STACK));
	put(BASE, addr_of("case_root") + 1);
	put(BASE + 0x40, BASE + 0x80);
	put(BASE + 0x48, 0x900002);
	r = regs_at(addr_of("case_nocfi"), BASE, BASE + 0x40);
	run(&r, f, &res);
	assert_int_equal(res.n, 2);
	assert_int_equal(f[1].pc, addr_of("case_root") + 1);
	assert_int_equal(f[1].method, UW_METHOD_PLT);
	/* a frame-pointer chain to a mapped return address is kept */
	put(BASE + 0x48, addr_of("case_root") + 1);
	put(BASE, 0x900000);
	r = regs_at(addr_of("case_nocfi"), BASE, BASE + 0x40);
	run(&r, f, &res);
	assert_true(res.n >= 2);
	assert_int_equal(f[1].pc, addr_of("case_root") + 1);
	assert_int_equal(f[1].method, UW_METHOD_FP);
}

static void test_stack_exhausted_and_limits(void **state)
{
	(void)state;
	memset(STACK, 0, sizeof(STACK));
	/* bp: the return address slot lies past the copy */
	struct unw_regs r = regs_at(addr_of("case_frame_body") + 1, BASE, BASE + sizeof(STACK) - 8);
	struct uw_frame f[64];
	struct unw_result res;
	run(&r, f, &res);
	assert_int_equal(res.stop, UW_STOP_STACK_EXHAUSTED);
	assert_int_equal(res.n, 1);
	/* missing registers */
	struct unw_regs none = { 0 };
	struct unw_stack st = { BASE, (const uint8_t *)STACK, sizeof(STACK), NULL, NULL };
	struct unw_opts o = { .max_frames = 64, .arch = &cfi_arch_x86_64 };
	unw_run(&o, &none, &st, find, NULL, f, &res);
	assert_int_equal(res.stop, UW_STOP_NO_REGS);
	assert_int_equal(res.n, 0);
	/* the frame limit */
	memset(STACK, 0, sizeof(STACK));
	for (unsigned i = 0; i < 100; i++) { /* a long frame-pointer chain in unmapped code */
		put(BASE + 16 * i, BASE + 16 * (i + 1));
		put(BASE + 16 * i + 8, 0x900000 + i);
	}
	r = regs_at(0x900000, BASE, BASE);
	r.valid = (1u << 6) | (1u << 7) | (1u << 16);
	o.max_frames = 10;
	unw_run(&o, &r, &st, find, NULL, f, &res);
	assert_int_equal(res.stop, UW_STOP_MAX_FRAMES);
	assert_int_equal(res.n, 10);
}

/* Hostile stacks: a frame-pointer chain that points back at itself, and one that leads to
 * lower addresses. Each stops at once with its reason, never going round. */
static void test_looping_and_descending_stacks(void **state)
{
	(void)state;
	struct uw_frame f[64];
	struct unw_result res;
	struct unw_regs r;
	/* rbp -> itself: the next frame would have the same stack pointer */
	memset(STACK, 0, sizeof(STACK));
	put(BASE + 0x40, BASE + 0x40);
	put(BASE + 0x48, addr_of("case_nocfi") + 1);
	r = regs_at(addr_of("case_nocfi"), BASE, BASE + 0x40);
	run(&r, f, &res);
	assert_int_equal(res.stop, UW_STOP_NO_PROGRESS);
	assert_true(res.n <= 3);
	/* a two-frame cycle: A -> B -> A */
	memset(STACK, 0, sizeof(STACK));
	put(BASE + 0x40, BASE + 0x80);
	put(BASE + 0x48, addr_of("case_nocfi") + 1);
	put(BASE + 0x80, BASE + 0x40);
	put(BASE + 0x88, addr_of("case_nocfi") + 2);
	r = regs_at(addr_of("case_nocfi"), BASE, BASE + 0x40);
	run(&r, f, &res);
	assert_int_equal(res.stop, UW_STOP_NO_PROGRESS);
	assert_true(res.n <= 4);
	/* the chain goes down the stack: the caller's frame below the callee's */
	memset(STACK, 0, sizeof(STACK));
	put(BASE + 0x100, BASE + 0x20);
	put(BASE + 0x108, addr_of("case_nocfi") + 1);
	put(BASE + 0x20, 0);
	put(BASE + 0x28, addr_of("case_nocfi") + 3);
	r = regs_at(addr_of("case_nocfi"), BASE + 0x100, BASE + 0x100);
	run(&r, f, &res);
	assert_int_equal(res.stop, UW_STOP_NO_PROGRESS);
	assert_int_equal(res.n, 2);
	assert_int_equal(f[1].pc, addr_of("case_nocfi") + 1);
}

static int setup(void **state)
{
	fixture_setup(state);
	CODE.cfi = &T;
	assert_true(addr_of("case_nocfi") < MODULE_END);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cfa_from_rbp_then_root),
		cmocka_unit_test(test_read_hook),
		cmocka_unit_test(test_epilogue_keeps_popped_rbp),
		cmocka_unit_test(test_drap_epilogue_keeps_restored_rbp), cmocka_unit_test(test_frame_pointer_fallback),
		cmocka_unit_test(test_expression_loop_stops),
		cmocka_unit_test(test_signal_frame_exact_pc),
		cmocka_unit_test(test_stack_exhausted_and_limits),
		cmocka_unit_test(test_looping_and_descending_stacks),
		cmocka_unit_test(test_syscall_return_at_fde_end),
		cmocka_unit_test(test_return_address_in_register),
		cmocka_unit_test(test_function_entry_without_cfi),
	};
	return cmocka_run_group_tests(tests, setup, fixture_teardown);
}
