/* SPDX-License-Identifier: MIT */
/* Bounded reading: strings inside a cursor (numbers are read inline, cursor.h and leb.h). */
#include "base/cursor.h"

const char *base_cur_str(struct base_cursor *c)
{
	if (c->bad)
		return NULL;
	const uint8_t *z = memchr(c->p, 0, (size_t)(c->end - c->p));
	if (!z) {
		c->bad = true;
		return NULL;
	}
	const char *s = (const char *)c->p;
	c->p = z + 1;
	return s;
}
