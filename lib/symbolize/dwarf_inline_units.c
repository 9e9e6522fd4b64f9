/* SPDX-License-Identifier: MIT */
/*
 * A handle's units by address (.debug_aranges, or each unit's ranges) and by offset (the units
 * opened for dww_attrs when a DIE refers into another unit). Under the handle's lock
 * (dwi_lock): these are shared by every lookup in the handle; a unit is read without it.
 */
#include "symbolize/dwarf_inline_int.h"
#include "symbolize/dwarf_walk.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <stdlib.h>

char dwi_no_unit; /* attr_units: a unit dww cannot read */

static struct dww_unit *attr_unit_answer(struct dww_unit *w, uint64_t off)
{
	return !w || w == (void *)&dwi_no_unit || !dww_unit_has(w, off) ? NULL : w;
}

struct dww_unit *dwi_attr_unit(struct dwi *d, uint64_t off)
{
	/* a unit already opened is found without the handle's lock: the units' offsets and the
	 * units opened stay once published (two threads naming functions otherwise took turns at
	 * the lock for every name) */
	if (__atomic_load_n(&d->unit_offs_ready, __ATOMIC_ACQUIRE)) {
		size_t k = base_upper_bound(d->unit_offs, d->nunit_offs, sizeof(uint64_t), 0, off);
		if (!k)
			return NULL;
		struct dww_unit *w = __atomic_load_n(&d->attr_unit_at[k - 1], __ATOMIC_ACQUIRE);
		if (w)
			return attr_unit_answer(w, off);
	}
	if (!dwi_lock(d))
		return NULL;
	if (!d->unit_offs_built) {
		d->unit_offs_built = true;
		struct base_vec v = BASE_VEC_INIT(uint64_t);
		for (uint64_t u = 0, guard = 0; guard < (1u << 24); guard++) {
			uint64_t *slot = base_vec_push(&v);
			if (!slot)
				break;
			*slot = u;
			if (!(u = dww_next_unit(&d->sec, u)) || u >= d->sec.ninfo)
				break;
		}
		d->unit_offs = v.data;
		d->nunit_offs = v.len;
		d->attr_unit_at = v.len ? calloc(v.len, sizeof(*d->attr_unit_at)) : NULL;
		if (d->attr_unit_at)
			__atomic_store_n(&d->unit_offs_ready, true, __ATOMIC_RELEASE);
	}
	size_t k = base_upper_bound(d->unit_offs, d->nunit_offs, sizeof(uint64_t), 0, off);
	if (!k) {
		dwi_unlock(d);
		return NULL;
	}
	uint64_t uoff = d->unit_offs[k - 1];
	struct dww_unit *w = base_map_get(&d->attr_units, uoff);
	if (!w) {
		/* read without the lock (others meanwhile look up units and names); one another
		 * thread read first wins */
		dwi_unlock(d);
		struct dww_unit *nw = dww_unit_open(&d->sec, uoff);
		if (!dwi_lock(d)) {
			dww_unit_free(nw);
			return NULL;
		}
		if ((w = base_map_get(&d->attr_units, uoff))) {
			dww_unit_free(nw);
		} else if (base_map_put(&d->attr_units, uoff, nw ? (void *)nw : (void *)&dwi_no_unit)) {
			dww_unit_free(nw);
			dwi_unlock(d);
			return NULL;
		} else {
			w = nw;
		}
	}
	if (d->attr_unit_at)
		__atomic_store_n(&d->attr_unit_at[k - 1], w ? w : (struct dww_unit *)(void *)&dwi_no_unit,
				 __ATOMIC_RELEASE);
	dwi_unlock(d);
	return attr_unit_answer(w, off);
}

static int cmp_arange(const void *x, const void *y)
{
	const struct dwi_arange *a = x, *b = y;
	return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* .debug_aranges (DWARF 2-5: version 2 sets of address/length pairs, each set for one unit).
 * @return false when malformed or not handled (the caller then builds from the units). */
static bool aranges_parse(struct dwi *d, struct base_vec *out)
{
	struct base_cursor c = base_cursor(d->aranges_sec, d->naranges_sec);
	while (base_cur_left(&c) > 0) {
		unsigned offsz;
		uint64_t len = base_cur_initial_length(&c, &offsz);
		if (c.bad || len > base_cur_left(&c) || len < 4)
			return false;
		struct base_cursor set = base_cursor(c.p, (size_t)len);
		const uint8_t *set_start = c.p - (offsz == 4 ? 4 : 12);
		c.p += len;
		uint16_t version = base_cur_u16(&set);
		uint64_t unit = offsz == 4 ? base_cur_u32(&set) : base_cur_u64(&set);
		uint8_t asz = base_cur_u8(&set), ssz = base_cur_u8(&set);
		if (set.bad || version != 2 || (asz != 8 && asz != 4) || ssz != 0)
			return false;
		/* tuples start at a multiple of twice the address size from the set's start */
		size_t hdr = (size_t)(set.p - set_start), align = 2u * asz;
		base_cur_skip(&set, (align - hdr % align) % align);
		while (!set.bad && base_cur_left(&set) >= 2u * asz) {
			uint64_t lo = asz == 8 ? base_cur_u64(&set) : base_cur_u32(&set);
			uint64_t n = asz == 8 ? base_cur_u64(&set) : base_cur_u32(&set);
			if (lo == 0 && n == 0)
				break;
			if (!n || lo + n < lo)
				continue;
			struct dwi_arange *r = base_vec_push(out);
			if (!r)
				return false;
			*r = (struct dwi_arange){ lo, lo + n, unit, NULL };
		}
	}
	return !c.bad;
}

/* Units by address: .debug_aranges when the file has it (GCC writes it), else each unit's own
 * DW_AT_low_pc/high_pc/ranges (clang writes no .debug_aranges by default, and libdw 0.188's
 * dwarf_addrdie then finds nothing). Ours because dwarf_addrdie allocated and sorted libdw's
 * table on the first call and cost 3-5 ms of a CPython `report --script`. */
void dwi_aranges_build(struct dwi *d)
{
	d->ar_built = true;
	struct base_vec v = BASE_VEC_INIT(struct dwi_arange);
	if (!d->aranges_sec || !aranges_parse(d, &v)) {
		v.len = 0;
		d->ar_from_units = true;
		Dwarf_Off off = 0, next;
		size_t hsize;
		while (dwarf_nextcu(d->dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
			Dwarf_Die cu;
			Dwarf_Addr base, lo, hi;
			ptrdiff_t roff = 0;
			if (dwarf_offdie(d->dw, off + hsize, &cu)) {
				while ((roff = dwarf_ranges(&cu, roff, &base, &lo, &hi)) > 0) {
					struct dwi_arange *r = hi > lo ? base_vec_push(&v) : NULL;
					if (r)
						*r = (struct dwi_arange){ lo, hi, off, NULL };
				}
			}
			off = next;
		}
	}
	if (v.len > 1)
		qsort(v.data, v.len, sizeof(struct dwi_arange), cmp_arange);
	d->ar = v.data;
	d->nar = v.len;
	__atomic_store_n(&d->ar_ready, true, __ATOMIC_RELEASE);
}
