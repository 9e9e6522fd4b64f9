/* SPDX-License-Identifier: MIT */
/* The off-CPU pairing's rules (lib/perf/write/offcpu.c, docs/offcpu.md): a wait is its switch-out to
 * its switch-in; short waits added up per thread and stack; exits; waits open at the end; one
 * stack in N with every wait timed; a switch-out delivered after its switch-in; waits timed in
 * the kernel, unwalked ones given the stack walked with their key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "perf/perf.h"

struct got {
	struct offcpu_stack s[64];
	uint64_t first[64]; /* the first address of each chain */
	unsigned n;
};

static int emit(void *ctx, const struct offcpu_stack *s)
{
	struct got *g = ctx;
	assert_true(g->n < 64);
	g->first[g->n] = s->nk + s->nu ? s->chain[0] : 0;
	g->s[g->n++] = *s;
	return 0;
}

static const uint64_t stack_a[] = { 0xffffffff81000000u, 0x401000, 0x402000 };
static const uint64_t stack_b[] = { 0xffffffff81000000u, 0x403000 };

static int out(struct offcpu *oc, uint32_t tid, uint64_t t, const uint64_t *chain, uint32_t n)
{
	struct offcpu_stack s = { .id = 7, .ip = chain[0], .time = t, .cpu = 1, .pid = 100, .tid = tid,
				  .nk = 1, .nu = n - 1, .chain = chain };
	return offcpu_switch_out(oc, &s);
}

#define MS 1000000u

static void test_long_waits(void **state)
{
	(void)state;
	struct got g = { 0 };
	struct offcpu_opts o = { .min_ns = 500000 };
	struct offcpu *oc = offcpu_new(&o, emit, &g);
	assert_non_null(oc);
	assert_int_equal(out(oc, 101, 10 * MS, stack_a, 3), 0);
	assert_int_equal(g.n, 0); /* held until the thread runs again */
	assert_int_equal(offcpu_switch_in(oc, 100, 101, 30 * MS), 0);
	assert_int_equal(g.n, 1);
	assert_int_equal(g.s[0].period, 20 * MS);
	assert_int_equal(g.s[0].time, 30 * MS); /* at the switch-in */
	assert_int_equal(g.s[0].tid, 101);
	assert_int_equal(g.s[0].nk, 1);
	assert_int_equal(g.s[0].nu, 2);
	/* a switch-in with nothing held: nothing */
	assert_int_equal(offcpu_switch_in(oc, 100, 101, 31 * MS), 0);
	assert_int_equal(offcpu_switch_in(oc, 100, 999, 31 * MS), 0);
	assert_int_equal(g.n, 1);
	/* the idle task is not a thread */
	struct offcpu_stack idle = { .time = 40 * MS, .pid = 0, .tid = 0, .nk = 1, .chain = stack_a };
	assert_int_equal(offcpu_switch_out(oc, &idle), 0);
	assert_int_equal(offcpu_switch_in(oc, 0, 0, 50 * MS), 0);
	assert_int_equal(g.n, 1);
	struct offcpu_stats st;
	offcpu_stats(oc, &st);
	assert_int_equal(st.waits, 1);
	assert_int_equal(st.ns, 20 * MS);
	offcpu_free(oc);
}

static void test_short_waits_added_up(void **state)
{
	(void)state;
	struct got g = { 0 };
	struct offcpu_opts o = { .min_ns = 500000 };
	struct offcpu *oc = offcpu_new(&o, emit, &g);
	uint64_t t = 0;
	/* 200 us waits on stack a: written when the total reaches 500 us (the third), the rest at
	 * the end; 100 us waits on stack b apart */
	for (int i = 0; i < 4; i++) {
		assert_int_equal(out(oc, 101, t, stack_a, 3), 0);
		t += 200000;
		assert_int_equal(offcpu_switch_in(oc, 100, 101, t), 0);
		assert_int_equal(out(oc, 101, t, stack_b, 2), 0);
		t += 100000;
		assert_int_equal(offcpu_switch_in(oc, 100, 101, t), 0);
	}
	assert_int_equal(g.n, 1);
	assert_int_equal(g.s[0].period, 600000);
	assert_int_equal(g.first[0], stack_a[0]);
	assert_int_equal(g.s[0].nu, 2);
	assert_int_equal(offcpu_finish(oc, t + 1000), 0);
	assert_int_equal(g.n, 3);
	uint64_t a = 0, b = 0;
	for (unsigned i = 0; i < g.n; i++)
		*(g.s[i].nu == 2 ? &a : &b) += g.s[i].period;
	assert_int_equal(a, 800000);
	assert_int_equal(b, 400000);
	assert_int_equal(g.s[2].time, t + 1000); /* what is left: at the end */
	offcpu_free(oc);
}

