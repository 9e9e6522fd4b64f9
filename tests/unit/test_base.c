/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/base.h"

static void test_map(void **state)
{
	(void)state;
	struct base_map m;
	base_map_init(&m);
	for (uint64_t i = 0; i < 10000; i++)
		assert_int_equal(base_map_put(&m, i * 7919, (void *)(uintptr_t)(i + 1)), 0);
	assert_int_equal(m.len, 10000);
	for (uint64_t i = 0; i < 10000; i += 2)
		assert_ptr_equal(base_map_del(&m, i * 7919), (void *)(uintptr_t)(i + 1));
	for (uint64_t i = 0; i < 10000; i++)
		assert_ptr_equal(base_map_get(&m, i * 7919), (i & 1) ? (void *)(uintptr_t)(i + 1) : NULL);
	size_t it = 0, n = 0;
	while (base_map_next(&m, &it, NULL, NULL))
		n++;
	assert_int_equal(n, 5000);
	base_map_free(&m);
	/* every key value is a key, also the one that marks a free slot (kept apart) */
	base_map_init(&m);
	const uint64_t odd[] = { 0x8d2c5b1e7f3a9e61ull, 0, UINT64_MAX };
	assert_null(base_map_get(&m, odd[0]));
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(base_map_put(&m, odd[i], (void *)(uintptr_t)(i + 1)), 0);
	assert_int_equal(m.len, 3);
	for (unsigned i = 0; i < 3; i++) {
		assert_true(base_map_has(&m, odd[i]));
		assert_ptr_equal(base_map_get(&m, odd[i]), (void *)(uintptr_t)(i + 1));
	}
	uint64_t key;
	void *val;
	for (it = 0, n = 0; base_map_next(&m, &it, &key, &val); n++)
		assert_ptr_equal(val, (void *)(uintptr_t)(key == odd[0] ? 1 : key == 0 ? 2 : 3));
	assert_int_equal(n, 3);
	assert_ptr_equal(base_map_del(&m, odd[0]), (void *)1);
	assert_false(base_map_has(&m, odd[0]));
	assert_int_equal(m.len, 2);
	assert_int_equal(base_map_reserve(&m, 1000), 0);
	assert_true(m.cap * 3 >= 1000 * 4);
	assert_ptr_equal(base_map_get(&m, UINT64_MAX), (void *)3);
	base_map_free(&m);
}

static void test_intern(void **state)
{
	(void)state;
	struct base_intern t;
	base_intern_init(&t);
	const char *a = base_intern(&t, "hello", 5), *b = base_intern(&t, "hello world", 5);
	assert_ptr_equal(a, b);
	assert_string_equal(a, "hello");
	assert_ptr_not_equal(a, base_intern(&t, "hell", 4));
	base_intern_free(&t);
}

static void test_leb(void **state)
{
	(void)state;
	const uint8_t u[] = { 0xe5, 0x8e, 0x26 }, s[] = { 0xc0, 0xbb, 0x78 };
	struct base_cursor c = base_cursor(u, sizeof(u));
	assert_int_equal(base_cur_uleb(&c), 624485);
	c = base_cursor(s, sizeof(s));
	assert_int_equal(base_cur_sleb(&c), -123456);
	/* unterminated and overlong encodings fail without reading past the end */
	const uint8_t bad[] = { 0x80, 0x80 };
	c = base_cursor(bad, sizeof(bad));
	base_cur_uleb(&c);
	assert_true(c.bad);
	uint8_t longb[20];
	memset(longb, 0x80, sizeof(longb));
	c = base_cursor(longb, sizeof(longb));
	base_cur_uleb(&c);
	assert_true(c.bad);
	c = base_cursor(u, 2);
	assert_int_equal(base_cur_u32(&c), 0);
	assert_true(c.bad);
	const char str[] = { 'a', 'b' };
	c = base_cursor(str, 2);
	assert_null(base_cur_str(&c));
}

/* The one LEB128 decoder (leb.h) the cursor and the DWARF walker share: one-byte numbers on
 * the fast path, the longest (10 bytes) decoded, an 11th byte or the end refused with nothing
 * consumed. */
