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

static void symbolize_one(struct uw_session *s, const struct uw_frame *f, bool lines, struct uw_symbolized *o)
{
	struct uw_module *m = f->module;
	o->module = m;
	/* a return address: its call is the byte before */
	o->rel_pc = f->is_call && f->rel_pc ? f->rel_pc - 1 : f->rel_pc;
	if (!m) {
		o->reason = UW_SYM_NO_MODULE;
		return;
	}
	struct uw_symbol sym;
	sym_lookup_used(s, m, o->rel_pc, &sym, &o->reason);
	if (!sym.name)
		return;
	o->name = sym.name;
	o->sym_start = sym.start;
	o->sym_size = sym.size;
	o->offset = f->rel_pc - sym.start;
	o->reason = UW_SYM_OK;
	if (!lines)
		return;
	const struct uw_source_frame *fr;
	unsigned n;
	if (sym_inline_used(s, m, o->rel_pc, &fr, &n) == 0 && n) {
		o->file = fr[0].file;
		o->line = fr[0].line;
		o->inlined = fr;
		o->nr_inlined = n;
	}
	if (!o->file || !o->line)
		o->reason = UW_SYM_NO_DEBUG_INFO;
}

UW_API int uw_symbolize_frames(struct uw_session *s, const struct uw_frame *frames, size_t n,
                               const struct uw_symbolize_opts *opts, struct uw_symbols **out)
{
	struct uw_symbolize_opts o;
	if (!s || !out || (n && !frames) || base_opts_copy(&o, sizeof(o), opts) || n > SIZE_MAX / 2 / sizeof(struct uw_symbolized))
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
	struct uw_module *used = NULL; /* module_use held over a run of frames of one module */
	for (size_t i = 0; i < n; i++) {
		const struct uw_frame *f = &frames[i];
		uint64_t key = base_hash64((uint64_t)(uintptr_t)f->module ^ base_hash64(f->rel_pc * 2 + (f->is_call != 0)));
		uintptr_t prev = (uintptr_t)base_map_get(&seen, key);
		if (prev) {
			const struct uw_frame *pf = &frames[prev - 1];
			if (pf->module == f->module && pf->rel_pc == f->rel_pc && !pf->is_call == !f->is_call) {
				r->syms[i] = r->syms[prev - 1];
				continue;
			}
		}
		if (f->module != used) {
			if (used)
				module_unuse(used);
			if ((used = f->module))
				module_use(used);
		}
		symbolize_one(s, f, o.lines != 0, &r->syms[i]);
		base_map_put(&seen, key, (void *)(uintptr_t)(i + 1)); /* (no memory: looked up again) */
	}
	if (used)
		module_unuse(used);
	base_map_free(&seen);
	*out = r;
	return 0;
}

UW_API void uw_symbols_free(struct uw_symbols *syms)
{
	free(syms);
}
