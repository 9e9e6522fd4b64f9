/* SPDX-License-Identifier: MIT */
/*
 * A profile: distinct stacks with their sample counts and periods, per event (and per thread
 * when a writer groups by thread). Frames are (module, address) pairs, so the cost of
 * symbolization is paid once per distinct address when a writer names them. profile.c interns
 * stacks and names frames; each writer has a file of its own (folded.c, table.c).
 */
#ifndef UW_PROFILE_INTERNAL_H
#define UW_PROFILE_INTERNAL_H

#include <errno.h>

#include "process/tracker.h"

struct pframe {
	union {
		struct uw_module *mod;  /* user: NULL when unmapped */
		struct uw_kernel *kern; /* kernel (kernel set): its recording's, NULL: the session's; a
		                         * frame's key compares it as mod */
	};
	uint64_t addr;          /* user: module address (callers at ra - 1); kernel: address */
	uint64_t map_addr;
	bool kernel;
};

/* The one frame of a stack of lost samples (uw_sample.stop_reason UW_STOP_LOST): no module, an
 * address no user frame has (user addresses are below 2^47 on x86_64), one per cause
 * (uw_sample.lost_cause): PFRAME_LOST less the cause. */
#define PFRAME_LOST UINT64_MAX
#define PFRAME_LOST_LOW (PFRAME_LOST - 31) /* (room for causes: the lowest such address) */
static inline bool pframe_lost(const struct pframe *f)
{
	return !f->kernel && !f->mod && f->addr >= PFRAME_LOST_LOW;
}
static inline uint64_t pframe_lost_addr(uint32_t cause)
{
	return PFRAME_LOST - (cause < UW_LOST__COUNT ? cause : 0);
}
#define PFRAME_LOST_NAME "[lost samples]"
/* The frame's name: "[lost samples]", or with its cause ("[lost samples: ring full]") */
static inline const char *pframe_lost_name(const struct pframe *f)
{
	static const char *const names[UW_LOST__COUNT] = {
		[UW_LOST_UNSTATED] = PFRAME_LOST_NAME,
		[UW_LOST_RING_FULL] = "[lost samples: ring full]",
		[UW_LOST_SIGNALS_BLOCKED] = "[lost samples: signals blocked]",
		[UW_LOST_THREAD_ENDED] = "[lost samples: thread ended]",
		[UW_LOST_PROFILER_STOPPED] = "[lost samples: profiler stopped]",
	};
	uint64_t c = PFRAME_LOST - f->addr;
	return c < UW_LOST__COUNT && names[c] ? names[c] : PFRAME_LOST_NAME;
}

struct pstack {
	struct pstack *next;    /* hash chain */
	uint64_t hash;
	const char *comm;
	uint32_t event;         /* index into the profile's events */
	int32_t pid, tid;       /* with by_thread, else 0 */
	uint64_t samples, period;
	uint32_t n;
	struct pframe f[];      /* outermost last: f[0] is the innermost frame */
};

/* A sample in the order added (opts.keep_order). */
struct psample {
	uint64_t time, period;
	struct pstack *st;
};

struct pevent {
	uint32_t attr_index;
	const char *name;
	uint64_t samples, period;
};

struct uw_profile {
	struct uw_session *s;
	struct uw_profile_opts o;
	struct base_arena arena;
	struct base_map stacks; /* hash -> chain */
	struct base_vec order;  /* struct pstack *, insertion order */
	struct base_vec events; /* struct pevent, in order of first sample */
	struct base_vec samples; /* struct psample (opts.keep_order) */
	uint64_t nsamples;
	struct pframe *scratch;
	size_t scratch_cap;
	const struct uw_kernel *kernel_wanted; /* the last kernel ksym_kernel_want was told of */
	struct base_map names; /* hash(frame) -> struct name_ent chain: one lookup per distinct frame */
	struct base_map levels; /* hash(frame) -> struct lvl_ent chain (names.c) */
	struct base_arena name_arena;
};

