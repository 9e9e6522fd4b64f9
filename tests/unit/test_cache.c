/* SPDX-License-Identifier: MIT */
/* The cache directory (lib/base/cache.c): admission without a scan per write, temporaries left
 * by a writer that died, the directory and entries trusted only when this user's alone, entries
 * written without a name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/cache.h"
#include "base/file.h"

static char *tmpdir(void)
{
	char t[] = "/tmp/uw-test-cache.XXXXXX";
	char *d = mkdtemp(t);
	assert_non_null(d);
	return strdup(d);
}

static void rm_rf(const char *d)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d);
	assert_int_equal(system(cmd), 0);
}

static void put(const char *dir, const char *name, size_t size, time_t age)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0); /* (sparse: counts its size, costs nothing) */
	struct timespec ts[2] = { { time(NULL) - age, 0 }, { time(NULL) - age, 0 } };
	assert_int_equal(futimens(fd, ts), 0);
	close(fd);
}

static bool exists(const char *dir, const char *name)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return access(p, F_OK) == 0;
}

static uint64_t dir_bytes(const char *dir)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	uint64_t n = 0;
	struct dirent *e;
	struct stat st;
	while ((e = readdir(d)))
		if (fstatat(dirfd(d), e->d_name, &st, 0) == 0 && S_ISREG(st.st_mode))
			n += (uint64_t)st.st_size;
	closedir(d);
	return n;
}

static void write_entry(const char *dir, int i, size_t size, uint64_t cap)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/e%04d-0000000000000000.kunw1", dir, i);
	static char buf[16384];
	assert_true(size <= sizeof(buf));
	struct base_piece pc = { buf, size };
	assert_true(base_cache_admit(p, size, cap, base_cache_files));
	assert_int_equal(base_replace_file(p, &pc, 1), 0);
}

/* A file that appears in the directory behind the process's back is not seen until the
 * process's own writes take its estimate to the cap: no scan per write (a scan per write would
 * remove the old, large file at the first write). Then it is, and the cap holds. */
static void test_admit_amortised(void **state)
{
	(void)state;
	base_cache_forget();
	char *d = tmpdir();
	const uint64_t cap = 1 << 20;
	write_entry(d, 0, 10000, cap); /* (the process's first write there: a scan) */
	put(d, "big-0000000000000000.kunw1", 4 << 20, 3600);
	for (int i = 1; i < 10; i++)
		write_entry(d, i, 10000, cap);
	assert_true(exists(d, "big-0000000000000000.kunw1"));
	for (int i = 10; i < 120; i++)
		write_entry(d, i, 10000, cap);
	assert_false(exists(d, "big-0000000000000000.kunw1"));
	assert_true(dir_bytes(d) <= cap);
	assert_true(exists(d, "e0119-0000000000000000.kunw1"));
	/* an entry replaced counts once */
	for (int i = 0; i < 200; i++)
		write_entry(d, 5, 10000, cap);
	assert_true(dir_bytes(d) <= cap);
	/* larger than the cap: refused */
	assert_false(base_cache_admit("/nonexistent/x.kunw1", cap + 1, cap, base_cache_files));
	rm_rf(d);
	free(d);
}

/* Temporaries of a writer that died: counted, removed once old; others' files kept. */
static void test_stale_temps(void **state)
{
	(void)state;
	base_cache_forget();
	char *d = tmpdir();
	put(d, "a-1.kunw1.123.tmp", 300000, 7200);  /* a writer's that died long ago */
	put(d, "b-1.dwarf2.456.tmp", 300000, 0);    /* in flight */
	put(d, "c-1.kunw1", 100000, 60);
	put(d, "notes.tmp", 300000, 7200);          /* not the cache's */
	/* cap 800 KB: the fresh temporary (300 KB) and the entry (100 KB) are counted, so 500 KB
	 * more do not fit below 7/8 of the cap without removing the entry */
	char p[512];
	snprintf(p, sizeof(p), "%s/new-1.kunw1", d);
	assert_true(base_cache_admit(p, 500000, 800000, base_cache_files));
	assert_false(exists(d, "a-1.kunw1.123.tmp"));
	assert_true(exists(d, "b-1.dwarf2.456.tmp"));
	assert_false(exists(d, "c-1.kunw1"));
	assert_true(exists(d, "notes.tmp"));
	rm_rf(d);
	free(d);
}

