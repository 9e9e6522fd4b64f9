/* SPDX-License-Identifier: MIT */
/*
 * debuginfod: libdebuginfod loaded (dlopen) on the first fetch; a client per fetch under way (a
 * client does one at a time: fetches of different modules go on at once), kept for the next;
 * every fetch bounded in time and size.
 */
#include <dlfcn.h>
#include <elfutils/debuginfod.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "module/files.h"

/* ---- debuginfod */

/* libdebuginfod is loaded only when a fetch is asked for: linking it would load libcurl and a
 * dozen more libraries into every run (4 ms of start-up, a third of a small report). libdw does
 * the same. */
struct dbgd_api {
	void *lib;
	debuginfod_client *(*begin)(void);
	void (*end)(debuginfod_client *);
	int (*find_debuginfo)(debuginfod_client *, const unsigned char *, int, char **);
	int (*find_executable)(debuginfod_client *, const unsigned char *, int, char **);
	void (*set_progressfn)(debuginfod_client *, debuginfod_progressfn_t);
	void (*set_user_data)(debuginfod_client *, void *);
	void *(*get_user_data)(debuginfod_client *);
};

static struct dbgd_api *dbgd_load(void)
{
	/* never unloaded: libcurl keeps global state that would dangle (and read as leaks) */
	void *lib = dlopen("libdebuginfod.so.1", RTLD_LAZY | RTLD_LOCAL | RTLD_NODELETE);
	if (!lib)
		return NULL;
	struct dbgd_api *a = calloc(1, sizeof(*a));
	if (!a) {
		dlclose(lib);
		return NULL;
	}
	a->lib = lib;
	*(void **)&a->begin = dlsym(lib, "debuginfod_begin");
	*(void **)&a->end = dlsym(lib, "debuginfod_end");
	*(void **)&a->find_debuginfo = dlsym(lib, "debuginfod_find_debuginfo");
	*(void **)&a->find_executable = dlsym(lib, "debuginfod_find_executable");
	*(void **)&a->set_progressfn = dlsym(lib, "debuginfod_set_progressfn");
	*(void **)&a->set_user_data = dlsym(lib, "debuginfod_set_user_data");
	*(void **)&a->get_user_data = dlsym(lib, "debuginfod_get_user_data");
	if (!a->begin || !a->end || !a->find_debuginfo || !a->find_executable || !a->set_progressfn ||
	    !a->set_user_data || !a->get_user_data) {
		dlclose(lib);
		free(a);
		return NULL;
	}
	return a;
}

/* One fetch's bounds: a deadline and a size cap, and which of them stopped it. */
struct fetch_deadline {
	struct timespec end;
	uint64_t max_bytes;
	bool timed_out, too_big;
	long got;             /* bytes received when stopped */
};

/* The progress callback's only context is the client's user data (the deadline), read through
 * the library, which is loaded already. libdebuginfod calls it at least once a second with the
 * bytes received (a once the server is chosen) and the size announced (b, -1 when none: a
 * server may send no length, or an endless body): the cap is checked on both, so a hostile or
 * broken server fills at most that much of the cache (the partial file is removed). */
static int fetch_progress(debuginfod_client *c, long a, long b)
{
	void *lib = dlopen("libdebuginfod.so.1", RTLD_LAZY | RTLD_NOLOAD);
	void *(*get)(debuginfod_client *) = NULL;
	if (lib) {
		*(void **)&get = dlsym(lib, "debuginfod_get_user_data");
		dlclose(lib);
	}
	struct fetch_deadline *d = get ? get(c) : NULL;
	if (!d)
		return 0;
	if ((a > 0 && (uint64_t)a > d->max_bytes) || (b > 0 && (uint64_t)b > d->max_bytes)) {
		d->too_big = true;
		d->got = a;
		return 1;
	}
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	/* non-zero stops the transfer */
	if (now.tv_sec > d->end.tv_sec || (now.tv_sec == d->end.tv_sec && now.tv_nsec >= d->end.tv_nsec)) {
		d->timed_out = true;
		d->got = a;
		return 1;
	}
	return 0;
}

/* The session's libdebuginfod and its clients (part SESSION_DEBUGINFOD). */
struct dbgd_state {
	pthread_mutex_t mu;
	bool tried;               /* libdebuginfod loaded, or tried */
	struct dbgd_api *api;
	struct base_vec free;     /* debuginfod_client *: not fetching */
};

static void dbgd_state_free(void *p)
{
	struct dbgd_state *c = p;
	for (size_t i = 0; i < c->free.len; i++)
		c->api->end(((debuginfod_client **)c->free.data)[i]);
	base_vec_free(&c->free);
	if (c->api) {
		dlclose(c->api->lib);
		free(c->api);
	}
	pthread_mutex_destroy(&c->mu);
	free(c);
}

