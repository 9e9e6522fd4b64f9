/* SPDX-License-Identifier: MIT */
/*
 * The inline index's locks and its guard against libdw running out of memory, used by every
 * file of the index (dwarf_inline*.c): the guard must know which locks to let go when it
 * jumps back.
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
__thread struct dwi_guard *dwi_guard_top;
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

/* ---- locks (see dwarf_inline.c's top): taken and let go through these, so that the guard knows them */
void dwi_lock_hold(pthread_mutex_t *mu)
{
	pthread_mutex_lock(mu);
	struct dwi_guard *g = dwi_guard_top;
	if (g && g->nheld < UW_ARRAY_SIZE(g->held))
		g->held[g->nheld++] = mu;
}

void dwi_lock_release(pthread_mutex_t *mu)
{
	struct dwi_guard *g = dwi_guard_top;
	for (unsigned i = g ? g->nheld : 0; i-- > 0;) {
		if (g->held[i] == mu) {
			memmove(&g->held[i], &g->held[i + 1], (g->nheld - i - 1) * sizeof(g->held[0]));
			g->nheld--;
			break;
		}
	}
	pthread_mutex_unlock(mu);
}

/* The handle's lock, for its shared state and calls into libdw. @return false (not held) once
 * memory ran out in the handle: libdw's state may be half made, and is not read again. */
bool dwi_lock(struct dwi *d)
{
	dwi_lock_hold(&d->mu);
	if (!__atomic_load_n(&d->oom, __ATOMIC_RELAXED))
		return true;
	dwi_lock_release(&d->mu);
	return false;
}

void dwi_unlock(struct dwi *d)
{
	dwi_lock_release(&d->mu);
}