static void test_dir_ready(void **state)
{
	(void)state;
	char *d = tmpdir(), p[512], why[512], q[600];
	struct stat st;
	/* components made, 0700 */
	snprintf(p, sizeof(p), "%s/a/b/unwound", d);
	assert_int_equal(base_cache_dir_ready(p, why, sizeof(why)), 0);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	snprintf(q, sizeof(q), "%s/a", d);
	assert_int_equal(stat(q, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	/* again, as it is: fine (a trailing slash too) */
	snprintf(q, sizeof(q), "%s/", p);
	assert_int_equal(base_cache_dir_ready(q, why, sizeof(why)), 0);
	/* a link to it: refused, not followed */
	snprintf(q, sizeof(q), "%s/link", d);
	assert_int_equal(symlink(p, q), 0);
	assert_int_equal(base_cache_dir_ready(q, why, sizeof(why)), -ELOOP);
	assert_non_null(strstr(why, "symbolic link"));
	/* a link above it is followed (/home -> /usr/home) */
	snprintf(q, sizeof(q), "%s/alink", d);
	assert_int_equal(symlink("a", q), 0);
	snprintf(q, sizeof(q), "%s/alink/b/unwound", d);
	assert_int_equal(base_cache_dir_ready(q, why, sizeof(why)), 0);
	/* writable by others */
	assert_int_equal(chmod(p, 0777), 0);
	assert_int_equal(base_cache_dir_ready(p, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "mode 0777"));
	assert_int_equal(chmod(p, 0770), 0);
	assert_int_equal(base_cache_dir_ready(p, why, sizeof(why)), -EPERM);
	assert_int_equal(chmod(p, 0755), 0);
	assert_int_equal(base_cache_dir_ready(p, why, sizeof(why)), 0);
	/* a file */
	snprintf(q, sizeof(q), "%s/file", d);
	put(d, "file", 1, 0);
	assert_int_equal(base_cache_dir_ready(q, why, sizeof(why)), -ENOTDIR);
	/* another user's (only root can give it away) */
	if (geteuid() == 0) {
		assert_int_equal(chown(p, 65534, (gid_t)-1), 0);
		assert_int_equal(base_cache_dir_ready(p, why, sizeof(why)), -EPERM);
		assert_non_null(strstr(why, "owned by uid 65534"));
	}
	rm_rf(d);
	free(d);
}

static void test_entry_ok(void **state)
{
	(void)state;
	char *d = tmpdir(), p[512];
	put(d, "e.kunw1", 10, 0);
	snprintf(p, sizeof(p), "%s/e.kunw1", d);
	int fd = open(p, O_RDONLY);
	assert_true(base_cache_entry_ok(fd));
	assert_int_equal(fchmod(fd, 0620), 0);
	assert_false(base_cache_entry_ok(fd));
	assert_int_equal(fchmod(fd, 0602), 0);
	assert_false(base_cache_entry_ok(fd));
	assert_int_equal(fchmod(fd, 0644), 0);
	assert_true(base_cache_entry_ok(fd));
	if (geteuid() == 0) {
		assert_int_equal(fchown(fd, 65534, (gid_t)-1), 0);
		assert_false(base_cache_entry_ok(fd));
	}
	close(fd);
	fd = open(d, O_RDONLY | O_DIRECTORY);
	assert_false(base_cache_entry_ok(fd));
	close(fd);
	assert_false(base_cache_entry_ok(-1));
	rm_rf(d);
	free(d);
}

/* An entry written, then replaced: nothing but the entry ever has a name there. */
static void test_replace_unnamed(void **state)
{
	(void)state;
	char *d = tmpdir(), p[512];
	snprintf(p, sizeof(p), "%s/x.kunw1", d);
	struct base_piece a[2] = { { "hello ", 6 }, { "world", 5 } }, b = { "again", 5 };
	assert_int_equal(base_replace_file(p, a, 2), 0);
	assert_int_equal(base_replace_file(p, &b, 1), 0);
	char buf[32] = { 0 };
	int fd = open(p, O_RDONLY);
	assert_int_equal(read(fd, buf, sizeof(buf)), 5);
	close(fd);
	assert_string_equal(buf, "again");
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	DIR *dd = opendir(d);
	struct dirent *e;
	int n = 0;
	while ((e = readdir(dd)))
		n += e->d_name[0] != '.';
	closedir(dd);
	assert_int_equal(n, 1);
	base_temps_remove(); /* (nothing registered: nothing happens) */
	assert_int_equal(access(p, F_OK), 0);
	rm_rf(d);
	free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_admit_amortised),
		cmocka_unit_test(test_stale_temps),
		cmocka_unit_test(test_dir_ready),
		cmocka_unit_test(test_entry_ok),
		cmocka_unit_test(test_replace_unnamed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
