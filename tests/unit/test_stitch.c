/* SPDX-License-Identifier: MIT */
/*
 * Truncated stacks completed (lib/unwind/stitch.c, through the reader), with stacks made by hand: a stack cut short is
 * completed only when a complete stack before it and the first one after it that have its
 * outermost frame agree on the callers; it is delivered when decided (before the sample that
 * decided it); held ones complete each other; at EXIT, at the end, after the wait, and past
 * the memory cap, waiting ones go as they are; a thread number in another process starts
 * afresh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "perf/read/reader.h"

#define MAXF 16

struct got {
	uint32_t tid, n;
	uint8_t stop;
	uint64_t pc[MAXF];
	uint8_t method[MAXF];
	uint64_t time;
	const char *comm;
};

struct sink {
	struct got v[256];
	size_t n;
};

static int on_sample(void *ctx, const struct uw_sample *s)
{
	struct sink *k = ctx;
	if (k->n == 256)
		return 0;
	struct got *g = &k->v[k->n++];
	g->tid = s->tid;
	g->n = s->nr_user;
	g->stop = s->stop_reason;
	g->time = s->time;
	g->comm = s->comm;
	for (uint32_t i = 0; i < s->nr_user && i < MAXF; i++) {
		g->pc[i] = s->user[i].pc;
		g->method[i] = s->user[i].method;
	}
	return 0;
}

struct fx {
	struct uw_session *s;
	struct uw_reader *r;
	struct sink k;
};

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));
	x->s = uw_session_new(NULL);
	UW_OPTS(uw_reader_opts, ro, .on_sample = on_sample, .ctx = &x->k, .stitch = 1);
	x->r = uw_reader_new(x->s, &ro);
	assert_non_null(x->r);
	if (!x->r->evst)
		x->r->evst = calloc(1, sizeof(*x->r->evst));
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;
	uw_reader_free(x->r);
	uw_session_free(x->s);
	free(x);
	return 0;
}

/* A frame as the unwinder gives it: pc, and (callers) the stack pointer there. */
struct fr {
	uint64_t pc, sp;
};

/* The thread's name as the tracker gives it: interned, it outlives the sample (profiles keep the
 * pointer), so a held sample is delivered with that same pointer, not a copy freed after delivery. */
static const char comm_t[] = "t";

static int push(struct fx *x, uint32_t tid, uint64_t time, enum uw_stop_reason stop, const struct fr *f, uint32_t n)
{
	struct uw_frame fr[MAXF];
	memset(fr, 0, sizeof(fr));
	for (uint32_t i = 0; i < n; i++) {
		fr[i].pc = f[i].pc;
		fr[i].sp = f[i].sp;
		fr[i].is_call = i > 0;
		fr[i].method = i ? UW_METHOD_CFI : UW_METHOD_REGS;
	}
	struct uw_sample smp = { .sz = sizeof(smp), .pid = tid, .tid = tid, .time = time, .period = 1 };
	smp.user = fr;
	smp.nr_user = n;
	smp.stop_reason = (uint8_t)stop;
	smp.comm = comm_t;
	return reader_stitch_sample(x->r, 0, &smp);
}

/* The whole stack: leaf, two frames, the cut's outermost frame o (index 3), then its callers. */
static const struct fr whole[] = { { 0x100, 0x1000 }, { 0x200, 0x1100 }, { 0x300, 0x1200 }, { 0x400, 0x1300 },
				   { 0x500, 0x1400 }, { 0x600, 0x1500 }, { 0x700, 0x1600 } };
/* Cut short: another leaf below the same o. */
static const struct fr cut[] = { { 0x110, 0x0f00 }, { 0x210, 0x1000 }, { 0x400, 0x1300 } };
/* Complete, o there but called from elsewhere (another return address above it). */
static const struct fr other[] = { { 0x100, 0x1000 }, { 0x400, 0x1300 }, { 0x555, 0x1400 }, { 0x600, 0x1500 },
				   { 0x700, 0x1600 } };
