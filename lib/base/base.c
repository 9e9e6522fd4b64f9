/* SPDX-License-Identifier: MIT */
#include "base/base.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

void *base_realloc_array(void *p, size_t n, size_t size)
{
	size_t bytes;
	if (__builtin_mul_overflow(n, size, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, bytes ? bytes : 1);
}

/* ---- options */
int base_opts_copy(void *dst, size_t dst_size, const void *src)
{
	memset(dst, 0, dst_size);
	if (src) {
		size_t sz = *(const size_t *)src;
		if (sz < sizeof(size_t))
			return -EINVAL;
		for (size_t i = dst_size; i < sz; i++)
			if (((const unsigned char *)src)[i])
				return -EINVAL;
		memcpy(dst, src, UW_MIN(sz, dst_size));
	}
	*(size_t *)dst = dst_size;
	return 0;
}

/* ---- arena */
struct base_arena_chunk {
	struct base_arena_chunk *next;
	size_t used, cap;
	_Alignas(16) unsigned char data[];
};

void base_arena_init(struct base_arena *a, size_t chunk_size)
{
	a->head = NULL;
	a->chunk_size = chunk_size ? chunk_size : 64 * 1024;
	a->total = 0;
}

void *base_arena_alloc(struct base_arena *a, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (n == 0)
		n = 16;
	struct base_arena_chunk *c = a->head;
	if (!c || c->cap - c->used < n) {
		size_t cap = n > a->chunk_size / 2 ? n : a->chunk_size;
		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->cap = cap;
		c->used = 0;
		if (a->head && n > a->chunk_size / 2) {
			/* keep filling the current chunk: put the big one behind it */
			c->next = a->head->next;
			a->head->next = c;
		} else {
			c->next = a->head;
			a->head = c;
		}
		a->total += cap;
	}
	void *p = c->data + c->used;
	c->used += n;
	return p;
}

char *base_arena_strndup(struct base_arena *a, const char *s, size_t n)
{
	char *p = base_arena_alloc(a, n + 1);
	if (p) {
		memcpy(p, s, n);
		p[n] = 0;
	}
	return p;
}

void base_arena_free(struct base_arena *a)
{
	struct base_arena_chunk *c = a->head;
	while (c) {
		struct base_arena_chunk *n = c->next;
		free(c);
		c = n;
	}
	a->head = NULL;
	a->total = 0;
}

/* ---- vector */
int base_vec_reserve(struct base_vec *v, size_t n)
{
	if (n <= v->cap)
		return 0;
	size_t cap = v->cap ? v->cap : 8;
	while (cap < n) {
		if (cap > SIZE_MAX / 2)
			return -ENOMEM;
		cap *= 2;
	}
	void *d = base_realloc_array(v->data, cap, v->elem);
	if (!d)
		return -ENOMEM;
	v->data = d;
	v->cap = cap;
	return 0;
}

void *base_vec_push(struct base_vec *v)
{
	if (v->len == v->cap && base_vec_reserve(v, v->len + 1))
		return NULL;
	void *p = base_vec_at(v, v->len++);
	memset(p, 0, v->elem);
	return p;
}

void base_vec_free(struct base_vec *v)
{
	free(v->data);
	v->data = NULL;
	v->len = v->cap = 0;
}

/* ---- hash map (linear probing, backward-shift deletion) */
void base_map_init(struct base_map *m)
{
	memset(m, 0, sizeof(*m));
}

static size_t map_find(const struct base_map *m, uint64_t key, bool *found)
{
	size_t mask = m->cap - 1, i = base_hash64(key) & mask;
	while (m->used[i]) {
		if (m->keys[i] == key) {
			*found = true;
			return i;
		}
		i = (i + 1) & mask;
	}
	*found = false;
	return i;
}

void *base_map_get(const struct base_map *m, uint64_t key)
{
	if (!m->len)
		return NULL;
	bool f;
	size_t i = map_find(m, key, &f);
	return f ? m->vals[i] : NULL;
}

bool base_map_has(const struct base_map *m, uint64_t key)
{
	if (!m->len)
		return false;
	bool f;
	map_find(m, key, &f);
	return f;
}

static int map_grow(struct base_map *m)
{
	struct base_map n;
	n.cap = m->cap ? m->cap * 2 : 16;
	n.len = 0;
	n.keys = calloc(n.cap, sizeof(*n.keys));
	n.vals = calloc(n.cap, sizeof(*n.vals));
	n.used = calloc(n.cap, 1);
	if (!n.keys || !n.vals || !n.used) {
		free(n.keys);
		free(n.vals);
		free(n.used);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->used[i])
			continue;
		bool f;
		size_t j = map_find(&n, m->keys[i], &f);
		n.used[j] = 1;
		n.keys[j] = m->keys[i];
		n.vals[j] = m->vals[i];
		n.len++;
	}
	base_map_free(m);
	*m = n;
	return 0;
}

int base_map_put(struct base_map *m, uint64_t key, void *val)
{
	if ((m->len + 1) * 4 > m->cap * 3 && map_grow(m))
		return -ENOMEM;
	bool f;
	size_t i = map_find(m, key, &f);
	if (!f) {
		m->used[i] = 1;
		m->keys[i] = key;
		m->len++;
	}
	m->vals[i] = val;
	return 0;
}

