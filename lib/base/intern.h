/* SPDX-License-Identifier: MIT */
/* String interning: equal strings share one pointer, alive until base_intern_free. */
#ifndef UW_BASE_INTERN_H
#define UW_BASE_INTERN_H

#include <pthread.h>
#include <stddef.h>

#include "base/arena.h"
#include "base/map.h"

struct base_intern {
	struct base_map map; /* hash -> chain */
	struct base_arena arena;
};
void base_intern_init(struct base_intern *t);
const char *base_intern(struct base_intern *t, const char *s, size_t n);
void base_intern_free(struct base_intern *t);

/* ---- shared interning: the same from any thread. Strings go to one of BASE_STRINGS_SHARDS
 * tables by their hash, each behind a lock of its own (held for one lookup), so threads that
 * intern at once rarely wait on each other. Alive until base_strings_free. */
#define BASE_STRINGS_SHARDS 16
struct base_strings {
	struct base_strings_shard {
		pthread_mutex_t mu;
		struct base_intern t;
	} __attribute__((aligned(64))) shard[BASE_STRINGS_SHARDS];
};
void base_strings_init(struct base_strings *s);
/* NULL without memory. */
const char *base_strings_intern(struct base_strings *s, const char *str, size_t n);
void base_strings_free(struct base_strings *s);

#endif
