/* SPDX-License-Identifier: MIT */
/* Checked allocation and the options structs of the public API. */
#ifndef UW_BASE_ALLOC_H
#define UW_BASE_ALLOC_H

#include <stddef.h>

/* realloc of n elements of size bytes: NULL on overflow or failure, never abort */
void *base_realloc_array(void *p, size_t n, size_t size);

/* Options structs (first field size_t sz): copy what the caller's version has, zero the rest; a
 * newer caller's unknown trailing bytes must be zero. @return 0 or -EINVAL. A NULL src gives all
 * defaults. */
int base_opts_copy(void *dst, size_t dst_size, const void *src);

#endif
