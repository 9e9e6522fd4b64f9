/* SPDX-License-Identifier: MIT */
/*
 * Folded stacks (FlameGraph's stackcollapse output): `comm;outermost;...;innermost weight`, one
 * line per distinct list of names, in the order stacks were first seen. Stacks whose addresses
 * differ but whose names agree are merged.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "profile/profile_internal.h"

uint32_t prof_stack_names(struct uw_profile *p, const struct pstack *st, const char **names, uint64_t *hash)
{
	/* names are interned: a line is identified by its name pointers */
	uint64_t h = base_hash64((uintptr_t)st->comm);
	uint32_t nn = 0;
	for (uint32_t k = 0; k < st->n; k++) {
		const char *lv[MAX_LEVELS];
		unsigned m = prof_frame_levels(p, &st->f[st->n - 1 - k], lv, false);
		for (unsigned j = m; j-- > 0;) { /* outermost first */
			names[nn] = lv[j];
			h = base_hash64(h ^ (uintptr_t)names[nn]) + nn;
			nn++;
		}
	}
	*hash = h;
	return nn;
}

struct fline {
	struct fline *next;
	uint64_t hash, weight;
	const char *comm;
	uint32_t n;
	const char **names; /* outermost first */
};

UW_API int uw_profile_write_folded(struct uw_profile *p, FILE *out)
{
	struct base_map lines;
	struct base_vec order = BASE_VEC_INIT(struct fline *);
	struct base_arena ar;
	base_map_init(&lines);
	base_arena_init(&ar, 64 * 1024);
	int err = 0;
	struct pstack **sv = p->order.data;
	for (size_t i = 0; i < p->order.len && !err; i++) {
		struct pstack *st = sv[i];
		size_t cap = (size_t)(st->n ? st->n : 1) * ((p->o.inline_frames || p->o.by_line) ? MAX_LEVELS : 1);
		const char **names = base_arena_alloc(&ar, cap * sizeof(*names));
		if (!names) {
			err = -ENOMEM;
			break;
		}
		uint64_t h;
		uint32_t nn = prof_stack_names(p, st, names, &h);
		uint64_t w = pstack_weight(p, st, false);
		struct fline *head = base_map_get(&lines, h), *l;
		for (l = head; l; l = l->next)
			if (l->n == nn && l->comm == st->comm && !memcmp(l->names, names, nn * sizeof(*names)))
				break;
		if (l) {
			l->weight += w;
			continue;
		}
		l = base_arena_alloc(&ar, sizeof(*l));
		struct fline **slot = base_vec_push(&order);
		if (!l || !slot || base_map_put(&lines, h, l)) {
			err = -ENOMEM;
			break;
		}
		*l = (struct fline){ head, h, w, st->comm, nn, names };
		*slot = l;
	}
	struct fline **lv = order.data;
	for (size_t i = 0; i < order.len && !err; i++) {
		/* (';' in a name as ':', control characters as '?': no fake frame, no line without
		 * its count) */
		prof_put_name(out, lv[i]->comm ? lv[i]->comm : "[unknown]", true);
		for (uint32_t k = 0; k < lv[i]->n; k++) {
			fputc(';', out);
			prof_put_name(out, lv[i]->names[k], true);
		}
		fprintf(out, " %" PRIu64 "\n", lv[i]->weight);
	}
	base_map_free(&lines);
	base_vec_free(&order);
	base_arena_free(&ar);
	if (!err)
		err = prof_out_error(out);
	return err;
}
