/* SPDX-License-Identifier: MIT */
/*
 * The module cache: one struct uw_module per object file, keyed by build-id (else path, device
 * and inode), shared by every process; its references, and in a live session the idle list and
 * the unloading of modules no mapping refers to. Handles live as long as the session.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "module/files.h"
#include "module/module.h"

/* ---- the cache on the session */

static void module_free(struct uw_module *m)
{
	struct module_ext *e = m->ext;
	if (e)
		e->ops->free(e);
	unw_tables_free(&m->tabs);
	elfv_close(m->dbg);
	elfv_close(m->alt);
	elfv_close(m->mini);
	elfv_close(m->elf);
	pthread_rwlock_destroy(&m->use);
	pthread_mutex_destroy(&m->mu);
	free(m);
}

static void module_cache_free(void *p)
{
	struct module_cache *c = p;
	size_t it = 0;
	void *val;
	while (base_map_next(&c->modules, &it, NULL, &val)) {
		for (struct uw_module *m = val, *next; m; m = next) {
			next = m->next_same_key;
			module_free(m);
		}
	}
	base_map_free(&c->modules);
	base_vec_free(&c->idle_mods);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

struct module_cache *module_cache(struct uw_session *s)
{
	struct module_cache *c = session_part(s, SESSION_MODULES);
	if (UW_LIKELY(c))
		return c;
	if (!(c = calloc(1, sizeof(*c))))
		return NULL;
	c->s = s;
	base_map_init(&c->modules);
	c->idle_mods = BASE_VEC_INIT(struct uw_module *);
	pthread_mutex_init(&c->mu, NULL);
	return session_part_attach(s, SESSION_MODULES, c, module_cache_free);
}

void module_live(struct uw_session *s)
{
	struct module_cache *c = module_cache(s);
	if (c)
		__atomic_store_n(&c->evict_idle, true, __ATOMIC_RELEASE);
}

/* ---- modules by identity */

static bool is_special_path(const char *p, size_t n)
{
	if (n == 0 || p[0] == '[')
		return true; /* [vdso], [heap], [stack], [anon:...], [kernel.kallsyms] */
	static const char *const prefixes[] = { "//anon", "/dev/zero", "anon_inode:", "/memfd:",
						"/SYSV", "/dev/shm/", "/anon_hugepage" };
	for (size_t i = 0; i < UW_ARRAY_SIZE(prefixes); i++) {
		size_t l = strlen(prefixes[i]);
		if (n >= l && memcmp(p, prefixes[i], l) == 0)
			return true;
	}
	return p[0] != '/';
}

/* Modules by identity: a build-id, else path, device and inode. The map holds chains of the
 * modules whose keys hash alike; a module is the one asked for only when its whole identity is. */
static bool same_module(const struct uw_module *m, const char *path, size_t pathlen, const char *hex, uint32_t maj,
                        uint32_t min, uint64_t ino, uint64_t gen)
{
	/* (a module known by path keeps that identity when its file tells its build-id later) */
	if (!m->key_by_path)
		return hex[0] && strcmp(m->build_id, hex) == 0;
	/* (a generation only where both are known: /proc/PID/maps, which perf and the tracker
	 * read for mappings made before the recording, gives none) */
	uint64_t mg = __atomic_load_n(&m->ino_gen, __ATOMIC_RELAXED);
	return !hex[0] && strlen(m->path) == pathlen && memcmp(m->path, path, pathlen) == 0 && m->maj == maj &&
	       m->min == min && m->ino == ino && (!mg || !gen || mg == gen);
}

struct uw_module *module_get(struct uw_session *s, const char *path, size_t pathlen, const char *hex, uint32_t maj,
                             uint32_t min, uint64_t ino)
{
	return module_get_gen(s, path, pathlen, hex, maj, min, ino, 0);
}

struct uw_module *module_get_gen(struct uw_session *s, const char *path, size_t pathlen, const char *hex,
                                 uint32_t maj, uint32_t min, uint64_t ino, uint64_t gen)
{
	struct module_cache *c = module_cache(s);
	if (strlen(hex) > 2 * ELFV_MAX_BUILD_ID || !c)
		return NULL;
	const char *ipath = session_intern(s, path, pathlen);
	if (!ipath)
		return NULL;
	uint64_t key;
	if (hex[0])
		key = base_hash_bytes(hex, strlen(hex)) ^ 0x1; /* build-id identity */
	else
		key = base_hash_bytes(ipath, pathlen) ^ base_hash64(((uint64_t)maj << 32 | min) ^ base_hash64(ino));
	pthread_mutex_lock(&c->mu);
	struct uw_module *head = base_map_get(&c->modules, key), *m;
	for (m = head; m; m = m->next_same_key)
		if (same_module(m, ipath, pathlen, hex, maj, min, ino, gen))
			break;
	if (m && gen && m->key_by_path) {
		/* the first generation given is the file's (read when it is opened: open.c) */
		uint64_t none = 0;
		__atomic_compare_exchange_n(&m->ino_gen, &none, gen, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	}
	if (m || !(m = calloc(1, sizeof(*m)))) {
		pthread_mutex_unlock(&c->mu);
		return m;
	}
	m->path = ipath;
	const char *slash = strrchr(ipath, '/');
	m->name = slash && slash[1] ? slash + 1 : ipath;
	snprintf(m->build_id, sizeof(m->build_id), "%s", hex);
	m->key = key;
	m->key_by_path = !hex[0];
	m->maj = maj;
	m->min = min;
	m->ino = ino;
	m->ino_gen = hex[0] ? 0 : gen;
	m->special = is_special_path(ipath, pathlen);
	m->id = c->nmodules;
	pthread_mutex_init(&m->mu, NULL);
	pthread_rwlock_init(&m->use, NULL);
	m->next_same_key = head;
	if (base_map_put(&c->modules, key, m)) {
		pthread_mutex_unlock(&c->mu);
		pthread_rwlock_destroy(&m->use);
		pthread_mutex_destroy(&m->mu);
		free(m);
		return NULL;
	}
	c->nmodules++;
	pthread_mutex_unlock(&c->mu);
	return m;
}

void module_ext_set(struct uw_module *m, struct module_ext *e)
{
	if (!m->ext)
		__atomic_store_n(&m->ext, e, __ATOMIC_RELEASE);
}

/* ---- references, the idle list and unloading */

/* What a module holds beyond its identity, let go while no mapping refers to it: its files,
 * unwind tables, and what the symbolizer made of them (its ext's unload). The handle stays (path,
 * name, build-id, state): a profiler keeps frames of processes long gone and names them later;
 * their files are opened again then (by path, checked against the build-id or device and inode
 * the first open saw). No one reads them meanwhile: unloading holds m->use for writing (no
 * module_use holder: symbolizers, the inline helper) and m->mu (no opening), and the cache's
 * lock while it finds no mapping referring to it and clears what says it is loaded (a tracker
 * that maps it again then opens it again, waiting on m->mu). @return false when it is in use
 * (then it stays loaded). */
static bool module_unload(struct module_cache *c, struct uw_module *m)
{
	if (pthread_rwlock_trywrlock(&m->use))
		return false;
	pthread_mutex_lock(&m->mu);
	pthread_mutex_lock(&c->mu);
	bool unload = !__atomic_load_n(&m->refs, __ATOMIC_RELAXED) && !m->idle;
	if (unload) {
		__atomic_store_n(&m->cfi_done, false, __ATOMIC_RELAXED);
		/* a file that could not be opened is not looked for again (its state stays) */
		if (__atomic_load_n(&m->state, __ATOMIC_RELAXED) == UW_MODULE_OK)
			__atomic_store_n(&m->opened, false, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&c->mu);
	if (unload) {
		struct module_ext *e = m->ext;
		if (e)
			e->ops->unload(e);
		unw_tables_free(&m->tabs);
		elfv_close(m->dbg);
		elfv_close(m->alt);
		elfv_close(m->mini);
		elfv_close(m->elf);
		m->dbg = m->alt = m->mini = m->elf = NULL;
		m->dbg_path = NULL;
		m->fetch_tried = false;
		m->live_pid = 0; /* the process that mapped it maps it no more */
	}
	pthread_mutex_unlock(&m->mu);
	pthread_rwlock_unlock(&m->use);
	return true;
}

/* Puts m on the idle list and takes the oldest off it beyond MODULE_IDLE_MAX (into victims,
 * cap of them): under the cache's lock. @return how many. */
static size_t idle_push(struct module_cache *c, struct uw_module *m, struct uw_module **victims, size_t cap)
{
	if (m->special || m->jit || m->idle)
		return 0;
	struct uw_module **slot = base_vec_push(&c->idle_mods);
	if (!slot)
		return 0; /* stays loaded */
	*slot = m;
	m->idle = true;
	size_t n = 0;
	while (c->idle_mods.len > MODULE_IDLE_MAX && n < cap) {
		struct uw_module *old = ((struct uw_module **)c->idle_mods.data)[0];
		memmove(c->idle_mods.data, (struct uw_module **)c->idle_mods.data + 1,
			(c->idle_mods.len - 1) * sizeof(old));
		c->idle_mods.len--;
		old->idle = false;
		victims[n++] = old;
	}
	return n;
}

/* Unloads what idle_push took off the list, without the cache's lock (unloading takes the
 * modules' locks first). One in use stays loaded and goes back on the list, to be tried again. */
static void unload_victims(struct module_cache *c, struct uw_module **victims, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (module_unload(c, victims[i]))
			continue;
		pthread_mutex_lock(&c->mu);
		struct uw_module **slot = !victims[i]->idle && !victims[i]->refs ? base_vec_push(&c->idle_mods) : NULL;
		if (slot) {
			*slot = victims[i];
			victims[i]->idle = true;
		}
		pthread_mutex_unlock(&c->mu);
	}
}

void module_idle(struct uw_session *s, struct uw_module *m)
{
	struct module_cache *c = module_cache(s);
	struct uw_module *victims[4];
	pthread_mutex_lock(&c->mu);
	size_t n = !__atomic_load_n(&m->refs, __ATOMIC_RELAXED) ? idle_push(c, m, victims, UW_ARRAY_SIZE(victims)) : 0;
	pthread_mutex_unlock(&c->mu);
	unload_victims(c, victims, n);
}

static void idle_remove(struct module_cache *c, struct uw_module *m)
{
	struct uw_module **v = c->idle_mods.data;
	for (size_t i = 0; i < c->idle_mods.len; i++) {
		if (v[i] == m) {
			memmove(v + i, v + i + 1, (c->idle_mods.len - i - 1) * sizeof(*v));
			c->idle_mods.len--;
			break;
		}
	}
	m->idle = false;
}

/* References count mappings; only a live session (evict_idle) acts when they reach 0, under the
 * cache's lock. Otherwise they are counted atomically: every FORK copies its parent's mappings,
 * and a recording of many short processes would take the lock for each. */
void module_ref(struct uw_session *s, struct uw_module *m)
{
	struct module_cache *c = module_cache(s);
	if (!__atomic_load_n(&c->evict_idle, __ATOMIC_ACQUIRE)) {
		__atomic_fetch_add(&m->refs, 1, __ATOMIC_RELAXED);
		return;
	}
	pthread_mutex_lock(&c->mu);
	if (__atomic_fetch_add(&m->refs, 1, __ATOMIC_RELAXED) == 0 && m->idle)
		idle_remove(c, m);
	pthread_mutex_unlock(&c->mu);
}

void module_unref(struct uw_session *s, struct uw_module *m)
{
	struct module_cache *c = module_cache(s);
	if (!__atomic_load_n(&c->evict_idle, __ATOMIC_ACQUIRE)) {
		uint32_t r = __atomic_load_n(&m->refs, __ATOMIC_RELAXED);
		while (r && !__atomic_compare_exchange_n(&m->refs, &r, r - 1, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			;
		return;
	}
	struct uw_module *victims[4];
	size_t n = 0;
	pthread_mutex_lock(&c->mu);
	uint32_t r = __atomic_load_n(&m->refs, __ATOMIC_RELAXED);
	if (r && __atomic_sub_fetch(&m->refs, 1, __ATOMIC_RELAXED) == 0)
		n = idle_push(c, m, victims, UW_ARRAY_SIZE(victims));
	pthread_mutex_unlock(&c->mu);
	unload_victims(c, victims, n);
}

/* ---- the public getters */

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
	struct module_cache *c = s ? module_cache(s) : NULL;
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	while (base_map_next(&c->modules, &it, NULL, &val))
		for (struct uw_module *m = val; m; m = m->next_same_key)
			if (fn(ctx, m))
				goto out;
out:
	pthread_mutex_unlock(&c->mu);
}
