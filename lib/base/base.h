/* SPDX-License-Identifier: MIT */
/* Base layer: allocation, containers, interning, errors and logging. Knows nothing else. */
#ifndef UW_BASE_H
#define UW_BASE_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "unwound/unwound.h"

#define UW_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define UW_LIKELY(x) __builtin_expect(!!(x), 1)
#define UW_UNLIKELY(x) __builtin_expect(!!(x), 0)
/* each argument evaluated once (arguments may be reads with side effects) */
#define UW_MIN(a, b) ({ __typeof__(a) mina_ = (a); __typeof__(b) minb_ = (b); mina_ < minb_ ? mina_ : minb_; })
#define UW_MAX(a, b) ({ __typeof__(a) maxa_ = (a); __typeof__(b) maxb_ = (b); maxa_ > maxb_ ? maxa_ : maxb_; })
#define UW_PRINTF(f, a) __attribute__((format(printf, f, a)))

/* ---- checked allocation: NULL on overflow or failure, never abort */
void *base_realloc_array(void *p, size_t n, size_t size);

/* ---- options structs (first field size_t sz): copy what the caller's version has, zero the
 * rest; a newer caller's unknown trailing bytes must be zero. @return 0 or -EINVAL. A NULL
 * src gives all defaults. */
int base_opts_copy(void *dst, size_t dst_size, const void *src);

/* ---- arena: bump allocation in chunks, freed all at once */
struct base_arena {
	struct base_arena_chunk *head;
	size_t chunk_size;
	size_t total;
};
void base_arena_init(struct base_arena *a, size_t chunk_size);
void *base_arena_alloc(struct base_arena *a, size_t n); /* 16-byte aligned */
char *base_arena_strndup(struct base_arena *a, const char *s, size_t n);
void base_arena_free(struct base_arena *a);

/* ---- growable vector of fixed-size elements */
struct base_vec {
	void *data;
	size_t len, cap, elem;
};
#define BASE_VEC_INIT(type) ((struct base_vec){ NULL, 0, 0, sizeof(type) })
int base_vec_reserve(struct base_vec *v, size_t n); /* capacity for n elements in total */
void *base_vec_push(struct base_vec *v);             /* zeroed new slot, NULL on OOM */
static inline void *base_vec_at(const struct base_vec *v, size_t i)
{
	return (char *)v->data + i * v->elem;
}
void base_vec_free(struct base_vec *v);

/* ---- open-addressing hash map from uint64_t keys to pointers (key 0 allowed) */
struct base_map {
	uint64_t *keys;
	void **vals;
	uint8_t *used;
	size_t cap, len; /* cap is a power of two */
};
void base_map_init(struct base_map *m);
void *base_map_get(const struct base_map *m, uint64_t key);
bool base_map_has(const struct base_map *m, uint64_t key);
int base_map_put(struct base_map *m, uint64_t key, void *val);
void *base_map_del(struct base_map *m, uint64_t key);
void base_map_free(struct base_map *m);
/* Iterates: for (size_t i = 0; base_map_next(m, &i, &k, &v); ) */
bool base_map_next(const struct base_map *m, size_t *it, uint64_t *key, void **val);

static inline uint64_t base_hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}
uint64_t base_hash_bytes(const void *p, size_t n);
/* the same job for large blocks (megabytes), a word at a time on four lanes */
uint64_t base_hash_block(const void *p, size_t n);

/* ---- files named by a recording or a process (untrusted) and output files */
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
/* Whether err (negative) says a resource ran out (descriptors, memory) rather than that the
 * thing asked for is absent or bad: such a failure is said as one, never as "not found". */
bool base_resource_error(int err);
/* Reads a file opened with base_open_file whole into a malloc'd buffer (NUL-terminated).
 * @return 0 or -errno. */
int base_read_fd(int fd, uint64_t size, char **out, size_t *len);

/* Output files (output.c), created the one way every output is: never through a symbolic link
 * (a link at the path is moved aside, not followed), mode less the umask. The file is written
 * without a name beside the path and put there only when published (the previous file kept as
 * PATH.old): a writer that fails or is killed first leaves the path as it was. A character
 * device or FIFO at the path (or a link to one, such as /dev/stdout) is written as it is; "-"
 * is standard output. Each returns 0 or -errno (-UW_ENOTREG for a path that is neither). */
struct uw_output;
int base_output_open(const char *path, unsigned mode, struct uw_output **out);
int base_output_fd(const struct uw_output *o);
/* The file at its path now (writing may go on: a recording readable if its writer dies). */
int base_output_publish(struct uw_output *o);
/* Published (if not yet) and closed; freed either way. */
int base_output_commit(struct uw_output *o);
/* Closed and freed; a file never published is gone. NULL is ignored. */
void base_output_discard(struct uw_output *o);
/* Opened and published at once: the descriptor (uw_output_create). @return fd or -errno. */
int base_create_output(const char *path, unsigned mode);

/* A cache directory with a size cap: before `bytes` are written to path, the cache files beside
 * it (names ending in one of suffixes, NULL-terminated) are summed and the least recently used
 * (oldest mtime; a use touches it) removed until the new file fits. @return true when it fits
 * (cap 0: no cap), false when it alone is larger than the cap. */
bool base_cache_admit(const char *path, uint64_t bytes, uint64_t cap, const char *const *suffixes);
/* Marks a cache file used now (its mtime). */
void base_cache_touch(int fd);

