/* SPDX-License-Identifier: MIT */
/* The inline index's structures (dwarf_inline.c), shared with its tests' comparisons. */
#ifndef UW_DWARF_INLINE_INT_H
#define UW_DWARF_INLINE_INT_H

#include <elfutils/libdw.h>
#include <pthread.h>
#include <setjmp.h>

#include "base/base.h"
#include "symbolize/dwarf_image.h"
#include "symbolize/dwarf_inline.h"
#include "symbolize/dwarf_line.h"
#include "symbolize/dwarf_walk.h"

#define DWI_MAX_NODES (1u << 24)

struct dwi_sub;

struct dwi_node {
	Dwarf_Off off;        /* the DIE */
	int32_t parent;       /* enclosing scope in the same array (-1: none; a subprogram has none;
	                       * in a function's walked subtree, the function) */
	bool subprogram;
	uint8_t named;        /* name, call_file, call_line: 0 not read, 1 being read, 2 published
	                       * (atomic: written once, read with acquire) */
	bool lazy;            /* a subprogram whose subtree is walked when one of its addresses is
	                       * first asked for (into sub) */
	const char *name;     /* interned, when named */
	const char *call_file;
	uint32_t call_line;
	struct dwi_sub *sub;  /* a lazy subprogram's walked subtree (dwi_no_sub when it could not be) */
};

struct dwi_seg {
	uint64_t start;
	int32_t node;         /* innermost scope from start on; -1: none (in a subtree: the function) */
};

/* A lazy subprogram's subtree: its inlined subroutines (and nested functions) and the innermost
 * of them over each address. Made once, then read only. */
struct dwi_sub {
	struct dwi_node *nodes;
	uint32_t nnodes, nsegs;
	struct dwi_seg *segs;
};
extern struct dwi_sub dwi_no_sub;

/* A function's subtree is walked under one of a unit's function locks, chosen by the function's
 * node (threads naming different functions of one unit do not wait for each other); the unit's
 * own lock is held only while it is indexed; lookups in what is made take no lock. */
#define DWI_FN_LOCKS 8

enum { CU_NEW, CU_INDEXED, CU_FAILED };

struct dwi_cu {
	pthread_mutex_t mu;   /* indexing it, on its first lookup */
	uint8_t state;        /* CU_*: published with release once indexed (read with acquire) */
	uint64_t unit_off;    /* the unit's header in .debug_info */
	bool die_ok;          /* die is made (libdw's view of the unit: made only when needed) */
	Dwarf_Die die;
	struct base_vec nodes; /* struct dwi_node; grows as subprograms are walked */
	struct dww_unit *unit; /* for walking subprograms later; NULL when all was walked */
	struct dwi_seg *segs;
	uint32_t nsegs;
	Dwarf_Files *files;   /* libdw's: when lines could not be read by dwl, and a split unit's */
	size_t nfiles;
	struct dwl_table *lines;
	const char **file_names; /* lines' files' names as interned, each set on its first lookup
	                          * (atomic: any thread, the same string); NULL: none kept */
	Dwarf *ndw;           /* where the nodes' DIE offsets are: a split unit's .dwo, else NULL */
	/* a split unit from a package: its sections (unit reads them), names and call sites read
	 * by dww_attrs, call files from its own line table's names */
	bool own;
	struct dww_sections psec;
	struct dwl_sections plsec;
	struct dwl_table *call_lines;
	struct dwp *dwo;      /* the unit's .dwo file, read here (owned), or NULL */
	struct elfv *dwo_view;
	struct {
		pthread_mutex_t mu;
		char pad[64 - sizeof(pthread_mutex_t) % 64]; /* (a line each: no false sharing) */
	} fn_mu[DWI_FN_LOCKS];
};