/* The error of a stream that failed to write: the reason stdio met (disk full, ...). */
static inline int prof_out_error(FILE *f)
{
	return ferror(f) ? (errno > 0 ? -errno : -EIO) : 0;
}

/* Most levels a frame's inline chain gives. */
#define MAX_LEVELS 64

/* A stack's weight, as the writer's opts choose (default_period: the writer's default). */
static inline uint64_t pstack_weight(const struct uw_profile *p, const struct pstack *st, bool default_period)
{
	int w = p->o.weight;
	bool period = w == UW_WEIGHT_PERIOD || (w == UW_WEIGHT_DEFAULT && default_period);
	return period ? st->period : st->samples;
}

/* The symbol of a kernel frame, named with its recording's kernel. */
static inline void prof_kernel_symbol(struct uw_session *s, const struct pframe *f, struct uw_symbol *sym)
{
	if (f->kern)
		uw_kernel_symbolize(f->kern, f->addr, sym);
	else
		uw_symbolize_kernel(s, f->addr, sym);
}

/* A frame's display name (interned: names compare by pointer), "[unknown]" or "[module]"
 * without a symbol; kernel names with FlameGraph's "_[k]" suffix when kernel_suffix. */
const char *prof_frame_name(struct uw_profile *p, const struct pframe *f);
/* The symbol's name alone (NULL without one). */
const char *prof_frame_symbol(struct uw_profile *p, const struct pframe *f);
/* The display names of a frame, innermost first: one, or with inline_frames the inlined
 * functions then the containing one; with by_line each carries its file:line. Interned. */
unsigned prof_frame_levels(struct uw_profile *p, const struct pframe *f, const char **names, bool table);
/* A stack's names as folded stacks show them, outermost first, into names (room for st->n *
 * MAX_LEVELS with inline frames, else st->n), and a hash of them and the comm. @return the count. */
uint32_t prof_stack_names(struct uw_profile *p, const struct pstack *st, const char **names, uint64_t *hash);
/* The frame's source position as perf's srcline sort key shows it: "file.c:12", else
 * "symbol+offset" (decimal), else "module[address]". Interned. */
const char *prof_frame_srcline(struct uw_profile *p, const struct pframe *f);

/* Frames as viewers show them (speedscope, the flame graph): one per function, or per source
 * line with opts.by_line, with its module, source file and kind; a profile frame (an address)
 * gives one, or with opts.inline_frames one per inline level. Numbered in order of first use. */
enum dframe_kind { DF_USER, DF_KERNEL, DF_JIT, DF_INLINED, DF_UNKNOWN };
struct dframe {
	const char *name;       /* interned */
	const char *module;     /* interned basename, or NULL */
	const char *file;       /* source file (full path), or NULL */
	uint32_t line;          /* with opts.by_line, else 0 */
	uint8_t kind;           /* enum dframe_kind */
};
struct frametab {
	struct uw_profile *p;
	struct base_vec frames; /* struct dframe */
	struct base_map ids;    /* hash of a dframe -> struct dfent chain */
	struct base_map levels; /* hash of a pframe -> struct dflev chain */
	struct base_arena ar;
};
void frametab_init(struct frametab *t, struct uw_profile *p);
void frametab_free(struct frametab *t);
/* The viewer frames of a profile frame, innermost first (*ids valid until frametab_free).
 * @return the count (at least 1), or 0 when out of memory. */
unsigned frametab_levels(struct frametab *t, const struct pframe *f, const uint32_t **ids);
static inline const struct dframe *frametab_get(const struct frametab *t, uint32_t id)
{
	return base_vec_at(&t->frames, id);
}

/* The kind of time an event's periods are, in nanoseconds: "cpu" (cpu-clock, task-clock, with
 * or without a modifier), "off-cpu" (offcpu-time: record --off-cpu's, perf record --off-cpu's),
 * "wall" (report --wall's sum of both; wall-clock, libunwound-prof's wall time); NULL for an
 * event whose periods are counts. */
