/* SPDX-License-Identifier: MIT */
/*
 * The inline index through libdw: for what the fast walk (dwarf_walk.c) and dww_attrs do not
 * read (forms they do not know, units they cannot open, libdw's line tables). Every call here
 * runs under the handle's lock (dwi_lock) and dwi_lookup's guard against libdw running out of
 * memory (dwarf_inline.c).
 */
#include "symbolize/dwarf_inline_int.h"
#include "symbolize/dwarf_line.h"

#include <dwarf.h>
#include <elfutils/libdw.h>

/* A node for a DIE with code; -1 when out of room or memory. */
int32_t dwi_add_node(struct base_vec *nodes, Dwarf_Off off, bool subprogram, int32_t scope)
{
	if (nodes->len >= DWI_MAX_NODES)
		return -1;
	struct dwi_node *n = base_vec_push(nodes);
	if (!n)
		return -1;
	memset(n, 0, sizeof(*n));
	n->off = off;
	n->subprogram = subprogram;
	n->parent = subprogram ? -1 : scope;
	return (int32_t)(nodes->len - 1);
}

/* The ranges of a DIE through libdw (every DWARF 2-5 form): a node on the first non-empty one.
 * @return the node, -1 without code, -2 on failure. */
int32_t dwi_die_ranges(Dwarf_Die *die, bool subprogram, int32_t scope, uint32_t depth, struct base_vec *nodes,
                       struct base_vec *ranges)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	int32_t id = -1;
	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (hi <= lo)
			continue;
		if (id < 0 && (id = dwi_add_node(nodes, dwarf_dieoffset(die), subprogram, scope)) < 0)
			return -2;
		struct range *r = base_vec_push(ranges);
		if (!r)
			return -2;
		*r = (struct range){ lo, hi, depth, id };
	}
	return id;
}

/* The walk through libdw below root (a unit DIE, or a subprogram whose id is scope0): for units
 * the fast walk does not handle. @return 0, -1 on failure. */
int dwi_collect_libdw(Dwarf_Die *root, int32_t scope0, struct base_vec *nodes, struct base_vec *ranges)
{
	/* explicit stack of (die, enclosing node, depth) */
	struct frame {
		Dwarf_Die die;
		int32_t scope;
		uint32_t depth;
	} stack[256];
	unsigned sp = 0;
	Dwarf_Die child;
	if (dwarf_child(root, &child) == 0)
		stack[sp++] = (struct frame){ child, scope0, 0 };
	bool fail = false;
	while (sp && !fail) {
		struct frame f = stack[--sp];
		/* siblings continue at the same level */
		Dwarf_Die sib;
		if (dwarf_siblingof(&f.die, &sib) == 0 && sp < UW_ARRAY_SIZE(stack))
			stack[sp++] = (struct frame){ sib, f.scope, f.depth };
		int tag = dwarf_tag(&f.die);
		int32_t scope = f.scope;
		bool descend = true;
		switch (tag) {
		case DW_TAG_subprogram:
		case DW_TAG_inlined_subroutine: {
			int32_t id = dwi_die_ranges(&f.die, tag == DW_TAG_subprogram, f.scope, f.depth, nodes, ranges);
			if (id < -1)
				fail = true;
			if (id >= 0)
				scope = id;
			/* a subprogram without code (declaration, abstract instance) holds none below */
			if (tag == DW_TAG_subprogram && id == -1 && !dwarf_hasattr(&f.die, DW_AT_low_pc) &&
			    !dwarf_hasattr(&f.die, DW_AT_ranges))
				descend = false;
			break;
		}
		/* no code below these */
		case DW_TAG_base_type: case DW_TAG_pointer_type: case DW_TAG_typedef: case DW_TAG_const_type:
		case DW_TAG_volatile_type: case DW_TAG_array_type: case DW_TAG_enumeration_type:
		case DW_TAG_subroutine_type: case DW_TAG_formal_parameter: case DW_TAG_variable:
		case DW_TAG_member: case DW_TAG_enumerator: case DW_TAG_subrange_type: case DW_TAG_label:
		case DW_TAG_call_site: case DW_TAG_GNU_call_site: case DW_TAG_template_type_parameter:
		case DW_TAG_template_value_parameter: case DW_TAG_unspecified_parameters:
		case DW_TAG_structure_type: case DW_TAG_class_type: case DW_TAG_union_type:
			descend = false;
			break;
		default:
			break;
		}
		if (descend && dwarf_child(&f.die, &child) == 0 && sp < UW_ARRAY_SIZE(stack))
			stack[sp++] = (struct frame){ child, scope, f.depth + 1 };
	}
	return fail ? -1 : 0;
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

/* The same through libdw. */
void dwi_libdw_resolve(struct dwi *d, struct dwi_cu *c, struct dwi_node *n, struct base_strings *strings)
{
	Dwarf_Die die;
	if (!dwarf_offdie(c->ndw ? c->ndw : d->dw, n->off, &die))
		return;
	n->name = dwi_intern(strings, die_name(&die));
	if (n->subprogram)
		return;
	Dwarf_Attribute a;
	Dwarf_Word fi = 0, cl = 0;
	if (dwarf_formudata(dwarf_attr(&die, DW_AT_call_file, &a), &fi) == 0) {
		char buf[4096];
		if (c->lines && !c->ndw)
			n->call_file = fi <= UINT32_MAX ? dwi_intern(strings, dwl_file(c->lines, (uint32_t)fi, buf, sizeof(buf))) : NULL;
		else if (c->files && fi < c->nfiles)
			n->call_file = dwi_intern(strings, dwarf_filesrc(c->files, fi, NULL, NULL));
	}
	if (dwarf_formudata(dwarf_attr(&die, DW_AT_call_line, &a), &cl) == 0)
		n->call_line = (uint32_t)cl;
}