static void test_exit_and_end(void **state)
{
	(void)state;
	struct got g = { 0 };
	struct offcpu_opts o = { .min_ns = 1 };
	struct offcpu *oc = offcpu_new(&o, emit, &g);
	/* a thread that exits: its last switch-out (after EXIT) is not a wait */
	assert_int_equal(out(oc, 102, 1 * MS, stack_a, 3), 0);
	offcpu_task(oc, 102, true, 1 * MS + 500);
	assert_int_equal(out(oc, 102, 2 * MS, stack_a, 3), 0);
	/* one blocked at the end: closed there */
	assert_int_equal(out(oc, 103, 5 * MS, stack_b, 2), 0);
	assert_int_equal(offcpu_finish(oc, 9 * MS), 0);
	assert_int_equal(g.n, 1);
	assert_int_equal(g.s[0].tid, 103);
	assert_int_equal(g.s[0].period, 4 * MS);
	struct offcpu_stats st;
	offcpu_stats(oc, &st);
	assert_int_equal(st.open_at_end, 1);
	/* the number given to a new thread (FORK): its waits count again */
	offcpu_task(oc, 102, false, 0);
	assert_int_equal(out(oc, 102, 10 * MS, stack_a, 3), 0);
	assert_int_equal(offcpu_switch_in(oc, 100, 102, 12 * MS), 0);
	assert_int_equal(g.n, 2);
	assert_int_equal(g.s[1].period, 2 * MS);
	offcpu_free(oc);
}

static void test_late_switch_out(void **state)
{
	(void)state;
	struct got g = { 0 };
	struct offcpu_opts o = { .min_ns = 1 };
	struct offcpu *oc = offcpu_new(&o, emit, &g);
	/* seen once switched out, then its switch-in comes before a held sample of the wait */
	assert_int_equal(out(oc, 101, 1 * MS, stack_a, 3), 0);
	assert_int_equal(offcpu_switch_in(oc, 100, 101, 2 * MS), 0);
	assert_int_equal(offcpu_switch_in(oc, 100, 101, 9 * MS), 0);
	assert_int_equal(out(oc, 101, 6 * MS, stack_b, 2), 0);
	assert_int_equal(g.n, 2);
	assert_int_equal(g.s[1].period, 3 * MS);
	assert_int_equal(g.s[1].time, 9 * MS);
	offcpu_free(oc);
}

/* A switch-out sample delivered after the thread has run and waited again (its sample came
 * later from another CPU's ring): closed by the switch-in that ended it, not by the last one,
 * and the newer wait keeps its own stack. */
static void test_late_switch_out_after_another_wait(void **state)
{
	(void)state;
	struct got g = { 0 };
	struct offcpu_opts o = { .min_ns = 1 };
	struct offcpu *oc = offcpu_new(&o, emit, &g);
	/* as it happened: out 1, in 2, out 6 (stack a), in 9, out 20 (stack b), in 30, out 40
	 * (stack b), in 41; as delivered: the sample of out 6 after out 40 */
	assert_int_equal(out(oc, 101, 1 * MS, stack_b, 2), 0);
	assert_int_equal(offcpu_switch_in(oc, 100, 101, 2 * MS), 0);
	assert_int_equal(offcpu_switch_in(oc, 100, 101, 9 * MS), 0);
	assert_int_equal(out(oc, 101, 20 * MS, stack_b, 2), 0);
	assert_int_equal(offcpu_switch_in(oc, 100, 101, 30 * MS), 0);
	assert_int_equal(out(oc, 101, 40 * MS, stack_b, 2), 0);
	assert_int_equal(g.n, 2);
	assert_int_equal(out(oc, 101, 6 * MS, stack_a, 3), 0);
	assert_int_equal(g.n, 3);
	assert_int_equal(g.s[2].nu, 2); /* stack a */
	assert_int_equal(g.s[2].period, 3 * MS); /* 6 to 9: not 6 to 30 */
	assert_int_equal(g.s[2].time, 9 * MS);
	assert_int_equal(offcpu_switch_in(oc, 100, 101, 41 * MS), 0);
	assert_int_equal(g.n, 4);
	assert_int_equal(g.s[3].nu, 1); /* the wait from 40 kept stack b */
	assert_int_equal(g.s[3].period, 1 * MS);
	offcpu_free(oc);
}

