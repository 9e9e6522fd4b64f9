/* SPDX-License-Identifier: MIT */
/* String interning: a map from a string's hash to a chain of entries in an arena. */
#include "base/intern.h"

#include <stdint.h>
#include <string.h>

#include "base/hash.h"

struct intern_ent {
	struct intern_ent *next;
	size_t len;
	char str[];
};

void base_intern_init(struct base_intern *t)
{
	base_map_init(&t->map);
	base_arena_init(&t->arena, 64 * 1024);
}

const char *base_intern(struct base_intern *t, const char *s, size_t n)
{
	uint64_t h = base_hash_bytes(s, n);
	struct intern_ent *head = base_map_get(&t->map, h);
	for (struct intern_ent *e = head; e; e = e->next)
		if (e->len == n && memcmp(e->str, s, n) == 0)
			return e->str;
	struct intern_ent *e = base_arena_alloc(&t->arena, sizeof(*e) + n + 1);
	if (!e)
		return NULL;
	e->len = n;
	memcpy(e->str, s, n);
	e->str[n] = 0;
	e->next = head;
	if (base_map_put(&t->map, h, e))
		return NULL;
	return e->str;
}

void base_intern_free(struct base_intern *t)
{
	base_map_free(&t->map);
	base_arena_free(&t->arena);
}
