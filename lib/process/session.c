/* SPDX-License-Identifier: MIT */
/* The session: its options, lock, strings and log, and the modules it shares with every
 * tracker. */
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

#include "process/process.h"

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
	base_intern_init(&s->strings);
	base_arena_init(&s->inl_arena, 64 * 1024);
	base_map_init(&s->modules);
	s->idle_mods = BASE_VEC_INIT(struct uw_module *);
	/* one lock for the shared state: modules, strings, lazily built tables (it is taken
	 * again by the functions it calls, hence recursive) */
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&s->mu, &ma);
	pthread_mutexattr_destroy(&ma);
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
	proc_inline_end(s);
	proc_kallsyms_end(s);
	proc_debuginfod_end(s);
	size_t it = 0;
	void *val;
	while (base_map_next(&s->modules, &it, NULL, &val)) {
		for (struct uw_module *m = val, *next; m; m = next) {
			next = m->next_same_key;
			proc_module_free(m);
		}
	}
	base_map_free(&s->modules);
	base_vec_free(&s->idle_mods);
	base_intern_free(&s->strings);
	base_arena_free(&s->inl_arena);
	free(s->debug_dirs);
	free(s->buildid_dir);
	free(s->sysroot);
	free(s->search_path);
	proc_search_free(s);
	free(s->dwarf_cache);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

void proc_resource_fail(struct uw_session *s, int err, const char *what)
{
	bool fd = err == -EMFILE || err == -ENFILE;
	uint64_t n = __atomic_add_fetch(fd ? &s->res.no_fd : &s->res.nomem, 1, __ATOMIC_RELAXED);
	base_log(&s->log, n == 1 ? UW_LOG_WARN : UW_LOG_INFO, "%s: %s%s", what, uw_strerror(err),
		 !fd ? ": the results are incomplete"
		 : err == -EMFILE ? ": out of file descriptors (raise ulimit -n); the results are incomplete"
				  : ": the system is out of file descriptors; the results are incomplete");
}

void proc_file_shrunk(struct uw_session *s, struct elfv *v, const char *path)
{
	int err = v ? elfv_read_error(v) : 0;
	if (!err || v->read_err_said)
		return;
	v->read_err_said = true;
	if (err == -ENOMEM) {
		proc_resource_fail(s, err, path);
		return;
	}
	__atomic_add_fetch(&s->res.shrunk, 1, __ATOMIC_RELAXED);
	struct stat st;
	if (err == -UW_ETRUNC && fstat(v->fd, &st) == 0)
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

void proc_lock(struct uw_session *s)
{
	pthread_mutex_lock(&s->mu);
}

void proc_unlock(struct uw_session *s)
{
	pthread_mutex_unlock(&s->mu);
}

const char *proc_intern(struct uw_session *s, const char *str, size_t len)
{
	proc_lock(s);
	const char *r = base_intern(&s->strings, str, len);
	proc_unlock(s);
	return r;
}

void proc_session_live(struct uw_session *s)
{
	__atomic_store_n(&s->evict_idle, true, __ATOMIC_RELEASE);
}

UW_API const char *uw_session_errmsg(const struct uw_session *s)
{
	return s ? base_errmsg(&s->log) : "";
}

UW_API const char *uw_module_path(const struct uw_module *m)
{
	return m->path;
}

UW_API const char *uw_module_name(const struct uw_module *m)
{
	return m->name;
}

UW_API const char *uw_module_build_id(const struct uw_module *m)
{
	/* a module known by path gets its file's build-id when first opened, before its state
	 * is published (and never again) */
	if (m->key_by_path && __atomic_load_n(&m->state, __ATOMIC_ACQUIRE) == UW_MODULE_UNOPENED)
		return "";
	return m->build_id;
}

UW_API enum uw_module_state uw_module_state(const struct uw_module *m)
{
	/* the last opening's outcome: it stays when the files are let go while idle */
	return (enum uw_module_state)__atomic_load_n(&m->state, __ATOMIC_ACQUIRE);
}

UW_API int uw_module_stats(const struct uw_module *m, struct uw_module_stats *st)
{
	if (!m || !st || st->sz < sizeof(size_t))
		return -EINVAL;
	struct uw_module_stats v = { .sz = st->sz };
	struct uw_module *mm = (struct uw_module *)m;
	v.steps_cfi = __atomic_load_n(&mm->steps[UW_METHOD_CFI], __ATOMIC_RELAXED);
	v.steps_sframe = __atomic_load_n(&mm->steps[UW_METHOD_SFRAME], __ATOMIC_RELAXED);
	v.steps_fp = __atomic_load_n(&mm->steps[UW_METHOD_FP], __ATOMIC_RELAXED);
	v.steps_plt = __atomic_load_n(&mm->steps[UW_METHOD_PLT], __ATOMIC_RELAXED);
	memcpy(st, &v, UW_MIN(st->sz, sizeof(v)));
	return 0;
}

UW_API void uw_session_foreach_module(struct uw_session *s, uw_module_fn fn, void *ctx)
{
	size_t it = 0;
	void *val;
	proc_lock(s);
	while (base_map_next(&s->modules, &it, NULL, &val))
		for (struct uw_module *m = val; m; m = m->next_same_key)
			if (fn(ctx, m))
				goto out;
out:
	proc_unlock(s);
}

