/* SPDX-License-Identifier: MIT */
/*
 * A cache directory with a size cap: the least recently used files removed to admit a new one.
 *
 * The cap is kept without looking at the directory on every write: a directory used for long
 * holds tens of thousands of entries, and a scan of it (a readdir, a stat per entry, a sort)
 * cost 117-164 ms per entry written beside 20,000 entries (tests/cachebench, on a loaded
 * machine): a recording that kept the tables of 2,000 modules had 68-92 of them loaded, its
 * builder thread scanning, and 98% of its samples finished in user space meanwhile. So the
 * process keeps, per directory, an estimate of the bytes there: a scan at its first write, then
 * what it wrote since (less the size of the file each write replaces, one stat). Only when the
 * estimate says a write would cross the cap is the directory scanned again and the least
 * recently used entries removed down to 7/8 of the cap: a scan is then at least cap/8 bytes of
 * writes away, and its cost, spread over them, is O(1) per write.
 *
 * Other processes writing to the directory at the same time are not in the estimate: together
 * they may pass the cap by what each wrote since its last scan, until one of them scans.
 *
 * Temporaries: base_replace_file writes without a name where it can (O_TMPFILE); elsewhere, and
 * in older versions, as ENTRY.PID.tmp. Those left by a process that died are counted against
 * the cap, and removed by a scan once older than any write takes.
 */
#include "base/cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/compiler.h"
#include "base/vec.h"

struct cache_ent {
	char *name;
	uint64_t size;
	int64_t mtime;
};

static int cmp_cache_ent(const void *a, const void *b)
{
	const struct cache_ent *x = a, *y = b;
	return x->mtime < y->mtime ? -1 : x->mtime > y->mtime;
}

const char *const base_cache_files[] = { ".dwarf1", ".lines1", ".dwarf2", ".lines2", ".kunw1", NULL };

/* a temporary not renamed after this long was left by a writer that died (a write of the
 * largest entry takes seconds) */
#define CACHE_TEMP_STALE_NS (15 * 60 * 1000000000ll)

/* What the process believes a directory holds. */
struct ledger {
	struct ledger *next;
	uint64_t bytes;
	char dir[];
};
static pthread_mutex_t ledger_mu = PTHREAD_MUTEX_INITIALIZER;
static struct ledger *ledgers;

static bool ends_with(const char *s, size_t n, const char *suf)
{
	size_t k = strlen(suf);
	return n > k && memcmp(s + n - k, suf, k) == 0;
}

/* ENTRY.PID.tmp for an entry of one of suffixes (base_replace_file's name) */
static bool is_temp(const char *name, size_t n, const char *const *suffixes)
{
	if (!ends_with(name, n, ".tmp"))
		return false;
	for (const char *const *x = suffixes; *x; x++) {
		const char *at = strstr(name, *x);
		if (at && at[strlen(*x)] == '.')
			return true;
	}
	return false;
}

static int64_t real_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The directory's cache files and temporaries summed (self, the file about to be replaced, left
 * out), stale temporaries removed, then the least recently used entries until bytes more fit
 * in `low`. @return the bytes left there (UINT64_MAX: the directory could not be read). */
static uint64_t scan_evict(const char *dir, const char *self, uint64_t bytes, uint64_t low,
			   const char *const *suffixes)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return errno == ENOENT ? 0 : UINT64_MAX; /* (nothing there yet) */
	}
	struct base_vec v = BASE_VEC_INIT(struct cache_ent);
	uint64_t total = 0;
	int64_t now = real_ns();
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t nl = strlen(e->d_name);
		bool ours = false, temp = is_temp(e->d_name, nl, suffixes);
		for (const char *const *x = suffixes; *x && !ours && !temp; x++)
			ours = ends_with(e->d_name, nl, *x);
		struct stat st;
		if ((!ours && !temp) || strcmp(e->d_name, self) == 0 || fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode))
			continue;
		int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
		if (temp) {
			/* (another writer's, in flight, or one that died: only the old ones go) */
			if (now - mtime < CACHE_TEMP_STALE_NS || unlinkat(dfd, e->d_name, 0))
				total += (uint64_t)st.st_size;
			continue;
		}
		struct cache_ent *ce = base_vec_push(&v);
		if (!ce || !(ce->name = strdup(e->d_name))) {
			if (ce)
				v.len--;
			total += (uint64_t)st.st_size; /* (counted, not a candidate: out of memory) */
			continue;
		}
		ce->size = (uint64_t)st.st_size;
		ce->mtime = mtime;
		total += ce->size;
	}
	struct cache_ent *ev = v.data;
	if (total + bytes > low) {
		if (v.len > 1)
			qsort(ev, v.len, sizeof(*ev), cmp_cache_ent);
		for (size_t i = 0; i < v.len && total + bytes > low; i++)
			if (unlinkat(dfd, ev[i].name, 0) == 0)
				total -= ev[i].size;
	}
	for (size_t i = 0; i < v.len; i++)
		free(ev[i].name);
	base_vec_free(&v);
	closedir(d);
	return total;
}

