/* SPDX-License-Identifier: MIT */
/*
 * Tables of shares, perf report's --stdio view: per event, rows made of sort keys (comm, pid,
 * tid, dso, sym, srcline) with their self share (the samples whose innermost frame is the row)
 * and total share (the samples with the row anywhere in their stack, counted once per stack),
 * weighted by period unless the profile says otherwise.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "profile/profile_internal.h"

enum key { K_COMM, K_PID, K_TID, K_DSO, K_SYM, K_SRCLINE, K__COUNT };
static const char *const key_names[K__COUNT] = { "comm", "pid", "tid", "dso", "sym", "srcline" };
static const char *const key_headers[K__COUNT] = { "Command", "Pid:Command", "Tid:Command", "Shared Object",
						   "Symbol", "Source:Line" };
#define MAX_KEYS 8

struct trow {
	struct trow *next;       /* hash chain */
	uint64_t hash;
	const char *comm, *dso, *sym, *srcline;
	int32_t pid, tid;
	bool kernel;
	uint64_t addr;           /* code without a symbol: its address in the ELF file (objdump's, gdb's,
	                          * addr2line's), in the table and the graph alike (docs/compat.md) */
	uint64_t self, total;
	size_t mark;             /* the last stack that counted it in total, + 1 */
	char *cells[MAX_KEYS];   /* formatted when printed */
};

struct table {
	struct uw_profile *p;
	enum key keys[MAX_KEYS];
	unsigned nkeys;
	bool frame_keys;         /* a key names a frame (dso, sym, srcline) */
	bool unwound_layout;     /* no sort given: "function module" rows */
	struct uw_table_opts o;
	struct base_map rows;
	struct base_vec order;   /* struct trow * */
	struct base_arena ar;
	/* with a call graph: each stack's rows, innermost first (by the stack's index) */
	struct trow ***seq;
	const void ***seqfn;     /* ... and each frame's module: a graph's node is a row of one module */
	uint32_t *seqlen;
};

/* A node of a row's call graph: a function on the way out to the callers (UW_GRAPH_CALLEE) or
 * in to the callees (UW_GRAPH_CALLER). */
struct gnode {
	struct trow *row;
	const void *fn;          /* the frame's module (perf's call graph keeps one module's function
	                          * apart from another's of the same name: ld.so's _start and the
	                          * program's, whatever the sort keys merge) */
	uint64_t w;
	struct gnode *kids, *next;
};

static int parse_keys(struct table *t, const char *sort)
{
	if (!sort) {
		t->keys[0] = K_SYM;
		t->keys[1] = K_DSO;
		t->nkeys = 2;
		t->unwound_layout = true;
		t->frame_keys = true;
		return 0;
	}
	const char *p = sort;
	while (*p) {
		size_t n = strcspn(p, ",");
		enum key k = K__COUNT;
		for (unsigned i = 0; i < K__COUNT; i++)
			if (strlen(key_names[i]) == n && !strncmp(p, key_names[i], n))
				k = (enum key)i;
		if (k == K__COUNT || t->nkeys == MAX_KEYS)
			return -EINVAL;
		bool dup = false;
		for (unsigned i = 0; i < t->nkeys; i++)
			dup |= t->keys[i] == k;
		if (!dup)
			t->keys[t->nkeys++] = k;
		t->frame_keys |= k == K_DSO || k == K_SYM || k == K_SRCLINE;
		p += n;
		if (*p == ',')
			p++;
	}
	return t->nkeys ? 0 : -EINVAL;
}

static bool has_key(const struct table *t, enum key k)
{
	for (unsigned i = 0; i < t->nkeys; i++)
		if (t->keys[i] == k)
			return true;
	return false;
}

