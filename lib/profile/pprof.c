/* SPDX-License-Identifier: MIT */
/*
 * pprof's profile.proto, gzipped, written by a small encoder of our own (the format is a few
 * messages of varints and length-delimited fields; no protobuf runtime is needed, and the
 * profile is built in memory once, then compressed whole with libdeflate).
 *
 * Sample types: samples/count, then the period of each event, a column per event (a stack's
 * value 0 in the others): cpu/nanoseconds for cpu-clock and task-clock, off-cpu/nanoseconds for
 * offcpu-time, wall/nanoseconds for report --wall's sum, the event's name/count otherwise. One
 * Sample per distinct stack and thread, with labels pid, tid and thread (its comm). A Location per distinct frame (module, address), its Lines the
 * inline chain innermost first (the containing function last, by its symbol); a Function per
 * distinct (name, system name, file), code without a symbol a function per address
 * ("module+0xoffset", the address the tables show); a Mapping per module with its path and
 * build-id, kernel frames in "[kernel.kallsyms]". A sample with no frame has one location,
 * function "[unknown]", without a mapping.
 */
#include <errno.h>
#include <inttypes.h>
#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile_internal.h"

/* ---- protobuf */
struct pb {
	uint8_t *p;
	size_t n, cap;
	bool oom;
};

static void pb_need(struct pb *b, size_t k)
{
	if (b->oom || b->n + k <= b->cap)
		return;
	size_t cap = b->cap ? b->cap * 2 : 256;
	while (cap < b->n + k)
		cap *= 2;
	uint8_t *q = realloc(b->p, cap);
	if (!q) {
		b->oom = true;
		return;
	}
	b->p = q;
	b->cap = cap;
}

