/* SPDX-License-Identifier: MIT */
/*
 * The perf-script writer: each sample the way `perf script` prints it, kernel frames first, the
 * user frames with their inline chains and source lines, distinct frames formatted once; and a
 * writer that holds samples back a few windows so their inline chains are looked up ahead on
 * the session's helper thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>

#include "profile/profile_internal.h"

/* ---- a small output buffer for the perf-script writer: it flushes to a file, or (out NULL)
 * grows in memory */
struct wbuf {
	FILE *out;
	char *b;
	size_t n, cap;
	bool oom;               /* memory mode: a growth failed (the bytes are lost) */
};

static void wb_flush(struct wbuf *w)
{
	if (w->n && w->out)
		fwrite(w->b, 1, w->n, w->out);
	if (w->out)
		w->n = 0;
}

/* room for len more bytes: @return false (nothing to write into) without it */
static bool wb_room(struct wbuf *w, size_t len)
{
	if (len <= w->cap - w->n)
		return true;
	if (w->out) {
		wb_flush(w);
		return len <= w->cap;
	}
	size_t cap = w->cap ? w->cap : 4096;
	while (len > cap - w->n)
		cap *= 2;
	char *nb = realloc(w->b, cap);
	if (!nb) {
		w->oom = true;
		return false;
	}
	w->b = nb;
	w->cap = cap;
	return true;
}

static void wb_mem(struct wbuf *w, const char *p, size_t len)
{
	if (!wb_room(w, len)) {
		if (w->out)
			fwrite(p, 1, len, w->out);
		return;
	}
	memcpy(w->b + w->n, p, len);
	w->n += len;
}

static void wb_str(struct wbuf *w, const char *s)
{
	wb_mem(w, s, strlen(s));
}

static void wb_char(struct wbuf *w, char c)
{
	if (wb_room(w, 1))
		w->b[w->n++] = c;
}

/* A name (function, thread, module, file): control characters as '?' (prof_put_name) */
static void wb_name(struct wbuf *w, const char *s)
{
	const char *run = s;
	for (const char *q = s; *q; q++) {
		if (prof_name_byte_ok((unsigned char)*q, false))
			continue;
		wb_mem(w, run, (size_t)(q - run));
		wb_char(w, '?');
		run = q + 1;
	}
	wb_str(w, run);
}

