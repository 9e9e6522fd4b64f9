/* SPDX-License-Identifier: MIT */
/* Logging through the embedder's callback. */
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>

void base_log(struct base_log *l, enum uw_log_level lvl, const char *fmt, ...)
{
	if (!l || !l->fn || lvl > l->level)
		return;
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	l->fn(l->ctx, lvl, buf);
}
