/* SPDX-License-Identifier: MIT */
/* Logging and error messages, attached to a session-like context. */
#ifndef UW_BASE_LOG_H
#define UW_BASE_LOG_H

#include <stdbool.h>

#include "base/compiler.h"
#include "unwound/unwound.h"

struct base_log {
	uw_log_fn fn;           /* called from any thread that logs (the caller's to serialize) */
	void *ctx;
	enum uw_log_level level;
};
void base_log(struct base_log *l, enum uw_log_level lvl, const char *fmt, ...) UW_PRINTF(3, 4);
/* Records an error message and returns err (negative) for `return base_err(...)`. The message is
 * the calling thread's (threads that share a session each see their own last error). */
int base_err(struct base_log *l, int err, const char *fmt, ...) UW_PRINTF(3, 4);
/* The calling thread's last error message recorded with l ("" when none). */
const char *base_errmsg(const struct base_log *l);
/* Forgets it. */
void base_errmsg_clear(const struct base_log *l);
/* Whether err (negative) says a resource ran out (descriptors, memory) rather than that the
 * thing asked for is absent or bad: such a failure is said as one, never as "not found". */
bool base_resource_error(int err);

#endif