void *base_map_del(struct base_map *m, uint64_t key)
{
	if (!m->len)
		return NULL;
	bool f;
	size_t i = map_find(m, key, &f);
	if (!f)
		return NULL;
	void *old = m->vals[i];
	size_t mask = m->cap - 1, j = i;
	m->used[i] = 0;
	m->len--;
	for (;;) {
		j = (j + 1) & mask;
		if (!m->used[j])
			break;
		size_t home = base_hash64(m->keys[j]) & mask;
		/* move j back to i if its home is not cyclically in (i, j] */
		bool in = i <= j ? (home > i && home <= j) : (home > i || home <= j);
		if (in)
			continue;
		m->keys[i] = m->keys[j];
		m->vals[i] = m->vals[j];
		m->used[i] = 1;
		m->used[j] = 0;
		i = j;
	}
	return old;
}

bool base_map_next(const struct base_map *m, size_t *it, uint64_t *key, void **val)
{
	for (; *it < m->cap; (*it)++) {
		if (m->used[*it]) {
			if (key)
				*key = m->keys[*it];
			if (val)
				*val = m->vals[*it];
			(*it)++;
			return true;
		}
	}
	return false;
}

void base_map_free(struct base_map *m)
{
	free(m->keys);
	free(m->vals);
	free(m->used);
	memset(m, 0, sizeof(*m));
}

uint64_t base_hash_bytes(const void *p, size_t n)
{
	/* FNV-1a, then a final mix */
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 0x100000001b3ULL;
	}
	return base_hash64(h ^ n);
}

static inline uint64_t rotl64(uint64_t x, unsigned r)
{
	return (x << r) | (x >> (64 - r));
}

static inline uint64_t lane(uint64_t h, uint64_t w)
{
	return rotl64(h ^ (w * 0x87c37b91114253d5ULL), 31) * 0x4cf5ad432745937fULL;
}

uint64_t base_hash_block(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h[4] = { 0x9e3779b97f4a7c15ULL, 0xbf58476d1ce4e5b9ULL, 0x94d049bb133111ebULL, n };
	size_t i = 0;
	for (; n - i >= 32; i += 32) {
		uint64_t w[4];
		memcpy(w, s + i, 32);
		for (unsigned k = 0; k < 4; k++)
			h[k] = lane(h[k], w[k]);
	}
	if (i < n) {
		uint64_t w[4] = { 0, 0, 0, 0 };
		memcpy(w, s + i, n - i);
		for (unsigned k = 0; k < 4; k++)
			h[k] = lane(h[k], w[k]);
	}
	return base_hash64(h[0] ^ rotl64(h[1], 17) ^ rotl64(h[2], 31) ^ rotl64(h[3], 47));
}

/* ---- interning: map from hash to a chain of entries */
struct intern_ent {
	struct intern_ent *next;
	size_t len;
	char str[];
};

void base_intern_init(struct base_intern *t)
{
	base_map_init(&t->map);
	base_arena_init(&t->arena, 64 * 1024);
}

static const char *intern_hashed(struct base_intern *t, const char *s, size_t n, uint64_t h)
{
	struct intern_ent *head = base_map_get(&t->map, h);
	for (struct intern_ent *e = head; e; e = e->next)
		if (e->len == n && memcmp(e->str, s, n) == 0)
			return e->str;
	struct intern_ent *e = base_arena_alloc(&t->arena, sizeof(*e) + n + 1);
	if (!e)
		return NULL;
	e->len = n;
	memcpy(e->str, s, n);
	e->str[n] = 0;
	e->next = head;
	if (base_map_put(&t->map, h, e))
		return NULL;
	return e->str;
}

const char *base_intern(struct base_intern *t, const char *s, size_t n)
{
	return intern_hashed(t, s, n, base_hash_bytes(s, n));
}

void base_intern_free(struct base_intern *t)
{
	base_map_free(&t->map);
	base_arena_free(&t->arena);
}

void base_strings_init(struct base_strings *s)
{
	for (unsigned i = 0; i < BASE_STRINGS_SHARDS; i++) {
		pthread_mutex_init(&s->shard[i].mu, NULL);
		base_map_init(&s->shard[i].t.map);
		base_arena_init(&s->shard[i].t.arena, 16 * 1024);
	}
}

const char *base_strings_intern(struct base_strings *s, const char *str, size_t n)
{
	uint64_t h = base_hash_bytes(str, n);
	/* (the map takes the hash's low bits: the shard its high ones) */
	struct base_strings_shard *sh = &s->shard[h >> 60 & (BASE_STRINGS_SHARDS - 1)];
	pthread_mutex_lock(&sh->mu);
	const char *r = intern_hashed(&sh->t, str, n, h);
	pthread_mutex_unlock(&sh->mu);
	return r;
}

void base_strings_free(struct base_strings *s)
{
	for (unsigned i = 0; i < BASE_STRINGS_SHARDS; i++) {
		base_intern_free(&s->shard[i].t);
		pthread_mutex_destroy(&s->shard[i].mu);
	}
}

