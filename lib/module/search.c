/* SPDX-License-Identifier: MIT */
/*
 * Search directories (uw_session_opts.search_path, --search-path): where the files a recording
 * names are looked for by name when they are not at their path, as hotspot's "application
 * path" finds a program copied from another machine. Each directory is walked once, when the
 * first file is missed, into an index of names; a file found there is used only when its
 * build-id (or, for a debug file, its .gnu_debuglink CRC) is the one wanted, so a name shared
 * by unrelated files never gives wrong symbols. Walks are bounded in depth and entries, and
 * do not descend through symbolic links (no loops).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "module/files.h"

#define SEARCH_MAX_DEPTH 16
#define SEARCH_MAX_ENTRIES 200000

struct search_ent {
	struct search_ent *next; /* same name hash */
	const char *name;        /* basename, interned */
	const char *path;        /* interned */
};

struct search_index {
	struct base_map names;   /* hash(basename) -> chain */
	struct base_arena ar;
	size_t entries;
	bool truncated;
};

static void add_file(struct uw_session *s, struct search_index *ix, const char *dir, const char *name)
{
	char p[PATH_MAX];
	if (snprintf(p, sizeof(p), "%s/%s", dir, name) >= (int)sizeof(p))
		return;
	struct search_ent *e = base_arena_alloc(&ix->ar, sizeof(*e));
	if (!e)
		return;
	uint64_t h = base_hash_bytes(name, strlen(name));
	e->name = session_intern(s, name, strlen(name));
	e->path = session_intern(s, p, strlen(p));
	e->next = base_map_get(&ix->names, h);
	if (!e->name || !e->path || base_map_put(&ix->names, h, e))
		return;
	ix->entries++;
}

static void walk(struct uw_session *s, struct search_index *ix, const char *dir, unsigned depth)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (ix->entries >= SEARCH_MAX_ENTRIES) {
			ix->truncated = true;
			break;
		}
		const char *n = de->d_name;
		if (n[0] == '.' && (!n[1] || (n[1] == '.' && !n[2])))
			continue;
		unsigned char type = de->d_type;
		if (type == DT_UNKNOWN) {
			struct stat st;
			char p[PATH_MAX];
			if (snprintf(p, sizeof(p), "%s/%s", dir, n) >= (int)sizeof(p) || lstat(p, &st))
				continue;
			type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : S_ISLNK(st.st_mode) ? DT_LNK : 0;
		}
		if (type == DT_DIR) {
			char p[PATH_MAX];
			if (depth < SEARCH_MAX_DEPTH && snprintf(p, sizeof(p), "%s/%s", dir, n) < (int)sizeof(p))
				walk(s, ix, p, depth + 1);
		} else if (type == DT_REG || type == DT_LNK) {
			add_file(s, ix, dir, n); /* a link to a file (libfoo.so.1 -> ...) is opened as one */
		}
	}
	closedir(d);
}

static struct search_index *index_make(struct uw_session *s);

/* The session's index (part SESSION_SEARCH), made once by the first thread to need it (the
 * others wait for it). */
struct search_state {
	pthread_mutex_t mu;
	bool tried;
	struct search_index *ix; /* (published last) */
};

static void search_state_free(void *p)
{
	struct search_state *c = p;
	if (c->ix) {
		base_map_free(&c->ix->names);
		base_arena_free(&c->ix->ar);
		free(c->ix);
	}
	pthread_mutex_destroy(&c->mu);
	free(c);
}

static struct search_index *index_of(struct uw_session *s)
{
	if (!s->search_path)
		return NULL;
	struct search_state *c = session_part(s, SESSION_SEARCH);
	if (!c && (c = calloc(1, sizeof(*c)))) {
		pthread_mutex_init(&c->mu, NULL);
		c = session_part_attach(s, SESSION_SEARCH, c, search_state_free);
	}
	struct search_index *ix = c ? __atomic_load_n(&c->ix, __ATOMIC_ACQUIRE) : NULL;
	if (ix || !c)
		return ix;
	pthread_mutex_lock(&c->mu);
	if (!c->tried) {
		c->tried = true;
		__atomic_store_n(&c->ix, index_make(s), __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&c->mu);
	return __atomic_load_n(&c->ix, __ATOMIC_ACQUIRE);
}

static struct search_index *index_make(struct uw_session *s)
{
	struct search_index *ix = calloc(1, sizeof(*ix));
	char *dirs = strdup(s->search_path);
	if (!ix || !dirs) {
		free(ix);
		free(dirs);
		return NULL;
	}
	base_map_init(&ix->names);
	base_arena_init(&ix->ar, 64 * 1024);
	for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save))
		walk(s, ix, d, 0);
	free(dirs);
	if (ix->truncated)
		base_log(&s->log, UW_LOG_WARN, "search path: more than %d files; the rest are not searched",
			 SEARCH_MAX_ENTRIES);
	base_log(&s->log, UW_LOG_INFO, "search path: %zu files indexed", ix->entries);
	return ix;
}

const char *module_search_next(struct uw_session *s, const char *name, const char *after)
{
	struct search_index *ix = index_of(s);
	if (!ix)
		return NULL;
	const char *base = strrchr(name, '/');
	base = base ? base + 1 : name;
	/* a file deleted while mapped: the kernel's " (deleted)" is no part of its name */
	size_t bl = strlen(base);
	if (bl > 10 && strcmp(base + bl - 10, " (deleted)") == 0)
		bl -= 10;
	struct search_ent *e = base_map_get(&ix->names, base_hash_bytes(base, bl));
	bool past = after == NULL;
	for (; e; e = e->next) {
		if (strncmp(e->name, base, bl) != 0 || e->name[bl])
			continue;
		if (past)
			return e->path;
		past = e->path == after;
	}
	return NULL;
}
