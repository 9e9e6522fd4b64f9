/* SPDX-License-Identifier: MIT */
/* Arena: bump allocation in chunks, freed all at once. */
#include "base/arena.h"

#include <stdlib.h>
#include <string.h>

struct base_arena_chunk {
	struct base_arena_chunk *next;
	size_t used, cap;
	_Alignas(16) unsigned char data[];
};

void base_arena_init(struct base_arena *a, size_t chunk_size)
{
	a->head = NULL;
	a->chunk_size = chunk_size ? chunk_size : 64 * 1024;
	a->total = 0;
}

void *base_arena_alloc(struct base_arena *a, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (n == 0)
		n = 16;
	struct base_arena_chunk *c = a->head;
	if (!c || c->cap - c->used < n) {
		size_t cap = n > a->chunk_size / 2 ? n : a->chunk_size;
		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->cap = cap;
		c->used = 0;
		if (a->head && n > a->chunk_size / 2) {
			/* keep filling the current chunk: put the big one behind it */
			c->next = a->head->next;
			a->head->next = c;
		} else {
			c->next = a->head;
			a->head = c;
		}
		a->total += cap;
	}
	void *p = c->data + c->used;
	c->used += n;
	return p;
}

char *base_arena_strndup(struct base_arena *a, const char *s, size_t n)
{
	char *p = base_arena_alloc(a, n + 1);
	if (p) {
		memcpy(p, s, n);
		p[n] = 0;
	}
	return p;
}

void base_arena_free(struct base_arena *a)
{
	struct base_arena_chunk *c = a->head;
	while (c) {
		struct base_arena_chunk *n = c->next;
		free(c);
		c = n;
	}
	a->head = NULL;
	a->total = 0;
}
