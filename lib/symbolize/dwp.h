/* SPDX-License-Identifier: MIT */
/* DWARF package files (.dwp): split units by id (see dwp.c). */
#ifndef UW_DWP_H
#define UW_DWP_H

#include "elf/elfview.h"
#include "symbolize/dwarf_line.h"
#include "symbolize/dwarf_walk.h"

struct dwp;

/* The package in v (which must outlive it); NULL without a readable .debug_cu_index. */
struct dwp *dwp_open(struct elfv *v);
/* One .dwo file as a package of its one split unit (v must outlive it); NULL without
 * .debug_info.dwo and .debug_abbrev.dwo. */
struct dwp *dwp_open_dwo(struct elfv *v);
/* Whether p is such a file (dwp_unit then gives its sections whole: the caller checks the id). */
bool dwp_is_dwo(const struct dwp *p);
void dwp_close(struct dwp *p);

/* The sections of split unit dwo_id: sec's info, abbrev, str_offsets and rnglists are its
 * contributions and str the package's; lsec's line is its line table's (file names for call
 * sites) and str the package's. Other fields are left as they are.
 * @return 0, -1 when the package has no such unit or its entry is malformed. */
int dwp_unit(const struct dwp *p, uint64_t dwo_id, struct dww_sections *sec, struct dwl_sections *lsec);

#endif
