/* SPDX-License-Identifier: MIT */
/* Growable vector of fixed-size elements. */
#ifndef UW_BASE_VEC_H
#define UW_BASE_VEC_H

#include <stddef.h>

struct base_vec {
	void *data;
	size_t len, cap, elem;
};
#define BASE_VEC_INIT(type) ((struct base_vec){ NULL, 0, 0, sizeof(type) })
int base_vec_reserve(struct base_vec *v, size_t n); /* capacity for n elements in total */
void *base_vec_push(struct base_vec *v);             /* zeroed new slot, NULL on OOM */
static inline void *base_vec_at(const struct base_vec *v, size_t i)
{
	return (char *)v->data + i * v->elem;
}
void base_vec_free(struct base_vec *v);

#endif
