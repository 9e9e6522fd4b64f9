/* SPDX-License-Identifier: MIT */
/* Bounded reading: a cursor over bytes that goes bad instead of reading past its end. */
#ifndef UW_BASE_CURSOR_H
#define UW_BASE_CURSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/compiler.h"
#include "base/leb.h"

struct base_cursor {
	const uint8_t *p, *end;
	bool bad; /* set on any out-of-bounds read; reads then return 0 */
};
static inline struct base_cursor base_cursor(const void *p, size_t n)
{
	return (struct base_cursor){ (const uint8_t *)p, (const uint8_t *)p + n, false };
}
static inline size_t base_cur_left(const struct base_cursor *c)
{
	return c->bad ? 0 : (size_t)(c->end - c->p);
}
static inline bool base_cur_need(struct base_cursor *c, size_t n)
{
	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = true;
		return false;
	}
	return true;
}
#define BASE_CUR_READ(name, type)                                   \
	static inline type base_cur_##name(struct base_cursor *c)   \
	{                                                           \
		type v;                                             \
		if (!base_cur_need(c, sizeof(type)))                \
			return 0;                                   \
		memcpy(&v, c->p, sizeof(type));                     \
		c->p += sizeof(type);                               \
		return v;                                           \
	}
BASE_CUR_READ(u8, uint8_t)
BASE_CUR_READ(u16, uint16_t)
BASE_CUR_READ(u32, uint32_t)
BASE_CUR_READ(u64, uint64_t)
BASE_CUR_READ(s8, int8_t)
BASE_CUR_READ(s16, int16_t)
BASE_CUR_READ(s32, int32_t)
BASE_CUR_READ(s64, int64_t)
/* LEB128 numbers (leb.h): 0, and the cursor bad, when one runs past the end or is overlong */
#define BASE_CUR_LEB(name, type, decode)                                          \
	static inline type base_cur_##name(struct base_cursor *c)                 \
	{                                                                         \
		type v;                                                           \
		if (UW_UNLIKELY(c->bad) || UW_UNLIKELY(!decode(&c->p, c->end, &v))) { \
			c->bad = true;                                            \
			return 0;                                                 \
		}                                                                 \
		return v;                                                         \
	}
BASE_CUR_LEB(uleb, uint64_t, base_uleb)
BASE_CUR_LEB(sleb, int64_t, base_sleb)
static inline void base_cur_skip(struct base_cursor *c, size_t n)
{
	if (base_cur_need(c, n))
		c->p += n;
}
/* NUL-terminated string inside the cursor; NULL (and bad) if unterminated */
const char *base_cur_str(struct base_cursor *c);
/* DWARF's initial length (of a unit, a CIE or FDE, a line program, an aranges set): 32 bits,
 * or 0xffffffff then 64 bits; 0xfffffff0-0xfffffffe are reserved (the cursor goes bad, *offsz
 * stays 4). *offsz: the format's offset size, 4 or 8. */
static inline uint64_t base_cur_initial_length(struct base_cursor *c, unsigned *offsz)
{
	uint64_t len = base_cur_u32(c);
	*offsz = 4;
	if (len == 0xffffffffu) {
		*offsz = 8;
		len = base_cur_u64(c);
	} else if (len >= 0xfffffff0u) {
		c->bad = true;
	}
	return len;
}

#endif
