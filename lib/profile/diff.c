/* SPDX-License-Identifier: MIT */
/*
 * Differential profiles: two profiles of one session side by side, per function (perf diff's
 * table) or per folded stack, as shares of each profile's total; or FlameGraph's
 * two-column folded input. Names are interned in the session here, so a function or a stack
 * of the baseline is found in the other profile by its name pointers.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "profile/profile_internal.h"

struct drow {
	struct drow *next;
	uint64_t hash;
	const char *comm;        /* stacks */
	const char *name, *dso;  /* functions */
	bool kernel;
	uint32_t n;              /* stacks: names, outermost first */
	const char **names;
	uint64_t w[2];           /* baseline, new */
	double delta;
};

struct dx {
	struct uw_profile *p;
	struct base_map rows;
	struct base_vec order; /* struct drow * */
	struct base_arena ar;
	const char **names;
	size_t cap;
	uint64_t total[2];
	int format;
	int err;
};

static struct drow *find(struct dx *x, const struct drow *key)
{
	struct drow *head = base_map_get(&x->rows, key->hash);
	for (struct drow *r = head; r; r = r->next) {
		if (r->comm == key->comm && r->name == key->name && r->dso == key->dso && r->kernel == key->kernel &&
		    r->n == key->n && (!r->n || !memcmp(r->names, key->names, r->n * sizeof(*r->names))))
			return r;
	}
	struct drow *r = base_arena_alloc(&x->ar, sizeof(*r));
	struct drow **slot = base_vec_push(&x->order);
	const char **names = key->n ? base_arena_alloc(&x->ar, key->n * sizeof(*names)) : NULL;
	if (!r || !slot || (key->n && !names) || base_map_put(&x->rows, key->hash, r)) {
		x->err = -ENOMEM;
		return NULL;
	}
	*r = *key;
	if (key->n)
		memcpy(names, key->names, key->n * sizeof(*names));
	r->names = names;
	r->next = head;
	*slot = r;
	return r;
}

static void add_profile(struct dx *x, struct uw_profile *p, int side)
{
	struct pstack **sv = p->order.data;
	bool period = p->o.weight != UW_WEIGHT_SAMPLES;
	/* folded stacks count samples unless told the period, as the folded output does */
	bool folded_period = p->o.weight == UW_WEIGHT_PERIOD;
	for (size_t i = 0; i < p->order.len && !x->err; i++) {
		const struct pstack *st = sv[i];
		struct drow key = { 0 };
		uint64_t w = x->format == UW_DIFF_FOLDED ? (folded_period ? st->period : st->samples) :
							   (period ? st->period : st->samples);
		x->total[side] += w;
		if (x->format == UW_DIFF_FUNCTIONS) {
			/* the self weight: the innermost frame's function */
			if (st->n) {
				const struct pframe *f = &st->f[0];
				const char *sym = prof_frame_symbol(p, f);
				key.name = sym ? sym : prof_frame_name(p, f);
				key.name = session_intern(p->s, key.name, strlen(key.name));
				const char *dso = f->kernel ? "[kernel.kallsyms]" : f->mod ? f->mod->name : "[unknown]";
				key.dso = session_intern(p->s, dso, strlen(dso));
				key.kernel = f->kernel;
			} else {
				key.name = key.dso = session_intern(p->s, "[unknown]", 9);
			}
			key.hash = base_hash64((uintptr_t)key.name ^ base_hash64((uintptr_t)key.dso + key.kernel));
		} else {
			size_t need = (size_t)(st->n ? st->n : 1) * ((p->o.inline_frames || p->o.by_line) ? MAX_LEVELS : 1);
			if (need > x->cap) {
				const char **g = realloc(x->names, need * sizeof(*g));
				if (!g) {
					x->err = -ENOMEM;
					return;
				}
				x->names = g;
				x->cap = need;
			}
			key.comm = st->comm;
			key.names = x->names;
			key.n = prof_stack_names(p, st, x->names, &key.hash);
			/* a module's symbol names are its own: the same function in the other recording
			 * may come from another copy of the module (a stack of both was two rows) */
			key.comm = st->comm ? session_intern(p->s, st->comm, strlen(st->comm)) : NULL;
			key.hash = base_hash64((uintptr_t)key.comm);
			for (uint32_t k = 0; k < key.n; k++) {
				x->names[k] = session_intern(p->s, x->names[k], strlen(x->names[k]));
				key.hash = base_hash64(key.hash ^ (uintptr_t)x->names[k]) + k;
			}
		}
		struct drow *r = find(x, &key);
		if (r)
			r->w[side] += w;
	}
}

static double dabs(double v)
{
	return v < 0 ? -v : v;
}

static double share(const struct dx *x, const struct drow *r, int side)
{
	return x->total[side] ? 100.0 * (double)r->w[side] / (double)x->total[side] : 0;
}

static int cmp_delta(const void *a, const void *b)
{
	const struct drow *x = *(struct drow *const *)a, *y = *(struct drow *const *)b;
	double dx = dabs(x->delta), dy = dabs(y->delta);
	if (dx != dy)
		return dx > dy ? -1 : 1;
	uint64_t sx = x->w[0] + x->w[1], sy = y->w[0] + y->w[1];
	if (sx != sy)
		return sx > sy ? -1 : 1;
	int c = strcmp(x->name ? x->name : "", y->name ? y->name : "");
	if (c)
		return c;
	c = strcmp(x->dso ? x->dso : "", y->dso ? y->dso : "");
	if (c)
		return c;
	uint32_t n = UW_MIN(x->n, y->n);
	for (uint32_t i = 0; i < n; i++)
		if ((c = strcmp(x->names[i], y->names[i])))
			return c;
	return x->n < y->n ? -1 : x->n > y->n;
}

