/* SPDX-License-Identifier: MIT */
/*
 * Output files, created one way for every writer (recordings, text, pages, profiles).
 *
 * A file is written without a name (O_TMPFILE in the path's directory) and given the path only
 * when it is complete (uw_output_commit) or, for a recording that must be readable if its
 * writer dies, as soon as its header is (base_output_publish). Until then nothing at the path
 * changes, and a writer that fails, or is killed by any signal, leaves nothing behind: the
 * kernel frees a file that never had a name. Giving it the path is two steps: the file already
 * there is renamed PATH.old, then the new one is linked at PATH (linkat, which never replaces
 * a name); a kill between the two leaves PATH.old and no PATH, never a stray temporary.
 *
 * On a file system without O_TMPFILE the file is written as PATH.PID.new and renamed; a
 * writer killed there leaves that name (said in the man pages).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/output.h"
#include "unwound/unwound.h"

struct uw_output {
	int fd;
	char *path;       /* NULL: written where it is (standard output, a device, a FIFO) */
	char *tmp;        /* the temporary's name when O_TMPFILE could not be used */
	bool published;   /* the path names it */
	bool recording;   /* a directory at the path is moved aside too (perf.data's rule) */
};

/* The directory a path is in ("." for a bare name). */
static char *dir_of(const char *path)
{
	const char *sl = strrchr(path, '/');
	if (!sl)
		return strdup(".");
	return strndup(path, sl == path ? 1 : (size_t)(sl - path));
}

static struct uw_output *in_place(int fd)
{
	if (fd < 0)
		return NULL;
	struct uw_output *o = calloc(1, sizeof(*o));
	if (!o) {
		close(fd);
		return NULL;
	}
	o->fd = fd;
	o->published = true;
	return o;
}

/* Does the path name an open file descriptor: /proc/PID/fd/N (or /proc/PID/task/TID/fd/N,
 * /proc/self/..., /proc/thread-self/...), /dev/fd/N, or a link that leads to one (/dev/stdout)?
 * *own: N, when it is one of this process's descriptors (else -1). Such a path is a file already
 * open, written where it is: replacing the path would replace /dev/stdout itself. */
static bool names_descriptor(const char *path, int *own)
{
	char cur[PATH_MAX], link[PATH_MAX];
	*own = -1;
	if (strlen(path) >= sizeof(cur))
		return false;
	strcpy(cur, path);
	for (int hop = 0; hop < 40; hop++) {
		const char *fdp = NULL;
		if (strncmp(cur, "/dev/fd/", 8) == 0) {
			fdp = cur + 8;
		} else if (strncmp(cur, "/proc/", 6) == 0) {
			/* /proc/X/fd/N or /proc/X/task/T/fd/N */
			const char *f = strstr(cur + 6, "/fd/");
			const char *x = cur + 6, *sl = strchr(x, '/');
			size_t xl = sl ? (size_t)(sl - x) : 0;
			bool self = (xl == 4 && !strncmp(x, "self", 4)) || (xl == 11 && !strncmp(x, "thread-self", 11)) ||
				    (xl && strtol(x, NULL, 10) == (long)getpid());
			if (f && !strchr(f + 4, '/')) {
				fdp = f + 4;
				if (!self)
					return true;
			}
		}
		if (fdp) {
			char *end;
			long n = strtol(fdp, &end, 10);
			if (*fdp && !*end && n >= 0 && n < INT32_MAX)
				*own = (int)n;
			return true;
		}
		ssize_t n = readlink(cur, link, sizeof(link) - 1);
		if (n <= 0)
			return false;
		link[n] = 0;
		if (link[0] == '/') {
			strcpy(cur, link);
		} else {
			/* relative to the link's directory */
			char *sl = strrchr(cur, '/');
			size_t d = sl ? (size_t)(sl - cur + 1) : 0;
			if (d + (size_t)n >= sizeof(cur))
				return false;
			memcpy(cur + d, link, (size_t)n + 1);
		}
	}
	return false;
}