/* The row a stack's frame (level name) falls in, made when new. f NULL: a stack without frames. */
static struct trow *row_of(struct table *t, const struct pstack *st, const struct pframe *f, const char *level)
{
	struct trow key = { 0 };
	if (has_key(t, K_COMM) || has_key(t, K_PID) || has_key(t, K_TID))
		key.comm = st->comm;
	if (has_key(t, K_PID) || has_key(t, K_TID))
		key.pid = key.tid = st->tid; /* perf's pid key is the thread */
	if (t->frame_keys) {
		key.kernel = f && f->kernel;
		/* (a symbol is of its module: with --sort sym alone, perf keeps two modules' functions
		 * of one name apart, sort__sym_cmp comparing the dso first: ld.so's _start and the
		 * program's are two rows, 0.17% and 99.83%, not one of 100%) */
		if (has_key(t, K_DSO) || has_key(t, K_SYM))
			key.dso = !f ? "[unknown]" : f->kernel ? "[kernel.kallsyms]" : f->mod ? f->mod->name : "[unknown]";
		if (has_key(t, K_SYM)) {
			key.sym = level;
			if (!level && f) { /* no symbol: one row per address, as perf shows it */
				key.addr = f->addr;
			}
		}
		if (has_key(t, K_SRCLINE))
			key.srcline = f ? prof_frame_srcline(t->p, f) : "??:0";
	}
	uint64_t h = base_hash64((uintptr_t)key.comm ^ ((uint64_t)(uint32_t)key.pid << 20) ^ (uintptr_t)key.dso * 3 ^
				 (uintptr_t)key.sym * 5 ^ (uintptr_t)key.srcline * 7 ^ key.addr ^ key.kernel);
	struct trow *head = base_map_get(&t->rows, h);
	for (struct trow *r = head; r; r = r->next)
		if (r->comm == key.comm && r->pid == key.pid && r->dso == key.dso && r->sym == key.sym &&
		    r->srcline == key.srcline && r->addr == key.addr && r->kernel == key.kernel)
			return r;
	struct trow *r = base_arena_alloc(&t->ar, sizeof(*r));
	struct trow **slot = base_vec_push(&t->order);
	if (!r || !slot || base_map_put(&t->rows, h, r))
		return NULL;
	*r = key;
	r->hash = h;
	r->next = head;
	*slot = r;
	return r;
}

/* Counts one stack of the event into the rows. @return 0 or -ENOMEM. */
static int count_stack(struct table *t, const struct pstack *st, size_t idx, uint64_t w)
{
	struct trow *seq[4096];
	const void *seqfn[4096];
	uint32_t ns = 0;
	if (!t->frame_keys || !st->n) {
		struct trow *r = row_of(t, st, NULL, NULL);
		if (!r)
			return -ENOMEM;
		r->self += w;
		r->total += w;
		return 0;
	}
	for (uint32_t k = 0; k < st->n; k++) {
		const char *lv[MAX_LEVELS];
		unsigned m = has_key(t, K_SYM) ? prof_frame_levels(t->p, &st->f[k], lv, true) : 1;
		if (!has_key(t, K_SYM))
			lv[0] = NULL;
		for (unsigned j = 0; j < m; j++) {
			struct trow *r = row_of(t, st, &st->f[k], lv[j]);
			if (!r)
				return -ENOMEM;
			if (k == 0 && j == 0)
				r->self += w; /* the innermost level of the leaf */
			if (r->mark != idx + 1) {
				r->total += w;
				r->mark = idx + 1;
			}
			if (ns < sizeof(seq) / sizeof(seq[0])) {
				seqfn[ns] = st->f[k].mod;
				seq[ns++] = r;
			}
		}
	}
	if (t->seq) {
		t->seq[idx] = base_arena_alloc(&t->ar, (ns ? ns : 1) * sizeof(*seq));
		t->seqfn[idx] = base_arena_alloc(&t->ar, (ns ? ns : 1) * sizeof(*seqfn));
		if (!t->seq[idx] || !t->seqfn[idx])
			return -ENOMEM;
		memcpy(t->seq[idx], seq, ns * sizeof(*seq));
		memcpy(t->seqfn[idx], seqfn, ns * sizeof(*seqfn));
		t->seqlen[idx] = ns;
	}
	return 0;
}

static const char *graph_name(const struct trow *r, char *buf, size_t len)
{
	if (r->sym)
		return r->sym;
	/* as perf's call graph: the address unpadded; the one in the file, as in the table (perf
	 * prints the sample's, which is that in an executable that is not PIE, and relocated
	 * elsewhere) */
	snprintf(buf, len, "0x%" PRIx64, r->addr);
	return buf;
}

static int cmp_gnode(const void *a, const void *b)
{
	const struct gnode *x = *(struct gnode *const *)a, *y = *(struct gnode *const *)b;
	if (x->w != y->w)
		return x->w > y->w ? -1 : 1;
	char bx[32], by[32];
	return strcmp(graph_name(x->row, bx, sizeof(bx)), graph_name(y->row, by, sizeof(by)));
}

