/* SPDX-License-Identifier: MIT */
/*
 * Profiles: stack interning. A stack is interned by (event, comm, [pid, tid], frames); frames
 * are (module, address) pairs, named once per distinct frame when a writer asks (names.c).
 * Each writer has its file: folded.c, table.c (perf report's tables), script.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>

#include "profile/profile_internal.h"

UW_API struct uw_profile *uw_profile_new(struct uw_session *s, const struct uw_profile_opts *opts)
{
	if (!s) {
		errno = EINVAL;
		return NULL;
	}
	struct uw_profile *p = calloc(1, sizeof(*p));
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	int oe = BASE_OPTS_COPY(&p->o, uw_profile_opts, keep_order, opts);
	if (oe || p->o.weight < UW_WEIGHT_DEFAULT || p->o.weight > UW_WEIGHT_PERIOD) {
		free(p);
		errno = oe ? -oe : EINVAL;
		return NULL;
	}
	p->s = s;
	base_arena_init(&p->arena, 256 * 1024);
	base_arena_init(&p->name_arena, 64 * 1024);
	base_map_init(&p->names);
	base_map_init(&p->levels);
	base_map_init(&p->stacks);
	p->order = BASE_VEC_INIT(struct pstack *);
	p->events = BASE_VEC_INIT(struct pevent);
	p->samples = BASE_VEC_INIT(struct psample);
	return p;
}

UW_API void uw_profile_free(struct uw_profile *p)
{
	if (!p)
		return;
	base_arena_free(&p->arena);
	base_arena_free(&p->name_arena);
	base_map_free(&p->names);
	base_map_free(&p->levels);
	base_map_free(&p->stacks);
	base_vec_free(&p->order);
	base_vec_free(&p->events);
	base_vec_free(&p->samples);
	free(p->scratch);
	free(p);
}

UW_API uint64_t uw_profile_nr_stacks(const struct uw_profile *p)
{
	return p->order.len;
}

UW_API uint64_t uw_profile_nr_samples(const struct uw_profile *p)
{
	return p->nsamples;
}

UW_API unsigned uw_profile_nr_events(const struct uw_profile *p)
{
	return (unsigned)p->events.len;
}

UW_API const char *uw_profile_event_name(const struct uw_profile *p, unsigned i)
{
	return i < p->events.len ? ((const struct pevent *)p->events.data)[i].name : NULL;
}

/* The profile's index of the sample's event, added at its first sample. */
static int event_index(struct uw_profile *p, const struct uw_sample *smp, uint32_t *out)
{
	struct pevent *ev = p->events.data;
	for (size_t i = 0; i < p->events.len; i++) {
		if (ev[i].attr_index == smp->attr_index) {
			*out = (uint32_t)i;
			return 0;
		}
	}
	struct pevent *ne = base_vec_push(&p->events);
	if (!ne)
		return -ENOMEM;
	ne->attr_index = smp->attr_index;
	ne->name = smp->event_name ? session_intern(p->s, smp->event_name, strlen(smp->event_name)) : "";
	*out = (uint32_t)(p->events.len - 1);
	return 0;
}

static int keep_sample(struct uw_profile *p, const struct uw_sample *smp, struct pstack *st)
{
	if (!p->o.keep_order)
		return 0;
	struct psample *ps = base_vec_push(&p->samples);
	if (!ps)
		return -ENOMEM;
	ps->time = smp->time;
	ps->period = smp->period;
	ps->st = st;
	return 0;
}

