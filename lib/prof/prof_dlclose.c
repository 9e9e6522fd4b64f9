/* SPDX-License-Identifier: MIT */
/*
 * dlclose, interposed (prof_maps.c says why): before the library goes, the caller waits (at most
 * 200 ms) for the collector to unwind what was sampled until then; after it, the mappings'
 * generation moves on, and the collector forgets every mapping before it unwinds a sample taken
 * later.
 *
 * The interposer's C name is prof_dlclose; the asm label gives it the symbol dlclose, which is
 * what the program's references bind to. (A C function named dlclose would read, to a reader of
 * the source, as the definition every dlclose call in lib/ reaches.)
 */
#include <dlfcn.h>

#include "prof/iprof.h"

typedef int (*dlclose_fn)(void *);

__attribute__((visibility("default"))) int prof_dlclose(void *handle) __asm__("dlclose");

int prof_dlclose(void *handle)
{
	static _Atomic(dlclose_fn) real;
	dlclose_fn f = atomic_load_explicit(&real, memory_order_acquire);
	if (!f) {
		f = (dlclose_fn)dlsym(RTLD_NEXT, "dlclose");
		atomic_store_explicit(&real, f, memory_order_release);
	}
	if (!f)
		return -1;
	iprof_collector_sync(200);
	int r = f(handle);
	atomic_fetch_add(&iprof_g.gen, 1);
	return r;
}
