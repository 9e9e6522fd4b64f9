/* SPDX-License-Identifier: MIT */
/*
 * The lookup of a pc's rule in a CFI table, inlined into its callers (the unwinder's every
 * frame). Apart from cfi.h because it calls into cfi_table.c (the lazy search, the cache's
 * slow paths), which includes cfi.h: callers include this header, cfi_table.c does not.
 */
#ifndef UW_CFI_FIND_H
#define UW_CFI_FIND_H

#include "cfi/cfi.h"

/* The search for the rule covering pc. @return false when none does. */
static inline bool cfi_table_search(struct cfi_table *t, uint64_t pc, const struct cfi_rule **rule)
{
	if (t->lazy)
		return cfi_lazy_find(t, pc, rule);
	return cfi_rows_search(t, pc, rule);
}

/* Finds the rule covering pc, through a lookup cache (NULL: none). @return false when none does.
 * (The hit path is every frame's: kept small, and inlined.) */
__attribute__((always_inline)) static inline bool cfi_table_find_cached(struct cfi_table *t, struct cfi_cache *c,
                                                                        uint64_t pc, const struct cfi_rule **rule)
{
	if (!c || !t->serial || pc == UINT64_MAX)
		return cfi_table_search(t, pc, rule);
	unsigned slot = (unsigned)t->serial & 63;
	struct cfi_cache_ent *ents = c->recent[slot].serial == t->serial ? c->recent[slot].ents
									 : cfi_cache_entries(c, t->serial);
	if (!ents)
		return cfi_table_search(t, pc, rule);
	struct cfi_cache_ent *e = &ents[base_hash64(pc) & ((1u << CFI_CACHE_BITS) - 1)];
	if (e->tag == pc + 1) {
		*rule = e->rule;
		return e->rule != NULL;
	}
	return cfi_cache_fill(t, e, pc, rule);
}

static inline bool cfi_table_find(struct cfi_table *t, uint64_t pc, const struct cfi_rule **rule)
{
	return cfi_table_search(t, pc, rule);
}

#endif