/* Complete, without o. */
static const struct fr plain[] = { { 0x900, 0x1450 }, { 0x600, 0x1500 }, { 0x700, 0x1600 } };

static void both_sides_agree(void **state)
{
	struct fx *x = *state;
	assert_int_equal(push(x, 1, 1, UW_STOP_END_OF_STACK, whole, 7), 0);
	assert_int_equal(push(x, 1, 2, UW_STOP_STACK_EXHAUSTED, cut, 3), 0);
	assert_int_equal(x->k.n, 1); /* held */
	assert_int_equal(push(x, 1, 3, UW_STOP_END_OF_STACK, plain, 3), 0);
	assert_int_equal(x->k.n, 2); /* (no o there: still held) */
	assert_int_equal(push(x, 1, 4, UW_STOP_END_OF_STACK, whole, 7), 0);
	assert_int_equal(x->k.n, 4);
	/* decided by the sample at time 4, delivered before it */
	struct got *g = &x->k.v[2];
	assert_int_equal(g->time, 2);
	assert_int_equal(g->stop, UW_STOP_END_OF_STACK);
	assert_int_equal(g->n, 6);
	assert_int_equal(g->pc[2], 0x400);
	assert_int_equal(g->pc[3], 0x500);
	assert_int_equal(g->pc[5], 0x700);
	assert_int_equal(g->method[2], UW_METHOD_CFI);
	assert_int_equal(g->method[3], UW_METHOD_STITCHED);
	assert_ptr_equal(g->comm, comm_t);
	assert_ptr_equal(x->k.v[1].comm, comm_t); /* (held, delivered as it was) */
	assert_int_equal(x->k.v[3].time, 4);
	assert_int_equal(x->r->st.stitched_samples, 1);
	assert_int_equal(x->r->st.stitched_frames, 3);
}

static void sides_differ(void **state)
{
	struct fx *x = *state;
	assert_int_equal(push(x, 1, 1, UW_STOP_END_OF_STACK, whole, 7), 0);
	assert_int_equal(push(x, 1, 2, UW_STOP_STACK_EXHAUSTED, cut, 3), 0);
	assert_int_equal(push(x, 1, 3, UW_STOP_END_OF_STACK, other, 5), 0);
	assert_int_equal(x->k.n, 3);
	assert_int_equal(x->k.v[1].time, 2);
	assert_int_equal(x->k.v[1].stop, UW_STOP_STACK_EXHAUSTED);
	assert_int_equal(x->k.v[1].n, 3);
	assert_int_equal(x->r->st.stitch_failed, 1);
	assert_int_equal(x->r->st.stitched_samples, 0);
}

