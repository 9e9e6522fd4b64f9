/* SPDX-License-Identifier: MIT */
/* The session: its options and limits, strings, log, what ran out, and the parts the layers
 * above attach to it. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "session/session.h"
#include "base/cache.h"

UW_API struct uw_session *uw_session_new(const struct uw_session_opts *opts)
{
	struct uw_session *s = calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	int oe = BASE_OPTS_COPY(&s->opts, uw_session_opts, max_debuginfod_bytes, opts);
	if (oe) {
		free(s);
		errno = -oe;
		return NULL;
	}
	if (!s->opts.max_frames)
		s->opts.max_frames = 256;
	if (!s->opts.max_dwarf_cache_bytes)
		s->opts.max_dwarf_cache_bytes = (uint64_t)4 << 30;
	if (s->opts.max_frames > 4096) {
		free(s);
		errno = EINVAL;
		return NULL;
	}
	s->log.fn = s->opts.log;
	s->log.ctx = s->opts.log_ctx;
	s->log.level = s->opts.log_level;
	base_strings_init(&s->strings);
	pthread_mutex_init(&s->mu, NULL);
	base_errmsg_clear(&s->log); /* (another session's, at this address) */
	const char *dd = s->opts.debug_dirs ? s->opts.debug_dirs : getenv("UNWOUND_DEBUG_PATH");
	s->debug_dirs = dd ? strdup(dd) : NULL;
	if (s->opts.buildid_dir) {
		s->buildid_dir = strdup(s->opts.buildid_dir);
	} else {
		const char *home = getenv("HOME");
		if (home && *home && asprintf(&s->buildid_dir, "%s/.debug", home) < 0)
			s->buildid_dir = NULL;
	}
	s->sysroot = s->opts.sysroot ? strdup(s->opts.sysroot) : NULL;
	s->search_path = s->opts.search_path && *s->opts.search_path ? strdup(s->opts.search_path) : NULL;
	if (!s->opts.no_dwarf_cache) {
		const char *c = s->opts.dwarf_cache_dir ? s->opts.dwarf_cache_dir : getenv("UNWOUND_CACHE_DIR");
		const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
		int n = 0;
		if (c && *c)
			n = asprintf(&s->dwarf_cache, "%s", c);
		else if (xdg && *xdg == '/')
			n = asprintf(&s->dwarf_cache, "%s/unwound", xdg);
		else if (home && *home)
			n = asprintf(&s->dwarf_cache, "%s/.cache/unwound", home);
		if (n < 0)
			s->dwarf_cache = NULL; /* no cache: not an error */
	}
	s->opts.debug_dirs = s->opts.buildid_dir = s->opts.sysroot = s->opts.dwarf_cache_dir = NULL; /* not owned */
	s->opts.search_path = NULL;
	return s;
}