/* A new thread's first wait whose sample comes after its switch-in, and after its EXIT (the
 * sample from another CPU's ring, later than the records): the wait is closed by that
 * switch-in; the switch that ends its life is not a wait. */
static void test_late_first_switch_out(void **state)
{
	(void)state;
	struct got g = { 0 };
	struct offcpu_opts o = { .min_ns = 1 };
	struct offcpu *oc = offcpu_new(&o, emit, &g);
	/* as it happened: out 1 (stack a), in 21, EXIT 25, out 26 (its death); as delivered: in
	 * 21, EXIT 25, out 26, then the sample of out 1 */
	assert_int_equal(offcpu_switch_in(oc, 100, 105, 21 * MS), 0);
	offcpu_task(oc, 105, true, 25 * MS);
	assert_int_equal(out(oc, 105, 26 * MS, stack_b, 2), 0);
	assert_int_equal(g.n, 0);
	assert_int_equal(out(oc, 105, 1 * MS, stack_a, 3), 0);
	assert_int_equal(g.n, 1);
	assert_int_equal(g.s[0].tid, 105);
	assert_int_equal(g.s[0].nu, 2); /* stack a */
	assert_int_equal(g.s[0].period, 20 * MS);
	assert_int_equal(g.s[0].time, 21 * MS);
	/* the same before the EXIT: in 40 delivered before the sample of out 30 */
	assert_int_equal(offcpu_switch_in(oc, 100, 106, 40 * MS), 0);
	assert_int_equal(out(oc, 106, 30 * MS, stack_b, 2), 0);
	assert_int_equal(g.n, 2);
	assert_int_equal(g.s[1].tid, 106);
	assert_int_equal(g.s[1].period, 10 * MS);
	assert_int_equal(offcpu_finish(oc, 50 * MS), 0);
	assert_int_equal(g.n, 2); /* nothing left open */
	offcpu_free(oc);
}

static void test_one_stack_in_n(void **state)
{
	(void)state;
	struct got g = { 0 };
	struct offcpu_opts o = { .min_ns = 1, .every = 10 };
	struct offcpu *oc = offcpu_new(&o, emit, &g);
	/* before any stack: not counted */
	offcpu_switch_out_record(oc, 100, 101, 1 * MS);
	assert_int_equal(offcpu_switch_in(oc, 100, 101, 2 * MS), 0);
	assert_int_equal(g.n, 0);
	/* a sampled switch: its own record follows and changes nothing */
	assert_int_equal(out(oc, 101, 3 * MS, stack_a, 3), 0);
	offcpu_switch_out_record(oc, 100, 101, 3 * MS + 10);
	assert_int_equal(offcpu_switch_in(oc, 100, 101, 5 * MS), 0);
	assert_int_equal(g.n, 1);
	assert_int_equal(g.s[0].period, 2 * MS);
	/* unsampled: timed by its record, with the last stack; not scaled */
	offcpu_switch_out_record(oc, 100, 101, 6 * MS);
	assert_int_equal(offcpu_switch_in(oc, 100, 101, 7 * MS), 0);
	assert_int_equal(g.n, 2);
	assert_int_equal(g.s[1].period, 1 * MS);
	assert_int_equal(g.s[1].nu, 2);
	struct offcpu_stats st;
	offcpu_stats(oc, &st);
	assert_int_equal(st.unattributed, 1);
	offcpu_free(oc);
}