struct dwi {
	pthread_mutex_t mu;   /* what units share, and calls into libdw (dwarf_inline.c) */
	Dwarf *dw;
	struct dww_sections sec; /* plain sections for the fast walk (info NULL: libdw walk only) */
	struct dwl_sections lsec; /* and for line tables (line NULL: libdw's) */
	struct dwl_store *lstore; /* line rows kept in the cache directory, or NULL */
	/* names read by dww_attrs: the units' header offsets (sorted), and the units opened for it */
	uint64_t *unit_offs;
	size_t nunit_offs;
	bool unit_offs_built;
	bool unit_offs_ready; /* unit_offs, nunit_offs, attr_unit_at set and stay (atomic, as ar_ready) */
	struct dww_unit **attr_unit_at; /* per unit_offs entry: its attr_units value once known
	                                 * (atomic: published under the lock, read without it) */
	struct base_map attr_units; /* unit header offset -> struct dww_unit * (or &no_unit) */
	struct base_map cus;  /* unit header offset -> struct dwi_cu * */
	struct dwi_file main;
	Dwarf *alt;           /* the dwz supplementary file's, or NULL */
	struct dwi_file alt_file;
	const uint8_t *aranges_sec; /* .debug_aranges, plain, or NULL */
	size_t naranges_sec;
	struct dwi_arange *ar; /* units by address, sorted by lo (built on the first lookup) */
	size_t nar;
	bool ar_built;
	bool ar_ready;        /* ar and nar are set and stay (atomic: release when set; read without
	                       * the lock after an acquire) */
	bool ar_from_units;   /* built from the units' own ranges: complete, no libdw fallback */
	struct dwp *(*find_package)(void *ctx);
	void *find_package_ctx;
	struct elfv *(*open_dwo)(void *ctx, const char *name, const char *comp_dir);
	void *open_dwo_ctx;
	bool oom;             /* memory ran out in a lookup (libdw's or ours): no more lookups (atomic) */
	struct dwp *package; /* the finder's, not owned */
	bool package_tried;
};

struct dwi_arange {
	uint64_t lo, hi;
	uint64_t unit;        /* the unit header's offset in .debug_info */
	struct dwi_cu *cu;    /* the unit once in d->cus (atomic: published under the handle's lock,
	                       * read without it: most lookups find their unit here) */
};

/* Sections the inline index never reads: left out of a decompressed image. */
struct range {
	uint64_t lo, hi;
	uint32_t depth;
	int32_t node;
};

/* Ranges by start, then outer first (by depth, then the longer first). */
struct fast_ctx {
	Dwarf *dw;
	struct base_vec *nodes, *ranges;
	bool shallow;         /* subprograms are walked later */
	struct dww_unit *unit; /* reads DW_AT_ranges; NULL: libdw does */
	struct dwi *d;        /* whose lock calls into libdw take (NULL: one thread, the tests') */
};

/* (dwarf_inline_guard.c) The guard of a lookup (dwi_lookup) against libdw running out of memory:
 * libdw's handler jumps back to the innermost one of the thread, which lets go of the locks
 * taken under it. */
struct dwi_guard {
	jmp_buf jb;
	struct dwi_guard *prev;
	pthread_mutex_t *held[4]; /* the locks taken under it, let go when it jumps back */
	unsigned nheld;
};
/* (initial-exec: the guard is read at every lock, and a global-dynamic variable of another file
 * costs a call to __tls_get_addr each time) */
#define DWI_TLS __attribute__((tls_model("initial-exec")))
extern __thread struct dwi_guard *dwi_guard_top DWI_TLS;
/* libdw's handler for running out of memory on dw: jumps back to the guard. */
void dwi_oom_handler(Dwarf *dw);
/* A lock taken and let go so that the guard knows it (inline: taken at every lookup). */
static inline void dwi_lock_hold(pthread_mutex_t *mu)
{
	pthread_mutex_lock(mu);
	struct dwi_guard *g = dwi_guard_top;
	if (g && g->nheld < UW_ARRAY_SIZE(g->held))
		g->held[g->nheld++] = mu;
}
/* The same when the lock is free now. @return whether it was taken. */
static inline bool dwi_lock_try(pthread_mutex_t *mu)
{
	if (pthread_mutex_trylock(mu))
		return false;
	struct dwi_guard *g = dwi_guard_top;
	if (g && g->nheld < UW_ARRAY_SIZE(g->held))
		g->held[g->nheld++] = mu;
	return true;
}
static inline void dwi_lock_release(pthread_mutex_t *mu)
{
	struct dwi_guard *g = dwi_guard_top;
	for (unsigned i = g ? g->nheld : 0; i-- > 0;) {
		if (g->held[i] == mu) {
			for (unsigned j = i; j + 1 < g->nheld; j++)
				g->held[j] = g->held[j + 1];
			g->nheld--;
			break;
		}
	}
	pthread_mutex_unlock(mu);
}
/* The handle's lock, for what its units share and every call into libdw; false (not held) once
 * memory ran out in the handle: libdw's state may be half made, and is not read again. A unit's
 * lock is taken before it, never after. */