static void pb_varint(struct pb *b, uint64_t v)
{
	pb_need(b, 10);
	if (b->oom)
		return;
	while (v >= 0x80) {
		b->p[b->n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	b->p[b->n++] = (uint8_t)v;
}

static void pb_uint(struct pb *b, unsigned field, uint64_t v)
{
	pb_varint(b, (uint64_t)field << 3);
	pb_varint(b, v);
}

static void pb_bytes(struct pb *b, unsigned field, const void *d, size_t n)
{
	pb_varint(b, (uint64_t)field << 3 | 2);
	pb_varint(b, n);
	pb_need(b, n);
	if (!b->oom && n) {
		memcpy(b->p + b->n, d, n);
		b->n += n;
	}
}

/* a nested message: its bytes, built in m, appended as field */
static void pb_msg(struct pb *b, unsigned field, struct pb *m)
{
	if (m->oom)
		b->oom = true;
	pb_bytes(b, field, m->p, m->n);
	m->n = 0;
}

/* ---- string table, functions, locations, mappings */
struct sent {
	struct sent *next;
	const char *s;
	size_t len;
	uint64_t idx;
};

struct fent {
	struct fent *next;
	uint64_t name, sys, file, id;
};

struct lent {
	struct lent *next;
	struct uw_module *mod;
	uint64_t addr;
	bool kernel;
	uint64_t id;
};

struct ment {
	struct ment *next;
	struct uw_module *mod; /* NULL: the kernel */
	uint64_t id;
	bool lines;
};

struct pp {
	struct uw_profile *p;
	struct pb out, tmp, tmp2;
	struct base_map strs, funcs, locs, maps;
	struct base_arena ar;
	uint64_t nstr, nfunc, nloc, nmap;
	uint64_t unknown_loc; /* the location of samples with no frame, 0 until one is written */
	struct pb strtab, functab, loctab, maptab;
};

/* s with every byte that is not well-formed UTF-8 as U+FFFD, in the arena (protobuf's string
 * fields must be UTF-8: Go's and C++'s decoders reject the profile else); s when it is. */
static const char *utf8_clean(struct pp *x, const char *s)
{
	size_t bad = 0;
	for (const unsigned char *u = (const unsigned char *)s; *u;) {
		unsigned l = prof_utf8_len(u);
		bad += !l;
		u += l ? l : 1;
	}
	if (!bad)
		return s;
	size_t len = strlen(s);
	char *c = base_arena_alloc(&x->ar, len + 2 * bad + 1), *q = c;
	if (!c)
		return NULL;
	for (const unsigned char *u = (const unsigned char *)s; *u;) {
		unsigned l = prof_utf8_len(u);
		if (l) {
			memcpy(q, u, l);
			q += l;
			u += l;
		} else {
			memcpy(q, "\xef\xbf\xbd", 3);
			q += 3;
			u++;
		}
	}
	*q = 0;
	return c;
}

static uint64_t str(struct pp *x, const char *s)
{
	if (!s || !*s)
		return 0;
	if (!(s = utf8_clean(x, s))) {
		x->out.oom = true;
		return 0;
	}
	size_t n = strlen(s);
	uint64_t h = base_hash_bytes(s, n);
	struct sent *head = base_map_get(&x->strs, h);
	for (struct sent *e = head; e; e = e->next)
		if (e->len == n && !memcmp(e->s, s, n))
			return e->idx;
	struct sent *e = base_arena_alloc(&x->ar, sizeof(*e));
	if (!e || base_map_put(&x->strs, h, e)) {
		x->out.oom = true;
		return 0;
	}
	*e = (struct sent){ head, s, n, ++x->nstr };
	pb_bytes(&x->strtab, 6, s, n);
	return e->idx;
}

static uint64_t func(struct pp *x, const char *name, const char *sys, const char *file)
{
	uint64_t n = str(x, name), y = str(x, sys), f = str(x, file);
	uint64_t h = base_hash64(n * 0x9e3779b97f4a7c15ull ^ base_hash64(y * 31 + f));
	struct fent *head = base_map_get(&x->funcs, h);
	for (struct fent *e = head; e; e = e->next)
		if (e->name == n && e->sys == y && e->file == f)
			return e->id;
	struct fent *e = base_arena_alloc(&x->ar, sizeof(*e));
	if (!e || base_map_put(&x->funcs, h, e)) {
		x->out.oom = true;
		return 0;
	}
	*e = (struct fent){ head, n, y, f, ++x->nfunc };
	struct pb *m = &x->tmp2;
	pb_uint(m, 1, e->id);
	pb_uint(m, 2, n);
	pb_uint(m, 3, y);
	if (f)
		pb_uint(m, 4, f);
	pb_msg(&x->functab, 5, m);
	return e->id;
}

static struct ment *mapping(struct pp *x, struct uw_module *mod)
{
	uint64_t h = base_hash64((uintptr_t)mod);
	struct ment *head = base_map_get(&x->maps, h);
	for (struct ment *e = head; e; e = e->next)
		if (e->mod == mod)
			return e;
	struct ment *e = base_arena_alloc(&x->ar, sizeof(*e));
	if (!e || base_map_put(&x->maps, h, e)) {
		x->out.oom = true;
		return NULL;
	}
	*e = (struct ment){ head, mod, ++x->nmap, false };
	return e;
}

/* One Line: a function (name shown, system name, file) and a line in it. */
static void line(struct pp *x, struct pb *loc, const char *name, const char *sys, const char *file, uint32_t ln)
{
	struct pb *m = &x->tmp2;
	uint64_t fid = func(x, name, sys, file);
	pb_uint(m, 1, fid);
	if (ln)
		pb_uint(m, 2, ln);
	pb_msg(loc, 4, m);
}

static uint64_t location(struct pp *x, const struct pframe *f)
{
	uint64_t h = base_hash64(f->addr ^ base_hash64((uintptr_t)f->mod + f->kernel));
	struct lent *head = base_map_get(&x->locs, h);
	for (struct lent *e = head; e; e = e->next)
		if (e->addr == f->addr && e->mod == f->mod && e->kernel == f->kernel)
			return e->id;
	struct lent *e = base_arena_alloc(&x->ar, sizeof(*e));
	if (!e || base_map_put(&x->locs, h, e)) {
		x->out.oom = true;
		return 0;
	}
	*e = (struct lent){ head, f->mod, f->addr, f->kernel, ++x->nloc };
	if (pframe_lost(f)) {
		struct pb loc = { 0 };
		pb_uint(&loc, 1, e->id);
		line(x, &loc, pframe_lost_name(f), pframe_lost_name(f), NULL, 0);
		pb_msg(&x->loctab, 4, &loc);
		free(loc.p);
		return e->id;
	}
	struct ment *mp = mapping(x, f->kernel ? NULL : f->mod);
	struct pb loc = { 0 };
	pb_uint(&loc, 1, e->id);
	if (mp && (f->kernel || f->mod))
		pb_uint(&loc, 2, mp->id);
	pb_uint(&loc, 3, f->kernel ? f->addr : f->mod ? f->addr : f->map_addr);
	struct uw_session *s = x->p->s;
	if (f->kernel) {
		struct uw_symbol sym;
		prof_kernel_symbol(s, f, &sym);
		if (sym.name)
			line(x, &loc, sym.name, sym.name, NULL, 0);
	} else if (f->mod) {
		const char *shown = NULL, *sys = NULL;
		sym_names(s, f->mod, f->addr, &sys, &shown);
		const struct uw_source_frame *inl = NULL;
		unsigned n = 0;
		uw_symbolize_inline(s, f->mod, f->addr, &inl, &n);
		if (n && mp)
			mp->lines = true;
		/* code without a symbol: a function per address, named as --addresses names it (the
		 * ELF address unwound's table and graph show), not one "[module]" for all of a
		 * module's unnamed code (go tool pprof -top showed [cc1] at 36.7% flat) */
		char unnamed[512];
		snprintf(unnamed, sizeof(unnamed), "%s+0x%" PRIx64, f->mod->name, f->addr);
		for (unsigned i = 0; i < n; i++) {
			bool outer = i + 1 == n;
			/* the containing function by its symbol (as the other outputs name it) */
			const char *nm = outer && shown ? shown : inl[i].function;
			const char *sy = outer && sys ? sys : inl[i].function;
			if (!nm)
				nm = sy = unnamed;
			line(x, &loc, nm, sy, inl[i].file, inl[i].line);
		}
		if (!n)
			line(x, &loc, shown ? shown : unnamed, sys ? sys : unnamed, NULL, 0);
	}
	pb_msg(&x->loctab, 4, &loc);
	free(loc.p);
	return e->id;
}

/* A sample with no frame (no user stack and no kernel one: a kernel thread's off-CPU sample
 * without its kernel callchain, a user stack lost) still counts: one location, function
 * "[unknown]" as perf report names it. go tool pprof leaves a sample with no location out of
 * every total, so a profile would sum to less than the recording's samples. */
static uint64_t unknown_location(struct pp *x)
{
	if (x->unknown_loc)
		return x->unknown_loc;
	x->unknown_loc = ++x->nloc;
	struct pb loc = { 0 };
	pb_uint(&loc, 1, x->unknown_loc);
	line(x, &loc, "[unknown]", "[unknown]", NULL, 0);
	pb_msg(&x->loctab, 4, &loc);
	free(loc.p);
	return x->unknown_loc;
}

static void value_type(struct pp *x, struct pb *b, unsigned field, const char *type, const char *unit)
{
	struct pb *m = &x->tmp2;
	pb_uint(m, 1, str(x, type));
	pb_uint(m, 2, str(x, unit));
	pb_msg(b, field, m);
}

static void label(struct pp *x, struct pb *smp, const char *key, const char *s, int64_t num, const char *unit)
{
	struct pb *m = &x->tmp2;
	pb_uint(m, 1, str(x, key));
	if (s)
		pb_uint(m, 2, str(x, s));
	else
		pb_uint(m, 3, (uint64_t)num);
	if (unit)
		pb_uint(m, 4, str(x, unit));
	pb_msg(smp, 3, m);
}

UW_API int uw_profile_write_pprof(struct uw_profile *p, FILE *out, const struct uw_pprof_opts *opts)
{
	struct uw_pprof_opts o = { 0 };
	int oe = BASE_OPTS_COPY(&o, uw_pprof_opts, nr_comments, opts);
	if (oe)
		return oe;
	if (!p || !out)
		return -EINVAL;
	struct pp x = { .p = p };
	base_map_init(&x.strs);
	base_map_init(&x.funcs);
	base_map_init(&x.locs);
	base_map_init(&x.maps);
	base_arena_init(&x.ar, 64 * 1024);
	/* the period's kind, a value per event: time for the clock events (cpu/nanoseconds),
	 * off-CPU time (off-cpu/nanoseconds), both (wall/nanoseconds), a count otherwise */
	unsigned nev = uw_profile_nr_events(p);
	const char *ev = nev ? uw_profile_event_name(p, 0) : "samples";
	const char *kind = prof_time_kind(ev);
	value_type(&x, &x.out, 1, "samples", "count");
	for (unsigned e = 0; e < (nev ? nev : 1); e++) {
		const char *en = nev ? uw_profile_event_name(p, e) : ev, *k = prof_time_kind(en);
		value_type(&x, &x.out, 1, k ? k : en, k ? "nanoseconds" : "count");
	}
	struct pstack **sv = p->order.data;
	/* the main program's mapping first (pprof takes the first for the profile's "File"): the
	 * module of the outermost user frame of the heaviest stack */
	const struct pstack *heavy = NULL;
	uint64_t total_samples = 0, total_period = 0;
	for (size_t i = 0; i < p->order.len; i++) {
		total_samples += sv[i]->samples;
		total_period += sv[i]->period;
		if (!heavy || sv[i]->samples > heavy->samples)
			heavy = sv[i];
	}
	for (uint32_t k = heavy ? heavy->n : 0; k-- > 0;) {
		if (!heavy->f[k].kernel && heavy->f[k].mod) {
			mapping(&x, heavy->f[k].mod);
			break;
		}
	}
	struct pb smp = { 0 };
	for (size_t i = 0; i < p->order.len && !x.out.oom; i++) {
		const struct pstack *st = sv[i];
		/* locations, innermost first (packed) */
		struct pb ids = { 0 };
		for (uint32_t k = 0; k < st->n; k++)
			pb_varint(&ids, location(&x, &st->f[k]));
		if (!st->n)
			pb_varint(&ids, unknown_location(&x));
		pb_bytes(&smp, 1, ids.p, ids.n);
		free(ids.p);
		struct pb vals = { 0 };
		pb_varint(&vals, st->samples);
		for (unsigned e = 0; e < (nev ? nev : 1); e++)
			pb_varint(&vals, e == st->event ? st->period : 0);
		pb_bytes(&smp, 2, vals.p, vals.n);
		free(vals.p);
		if (p->o.by_thread) {
			label(&x, &smp, "pid", NULL, st->pid, NULL);
			label(&x, &smp, "tid", NULL, st->tid, NULL);
		}
		if (st->comm)
			label(&x, &smp, "thread", st->comm, 0, NULL);
		pb_msg(&x.out, 2, &smp);
	}
	free(smp.p);
	/* mappings, by id */
	struct ment **mv = calloc(x.nmap + 1, sizeof(*mv));
	if (!mv)
		x.out.oom = true;
	size_t it = 0;
	uint64_t key;
	void *val;
	while (mv && base_map_next(&x.maps, &it, &key, &val))
		for (struct ment *e = val; e; e = e->next)
			mv[e->id] = e;
	for (uint64_t id = 1; mv && id <= x.nmap; id++) {
		struct ment *e = mv[id];
		struct pb *m = &x.tmp;
		pb_uint(m, 1, id);
		pb_uint(m, 5, str(&x, e->mod ? uw_module_path(e->mod) : "[kernel.kallsyms]"));
		if (e->mod && *uw_module_build_id(e->mod))
			pb_uint(m, 6, str(&x, uw_module_build_id(e->mod)));
		pb_uint(m, 7, 1); /* has_functions */
		if (e->lines) {
			pb_uint(m, 8, 1);  /* has_filenames */
			pb_uint(m, 9, 1);  /* has_line_numbers */
			pb_uint(m, 10, 1); /* has_inline_frames */
		}
		pb_msg(&x.maptab, 3, m);
	}
	free(mv);
	/* period type and period; times */
	value_type(&x, &x.out, 11, kind ? kind : ev, kind ? "nanoseconds" : "count");
	/* the sampling period: the mean (frequency mode varies it) */
	if (total_samples)
		pb_uint(&x.out, 12, (total_period + total_samples / 2) / total_samples);
	if (o.time_nanos)
		pb_uint(&x.out, 9, o.time_nanos);
	if (o.duration_nanos)
		pb_uint(&x.out, 10, o.duration_nanos);
	for (size_t i = 0; o.comments && i < o.nr_comments; i++)
		if (o.comments[i] && *o.comments[i])
			pb_uint(&x.out, 13, str(&x, o.comments[i]));
	/* the whole message: samples and types (built), mappings, locations, functions, strings */
	struct pb all = { 0 };
	pb_need(&all, x.out.n + x.maptab.n + x.loctab.n + x.functab.n + x.strtab.n + 2);
	if (!all.oom) {
		/* (a profile without samples has no mappings, locations nor functions: their
		 * buffers were never allocated) */
		const struct pb *parts[] = { &x.out, &x.maptab, &x.loctab, &x.functab };
		for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
			if (parts[i]->n)
				memcpy(all.p + all.n, parts[i]->p, parts[i]->n);
			all.n += parts[i]->n;
		}
		/* string 0 is "" */
		all.p[all.n++] = 6 << 3 | 2;
		all.p[all.n++] = 0;
		memcpy(all.p + all.n, x.strtab.p, x.strtab.n);
		all.n += x.strtab.n;
	}
	int err = (x.out.oom || x.maptab.oom || x.loctab.oom || x.functab.oom || x.strtab.oom || x.tmp.oom ||
		   x.tmp2.oom || all.oom)
			  ? -ENOMEM
			  : 0;
	if (!err) {
		struct libdeflate_compressor *c = libdeflate_alloc_compressor(6);
		size_t bound = c ? libdeflate_gzip_compress_bound(c, all.n) : 0;
		uint8_t *z = c ? malloc(bound) : NULL;
		size_t zn = z ? libdeflate_gzip_compress(c, all.p, all.n, z, bound) : 0;
		if (!zn)
			err = -ENOMEM;
		else if (fwrite(z, 1, zn, out) != zn)
			err = prof_out_error(out) ? prof_out_error(out) : -EIO;
		free(z);
		libdeflate_free_compressor(c);
	}
	free(all.p);
	free(x.out.p);
	free(x.tmp.p);
	free(x.tmp2.p);
	free(x.strtab.p);
	free(x.functab.p);
	free(x.loctab.p);
	free(x.maptab.p);
	base_map_free(&x.strs);
	base_map_free(&x.funcs);
	base_map_free(&x.locs);
	base_map_free(&x.maps);
	base_arena_free(&x.ar);
	if (!err)
		err = prof_out_error(out);
	return err;
}