UW_API void uw_session_free(struct uw_session *s)
{
	if (!s)
		return;
	/* the layers' parts, the top one first (the symbolizer's helper thread reads modules) */
	for (unsigned i = SESSION_PART__N; i-- > 0;)
		if (s->parts[i].data) {
			s->parts[i].free(s->parts[i].data);
			s->parts[i].data = NULL;
		}
	base_strings_free(&s->strings);
	free(s->debug_dirs);
	free(s->buildid_dir);
	free(s->sysroot);
	free(s->search_path);
	free(s->dwarf_cache);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

void *session_part_attach(struct uw_session *s, enum session_part p, void *data, void (*free_fn)(void *data))
{
	pthread_mutex_lock(&s->mu);
	void *cur = s->parts[p].data;
	if (!cur && data) {
		s->parts[p].free = free_fn;
		__atomic_store_n(&s->parts[p].data, data, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&s->mu);
	if (cur && data)
		free_fn(data);
	return cur ? cur : data;
}

const char *session_cache_dir(struct uw_session *s)
{
	if (!s->dwarf_cache)
		return NULL;
	int st = __atomic_load_n(&s->cache_state, __ATOMIC_ACQUIRE);
	if (st)
		return st == 1 ? s->dwarf_cache : NULL;
	pthread_mutex_lock(&s->mu);
	if (!(st = s->cache_state)) {
		char why[512];
		int e = base_cache_dir_ready(s->dwarf_cache, why, sizeof(why));
		st = e ? 2 : 1;
		/* (one that cannot be made is no one's fault: said only with -v) */
		if (e)
			base_log(&s->log, e == -ELOOP || e == -EPERM || e == -ENOTDIR ? UW_LOG_WARN : UW_LOG_INFO,
				 "cache directory %s not used: %s", s->dwarf_cache, why);
		__atomic_store_n(&s->cache_state, st, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&s->mu);
	return st == 1 ? s->dwarf_cache : NULL;
}

uint64_t session_side_cap(const struct uw_session *s)
{
	return s && s->opts.max_side_file_bytes ? s->opts.max_side_file_bytes : SESSION_SIDE_FILE_MAX;
}

uint64_t session_view_cap(const struct uw_session *s)
{
	return s && s->opts.max_inflate_bytes ? s->opts.max_inflate_bytes : ELFV_MAX_INFLATE;
}

void session_resource_fail(struct uw_session *s, int err, const char *what)
{
	bool fd = err == -EMFILE || err == -ENFILE;
	uint64_t n = __atomic_add_fetch(fd ? &s->res.no_fd : &s->res.nomem, 1, __ATOMIC_RELAXED);
	base_log(&s->log, n == 1 ? UW_LOG_WARN : UW_LOG_INFO, "%s: %s%s", what, uw_strerror(err),
		 !fd ? ": the results are incomplete"
		 : err == -EMFILE ? ": out of file descriptors (raise ulimit -n); the results are incomplete"
				  : ": the system is out of file descriptors; the results are incomplete");
}

void session_file_shrunk(struct uw_session *s, struct elfv *v, const char *path)
{
	int err = v ? elfv_read_error(v) : 0;
	if (!err || __atomic_exchange_n(&v->read_err_said, true, __ATOMIC_RELAXED))
		return;
	if (err == -ENOMEM) {
		session_resource_fail(s, err, path);
		return;
	}
	__atomic_add_fetch(&s->res.shrunk, 1, __ATOMIC_RELAXED);
	struct stat st;
	/* (a read racing a truncation can fail with EIO rather than come up short: the size now says) */
	if ((err == -UW_ETRUNC || err == -EIO) && fstat(v->fd, &st) == 0 && (err == -UW_ETRUNC || (size_t)st.st_size < v->size))
		base_log(&s->log, UW_LOG_ERROR,
			 "%s: the file shrank while it was read (%zu bytes when opened, %lld now: rebuilt or copied over "
			 "in place?); what could not be read from it is missing",
			 path, v->size, (long long)st.st_size);
	else
		base_log(&s->log, UW_LOG_ERROR, "%s: could not be read: %s; what could not be read from it is missing", path,
			 uw_strerror(err));
}

UW_API int uw_session_stats(const struct uw_session *s, struct uw_session_stats *st)
{
	if (!s || !st || st->sz < sizeof(size_t))
		return -EINVAL;
	struct uw_session_stats k = { .sz = sizeof(k) };
	k.files_no_descriptor = __atomic_load_n(&s->res.no_fd, __ATOMIC_RELAXED);
	k.out_of_memory = __atomic_load_n(&s->res.nomem, __ATOMIC_RELAXED);
	k.files_shrunk = __atomic_load_n(&s->res.shrunk, __ATOMIC_RELAXED);
	k.debuginfod_too_big = __atomic_load_n(&s->res.dbgd_capped, __ATOMIC_RELAXED);
	k.debuginfod_timeouts = __atomic_load_n(&s->res.dbgd_timeout, __ATOMIC_RELAXED);
	size_t n = UW_MIN(st->sz, sizeof(k));
	memcpy((char *)st + sizeof(size_t), (const char *)&k + sizeof(size_t), n - sizeof(size_t));
	return 0;
}

UW_API const char *uw_session_errmsg(const struct uw_session *s)
{
	return s ? base_errmsg(&s->log) : "";
}