static void one_side_only(void **state)
{
	struct fx *x = *state;
	/* nothing before: it goes at once, uncompleted, even though a later stack has o */
	assert_int_equal(push(x, 1, 1, UW_STOP_STACK_EXHAUSTED, cut, 3), 0);
	assert_int_equal(x->k.n, 1);
	assert_int_equal(x->k.v[0].stop, UW_STOP_STACK_EXHAUSTED);
	assert_int_equal(push(x, 1, 2, UW_STOP_END_OF_STACK, whole, 7), 0);
	/* before only: it waits for the thread's next 64 samples, then goes uncompleted */
	assert_int_equal(push(x, 1, 3, UW_STOP_STACK_EXHAUSTED, cut, 3), 0);
	for (uint64_t t = 4; t < 4 + 63; t++)
		assert_int_equal(push(x, 1, t, UW_STOP_END_OF_STACK, plain, 3), 0);
	assert_int_equal(x->k.n, 2 + 63);
	assert_int_equal(push(x, 1, 100, UW_STOP_END_OF_STACK, plain, 3), 0);
	assert_int_equal(x->k.n, 2 + 65);
	assert_int_equal(x->k.v[2 + 63].time, 3);
	assert_int_equal(x->k.v[2 + 63].stop, UW_STOP_STACK_EXHAUSTED);
	/* the complete stack with o is now older than the thread's last 16: none before */
	assert_int_equal(push(x, 1, 101, UW_STOP_STACK_EXHAUSTED, cut, 3), 0);
	assert_int_equal(x->k.v[x->k.n - 1].time, 101);
	assert_int_equal(x->k.v[x->k.n - 1].stop, UW_STOP_STACK_EXHAUSTED);
	/* another thread's samples neither count nor decide */
	assert_int_equal(push(x, 1, 102, UW_STOP_END_OF_STACK, whole, 7), 0);
	assert_int_equal(push(x, 1, 103, UW_STOP_STACK_EXHAUSTED, cut, 3), 0);
	assert_int_equal(push(x, 2, 104, UW_STOP_END_OF_STACK, whole, 7), 0);
	assert_int_equal(x->k.v[x->k.n - 1].time, 104);
	assert_int_equal(push(x, 1, 105, UW_STOP_END_OF_STACK, whole, 7), 0);
	assert_int_equal(x->k.v[x->k.n - 2].time, 103);
	assert_int_equal(x->k.v[x->k.n - 2].stop, UW_STOP_END_OF_STACK);
}

static void held_ones_complete_each_other(void **state)
{
	struct fx *x = *state;
	/* deeper: its outermost frame (0x350) in no complete stack before it, only in the first
	 * held one's own frames */
	static const struct fr cut2[] = { { 0x110, 0x0f00 }, { 0x350, 0x1250 }, { 0x400, 0x1300 } };
	static const struct fr deeper[] = { { 0x120, 0x0e00 }, { 0x220, 0x0f00 }, { 0x350, 0x1250 } };
	static const struct fr whole2[] = { { 0x100, 0x1000 }, { 0x350, 0x1250 }, { 0x400, 0x1300 },
					    { 0x500, 0x1400 }, { 0x600, 0x1500 }, { 0x700, 0x1600 } };
	assert_int_equal(push(x, 1, 1, UW_STOP_END_OF_STACK, whole, 7), 0);
	assert_int_equal(push(x, 1, 2, UW_STOP_STACK_EXHAUSTED, cut2, 3), 0);
	assert_int_equal(push(x, 1, 3, UW_STOP_STACK_EXHAUSTED, deeper, 3), 0);
	assert_int_equal(x->k.n, 1);
	/* a later complete stack with both frames: the first is decided, then is the second's
	 * before side */
	assert_int_equal(push(x, 1, 4, UW_STOP_END_OF_STACK, whole2, 6), 0);
	assert_int_equal(x->k.n, 4);
	assert_int_equal(x->k.v[1].time, 2);
	assert_int_equal(x->k.v[1].stop, UW_STOP_END_OF_STACK);
	assert_int_equal(x->k.v[1].n, 6);
	assert_int_equal(x->k.v[2].time, 3);
	assert_int_equal(x->k.v[2].stop, UW_STOP_END_OF_STACK);
	assert_int_equal(x->k.v[2].n, 3 + 4);
	assert_int_equal(x->k.v[2].pc[3], 0x400);
	assert_int_equal(x->k.v[2].pc[6], 0x700);
}