static inline const char *prof_time_kind(const char *ev)
{
	if (!ev)
		return NULL;
	if (!strncmp(ev, "cpu-clock", 9) || !strncmp(ev, "task-clock", 10))
		return "cpu";
	if (!strcmp(ev, "offcpu-time"))
		return "off-cpu";
	if (!strcmp(ev, "wall") || !strncmp(ev, "wall-clock", 10))
		return "wall";
	return NULL;
}

/* Are the profile's (first) event's periods nanoseconds? */
static inline bool prof_clock_event(const struct uw_profile *p)
{
	const char *ev = p->events.len ? ((const struct pevent *)p->events.data)[0].name : NULL;
	return prof_time_kind(ev) != NULL;
}

/* A number in a JSON list: ",N", or "N" when first (the lists are long: no printf). */
static inline void prof_json_num(FILE *out, uint64_t v, bool first)
{
	char buf[24], *e = buf + sizeof(buf), *q = e;
	do {
		*--q = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	if (!first)
		*--q = ',';
	fwrite_unlocked(q, 1, (size_t)(e - q), out);
}

/* Bytes of the well-formed UTF-8 sequence at u (RFC 3629 §4: no overlong form, no surrogate,
 * nothing past U+10FFFF), 1 for ASCII; 0 when the bytes there are not one. Reads no further
 * than the first byte that breaks it (a NUL ends a string). */
static inline unsigned prof_utf8_len(const unsigned char *u)
{
	unsigned c = u[0], lo = 0x80, hi = 0xbf;
	if (c < 0x80)
		return 1;
	if (c < 0xc2 || c > 0xf4)
		return 0;
	if (c < 0xe0)
		return (u[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c == 0xe0)
		lo = 0xa0; /* (overlong) */
	else if (c == 0xed)
		hi = 0x9f; /* (surrogates) */
	else if (c == 0xf0)
		lo = 0x90; /* (overlong) */
	else if (c == 0xf4)
		hi = 0x8f; /* (past U+10FFFF) */
	if (u[1] < lo || u[1] > hi || (u[2] & 0xc0) != 0x80)
		return 0;
	if (c < 0xf0)
		return 3;
	return (u[3] & 0xc0) == 0x80 ? 4 : 0;
}

/* JSON string (quoted, escaped): well-formed UTF-8 copied, any other byte as U+FFFD; '<', '>'
 * and '&' escaped (the JSON sits in an HTML script element, where "<!--" or "</script" in a
 * name would change what the page parses), and U+2028/U+2029 (line ends to JavaScript). */
void prof_json_str(FILE *out, const char *s);

/* A name (function, thread, module, file) written into a text output: control characters (a
 * line break in a name would start a line of its own) as '?'; with folded also ';' (the frame
 * separator) as ':', as FlameGraph's stackcollapse-perf.pl does. Other bytes are copied. */
void prof_put_name(FILE *out, const char *s, bool folded);
/* The same in place, in a string the caller owns. */
void prof_clean_name(char *s, bool folded);
static inline bool prof_name_byte_ok(unsigned char c, bool folded)
{
	return c >= 0x20 && c != 0x7f && !(folded && c == ';');
}

/* A sample given by a caller, as this library's struct: read as far as its sz says (a caller
 * built against an older header has a shorter one), the rest zero. NULL when sz is too small
 * for the first version's fields. */
static inline const struct uw_sample *prof_sample_in(const struct uw_sample *smp, struct uw_sample *tmp, int *err)
{
	*err = -EINVAL;
	if (!smp || smp->sz < offsetof(struct uw_sample, stack_size) + sizeof(smp->stack_size))
		return NULL;
	/* (a newer caller's larger one: what this library does not know must be zero) */
	if ((*err = BASE_OPTS_CHECK(smp, uw_sample, lost_cause)))
		return NULL;
	if (smp->sz >= sizeof(*tmp))
		return smp;
	memset(tmp, 0, sizeof(*tmp));
	memcpy(tmp, smp, smp->sz);
	tmp->sz = sizeof(*tmp);
	return tmp;
}

#endif