/* Prints n's children as perf report's graph does: a chain of single callers (or callees) one
 * per line, a branch with its share of the event's total where the way divides. */
static void graph_print(FILE *out, struct gnode *n, char *prefix, size_t plen, uint64_t total, double limit)
{
	struct gnode *kv[64];
	size_t k;
	char buf[32];
	for (;;) {
		k = 0;
		for (struct gnode *c = n->kids; c; c = c->next) {
			if (!total || 100.0 * (double)c->w / (double)total < limit)
				continue;
			if (k < 64) {
				kv[k++] = c;
			} else { /* the 64 heaviest */
				size_t m = 0;
				for (size_t j = 1; j < k; j++)
					m = kv[j]->w < kv[m]->w ? j : m;
				if (c->w > kv[m]->w)
					kv[m] = c;
			}
		}
		if (k != 1 || kv[0]->w != n->w)
			break;
		/* a single way on: one line each, no share */
		fprintf(out, "%.*s", (int)plen, prefix);
		prof_put_name(out, graph_name(kv[0]->row, buf, sizeof(buf)), false);
		fputc('\n', out);
		n = kv[0];
	}
	if (k > 1)
		qsort(kv, k, sizeof(*kv), cmp_gnode);
	if (plen + 11 >= 512)
		return;
	for (size_t i = 0; i < k; i++) {
		bool last = i + 1 == k;
		fprintf(out, "%.*s|          \n", (int)plen, prefix);
		fprintf(out, "%.*s%s--%.2f%%--", (int)plen, prefix, last ? " " : "|", 100.0 * (double)kv[i]->w / (double)total);
		prof_put_name(out, graph_name(kv[i]->row, buf, sizeof(buf)), false);
		fputc('\n', out);
		memcpy(prefix + plen, last ? "           " : "|          ", 11);
		graph_print(out, kv[i], prefix, plen + 11, total, limit);
	}
}

/* The call graph of row r over the event's stacks, drawn as perf report --stdio draws it: with
 * --no-children the callchains of the samples in r itself, from its caller out (callee order)
 * or from the root in (caller order); otherwise the stacks through r, from r to its callers
 * (callee) or its callees (caller), r itself not repeated. */
static int write_graph(struct table *t, FILE *out, struct trow *r, uint32_t event, uint64_t total)
{
	struct uw_profile *p = t->p;
	struct gnode top = { NULL, NULL, 0, NULL, NULL };
	struct pstack **sv = p->order.data;
	bool callers = t->o.call_graph == UW_GRAPH_CALLEE, self = t->o.columns == UW_TABLE_SELF;
	for (size_t i = 0; i < p->order.len; i++) {
		if (sv[i]->event != event || !t->seq[i] || !t->seqlen[i])
			continue;
		struct trow **q = t->seq[i];
		const void **qf = t->seqfn[i];
		uint32_t n = t->seqlen[i], at = n;
		if (self) {
			at = q[0] == r ? 0 : n;
		} else {
			/* callers of its innermost activation; callees of its outermost */
			for (uint32_t j = 0; j < n; j++) {
				if (q[j] == r) {
					at = j;
					if (callers)
						break;
				}
			}
		}
		if (at == n)
			continue;
		uint64_t w = pstack_weight(p, sv[i], true);
		top.w += w;
		struct gnode *node = &top;
		/* the way, its first node included: from r out to its callers (callee order); from r in
		 * to its callees, or for a sample in r itself its whole callchain from the outermost
		 * frame (caller order), as perf builds it */
		int64_t j = callers ? at : q[0] == r ? (int64_t)n - 1 : at, step = callers ? 1 : -1;
		for (; j >= 0 && j < (int64_t)n; j += step) {
			struct gnode *c = node->kids;
			while (c && (c->row != q[j] || c->fn != qf[j]))
				c = c->next;
			if (!c) {
				c = base_arena_alloc(&t->ar, sizeof(*c));
				if (!c)
					return -ENOMEM;
				*c = (struct gnode){ q[j], qf[j], 0, NULL, node->kids };
				node->kids = c;
			}
			c->w += w;
			node = c;
		}
	}
	char prefix[512];
	memset(prefix, ' ', 15);
	double limit = t->o.percent_limit > 0 ? t->o.percent_limit : 0.5;
	/* All ways start at one node (r itself in callee order, the outermost frame in caller
	 * order): perf prints it as the chain's first line. Only when the table is sorted by a
	 * --sort that starts with "sym" does perf leave that node out (its reason: "the first entry
	 * is the same as the symbol", ui/stdio/hist.c), whatever the order; several first nodes are
	 * branches. */
	bool skip_first = !t->unwound_layout && t->keys[0] == K_SYM;
	struct gnode *root = &top, *one = NULL;
	if (top.kids && !top.kids->next) {
		one = top.kids;
		if (skip_first) {
			root = top.kids;
			one = root->kids && !root->kids->next ? root->kids : NULL;
		}
	}
	if (one && 100.0 * (double)one->w / (double)(total ? total : 1) >= limit) {
		/* one way only (samples without callers aside): "---" and the chain */
		char buf[32];
		fputs("            |\n            ---", out);
		prof_put_name(out, graph_name(one->row, buf, sizeof(buf)), false);
		fputc('\n', out);
		graph_print(out, one, prefix, 15, total, limit);
	} else if (root->kids) {
		graph_print(out, root, prefix, 12, total, limit);
	}
	fputc('\n', out);
	return 0;
}