static void print_stack(FILE *out, const struct drow *r)
{
	prof_put_name(out, r->comm ? r->comm : "[unknown]", true);
	for (uint32_t k = 0; k < r->n; k++) {
		fputc(';', out);
		prof_put_name(out, r->names[k], true);
	}
}

UW_API int uw_profile_write_diff(struct uw_profile *baseline, struct uw_profile *p, FILE *out,
                                 const struct uw_diff_opts *opts)
{
	struct uw_diff_opts o = { 0 };
	int oe = BASE_OPTS_COPY(&o, uw_diff_opts, percent_limit, opts);
	if (oe)
		return oe;
	if (!baseline || !p || !out || baseline->s != p->s ||
	    o.format < UW_DIFF_FUNCTIONS || o.format > UW_DIFF_FOLDED || !(o.percent_limit >= 0))
		return -EINVAL;
	struct dx x = { .p = p, .format = o.format };
	base_map_init(&x.rows);
	x.order = BASE_VEC_INIT(struct drow *);
	base_arena_init(&x.ar, 64 * 1024);
	add_profile(&x, baseline, 0);
	add_profile(&x, p, 1);
	struct drow **rv = x.order.data;
	size_t n = x.order.len;
	if (!x.err && o.format == UW_DIFF_FOLDED) {
		/* in the order stacks were first seen: the baseline's, then the new ones */
		for (size_t i = 0; i < n; i++) {
			print_stack(out, rv[i]);
			fprintf(out, " %" PRIu64 " %" PRIu64 "\n", rv[i]->w[0], rv[i]->w[1]);
		}
	} else if (!x.err) {
		/* as perf diff: a function the new profile lacks has no change shown (nor sorted by) */
		for (size_t i = 0; i < n; i++)
			rv[i]->delta = o.format == UW_DIFF_FUNCTIONS && !rv[i]->w[1] ? 0 :
				       share(&x, rv[i], 1) - share(&x, rv[i], 0);
		if (n > 1)
			qsort(rv, n, sizeof(*rv), cmp_delta);
		const char *ev = uw_profile_nr_events(p) ? uw_profile_event_name(p, 0) : "";
		fprintf(out, "# Event '%s'\n#\n# Baseline: %" PRIu64 " %s, new: %" PRIu64 " %s; shares of each total\n#\n", ev,
			x.total[0], p->o.weight == UW_WEIGHT_SAMPLES ? "samples" : "(period)", x.total[1],
			p->o.weight == UW_WEIGHT_SAMPLES ? "samples" : "(period)");
		/* the module column as wide as its widest name, as perf diff sizes it */
		int dw = 13;
		for (size_t i = 0; i < n && o.format == UW_DIFF_FUNCTIONS; i++)
			dw = UW_MAX(dw, (int)strlen(rv[i]->dso));
		if (o.format == UW_DIFF_FUNCTIONS) {
			fprintf(out, "# Baseline  Delta Abs  %-*s  Symbol\n# ........  .........  ", dw, "Shared Object");
			for (int i = 0; i < dw; i++)
				fputc('.', out);
			fprintf(out, "  ......\n#\n");
		}
		else
			fprintf(out, "# Baseline       New  Delta Abs  Stack\n# ........  ........  .........  .....\n#\n");
		size_t shown = 0;
		for (size_t i = 0; i < n && (!o.max_rows || shown < o.max_rows); i++) {
			const struct drow *r = rv[i];
			double b = share(&x, r, 0), a = share(&x, r, 1);
			if (o.percent_limit > 0 && b < o.percent_limit && a < o.percent_limit && dabs(r->delta) < o.percent_limit)
				continue;
			char base[16] = "", delta[16];
			if (r->w[0])
				snprintf(base, sizeof(base), "%.2f%%", b);
			/* perf diff (6.x) prints the change of every function in both, +0.00% too, and none
			 * for one only in the baseline; the stacks table leaves a change of nothing empty */
			snprintf(delta, sizeof(delta), "%+.2f%%", r->delta);
			if (o.format == UW_DIFF_FUNCTIONS ? !r->w[1] : (!strcmp(delta, "+0.00%") || !strcmp(delta, "-0.00%")))
				delta[0] = 0;
			if (o.format == UW_DIFF_FUNCTIONS) {
				fprintf(out, "  %8s  %9s  ", base, delta);
				prof_put_name(out, r->dso, false);
				for (size_t w = strlen(r->dso); w < (size_t)dw; w++)
					fputc(' ', out);
				fprintf(out, "  [%c] ", r->kernel ? 'k' : '.');
				prof_put_name(out, r->name, false);
				fputc('\n', out);
			} else {
				char now[16] = "";
				if (r->w[1])
					snprintf(now, sizeof(now), "%.2f%%", a);
				fprintf(out, "  %8s  %8s  %9s  ", base, now, delta);
				print_stack(out, r);
				fputc('\n', out);
			}
			shown++;
		}
	}
	int err = x.err;
	free(x.names);
	base_map_free(&x.rows);
	base_vec_free(&x.order);
	base_arena_free(&x.ar);
	if (!err)
		err = prof_out_error(out);
	return err;
}
