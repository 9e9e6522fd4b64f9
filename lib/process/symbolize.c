/* SPDX-License-Identifier: MIT */
/*
 * Symbolization of module addresses: symbols (with their demangled names), and inline chains
 * and source lines from DWARF, looked up on the calling thread or ahead on a helper thread.
 * Serialized on the session's lock; results cached per (module, address).
 */
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
#include "symbolize/demangle.h"

/* The name a symbol is shown by (demangled unless the session says not), interned once: names
 * handed out live as long as the session, while the symbol table (whose names point into the
 * file) goes when its module is unloaded. Under the lock. */
static const char *shown_name(struct uw_session *s, struct sym *sym)
{
	if (!sym->dname) {
		const char *d = s->opts.no_demangle ? sym->name : sym_demangle(&s->strings, sym->name);
		if (d == sym->name)
			d = session_intern(s, d, strlen(d));
		sym->dname = d;
	}
	return sym->dname ? sym->dname : sym->name;
}

UW_API int uw_symbolize(struct uw_session *s, struct uw_module *m, uint64_t rel_pc, struct uw_symbol *out)
{
	memset(out, 0, sizeof(*out));
	if (!s || !m)
		return 0;
	proc_lock(s);
	struct sym *sym = (struct sym *)proc_module_symbol(s, m, rel_pc);
	int err = 0;
	if (sym) {
		out->name = shown_name(s, sym);
		out->start = sym->start;
		out->size = sym->end - sym->start;
		out->offset = rel_pc - sym->start;
		if (!sym->dname)
			err = -ENOMEM; /* (a name only valid until the lock is let go) */
	}
	proc_unlock(s);
	if (err)
		memset(out, 0, sizeof(*out));
	return err;
}

void proc_symbol_names(struct uw_session *s, struct uw_module *m, uint64_t rel_pc, const char **sys,
                       const char **shown)
{
	*sys = *shown = NULL;
	proc_lock(s);
	struct sym *sym = (struct sym *)proc_module_symbol(s, m, rel_pc);
	if (sym) {
		*shown = shown_name(s, sym);
		*sys = session_intern(s, sym->name, strlen(sym->name));
		if (!*sys || !sym->dname)
			*sys = *shown = NULL;
	}
	proc_unlock(s);
}

/* ---- inline chains */
struct inline_ent {
	unsigned n;
	struct uw_source_frame f[];
};

static const struct inline_ent no_inline;

/* A lookup pending on the helper, in m->inlcache: its job's index, tagged odd (an entry's
 * address is even) */
#define PENDING(i) ((void *)(((uintptr_t)(i) << 1) | 1))
#define IS_PENDING(v) (((uintptr_t)(v)&1) != 0)
#define PENDING_JOB(v) ((size_t)((uintptr_t)(v) >> 1))

/* Opens the module's DWARF for inline chains, once (on the calling thread). */
static bool module_dwi(struct uw_session *s, struct uw_module *m)
{
	if (m->dwi_tried)
		return m->dwi != NULL;
	m->dwi_tried = true;
	/* the debug file first: a module with a debug file has no DWARF of its own */
	if (!proc_module_open(s, m))
		return false;
	proc_module_fetch_debug(s, m);
	int why = 0, why2 = 0;
	if (m->dbg)
		m->dwi = dwi_open(m->dbg, proc_module_altfile(s, m, m->dbg, m->dbg_path), s->dwarf_cache,
				  s->opts.max_dwarf_cache_bytes, &why);
	if (!m->dwi)
		m->dwi = dwi_open(m->elf, proc_module_altfile(s, m, m->elf, m->opened_path), s->dwarf_cache,
				  s->opts.max_dwarf_cache_bytes, &why2);
	if (m->dwi) {
		m->session = s;
		dwi_set_package_finder(m->dwi, proc_module_package, m);
		dwi_set_dwo_opener(m->dwi, proc_module_dwo, m);
	}
	proc_module_said_reads(s, m);
	if (why == -ENOMEM || why2 == -ENOMEM)
		session_resource_fail(s, -ENOMEM, m->path);
	else if (!m->dwi && (why == -UW_ELIMIT || why2 == -UW_ELIMIT))
		base_log(&s->log, UW_LOG_WARN,
			 "%s: a compressed debug section claims more than the cap (--max-inflate, %" PRIu64
			 " MiB) or more than %u times its compressed bytes (no DWARF compresses so well): "
			 "no inline frames or source lines from %s",
			 m->path, (why == -UW_ELIMIT ? m->dbg : m->elf)->max_inflate >> 20, ELFV_MAX_RATIO,
			 why == -UW_ELIMIT ? (m->dbg_path ? m->dbg_path : "its debug file") : "it");
	return m->dwi != NULL;
}