/* ---- logging */
void base_log(struct base_log *l, enum uw_log_level lvl, const char *fmt, ...)
{
	if (!l || !l->fn || lvl > l->level)
		return;
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	l->fn(l->ctx, lvl, buf);
}

/* The last error of each thread, and the log it was recorded with */
static _Thread_local struct {
	const struct base_log *l;
	char msg[512];
} last_err;

int base_err(struct base_log *l, int err, const char *fmt, ...)
{
	if (l) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(last_err.msg, sizeof(last_err.msg), fmt, ap);
		va_end(ap);
		last_err.l = l;
		if (l->fn && l->level >= UW_LOG_DEBUG)
			l->fn(l->ctx, UW_LOG_DEBUG, last_err.msg);
	}
	return err < 0 ? err : -err;
}

const char *base_errmsg(const struct base_log *l)
{
	return l && last_err.l == l ? last_err.msg : "";
}

void base_errmsg_clear(const struct base_log *l)
{
	if (last_err.l == l)
		last_err.msg[0] = 0;
}

/* ---- cursor */
uint64_t base_cur_uleb(struct base_cursor *c)
{
	uint64_t v = 0;
	unsigned shift = 0;
	for (;;) {
		if (!base_cur_need(c, 1))
			return 0;
		uint8_t b = *c->p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			return v;
		if (shift > 70) { /* overlong encoding */
			c->bad = true;
			return 0;
		}
	}
}

int64_t base_cur_sleb(struct base_cursor *c)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;
	for (;;) {
		if (!base_cur_need(c, 1))
			return 0;
		b = *c->p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
		if (shift > 70) {
			c->bad = true;
			return 0;
		}
	}
	if (shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	return (int64_t)v;
}

const char *base_cur_str(struct base_cursor *c)
{
	if (c->bad)
		return NULL;
	const uint8_t *z = memchr(c->p, 0, (size_t)(c->end - c->p));
	if (!z) {
		c->bad = true;
		return NULL;
	}
	const char *s = (const char *)c->p;
	c->p = z + 1;
	return s;
}

void base_hex(const uint8_t *p, size_t n, char *out)
{
	static const char hx[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hx[p[i] >> 4];
		out[2 * i + 1] = hx[p[i] & 15];
	}
	out[2 * n] = 0;
}

/* ---- public error strings */
UW_API const char *uw_strerror(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
#define UW_ERR_CASE(name, val, msg) \
	case val:                   \
		return msg;
		UW_ERRORS(UW_ERR_CASE)
#undef UW_ERR_CASE
	default:
		return strerror(err);
	}
}

UW_API const char *uw_stop_reason_str(enum uw_stop_reason r)
{
	static const char *const names[] = {
#define UW_STOP_STR(name, msg) msg,
		UW_STOP_REASONS(UW_STOP_STR)
#undef UW_STOP_STR
	};
	return (unsigned)r < UW_ARRAY_SIZE(names) ? names[r] : "unknown";
}

UW_API const char *uw_frame_method_str(enum uw_frame_method m)
{
	static const char *const names[] = {
		[UW_METHOD_REGS] = "registers", [UW_METHOD_CFI] = "CFI", [UW_METHOD_FP] = "frame pointer",
		[UW_METHOD_PLT] = "PLT rule", [UW_METHOD_SIGNAL] = "signal frame", [UW_METHOD_CALLCHAIN] = "callchain",
		[UW_METHOD_SFRAME] = "SFrame", [UW_METHOD_STITCHED] = "stitched",
	};
	return (unsigned)m < UW_ARRAY_SIZE(names) && names[m] ? names[m] : "unknown";
}

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

int base_replace_file(const char *path, const struct base_piece *pieces, size_t npieces)
{
	char *dir = strdup(path), *slash = dir ? strrchr(dir, '/') : NULL, *tmp = NULL;
	if (slash && slash != dir) {
		*slash = 0;
		base_make_dirs(dir);
	}
	free(dir);
	if (asprintf(&tmp, "%s.%d.tmp", path, (int)getpid()) < 0)
		return -ENOMEM;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		int e = -errno;
		free(tmp);
		return e;
	}
	int err = 0;
	for (size_t i = 0; i < npieces && !err; i++) {
		const uint8_t *b = pieces[i].p;
		for (size_t left = pieces[i].n; left && !err;) {
			ssize_t w = write(fd, b, left);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				err = w < 0 ? -errno : -EIO;
				break;
			}
			b += w;
			left -= (size_t)w;
		}
	}
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
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

bool base_resource_error(int err)
{
	return err == -EMFILE || err == -ENFILE || err == -ENOMEM || err == -ENOBUFS;
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

UW_API unsigned uw_version(void)
{
	return UW_VERSION_NUMBER;
}

#define UW_STR2(x) #x
#define UW_STR(x) UW_STR2(x)
UW_API const char *uw_version_string(void)
{
	return UW_STR(UW_VERSION_MAJOR) "." UW_STR(UW_VERSION_MINOR) "." UW_STR(UW_VERSION_PATCH);
}
