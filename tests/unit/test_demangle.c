/* SPDX-License-Identifier: MIT */
/* Demangling as perf shows names: C++ (Itanium) without parameter lists, Rust legacy without the
 * hash, Rust v0 without crate disambiguators; version suffixes and @plt kept; other names as
 * they are. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "symbolize/demangle.h"

static void test_demangle(void **state)
{
	(void)state;
	static const char *const cases[][2] = {
		{ "_ZN3foo3barEv", "foo::bar" },
		{ "_ZN3foo3barIiEEvT_", "foo::bar<int>" },
		{ "_ZN3fooC2Ev", "foo::foo" },
		{ "_ZZ4mainENKUlvE_clEv", "main::{lambda()#1}::operator()" },
		{ "_ZN3foo3barEv@plt", "foo::bar@plt" },
		{ "_ZNSt6vectorIiSaIiEE9push_backERKi@@GLIBCXX_3.4", "std::vector<int, std::allocator<int> >::push_back@@GLIBCXX_3.4" },
		{ "_ZN4core3ptr13drop_in_place17h0123456789abcdefE", "core::ptr::drop_in_place" },
		{ "_RNvCs1234_7mycrate3foo", "mycrate::foo" },
		{ "_RNvNtCs1234_7mycrate6module8function", "mycrate::module::function" },
		{ "_RINvNtCs1234_7mycrate6module8functionmE", "mycrate::module::function::<u32>" },
		{ "main", "main" },
		{ "_Z", "_Z" },              /* not a valid mangling: unchanged */
		{ "_ZN3fooE.cold", "foo" },  /* as perf (and c++filt -p): clone suffixes go with the parameters */
	};
	struct base_strings t;
	base_strings_init(&t);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *got = sym_demangle(&t, cases[i][0]);
		assert_non_null(got);
		if (strcmp(got, cases[i][1]))
			fail_msg("%s: %s, expected %s", cases[i][0], got, cases[i][1]);
	}
	base_strings_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_demangle),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
