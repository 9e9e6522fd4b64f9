/* SPDX-License-Identifier: MIT */
/* Hashing of byte strings (FNV-1a) and of large blocks (four lanes a word at a time). */
#include "base/hash.h"

#include <string.h>

uint64_t base_hash_bytes(const void *p, size_t n)
{
	/* FNV-1a, then a final mix */
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 0x100000001b3ULL;
	}
	return base_hash64(h ^ n);
}

static inline uint64_t rotl64(uint64_t x, unsigned r)
{
	return (x << r) | (x >> (64 - r));
}

static inline uint64_t lane(uint64_t h, uint64_t w)
{
	return rotl64(h ^ (w * 0x87c37b91114253d5ULL), 31) * 0x4cf5ad432745937fULL;
}

uint64_t base_hash_block(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h[4] = { 0x9e3779b97f4a7c15ULL, 0xbf58476d1ce4e5b9ULL, 0x94d049bb133111ebULL, n };
	size_t i = 0;
	for (; n - i >= 32; i += 32) {
		uint64_t w[4];
		memcpy(w, s + i, 32);
		for (unsigned k = 0; k < 4; k++)
			h[k] = lane(h[k], w[k]);
	}
	if (i < n) {
		uint64_t w[4] = { 0, 0, 0, 0 };
		memcpy(w, s + i, n - i);
		for (unsigned k = 0; k < 4; k++)
			h[k] = lane(h[k], w[k]);
	}
	return base_hash64(h[0] ^ rotl64(h[1], 17) ^ rotl64(h[2], 31) ^ rotl64(h[3], 47));
}