static int cmp_rows(const void *a, const void *b, void *ctx)
{
	const struct trow *x = *(struct trow *const *)a, *y = *(struct trow *const *)b;
	bool by_total = *(const enum uw_top_sort *)ctx == UW_TOP_TOTAL;
	uint64_t xa = by_total ? x->total : x->self, ya = by_total ? y->total : y->self;
	uint64_t xb = by_total ? x->self : x->total, yb = by_total ? y->self : y->total;
	if (xa != ya)
		return xa > ya ? -1 : 1;
	if (xb != yb)
		return xb > yb ? -1 : 1;
	int c = strcmp(x->sym ? x->sym : "", y->sym ? y->sym : "");
	if (c)
		return c;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	c = strcmp(x->dso ? x->dso : "", y->dso ? y->dso : "");
	if (c)
		return c;
	c = strcmp(x->comm ? x->comm : "", y->comm ? y->comm : "");
	if (c)
		return c;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return strcmp(x->srcline ? x->srcline : "", y->srcline ? y->srcline : "");
}

/* A row's cell for key k, formatted. */
static char *cell(const struct trow *r, enum key k)
{
	char *s = NULL;
	int n = -1;
	switch (k) {
	case K_COMM: n = asprintf(&s, "%s", r->comm ? r->comm : "[unknown]"); break;
	case K_PID:
	case K_TID: n = asprintf(&s, "%7d:%s", r->pid, r->comm ? r->comm : ""); break;
	case K_DSO: n = asprintf(&s, "%s", r->dso); break;
	case K_SRCLINE: n = asprintf(&s, "%s", r->srcline); break;
	case K_SYM:
		if (r->sym)
			n = asprintf(&s, "[%c] %s", r->kernel ? 'k' : '.', r->sym);
		else
			n = asprintf(&s, "[%c] 0x%016" PRIx64, r->kernel ? 'k' : '.', r->addr);
		break;
	default: break;
	}
	if (n < 0)
		return NULL;
	prof_clean_name(s, false); /* (a line break in a name would break the table) */
	return s;
}

static size_t width_of(const char *s)
{
	/* columns, counting UTF-8 continuation bytes as none */
	size_t w = 0;
	for (; *s; s++)
		w += ((unsigned char)*s & 0xc0) != 0x80;
	return w;
}

static void pad(FILE *out, const char *s, size_t width)
{
	fputs(s, out);
	for (size_t w = width_of(s); w < width; w++)
		fputc(' ', out);
}