/* v in decimal, right-aligned in width with pad */
static void wb_dec(struct wbuf *w, uint64_t v, unsigned width, char pad)
{
	char t[24];
	unsigned n = 0;
	do {
		t[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (unsigned i = n; i < width; i++)
		wb_char(w, pad);
	while (n)
		wb_char(w, t[--n]);
}

/* v in lower-case hex, right-aligned in width with blanks */
static void wb_hex(struct wbuf *w, uint64_t v, unsigned width)
{
	char t[16];
	unsigned n = 0;
	do {
		t[n++] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	for (unsigned i = n; i < width; i++)
		wb_char(w, ' ');
	while (n)
		wb_char(w, t[--n]);
}

/* "<sep><addr> <name>+0x<off> (<dso>)\n", or "[unknown]" without a name; no dso: the line is
 * left open after the offset */
static void wb_frame_sep(struct wbuf *w, char sep, uint64_t addr, const char *name, uint64_t off, const char *dso)
{
	wb_char(w, sep);
	wb_hex(w, addr, 16);
	wb_char(w, ' ');
	if (name) {
		wb_name(w, name);
		wb_str(w, "+0x");
		wb_hex(w, off, 0);
	} else {
		wb_str(w, "[unknown]");
	}
	if (dso) {
		wb_str(w, " (");
		wb_name(w, dso);
		wb_str(w, ")\n");
	}
}

/* The symbol of a kernel frame, named with its recording's kernel (NULL: the session's). */
static void kernel_symbol(struct uw_session *s, struct uw_kernel *kern, uint64_t pc, struct uw_symbol *sym)
{
	if (kern)
		uw_kernel_symbolize(kern, pc, sym);
	else
		uw_symbolize_kernel(s, pc, sym);
}

/* A frame's line of a callchain: "\t<addr> ..." */
static void wb_frame(struct wbuf *w, uint64_t addr, const char *name, uint64_t off, const char *dso)
{
	wb_frame_sep(w, '\t', addr, name, off, dso);
}

/* The lines of one kernel frame. */
static void script_kernel_frame(struct wbuf *w, struct uw_session *s, struct uw_kernel *kern, uint64_t pc,
                                const struct uw_script_opts *o)
{
	struct uw_symbol sym;
	kernel_symbol(s, kern, pc, &sym);
	wb_frame(w, pc, sym.name, sym.offset, "[kernel.kallsyms]");
	if (o->srcline) { /* no kernel debug info: perf names the place dso[address] */
		wb_str(w, "  [kernel.kallsyms][");
		wb_hex(w, pc, 0);
		wb_str(w, "]\n");
	}
}

/* The lines of one user frame: with inline frames, one per level of its chain. */
static void script_user_frame(struct wbuf *w, struct uw_session *s, const struct uw_frame *f,
                              const struct uw_script_opts *o)
{
	uint64_t adj = f->is_call ? 1 : 0;
	uint64_t addr = f->map_addr - adj;
	if (!f->module) {
		wb_frame(w, f->pc - adj, NULL, 0, "[unknown]");
		return;
	}
	struct uw_symbol sym;
	uw_symbolize(s, f->module, f->rel_pc - adj, &sym);
	const struct uw_source_frame *inl = NULL;
	unsigned ninl = 0;
	if (!o->no_inline || o->srcline)
		uw_symbolize_inline(s, f->module, f->rel_pc - adj, &inl, &ninl);
	if (!sym.name) {
		wb_frame(w, addr, NULL, 0, uw_module_path(f->module));
		return;
	}
	/* Every level of the inline chain is printed at the frame's address and offset, the
	 * inlined functions innermost first and "(inlined)", then the function that contains
	 * them as the frame itself, under its ELF symbol. (perf also marks that last level
	 * "(inlined)" whenever addr2line's name for it differs from the symbol: clones such
	 * as foo.constprop.0, aliases such as __GI_foo. It is not inlined.) */
	unsigned levels = o->no_inline || !ninl ? 1 : ninl;
	for (unsigned k = 0; k < levels; k++) {
		const struct uw_source_frame *lv = ninl ? &inl[o->no_inline ? ninl - 1 : k] : NULL;
		bool real = k == levels - 1 || !lv->function;
		/* with source lines perf moves "(inlined)" from the symbol to the line below */
		if (real) {
			wb_frame(w, addr, sym.name, sym.offset, uw_module_path(f->module));
		} else {
			wb_frame(w, addr, lv->function, sym.offset, NULL);
			if (!o->srcline)
				wb_str(w, " (inlined)");
			wb_char(w, '\n');
		}
		if (o->srcline) {
			const char *file = lv && lv->file ? lv->file : NULL;
			if (!file && !ninl) /* addr2line's file:? (crtstuff.c) */
				file = sym_source_file(s, f->module, f->rel_pc - adj);
			if (!file)
				file = "";
			const char *base = strrchr(file, '/');
			wb_str(w, "  ");
			wb_name(w, base ? base + 1 : file);
			wb_char(w, ':');
			wb_dec(w, lv ? lv->line : 0, 0, ' ');
			if (!real)
				wb_str(w, " (inlined)");
			wb_char(w, '\n');
		}
	}
}

/*
 * The distinct frames the script writer has seen, each with its text once formatted: a
 * recording repeats the same few thousand frames (the CPython bench recording: 96,125 frames,
 * 2,642 distinct), so each is formatted once and copied after, and a held sample keeps only its
 * frames' ids. A frame is keyed by what its text depends on: the module (and its key, should a
 * freed module's memory be reused), the address looked up and the address printed.
 */
struct ftext_ent {
	struct uw_frame f;      /* the frame (a kernel frame: pc only) */
	struct uw_kernel *kern; /* a kernel frame's kernel (its recording's) */
	uint64_t mkey;          /* 1: kernel; 2: user, in no module; else the module's key */
	uint64_t pc, addr;      /* looked up, printed */
	size_t off;             /* of its text in the buffer, when formatted */
	uint32_t len;
	bool formatted;
};

#define FTEXT_MAX_BYTES ((size_t)64 << 20) /* texts dropped (formatted again) past this */
#define FTEXT_MAX_IDS (UINT32_MAX / 4)

struct ftext {
	struct ftext_ent *e;    /* by id */
	size_t n, cap;
	uint32_t *slot;         /* open addressing: id + 1, 0 empty; a power of two */
	size_t nslot;
	struct wbuf text;       /* memory mode */
};

static void ftext_free(struct ftext *c)
{
	free(c->e);
	free(c->slot);
	free(c->text.b);
	memset(c, 0, sizeof(*c));
}

/* The key of a user frame (f) or a kernel frame (kpc). */
static void frame_key(const struct uw_frame *f, uint64_t kpc, uint64_t *mkey, uint64_t *pc, uint64_t *addr)
{
	const struct uw_module *m = f ? f->module : NULL;
	uint64_t adj = f && f->is_call ? 1 : 0;
	*mkey = m ? m->key : f ? 2 : 1;
	*pc = f ? (m ? f->rel_pc : f->pc) - adj : kpc;
	*addr = f && m ? f->map_addr - adj : 0;
}

/* (owner: the module, or a kernel frame's kernel) */
static size_t ftext_home(const struct ftext *c, const void *owner, uint64_t pc, uint64_t addr)
{
	return base_hash64(pc ^ ((uint64_t)(uintptr_t)owner << 7) ^ (addr << 17)) & (c->nslot - 1);
}

/* The id of a frame (user f, or kernel kpc of kern), added when new (*isnew set); UINT32_MAX
 * without memory. */
static uint32_t ftext_id(struct ftext *c, const struct uw_frame *f, uint64_t kpc, struct uw_kernel *kern, bool *isnew)
{
	const struct uw_module *m = f ? f->module : NULL;
	if (f)
		kern = NULL;
	uint64_t mkey, pc, addr;
	frame_key(f, kpc, &mkey, &pc, &addr);
	*isnew = false;
	const void *owner = m ? (const void *)m : (const void *)kern;
	if (c->nslot) {
		for (size_t i = ftext_home(c, owner, pc, addr);; i = (i + 1) & (c->nslot - 1)) {
			uint32_t id = c->slot[i];
			if (!id)
				break;
			const struct ftext_ent *e = &c->e[id - 1];
			if (e->f.module == m && e->kern == kern && e->mkey == mkey && e->pc == pc && e->addr == addr)
				return id - 1;
		}
	}
	if (c->n >= FTEXT_MAX_IDS)
		return UINT32_MAX;
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 1024;
		struct ftext_ent *ne = realloc(c->e, cap * sizeof(*ne));
		if (!ne)
			return UINT32_MAX;
		c->e = ne;
		c->cap = cap;
	}
	if (2 * (c->n + 1) > c->nslot) {
		size_t nslot = c->nslot ? 2 * c->nslot : 4096;
		uint32_t *ns = calloc(nslot, sizeof(*ns));
		if (!ns)
			return UINT32_MAX;
		free(c->slot);
		c->slot = ns;
		c->nslot = nslot;
		for (size_t k = 0; k < c->n; k++) {
			const void *ko = c->e[k].f.module ? (const void *)c->e[k].f.module : (const void *)c->e[k].kern;
			size_t i = ftext_home(c, ko, c->e[k].pc, c->e[k].addr);
			while (c->slot[i])
				i = (i + 1) & (nslot - 1);
			c->slot[i] = (uint32_t)k + 1;
		}
	}
	size_t i = ftext_home(c, owner, pc, addr);
	while (c->slot[i])
		i = (i + 1) & (c->nslot - 1);
	uint32_t id = (uint32_t)c->n++;
	c->slot[i] = id + 1;
	struct ftext_ent *e = &c->e[id];
	memset(e, 0, sizeof(*e));
	if (f)
		e->f = *f;
	else
		e->f.pc = kpc;
	e->kern = kern;
	e->mkey = mkey;
	e->pc = pc;
	e->addr = addr;
	*isnew = true;
	return id;
}

static void format_frame(struct wbuf *w, struct uw_session *s, const struct ftext_ent *e,
                         const struct uw_script_opts *o)
{
	if (e->mkey == 1)
		script_kernel_frame(w, s, e->kern, e->f.pc, o);
	else
		script_user_frame(w, s, &e->f, o);
}

/* Writes frame id's lines, formatting them the first time. */
static void ftext_write(struct wbuf *w, struct ftext *c, struct uw_session *s, uint32_t id,
                        const struct uw_script_opts *o)
{
	struct ftext_ent *e = &c->e[id];
	if (!e->formatted) {
		if (c->text.n > FTEXT_MAX_BYTES) { /* a long run: texts dropped, formatted again */
			for (size_t k = 0; k < c->n; k++)
				c->e[k].formatted = false;
			c->text.n = 0;
		}
		size_t off = c->text.n;
		format_frame(&c->text, s, e, o);
		if (c->text.oom || c->text.n - off >= UINT32_MAX) { /* not kept: written directly */
			c->text.oom = false;
			c->text.n = off;
			format_frame(w, s, e, o);
			return;
		}
		e->off = off;
		e->len = (uint32_t)(c->text.n - off);
		e->formatted = true;
	}
	wb_mem(w, c->text.b + e->off, e->len);
}

/* Writes a frame through the cache, or formatted in place without one (or without memory). */
static void script_frame(struct wbuf *w, struct ftext *c, struct uw_session *s, const struct uw_frame *f,
                         uint64_t kpc, struct uw_kernel *kern, const struct uw_script_opts *o)
{
	bool isnew;
	uint32_t id = c ? ftext_id(c, f, kpc, kern, &isnew) : UINT32_MAX;
	if (id != UINT32_MAX) {
		ftext_write(w, c, s, id, o);
	} else if (f) {
		script_user_frame(w, s, f, o);
	} else {
		script_kernel_frame(w, s, kern, kpc, o);
	}
}

/* perf script's one-line form of a sample without a callchain */
static void script_line(struct uw_session *s, FILE *out, const struct uw_sample *smp, const struct uw_script_opts *o)
{
	unsigned width = UW_MIN(o->event_width, 256u);
	char buf[4096];
	struct wbuf w = { .out = out, .b = buf, .cap = sizeof(buf) };
	struct uw_symbol sym;
	/* the comm right-aligned, the ip after the event */
	const char *comm = smp->comm ? smp->comm : ":-1";
	for (size_t cl = strlen(comm); cl < 16; cl++)
		wb_char(&w, ' ');
	wb_name(&w, comm);
	wb_char(&w, ' ');
	wb_dec(&w, smp->tid, 5, ' ');
	wb_char(&w, ' ');
	if (smp->has_cpu) {
		wb_char(&w, '[');
		wb_dec(&w, smp->cpu, 3, '0');
		wb_str(&w, "] ");
	}
	wb_dec(&w, smp->time / UINT64_C(1000000000), 5, ' ');
	wb_char(&w, '.');
	wb_dec(&w, (smp->time % UINT64_C(1000000000)) / UINT64_C(1000), 6, '0');
	wb_str(&w, ": ");
	wb_dec(&w, smp->period, 10, ' ');
	wb_char(&w, ' ');
	const char *ev = smp->event_name ? smp->event_name : "";
	for (size_t el = strlen(ev); el < width; el++)
		wb_char(&w, ' ');
	wb_str(&w, ev);
	wb_str(&w, ": ");
	/* the frame's line with a blank for its tab */
	if (smp->nr_kernel) {
		kernel_symbol(s, smp->recorded_kernel, smp->kernel[0], &sym);
		wb_frame_sep(&w, ' ', smp->kernel[0], sym.name, sym.offset, "[kernel.kallsyms]");
	} else if (smp->nr_user && smp->user[0].module) {
		const struct uw_frame *f = &smp->user[0];
		uw_symbolize(s, f->module, f->rel_pc, &sym);
		/* with no callchain perf shows the absolute address */
		wb_frame_sep(&w, ' ', f->pc, sym.name, sym.offset, uw_module_path(f->module));
	} else {
		wb_frame_sep(&w, ' ', smp->ip, NULL, 0, "[unknown]");
	}
	wb_flush(&w);
}

/* perf ends a stack its unwinding cut short, reading past the stack copy, with a frame at
 * address -1 (its unwinder's failed read): so does unwound, for a stack unwound from a copy
 * (a callchain read from a file has no such frame in perf either). */
static void script_cut_marker(struct wbuf *w, const struct uw_sample *smp)
{
	if (smp->nr_user && smp->stack_size &&
	    (smp->stop_reason == UW_STOP_STACK_EXHAUSTED || smp->stop_reason == UW_STOP_BAD_MEMORY))
		wb_str(w, "\tffffffffffffffff [unknown] ([unknown])\n");
}

/* The header line of a sample with a callchain. */
static void script_header(struct wbuf *w, const struct uw_sample *smp, const struct uw_script_opts *o)
{
	unsigned width = UW_MIN(o->event_width, 256u);
	wb_name(w, smp->comm ? smp->comm : ":-1");
	wb_char(w, ' ');
	wb_dec(w, smp->tid, 5, ' ');
	wb_char(w, ' ');
	if (smp->has_cpu) { /* as perf script: "[001]" when the event records the CPU */
		wb_char(w, '[');
		wb_dec(w, smp->cpu, 3, '0');
		wb_str(w, "] ");
	}
	wb_dec(w, smp->time / UINT64_C(1000000000), 5, ' ');
	wb_char(w, '.');
	wb_dec(w, (smp->time % UINT64_C(1000000000)) / UINT64_C(1000), 6, '0');
	wb_str(w, ": ");
	wb_dec(w, smp->period, 10, ' ');
	wb_char(w, ' ');
	const char *ev = smp->event_name ? smp->event_name : "";
	for (size_t el = strlen(ev); el < width; el++)
		wb_char(w, ' ');
	wb_str(w, ev);
	wb_str(w, ": \n");
}

/* A sample, its frames formatted in place or through the cache (may be NULL). The callchain
 * form is most of the output: formatted by hand into a buffer (vfprintf was a fifth of the
 * time of `report --script`). */
static int script_write(struct uw_session *s, FILE *out, const struct uw_sample *smp, const struct uw_script_opts *o,
                        struct ftext *cache)
{
	if (!smp->has_callchain) {
		script_line(s, out, smp, o);
		return prof_out_error(out);
	}
	char buf[16384];
	struct wbuf w = { .out = out, .b = buf, .cap = sizeof(buf) };
	script_header(&w, smp, o);
	for (uint32_t i = 0; i < smp->nr_kernel; i++)
		script_frame(&w, cache, s, NULL, smp->kernel[i], smp->recorded_kernel, o);
	for (uint32_t i = 0; i < smp->nr_user; i++)
		script_frame(&w, cache, s, &smp->user[i], 0, NULL, o);
	script_cut_marker(&w, smp);
	wb_char(&w, '\n');
	wb_flush(&w);
	return prof_out_error(out);
}

UW_API int uw_script_write_sample(struct uw_session *s, FILE *out, const struct uw_sample *smp,
                                  const struct uw_script_opts *opts)
{
	struct uw_script_opts o;
	struct uw_sample tmp;
	int oe = BASE_OPTS_COPY(&o, uw_script_opts, srcline, opts);
	if (oe)
		return oe;
	if (!(smp = prof_sample_in(smp, &tmp, &oe)))
		return oe;
	return script_write(s, out, smp, &o, NULL);
}

/* ---- the script writer that looks inline chains up ahead */

/* Samples are held back in windows of SW_WINDOW. The oldest window is written once the helper
 * has looked up every chain asked for up to its end, or when SW_MAX_WINDOWS windows or
 * SW_MAX_BYTES of copies are held: the first windows ask for most of a recording's distinct
 * pcs, so reading and unwinding go on far ahead while the helper catches up. */
#define SW_WINDOW 256
#define SW_MAX_WINDOWS 64
#define SW_MAX_BYTES ((size_t)32 << 20)

/* A held sample: its strings, and its frames' ids (a sample without a callchain: its arrays),
 * are copied into the window's buffer, which may move as it grows, so they are kept as offsets
 * (NONE: absent) and pointed to when written. */
#define NONE SIZE_MAX

struct sw_sample {
	struct uw_sample smp;
	size_t ids, kernel, user, comm, event_name;
};

struct sw_window {
	struct sw_sample *smp;  /* SW_WINDOW */
	size_t n;
	uint8_t *buf;
	size_t used, cap;
	size_t jobs;            /* lookups asked for up to the end of this window */
};

struct uw_script_writer {
	struct uw_session *s;
	FILE *out;
	struct uw_script_opts o;
	bool ahead;             /* inline chains are printed: ask for them ahead */
	struct sw_window win[SW_MAX_WINDOWS]; /* a ring: the oldest is written first */
	unsigned first, nwin;   /* the oldest window's slot; windows in use */
	size_t bytes;           /* copies held in the windows */
	struct ftext text;      /* the distinct frames and their lines */
	int err;
};

UW_API struct uw_script_writer *uw_script_writer_new(struct uw_session *s, FILE *out, const struct uw_script_opts *opts)
{
	struct uw_script_writer *w = calloc(1, sizeof(*w));
	if (!w) {
		errno = ENOMEM;
		return NULL;
	}
	int oe = BASE_OPTS_COPY(&w->o, uw_script_opts, srcline, opts);
	if (oe) {
		free(w);
		errno = -oe;
		return NULL;
	}
	w->o.sz = sizeof(w->o);
	w->s = s;
	w->out = out;
	w->ahead = !w->o.no_inline || w->o.srcline;
	return w;
}

/* Room for n bytes in the window's buffer. @return their offset, or NONE without memory. */
static size_t sw_alloc(struct uw_script_writer *w, struct sw_window *win, size_t n)
{
	if (n > win->cap - win->used) {
		size_t cap = win->cap ? win->cap : 16 * 1024;
		while (n > cap - win->used)
			cap *= 2;
		uint8_t *nb = realloc(win->buf, cap);
		if (!nb)
			return NONE;
		win->buf = nb;
		win->cap = cap;
	}
	size_t at = win->used, step = UW_MIN((n + 7) & ~(size_t)7, win->cap - at);
	win->used += step;
	w->bytes += step;
	return at;
}

static size_t sw_copy(struct uw_script_writer *w, struct sw_window *win, const void *p, size_t n)
{
	size_t at = sw_alloc(w, win, n);
	if (at != NONE)
		memcpy(win->buf + at, p, n);
	return at;
}

/* Writes the oldest window and empties it (its buffer is kept for reuse). */
static void sw_write_oldest(struct uw_script_writer *w)
{
	struct sw_window *win = &w->win[w->first];
	char buf[16384];
	struct wbuf out = { .out = w->out, .b = buf, .cap = sizeof(buf) };
	for (size_t i = 0; i < win->n && !w->err; i++) {
		const struct sw_sample *h = &win->smp[i];
		struct uw_sample c = h->smp;
		c.kernel = h->kernel == NONE ? NULL : (const uint64_t *)(win->buf + h->kernel);
		c.user = h->user == NONE ? NULL : (const struct uw_frame *)(win->buf + h->user);
		c.comm = h->comm == NONE ? NULL : (const char *)win->buf + h->comm;
		c.event_name = h->event_name == NONE ? NULL : (const char *)win->buf + h->event_name;
		if (!c.has_callchain) {
			wb_flush(&out);
			script_line(w->s, w->out, &c, &w->o);
			continue;
		}
		script_header(&out, &c, &w->o);
		const uint32_t *ids = (const uint32_t *)(win->buf + h->ids);
		for (uint32_t k = 0; k < c.nr_kernel + c.nr_user; k++)
			ftext_write(&out, &w->text, w->s, ids[k], &w->o);
		script_cut_marker(&out, &c);
		wb_char(&out, '\n');
	}
	wb_flush(&out);
	if (!w->err)
		w->err = prof_out_error(w->out);
	w->bytes -= win->used;
	win->n = 0;
	win->used = 0;
	w->first = (w->first + 1) % SW_MAX_WINDOWS;
	w->nwin--;
}

/* The frames' ids into the held sample, asking ahead for new frames' inline chains. */
static int sw_frames(struct uw_script_writer *w, struct sw_window *win, struct sw_sample *h, const struct uw_sample *smp)
{
	size_t n = (size_t)smp->nr_kernel + smp->nr_user;
	if ((h->ids = sw_alloc(w, win, n * sizeof(uint32_t))) == NONE)
		return -ENOMEM;
	for (size_t k = 0; k < n; k++) {
		const struct uw_frame *f = k < smp->nr_kernel ? NULL : &smp->user[k - smp->nr_kernel];
		bool isnew;
		uint32_t id = ftext_id(&w->text, f, f ? 0 : smp->kernel[k], smp->recorded_kernel, &isnew);
		if (id == UINT32_MAX)
			return -ENOMEM;
		memcpy(win->buf + h->ids + k * sizeof(uint32_t), &id, sizeof(id));
		if (isnew && f && f->module && uw_symbolize_inline_ahead(w->s, f->module, f->rel_pc - (f->is_call ? 1 : 0)))
			return -ENOMEM;
	}
	return 0;
}

UW_API int uw_script_writer_add(struct uw_script_writer *w, const struct uw_sample *smp)
{
	if (w->err)
		return w->err;
	struct uw_sample tmp;
	int err;
	if (!(smp = prof_sample_in(smp, &tmp, &err)))
		return err;
	if (!w->ahead) /* nothing to look up ahead: written at once */
		return w->err = script_write(w->s, w->out, smp, &w->o, &w->text);
	struct sw_window *win = w->nwin ? &w->win[(w->first + w->nwin - 1) % SW_MAX_WINDOWS] : NULL;
	if (!win || win->n == SW_WINDOW) {
		if (win)
			win->jobs = sym_inline_asked(w->s);
		/* write what is ready; and the oldest anyway when too much is held */
		while (w->nwin && (sym_inline_done(w->s, w->win[w->first].jobs) || w->nwin == SW_MAX_WINDOWS ||
				   w->bytes > SW_MAX_BYTES)) {
			sw_write_oldest(w);
			if (w->err)
				return w->err;
		}
		win = &w->win[(w->first + w->nwin) % SW_MAX_WINDOWS];
		if (!win->smp && !(win->smp = calloc(SW_WINDOW, sizeof(*win->smp))))
			return w->err = -ENOMEM;
		win->n = 0;
		win->used = 0;
		win->jobs = 0;
		w->nwin++;
	}
	struct sw_sample *h = &win->smp[win->n];
	h->smp = *smp;
	h->smp.stack = NULL; /* (not kept; its size says it was unwound from one) */
	h->ids = h->kernel = h->user = NONE;
	if (smp->has_callchain) {
		if (sw_frames(w, win, h, smp))
			return w->err = -ENOMEM;
	} else {
		h->kernel = smp->nr_kernel ? sw_copy(w, win, smp->kernel, smp->nr_kernel * sizeof(*smp->kernel)) : NONE;
		h->user = smp->nr_user ? sw_copy(w, win, smp->user, smp->nr_user * sizeof(*smp->user)) : NONE;
		if ((smp->nr_kernel && h->kernel == NONE) || (smp->nr_user && h->user == NONE))
			return w->err = -ENOMEM;
	}
	h->comm = smp->comm ? sw_copy(w, win, smp->comm, strlen(smp->comm) + 1) : NONE;
	h->event_name = smp->event_name ? sw_copy(w, win, smp->event_name, strlen(smp->event_name) + 1) : NONE;
	if ((smp->comm && h->comm == NONE) || (smp->event_name && h->event_name == NONE))
		return w->err = -ENOMEM;
	win->n++;
	return 0;
}

UW_API int uw_script_writer_close(struct uw_script_writer *w)
{
	if (!w)
		return 0;
	while (w->nwin)
		sw_write_oldest(w);
	int err = w->err;
	for (unsigned i = 0; i < SW_MAX_WINDOWS; i++) {
		free(w->win[i].smp);
		free(w->win[i].buf);
	}
	ftext_free(&w->text);
	free(w);
	return err;
}
