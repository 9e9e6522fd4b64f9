/* SPDX-License-Identifier: MIT */
/*
 * The flame graph page: flamegraph.html (compiled in) with the profile as JSON in it. The
 * data: viewer frames (frametab), modules, threads, distinct stacks (thread, frames outermost
 * first) and, per stack and time bucket, the samples and weight. A diff adds the baseline's
 * stacks with side 0 (the page draws the profile's and colours by the change of share).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "profile/profile_internal.h"

extern const char prof_flamegraph_html[];
extern const size_t prof_flamegraph_html_len;

#define NBUCKETS 600u

struct hstack {            /* a distinct viewer stack */
	struct hstack *next;
	uint64_t hash;
	uint32_t thread, n, id;
	uint32_t *ids;
};

struct hthread {
	struct hthread *next;
	int32_t pid, tid;
	const char *comm;
	uint32_t id;
};

struct hcell {             /* samples of one stack in one time bucket, of one side */
	struct hcell *next;
	uint32_t stack, bucket, side;
	uint64_t n, w;
};

struct hx {
	struct uw_profile *p;
	struct frametab t;
	struct base_arena ar;
	struct base_map stacks, threads, cells, mods;
	struct base_map byst;  /* profile stack -> its viewer stack (id + 1): samples repeat stacks */
	struct base_vec stackv, threadv, cellv, modv; /* pointers, in order */
	uint32_t *ids;
	size_t cap;
	int err;
};

static void *vpush(struct hx *x, struct base_vec *v, void *e)
{
	void **slot = base_vec_push(v);
	if (!slot) {
		x->err = -ENOMEM;
		return NULL;
	}
	*slot = e;
	return e;
}

static uint32_t thread_id(struct hx *x, const struct pstack *st)
{
	uint64_t h = base_hash64(((uint64_t)(uint32_t)st->pid << 32) | (uint32_t)st->tid);
	struct hthread *head = base_map_get(&x->threads, h);
	for (struct hthread *e = head; e; e = e->next) {
		if (e->pid == st->pid && e->tid == st->tid) {
			e->comm = st->comm; /* the name it had last (samples come in time order) */
			return e->id;
		}
	}
	struct hthread *e = base_arena_alloc(&x->ar, sizeof(*e));
	if (!e || base_map_put(&x->threads, h, e)) {
		x->err = -ENOMEM;
		return 0;
	}
	*e = (struct hthread){ head, st->pid, st->tid, st->comm, (uint32_t)x->threadv.len };
	vpush(x, &x->threadv, e);
	return e->id;
}

/* The distinct viewer stack of a profile stack (stacks of other addresses in the same
 * functions are one). */
static uint32_t stack_id(struct hx *x, const struct pstack *st)
{
	uintptr_t known = (uintptr_t)base_map_get(&x->byst, (uintptr_t)st);
	if (known) {
		const struct hstack *hs = ((struct hstack **)x->stackv.data)[known - 1];
		((struct hthread **)x->threadv.data)[hs->thread]->comm = st->comm; /* its name as last seen */
		return hs->id;
	}
	uint32_t th = thread_id(x, st);
	size_t n = 0;
	uint64_t h = base_hash64(th + 1);
	for (uint32_t k = st->n; k-- > 0 && !x->err;) {
		const uint32_t *lv;
		unsigned m = frametab_levels(&x->t, &st->f[k], &lv);
		if (!m || (n + m > x->cap && !(x->ids = realloc(x->ids, (x->cap = 2 * (n + m)) * sizeof(uint32_t))))) {
			x->err = -ENOMEM;
			return 0;
		}
		for (unsigned j = m; j-- > 0;) {
			x->ids[n++] = lv[j];
			h = base_hash64(h ^ lv[j]) + n;
		}
	}
	struct hstack *head = base_map_get(&x->stacks, h);
	for (struct hstack *e = head; e; e = e->next) {
		if (e->thread == th && e->n == n && (!n || !memcmp(e->ids, x->ids, n * sizeof(uint32_t)))) {
			if (base_map_put(&x->byst, (uintptr_t)st, (void *)(uintptr_t)(e->id + 1)))
				x->err = -ENOMEM;
			return e->id;
		}
	}
	struct hstack *e = base_arena_alloc(&x->ar, sizeof(*e));
	uint32_t *ids = base_arena_alloc(&x->ar, (n ? n : 1) * sizeof(uint32_t));
	if (!e || !ids || base_map_put(&x->stacks, h, e)) {
		x->err = -ENOMEM;
		return 0;
	}
	if (n) /* (x->ids is made at the first stack with frames) */
		memcpy(ids, x->ids, n * sizeof(uint32_t));
	*e = (struct hstack){ head, h, th, (uint32_t)n, (uint32_t)x->stackv.len, ids };
	vpush(x, &x->stackv, e);
	if (base_map_put(&x->byst, (uintptr_t)st, (void *)(uintptr_t)(e->id + 1)))
		x->err = -ENOMEM;
	return e->id;
}

