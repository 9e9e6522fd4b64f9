/* SPDX-License-Identifier: MIT */
/* LEB128: the one decoder every reader of DWARF, CFI and the kernel's unwind tables uses, inline
 * because it runs for every attribute of every DIE walked and every CFA instruction compiled. */
#ifndef UW_BASE_LEB_H
#define UW_BASE_LEB_H

#include <stdbool.h>
#include <stdint.h>

#include "base/compiler.h"

/* At most 10 bytes: enough for 64 bits; the 10th byte's bits past 64 are dropped. */
#define BASE_LEB_MAX 10

/* Decodes an unsigned LEB128 number at *pp, reading nothing at or past end. @return true with *v
 * set and *pp past the number; false (*pp and *v unchanged) when the number runs past end or past
 * BASE_LEB_MAX bytes. */
static inline bool base_uleb(const uint8_t **pp, const uint8_t *end, uint64_t *v)
{
	const uint8_t *p = *pp;
	if (UW_LIKELY(p < end && !(*p & 0x80))) { /* most numbers are one byte */
		*v = *p;
		*pp = p + 1;
		return true;
	}
	uint64_t r = 0;
	for (unsigned shift = 0; p < end && shift < 7 * BASE_LEB_MAX; shift += 7) {
		uint8_t b = *p++;
		r |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = r;
			*pp = p;
			return true;
		}
	}
	return false;
}

/* The same for a signed LEB128 number (sign-extended from its last byte's bit 6). */
static inline bool base_sleb(const uint8_t **pp, const uint8_t *end, int64_t *v)
{
	const uint8_t *p = *pp;
	if (UW_LIKELY(p < end && !(*p & 0x80))) {
		*v = (int64_t)(*p & 0x3f) - (int64_t)(*p & 0x40);
		*pp = p + 1;
		return true;
	}
	uint64_t r = 0;
	for (unsigned shift = 0; p < end && shift < 7 * BASE_LEB_MAX;) {
		uint8_t b = *p++;
		r |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			if (shift < 64 && (b & 0x40))
				r |= ~(uint64_t)0 << shift;
			*v = (int64_t)r;
			*pp = p;
			return true;
		}
	}
	return false;
}

#endif
