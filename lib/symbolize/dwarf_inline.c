/* SPDX-License-Identifier: MIT */
/*
 * Inline frames and source lines with libdw (DWARF 2-5: DW_AT_ranges, abstract origins,
 * .debug_rnglists, .debug_line_str and type units are libdw's business). Per address: the CU
 * from .debug_aranges (dwarf_addrdie), the nested scopes (dwarf_getscopes), the line table
 * (dwarf_getsrc_die) for the innermost location, and DW_AT_call_file/DW_AT_call_line of each
 * inlined subroutine for the location in its caller.
 */
#include "symbolize/dwarf_inline.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <libelf.h>
#include <stdlib.h>

struct dwi {
	Dwarf *dw;
};

struct dwi *dwi_open(struct elfv *v)
{
	if (!v)
		return NULL;
	struct elfv_sec info;
	if (elfv_section(v, ".debug_info", &info) || !info.data || !info.size)
		return NULL;
	/* libdw decompresses compressed debug sections in place: give it its own copy-on-write
	 * mapping of the file (our view maps it read-only); memory images are writable copies */
	Dwarf *dw = v->fd >= 0 ? dwarf_begin(v->fd, DWARF_C_READ) : dwarf_begin_elf((Elf *)v->elf, DWARF_C_READ, NULL);
	if (!dw)
		return NULL;
	struct dwi *d = calloc(1, sizeof(*d));
	if (!d) {
		dwarf_end(dw);
		return NULL;
	}
	d->dw = dw;
	return d;
}

void dwi_close(struct dwi *d)
{
	if (!d)
		return;
	dwarf_end(d->dw);
	free(d);
}

static const char *intern0(struct base_intern *t, const char *s)
{
	return s ? base_intern(t, s, strlen(s)) : NULL;
}

/* The linkage name when there is one (C++, Rust: demangled later, qualified as addr2line -C
 * shows it), else DW_AT_name; both through abstract origins and specifications. */
static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
	if (!n)
		n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	return n ? n : dwarf_diename(die);
}

unsigned dwi_lookup(struct dwi *d, struct base_intern *strings, uint64_t addr, struct dwi_frame *out,
                    unsigned cap)
{
	Dwarf_Die cu;
	if (!d || !cap || !dwarf_addrdie(d->dw, (Dwarf_Addr)addr, &cu))
		return 0;
	/* dwarf_getscopes gives the innermost scope at addr, but past an inlined subroutine it
	 * continues into that function's abstract definition; the concrete nesting (the callers
	 * the code was inlined into) comes from dwarf_getscopes_die on the innermost scope */
	Dwarf_Die *pcscopes = NULL, *scopes = NULL;
	int npc = dwarf_getscopes(&cu, (Dwarf_Addr)addr, &pcscopes);
	int ns = 0;
	if (npc > 0)
		ns = dwarf_getscopes_die(&pcscopes[0], &scopes);
	free(pcscopes);
	if (ns < 0)
		ns = 0;
	unsigned n = 0;
	/* the innermost location, from the line table */
	const char *file = NULL;
	uint32_t line = 0;
	Dwarf_Line *l = dwarf_getsrc_die(&cu, (Dwarf_Addr)addr);
	if (l) {
		int ln = 0;
		dwarf_lineno(l, &ln);
		file = dwarf_linesrc(l, NULL, NULL);
		line = ln > 0 ? (uint32_t)ln : 0;
	}
	Dwarf_Files *files = NULL;
	size_t nfiles = 0;
	if (dwarf_getsrcfiles(&cu, &files, &nfiles) != 0)
		files = NULL;
	for (int i = 0; i < ns && n < cap; i++) {
		int tag = dwarf_tag(&scopes[i]);
		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
			continue;
		out[n].name = intern0(strings, die_name(&scopes[i]));
		out[n].file = intern0(strings, file);
		out[n].line = line;
		n++;
		if (tag == DW_TAG_subprogram)
			break;
		/* where this inlined copy sits in its caller */
		Dwarf_Attribute a;
		Dwarf_Word fi = 0, cl = 0;
		file = NULL;
		line = 0;
		if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &a), &fi) == 0 && files && fi < nfiles)
			file = dwarf_filesrc(files, fi, NULL, NULL);
		if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &a), &cl) == 0)
			line = (uint32_t)cl;
	}
	free(scopes);
	return n;
}