static void cell_add(struct hx *x, uint32_t stack, uint32_t bucket, uint32_t side, uint64_t n, uint64_t w)
{
	uint64_t h = base_hash64(((uint64_t)stack << 32) ^ ((uint64_t)bucket << 1) ^ side);
	struct hcell *head = base_map_get(&x->cells, h);
	for (struct hcell *e = head; e; e = e->next) {
		if (e->stack == stack && e->bucket == bucket && e->side == side) {
			e->n += n;
			e->w += w;
			return;
		}
	}
	struct hcell *e = base_arena_alloc(&x->ar, sizeof(*e));
	if (!e || base_map_put(&x->cells, h, e)) {
		x->err = -ENOMEM;
		return;
	}
	*e = (struct hcell){ head, stack, bucket, side, n, w };
	vpush(x, &x->cellv, e);
}

/* One profile's samples into cells (side 1: the profile shown; 0: a diff's baseline). */
static void add_profile(struct hx *x, struct uw_profile *p, uint32_t side, uint64_t t0, uint64_t t1)
{
	x->t.p = p;
	bool period = p->o.weight != UW_WEIGHT_SAMPLES;
	if (side && p->o.keep_order && p->samples.len) {
		uint64_t span = t1 - t0 + 1;
		for (size_t i = 0; i < p->samples.len && !x->err; i++) {
			const struct psample *ps = base_vec_at(&p->samples, i);
			uint64_t b = ps->time >= t0 ? (uint64_t)((unsigned __int128)(ps->time - t0) * NBUCKETS / span) : 0;
			cell_add(x, stack_id(x, ps->st), (uint32_t)UW_MIN(b, NBUCKETS - 1), side, 1, period ? ps->period : 1);
		}
		return;
	}
	struct pstack **sv = p->order.data;
	for (size_t i = 0; i < p->order.len && !x->err; i++)
		cell_add(x, stack_id(x, sv[i]), 0, side, sv[i]->samples, pstack_weight(p, sv[i], true));
}

static uint32_t module_id(struct hx *x, const char *name)
{
	uint64_t h = base_hash64((uintptr_t)name);
	void *v = base_map_get(&x->mods, h);
	if (v)
		return (uint32_t)((uintptr_t)v - 1);
	uint32_t id = (uint32_t)x->modv.len;
	if (!vpush(x, &x->modv, (void *)name) || base_map_put(&x->mods, h, (void *)(uintptr_t)(id + 1)))
		x->err = -ENOMEM;
	return id;
}

static void json_u32s(FILE *out, const char *key, struct hx *x, int field)
{
	fprintf(out, ",\"%s\":[", key);
	struct hcell **cv = x->cellv.data;
	for (size_t i = 0; i < x->cellv.len; i++) {
		uint64_t v = field == 0 ? cv[i]->stack : field == 1 ? cv[i]->bucket : field == 2 ? cv[i]->n :
			     field == 3 ? cv[i]->w : cv[i]->side;
		prof_json_num(out, v, !i);
	}
	fputc(']', out);
}