/* The chain at pc from the module's DWARF, names (demangled) and files interned in strings.
 * NULL: out of memory. */
static const struct inline_ent *inline_make(struct uw_session *s, struct uw_module *m, uint64_t pc, bool demangle,
                                            struct base_strings *strings, struct base_arena *arena)
{
	struct dwi *dwi = m ? m->dwi : NULL;
	struct dwi_frame tmp[DWI_MAX_DEPTH];
	bool oom = dwi_out_of_memory(dwi);
	unsigned k = dwi ? dwi_lookup(dwi, strings, pc, tmp, DWI_MAX_DEPTH) : 0;
	if (!oom && dwi_out_of_memory(dwi)) /* said once: no more lookups in it */
		session_resource_fail(s, -ENOMEM, m->path);
	if (!k)
		return &no_inline;
	struct inline_ent *ne = base_arena_alloc(arena, sizeof(*ne) + k * sizeof(ne->f[0]));
	if (!ne) {
		session_resource_fail(s, -ENOMEM, "inline frames");
		return NULL;
	}
	ne->n = k;
	for (unsigned i = 0; i < k; i++) {
		const char *fn = tmp[i].name;
		if (fn && demangle)
			fn = sym_demangle(strings, fn);
		ne->f[i] = (struct uw_source_frame){ .function = fn, .file = tmp[i].file, .line = tmp[i].line };
	}
	return ne;
}

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
	struct inl_worker *w = arg;
	pthread_setname_np(pthread_self(), "uw-inline");
	arena_reserve();
	bool demangle = !w->s->opts.no_demangle;
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (w->taken == w->njobs && !w->stop)
			pthread_cond_wait(&w->work, &w->mu);
		if (w->taken == w->njobs)
			break;
		size_t i = w->taken++;
		struct uw_module *m = w->jobs[i].m;
		uint64_t pc = w->jobs[i].pc;
		pthread_mutex_unlock(&w->mu);
		const struct inline_ent *e = inline_make(w->s, m, pc, demangle, &w->strings, &w->arena);
		pthread_mutex_lock(&w->mu);
		w->jobs[i].res = e;
		w->done++;
		pthread_cond_broadcast(&w->done_cv);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

static void inl_worker_free(struct inl_worker *w)
{
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->work);
	pthread_cond_destroy(&w->done_cv);
	free(w->jobs);
	base_strings_free(&w->strings);
	base_arena_free(&w->arena);
	free(w);
}

static struct inl_worker *inl_worker(struct uw_session *s)
{
	if (sym_state(s)->inlw || sym_state(s)->inlw_failed)
		return sym_state(s)->inlw;
	sym_state(s)->inlw_failed = true;
	if (s->opts.sync_symbols || sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return NULL;
	struct inl_worker *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->s = s;
	base_strings_init(&w->strings);
	base_arena_init(&w->arena, 64 * 1024);
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->work, NULL);
	pthread_cond_init(&w->done_cv, NULL);
	if (pthread_create(&w->th, NULL, inl_main, w)) {
		inl_worker_free(w);
		return NULL;
	}
	sym_state(s)->inlw_failed = false;
	sym_state(s)->inlw = w;
	return w;
}

static void inline_end(struct sym_state *ss)
{
	struct inl_worker *w = ss->inlw;
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_signal(&w->work);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->th, NULL);
	inl_worker_free(w);
	ss->inlw = NULL;
}

static void sym_state_free(void *p)
{
	struct sym_state *ss = p;
	inline_end(ss);
	base_arena_free(&ss->inl_arena);
	free(ss);
}

struct sym_state *sym_state(struct uw_session *s)
{
	struct sym_state *ss = session_part(s, SESSION_SYMBOLS);
	if (UW_LIKELY(ss))
		return ss;
	if (!(ss = calloc(1, sizeof(*ss))))
		return NULL;
	ss->s = s;
	base_arena_init(&ss->inl_arena, 64 * 1024);
	return session_part_attach(s, SESSION_SYMBOLS, ss, sym_state_free);
}