bool base_cache_admit(const char *path, uint64_t bytes, uint64_t cap, const char *const *suffixes)
{
	if (!cap)
		return true;
	if (bytes > cap)
		return false;
	const char *slash = strrchr(path, '/');
	if (!slash)
		return true;
	size_t dl = (size_t)(slash - path);
	/* the file this one replaces leaves the directory */
	struct stat st;
	uint64_t old = lstat(path, &st) == 0 && S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
	pthread_mutex_lock(&ledger_mu);
	struct ledger *l = ledgers;
	while (l && (strlen(l->dir) != dl || memcmp(l->dir, path, dl)))
		l = l->next;
	if (!l && (l = malloc(sizeof(*l) + dl + 1))) {
		memcpy(l->dir, path, dl);
		l->dir[dl] = 0;
		l->bytes = UINT64_MAX; /* not scanned yet */
		l->next = ledgers;
		ledgers = l;
	}
	bool fits;
	if (l && l->bytes != UINT64_MAX && l->bytes - UW_MIN(old, l->bytes) + bytes <= cap) {
		l->bytes = l->bytes - UW_MIN(old, l->bytes) + bytes;
		fits = true;
	} else {
		uint64_t total = scan_evict(l ? l->dir : "", slash + 1, bytes, cap - cap / 8, suffixes);
		fits = total != UINT64_MAX && total + bytes <= cap;
		if (l)
			l->bytes = fits ? total + bytes : UINT64_MAX;
	}
	pthread_mutex_unlock(&ledger_mu);
	return fits;
}

void base_cache_forget(void)
{
	pthread_mutex_lock(&ledger_mu);
	while (ledgers) {
		struct ledger *l = ledgers;
		ledgers = l->next;
		free(l);
	}
	pthread_mutex_unlock(&ledger_mu);
}

void base_cache_touch(int fd)
{
	if (fd >= 0)
		futimens(fd, NULL);
}

bool base_cache_entry_ok(int fd)
{
	struct stat st;
	return fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
	       !(st.st_mode & (S_IWGRP | S_IWOTH));
}

/* Is the directory open at fd this user's, and no one else's to write? (why written when not) */
static int dir_trusted(int fd, char *why, size_t whylen)
{
	struct stat st;
	if (fstat(fd, &st))
		return snprintf(why, whylen, "cannot be looked at: %s", strerror(errno)), -errno;
	if (!S_ISDIR(st.st_mode))
		return snprintf(why, whylen, "not a directory"), -ENOTDIR;
	if (st.st_uid != geteuid())
		return snprintf(why, whylen, "owned by uid %u, not by this user (uid %u): anyone who can write its entries can make them say anything",
				(unsigned)st.st_uid, (unsigned)geteuid()), -EPERM;
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return snprintf(why, whylen, "writable by its group or by others (mode %04o): anyone who can write its entries can make them say anything",
				(unsigned)(st.st_mode & 07777)), -EPERM;
	return 0;
}

int base_cache_dir_ready(const char *dir, char *why, size_t whylen)
{
	if (!dir || !*dir)
		return snprintf(why, whylen, "no directory"), -EINVAL;
	char *p = strdup(dir);
	int fd = open(*dir == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (!p || fd < 0) {
		int e = p ? -errno : -ENOMEM;
		free(p);
		if (fd >= 0)
			close(fd);
		return snprintf(why, whylen, "%s", strerror(-e)), e;
	}
	int err = 0;
	char *save = NULL;
	for (char *c = strtok_r(p, "/", &save); c && !err;) {
		char *next = strtok_r(NULL, "/", &save);
		bool last = !next, made = false;
		struct stat st;
		if (fstatat(fd, c, &st, AT_SYMLINK_NOFOLLOW)) {
			if (errno != ENOENT || (mkdirat(fd, c, 0700) && errno != EEXIST)) {
				err = -errno;
				snprintf(why, whylen, "%s cannot be made: %s", c, strerror(errno));
				break;
			}
			made = true;
		} else if (last && S_ISLNK(st.st_mode)) {
			err = -ELOOP;
			snprintf(why, whylen, "a symbolic link (a cache directory is never followed: another user could point it at a directory of theirs)");
			break;
		}
		/* the components above it may be links (/home -> /usr/home); the directory itself and
		 * what this made are not followed, and must be this user's */
		int nfd = openat(fd, c, O_PATH | O_DIRECTORY | O_CLOEXEC | (last || made ? O_NOFOLLOW : 0));
		if (nfd < 0) {
			err = -errno;
			snprintf(why, whylen, "%s cannot be opened: %s", c, strerror(errno));
			break;
		}
		close(fd);
		fd = nfd;
		if (last || made) {
			char sub[512];
			err = dir_trusted(fd, sub, sizeof(sub));
			if (err && last)
				snprintf(why, whylen, "%s", sub);
			else if (err)
				snprintf(why, whylen, "%s (made by this process): %s", c, sub);
		}
		c = next;
	}
	close(fd);
	free(p);
	return err;
}
