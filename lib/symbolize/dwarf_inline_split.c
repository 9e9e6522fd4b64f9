/* SPDX-License-Identifier: MIT */
/*
 * Split DWARF: the split unit of a skeleton, from its .dwo file (opened by the opener the
 * symbolizer gives, as every file a file names is opened) or from the module's package (.dwp,
 * found once by the finder it gives), read by the fast walk and dww_attrs only.
 */
#include "symbolize/dwarf_inline_int.h"
#include "symbolize/dwarf_line.h"
#include "symbolize/dwarf_walk.h"
#include "symbolize/dwp.h"

#include <dwarf.h>
#include <elfutils/libdw.h>

/* The split unit dwo_id of a skeleton from pkg (a package, or one .dwo file): its sections and
 * line table names in c, its walk in c->unit. @return false when pkg does not have it (a .dwo
 * of another build: its unit has another id). */
static bool split_unit(struct dwi *d, struct dwi_cu *c, Dwarf_Die *cudie, const struct dwp *pkg, uint64_t dwo_id)
{
	Dwarf_Attribute a;
	Dwarf_Word w = 0;
	Dwarf_Addr low = 0;
	if (!dwi_lock(d))
		return false;
	c->psec = (struct dww_sections){ 0 };
	c->psec.addr = d->sec.addr;
	c->psec.naddr = d->sec.naddr;
	c->psec.ranges = d->sec.ranges;
	c->psec.nranges = d->sec.nranges;
	c->psec.split = true;
	if (dwarf_formudata(dwarf_attr(cudie, DW_AT_addr_base, &a), &w) == 0 ||
	    dwarf_formudata(dwarf_attr(cudie, DW_AT_GNU_addr_base, &a), &w) == 0)
		c->psec.skel_addr_base = w;
	if (dwarf_formudata(dwarf_attr(cudie, DW_AT_GNU_ranges_base, &a), &w) == 0)
		c->psec.skel_ranges_base = w;
	if (dwarf_lowpc(cudie, &low) == 0)
		c->psec.skel_low_pc = low;
	const char *comp_dir = dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir, &a));
	dwi_unlock(d);
	if (dwp_unit(pkg, dwo_id, &c->psec, &c->plsec))
		return false;
	if (dwp_is_dwo(pkg)) {
		/* the file's split compile unit of that id (type units may come first) */
		for (uint64_t off = 0, id; off < c->psec.ninfo && !c->unit; off = dww_next_unit(&c->psec, off)) {
			struct dww_unit *u = dww_unit_open(&c->psec, off);
			if (u && dww_dwo_id(u, &id) && id == dwo_id)
				c->unit = u;
			else
				dww_unit_free(u);
			if (!dww_next_unit(&c->psec, off))
				break;
		}
	} else {
		c->unit = dww_unit_open(&c->psec, 0);
	}
	if (c->unit && c->plsec.line)
		c->call_lines = dwl_build(&c->plsec, 0, comp_dir);
	c->own = c->unit != NULL;
	return c->own;
}

/* The split unit of a skeleton from its .dwo file, which the opener opens as every file a file
 * names is opened (base_open_file): libdw's own search (dwarf_cu_info's subdie) would open the
 * name the skeleton gives with a plain open(2), waiting forever on a FIFO put there, and map
 * the file. @return false when there is no such file or it has not this unit. */
static bool dwo_unit(struct dwi *d, struct dwi_cu *c, Dwarf_Die *cudie, uint64_t dwo_id)
{
	Dwarf_Attribute a;
	if (!dwi_lock(d))
		return false;
	const char *name = dwarf_formstring(dwarf_attr(cudie, DW_AT_dwo_name, &a));
	if (!name)
		name = dwarf_formstring(dwarf_attr(cudie, DW_AT_GNU_dwo_name, &a));
	const char *dir = dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir, &a));
	dwi_unlock(d);
	struct elfv *v = name && d->open_dwo ? d->open_dwo(d->open_dwo_ctx, name, dir) : NULL;
	struct dwp *p = v ? dwp_open_dwo(v) : NULL;
	if (!p) {
		elfv_close(v);
		return false;
	}
	/* what is needed is read: no descriptor kept per unit */
	elfv_detach(v);
	c->dwo_view = v;
	c->dwo = p;
	if (split_unit(d, c, cudie, p, dwo_id))
		return true;
	dwp_close(p);
	elfv_close(v);
	c->dwo = NULL;
	c->dwo_view = NULL;
	dww_unit_free(c->unit);
	c->unit = NULL;
	dwl_free(c->call_lines);
	c->call_lines = NULL;
	return false;
}

/* The split unit of a skeleton from the module's package (.dwp). @return false when there is
 * none. */
static bool package_unit(struct dwi *d, struct dwi_cu *c, Dwarf_Die *cudie, uint64_t dwo_id)
{
	if (!dwi_lock(d))
		return false;
	if (!d->package_tried) {
		d->package_tried = true;
		d->package = d->find_package ? d->find_package(d->find_package_ctx) : NULL;
	}
	const struct dwp *pkg = d->package;
	dwi_unlock(d);
	return pkg && split_unit(d, c, cudie, pkg, dwo_id);
}

void dwi_set_dwo_opener(struct dwi *d, struct elfv *(*open)(void *ctx, const char *name, const char *comp_dir),
                        void *ctx)
{
	if (!d)
		return;
	d->open_dwo = open;
	d->open_dwo_ctx = ctx;
}

void dwi_set_package_finder(struct dwi *d, struct dwp *(*find)(void *ctx), void *ctx)
{
	if (!d)
		return;
	d->find_package = find;
	d->find_package_ctx = ctx;
}

bool dwi_split_unit(struct dwi *d, struct dwi_cu *c, Dwarf_Die *cudie, uint64_t dwo_id)
{
	return dwo_unit(d, c, cudie, dwo_id) || package_unit(d, c, cudie, dwo_id);
}
