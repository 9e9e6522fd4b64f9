/* SPDX-License-Identifier: MIT */
/*
 * Symbolization of module addresses: symbols (with their demangled names), and inline chains
 * and source lines from DWARF, looked up on the calling thread or ahead on a helper thread.
 * Any thread may call at once: what is made of a module (its symbol table, its DWARF handle) is
 * made once under the module's lock, then read without it; each module's caches of addresses
 * already named have locks of their own, held for one lookup; names are interned in the
 * session's strings. The module is held in use (module_use) meanwhile: it is not unloaded under
 * a lookup.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "symbolize/demangle.h"
#include "symbolize/dwp.h"
#include "symbolize/symbolize.h"

/* ---- a module's state */

static void sym_module_unload(struct module_ext *e)
{
	struct sym_module *sm = (struct sym_module *)e;
	/* no one uses the module (its use lock is held for writing): nothing to lock */
	dwi_close(sm->dwi);
	dwp_close(sm->dwp);
	elfv_close(sm->dwp_elf);
	sm->dwi = NULL;
	sm->dwp = NULL;
	sm->dwp_elf = NULL;
	sm->dwi_done = false;
	symtab_free(&sm->syms);
	memset(&sm->syms, 0, sizeof(sm->syms));
	sm->syms_done = false;
	/* (the chains handed out stay in the arena: they live as long as the session) */
	for (unsigned i = 0; i < SYM_SHARDS; i++) {
		base_map_free(&sm->shard[i].inl);
		base_map_init(&sm->shard[i].inl);
	}
}

static void sym_module_free(struct module_ext *e)
{
	struct sym_module *sm = (struct sym_module *)e;
	sym_module_unload(e);
	for (unsigned i = 0; i < SYM_SHARDS; i++) {
		base_map_free(&sm->shard[i].inl);
		pthread_mutex_destroy(&sm->shard[i].mu);
		pthread_cond_destroy(&sm->shard[i].cv);
	}
	base_arena_free(&sm->inl_arena);
	pthread_mutex_destroy(&sm->arena_mu);
	pthread_mutex_destroy(&sm->syms_mu);
	free(sm);
}

static const struct module_ext_ops sym_module_ops = { sym_module_unload, sym_module_free };

struct sym_module *sym_module(struct uw_session *s, struct uw_module *m)
{
	struct sym_module *sm = (struct sym_module *)module_ext(m);
	if (UW_LIKELY(sm))
		return sm;
	pthread_mutex_lock(&m->mu);
	sm = (struct sym_module *)m->ext;
	if (!sm && (sm = aligned_alloc(_Alignof(struct sym_module), sizeof(*sm)))) {
		memset(sm, 0, sizeof(*sm));
		sm->ext.ops = &sym_module_ops;
		sm->m = m;
		sm->s = s;
		for (unsigned i = 0; i < SYM_SHARDS; i++) {
			dwi_mutex_init(&sm->shard[i].mu);
			pthread_cond_init(&sm->shard[i].cv, NULL);
			base_map_init(&sm->shard[i].inl);
		}
		dwi_mutex_init(&sm->arena_mu);
		pthread_mutex_init(&sm->syms_mu, NULL);
		base_arena_init(&sm->inl_arena, 16 * 1024);
		module_ext_set(m, &sm->ext);
	}
	pthread_mutex_unlock(&m->mu);
	return sm;
}

/* ---- symbols */

/* The module's symbol table, built once under the symbols' own lock (syms_mu): the module's lock
 * only while its files are found, so that another thread opens and reads the module's DWARF
 * while the table is built. @return false, building nothing, when wait is false and another
 * thread is building it. */
