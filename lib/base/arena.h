/* SPDX-License-Identifier: MIT */
/* Arena: bump allocation in chunks, freed all at once. */
#ifndef UW_BASE_ARENA_H
#define UW_BASE_ARENA_H

#include <stddef.h>

struct base_arena {
	struct base_arena_chunk *head;
	size_t chunk_size;
	size_t total;
};
void base_arena_init(struct base_arena *a, size_t chunk_size);
void *base_arena_alloc(struct base_arena *a, size_t n); /* 16-byte aligned */
char *base_arena_strndup(struct base_arena *a, const char *s, size_t n);
void base_arena_free(struct base_arena *a);

#endif
