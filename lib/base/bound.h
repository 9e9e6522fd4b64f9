/* SPDX-License-Identifier: MIT */
/* Binary search over sorted arrays of ranges. */
#ifndef UW_BASE_BOUND_H
#define UW_BASE_BOUND_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* In an array of n elements of `stride` bytes sorted by a uint64_t key at byte `key_off`: the
 * number of elements whose key is <= key (so element [result - 1] is the last one at or before
 * key; 0: none). One binary search for every "which range holds this address" lookup. */
static inline size_t base_upper_bound(const void *arr, size_t n, size_t stride, size_t key_off, uint64_t key)
{
	const char *a = arr;
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t k;
		memcpy(&k, a + mid * stride + key_off, sizeof(k));
		if (k <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

#endif
