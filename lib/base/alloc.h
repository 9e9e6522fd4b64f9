/* SPDX-License-Identifier: MIT */
/* Checked allocation and the options structs of the public API. */
#ifndef UW_BASE_ALLOC_H
#define UW_BASE_ALLOC_H

#include <stddef.h>

/* realloc of n elements of size bytes: NULL on overflow or failure, never abort */
void *base_realloc_array(void *p, size_t n, size_t size);

/* Options structs (first field size_t sz), as libbpf's OPTS_VALID: what the caller's version has
 * is used, the rest defaults (zero). known is the end of the last field this library knows
 * (BASE_OPTS_END), not sizeof: a caller's struct may be larger (a newer header's) only if every
 * byte past known is zero, the padding after the last field too (a field added there later would
 * otherwise be ignored unsaid).
 * base_opts_check: @return 0, -EINVAL (NULL, or sz smaller than the size field), -E2BIG (a
 * non-zero byte past known). base_opts_copy: the same, and src copied into dst (dst_size bytes,
 * zero-filled past what src has, dst's sz set to dst_size); a NULL src gives all defaults.
 * Every options check goes through these (BASE_OPTS_COPY, BASE_OPTS_CHECK). */
int base_opts_check(const void *src, size_t known);
int base_opts_copy(void *dst, size_t dst_size, size_t known, const void *src);
/* The end of struct T's last field, which must be `last` (checked at compile time: less than the
 * struct's alignment lies after it). */
#define BASE_OPTS_END(T, last)                                                                        \
	(offsetof(struct T, last) + sizeof(((struct T *)0)->last) +                                   \
	 0 * sizeof(struct {                                                                           \
		 _Static_assert(sizeof(struct T) - offsetof(struct T, last) - sizeof(((struct T *)0)->last) < \
					_Alignof(struct T),                                            \
				#last " is the last field of struct " #T);                              \
		 int x_;                                                                               \
	 }))
#define BASE_OPTS_COPY(dst, T, last, src) base_opts_copy((dst), sizeof(struct T), BASE_OPTS_END(T, last), (src))
#define BASE_OPTS_CHECK(src, T, last) base_opts_check((src), BASE_OPTS_END(T, last))

#endif
