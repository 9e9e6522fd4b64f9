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

/* The name of frame o (its module and rel_pc set), then, with lines, its source line and inline
 * chain; or, when sym_first is false, its chain o->inlined/nr_inlined already looked up. */
static void symbolize_one(struct uw_session *s, struct uw_symbolized *o, uint64_t call_pc, bool lines, bool sym_first)
{
	struct uw_module *m = o->module;
	struct uw_symbol sym;
	sym_lookup_used(s, m, o->rel_pc, &sym, &o->reason);
	if (!sym.name) {
		o->inlined = NULL; /* (looked up ahead: an unnamed frame shows none) */
		o->nr_inlined = 0;
		return;
	}
	o->name = sym.name;
	o->sym_start = sym.start;
	o->sym_size = sym.size;
	o->offset = call_pc - sym.start;
	o->reason = UW_SYM_OK;
	if (!lines)
		return;
	if (sym_first) {
		const struct uw_source_frame *fr;
		unsigned n;
		if (sym_inline_used(s, m, o->rel_pc, &fr, &n) == 0 && n) {
			o->inlined = fr;
			o->nr_inlined = n;
		}
	}
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
	/* frames of a module whose symbol table another thread is building: their inline chains
	 * looked up meanwhile, their names after the others (two threads starting on one large
	 * module otherwise ran one at a time while its table was built); and the frames that
	 * repeat one of them, copied at the end */
	struct copy {
		size_t to, from;
	};
	struct base_vec later = BASE_VEC_INIT(size_t), copies = BASE_VEC_INIT(struct copy);
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
		size_t *l;
		if (sm && !sym_symbols_ready(s, sm) && (l = base_vec_push(&later))) {
			*l = i;
			const struct uw_source_frame *fr;
			unsigned k;
			if (lines && sym_inline_used(s, f->module, y->rel_pc, &fr, &k) == 0 && k) {
				y->inlined = fr;
				y->nr_inlined = k;
			}
			continue;
		}
		symbolize_one(s, y, f->rel_pc, lines, true);
	}
	for (size_t j = 0; j < later.len; j++) {
		size_t i = ((size_t *)later.data)[j];
		use(&used, frames[i].module);
		symbolize_one(s, &r->syms[i], frames[i].rel_pc, lines, false);
	}
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