/* a walk (waits timed in the kernel): a switch-out with its key */
static int walk(struct offcpu *oc, uint32_t tid, uint64_t t, const uint64_t *chain, uint32_t n, uint64_t key)
{
	struct offcpu_stack s = { .id = 7, .ip = chain[0], .time = t, .cpu = 1, .pid = 100, .tid = tid,
				  .nk = 1, .nu = n - 1, .chain = chain, .key = key };
	return offcpu_switch_out(oc, &s);
}

static int sum(struct offcpu *oc, uint32_t tid, uint64_t t, uint64_t key, uint64_t ip, uint64_t ns, uint64_t n)
{
	struct offcpu_sum s = { .id = 7, .time = t, .cpu = 1, .pid = 100, .tid = tid, .key = key, .ip = ip, .ns = ns,
				.n = n };
	return offcpu_add(oc, &s);
}

/* Unwalked waits' totals go to the stack walked with their key: after the walk, or held until
 * one comes; a key walked on two stacks splits its time by how many walks found each. */
static void test_keyed(void **state)
{
	(void)state;
	struct got g = { 0 };
	struct offcpu_opts o = { .min_ns = 500000, .keyed = true };
	struct offcpu *oc = offcpu_new(&o, emit, &g);
	/* a walked wait: as a switch-out and its switch-in */
	assert_int_equal(walk(oc, 101, 1 * MS, stack_a, 3, 0x10), 0);
	assert_int_equal(offcpu_switch_in(oc, 100, 101, 3 * MS), 0);
	assert_int_equal(g.n, 1);
	assert_int_equal(g.s[0].period, 2 * MS);
	/* 3 waits of the same key, 2 ms in all: written with stack a */
	assert_int_equal(sum(oc, 101, 10 * MS, 0x10, 0x401000, 2 * MS, 3), 0);
	assert_int_equal(g.n, 2);
	assert_int_equal(g.s[1].period, 2 * MS);
	assert_int_equal(g.s[1].nu, 2);
	assert_int_equal(g.s[1].time, 10 * MS);
	assert_int_equal(g.first[1], stack_a[0]);
	/* a key not walked yet: held, then given to its first walk's stack */
	assert_int_equal(sum(oc, 101, 11 * MS, 0x20, 0x403000, 1 * MS, 2), 0);
	assert_int_equal(g.n, 2);
	assert_int_equal(walk(oc, 101, 12 * MS, stack_b, 2, 0x20), 0);
	assert_int_equal(g.n, 3);
	assert_int_equal(g.s[2].period, 1 * MS);
	assert_int_equal(g.s[2].nu, 1);
	assert_int_equal(offcpu_switch_in(oc, 100, 101, 13 * MS), 0);
	assert_int_equal(g.n, 4); /* (the walked wait itself) */
	/* a key walked twice on stack a and once on stack b: 3 ms split 2 to 1 */
	assert_int_equal(walk(oc, 102, 20 * MS, stack_a, 3, 0x30), 0);
	assert_int_equal(offcpu_switch_in(oc, 100, 102, 21 * MS), 0);
	assert_int_equal(walk(oc, 102, 22 * MS, stack_a, 3, 0x30), 0);
	assert_int_equal(offcpu_switch_in(oc, 100, 102, 23 * MS), 0);
	assert_int_equal(walk(oc, 102, 24 * MS, stack_b, 2, 0x30), 0);
	assert_int_equal(offcpu_switch_in(oc, 100, 102, 25 * MS), 0);
	assert_int_equal(g.n, 7);
	assert_int_equal(sum(oc, 102, 30 * MS, 0x30, 0x401000, 3 * MS, 6), 0);
	assert_int_equal(g.n, 9);
	assert_int_equal(g.s[7].period + g.s[8].period, 3 * MS);
	assert_int_equal(g.s[7].nu == 2 ? g.s[7].period : g.s[8].period, 2 * MS);
	/* keys are a thread's: thread 103's key 0x10 is none walked */
	assert_int_equal(sum(oc, 103, 31 * MS, 0x10, 0x405000, 1 * MS, 1), 0);
	assert_int_equal(g.n, 9);
	struct offcpu_stats st;
	offcpu_stats(oc, &st);
	assert_int_equal(st.keyed, 3 + 2 + 6);
	assert_int_equal(st.keyed_ns, 6 * MS);
	assert_int_equal(st.unkeyed, 0);
	/* at the end, the one no walk took: its pc alone, no kernel frames */
	assert_int_equal(offcpu_finish(oc, 40 * MS), 0);
	assert_int_equal(g.n, 10);
	assert_int_equal(g.s[9].tid, 103);
	assert_int_equal(g.s[9].period, 1 * MS);
	assert_int_equal(g.s[9].nk, 0);
	assert_int_equal(g.s[9].nu, 1);
	assert_int_equal(g.first[9], 0x405000);
	offcpu_stats(oc, &st);
	assert_int_equal(st.unkeyed, 1);
	assert_int_equal(st.unkeyed_ns, 1 * MS);
	assert_int_equal(st.ns, 2 * MS + 2 * MS + 1 * MS + 1 * MS + 3 * MS + 3 * MS + 1 * MS);
	offcpu_free(oc);
}