UW_API int uw_profile_add(struct uw_profile *p, const struct uw_sample *in)
{
	struct uw_sample tmp;
	int err;
	const struct uw_sample *smp = prof_sample_in(in, &tmp, &err);
	if (!smp)
		return err;
	if (!p)
		return -EINVAL;
	bool lost = smp->stop_reason == UW_STOP_LOST;
	size_t nk = p->o.no_kernel || lost ? 0 : smp->nr_kernel, n = lost ? 1 : nk + smp->nr_user;
	if (n > p->scratch_cap) {
		struct pframe *ns = realloc(p->scratch, n * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		p->scratch = ns;
		p->scratch_cap = n;
	}
	uint32_t event;
	if (event_index(p, smp, &event))
		return -ENOMEM;
	struct pevent *pe = &((struct pevent *)p->events.data)[event];
	/* every sum a profile makes (stacks, rows, trees, sides) is one event's samples' or fewer:
	 * none wraps when this one does not */
	if (pe->period + smp->period < pe->period)
		return -EOVERFLOW;
	pe->samples++;
	pe->period += smp->period;
	int32_t pid = p->o.by_thread ? (int32_t)smp->pid : 0, tid = p->o.by_thread ? (int32_t)smp->tid : 0;
	/* kernel frames to name: their symbols are read ahead from now (never for a profile
	 * without them) */
	if (nk && smp->recorded_kernel != p->kernel_wanted) {
		ksym_kernel_want(smp->recorded_kernel);
		p->kernel_wanted = smp->recorded_kernel;
	}
	struct pframe *f = p->scratch;
	uint64_t h = base_hash64((uintptr_t)smp->comm ^ ((uint64_t)event << 48) ^ ((uint64_t)(uint32_t)tid << 16) ^
				 (uint32_t)pid);
	for (size_t i = 0; i < nk; i++) {
		f[i] = (struct pframe){ .kern = smp->recorded_kernel, .addr = smp->kernel[i], .map_addr = smp->kernel[i],
					.kernel = true };
		h = base_hash64(h ^ smp->kernel[i] ^ (uintptr_t)smp->recorded_kernel) + 1;
	}
	if (lost) {
		f[0] = (struct pframe){ .mod = NULL, .addr = pframe_lost_addr(smp->lost_cause), .map_addr = 0, .kernel = false };
		h = base_hash64(h ^ f[0].addr) + 3;
	}
	for (size_t i = 0; !lost && i < smp->nr_user; i++) {
		const struct uw_frame *u = &smp->user[i];
		struct pframe *pf = &f[nk + i];
		pf->mod = u->module;
		pf->addr = u->module ? u->rel_pc - u->is_call : u->pc - u->is_call;
		pf->map_addr = u->map_addr - u->is_call;
		pf->kernel = false;
		/* (a caller at pc 0 of a damaged recording, outside every mapping: never the lost
		 * samples' frame; named "[unknown]" as any such frame) */
		if (!pf->mod && pf->addr >= PFRAME_LOST_LOW)
			pf->addr = PFRAME_LOST_LOW - 1;
		h = base_hash64(h ^ pf->addr ^ (uintptr_t)pf->mod) + 3;
	}
	p->nsamples++;
	struct pstack *head = base_map_get(&p->stacks, h);
	for (struct pstack *st = head; st; st = st->next) {
		if (st->n != n || st->comm != smp->comm || st->event != event || st->pid != pid || st->tid != tid)
			continue;
		bool same = true;
		for (size_t i = 0; i < n && same; i++)
			same = st->f[i].mod == f[i].mod && st->f[i].addr == f[i].addr && st->f[i].kernel == f[i].kernel;
		if (same) {
			st->samples++;
			st->period += smp->period;
			return keep_sample(p, smp, st);
		}
	}
	struct pstack *st = base_arena_alloc(&p->arena, sizeof(*st) + n * sizeof(struct pframe));
	struct pstack **slot = base_vec_push(&p->order);
	if (!st || !slot)
		return -ENOMEM;
	st->next = head;
	st->hash = h;
	st->comm = smp->comm;
	st->event = event;
	st->pid = pid;
	st->tid = tid;
	st->samples = 1;
	st->period = smp->period;
	st->n = (uint32_t)n;
	if (n)
		memcpy(st->f, f, n * sizeof(*f));
	*slot = st;
	/* a new stack: its inline chains are looked up on the helper thread while reading goes on */
	if (p->o.inline_frames || p->o.by_line) {
		for (size_t i = nk; i < n; i++) {
			if (f[i].mod && uw_symbolize_inline_ahead(p->s, f[i].mod, f[i].addr))
				return -ENOMEM;
		}
	}
	if (base_map_put(&p->stacks, h, st))
		return -ENOMEM;
	return keep_sample(p, smp, st);
}
