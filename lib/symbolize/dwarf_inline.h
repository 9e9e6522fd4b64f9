/* SPDX-License-Identifier: MIT */
/* Inline chains and source lines from DWARF, through libdw. */
#ifndef UW_DWARF_INLINE_H
#define UW_DWARF_INLINE_H

#include "base/base.h"
#include "elf/elfview.h"

#define DWI_MAX_DEPTH 64

#include <pthread.h>
/* A lock held for short lookups by threads that symbolize at once: glibc's adaptive mutex spins
 * a little before it sleeps (a sleep and a wake-up cost more than the lookups waited for). */
static inline void dwi_mutex_init(pthread_mutex_t *mu)
{
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
	pthread_mutex_init(mu, &a);
	pthread_mutexattr_destroy(&a);
}

struct dwi_frame {
	const char *name;  /* function (interned); NULL when DWARF has none */
	const char *file;  /* source file (interned), or NULL */
	uint32_t line;
};

struct dwi;

/* Opens the DWARF of an ELF view (the module's debug file, or the module itself), with its dwz
 * supplementary file (.gnu_debugaltlink) when alt is not NULL. NULL when the file has no usable
 * .debug_info; then *why (may be NULL) is -UW_ELIMIT when a needed section decompresses past
 * the view's cap, -UW_ETRUNC when the file shrank while it was read, -ENOMEM, else 0 (-ENOMEM
 * also with a handle when alt's could not be made). The views must outlive the handle. The
 * DWARF is read into memory (dwarf_image.c). cache (may be NULL): a directory where the DWARF
 * of a file with compressed sections is kept decompressed, for that file: read from there when
 * present, else written there (by a thread, done by dwi_close). */
struct dwi *dwi_open(struct elfv *v, struct elfv *alt, const char *cache, uint64_t cache_cap, int *why);
void dwi_close(struct dwi *d);

/* Split units: their .dwo file is opened by open (called once per skeleton unit met, with its
 * DW_AT_dwo_name and DW_AT_comp_dir; it returns a view the handle then owns, or NULL), and
 * looked up in a DWARF package (.dwp) when it is not there: find is called once, on the first
 * such unit, and returns the package (kept by the caller, alive as long as the handle) or NULL.
 * libdw is never let open a file itself. */
struct dwp;
void dwi_set_dwo_opener(struct dwi *d, struct elfv *(*open)(void *ctx, const char *name, const char *comp_dir),
                        void *ctx);
void dwi_set_package_finder(struct dwi *d, struct dwp *(*find)(void *ctx), void *ctx);

/* The chain at module address addr, innermost first: inlined functions, then the function that
 * contains them. file:line of frame i is where frame i's code is (for frame 0 the line table at
 * addr, for the others the call site of the frame inside them). busy (NULL: wait): when the
 * lookup would wait for what another thread makes once (the units by address, a unit's index),
 * it returns 0 with *busy set, having changed nothing; ask again later.
 * @return the number of frames (0 when addr is in no unit with DWARF). */
unsigned dwi_lookup(struct dwi *d, struct base_strings *strings, uint64_t addr, struct dwi_frame *out,
                    unsigned cap, bool *busy);
/* Whether memory ran out in a lookup (libdw's handler never exits the process: the handle is
 * given up, and every later lookup returns 0). */
bool dwi_out_of_memory(const struct dwi *d);

#endif
