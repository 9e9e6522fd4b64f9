/* SPDX-License-Identifier: MIT */
/*
 * Many frames symbolized in one call, in the spirit of blazesym's blaze_symbolize_*: one result
 * block, and for every frame that cannot be named the reason why (no module, the file missing
 * or of another build, no symbols, no debug information, ...). Distinct (module, address)
 * pairs are looked up once per call; the session caches them across calls.
 */
#include <errno.h>
#include <stdlib.h>

#include "symbolize/symbolize.h"

UW_API const char *uw_sym_reason_str(enum uw_sym_reason r)
{
	static const char *const names[UW_SYM__COUNT] = {
		[UW_SYM_OK] = "ok",
		[UW_SYM_NO_MODULE] = "no module",
		[UW_SYM_ANONYMOUS] = "anonymous memory",
		[UW_SYM_MODULE_MISSING] = "module missing",
		[UW_SYM_BUILD_ID_MISMATCH] = "build-id mismatch",
		[UW_SYM_MODULE_BAD] = "module not usable",
		[UW_SYM_NO_SYMBOLS] = "no symbols",
		[UW_SYM_NO_SYMBOL] = "no symbol",
		[UW_SYM_NO_DEBUG_INFO] = "no debug info",
	};
	return (unsigned)r < UW_SYM__COUNT ? names[r] : "unknown";
}

/* The name of frame o (its module and rel_pc set). @return false when it has none (its reason
 * set, its chain dropped: an unnamed frame shows none). */
static bool name_one(struct uw_session *s, struct uw_symbolized *o, uint64_t call_pc)
{
	struct uw_symbol sym;
	sym_lookup_used(s, o->module, o->rel_pc, &sym, &o->reason);
	if (!sym.name) {
		o->inlined = NULL; /* (looked up ahead: an unnamed frame shows none) */
		o->nr_inlined = 0;
		return false;
	}
	o->name = sym.name;
	o->sym_start = sym.start;
	o->sym_size = sym.size;
	o->offset = call_pc - sym.start;
	o->reason = UW_SYM_OK;
	return true;
}

/* Frame o's inline chain. wait false: not when the lookup would wait for what another thread
 * makes once (then false, nothing set: asked again later). */
static bool chain_one(struct uw_session *s, struct uw_symbolized *o, bool wait)
{
	const struct uw_source_frame *fr;
	unsigned n;
	int err = wait ? sym_inline_used(s, o->module, o->rel_pc, &fr, &n) : sym_inline_try(s, o->module, o->rel_pc, &fr, &n);
	if (err == -EAGAIN)
		return false;
	if (err == 0 && n) {
		o->inlined = fr;
		o->nr_inlined = n;
	}
	return true;
}

/* A named frame's source line, from its chain. */
static void finish_one(struct uw_symbolized *o)
{
	if (o->nr_inlined) {
		o->file = o->inlined[0].file;
		o->line = o->inlined[0].line;
	}
	if (!o->file || !o->line)
		o->reason = UW_SYM_NO_DEBUG_INFO;
}

/* Holds module_use over a run of frames of one module (taking it for each frame made two threads
 * naming one module's addresses bounce its lock between them). */
static void use(struct uw_module **used, struct uw_module *m)
{
	if (m == *used)
		return;
	if (*used)
		module_unuse(*used);
	if ((*used = m))
		module_use(m);
}