/* A thread that exits with time held for a key no walk had: written then, with its pc alone
 * (its number may come back as another thread, whose keys are its own). Short totals are
 * added up per stack as any wait. */
static void test_keyed_exit(void **state)
{
	(void)state;
	struct got g = { 0 };
	struct offcpu_opts o = { .min_ns = 500000, .keyed = true };
	struct offcpu *oc = offcpu_new(&o, emit, &g);
	assert_int_equal(sum(oc, 104, 1 * MS, 0x40, 0x406000, 300000, 4), 0);
	assert_int_equal(g.n, 0);
	offcpu_task(oc, 104, true, 0);
	assert_int_equal(offcpu_finish(oc, 5 * MS), 0);
	/* (under the minimum: added to its stack's total, written at the end) */
	assert_int_equal(g.n, 1);
	assert_int_equal(g.s[0].period, 300000);
	assert_int_equal(g.s[0].nu, 1);
	assert_int_equal(g.first[0], 0x406000);
	struct offcpu_stats st;
	offcpu_stats(oc, &st);
	assert_int_equal(st.unkeyed, 4);
	assert_int_equal(st.waits, 4);
	offcpu_free(oc);
}

/* A thread keeps its 1024 newest keys: the oldest one's held time is written (its pc alone)
 * when a new key would pass that. */
static void test_keyed_cap(void **state)
{
	(void)state;
	struct got g = { 0 };
	struct offcpu_opts o = { .min_ns = 1, .keyed = true };
	struct offcpu *oc = offcpu_new(&o, emit, &g);
	/* key 0x1000 held (never walked), then 1023 others walked: all kept */
	assert_int_equal(sum(oc, 105, 1 * MS, 0x1000, 0x407000, 1 * MS, 1), 0);
	for (uint64_t k = 1; k < 1024; k++)
		assert_int_equal(walk(oc, 105, 2 * MS + k, stack_a, 3, 0x1000 + k), 0);
	assert_int_equal(g.n, 0);
	/* one more: the oldest (0x1000) goes, its time with its pc alone */
	assert_int_equal(walk(oc, 105, 3 * MS, stack_b, 2, 0x5000), 0);
	assert_int_equal(g.n, 1);
	assert_int_equal(g.s[0].period, 1 * MS);
	assert_int_equal(g.first[0], 0x407000);
	/* the newest are kept: a total of one of them goes to its stack */
	assert_int_equal(sum(oc, 105, 4 * MS, 0x1000 + 1023, 0x401000, 2 * MS, 2), 0);
	assert_int_equal(g.n, 2);
	assert_int_equal(g.s[1].nu, 2);
	assert_int_equal(g.first[1], stack_a[0]);
	offcpu_free(oc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_long_waits),       cmocka_unit_test(test_short_waits_added_up),
		cmocka_unit_test(test_exit_and_end),     cmocka_unit_test(test_late_switch_out),
		cmocka_unit_test(test_one_stack_in_n),
		cmocka_unit_test(test_late_switch_out_after_another_wait),
		cmocka_unit_test(test_late_first_switch_out),
		cmocka_unit_test(test_keyed),            cmocka_unit_test(test_keyed_exit),
		cmocka_unit_test(test_keyed_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