static struct dbgd_state *dbgd_state(struct uw_session *s)
{
	struct dbgd_state *c = session_part(s, SESSION_DEBUGINFOD);
	if (UW_LIKELY(c))
		return c;
	if (!(c = calloc(1, sizeof(*c))))
		return NULL;
	pthread_mutex_init(&c->mu, NULL);
	c->free = BASE_VEC_INIT(debuginfod_client *);
	return session_part_attach(s, SESSION_DEBUGINFOD, c, dbgd_state_free);
}

/* A client not fetching (made when none is free); NULL when libdebuginfod cannot be used. */
static debuginfod_client *client_take(struct uw_session *s, struct dbgd_state *c)
{
	debuginfod_client *cl = NULL;
	pthread_mutex_lock(&c->mu);
	if (!c->tried) {
		c->tried = true;
		c->api = dbgd_load();
		if (!c->api)
			base_log(&s->log, UW_LOG_WARN, "debuginfod: libdebuginfod.so.1 cannot be loaded");
	}
	if (c->free.len)
		cl = ((debuginfod_client **)c->free.data)[--c->free.len];
	const struct dbgd_api *api = c->api;
	pthread_mutex_unlock(&c->mu);
	if (cl || !api)
		return cl;
	cl = api->begin();
	if (!cl)
		base_log(&s->log, UW_LOG_WARN, "debuginfod: client not started");
	else
		api->set_progressfn(cl, fetch_progress);
	return cl;
}

static void client_give(struct dbgd_state *c, debuginfod_client *cl)
{
	pthread_mutex_lock(&c->mu);
	debuginfod_client **slot = base_vec_push(&c->free);
	if (slot)
		*slot = cl;
	pthread_mutex_unlock(&c->mu);
	if (!slot)
		c->api->end(cl);
}

/* Fetches the executable or the debug file of build-id bid (hex). @return the cached file's
 * path (malloc'd) or NULL, having said why. */
char *module_fetch(struct uw_session *s, const char *mpath, const char *bid, bool debuginfo)
{
	struct dbgd_state *c = dbgd_state(s);
	if (!c || s->opts.offline || !getenv("DEBUGINFOD_URLS") || !*getenv("DEBUGINFOD_URLS"))
		return NULL;
	size_t hl = strlen(bid);
	if (hl < 2 || hl % 2)
		return NULL;
	debuginfod_client *cl = client_take(s, c);
	if (!cl)
		return NULL;
	unsigned ms = s->opts.debuginfod_timeout_ms ? s->opts.debuginfod_timeout_ms : 30000;
	struct fetch_deadline d = { .max_bytes = s->opts.max_debuginfod_bytes ? s->opts.max_debuginfod_bytes
									      : SESSION_DEBUGINFOD_MAX_BYTES };
	clock_gettime(CLOCK_MONOTONIC, &d.end);
	d.end.tv_sec += ms / 1000;
	d.end.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (d.end.tv_nsec >= 1000000000L) {
		d.end.tv_sec++;
		d.end.tv_nsec -= 1000000000L;
	}
	const struct dbgd_api *api = c->api;
	api->set_user_data(cl, &d);
	char *path = NULL;
	/* a build-id length of 0: the id is given as a hex string */
	const unsigned char *id = (const unsigned char *)bid;
	int fd = debuginfo ? api->find_debuginfo(cl, id, 0, &path) : api->find_executable(cl, id, 0, &path);
	api->set_user_data(cl, NULL);
	client_give(c, cl);
	if (fd < 0) {
		/* (a fetch this callback stopped comes back as "not found") */
		char why[160];
		if (d.too_big || fd == -EFBIG) {
			__atomic_add_fetch(&s->res.dbgd_capped, 1, __ATOMIC_RELAXED);
			snprintf(why, sizeof(why), "larger than the cap (--max-debuginfod, %" PRIu64 " MiB): not kept",
				 d.max_bytes >> 20);
		} else if (d.timed_out || fd == -ETIME || fd == -ECANCELED) {
			__atomic_add_fetch(&s->res.dbgd_timeout, 1, __ATOMIC_RELAXED);
			snprintf(why, sizeof(why), "timed out after %u.%03u s (--debuginfod-timeout)%s", ms / 1000, ms % 1000,
				 d.got > 0 ? ", what came is not kept" : "");
		} else {
			snprintf(why, sizeof(why), "%s", fd == -ENOENT ? "not on the servers" : strerror(-fd));
		}
		base_log(&s->log, UW_LOG_WARN, "%s (build-id %s): debuginfod: no %s: %s", mpath, bid,
			 debuginfo ? "debug file" : "executable", why);
		free(path);
		return NULL;
	}
	close(fd);
	base_log(&s->log, UW_LOG_INFO, "%s: %s from debuginfod: %s", mpath, debuginfo ? "debug file" : "executable",
		 path);
	return path;
}
