/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD fault injection for the tests: malloc, calloc and realloc fail (NULL, ENOMEM) when
 * called from the shared object whose path contains $FAILMALLOC_FROM (say "libdw") for at
 * least $FAILMALLOC_MIN bytes (default 0), after the first $FAILMALLOC_AFTER such calls
 * succeeded. Other callers are served as usual. The caller is the return address's object
 * (dladdr), so only that library's own allocations fail: what an out-of-memory handler of that
 * library does is then what is tested, deterministically (a low `ulimit -v` makes whichever
 * allocation comes next fail). libdw's blocks (libdw_alloc, whose failure calls the handler) are
 * a page less 32 bytes and larger: FAILMALLOC_MIN=4000 fails those alone (its other
 * allocations are small, and some of them it does not check: a NULL there is libdw's crash).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);

static const char *from;
static long after = -1, seen;
static size_t min_size;
static int ready;

static int fails(const void *caller, size_t n)
{
	if (!ready) {
		ready = 1;
		from = getenv("FAILMALLOC_FROM");
		const char *a = getenv("FAILMALLOC_AFTER"), *m = getenv("FAILMALLOC_MIN");
		after = a ? atol(a) : 0;
		min_size = m ? (size_t)atol(m) : 0;
	}
	if (!from || !*from || n < min_size)
		return 0;
	Dl_info info;
	if (!dladdr(caller, &info) || !info.dli_fname || !strstr(info.dli_fname, from))
		return 0;
	return __atomic_add_fetch(&seen, 1, __ATOMIC_RELAXED) > after;
}

void *malloc(size_t n)
{
	if (fails(__builtin_return_address(0), n)) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t k)
{
	if (fails(__builtin_return_address(0), n * k)) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_calloc(n, k);
}

void *realloc(void *p, size_t n)
{
	if (fails(__builtin_return_address(0), n)) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_realloc(p, n);
}