/* One event's section. */
static int write_event(struct table *t, FILE *out, uint32_t event)
{
	struct uw_profile *p = t->p;
	const struct pevent *ev = &((const struct pevent *)p->events.data)[event];
	uint64_t total = 0;
	int err = 0;
	struct pstack **sv = p->order.data;
	if (t->o.call_graph) {
		t->seq = calloc(p->order.len ? p->order.len : 1, sizeof(*t->seq));
		t->seqfn = calloc(p->order.len ? p->order.len : 1, sizeof(*t->seqfn));
		t->seqlen = calloc(p->order.len ? p->order.len : 1, sizeof(*t->seqlen));
		if (!t->seq || !t->seqfn || !t->seqlen)
			return -ENOMEM;
	}
	for (size_t i = 0; i < p->order.len && !err; i++) {
		if (sv[i]->event != event)
			continue;
		uint64_t w = pstack_weight(p, sv[i], true);
		total += w;
		err = count_stack(t, sv[i], i, w);
	}
	if (err)
		return err;
	fprintf(out, "# Samples: %" PRIu64 " of event '%s'\n", ev->samples, ev->name);
	fprintf(out, "# Event count (approx.): %" PRIu64 "\n", ev->period);
	bool by_samples = p->o.weight == UW_WEIGHT_SAMPLES;
	if (by_samples)
		fprintf(out, "# (shares of samples, not of the event count)\n");
	struct trow **rv = t->order.data;
	size_t nrows = t->order.len;
	if (nrows > 1)
		qsort_r(rv, nrows, sizeof(*rv), cmp_rows, &t->o.order);
	size_t shown = 0;
	for (size_t i = 0; i < nrows; i++) {
		uint64_t v = t->o.order == UW_TOP_TOTAL ? rv[i]->total : rv[i]->self;
		double share = total ? 100.0 * (double)v / (double)total : 0;
		if (shown >= t->o.max_rows || (t->o.percent_limit > 0 && share < t->o.percent_limit))
			continue;
		/* perf report --no-children shows only what was sampled itself */
		if (t->o.columns == UW_TABLE_SELF && !rv[i]->self)
			continue;
		for (unsigned k = 0; k < t->nkeys && !err; k++)
			if (!(rv[i]->cells[k] = cell(rv[i], t->keys[k])))
				err = -ENOMEM;
		shown++;
		rv[i]->mark = SIZE_MAX; /* shown */
	}
	if (err)
		return err;
	if (t->unwound_layout) {
		/* --no-children: what was sampled itself only, as perf's "Overhead" alone */
		bool self_only = t->o.columns == UW_TABLE_SELF;
		if (self_only)
			fprintf(out, "%8s  %-50s %s\n", "self%", "function", "module");
		else
			fprintf(out, "%8s %8s  %-50s %s\n", "self%", "total%", "function", "module");
		for (size_t i = 0; i < nrows; i++) {
			if (rv[i]->mark != SIZE_MAX)
				continue;
			double s = total ? 100.0 * (double)rv[i]->self / (double)total : 0;
			double tt = total ? 100.0 * (double)rv[i]->total / (double)total : 0;
			if (self_only)
				fprintf(out, "%7.2f%%  ", s);
			else
				fprintf(out, "%7.2f%% %7.2f%%  ", s, tt);
			pad(out, rv[i]->cells[0], 50);
			fprintf(out, " %s\n", rv[i]->cells[1]);
			if (t->o.call_graph && (err = write_graph(t, out, rv[i], event, total)))
				return err;
		}
		return prof_out_error(out);
	}
	/* perf's layout: share columns, then a column per key, headers under '#' */
	size_t width[MAX_KEYS];
	for (unsigned k = 0; k < t->nkeys; k++) {
		width[k] = strlen(key_headers[t->keys[k]]);
		for (size_t i = 0; i < nrows; i++)
			if (rv[i]->mark == SIZE_MAX)
				width[k] = UW_MAX(width[k], width_of(rv[i]->cells[k]));
	}
	fprintf(out, "#\n# ");
	const char *shares[2] = { NULL, NULL };
	if (t->o.columns == UW_TABLE_CHILDREN) {
		shares[0] = "Children";
		shares[1] = "Self";
	} else if (t->o.columns == UW_TABLE_SELF) {
		shares[0] = "Overhead";
	} else {
		shares[0] = "   Self%";
		shares[1] = "  Total%";
	}
	for (int c = 0; c < 2 && shares[c]; c++)
		fprintf(out, "%8s  ", shares[c]);
	for (unsigned k = 0; k < t->nkeys; k++) {
		if (k + 1 < t->nkeys)
			pad(out, key_headers[t->keys[k]], width[k] + 2);
		else
			fputs(key_headers[t->keys[k]], out);
	}
	fprintf(out, "\n# ");
	for (int c = 0; c < 2 && shares[c]; c++)
		fprintf(out, "........  ");
	for (unsigned k = 0; k < t->nkeys; k++) {
		for (size_t d = 0; d < width[k]; d++)
			fputc('.', out);
		fputs(k + 1 < t->nkeys ? "  " : "", out);
	}
	fprintf(out, "\n#\n");
	for (size_t i = 0; i < nrows; i++) {
		if (rv[i]->mark != SIZE_MAX)
			continue;
		double s = total ? 100.0 * (double)rv[i]->self / (double)total : 0;
		double tt = total ? 100.0 * (double)rv[i]->total / (double)total : 0;
		if (t->o.columns == UW_TABLE_CHILDREN)
			fprintf(out, "  %7.2f%%  %7.2f%%  ", tt, s);
		else if (t->o.columns == UW_TABLE_SELF)
			fprintf(out, "  %7.2f%%  ", s);
		else
			fprintf(out, "  %7.2f%%  %7.2f%%  ", s, tt);
		for (unsigned k = 0; k < t->nkeys; k++) {
			if (k + 1 < t->nkeys)
				pad(out, rv[i]->cells[k], width[k] + 2);
			else
				fputs(rv[i]->cells[k], out);
		}
		fputc('\n', out);
		if (t->o.call_graph && (err = write_graph(t, out, rv[i], event, total)))
			return err;
	}
	return prof_out_error(out);
}

