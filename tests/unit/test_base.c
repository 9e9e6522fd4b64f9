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
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