void proc_inline_idle(struct uw_session *s)
{
	struct sym_state *ss = session_part(s, SESSION_SYMBOLS);
	struct inl_worker *w = ss ? ss->inlw : NULL;
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	while (w->done < w->njobs)
		pthread_cond_wait(&w->done_cv, &w->mu);
	pthread_mutex_unlock(&w->mu);
}

size_t proc_inline_asked(struct uw_session *s)
{
	struct sym_state *ss = session_part(s, SESSION_SYMBOLS);
	struct inl_worker *w = ss ? ss->inlw : NULL;
	if (!w)
		return 0;
	pthread_mutex_lock(&w->mu);
	size_t n = w->njobs;
	pthread_mutex_unlock(&w->mu);
	return n;
}

bool proc_inline_done(struct uw_session *s, size_t n)
{
	struct sym_state *ss = session_part(s, SESSION_SYMBOLS);
	struct inl_worker *w = ss ? ss->inlw : NULL;
	if (!w)
		return true;
	pthread_mutex_lock(&w->mu);
	bool done = w->done >= n;
	pthread_mutex_unlock(&w->mu);
	return done;
}

static int inline_ahead(struct uw_session *s, struct uw_module *m, uint64_t rel_pc)
{
	if (base_map_has(&m->inlcache, rel_pc))
		return 0;
	struct inl_worker *w = inl_worker(s);
	if (!w)
		return 0;
	if (!module_dwi(s, m))
		return base_map_put(&m->inlcache, rel_pc, (void *)&no_inline);
	pthread_mutex_lock(&w->mu);
	if (w->njobs == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 1024;
		struct inl_job *nj = realloc(w->jobs, cap * sizeof(*nj));
		if (!nj) {
			pthread_mutex_unlock(&w->mu);
			return -ENOMEM;
		}
		w->jobs = nj;
		w->cap = cap;
	}
	size_t i = w->njobs++;
	w->jobs[i] = (struct inl_job){ m, rel_pc, NULL };
	pthread_cond_signal(&w->work);
	pthread_mutex_unlock(&w->mu);
	return base_map_put(&m->inlcache, rel_pc, PENDING(i));
}

static int inline_chain(struct uw_session *s, struct uw_module *m, uint64_t rel_pc,
                        const struct uw_source_frame **frames, unsigned *n)
{
	const void *v = base_map_get(&m->inlcache, rel_pc);
	const struct inline_ent *e = v;
	if (v && IS_PENDING(v)) {
		struct inl_worker *w = sym_state(s)->inlw;
		size_t i = PENDING_JOB(v);
		pthread_mutex_lock(&w->mu);
		while (w->done <= i)
			pthread_cond_wait(&w->done_cv, &w->mu);
		e = w->jobs[i].res;
		pthread_mutex_unlock(&w->mu);
		if (!e) {
			base_map_del(&m->inlcache, rel_pc); /* asked again, it is looked up here */
			return -ENOMEM;
		}
		if (base_map_put(&m->inlcache, rel_pc, (void *)e))
			return -ENOMEM;
	} else if (!e) {
		proc_inline_idle(s); /* the helper may be reading this module's DWARF */
		e = inline_make(s, module_dwi(s, m) ? m : NULL, rel_pc, !s->opts.no_demangle, &s->strings, &sym_state(s)->inl_arena);
		if (!e || base_map_put(&m->inlcache, rel_pc, (void *)e))
			return -ENOMEM;
	}
	if (e->n) {
		*frames = e->f;
		*n = e->n;
	}
	return 0;
}

/* Symbolization is serialized on the session (its caches are shared; what it finds is kept, so
 * repeated addresses cost a lookup): any thread may call, one at a time gets in. */
UW_API int uw_symbolize_inline_ahead(struct uw_session *s, struct uw_module *m, uint64_t rel_pc)
{
	if (!s || !m)
		return 0;
	if (!sym_state(s))
		return -ENOMEM;
	proc_lock(s);
	int err = inline_ahead(s, m, rel_pc);
	proc_unlock(s);
	return err;
}

UW_API int uw_symbolize_inline(struct uw_session *s, struct uw_module *m, uint64_t rel_pc,
                               const struct uw_source_frame **frames, unsigned *n)
{
	*frames = NULL;
	*n = 0;
	if (!s || !m)
		return 0;
	if (!sym_state(s))
		return -ENOMEM;
	proc_lock(s);
	int err = inline_chain(s, m, rel_pc, frames, n);
	proc_unlock(s);
	return err;
}

