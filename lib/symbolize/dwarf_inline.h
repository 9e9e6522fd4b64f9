/* SPDX-License-Identifier: MIT */
/* Inline chains and source lines from DWARF, through libdw. */
#ifndef UW_DWARF_INLINE_H
#define UW_DWARF_INLINE_H

#include "base/base.h"
#include "elf/elfview.h"

#define DWI_MAX_DEPTH 64

struct dwi_frame {
	const char *name;  /* function (interned); NULL when DWARF has none */
	const char *file;  /* source file (interned), or NULL */
	uint32_t line;
};

struct dwi;

/* Opens the DWARF of an ELF view (the module's debug file, or the module itself), with its dwz
 * supplementary file (.gnu_debugaltlink) when alt is not NULL. NULL when the file has no usable
 * .debug_info; then *why (may be NULL) is -UW_ELIMIT when a needed section decompresses past
 * the view's cap, else 0. The views must outlive the handle. cache (may be NULL): a directory
 * where the DWARF of a file with compressed sections is kept decompressed, by build-id: read
 * from there when present, else written there (by a thread, done by dwi_close). */
struct dwi *dwi_open(struct elfv *v, struct elfv *alt, const char *cache, uint64_t cache_cap, int *why);
void dwi_close(struct dwi *d);

/* Split units whose .dwo libdw does not find are looked up in a DWARF package (.dwp): find is
 * called once, on the first such unit, and returns the package (kept by the caller, alive as
 * long as the handle) or NULL. */
struct dwp;
void dwi_set_package_finder(struct dwi *d, struct dwp *(*find)(void *ctx), void *ctx);

/* The chain at module address addr, innermost first: inlined functions, then the function that
 * contains them. file:line of frame i is where frame i's code is (for frame 0 the line table at
 * addr, for the others the call site of the frame inside them).
 * @return the number of frames (0 when addr is in no unit with DWARF). */
unsigned dwi_lookup(struct dwi *d, struct base_intern *strings, uint64_t addr, struct dwi_frame *out,
                    unsigned cap);

#endif