UW_API int uw_symbolize_frames(struct uw_session *s, const struct uw_frame *frames, size_t n,
                               const struct uw_symbolize_opts *opts, struct uw_symbols **out)
{
	struct uw_symbolize_opts o;
	int oe = BASE_OPTS_COPY(&o, uw_symbolize_opts, lines, opts);
	if (oe)
		return oe;
	if (!s || !out || (n && !frames) || n > SIZE_MAX / 2 / sizeof(struct uw_symbolized))
		return -EINVAL;
	*out = NULL;
	/* one block: the header, then the entries */
	struct uw_symbols *r = calloc(1, sizeof(*r) + n * sizeof(struct uw_symbolized));
	if (!r)
		return -ENOMEM;
	r->count = n;
	r->syms = (struct uw_symbolized *)(r + 1);
	/* the same address in many frames (a batch of stacks shares its outer frames): once */
	struct base_map seen;
	base_map_init(&seen);
	base_map_reserve(&seen, n); /* (grown at once, not by doubling as frames come: no memory,
	                             * it grows as it goes) */
	/* Frames whose work would wait for another thread put off to the end of the batch, the other
	 * frames named meanwhile (two threads starting on one large module otherwise ran one at a
	 * time): their name, when another thread builds their module's symbol table (their chain is
	 * looked up meanwhile); their chain, when its lookup would wait for what another thread
	 * makes once (a DWARF unit's index, the units by address, the module's DWARF opened). The
	 * frames that repeat one of them are copied at the end. */
	enum { NEED_NAME = 1, NEED_CHAIN = 2 };
	struct copy {
		size_t to, from;
	};
	struct base_vec later = BASE_VEC_INIT(size_t), copies = BASE_VEC_INIT(struct copy);
	uint8_t *need = NULL; /* per frame, made when the first is put off */
	bool lines = o.lines != 0;
	struct uw_module *used = NULL;
	for (size_t i = 0; i < n; i++) {
		const struct uw_frame *f = &frames[i];
		struct uw_symbolized *y = &r->syms[i];
		uint64_t key = base_hash64((uint64_t)(uintptr_t)f->module ^ base_hash64(f->rel_pc * 2 + (f->is_call != 0)));
		uintptr_t prev = (uintptr_t)base_map_get(&seen, key);
		if (prev) {
			const struct uw_frame *pf = &frames[prev - 1];
			if (pf->module == f->module && pf->rel_pc == f->rel_pc && !pf->is_call == !f->is_call) {
				struct copy *c = base_vec_push(&copies);
				if (c) {
					*c = (struct copy){ i, prev - 1 };
					continue;
				}
				/* (no memory: looked up again) */
			}
		}
		y->module = f->module;
		/* a return address: its call is the byte before */
		y->rel_pc = f->is_call && f->rel_pc ? f->rel_pc - 1 : f->rel_pc;
		base_map_put(&seen, key, (void *)(uintptr_t)(i + 1)); /* (no memory: looked up again) */
		if (!f->module) {
			y->reason = UW_SYM_NO_MODULE;
			continue;
		}
		use(&used, f->module);
		struct sym_module *sm = sym_module(s, f->module);
		uint8_t want = 0;
		if (sm && !sym_symbols_ready(s, sm))
			want = NEED_NAME;
		else if (!name_one(s, y, f->rel_pc) || !lines)
			continue;
		if (lines && !chain_one(s, y, false))
			want |= NEED_CHAIN;
		if (want) {
			size_t *l = (need || (need = calloc(n, 1))) ? base_vec_push(&later) : NULL;
			if (l) {
				*l = i;
				need[i] = want;
				continue;
			}
			/* (no memory to put it off: done now, waiting) */
			if ((want & NEED_CHAIN))
				chain_one(s, y, true);
			if ((want & NEED_NAME) && (!name_one(s, y, f->rel_pc) || !lines))
				continue;
		}
		finish_one(y);
	}
	/* the frames put off: whatever no longer waits, in turns; when all wait, the first waiting */
	while (later.len) {
		size_t *v = later.data, kept = 0;
		bool moved = false;
		for (size_t j = 0; j < later.len; j++) {
			size_t i = v[j];
			struct uw_symbolized *y = &r->syms[i];
			bool wait = j == 0 && !moved && later.len == 1; /* (the only one left) */
			use(&used, frames[i].module);
			if ((need[i] & NEED_CHAIN) && chain_one(s, y, wait)) {
				need[i] &= ~NEED_CHAIN;
				moved = true;
			}
			if (need[i] & NEED_NAME) {
				struct sym_module *sm = sym_module(s, frames[i].module);
				if (wait || !sm || sym_symbols_ready(s, sm)) {
					need[i] &= ~NEED_NAME;
					moved = true;
					if (!name_one(s, y, frames[i].rel_pc) || !lines) {
						need[i] = 0; /* (unnamed: no chain shown, none wanted) */
						continue;
					}
				}
			}
			if (need[i]) {
				v[kept++] = i;
				continue;
			}
			finish_one(y);
		}
		later.len = kept;
		if (!moved && kept) {
			/* every one waits for another thread: the first, waiting */
			size_t i = v[0];
			struct uw_symbolized *y = &r->syms[i];
			use(&used, frames[i].module);
			if (need[i] & NEED_CHAIN)
				chain_one(s, y, true);
			bool named = !(need[i] & NEED_NAME) || (name_one(s, y, frames[i].rel_pc) && lines);
			need[i] = 0;
			if (named)
				finish_one(y);
			memmove(v, v + 1, --later.len * sizeof(*v));
		}
	}
	free(need);
	use(&used, NULL);
	for (size_t j = 0; j < copies.len; j++) {
		const struct copy *c = base_vec_at(&copies, j);
		r->syms[c->to] = r->syms[c->from];
	}
	base_vec_free(&later);
	base_vec_free(&copies);
	base_map_free(&seen);
	*out = r;
	return 0;
}

UW_API void uw_symbols_free(struct uw_symbols *syms)
{
	free(syms);
}