static void test_leb_decoder(void **state)
{
	(void)state;
	uint64_t u;
	int64_t s;
	const uint8_t one[] = { 0x7f }, neg1[] = { 0x7f }, pos63[] = { 0x3f }, neg64[] = { 0x40 };
	const uint8_t *p = one;
	assert_true(base_uleb(&p, one + 1, &u));
	assert_int_equal(u, 127);
	assert_ptr_equal(p, one + 1);
	p = neg1;
	assert_true(base_sleb(&p, neg1 + 1, &s));
	assert_int_equal(s, -1);
	p = pos63;
	assert_true(base_sleb(&p, pos63 + 1, &s));
	assert_int_equal(s, 63);
	p = neg64;
	assert_true(base_sleb(&p, neg64 + 1, &s));
	assert_int_equal(s, -64);
	/* two bytes: 128 unsigned, -128 signed */
	const uint8_t two[] = { 0x80, 0x01 }, mtwo[] = { 0x80, 0x7f };
	p = two;
	assert_true(base_uleb(&p, two + 2, &u));
	assert_int_equal(u, 128);
	p = mtwo;
	assert_true(base_sleb(&p, mtwo + 2, &s));
	assert_int_equal(s, -128);
	/* UINT64_MAX and INT64_MIN: ten bytes */
	const uint8_t max[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
	const uint8_t min[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f };
	p = max;
	assert_true(base_uleb(&p, max + sizeof(max), &u));
	assert_true(u == UINT64_MAX);
	assert_ptr_equal(p, max + sizeof(max));
	p = min;
	assert_true(base_sleb(&p, min + sizeof(min), &s));
	assert_true(s == INT64_MIN);
	/* an 11th byte, or the end before the last byte: refused, *p where it was */
	uint8_t eleven[11];
	memset(eleven, 0x80, 10);
	eleven[10] = 0;
	p = eleven;
	assert_false(base_uleb(&p, eleven + sizeof(eleven), &u));
	assert_false(base_sleb(&p, eleven + sizeof(eleven), &s));
	assert_ptr_equal(p, eleven);
	struct base_cursor c = base_cursor(eleven, sizeof(eleven));
	base_cur_uleb(&c);
	assert_true(c.bad); /* the cursor's own decoder took 11 bytes */
	p = two;
	assert_false(base_uleb(&p, two + 1, &u));
	assert_false(base_uleb(&p, two, &u));
	assert_ptr_equal(p, two);
	/* the cursor over it: a number, then bad at the end, 0 from then on */
	const uint8_t seq[] = { 0x05, 0x80, 0x01, 0x7f, 0x80 };
	c = base_cursor(seq, sizeof(seq));
	assert_int_equal(base_cur_uleb(&c), 5);
	assert_int_equal(base_cur_uleb(&c), 128);
	assert_int_equal(base_cur_sleb(&c), -1);
	assert_false(c.bad);
	assert_int_equal(base_cur_uleb(&c), 0);
	assert_true(c.bad);
	assert_int_equal(base_cur_left(&c), 0);
}

static void test_errors(void **state)
{
	(void)state;
	assert_string_equal(uw_strerror(-UW_ETRUNC), "input truncated");
	assert_string_equal(uw_strerror(UW_EMAGIC), "not a perf.data file (bad magic)");
	assert_non_null(uw_strerror(-2));
	assert_string_equal(uw_stop_reason_str(UW_STOP_END_OF_STACK), "end of stack");
	assert_string_equal(uw_stop_reason_str((enum uw_stop_reason)999), "unknown");
	/* options structs: unknown trailing bytes are rejected, a short struct is accepted */
	struct {
		struct uw_session_opts o;
		char extra[8];
	} big;
	memset(&big, 0, sizeof(big));
	big.o.sz = sizeof(big);
	big.extra[3] = 1;
	assert_null(uw_session_new(&big.o));
	big.extra[3] = 0;
	struct uw_session *s = uw_session_new(&big.o);
	assert_non_null(s);
	uw_session_free(s);
	UW_OPTS(uw_session_opts, o, .max_frames = 5000);
	assert_null(uw_session_new(&o));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_map),
		cmocka_unit_test(test_intern),
		cmocka_unit_test(test_leb),
		cmocka_unit_test(test_leb_decoder),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
