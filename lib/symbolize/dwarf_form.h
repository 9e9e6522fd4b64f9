/* SPDX-License-Identifier: MIT */
/*
 * DWARF attribute forms: what every reader of .debug_info and .debug_line needs to know of a
 * form's encoding, in one place.
 */
#ifndef UW_DWARF_FORM_H
#define UW_DWARF_FORM_H

#include <stdint.h>

/* The size of a form's value when the form alone (with the unit's offset and address sizes and
 * its version) gives it; -1 when it depends on the data (LEB128, strings, blocks, indirect) or
 * the form is not known. */
int dwf_fixed_size(uint64_t form, unsigned offsz, unsigned addrsz, unsigned version);

#endif
