/* SPDX-License-Identifier: MIT */
/*
 * The inline index's guard against libdw running out of memory, used by every file of the
 * index (dwarf_inline*.c): it must know which locks to let go when it jumps back, so they are
 * taken through dwarf_inline_int.h's dwi_lock_hold and dwi_lock (inline: taken at every lookup).
 */
#include "symbolize/dwarf_inline_int.h"

#include <elfutils/libdw.h>
#include <pthread.h>
#include <setjmp.h>
#include <string.h>

/* ---- libdw out of memory
 *
 * libdw's handler for a failed allocation of its own (libdw_alloc) prints and exits the process
 * (__libdw_oom), and it may not return: libdw goes on with the NULL. So every Dwarf handle of
 * ours gets this handler instead, and every call into libdw the library makes after
 * dwarf_begin_elf runs under dwi_lookup's guard, to which it jumps back. The handle is then
 * given up (libdw's state may be half made: it is not used again, and not freed); the lookup
 * returns nothing and dwi_out_of_memory says why. */
__thread struct dwi_guard *dwi_guard_top DWI_TLS;
static Dwarf_OOM libdw_oom; /* libdw's own: only for a call outside any guard (none is made) */

static _Noreturn void dwi_oom(void)
{
	struct dwi_guard *g = dwi_guard_top;
	if (g)
		longjmp(g->jb, 1);
	__atomic_load_n(&libdw_oom, __ATOMIC_RELAXED)();
}

void dwi_oom_handler(Dwarf *dw)
{
	Dwarf_OOM old = dwarf_new_oom_handler(dw, dwi_oom);
	if (old != dwi_oom)
		__atomic_store_n(&libdw_oom, old, __ATOMIC_RELAXED);
}
