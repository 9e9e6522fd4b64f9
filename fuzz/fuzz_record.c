/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the public decoding of raw records (uw_record_decode) and the ring merge
 * (uw_order). Input: u16 attribute size, the attribute, then records (each: u8 ring, u16
 * length, bytes). Every record is decoded (copied to an aligned buffer first); what the decoder
 * points to must lie inside the record; decoded records go through the merge, a round every
 * few, then a flush; each record the merge hands on is decoded again.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unwound/unwound.h>

static uint64_t rbuf[65536 / 8 + 1];

static void inside(const void *p, size_t n, const void *rec, size_t len)
{
	if (!p)
		return;
	const uint8_t *a = p, *b = rec;
	if (a < b || a + n > b + len || n > len)
		abort();
}

static void check(const struct uw_event *ev, const void *rec, size_t len, struct uw_record *r)
{
	r->sz = sizeof(*r);
	if (uw_record_decode(ev, rec, len, r)) {
		if (!r->error)
			abort(); /* an error always says what */
		return;
	}
	inside(r->callchain, r->nr_callchain * 8, rec, len);
	inside(r->regs, r->regs_abi ? (size_t)__builtin_popcountll(r->regs_mask) * 8 : 0, rec, len);
	inside(r->stack, r->stack_size, rec, len);
	inside(r->build_id, r->build_id_size, rec, len);
	if (r->path)
		inside(r->path, strlen(r->path) + 1, rec, len);
	if (r->comm)
		inside(r->comm, strlen(r->comm) + 1, rec, len);
}

static int again(void *ctx, unsigned ring, uint64_t time, const void *rec, size_t len)
{
	(void)ring, (void)time;
	struct uw_record r;
	check(ctx, rec, len, &r);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	uint16_t asize;
	memcpy(&asize, data, 2);
	data += 2;
	size -= 2;
	if (asize > size)
		asize = (uint16_t)size;
	struct uw_event *ev = uw_event_new(data, asize);
	data += asize;
	size -= asize;
	if (!ev)
		return 0;
	UW_OPTS(uw_order_opts, oo, .max_bytes = 1 << 16);
	struct uw_order *o = uw_order_new(&oo);
	unsigned n = 0;
	while (o && size >= 3) {
		unsigned ring = data[0] % 4;
		uint16_t len;
		memcpy(&len, data + 1, 2);
		data += 3;
		size -= 3;
		if (len > size)
			len = (uint16_t)size;
		memcpy(rbuf, data, len);
		data += len;
		size -= len;
		struct uw_record r;
		check(ev, rbuf, len, &r);
		if (r.error == NULL && len >= 8)
			uw_order_push(o, ring, r.time, rbuf, len);
		/* unaligned and short: refused */
		if (len > 1) {
			r.sz = sizeof(r);
			uw_record_decode(ev, (const uint8_t *)rbuf + 1, len - 1u, &r);
		}
		if (++n % 5 == 0)
			uw_order_round(o, again, ev);
	}
	if (o)
		uw_order_flush(o, again, ev);
	uw_order_free(o);
	uw_event_free(ev);
	return 0;
}
