/* SPDX-License-Identifier: MIT */
/* Files: opening what a recording or a process names without opening anything but a regular
 * file, reading it whole, making directories, replacing a file at once. */
#include "base/file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "unwound/unwound.h"

bool base_make_dirs(char *dir)
{
	for (char *p = dir + 1;; p++) {
		if (*p == '/' || !*p) {
			char keep = *p;
			*p = 0;
			bool ok = mkdir(dir, 0700) == 0 || errno == EEXIST;
			*p = keep;
			if (!ok)
				return false;
			if (!keep)
				return true;
		}
	}
}

/* ---- temporaries with a name (a file system without O_TMPFILE), registered while they exist so
 * that a process ended by a signal can remove them (base_temps_remove, from its handler): a slot
 * is 0 free, 1 being filled or emptied, 2 naming a file. */
#define TEMP_SLOTS 32
static struct {
	int state;
	char path[PATH_MAX];
} temps[TEMP_SLOTS];

static int temp_register(const char *path)
{
	if (strlen(path) >= PATH_MAX)
		return -1;
	for (int i = 0; i < TEMP_SLOTS; i++) {
		int free_ = 0;
		if (__atomic_compare_exchange_n(&temps[i].state, &free_, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
			strcpy(temps[i].path, path);
			__atomic_store_n(&temps[i].state, 2, __ATOMIC_RELEASE);
			return i;
		}
	}
	return -1; /* (more at once than slots: that one is left to the cache's scan of stale files) */
}

static void temp_unregister(int i)
{
	if (i >= 0)
		__atomic_store_n(&temps[i].state, 0, __ATOMIC_RELEASE);
}

void base_temps_remove(void)
{
	for (int i = 0; i < TEMP_SLOTS; i++) {
		int named = 2;
		/* (taken: a writer that ends now does not unregister a slot another fills since) */
		if (__atomic_compare_exchange_n(&temps[i].state, &named, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
			unlink(temps[i].path);
			__atomic_store_n(&temps[i].state, 0, __ATOMIC_RELEASE);
		}
	}
}

UW_API void uw_remove_temporaries(void)
{
	base_temps_remove();
}

static int write_pieces(int fd, const struct base_piece *pieces, size_t npieces)
{
	for (size_t i = 0; i < npieces; i++) {
		const uint8_t *b = pieces[i].p;
		for (size_t left = pieces[i].n; left;) {
			ssize_t w = write(fd, b, left);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				return w < 0 ? -errno : -EIO;
			b += w;
			left -= (size_t)w;
		}
	}
	return 0;
}

/* The unnamed file fd linked at path, whatever was there removed first: linkat never replaces a
 * name, so a reader may find no file for a moment (a cache's miss), never a part of one. */
static int link_replacing(int fd, const char *path)
{
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	for (int tries = 0; tries < 8; tries++) {
		/* (AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH before Linux 6.10: else through /proc) */
		if (linkat(fd, "", AT_FDCWD, path, AT_EMPTY_PATH) == 0 ||
		    (errno != EEXIST && linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0))
			return 0;
		if (errno != EEXIST)
			return -errno;
		if (unlink(path) && errno != ENOENT)
			return -errno;
	}
	return -EEXIST; /* (others writing the same entry all the while) */
}

int base_replace_file(const char *path, const struct base_piece *pieces, size_t npieces)
{
	char *dir = strdup(path), *slash = dir ? strrchr(dir, '/') : NULL, *tmp = NULL;
	if (!dir)
		return -ENOMEM;
	if (slash && slash != dir) {
		*slash = 0;
		base_make_dirs(dir);
	} else if (slash) {
		slash[1] = 0;
	} else {
		strcpy(dir, ".");
	}
	/* no name until complete: nothing is left behind, whatever ends the process */
	int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	free(dir);
	if (fd >= 0) {
		int err = write_pieces(fd, pieces, npieces);
		if (!err)
			err = link_replacing(fd, path);
		close(fd);
		if (err != -ENOENT && err != -EPERM && err != -EOPNOTSUPP)
			return err; /* (done, or failed as a named file would: out of room...) */
		/* (no /proc to link it through: written again under a name) */
	}
	if (asprintf(&tmp, "%s.%d.tmp", path, (int)getpid()) < 0)
		return -ENOMEM;
	int slot = temp_register(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		int e = -errno;
		temp_unregister(slot);
		free(tmp);
		return e;
	}
	int err = write_pieces(fd, pieces, npieces);
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	temp_unregister(slot);
	free(tmp);
	return err;
}

/* openat2(2) (Linux 5.6); the C library may not wrap it, nor its header define its struct */
#ifndef SYS_openat2
#define SYS_openat2 437
#endif
struct base_open_how {
	uint64_t flags, mode, resolve;
};
#define BASE_RESOLVE_NO_MAGICLINKS 0x02
#define BASE_RESOLVE_IN_ROOT 0x10

static int open_at(int dirfd, const char *path, int oflags, unsigned flags)
{
	if (flags & BASE_OPEN_IN_ROOT) {
		/* a path inside a process's root: its links cannot lead out of that root, and no
		 * /proc magic link inside it is followed */
		struct base_open_how how = { (uint64_t)oflags, 0, BASE_RESOLVE_IN_ROOT | BASE_RESOLVE_NO_MAGICLINKS };
		long fd = syscall(SYS_openat2, dirfd, path[0] == '/' ? path + 1 : path, &how, sizeof(how));
		return fd < 0 ? -errno : (int)fd;
	}
	int fd = openat(dirfd, path, oflags);
	return fd < 0 ? -errno : fd;
}

/* The file is looked at before it is opened: an O_PATH descriptor opens nothing (a FIFO does
 * not wait for a writer, a device's open routine is not run: no tape rewound, no watchdog
 * armed, no terminal acquired), and only a regular file is then opened for reading, through
 * that descriptor (/proc/self/fd/N names exactly the file looked at, whatever is renamed over
 * the path meanwhile). Without /proc, the path is opened again, non-blocking and without a
 * controlling terminal, and must be the same file. */
int base_open_file_at(int dirfd, const char *path, unsigned flags, uint64_t max, uint64_t *size)
{
	int nofollow = (flags & BASE_OPEN_NOFOLLOW) ? O_NOFOLLOW : 0;
	int pfd = open_at(dirfd, path, O_PATH | O_CLOEXEC | nofollow, flags);
	if (pfd < 0)
		return pfd;
	struct stat ps, st;
	if (fstat(pfd, &ps)) {
		int e = -errno;
		close(pfd);
		return e;
	}
	/* O_PATH | O_NOFOLLOW opens a link itself */
	if (!S_ISREG(ps.st_mode)) {
		close(pfd);
		return S_ISLNK(ps.st_mode) ? -ELOOP : -UW_ENOTREG;
	}
	if (max && (uint64_t)ps.st_size > max) {
		close(pfd);
		return -EFBIG;
	}
	char self[40];
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	int fd = open(self, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 && (errno == ENOENT || errno == ENOTDIR)) /* no /proc */
		fd = open_at(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | nofollow, flags);
	else if (fd < 0)
		fd = -errno;
	close(pfd);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st)) {
		int e = -errno;
		close(fd);
		return e;
	}
	if (!S_ISREG(st.st_mode) || st.st_dev != ps.st_dev || st.st_ino != ps.st_ino) {
		close(fd);
		return -UW_ENOTREG; /* replaced between the look and the open */
	}
	if (max && (uint64_t)st.st_size > max) {
		close(fd);
		return -EFBIG;
	}
	/* reads of a regular file never wait anyway; the flag only guarded the open */
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	*size = (uint64_t)st.st_size;
	return fd;
}

int base_open_file(const char *path, unsigned flags, uint64_t max, uint64_t *size)
{
	return base_open_file_at(AT_FDCWD, path, flags & ~BASE_OPEN_IN_ROOT, max, size);
}

int base_read_fd(int fd, uint64_t size, char **out, size_t *len)
{
	if (size >= SIZE_MAX)
		return -EFBIG;
	char *b = malloc((size_t)size + 1);
	if (!b)
		return -ENOMEM;
	size_t got = 0;
	while (got < size) {
		ssize_t n = pread(fd, b + got, (size_t)size - got, (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = -errno;
			free(b);
			return e;
		}
		if (n == 0)
			break; /* shrank since fstat: what is there */
		got += (size_t)n;
	}
	b[got] = 0;
	*out = b;
	*len = got;
	return 0;
}
