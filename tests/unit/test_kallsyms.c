/* SPDX-License-Identifier: MIT */
/* Kernel symbols: the image's sorted part searched in place and the rest parsed must name every
 * address as a brute-force scan of the same file does (aliases, data symbols between text,
 * module lines, unsorted files, addresses past the end). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unwound/unwound.h"

struct line {
	uint64_t addr;
	char type;
	char name[32];
	const char *mod;
};

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* The reference: the last text symbol (file order among equal addresses) at or below addr;
 * none past the last symbol by more than 1 MiB. */
static const struct line *reference(const struct line *l, size_t n, uint64_t addr, uint64_t *next)
{
	const struct line *best = NULL;
	*next = 0;
	for (size_t i = 0; i < n; i++) {
		bool text = l[i].type == 't' || l[i].type == 'T' || l[i].type == 'w' || l[i].type == 'W';
		if (!text)
			continue;
		if (l[i].addr <= addr && (!best || l[i].addr >= best->addr))
			best = &l[i];
		if (l[i].addr > addr && (!*next || l[i].addr < *next))
			*next = l[i].addr;
	}
	if (best && !*next && addr - best->addr > (1u << 20))
		return NULL;
	return best;
}

static void check_file(struct line *l, size_t n, bool shuffle_tail)
{
	char path[] = "/tmp/uw-kallsyms-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	if (shuffle_tail)
		for (size_t i = n - 1; i > n / 2; i--) {
			size_t j = n / 2 + rnd() % (i - n / 2 + 1);
			struct line t = l[i];
			l[i] = l[j];
			l[j] = t;
		}
	for (size_t i = 0; i < n; i++) {
		if (l[i].mod)
			fprintf(f, "%016llx %c %s\t[%s]\n", (unsigned long long)l[i].addr, l[i].type, l[i].name, l[i].mod);
		else
			fprintf(f, "%016llx %c %s\n", (unsigned long long)l[i].addr, l[i].type, l[i].name);
	}
	fclose(f);
	struct uw_session *s = uw_session_new(NULL);
	assert_int_equal(uw_session_load_kallsyms(s, path), 0);
	for (int k = 0; k < 4000; k++) {
		uint64_t addr;
		if (k % 4 == 0)
			addr = l[rnd() % n].addr; /* exactly on a symbol */
		else
			addr = 0xffffffff80ff0000ull + rnd() % 0x3f020000ull;
		uint64_t next;
		const struct line *want = reference(l, n, addr, &next);
		struct uw_symbol sym;
		assert_int_equal(uw_symbolize_kernel(s, addr, &sym), 0);
		if (!want) {
			assert_null(sym.name);
			continue;
		}
		assert_non_null(sym.name);
		assert_string_equal(sym.name, want->name);
		assert_int_equal(sym.start, want->addr);
		assert_int_equal(sym.offset, addr - want->addr);
		assert_int_equal(sym.size, next ? next - want->addr : 0);
	}
	uw_session_free(s);
	unlink(path);
}

/* An image part sorted by address with aliases and data symbols, then module lines. */
static size_t make(struct line *l, size_t nimage, size_t nmod)
{
	uint64_t a = 0xffffffff81000000ull;
	size_t n = 0;
	static const char types[] = "TTTTttttWwDdRrBb";
	for (size_t i = 0; i < nimage; i++) {
		if (rnd() % 5)
			a += 1 + rnd() % 4096; /* else an alias of the previous address */
		l[n].addr = a;
		l[n].type = types[rnd() % 16];
		snprintf(l[n].name, sizeof(l[n].name), "sym%zu", i);
		l[n].mod = NULL;
		n++;
	}
	uint64_t m = 0xffffffffc0000000ull;
	for (size_t i = 0; i < nmod; i++) {
		m += 16 + rnd() % 8192;
		l[n].addr = m;
		l[n].type = "tT"[rnd() % 2];
		snprintf(l[n].name, sizeof(l[n].name), "mod%zu", i);
		l[n].mod = i % 3 ? "ext4" : "bpf";
		n++;
	}
	return n;
}

static void test_image_and_modules(void **state)
{
	(void)state;
	static struct line l[12000];
	check_file(l, make(l, 10000, 1500), false);
}

static void test_image_only(void **state)
{
	(void)state;
	static struct line l[12000];
	check_file(l, make(l, 5000, 0), false);
}

static void test_unsorted(void **state)
{
	(void)state;
	/* shuffled lines: the in-place search must not be trusted; the whole file is parsed */
	static struct line l[12000];
	size_t n = make(l, 3000, 0);
	check_file(l, n, true);
}

static void test_shuffled_modules(void **state)
{
	(void)state;
	static struct line l[12000];
	size_t n = make(l, 4000, 4000);
	/* modules in any order (as /proc/kallsyms lists them) */
	for (size_t i = n - 1; i > 4000; i--) {
		size_t j = 4000 + rnd() % (i - 4000 + 1);
		struct line t = l[i];
		l[i] = l[j];
		l[j] = t;
	}
	check_file(l, n, false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_image_and_modules),
		cmocka_unit_test(test_image_only),
		cmocka_unit_test(test_unsorted),
		cmocka_unit_test(test_shuffled_modules),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