static void exit_and_end(void **state)
{
	struct fx *x = *state;
	assert_int_equal(push(x, 1, 1, UW_STOP_END_OF_STACK, whole, 7), 0);
	assert_int_equal(push(x, 1, 2, UW_STOP_STACK_EXHAUSTED, cut, 3), 0);
	assert_int_equal(push(x, 2, 3, UW_STOP_END_OF_STACK, whole, 7), 0);
	assert_int_equal(push(x, 2, 4, UW_STOP_STACK_EXHAUSTED, cut, 3), 0);
	assert_int_equal(x->k.n, 2);
	assert_int_equal(reader_stitch_forget(x->r, 1, 1), 0);
	assert_int_equal(x->k.n, 3);
	assert_int_equal(x->k.v[2].tid, 1);
	assert_int_equal(x->k.v[2].stop, UW_STOP_STACK_EXHAUSTED);
	/* its references went with it: a new thread of that number starts without */
	assert_int_equal(push(x, 1, 5, UW_STOP_STACK_EXHAUSTED, cut, 3), 0);
	assert_int_equal(x->k.n, 4);
	assert_int_equal(reader_stitch_flush(x->r), 0);
	assert_int_equal(x->k.n, 5);
	assert_int_equal(x->k.v[4].tid, 2);
	/* what is left: thread 2's reference */
	assert_int_equal(x->r->stitch.bytes, 7 * sizeof(struct uw_frame));
}

static void another_process(void **state)
{
	struct fx *x = *state;
	/* thread 1 of process 1, then a thread numbered 1 in process 2: nothing before it */
	assert_int_equal(push(x, 1, 1, UW_STOP_END_OF_STACK, whole, 7), 0);
	struct uw_frame fr[3];
	memset(fr, 0, sizeof(fr));
	for (int i = 0; i < 3; i++) {
		fr[i].pc = cut[i].pc;
		fr[i].sp = cut[i].sp;
		fr[i].is_call = i > 0;
	}
	struct uw_sample smp = { .sz = sizeof(smp), .pid = 2, .tid = 1, .time = 2, .period = 1 };
	smp.user = fr;
	smp.nr_user = 3;
	smp.stop_reason = UW_STOP_STACK_EXHAUSTED;
	assert_int_equal(reader_stitch_sample(x->r, 0, &smp), 0);
	assert_int_equal(x->k.n, 2);
	assert_int_equal(x->k.v[1].stop, UW_STOP_STACK_EXHAUSTED);
}

static void memory_cap(void **state)
{
	struct fx *x = *state;
	/* held samples with a 1 MiB stack copy each, on 80 threads: past 64 MiB all go */
	size_t big = (size_t)1 << 20;
	uint8_t *stack = calloc(1, big);
	struct uw_frame fr[3];
	for (uint32_t tid = 1; tid <= 80; tid++) {
		assert_int_equal(push(x, tid, tid, UW_STOP_END_OF_STACK, whole, 7), 0);
		memset(fr, 0, sizeof(fr));
		for (int i = 0; i < 3; i++) {
			fr[i].pc = cut[i].pc;
			fr[i].sp = cut[i].sp;
			fr[i].is_call = i > 0;
		}
		struct uw_sample smp = { .sz = sizeof(smp), .pid = tid, .tid = tid, .time = 1000 + tid, .period = 1 };
		smp.user = fr;
		smp.nr_user = 3;
		smp.stop_reason = UW_STOP_STACK_EXHAUSTED;
		smp.stack = stack;
		smp.stack_size = big;
		assert_int_equal(reader_stitch_sample(x->r, 0, &smp), 0);
		assert_true(x->r->stitch.bytes <= ((size_t)64 << 20) + big);
	}
	free(stack);
	assert_true(x->r->st.stitch_given_up >= 1);
	assert_int_equal(reader_stitch_flush(x->r), 0);
	assert_int_equal(x->k.n, 160);
	assert_int_equal(x->r->st.stitch_failed, 80);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(both_sides_agree, setup, teardown),
		cmocka_unit_test_setup_teardown(sides_differ, setup, teardown),
		cmocka_unit_test_setup_teardown(one_side_only, setup, teardown),
		cmocka_unit_test_setup_teardown(held_ones_complete_each_other, setup, teardown),
		cmocka_unit_test_setup_teardown(exit_and_end, setup, teardown),
		cmocka_unit_test_setup_teardown(another_process, setup, teardown),
		cmocka_unit_test_setup_teardown(memory_cap, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