static bool build_syms(struct uw_session *s, struct sym_module *sm, bool wait)
{
	struct uw_module *m = sm->m;
	if (wait)
		pthread_mutex_lock(&sm->syms_mu);
	else if (pthread_mutex_trylock(&sm->syms_mu))
		return false;
	if (!sm->syms_done) {
		if (!m->jit && module_open(s, m)) {
			/* a separate debug file has the full .symtab (debuginfod's when none is
			 * here); without one, MiniDebugInfo */
			pthread_mutex_lock(&m->mu);
			module_fetch_debug(s, m);
			if (!m->dbg && !m->mini)
				m->mini = module_open_minidebug(s, m);
			struct elfv *dbg = m->dbg ? m->dbg : m->mini;
			pthread_mutex_unlock(&m->mu);
			int err = symtab_build(&sm->syms, m->elf, dbg, !s->opts.no_demangle);
			if (err == -ENOMEM)
				session_resource_fail(s, err, m->path);
			else if (err)
				base_log(&s->log, UW_LOG_WARN, "%s: symbols not read: %s", m->path, uw_strerror(err));
			pthread_mutex_lock(&m->mu);
			module_said_reads(s, m);
			pthread_mutex_unlock(&m->mu);
		}
		__atomic_store_n(&sm->syms_done, true, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&sm->syms_mu);
	return true;
}

bool sym_symbols_ready(struct uw_session *s, struct sym_module *sm)
{
	return __atomic_load_n(&sm->syms_done, __ATOMIC_ACQUIRE) || build_syms(s, sm, false);
}

/* The shard of the caches holding rel. */
static struct sym_shard *shard_of(struct sym_module *sm, uint64_t rel)
{
	/* (by the hash's top bits: a shard's map places its keys by the low ones, which would
	 * otherwise be alike for all of them, in one sixteenth of its slots) */
	return &sm->shard[base_hash64(rel) >> (64 - SYM_SHARD_BITS)];
}

/* The symbol at rel (NULL: none): a binary search in the table, which stays once built. (A cache
 * of addresses looked up, under a lock per shard, cost more than the search it saved, and two
 * threads naming distinct addresses wrote to the same lines: on the gcc bench recording, 52,000
 * distinct addresses, a lock and a map put each.) */
static struct sym *find_sym(struct uw_session *s, struct sym_module *sm, uint64_t rel)
{
	if (!__atomic_load_n(&sm->syms_done, __ATOMIC_ACQUIRE))
		build_syms(s, sm, true);
	return (struct sym *)symtab_find(&sm->syms, rel);
}

/* The name a symbol is shown by (demangled unless the session says not), interned once: names
 * handed out live as long as the session, while the symbol table (whose names point into the
 * file) goes when its module is unloaded. NULL without memory. (Two threads may both make it:
 * the same interned string.) */
static const char *shown_name(struct uw_session *s, struct sym *sym)
{
	const char *d = __atomic_load_n(&sym->dname, __ATOMIC_ACQUIRE);
	if (d)
		return d;
	d = s->opts.no_demangle ? sym->name : sym_demangle(&s->strings, sym->name);
	if (d == sym->name)
		d = session_intern(s, d, strlen(d));
	if (d)
		__atomic_store_n(&sym->dname, d, __ATOMIC_RELEASE);
	return d;
}

/* Why a frame of a module has no name (the module was opened). */
static enum uw_sym_reason why_unnamed(const struct uw_module *m, const struct sym_module *sm)
{
	if (m->special && !m->jit)
		return UW_SYM_ANONYMOUS;
	switch (uw_module_state(m)) {
	case UW_MODULE_MISSING: return m->special ? UW_SYM_ANONYMOUS : UW_SYM_MODULE_MISSING;
	case UW_MODULE_MISMATCH: return UW_SYM_BUILD_ID_MISMATCH;
	case UW_MODULE_BAD: return UW_SYM_MODULE_BAD;
	default: return sm->syms.n ? UW_SYM_NO_SYMBOL : UW_SYM_NO_SYMBOLS;
	}
}

int sym_lookup(struct uw_session *s, struct uw_module *m, uint64_t rel_pc, struct uw_symbol *out,
               enum uw_sym_reason *why)
{
	module_use(m);
	int err = sym_lookup_used(s, m, rel_pc, out, why);
	module_unuse(m);
	return err;
}

int sym_lookup_used(struct uw_session *s, struct uw_module *m, uint64_t rel_pc, struct uw_symbol *out,
                    enum uw_sym_reason *why)
{
	memset(out, 0, sizeof(*out));
	struct sym_module *sm = sym_module(s, m);
	int err = sm ? 0 : -ENOMEM;
	struct sym *sym = sm ? find_sym(s, sm, rel_pc) : NULL;
	if (sym) {
		out->name = shown_name(s, sym);
		out->start = sym->start;
		out->size = sym->end - sym->start;
		out->offset = rel_pc - sym->start;
		if (!out->name) {
			err = -ENOMEM;
			memset(out, 0, sizeof(*out));
		}
	}
	if (!out->name && why)
		*why = sm ? why_unnamed(m, sm) : UW_SYM_NO_SYMBOLS;
	return err;
}

UW_API int uw_symbolize(struct uw_session *s, struct uw_module *m, uint64_t rel_pc, struct uw_symbol *out)
{
	if (!s || !m) {
		memset(out, 0, sizeof(*out));
		return 0;
	}
	return sym_lookup(s, m, rel_pc, out, NULL);
}

void sym_names(struct uw_session *s, struct uw_module *m, uint64_t rel_pc, const char **sys, const char **shown)
{
	*sys = *shown = NULL;
	module_use(m);
	struct sym_module *sm = sym_module(s, m);
	struct sym *sym = sm ? find_sym(s, sm, rel_pc) : NULL;
	if (sym) {
		*shown = shown_name(s, sym);
		*sys = session_intern(s, sym->name, strlen(sym->name));
		if (!*sys || !*shown)
			*sys = *shown = NULL;
	}
	module_unuse(m);
}

const char *sym_source_file(struct uw_session *s, struct uw_module *m, uint64_t rel_pc)
{
	const char *file = NULL;
	module_use(m);
	struct sym_module *sm = sym_module(s, m);
	struct sym *sym = sm && !m->jit ? find_sym(s, sm, rel_pc) : NULL;
	if (sym) {
		pthread_mutex_lock(&m->mu);
		struct elfv *elf = m->elf, *dbg = m->dbg ? m->dbg : m->mini;
		pthread_mutex_unlock(&m->mu);
		const char *f = symtab_file_of(elf, dbg, sym->start, sym->name);
		if (f)
			file = session_intern(s, f, strlen(f));
	}
	module_unuse(m);
	return file;
}

/* ---- inline chains */

struct sym_inline {
	unsigned n;
	struct uw_source_frame f[];
};

static const struct sym_inline no_inline;

/* A lookup pending on the helper, in a shard's inl */
static const char pending;
#define PENDING ((void *)&pending)

/* The module's split DWARF package (dwi's finder, called once, under the handle's lock): the first of
 * the places module_package_path names that holds one. */
static struct dwp *find_package(void *ctx)
{
	struct sym_module *sm = ctx;
	struct uw_session *s = sm->s;
	struct uw_module *m = sm->m;
	char p[4096];
	for (unsigned i = 0; module_package_path(s, m, &i, p, sizeof(p));) {
		struct elfv *v = module_open_named(s, p, NULL);
		if (!v)
			continue;
		struct dwp *d = dwp_open(v);
		if (!d) {
			base_log(&s->log, UW_LOG_WARN, "%s: %s is not a DWARF package (no readable .debug_cu_index)", m->path, p);
			elfv_close(v);
			continue;
		}
		sm->dwp_elf = v;
		sm->dwp = d;
		session_file_shrunk(s, v, m->path); /* (what it holds is read now) */
		base_log(&s->log, UW_LOG_INFO, "%s: DWARF package %s", m->path, p);
		return d;
	}
	base_log(&s->log, UW_LOG_WARN,
		 "%s: split DWARF without its .dwo files and no package (%s.dwp): no inline frames or call sites from it",
		 m->path, m->name);
	return NULL;
}

/* A split unit's .dwo (dwi's opener). */
static struct elfv *open_dwo(void *ctx, const char *name, const char *comp_dir)
{
	struct sym_module *sm = ctx;
	return module_dwo_open(sm->s, sm->m, name, comp_dir);
}

/* Opens the module's DWARF for inline chains, once: under the module's lock (it reads the
 * module's files). @return whether there is one. */
static bool open_dwarf(struct uw_session *s, struct sym_module *sm)
{
	if (__atomic_load_n(&sm->dwi_done, __ATOMIC_ACQUIRE))
		return sm->dwi != NULL;
	struct uw_module *m = sm->m;
	bool usable = module_open(s, m);
	const char *cache = usable ? session_cache_dir(s) : NULL; /* (checked once: outside the lock) */
	pthread_mutex_lock(&m->mu);
	if (!sm->dwi_done && usable) {
		/* the debug file first: a module with a debug file has no DWARF of its own */
		module_fetch_debug(s, m);
		int why = 0, why2 = 0;
		if (m->dbg)
			sm->dwi = dwi_open(m->dbg, module_altfile(s, m, m->dbg, m->dbg_path), cache,
					   s->opts.max_dwarf_cache_bytes, &why);
		if (!sm->dwi)
			sm->dwi = dwi_open(m->elf, module_altfile(s, m, m->elf, m->opened_path), cache,
					   s->opts.max_dwarf_cache_bytes, &why2);
		if (sm->dwi) {
			dwi_set_package_finder(sm->dwi, find_package, sm);
			dwi_set_dwo_opener(sm->dwi, open_dwo, sm);
		}
		module_said_reads(s, m);
		if (why == -ENOMEM || why2 == -ENOMEM)
			session_resource_fail(s, -ENOMEM, m->path);
		else if (!sm->dwi && (why == -UW_ELIMIT || why2 == -UW_ELIMIT))
			base_log(&s->log, UW_LOG_WARN,
				 "%s: a compressed debug section claims more than the cap (--max-inflate, %" PRIu64
				 " MiB) or more than %u times its compressed bytes (no DWARF compresses so well), "
				 "or its DWARF sections more than 4 caps: no inline frames or source lines from %s",
				 m->path, (why == -UW_ELIMIT ? m->dbg : m->elf)->max_inflate >> 20, ELFV_MAX_RATIO,
				 why == -UW_ELIMIT ? (m->dbg_path ? m->dbg_path : "its debug file") : "it");
	}
	__atomic_store_n(&sm->dwi_done, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&m->mu);
	return sm->dwi != NULL;
}

/* The chain at pc from the module's DWARF, names demangled, in the module's arena. NULL: out of
 * memory. */
static const struct sym_inline *inline_make(struct uw_session *s, struct sym_module *sm, uint64_t pc, bool *busy)
{
	struct dwi_frame tmp[DWI_MAX_DEPTH];
	unsigned k = 0;
	/* (a caller that does not wait: not while another thread opens the module's DWARF) */
	if (busy && !__atomic_load_n(&sm->dwi_done, __ATOMIC_ACQUIRE)) {
		if (pthread_mutex_trylock(&sm->m->mu)) {
			*busy = true;
			return NULL;
		}
		pthread_mutex_unlock(&sm->m->mu);
	}
	if (open_dwarf(s, sm)) {
		/* (lookups in one handle run at once: see dwarf_inline.c) */
		bool oom = dwi_out_of_memory(sm->dwi);
		k = dwi_lookup(sm->dwi, &s->strings, pc, tmp, DWI_MAX_DEPTH, busy);
		if (busy && *busy)
			return NULL;
		if (!oom && dwi_out_of_memory(sm->dwi)) /* said once: no more lookups in it */
			session_resource_fail(s, -ENOMEM, sm->m->path);
	}
	if (!k)
		return &no_inline;
	for (unsigned i = 0; i < k; i++)
		if (tmp[i].name && !s->opts.no_demangle)
			tmp[i].name = sym_demangle(&s->strings, tmp[i].name);
	pthread_mutex_lock(&sm->arena_mu);
	struct sym_inline *ne = base_arena_alloc(&sm->inl_arena, sizeof(*ne) + k * sizeof(ne->f[0]));
	pthread_mutex_unlock(&sm->arena_mu);
	if (!ne) {
		session_resource_fail(s, -ENOMEM, "inline frames");
		return NULL;
	}
	ne->n = k;
	for (unsigned i = 0; i < k; i++)
		ne->f[i] = (struct uw_source_frame){ .function = tmp[i].name, .file = tmp[i].file, .line = tmp[i].line };
	return ne;
}

/* The chain made here kept for rel (one another thread made first wins). NULL: out of memory
 * (the address is then not cached: looked up again when asked again). */
static const struct sym_inline *inline_keep(struct sym_module *sm, uint64_t rel, const struct sym_inline *e)
{
	struct sym_shard *sh = shard_of(sm, rel);
	pthread_mutex_lock(&sh->mu);
	const struct sym_inline *cur = base_map_get(&sh->inl, rel);
	if (cur && cur != PENDING) {
		e = cur;
	} else if (!e || base_map_put(&sh->inl, rel, (void *)e)) {
		base_map_del(&sh->inl, rel);
		e = NULL;
	}
	pthread_cond_broadcast(&sh->cv);
	pthread_mutex_unlock(&sh->mu);
	return e;
}

/* ---- the helper thread: inline chains looked up ahead of their use (uw_symbolize_inline_ahead).
 * It looks them up as any thread does (the module in use meanwhile) and leaves them in the
 * module's cache; a thread that asks for one still pending waits for it. */
struct inl_job {
	struct uw_module *m;
	uint64_t pc;
};

struct sym_state {
	struct uw_session *s;
	pthread_mutex_t mu;       /* the queue, the counters, starting the helper */
	pthread_cond_t work;
	bool started, failed, stop;
	pthread_t th;
	struct inl_job *jobs;     /* [taken, njobs) to do */
	size_t njobs, cap, taken;
	size_t asked, done;       /* since the session began */
};

/* glibc gives a thread a malloc arena of its own and grows it a few pages at a time, with an
 * mprotect each: the helper made 928 of them on the CPython bench recording, 12 ms of CPU of
 * 80. Allocating 32 MiB in blocks under the mmap threshold and freeing them leaves the arena
 * writable to that size (freed pages are given back with MADV_DONTNEED; the protection stays),
 * for 272 mprotects once. Elsewhere it costs the same few hundred microseconds. */
static void arena_reserve(void)
{
	enum { BLOCK = 120 * 1024, N = 272 };
	void *blk[N];
	for (unsigned i = 0; i < N; i++)
		blk[i] = malloc(BLOCK);
	for (unsigned i = 0; i < N; i++)
		free(blk[i]);
}

static void *inl_main(void *arg)
{
	struct sym_state *w = arg;
	pthread_setname_np(pthread_self(), "uw-inline");
	arena_reserve();
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (w->taken == w->njobs && !w->stop)
			pthread_cond_wait(&w->work, &w->mu);
		if (w->taken == w->njobs)
			break;
		struct inl_job j = w->jobs[w->taken++];
		if (w->taken == w->njobs)
			w->taken = w->njobs = 0;
		pthread_mutex_unlock(&w->mu);
		module_use(j.m);
		struct sym_module *sm = sym_module(w->s, j.m);
		if (sm)
			inline_keep(sm, j.pc, inline_make(w->s, sm, j.pc, NULL));
		module_unuse(j.m);
		pthread_mutex_lock(&w->mu);
		w->done++;
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

static void sym_state_free(void *p)
{
	struct sym_state *w = p;
	if (w->started) {
		pthread_mutex_lock(&w->mu);
		w->stop = true;
		pthread_cond_signal(&w->work);
		pthread_mutex_unlock(&w->mu);
		pthread_join(w->th, NULL);
	}
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->work);
	free(w->jobs);
	free(w);
}

/* The session's helper, started on first use; NULL when there is none (sync_symbols, one CPU,
 * or it could not be started: lookups stay on the calling thread). */
static struct sym_state *helper(struct uw_session *s)
{
	struct sym_state *w = session_part(s, SESSION_SYMBOLS);
	if (!w) {
		if (!(w = calloc(1, sizeof(*w))))
			return NULL;
		w->s = s;
		pthread_mutex_init(&w->mu, NULL);
		pthread_cond_init(&w->work, NULL);
		w = session_part_attach(s, SESSION_SYMBOLS, w, sym_state_free);
	}
	if (__atomic_load_n(&w->started, __ATOMIC_ACQUIRE))
		return w;
	pthread_mutex_lock(&w->mu);
	if (!w->started && !w->failed) {
		w->failed = s->opts.sync_symbols || sysconf(_SC_NPROCESSORS_ONLN) < 2 ||
			    pthread_create(&w->th, NULL, inl_main, w);
		__atomic_store_n(&w->started, !w->failed, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&w->mu);
	return w->started ? w : NULL;
}

size_t sym_inline_asked(struct uw_session *s)
{
	struct sym_state *w = session_part(s, SESSION_SYMBOLS);
	if (!w)
		return 0;
	pthread_mutex_lock(&w->mu);
	size_t n = w->asked;
	pthread_mutex_unlock(&w->mu);
	return n;
}

bool sym_inline_done(struct uw_session *s, size_t n)
{
	struct sym_state *w = session_part(s, SESSION_SYMBOLS);
	if (!w)
		return true;
	pthread_mutex_lock(&w->mu);
	bool done = w->done >= n;
	pthread_mutex_unlock(&w->mu);
	return done;
}

static int inline_ahead(struct uw_session *s, struct sym_state *w, struct sym_module *sm, uint64_t rel_pc)
{
	/* (opened here, as the lookups the calling thread makes itself open it; once opened, a
	 * flag read) */
	bool dwarf = open_dwarf(s, sm);
	struct sym_shard *sh = shard_of(sm, rel_pc);
	pthread_mutex_lock(&sh->mu);
	int err = base_map_has(&sh->inl, rel_pc) ? 1 : base_map_put(&sh->inl, rel_pc, dwarf ? PENDING : (void *)&no_inline);
	pthread_mutex_unlock(&sh->mu);
	if (err || !dwarf)
		return err < 0 ? err : 0;
	pthread_mutex_lock(&w->mu);
	if (w->njobs == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 1024;
		struct inl_job *nj = realloc(w->jobs, cap * sizeof(*nj));
		if (!nj) {
			pthread_mutex_unlock(&w->mu);
			inline_keep(sm, rel_pc, NULL); /* (not pending: looked up when asked) */
			return -ENOMEM;
		}
		w->jobs = nj;
		w->cap = cap;
	}
	w->jobs[w->njobs++] = (struct inl_job){ sm->m, rel_pc };
	w->asked++;
	pthread_cond_signal(&w->work);
	pthread_mutex_unlock(&w->mu);
	return 0;
}

UW_API int uw_symbolize_inline_ahead(struct uw_session *s, struct uw_module *m, uint64_t rel_pc)
{
	if (!s || !m)
		return 0;
	struct sym_state *w = helper(s);
	if (!w)
		return 0;
	module_use(m);
	struct sym_module *sm = sym_module(s, m);
	int err = sm ? inline_ahead(s, w, sm, rel_pc) : -ENOMEM;
	module_unuse(m);
	return err;
}

UW_API int uw_symbolize_inline(struct uw_session *s, struct uw_module *m, uint64_t rel_pc,
                               const struct uw_source_frame **frames, unsigned *n)
{
	*frames = NULL;
	*n = 0;
	if (!s || !m)
		return 0;
	module_use(m);
	int err = sym_inline_used(s, m, rel_pc, frames, n);
	module_unuse(m);
	return err;
}

static int inline_used(struct uw_session *s, struct uw_module *m, uint64_t rel_pc, const struct uw_source_frame **frames,
                       unsigned *n, bool *busy)
{
	*frames = NULL;
	*n = 0;
	struct sym_module *sm = sym_module(s, m);
	const struct sym_inline *e = NULL;
	if (sm) {
		/* asked ahead: the helper's, when it is done */
		struct sym_shard *sh = shard_of(sm, rel_pc);
		pthread_mutex_lock(&sh->mu);
		while ((e = base_map_get(&sh->inl, rel_pc)) == PENDING && !busy)
			pthread_cond_wait(&sh->cv, &sh->mu);
		pthread_mutex_unlock(&sh->mu);
		if (e == PENDING) {
			*busy = true;
			return -EAGAIN;
		}
		if (!e) {
			const struct sym_inline *made = inline_make(s, sm, rel_pc, busy);
			if (busy && *busy)
				return -EAGAIN; /* (nothing kept: asked again later) */
			e = inline_keep(sm, rel_pc, made);
		}
	}
	if (e && e->n) {
		*frames = e->f;
		*n = e->n;
	}
	return e ? 0 : -ENOMEM;
}

int sym_inline_used(struct uw_session *s, struct uw_module *m, uint64_t rel_pc, const struct uw_source_frame **frames,
                    unsigned *n)
{
	return inline_used(s, m, rel_pc, frames, n, NULL);
}

int sym_inline_try(struct uw_session *s, struct uw_module *m, uint64_t rel_pc, const struct uw_source_frame **frames,
                   unsigned *n)
{
	bool busy = false;
	return inline_used(s, m, rel_pc, frames, n, &busy);
}
