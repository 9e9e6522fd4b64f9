/* SPDX-License-Identifier: MIT */
#ifndef UW_DEMANGLE_H
#define UW_DEMANGLE_H
#include "base/base.h"

/* C++ (Itanium) and Rust (legacy and v0) names through libiberty, without parameter lists as
 * perf shows them by default; the result is interned. Other names come back unchanged. */
const char *sym_demangle(struct base_strings *strings, const char *name);
/* The same name, malloc'd; NULL when it is not mangled (or out of memory). */
char *sym_demangle_dup(const char *name);
#endif
