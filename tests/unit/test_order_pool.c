/* SPDX-License-Identifier: MIT */
/*
 * The ordering queue's copies of pushed records (lib/perf/read/reader_order.c), as a live
 * recording makes them: every round, the rings' records (stack copies of 16 KiB and more)
 * queued, then let go. Their buffers are kept for the next round's: a steady recording faults
 * no page in for them. Before, each copy was malloc'd and freed: glibc gave the top of the heap
 * back at each round's frees (over 128 KiB free there) and the next round faulted it in again,
 * page by page, zeroed and charged: the recorder's largest cost per sample (bench/copy-load.py).
 * Page faults are counted by the kernel for this process (getrusage): they do not depend on the
 * CPU the test gets.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <cmocka.h>

#include "perf/read/reader_order.h"

static long minflt(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/* a sample with a 16 KiB stack copy: about 16.6 KiB */
#define REC_LEN 16992u
#define PER_ROUND 64u

static void round_trip(struct reader_order *q, const uint8_t *rec, uint64_t *t)
{
	for (unsigned i = 0; i < PER_ROUND; i++) {
		struct qent e = { .time = (*t)++, .rec = rec, .len = REC_LEN };
		assert_int_equal(reader_order_push(q, &e, (size_t)1 << 30), 0);
	}
	size_t n = reader_order_ready(q, UINT64_MAX, true, 0);
	assert_int_equal(n, PER_ROUND);
	/* the copies are the records pushed */
	for (size_t i = 0; i < n; i++)
		assert_memory_equal(q->q[i].rec, rec, REC_LEN);
	reader_order_drop(q, n);
}

static void test_copies_reused(void **state)
{
	(void)state;
	static uint8_t rec[REC_LEN];
	for (size_t i = 0; i < sizeof(rec); i++)
		rec[i] = (uint8_t)(i * 7);
	struct reader_order q;
	memset(&q, 0, sizeof(q));
	uint64_t t = 1;
	round_trip(&q, rec, &t); /* the first round's copies are new */
	long f0 = minflt();
	for (int r = 0; r < 20; r++)
		round_trip(&q, rec, &t);
	long faults = minflt() - f0;
	/* (a few pages for anything else the process touches; the copies would be 20 rounds of
	 * about 1 MiB: 5000 pages) */
	if (faults > 64)
		fail_msg("20 rounds of %u records of %u bytes faulted %ld pages in: the queue's copies are not "
			 "reused from round to round", PER_ROUND, REC_LEN, faults);
	reader_order_free(&q);
	assert_int_equal(q.pool_bytes, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copies_reused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