static void table_reset(struct table *t)
{
	struct trow **rv = t->order.data;
	for (size_t i = 0; i < t->order.len; i++)
		for (unsigned k = 0; k < MAX_KEYS; k++)
			free(rv[i]->cells[k]);
	base_map_free(&t->rows);
	base_vec_free(&t->order);
	base_arena_free(&t->ar);
	free(t->seq);
	free(t->seqfn);
	free(t->seqlen);
	t->seq = NULL;
	t->seqfn = NULL;
	t->seqlen = NULL;
	base_map_init(&t->rows);
	t->order = BASE_VEC_INIT(struct trow *);
	base_arena_init(&t->ar, 64 * 1024);
}

UW_API int uw_profile_write_table(struct uw_profile *p, FILE *out, const struct uw_table_opts *opts)
{
	struct table t = { .p = p };
	int oe = BASE_OPTS_COPY(&t.o, uw_table_opts, call_graph, opts);
	if (oe)
		return oe;
	if (!p || !out || parse_keys(&t, t.o.sort))
		return -EINVAL;
	if ((has_key(&t, K_PID) || has_key(&t, K_TID)) && !p->o.by_thread)
		return -EINVAL;
	/* a call graph is of functions */
	if (t.o.call_graph < UW_GRAPH_NONE || t.o.call_graph > UW_GRAPH_CALLEE || (t.o.call_graph && !has_key(&t, K_SYM)))
		return -EINVAL;
	if (!t.o.max_rows)
		t.o.max_rows = 30;
	base_map_init(&t.rows);
	t.order = BASE_VEC_INIT(struct trow *);
	base_arena_init(&t.ar, 64 * 1024);
	int err = 0;
	/* the events in the recording's order */
	const struct pevent *ev = p->events.data;
	uint32_t *by_attr = malloc((p->events.len ? p->events.len : 1) * sizeof(*by_attr));
	if (!by_attr)
		err = -ENOMEM;
	for (uint32_t i = 0; i < p->events.len && by_attr; i++) {
		uint32_t j = i;
		for (; j > 0 && ev[by_attr[j - 1]].attr_index > ev[i].attr_index; j--)
			by_attr[j] = by_attr[j - 1];
		by_attr[j] = i;
	}
	for (uint32_t k = 0; k < p->events.len && !err; k++) {
		if (k)
			fputc('\n', out);
		err = write_event(&t, out, by_attr[k]);
		table_reset(&t);
	}
	free(by_attr);
	table_reset(&t);
	base_map_free(&t.rows);
	base_vec_free(&t.order);
	base_arena_free(&t.ar);
	if (!err)
		err = prof_out_error(out);
	return err;
}

UW_API int uw_profile_write_top(struct uw_profile *p, FILE *out, unsigned max_rows, enum uw_top_sort sort)
{
	UW_OPTS(uw_table_opts, o, .order = sort, .max_rows = max_rows);
	return uw_profile_write_table(p, out, &o);
}