static int output_open(const char *path, unsigned mode, bool recording, struct uw_output **out)
{
	*out = NULL;
	if (strcmp(path, "-") == 0) {
		int fd = fcntl(1, F_DUPFD_CLOEXEC, 3);
		if (fd < 0)
			return -errno;
		return (*out = in_place(fd)) ? 0 : -ENOMEM;
	}
	/* an open descriptor's path (/dev/stdout, /dev/fd/3, /proc/self/fd/1): the file as it is
	 * open, at its offset, nothing truncated or moved (a shell's '> out.txt' or '>> out.txt') */
	int own;
	if (names_descriptor(path, &own)) {
		int fd = own >= 0 ? fcntl(own, F_DUPFD_CLOEXEC, 3) : open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
		if (fd < 0)
			return -errno;
		return (*out = in_place(fd)) ? 0 : -ENOMEM;
	}
	struct stat lst, st;
	bool exists = lstat(path, &lst) == 0;
	if (exists && S_ISDIR(lst.st_mode) && !recording)
		return -EISDIR;
	/* a device, a FIFO, or a link to one (/dev/stdout): written as it is, nothing truncated */
	if (exists && (S_ISCHR(lst.st_mode) || S_ISFIFO(lst.st_mode) ||
		       (S_ISLNK(lst.st_mode) && stat(path, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))))) {
		int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
		if (fd < 0)
			return -errno;
		return (*out = in_place(fd)) ? 0 : -ENOMEM;
	}
	if (exists && !S_ISREG(lst.st_mode) && !S_ISLNK(lst.st_mode) && !S_ISDIR(lst.st_mode))
		return -UW_ENOTREG;
	struct uw_output *o = calloc(1, sizeof(*o));
	char *dir = dir_of(path);
	if (!o || !dir || !(o->path = strdup(path))) {
		free(dir);
		if (o)
			free(o->path);
		free(o);
		return -ENOMEM;
	}
	/* a file without a name, in the directory it will be named in (a link needs the same file
	 * system): a directory that cannot be written fails here, with nothing changed */
	o->fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
	int err = o->fd < 0 ? -errno : 0;
	free(dir);
	if (err == -EOPNOTSUPP || err == -EISDIR || err == -EINVAL) {
		/* no O_TMPFILE there: a name of its own beside the path */
		if (asprintf(&o->tmp, "%s.%d.new", path, (int)getpid()) < 0) {
			o->tmp = NULL;
			err = -ENOMEM;
		} else {
			o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
			err = o->fd < 0 ? -errno : 0;
		}
	}
	if (err) {
		free(o->tmp);
		free(o->path);
		free(o);
		return err;
	}
	*out = o;
	return 0;
}

int base_output_open(const char *path, unsigned mode, struct uw_output **out)
{
	return output_open(path, mode, false, out);
}

int base_output_open_recording(const char *path, unsigned mode, struct uw_output **out)
{
	int err = output_open(path, mode, true, out);
	if (!err && (*out)->path)
		(*out)->recording = true;
	return err;
}

int base_output_fd(const struct uw_output *o)
{
	return o->fd;
}

bool base_output_in_place(const struct uw_output *o)
{
	return !o->path;
}

/* The unnamed file linked at dst (which must not exist). */
static int link_unnamed(int fd, const char *dst)
{
	if (linkat(fd, "", AT_FDCWD, dst, AT_EMPTY_PATH) == 0)
		return 0;
	if (errno == EEXIST)
		return -EEXIST;
	/* AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH before Linux 6.10: the same through /proc */
	char p[64];
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	return linkat(AT_FDCWD, p, AT_FDCWD, dst, AT_SYMLINK_FOLLOW) ? -errno : 0;
}

/* Is the name one of a directory recording's parts (perf record --threads: "data", "data.N")? */
static bool recording_part(const char *name)
{
	return !strcmp(name, "data") || !strncmp(name, "data.", 5);
}

/* A directory recording at path (perf record --threads's) removed, as perf removes PATH.old
 * before it moves a recording there: only a directory whose entries are all "data" or
 * "data.*" files (none followed: links are removed as links); anything else in it, and nothing
 * is removed (-ENOTEMPTY). */
