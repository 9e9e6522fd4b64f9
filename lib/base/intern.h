/* SPDX-License-Identifier: MIT */
/* String interning: equal strings share one pointer, alive until base_intern_free. */
#ifndef UW_BASE_INTERN_H
#define UW_BASE_INTERN_H

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

#endif
