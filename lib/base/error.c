/* SPDX-License-Identifier: MIT */
/* Errors: each thread's last message, what counts as running out of a resource, and the public
 * error strings. */
#include "base/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The last error of each thread, and the log it was recorded with */
static _Thread_local struct {
	const struct base_log *l;
	char msg[512];
} last_err;

int base_err(struct base_log *l, int err, const char *fmt, ...)
{
	if (l) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(last_err.msg, sizeof(last_err.msg), fmt, ap);
		va_end(ap);
		last_err.l = l;
		if (l->fn && l->level >= UW_LOG_DEBUG)
			l->fn(l->ctx, UW_LOG_DEBUG, last_err.msg);
	}
	return err < 0 ? err : -err;
}

const char *base_errmsg(const struct base_log *l)
{
	return l && last_err.l == l ? last_err.msg : "";
}

void base_errmsg_clear(const struct base_log *l)
{
	if (last_err.l == l)
		last_err.msg[0] = 0;
}

bool base_resource_error(int err)
{
	return err == -EMFILE || err == -ENFILE || err == -ENOMEM || err == -ENOBUFS;
}

UW_API const char *uw_strerror(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
#define UW_ERR_CASE(name, val, msg) \
	case val:                   \
		return msg;
		UW_ERRORS(UW_ERR_CASE)
#undef UW_ERR_CASE
	default:
		return strerror(err);
	}
}