static int remove_recording_dir(const char *path)
{
	int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	DIR *d = fdopendir(dfd);
	if (!d) {
		int e = -errno;
		close(dfd);
		return e;
	}
	int err = 0;
	for (int pass = 0; pass < 2 && !err; pass++) {
		rewinddir(d);
		struct dirent *e;
		while (!err && (e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			struct stat st;
			if (!recording_part(e->d_name) || fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
			    S_ISDIR(st.st_mode))
				err = -ENOTEMPTY;
			else if (pass == 1 && unlinkat(dfd, e->d_name, 0))
				err = -errno;
		}
	}
	closedir(d);
	if (!err && rmdir(path))
		err = -errno;
	return err;
}

/* What is at the path (a regular file, or a link: moved, never followed; for a recording, a
 * directory too: perf record --threads's, or any other, as perf moves it) becomes PATH.old.
 * What was PATH.old goes, as with perf: a file or link replaced, a directory recording removed
 * first; a directory holding anything else stays, and nothing is moved (-ENOTEMPTY).
 * @return 0, 1 when something was moved, or -errno. */
static int move_aside(const char *path, const char *old, bool recording)
{
	struct stat lst, ost;
	if (lstat(path, &lst))
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISREG(lst.st_mode) && !S_ISLNK(lst.st_mode) && !(recording && S_ISDIR(lst.st_mode)))
		return S_ISDIR(lst.st_mode) ? -EISDIR : -UW_ENOTREG;
	if (recording && !lstat(old, &ost)) {
		/* (rename replaces a file with a file, never a directory, nor a file with one) */
		int err = 0;
		if (S_ISDIR(ost.st_mode))
			err = remove_recording_dir(old);
		else if (S_ISDIR(lst.st_mode) && unlink(old))
			err = -errno;
		if (err)
			return err;
	}
	return rename(path, old) ? -errno : 1;
}

int base_output_publish(struct uw_output *o)
{
	if (o->published)
		return 0;
	char *old = NULL;
	if (asprintf(&old, "%s.old", o->path) < 0)
		return -ENOMEM;
	int err = move_aside(o->path, old, o->recording), moved = err > 0;
	/* rename does not follow a link at the destination, linkat never replaces a name (a file
	 * put at the path meanwhile, by another writer, fails it with EEXIST) */
	if (err >= 0)
		err = o->tmp ? (rename(o->tmp, o->path) ? -errno : 0) : link_unnamed(o->fd, o->path);
	if (err && err != -EEXIST && moved)
		(void)rename(old, o->path); /* the previous file back where it was */
	free(old);
	if (err)
		return err;
	free(o->tmp);
	o->tmp = NULL;
	o->published = true;
	return 0;
}

void base_output_discard(struct uw_output *o)
{
	if (!o)
		return;
	if (o->fd >= 0)
		close(o->fd);
	if (o->tmp)
		unlink(o->tmp);
	free(o->tmp);
	free(o->path);
	free(o);
}

int base_output_commit(struct uw_output *o)
{
	int err = base_output_publish(o);
	/* (a file system that reports write errors at close: NFS) */
	if (!err && close(o->fd))
		err = -errno;
	else if (err)
		close(o->fd);
	o->fd = -1;
	if (o->tmp)
		unlink(o->tmp);
	free(o->tmp);
	free(o->path);
	free(o);
	return err;
}

int base_create_output(const char *path, unsigned mode)
{
	struct uw_output *o;
	int err = base_output_open(path, mode, &o);
	if (err)
		return err;
	err = base_output_publish(o);
	if (err) {
		base_output_discard(o);
		return err;
	}
	int fd = o->fd;
	o->fd = -1;
	base_output_discard(o);
	return fd;
}

UW_API int uw_output_create(const char *path, unsigned mode)
{
	return path ? base_create_output(path, mode) : -EINVAL;
}

UW_API struct uw_output *uw_output_open(const char *path, unsigned mode)
{
	struct uw_output *o = NULL;
	int err = path ? base_output_open(path, mode, &o) : -EINVAL;
	if (err)
		errno = -err;
	return o;
}

UW_API int uw_output_fd(const struct uw_output *o)
{
	return o ? o->fd : -EINVAL;
}

UW_API int uw_output_commit(struct uw_output *o)
{
	return o ? base_output_commit(o) : -EINVAL;
}

UW_API void uw_output_discard(struct uw_output *o)
{
	base_output_discard(o);
}
