/* SPDX-License-Identifier: MIT */
/* Checked allocation and the copying of options structs. */
#include "base/alloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/compiler.h"

void *base_realloc_array(void *p, size_t n, size_t size)
{
	size_t bytes;
	if (__builtin_mul_overflow(n, size, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, bytes ? bytes : 1);
}

int base_opts_check(const void *src, size_t known)
{
	if (!src)
		return -EINVAL;
	size_t sz = *(const size_t *)src;
	if (sz < sizeof(size_t))
		return -EINVAL;
	for (size_t i = known; i < sz; i++)
		if (((const unsigned char *)src)[i])
			return -E2BIG;
	return 0;
}

int base_opts_copy(void *dst, size_t dst_size, size_t known, const void *src)
{
	memset(dst, 0, dst_size);
	if (src) {
		int e = base_opts_check(src, known);
		if (e)
			return e;
		size_t sz = *(const size_t *)src;
		memcpy(dst, src, UW_MIN(sz, known));
	}
	*(size_t *)dst = dst_size;
	return 0;
}
