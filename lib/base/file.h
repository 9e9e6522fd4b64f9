/* SPDX-License-Identifier: MIT */
/* Files: opening those a recording or a process names (untrusted), reading them whole, making
 * directories, replacing a file at once. */
#ifndef UW_BASE_FILE_H
#define UW_BASE_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define BASE_OPEN_NOFOLLOW 1u /* refuse a symbolic link as the last component (-ELOOP) */
#define BASE_OPEN_IN_ROOT 2u  /* base_open_file_at: path resolved with dirfd as its root (a
                               * process's /proc/PID/root: its links stay inside it) */
/* Opens a file to read, only when it is a regular file of at most max bytes (0: any size),
 * and never opens anything else: the path is looked at through an O_PATH descriptor first, so
 * a FIFO is not waited on and a device (or a link to one) is not opened at all; the file is
 * then opened through that descriptor, O_NOCTTY. Every file a recording, a process or a file
 * they name (debug links, .dwo names, dwz links) points at is opened through here.
 * @return the descriptor (blocking again, close-on-exec) with *size set; -errno (-ENOENT,
 * -EACCES, -ELOOP for a link with BASE_OPEN_NOFOLLOW, -EFBIG over max, -EMFILE when the
 * process is out of descriptors), or -UW_ENOTREG. */
int base_open_file(const char *path, unsigned flags, uint64_t max, uint64_t *size);
/* The same, path relative to dirfd (AT_FDCWD: the working directory). */
int base_open_file_at(int dirfd, const char *path, unsigned flags, uint64_t max, uint64_t *size);
/* Reads a file opened with base_open_file whole into a malloc'd buffer (NUL-terminated).
 * @return 0 or -errno. */
int base_read_fd(int fd, uint64_t size, char **out, size_t *len);

/* A descriptor kept open across code that is not ours (a program profiling itself may close it
 * and open another file at its number): its identity when opened, and whether fd is still it.
 * (Inline: the in-process profiler, which links none of these, uses them too.) */
static inline bool base_fd_identity(int fd, uint64_t *dev, uint64_t *ino)
{
	struct stat st;
	if (fd < 0 || fstat(fd, &st))
		return false;
	*dev = (uint64_t)st.st_dev;
	*ino = (uint64_t)st.st_ino;
	return true;
}
static inline bool base_fd_is(int fd, uint64_t dev, uint64_t ino)
{
	uint64_t d, i;
	return base_fd_identity(fd, &d, &i) && d == dev && i == ino;
}

/* mkdir -p, 0700 for what it creates (dir is changed during the call, then restored) */
bool base_make_dirs(char *dir);

/* Replaces the file at path (0600, its directory made as base_make_dirs does) with the pieces
 * written in order, so a reader sees the old file, none, or the whole new one: the new file is
 * written without a name (O_TMPFILE) and linked at path once complete, so a writer killed by any
 * signal leaves nothing behind. On a file system without O_TMPFILE it is written as
 * PATH.PID.tmp and renamed; that name is registered until then (base_temps_remove).
 * @return 0 or a negative errno. */
struct base_piece {
	const void *p;
	size_t n;
};
int base_replace_file(const char *path, const struct base_piece *pieces, size_t npieces);
/* Removes the temporaries base_replace_file has under a name now (see above). Async-signal-safe
 * (reads the registry, calls unlink): for the handler of a signal that ends the process, and at
 * exit (a thread may be writing one). */
void base_temps_remove(void);

#endif
