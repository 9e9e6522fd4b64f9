/* SPDX-License-Identifier: MIT */
/* A cache directory with a size cap: the least recently used files removed to admit a new one. */
#include "base/cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

bool base_cache_admit(const char *path, uint64_t bytes, uint64_t cap, const char *const *suffixes)
{
	if (!cap)
		return true;
	if (bytes > cap)
		return false;
	char *dir = strdup(path);
	char *slash = dir ? strrchr(dir, '/') : NULL;
	if (!slash) {
		free(dir);
		return true;
	}
	*slash = 0;
	const char *self = slash + 1;
	DIR *d = opendir(dir);
	if (!d) {
		free(dir);
		return true; /* nothing there yet */
	}
	struct base_vec v = BASE_VEC_INIT(struct cache_ent);
	uint64_t total = 0;
	struct dirent *e;
	int dfd = dirfd(d);
	while ((e = readdir(d))) {
		size_t nl = strlen(e->d_name);
		bool ours = false;
		for (const char *const *x = suffixes; *x && !ours; x++)
			ours = nl > strlen(*x) && strcmp(e->d_name + nl - strlen(*x), *x) == 0;
		struct stat st;
		if (!ours || strcmp(e->d_name, self) == 0 || fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode))
			continue;
		struct cache_ent *ce = base_vec_push(&v);
		if (!ce || !(ce->name = strdup(e->d_name)))
			break;
		ce->size = (uint64_t)st.st_size;
		ce->mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
		total += ce->size;
	}
	struct cache_ent *ev = v.data;
	if (v.len > 1)
		qsort(ev, v.len, sizeof(*ev), cmp_cache_ent);
	for (size_t i = 0; i < v.len && total + bytes > cap; i++) {
		if (unlinkat(dfd, ev[i].name, 0) == 0)
			total -= ev[i].size;
	}
	for (size_t i = 0; i < v.len; i++)
		free(ev[i].name);
	base_vec_free(&v);
	closedir(d);
	free(dir);
	return total + bytes <= cap;
}

void base_cache_touch(int fd)
{
	if (fd >= 0)
		futimens(fd, NULL);
}