/* mkdir -p, 0700 for what it creates (dir is changed during the call, then restored) */
bool base_make_dirs(char *dir);

/* Replaces the file at path (0600, its directory made as base_make_dirs does) with the pieces
 * written in order, through a temporary file beside it and a rename, so a reader sees the old
 * file or the whole new one. @return 0 or a negative errno. */
struct base_piece {
	const void *p;
	size_t n;
};
int base_replace_file(const char *path, const struct base_piece *pieces, size_t npieces);

/* ---- string interning: equal strings share one pointer, alive until base_intern_free */
struct base_intern {
	struct base_map map; /* hash -> chain */
	struct base_arena arena;
};
void base_intern_init(struct base_intern *t);
const char *base_intern(struct base_intern *t, const char *s, size_t n);
void base_intern_free(struct base_intern *t);

/* ---- shared interning: the same from any thread. Strings go to one of BASE_STRINGS_SHARDS
 * tables by their hash, each behind a lock of its own (held for one lookup), so threads that
 * intern at once rarely wait on each other. Alive until base_strings_free. */
#define BASE_STRINGS_SHARDS 16
struct base_strings {
	struct base_strings_shard {
		pthread_mutex_t mu;
		struct base_intern t;
	} __attribute__((aligned(64))) shard[BASE_STRINGS_SHARDS];
};
void base_strings_init(struct base_strings *s);
/* NULL without memory. */
const char *base_strings_intern(struct base_strings *s, const char *str, size_t n);
void base_strings_free(struct base_strings *s);

/* ---- errors and logging, attached to a session-like context */
struct base_log {
	uw_log_fn fn;           /* called from any thread that logs (the caller's to serialize) */
	void *ctx;
	enum uw_log_level level;
};
void base_log(struct base_log *l, enum uw_log_level lvl, const char *fmt, ...) UW_PRINTF(3, 4);
/* Records an error message and returns err (negative) for `return base_err(...)`. The message is
 * the calling thread's (threads that share a session each see their own last error). */
int base_err(struct base_log *l, int err, const char *fmt, ...) UW_PRINTF(3, 4);
/* The calling thread's last error message recorded with l ("" when none). */
const char *base_errmsg(const struct base_log *l);
/* Forgets it. */
void base_errmsg_clear(const struct base_log *l);

/* ---- LEB128 and bounded reading */
struct base_cursor {
	const uint8_t *p, *end;
	bool bad; /* set on any out-of-bounds read; reads then return 0 */
};
static inline struct base_cursor base_cursor(const void *p, size_t n)
{
	return (struct base_cursor){ (const uint8_t *)p, (const uint8_t *)p + n, false };
}
static inline size_t base_cur_left(const struct base_cursor *c)
{
	return c->bad ? 0 : (size_t)(c->end - c->p);
}
static inline bool base_cur_need(struct base_cursor *c, size_t n)
{
	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = true;
		return false;
	}
	return true;
}
#define BASE_CUR_READ(name, type)                                   \
	static inline type base_cur_##name(struct base_cursor *c)   \
	{                                                           \
		type v;                                             \
		if (!base_cur_need(c, sizeof(type)))                \
			return 0;                                   \
		memcpy(&v, c->p, sizeof(type));                     \
		c->p += sizeof(type);                               \
		return v;                                           \
	}
BASE_CUR_READ(u8, uint8_t)
BASE_CUR_READ(u16, uint16_t)
BASE_CUR_READ(u32, uint32_t)
BASE_CUR_READ(u64, uint64_t)
BASE_CUR_READ(s8, int8_t)
BASE_CUR_READ(s16, int16_t)
BASE_CUR_READ(s32, int32_t)
BASE_CUR_READ(s64, int64_t)
uint64_t base_cur_uleb(struct base_cursor *c);
int64_t base_cur_sleb(struct base_cursor *c);
static inline void base_cur_skip(struct base_cursor *c, size_t n)
{
	if (base_cur_need(c, n))
		c->p += n;
}
/* NUL-terminated string inside the cursor; NULL (and bad) if unterminated */
const char *base_cur_str(struct base_cursor *c);
/* DWARF's initial length (of a unit, a CIE or FDE, a line program, an aranges set): 32 bits,
 * or 0xffffffff then 64 bits; 0xfffffff0-0xfffffffe are reserved (the cursor goes bad, *offsz
 * stays 4). *offsz: the format's offset size, 4 or 8. */
static inline uint64_t base_cur_initial_length(struct base_cursor *c, unsigned *offsz)
{
	uint64_t len = base_cur_u32(c);
	*offsz = 4;
	if (len == 0xffffffffu) {
		*offsz = 8;
		len = base_cur_u64(c);
	} else if (len >= 0xfffffff0u) {
		c->bad = true;
	}
	return len;
}

/* In an array of n elements of `stride` bytes sorted by a uint64_t key at byte `key_off`: the
 * number of elements whose key is <= key (so element [result - 1] is the last one at or before
 * key; 0: none). One binary search for every "which range holds this address" lookup. */
static inline size_t base_upper_bound(const void *arr, size_t n, size_t stride, size_t key_off, uint64_t key)
{
	const char *a = arr;
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t k;
		memcpy(&k, a + mid * stride + key_off, sizeof(k));
		if (k <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* hex encoding of a build-id into out (2*n+1 bytes) */
void base_hex(const uint8_t *p, size_t n, char *out);

#endif
