/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD for tests/e2e/cache-temps.sh: a writer caught in the middle of a cache entry.
 *   UW_SLOW_DIR=DIR   a write() to a file in DIR (named or not: /proc/self/fd/N says where)
 *                     first creates the file UW_SLOW_MARK, then sleeps 60 s (the test kills
 *                     the process meanwhile)
 *   UW_NO_TMPFILE=1   open() with O_TMPFILE fails with EOPNOTSUPP (a file system without it)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

ssize_t write(int fd, const void *buf, size_t n)
{
	static ssize_t (*real)(int, const void *, size_t);
	if (!real)
		real = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	const char *dir = getenv("UW_SLOW_DIR");
	char link[64], at[4096];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t k = dir ? readlink(link, at, sizeof(at) - 1) : -1;
	size_t dl = dir ? strlen(dir) : 0;
	if (k > (ssize_t)dl && !strncmp(at, dir, dl) && at[dl] == '/') {
		const char *mark = getenv("UW_SLOW_MARK");
		int m = mark ? open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0644) : -1;
		if (m >= 0)
			close(m);
		sleep(60);
	}
	return real(fd, buf, n);
}

static int no_tmpfile(int flags)
{
	return (flags & O_TMPFILE) == O_TMPFILE && getenv("UW_NO_TMPFILE");
}

int open(const char *path, int flags, ...)
{
	static int (*real)(const char *, int, ...);
	if (!real)
		real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
	va_list ap;
	va_start(ap, flags);
	mode_t mode = (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, mode_t) : 0;
	va_end(ap);
	if (no_tmpfile(flags)) {
		errno = EOPNOTSUPP;
		return -1;
	}
	return real(path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, mode_t) : 0;
	va_end(ap);
	return open(path, flags, mode);
}
