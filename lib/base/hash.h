/* SPDX-License-Identifier: MIT */
/* Hashing: a 64-bit mix, short byte strings, large blocks. */
#ifndef UW_BASE_HASH_H
#define UW_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t base_hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}
uint64_t base_hash_bytes(const void *p, size_t n);
/* the same job for large blocks (megabytes), a word at a time on four lanes */
uint64_t base_hash_block(const void *p, size_t n);

#endif
