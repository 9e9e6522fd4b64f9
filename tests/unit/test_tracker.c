/* SPDX-License-Identifier: MIT */
/* Address-space bookkeeping: overlapping mappings, fork, exec, exit before a late sample. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "process/process.h"

static struct uw_module *mod(struct uw_session *s, const char *path)
{
	return proc_module_get(s, path, strlen(path), NULL, 0, 8, 1, (uint64_t)strlen(path));
}

static void expect_map(struct proc *p, size_t i, uint64_t start, uint64_t end, uint64_t pgoff, struct uw_module *m)
{
	assert_true(i < p->maps.len);
	struct map *mp = base_vec_at(&p->maps, i);
	assert_int_equal(mp->start, start);
	assert_int_equal(mp->end, end);
	assert_int_equal(mp->pgoff, pgoff);
	assert_ptr_equal(mp->mod, m);
}

static void test_overlaps(void **state)
{
	(void)state;
	struct uw_session *s = uw_session_new(NULL);
	struct uw_module *a = mod(s, "/lib/a.so"), *b = mod(s, "/lib/b.so"), *c = mod(s, "/lib/c.so");
	assert_ptr_equal(a, mod(s, "/lib/a.so")); /* one module per identity */
	assert_int_equal(proc_mmap(s, 10, 0x1000, 0x4000, 0, 5, a), 0);
	assert_int_equal(proc_mmap(s, 10, 0x2000, 0x1000, 0x7000, 5, b), 0);
	struct proc *p = proc_get(s, 10, false);
	assert_int_equal(p->maps.len, 3);
	expect_map(p, 0, 0x1000, 0x2000, 0, a);
	expect_map(p, 1, 0x2000, 0x3000, 0x7000, b);
	expect_map(p, 2, 0x3000, 0x5000, 0x2000, a); /* the right part keeps its file offset */
	/* a mapping covering several replaces them all and trims the edges */
	assert_int_equal(proc_mmap(s, 10, 0x1800, 0x3000, 0, 5, c), 0);
	assert_int_equal(p->maps.len, 3);
	expect_map(p, 0, 0x1000, 0x1800, 0, a);
	expect_map(p, 1, 0x1800, 0x4800, 0, c);
	expect_map(p, 2, 0x4800, 0x5000, 0x3800, a);
	assert_null(proc_find_map(p, 0xfff));
	assert_ptr_equal(proc_find_map(p, 0x1800)->mod, c);
	assert_ptr_equal(proc_find_map(p, 0x4fff)->mod, a);
	assert_null(proc_find_map(p, 0x5000));
	assert_int_equal(a->refs, 2);
	assert_int_equal(b->refs, 0);
	assert_int_equal(c->refs, 1);
	/* an exact replacement */
	assert_int_equal(proc_mmap(s, 10, 0x1800, 0x3000, 0, 5, b), 0);
	assert_int_equal(p->maps.len, 3);
	assert_int_equal(c->refs, 0);
	/* zero length and wrap-around are rejected */
	assert_int_not_equal(proc_mmap(s, 10, 0x1000, 0, 0, 5, a), 0);
	assert_int_not_equal(proc_mmap(s, 10, UINT64_MAX - 10, 0x100, 0, 5, a), 0);
	uw_session_free(s);
}

static void test_fork_exec(void **state)
{
	(void)state;
	struct uw_session *s = uw_session_new(NULL);
	struct uw_module *a = mod(s, "/bin/sh"), *b = mod(s, "/bin/cc1");
	assert_int_equal(proc_comm(s, 100, 100, "sh", 2, false), 0);
	assert_int_equal(proc_mmap(s, 100, 0x400000, 0x1000, 0, 5, a), 0);
	assert_int_equal(proc_fork(s, 101, 100, 101, 100, 5), 0);
	struct proc *c = proc_get(s, 101, false);
	assert_non_null(c);
	assert_int_equal(c->maps.len, 1);
	assert_string_equal(c->comm, "sh");
	assert_string_equal(proc_thread(s, 101, 101, false)->comm, "sh");
	/* exec: a new image; the parent keeps its own */
	assert_int_equal(proc_comm(s, 101, 101, "cc1", 3, true), 0);
	assert_int_equal(c->maps.len, 0);
	assert_int_equal(proc_mmap(s, 101, 0x400000, 0x2000, 0, 5, b), 0);
	assert_ptr_equal(proc_find_map(c, 0x400100)->mod, b);
	assert_ptr_equal(proc_find_map(proc_get(s, 100, false), 0x400100)->mod, a);
	/* a thread: same process, no copy */
	assert_int_equal(proc_fork(s, 100, 100, 102, 100, 6), 0);
	assert_non_null(proc_thread(s, 100, 102, false));
	assert_int_equal(proc_get(s, 100, false)->maps.len, 1);
	uw_session_free(s);
}

static void test_exit_then_late_sample(void **state)
{
	(void)state;
	struct uw_session *s = uw_session_new(NULL);
	struct uw_module *a = mod(s, "/bin/true");
	assert_int_equal(proc_mmap(s, 200, 0x1000, 0x1000, 0, 5, a), 0);
	proc_exit(s, 200, 200, 1000000000ull);
	/* a sample stamped before the exit but delivered after it still resolves */
	struct proc *p = proc_get(s, 200, false);
	assert_non_null(p);
	assert_true(p->exited);
	struct proc_find_ctx fc = { s, p };
	struct unw_pc_info info;
	assert_true(proc_find_pc(&fc, 0x1800, &info));
	assert_ptr_equal(info.module, a);
	assert_int_equal(info.map_addr, 0x800);
	/* within the grace period it stays; after it, it is freed */
	proc_sweep(s, 1500000000ull);
	assert_non_null(proc_get(s, 200, false));
	proc_sweep(s, 2500000000ull);
	assert_null(proc_get(s, 200, false));
	assert_int_equal(a->refs, 0);
	/* pid reuse by fork replaces the old process at once */
	assert_int_equal(proc_mmap(s, 300, 0x1000, 0x1000, 0, 5, a), 0);
	proc_exit(s, 300, 300, 5);
	assert_int_equal(proc_fork(s, 300, 1, 300, 1, 6), 0);
	assert_int_equal(proc_get(s, 300, false)->maps.len, 0);
	assert_false(proc_get(s, 300, false)->exited);
	uw_session_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_overlaps),
		cmocka_unit_test(test_fork_exec),
		cmocka_unit_test(test_exit_then_late_sample),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
