/* SPDX-License-Identifier: MIT */
/*
 * Viewer frames: what speedscope and the flame graph show as one box. A profile frame is an
 * address; its viewer frames are its function (or source line) and, with inline frames, the
 * functions inlined at it. Each distinct (name, module, file, line, kind) gets one number.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "profile/profile_internal.h"

struct dfent {
	struct dfent *next;
	uint32_t id;
};

struct dflev {
	struct dflev *next;
	struct uw_module *mod;
	uint64_t addr;
	bool kernel;
	unsigned n;
	uint32_t ids[];
};

void frametab_init(struct frametab *t, struct uw_profile *p)
{
	t->p = p;
	t->frames = BASE_VEC_INIT(struct dframe);
	base_map_init(&t->ids);
	base_map_init(&t->levels);
	base_arena_init(&t->ar, 64 * 1024);
}

void frametab_free(struct frametab *t)
{
	base_vec_free(&t->frames);
	base_map_free(&t->ids);
	base_map_free(&t->levels);
	base_arena_free(&t->ar);
}

/* names, modules and files are interned: compared by pointer */
static int frame_id(struct frametab *t, const struct dframe *d, uint32_t *out)
{
	uint64_t h = base_hash64((uintptr_t)d->name ^ base_hash64((uintptr_t)d->module ^
				 base_hash64((uintptr_t)d->file + d->line + ((uint64_t)d->kind << 40))));
	struct dfent *head = base_map_get(&t->ids, h);
	for (struct dfent *e = head; e; e = e->next) {
		const struct dframe *o = frametab_get(t, e->id);
		if (o->name == d->name && o->module == d->module && o->file == d->file && o->line == d->line &&
		    o->kind == d->kind) {
			*out = e->id;
			return 0;
		}
	}
	struct dfent *e = base_arena_alloc(&t->ar, sizeof(*e));
	struct dframe *slot = base_vec_push(&t->frames);
	if (!e || !slot)
		return -ENOMEM;
	*slot = *d;
	*e = (struct dfent){ head, (uint32_t)(t->frames.len - 1) };
	*out = e->id;
	return base_map_put(&t->ids, h, e);
}

static const char *intern(struct uw_profile *p, const char *s)
{
	return s ? session_intern(p->s, s, strlen(s)) : NULL;
}

unsigned frametab_levels(struct frametab *t, const struct pframe *f, const uint32_t **ids)
{
	struct uw_profile *p = t->p;
	uint64_t h = base_hash64(f->addr ^ base_hash64((uintptr_t)f->mod + f->kernel));
	struct dflev *head = base_map_get(&t->levels, h);
	for (struct dflev *e = head; e; e = e->next) {
		if (e->addr == f->addr && e->mod == f->mod && e->kernel == f->kernel) {
			*ids = e->ids;
			return e->n;
		}
	}
	struct dframe d[MAX_LEVELS];
	unsigned n = 0;
	const char *module = intern(p, f->kernel ? "[kernel.kallsyms]" : f->mod ? f->mod->name : NULL);
	const char *base = prof_frame_name(p, f);
	uint8_t kind = f->kernel ? DF_KERNEL : !f->mod ? DF_UNKNOWN : (f->mod->jit || f->mod->jitdump) ? DF_JIT : DF_USER;
	if (f->kernel) {
		/* the folded output's "_[k]" suffix is for FlameGraph's colours: the kind says it here */
		const char *sym = prof_frame_symbol(p, f);
		base = sym ? sym : "[unknown]";
	}
	const struct uw_source_frame *inl = NULL;
	unsigned ni = 0;
	/* DWARF (inline chains, source files) only when the profile names inline frames or lines:
	 * without them a frame is its symbol and module, at the cost of the folded stacks */
	if (!f->kernel && f->mod && (p->o.inline_frames || p->o.by_line))
		uw_symbolize_inline(p->s, f->mod, f->addr, &inl, &ni);
	/* names interned: frames of two profiles (a diff) compare by pointer */
	base = intern(p, base);
	if (!ni) {
		d[n++] = (struct dframe){ base, module, NULL, 0, kind };
	} else {
		unsigned first = p->o.inline_frames ? 0 : ni - 1;
		for (unsigned i = first; i < ni && n < MAX_LEVELS; i++) {
			bool outer = i == ni - 1;
			const char *fn = outer || !inl[i].function ? base : intern(p, inl[i].function);
			d[n++] = (struct dframe){ fn, module, intern(p, inl[i].file), p->o.by_line ? inl[i].line : 0,
						  outer ? kind : DF_INLINED };
		}
	}
	struct dflev *e = base_arena_alloc(&t->ar, sizeof(*e) + n * sizeof(uint32_t));
	if (!e)
		return 0;
	*e = (struct dflev){ head, f->mod, f->addr, f->kernel, n };
	for (unsigned i = 0; i < n; i++)
		if (frame_id(t, &d[i], &e->ids[i]))
			return 0;
	if (base_map_put(&t->levels, h, e))
		return 0;
	*ids = e->ids;
	return n;
}

void prof_json_str(FILE *out, const char *s)
{
	const unsigned char *u = (const unsigned char *)(s ? s : "");
	fputc('"', out);
	while (*u) {
		unsigned c = *u, len = prof_utf8_len(u);
		if (c == '"' || c == '\\') {
			fputc('\\', out);
			fputc((int)c, out);
		} else if (c < 0x20 || c == '<' || c == '>' || c == '&') {
			fprintf(out, "\\u%04x", c);
		} else if (len == 3 && c == 0xe2 && u[1] == 0x80 && (u[2] == 0xa8 || u[2] == 0xa9)) {
			fprintf(out, "\\u%04x", 0x2028u + (u[2] - 0xa8u));
		} else if (len) {
			fwrite(u, 1, len, out);
		} else {
			fputs("\\ufffd", out);
			len = 1;
		}
		u += len;
	}
	fputc('"', out);
}

void prof_put_name(FILE *out, const char *s, bool folded)
{
	const char *run = s;
	for (const char *q = s; *q; q++) {
		unsigned char c = (unsigned char)*q;
		if (prof_name_byte_ok(c, folded))
			continue;
		fwrite(run, 1, (size_t)(q - run), out);
		fputc(c == ';' ? ':' : '?', out);
		run = q + 1;
	}
	fputs(run, out);
}

void prof_clean_name(char *s, bool folded)
{
	for (; *s; s++)
		if (!prof_name_byte_ok((unsigned char)*s, folded))
			*s = *s == ';' ? ':' : '?';
}
