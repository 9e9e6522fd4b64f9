/* SPDX-License-Identifier: MIT */
/* Growable vector of fixed-size elements. */
#include "base/vec.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

int base_vec_reserve(struct base_vec *v, size_t n)
{
	if (n <= v->cap)
		return 0;
	size_t cap = v->cap ? v->cap : 8;
	while (cap < n) {
		if (cap > SIZE_MAX / 2)
			return -ENOMEM;
		cap *= 2;
	}
	void *d = base_realloc_array(v->data, cap, v->elem);
	if (!d)
		return -ENOMEM;
	v->data = d;
	v->cap = cap;
	return 0;
}

void *base_vec_push(struct base_vec *v)
{
	if (v->len == v->cap && base_vec_reserve(v, v->len + 1))
		return NULL;
	void *p = base_vec_at(v, v->len++);
	memset(p, 0, v->elem);
	return p;
}

void base_vec_free(struct base_vec *v)
{
	free(v->data);
	v->data = NULL;
	v->len = v->cap = 0;
}
