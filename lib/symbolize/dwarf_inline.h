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

/* Tests: walks every unit with the fast walk and with libdw and counts units, units the fast walk
 * handled, and units where the two disagree. */
int dwi_compare_walks(struct dwi *d, size_t *units, size_t *fast, size_t *differ);
/* Tests: chains through the lazily walked index against the whole walk's, at the first, middle
 * and last address of every segment of every unit: units, addresses, addresses that differ. */
int dwi_compare_lookups(struct dwi *d, size_t *units, size_t *addrs, size_t *differ);
/* Tests: every node's name and call site read by dww_attrs against libdw's: nodes, nodes read
 * by dww_attrs, nodes that differ. */
int dwi_compare_names(struct dwi *d, size_t *nodes, size_t *fast, size_t *differ);
/* Tests: line tables read by dwl against libdw's (see dwarf_inline.c). */
int dwi_compare_lines(struct dwi *d, size_t *units, size_t *fast, size_t *differ);
/* Tests: every unit's line table through a store of rows at path against one decoded now, then
 * the store saved: units, units whose table differs, and the store's counts (dwl_store_counts).
 * @return dwl_store_save's result. */
int dwi_compare_stored_lines(struct dwi *d, const char *path, size_t *units, size_t *differ, size_t *stored,
                             size_t *taken, size_t *added);

#endif
