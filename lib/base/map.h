/* SPDX-License-Identifier: MIT */
/* Open-addressing hash map from uint64_t keys to pointers (key 0 allowed). */
#ifndef UW_BASE_MAP_H
#define UW_BASE_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct base_map_ent {
	uint64_t key;
	void *val;
};
struct base_map {
	struct base_map_ent *ents;
	size_t cap, len; /* cap is a power of two */
	bool free_key_used; /* the key that marks a free slot, put (kept apart) */
	void *free_key_val;
};
void base_map_init(struct base_map *m);
void *base_map_get(const struct base_map *m, uint64_t key);
bool base_map_has(const struct base_map *m, uint64_t key);
int base_map_put(struct base_map *m, uint64_t key, void *val);
/* Room for n keys in all without growing (puts up to then do not rehash). @return 0, -ENOMEM. */
int base_map_reserve(struct base_map *m, size_t n);
void *base_map_del(struct base_map *m, uint64_t key);
void base_map_free(struct base_map *m);
/* Iterates: for (size_t i = 0; base_map_next(m, &i, &k, &v); ) */
bool base_map_next(const struct base_map *m, size_t *it, uint64_t *key, void **val);

#endif
