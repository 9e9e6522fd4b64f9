/* SPDX-License-Identifier: MIT */
/* String interning: a map from a string's hash to a chain of entries in an arena; shared
 * interning over sharded tables, each under its lock. */
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

static const char *intern_hashed(struct base_intern *t, const char *s, size_t n, uint64_t h)
{
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

const char *base_intern(struct base_intern *t, const char *s, size_t n)
{
	return intern_hashed(t, s, n, base_hash_bytes(s, n));
}

void base_intern_free(struct base_intern *t)
{
	base_map_free(&t->map);
	base_arena_free(&t->arena);
}

void base_strings_init(struct base_strings *s)
{
	for (unsigned i = 0; i < BASE_STRINGS_SHARDS; i++) {
		pthread_mutex_init(&s->shard[i].mu, NULL);
		base_map_init(&s->shard[i].t.map);
		base_arena_init(&s->shard[i].t.arena, 16 * 1024);
	}
}

const char *base_strings_intern(struct base_strings *s, const char *str, size_t n)
{
	uint64_t h = base_hash_bytes(str, n);
	/* (the map takes the hash's low bits: the shard its high ones) */
	struct base_strings_shard *sh = &s->shard[h >> 60 & (BASE_STRINGS_SHARDS - 1)];
	pthread_mutex_lock(&sh->mu);
	const char *r = intern_hashed(&sh->t, str, n, h);
	pthread_mutex_unlock(&sh->mu);
	return r;
}

void base_strings_free(struct base_strings *s)
{
	for (unsigned i = 0; i < BASE_STRINGS_SHARDS; i++) {
		base_intern_free(&s->shard[i].t);
		pthread_mutex_destroy(&s->shard[i].mu);
	}
}