static int cmp_cell(const void *a, const void *b)
{
	const struct hcell *x = *(struct hcell *const *)a, *y = *(struct hcell *const *)b;
	if (x->side != y->side)
		return x->side < y->side ? -1 : 1;
	if (x->bucket != y->bucket)
		return x->bucket < y->bucket ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

UW_API int uw_profile_write_html(struct uw_profile *p, FILE *out, const struct uw_html_opts *opts)
{
	struct uw_html_opts o = { 0 };
	int oe = BASE_OPTS_COPY(&o, uw_html_opts, baseline, opts);
	if (oe)
		return oe;
	if (!p || !out || (o.baseline && o.baseline->s != p->s))
		return -EINVAL;
	struct hx x = { .p = p };
	frametab_init(&x.t, p);
	base_arena_init(&x.ar, 256 * 1024);
	base_map_init(&x.stacks);
	base_map_init(&x.threads);
	base_map_init(&x.cells);
	base_map_init(&x.mods);
	base_map_init(&x.byst);
	x.stackv = x.threadv = x.cellv = x.modv = BASE_VEC_INIT(void *);
	/* the time line spans the kept samples */
	uint64_t t0 = UINT64_MAX, t1 = 0;
	for (size_t i = 0; i < p->samples.len; i++) {
		const struct psample *ps = base_vec_at(&p->samples, i);
		if (!ps->time)
			continue;
		t0 = UW_MIN(t0, ps->time);
		t1 = UW_MAX(t1, ps->time);
	}
	bool timeline = !o.baseline && t0 <= t1;
	if (!timeline)
		t0 = t1 = 0;
	add_profile(&x, p, 1, t0, t1);
	if (o.baseline && !x.err)
		add_profile(&x, o.baseline, 0, 0, 0);
	if (x.cellv.len)
		qsort(x.cellv.data, x.cellv.len, sizeof(void *), cmp_cell);
	/* the page up to the data, the data, the rest */
	const char *mark = strstr(prof_flamegraph_html, "<!--UW_DATA-->");
	size_t pre = mark ? (size_t)(mark - prof_flamegraph_html) : prof_flamegraph_html_len;
	if (!x.err) {
		fwrite(prof_flamegraph_html, 1, pre, out);
		fputs("<script type=\"application/json\" id=\"uwdata\">{\"title\":", out);
		prof_json_str(out, o.title ? o.title : "unwound");
		const char *ev = uw_profile_nr_events(p) ? uw_profile_event_name(p, 0) : "";
		fputs(",\"event\":", out);
		prof_json_str(out, ev);
		bool clock = prof_clock_event(p);
		fprintf(out, ",\"unit\":\"%s\",\"diff\":%s,\"by_thread\":%s,\"t0\":%" PRIu64 ",\"t1\":%" PRIu64 ",\"nb\":%u",
			p->o.weight == UW_WEIGHT_SAMPLES ? "samples" : clock ? "ns" : "count", o.baseline ? "true" : "false",
			p->o.by_thread ? "true" : "false", t0, t1, timeline ? NBUCKETS : 1u);
		fputs(",\"frames\":[", out);
		for (size_t i = 0; i < x.t.frames.len; i++) {
			const struct dframe *d = frametab_get(&x.t, (uint32_t)i);
			fputs(i ? ",[" : "[", out);
			prof_json_str(out, d->name);
			fprintf(out, ",%" PRId64 ",", d->module ? (int64_t)module_id(&x, d->module) : -1);
			if (d->file)
				prof_json_str(out, d->file);
			else
				fputs("null", out);
			fprintf(out, ",%" PRIu32 ",%u]", d->line, d->kind);
		}
		fputs("],\"modules\":[", out);
		for (size_t i = 0; i < x.modv.len; i++) {
			fputs(i ? "," : "", out);
			prof_json_str(out, ((const char **)x.modv.data)[i]);
		}
		fputs("],\"threads\":[", out);
		struct hthread **tv = x.threadv.data;
		for (size_t i = 0; i < x.threadv.len; i++) {
			fprintf(out, "%s[%" PRId32 ",%" PRId32 ",", i ? "," : "", tv[i]->pid, tv[i]->tid);
			prof_json_str(out, tv[i]->comm ? tv[i]->comm : "[unknown]");
			fputc(']', out);
		}
		fputs("],\"stacks\":[", out);
		struct hstack **sv = x.stackv.data;
		for (size_t i = 0; i < x.stackv.len; i++) {
			fprintf(out, "%s[%" PRIu32 ",[", i ? "," : "", sv[i]->thread);
			for (uint32_t k = 0; k < sv[i]->n; k++)
				prof_json_num(out, sv[i]->ids[k], !k);
			fputs("]]", out);
		}
		fputc(']', out);
		json_u32s(out, "S", &x, 0);
		json_u32s(out, "B", &x, 1);
		json_u32s(out, "N", &x, 2);
		json_u32s(out, "W", &x, 3);
		if (o.baseline)
			json_u32s(out, "D", &x, 4);
		fputs("}</script>", out);
		if (mark)
			fwrite(mark + 14, 1, prof_flamegraph_html_len - pre - 14, out);
	}
	int err = x.err;
	free(x.ids);
	frametab_free(&x.t);
	base_arena_free(&x.ar);
	base_map_free(&x.stacks);
	base_map_free(&x.threads);
	base_map_free(&x.cells);
	base_map_free(&x.mods);
	base_map_free(&x.byst);
	base_vec_free(&x.stackv);
	base_vec_free(&x.threadv);
	base_vec_free(&x.cellv);
	base_vec_free(&x.modv);
	if (!err)
		err = prof_out_error(out);
	return err;
}
