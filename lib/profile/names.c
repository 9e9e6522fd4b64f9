/* SPDX-License-Identifier: MIT */
/*
 * The names writers show for a profile's frames (symbol, module, source line, inline levels),
 * computed once per distinct frame and interned: frames recur across the distinct stacks.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>

#include "profile/profile_internal.h"

struct name_ent {
	struct name_ent *next;
	struct uw_module *mod;
	uint64_t addr;
	uint8_t kind;           /* which name: NAME_* */
	const char *name;
};

enum { NAME_FOLDED, NAME_SYMBOL, NAME_SRCLINE };


static const char *name_uncached(struct uw_profile *p, const struct pframe *f, int kind);

/* A frame's name of one kind, interned, computed once per distinct frame: frames recur across
 * the distinct stacks. */
static const char *cached_name(struct uw_profile *p, const struct pframe *f, int kind)
{
	uint64_t h = base_hash64(f->addr ^ base_hash64((uintptr_t)f->mod + f->kernel + ((uint64_t)kind << 8)));
	struct name_ent *head = base_map_get(&p->names, h);
	for (struct name_ent *e = head; e; e = e->next)
		if (e->addr == f->addr && e->mod == f->mod && e->kind == (uint8_t)(kind | f->kernel << 4))
			return e->name;
	const char *name = name_uncached(p, f, kind);
	struct name_ent *e = base_arena_alloc(&p->name_arena, sizeof(*e));
	if (e) {
		*e = (struct name_ent){ head, f->mod, f->addr, (uint8_t)(kind | f->kernel << 4), name };
		base_map_put(&p->names, h, e);
	}
	return name;
}

static const char *intern(struct uw_profile *p, const char *s)
{
	return session_intern(p->s, s, strlen(s));
}

static const char *name_uncached(struct uw_profile *p, const struct pframe *f, int kind)
{
	struct uw_symbol sym = { 0 };
	char buf[1024];
	if (pframe_lost(f))
		return intern(p, pframe_lost_name(f));
	if (f->kernel)
		prof_kernel_symbol(p->s, f, &sym);
	else if (f->mod)
		uw_symbolize(p->s, f->mod, f->addr, &sym);
	const char *mname = f->kernel ? "[kernel.kallsyms]" : f->mod ? f->mod->name : NULL;
	switch (kind) {
	case NAME_SYMBOL:
		return sym.name;
	case NAME_SRCLINE: {
		const struct uw_source_frame *inl = NULL;
		const char *file;
		unsigned n = 0;
		if (f->mod && !f->kernel)
			uw_symbolize_inline(p->s, f->mod, f->addr, &inl, &n);
		if (n && inl[0].file && inl[0].line) {
			const char *base = strrchr(inl[0].file, '/');
			snprintf(buf, sizeof(buf), "%s:%u", base ? base + 1 : inl[0].file, inl[0].line);
		} else if (sym.name && (file = f->mod && !f->kernel && !(n && inl[0].file) ? sym_source_file(p->s, f->mod, f->addr) : NULL)) {
			snprintf(buf, sizeof(buf), "%s:0", file); /* addr2line's file:? (crtstuff.c) */
		} else if (sym.name) {
			snprintf(buf, sizeof(buf), "%s+%" PRIu64, sym.name, sym.offset);
		} else {
			/* perf's srcline: the address in the file (objdump's), not the file offset */
			snprintf(buf, sizeof(buf), "%s[%" PRIx64 "]", mname ? mname : "[unknown]", f->addr);
		}
		return intern(p, buf);
	}
	default:
		break;
	}
	if (f->kernel) {
		snprintf(buf, sizeof(buf), "%s_[k]", sym.name ? sym.name : "[unknown]");
	} else if (f->mod) {
		if (sym.name)
			return sym.name;
		if (p->o.addresses)
			snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, f->mod->name, f->addr); /* (as the table) */
		else
			snprintf(buf, sizeof(buf), "[%s]", f->mod->name);
	} else {
		snprintf(buf, sizeof(buf), "[unknown]");
	}
	return intern(p, buf);
}

const char *prof_frame_name(struct uw_profile *p, const struct pframe *f)
{
	const char *n = cached_name(p, f, NAME_FOLDED);
	return n ? n : "[unknown]";
}

const char *prof_frame_symbol(struct uw_profile *p, const struct pframe *f)
{
	return cached_name(p, f, NAME_SYMBOL);
}

const char *prof_frame_srcline(struct uw_profile *p, const struct pframe *f)
{
	const char *n = cached_name(p, f, NAME_SRCLINE);
	return n ? n : "??:0";
}

static unsigned levels_uncached(struct uw_profile *p, const struct pframe *f, const char **names, bool table);

/* A frame's levels are looked up once per distinct frame and kind (the inline chain under the
 * session's lock, then kept here): a frame recurs across the distinct stacks. */
struct lvl_ent {
	struct lvl_ent *next;
	struct uw_module *mod;
	uint64_t addr;
	uint8_t key;            /* kernel, table */
	uint8_t n;
	const char *names[];
};

unsigned prof_frame_levels(struct uw_profile *p, const struct pframe *f, const char **names, bool table)
{
	if ((!p->o.inline_frames && !p->o.by_line) || f->kernel || !f->mod)
		return levels_uncached(p, f, names, table);
	uint8_t key = (uint8_t)(table ? 2 : 0);
	uint64_t h = base_hash64(f->addr ^ base_hash64((uintptr_t)f->mod + key + 0x100));
	struct lvl_ent *head = base_map_get(&p->levels, h);
	for (struct lvl_ent *e = head; e; e = e->next) {
		if (e->addr == f->addr && e->mod == f->mod && e->key == key) {
			memcpy(names, e->names, e->n * sizeof(*names));
			return e->n;
		}
	}
	unsigned n = levels_uncached(p, f, names, table);
	struct lvl_ent *e = base_arena_alloc(&p->name_arena, sizeof(*e) + n * sizeof(*names));
	if (e) {
		*e = (struct lvl_ent){ head, f->mod, f->addr, key, (uint8_t)n };
		memcpy(e->names, names, n * sizeof(*names));
		base_map_put(&p->levels, h, e);
	}
	return n;
}

static unsigned levels_uncached(struct uw_profile *p, const struct pframe *f, const char **names, bool table)
{
	const char *base = table ? prof_frame_symbol(p, f) : prof_frame_name(p, f);
	if ((!p->o.inline_frames && !p->o.by_line) || f->kernel || !f->mod) {
		names[0] = base;
		return 1;
	}
	const struct uw_source_frame *inl = NULL;
	unsigned n = 0;
	uw_symbolize_inline(p->s, f->mod, f->addr, &inl, &n);
	if (!n) {
		names[0] = base;
		return 1;
	}
	unsigned first = p->o.inline_frames ? 0 : n - 1, k = 0;
	for (unsigned i = first; i < n && k < MAX_LEVELS; i++) {
		/* the containing function keeps its symbol name, as in --script */
		const char *fn = i == n - 1 || !inl[i].function ? base : inl[i].function;
		if (p->o.by_line && inl[i].file && fn) {
			char buf[1024];
			const char *file = strrchr(inl[i].file, '/');
			int len = snprintf(buf, sizeof(buf), "%s %s:%u", fn, file ? file + 1 : inl[i].file, inl[i].line);
			const char *named = session_intern(p->s, buf, (size_t)UW_MIN(len, (int)sizeof(buf) - 1));
			if (named)
				fn = named;
		}
		names[k++] = fn;
	}
	return k;
}

