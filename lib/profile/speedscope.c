/* SPDX-License-Identifier: MIT */
/*
 * speedscope's file format: shared frames, and one sampled profile per thread whose samples
 * are lists of frame numbers, outermost first, with a weight each. In time order when the
 * profile kept its samples (consecutive equal stacks merged), else one per distinct stack.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "profile/profile_internal.h"

struct sent {
	int32_t pid, tid;
	uint64_t time;          /* the sample's (kept samples; else 0) */
	size_t order;           /* position in the order added (or first seen) */
	const struct pstack *st;
	uint64_t weight;
};

static int cmp_sent(const void *x, const void *y)
{
	const struct sent *a = x, *b = y;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	/* (samples may be added out of time order: a reader holds some while stitching) */
	if (a->time != b->time)
		return a->time < b->time ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

/* A stack's frame numbers, outermost first, into *ids (grown as needed). @return the count,
 * or -ENOMEM. */
static long stack_ids(struct frametab *t, const struct pstack *st, uint32_t **ids, size_t *cap)
{
	size_t n = 0;
	for (uint32_t k = st->n; k-- > 0;) {
		const uint32_t *lv;
		unsigned m = frametab_levels(t, &st->f[k], &lv);
		if (!m)
			return -ENOMEM;
		if (n + m > *cap) {
			size_t nc = (n + m) * 2;
			uint32_t *g = realloc(*ids, nc * sizeof(*g));
			if (!g)
				return -ENOMEM;
			*ids = g;
			*cap = nc;
		}
		for (unsigned j = m; j-- > 0;) /* the inline levels are innermost first */
			(*ids)[n++] = lv[j];
	}
	return (long)n;
}

UW_API int uw_profile_write_speedscope(struct uw_profile *p, FILE *out, const struct uw_speedscope_opts *opts)
{
	struct uw_speedscope_opts o = { 0 };
	int oe = BASE_OPTS_COPY(&o, uw_speedscope_opts, name, opts);
	if (oe)
		return oe;
	if (!p || !out)
		return -EINVAL;
	bool by_period = p->o.weight != UW_WEIGHT_SAMPLES;
	bool ordered = p->o.keep_order && p->samples.len;
	size_t n = ordered ? p->samples.len : p->order.len;
	struct sent *ev = malloc((n ? n : 1) * sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (ordered) {
			const struct psample *ps = base_vec_at(&p->samples, i);
			ev[i] = (struct sent){ ps->st->pid, ps->st->tid, ps->time, i, ps->st, by_period ? ps->period : 1 };
		} else {
			const struct pstack *st = ((struct pstack **)p->order.data)[i];
			ev[i] = (struct sent){ st->pid, st->tid, 0, i, st, pstack_weight(p, st, true) };
		}
	}
	if (n)
		qsort(ev, n, sizeof(*ev), cmp_sent);
	struct frametab t;
	frametab_init(&t, p);
	uint32_t *ids = NULL;
	size_t cap = 0;
	int err = 0;
	const char *unit = by_period && prof_clock_event(p) ? "nanoseconds" : "none";
	/* the heaviest thread is shown first */
	size_t nprof = 0, active = 0;
	uint64_t heaviest = 0;
	fprintf(out, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"exporter\":\"unwound %s\"",
		uw_version_string());
	fputs(",\"name\":", out);
	prof_json_str(out, o.name ? o.name : "unwound");
	fputs(",\"profiles\":[", out);
	for (size_t i = 0; i < n && !err;) {
		size_t j = i;
		uint64_t total = 0;
		while (j < n && ev[j].pid == ev[i].pid && ev[j].tid == ev[i].tid)
			total += ev[j++].weight;
		/* the thread's name as it was last (a thread renamed by exec or prctl shows its new
		 * name, as perf shows a thread) */
		const char *comm = ev[j - 1].st->comm;
		char name[512];
		if (p->o.by_thread)
			snprintf(name, sizeof(name), "%s (%" PRId32 "/%" PRId32 ")", comm ? comm : "[unknown]", ev[i].pid, ev[i].tid);
		else
			snprintf(name, sizeof(name), "all threads");
		fprintf(out, "%s{\"type\":\"sampled\",\"name\":", nprof ? "," : "");
		prof_json_str(out, name);
		fprintf(out, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%" PRIu64 ",\"samples\":[", unit, total);
		if (total > heaviest) {
			heaviest = total;
			active = nprof;
		}
		/* samples, then their weights: consecutive samples of one stack are one */
		size_t first = i;
		bool sep = false;
		for (size_t k = i; k < j; k++) {
			if (k > first && ev[k].st == ev[k - 1].st)
				continue;
			long m = stack_ids(&t, ev[k].st, &ids, &cap);
			if (m < 0) {
				err = (int)m;
				break;
			}
			fputs(sep ? ",[" : "[", out);
			for (long x = 0; x < m; x++)
				prof_json_num(out, ids[x], !x);
			fputc(']', out);
			sep = true;
		}
		fputs("],\"weights\":[", out);
		sep = false;
		for (size_t k = i; k < j;) {
			uint64_t w = 0;
			size_t e = k;
			while (e < j && ev[e].st == ev[k].st)
				w += ev[e++].weight;
			prof_json_num(out, w, !sep);
			sep = true;
			k = e;
		}
		fputs("]}", out);
		nprof++;
		i = j;
	}
	fprintf(out, "],\"activeProfileIndex\":%zu,\"shared\":{\"frames\":[", active);
	for (size_t i = 0; i < t.frames.len && !err; i++) {
		const struct dframe *d = frametab_get(&t, (uint32_t)i);
		fputs(i ? ",{\"name\":" : "{\"name\":", out);
		prof_json_str(out, d->name);
		const char *file = d->file ? d->file : d->module;
		if (file) {
			fputs(",\"file\":", out);
			prof_json_str(out, file);
		}
		if (d->line)
			fprintf(out, ",\"line\":%" PRIu32, d->line);
		fputc('}', out);
	}
	fputs("]}}\n", out);
	free(ids);
	free(ev);
	frametab_free(&t);
	if (!err)
		err = prof_out_error(out);
	return err;
}
