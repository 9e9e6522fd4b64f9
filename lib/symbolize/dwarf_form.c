/* SPDX-License-Identifier: MIT */
#include <dwarf.h>

#include "symbolize/dwarf_form.h"

int dwf_fixed_size(uint64_t form, unsigned offsz, unsigned addrsz, unsigned version)
{
	switch (form) {
	case DW_FORM_flag_present: case DW_FORM_implicit_const:
		return 0;
	case DW_FORM_data1: case DW_FORM_ref1: case DW_FORM_flag: case DW_FORM_strx1: case DW_FORM_addrx1:
		return 1;
	case DW_FORM_data2: case DW_FORM_ref2: case DW_FORM_strx2: case DW_FORM_addrx2:
		return 2;
	case DW_FORM_strx3: case DW_FORM_addrx3:
		return 3;
	case DW_FORM_data4: case DW_FORM_ref4: case DW_FORM_ref_sup4: case DW_FORM_strx4: case DW_FORM_addrx4:
		return 4;
	case DW_FORM_data8: case DW_FORM_ref8: case DW_FORM_ref_sig8: case DW_FORM_ref_sup8:
		return 8;
	case DW_FORM_data16:
		return 16;
	case DW_FORM_addr:
		return (int)addrsz;
	case DW_FORM_strp: case DW_FORM_line_strp: case DW_FORM_sec_offset: case DW_FORM_strp_sup:
	case DW_FORM_GNU_strp_alt: case DW_FORM_GNU_ref_alt:
		return (int)offsz;
	case DW_FORM_ref_addr:
		return (int)(version <= 2 ? addrsz : offsz);
	default:
		return -1;
	}
}