static inline bool dwi_lock(struct dwi *d)
{
	dwi_lock_hold(&d->mu);
	if (!__atomic_load_n(&d->oom, __ATOMIC_RELAXED))
		return true;
	dwi_lock_release(&d->mu);
	return false;
}
static inline void dwi_unlock(struct dwi *d)
{
	dwi_lock_release(&d->mu);
}
/* (dwarf_inline_libdw.c) A node for a DIE with code; -1 when out of room or memory. */
int32_t dwi_add_node(struct base_vec *nodes, Dwarf_Off off, bool subprogram, int32_t scope);
static inline const char *dwi_intern(struct base_strings *t, const char *s)
{
	return s ? base_strings_intern(t, s, strlen(s)) : NULL;
}
/* (dwarf_inline_units.c, under the handle's lock) */
extern char dwi_no_unit; /* attr_units: a unit dww cannot read */
/* d->ar: the units by address. */
void dwi_aranges_build(struct dwi *d);
/* The unit holding the DIE at off opened for dww_attrs (kept in d->attr_units), NULL when dww
 * cannot read it. Takes the handle's lock (not held by the caller). */
struct dww_unit *dwi_attr_unit(struct dwi *d, uint64_t off);
/* (dwarf_inline_split.c) */
/* The split unit of a skeleton (dwo_id) into c: from its .dwo file, else the package. false:
 * none found (no inline frames in it). */
bool dwi_split_unit(struct dwi *d, struct dwi_cu *c, Dwarf_Die *cudie, uint64_t dwo_id);
/* (dwarf_inline_libdw.c, under the handle's lock) */
/* The ranges of a DIE through libdw: a node on the first non-empty one. @return the node, -1
 * without code, -2 on failure. */
int32_t dwi_die_ranges(Dwarf_Die *die, bool subprogram, int32_t scope, uint32_t depth, struct base_vec *nodes,
                       struct base_vec *ranges);
/* A unit's scopes and their ranges through libdw (from root, whose scope is scope0). */
int dwi_collect_libdw(Dwarf_Die *root, int32_t scope0, struct base_vec *nodes, struct base_vec *ranges);
/* The fast walk's callback (ctx: struct fast_ctx). */
int32_t dwi_on_die(void *ctx, const struct dww_die *w);
/* The unit's line table through dwl, or NULL (libdw's then). */
struct dwl_table *dwi_unit_lines(struct dwi *d, Dwarf_Die *cudie);
/* A unit's index: lazy (subprograms walked when asked for) or whole. NULL without memory. */
struct dwi_cu *dwi_cu_index(struct dwi *d, Dwarf_Die *cudie, bool lazy);
void dwi_cu_free(struct dwi_cu *c);
/* The DIE offsets of the chain over addr, innermost first. */
unsigned dwi_chain(struct dwi *d, struct dwi_cu *c, uint64_t addr, Dwarf_Off *out, unsigned cap);
/* A node's name and call site: read by dww_attrs (false: not handled there), or by libdw. */
bool dwi_attrs_resolve(struct dwi *d, struct dwi_cu *c, struct dwi_node *n, struct base_strings *strings);
void dwi_libdw_resolve(struct dwi *d, struct dwi_cu *c, struct dwi_node *n, struct base_strings *strings);

#endif
