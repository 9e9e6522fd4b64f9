/* SPDX-License-Identifier: MIT */
/*
 * Deferred user callchains (Linux 6.19+, attr.defer_callchain): a sample taken in the kernel
 * ends its callchain with PERF_CONTEXT_USER_DEFERRED and a cookie; the user part comes later,
 * when the task returns to user space, in a PERF_RECORD_CALLCHAIN_DEFERRED record
 * { u64 cookie; u64 nr; u64 ips[nr]; sample_id } of that thread (several samples taken during
 * one stay in the kernel share it). Such samples are held here, in time order, until the
 * thread's record with their cookie is delivered (records are delivered in time order, so it
 * follows them); each is then delivered as the sample it stands for: its callchain rewritten to
 * the kernel part, PERF_CONTEXT_USER and the user ips (writers see that record). Samples whose
 * record never comes are delivered at the end (or when too many wait) with their kernel part
 * only, stopped "deferred user callchain missing".
 *
 * The kernel writes one record per stay in the kernel, when the task returns to user space
 * (task work), and keeps the cookie until the return itself: a sample taken after the record was
 * written (in the rest of the return path, or scheduled out there) carries the same cookie and
 * gets no record of its own. So the last record of each thread is kept, and a sample that comes
 * with its cookie is delivered at once with its user part.
 *
 * The stage's state is struct reader_deferred alone (the recording's attributes read through it);
 * a sample it lets go is handed to its delivery callback, its counts kept for the reader's stats.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "perf/read/reader_deferred.h"

#define PC_USER_DEFERRED ((uint64_t)-640)
#define DEFERRED_MAX_HELD 65536u  /* samples waiting at once: past it, the oldest go without */
#define DEFERRED_MAX_KEPT 65536u  /* threads whose last record is kept: past it, all are dropped */

/* A thread's last record (struct reader_deferred: deflast), keyed by tid, or by cookie | 1 << 63 when the
 * record does not say its thread. */
struct last_chain {
	uint64_t cookie, nr;
	uint64_t ips[];
};

static uint64_t last_key(bool has_tid, uint32_t tid, uint64_t cookie)
{
	return has_tid ? tid : (cookie | 1ull << 63);
}

static void forget_last(struct reader_deferred *d)
{
	uint64_t k;
	void *v;
	for (size_t it = 0; base_map_next(&d->deflast, &it, &k, &v);)
		free(v);
	base_map_free(&d->deflast);
	base_map_init(&d->deflast);
}

/* Keeps the record's user part as its thread's last (a failure to keep it loses nothing but the
 * samples that would have come after it with its cookie). */
static void keep_last(struct reader_deferred *d, uint64_t key, uint64_t cookie, const uint8_t *ips, uint64_t nr)
{
	if (!d->deflast_init) {
		base_map_init(&d->deflast);
		d->deflast_init = true;
	}
	struct last_chain *old = base_map_get(&d->deflast, key);
	if (!old && d->deflast.len >= DEFERRED_MAX_KEPT)
		forget_last(d);
	struct last_chain *l = realloc(old, sizeof(*l) + nr * 8);
	if (!l) {
		free(base_map_del(&d->deflast, key));
		return;
	}
	l->cookie = cookie;
	l->nr = nr;
	memcpy(l->ips, ips, nr * 8);
	if (base_map_put(&d->deflast, key, l)) {
		if (old)
			base_map_del(&d->deflast, key);
		free(l);
	}
}

/* The user part of the thread's last record when it has this cookie. */
static const struct last_chain *last_of(const struct reader_deferred *d, uint32_t tid, uint64_t cookie)
{
	if (!d->deflast_init)
		return NULL;
	const struct last_chain *l = base_map_get(&d->deflast, last_key(true, tid, cookie));
	if (l && l->cookie == cookie)
		return l;
	l = base_map_get(&d->deflast, last_key(false, tid, cookie));
	return l && l->cookie == cookie ? l : NULL;
}

struct held {
	uint64_t cookie, time, ord;
	uint32_t tid, len;
	uint8_t *rec;
	unsigned aidx;
};

bool reader_deferred_cookie(const struct perf_sample *ps, uint64_t *cookie, uint64_t *at)
{
	/* the kernel ends the callchain with the marker and the cookie */
	if (ps->nr_callchain < 2)
		return false;
	uint64_t i = ps->nr_callchain - 2, ip;
	memcpy(&ip, ps->callchain + 8 * i, 8);
	if (ip != PC_USER_DEFERRED)
		return false;
	memcpy(cookie, ps->callchain + 8 * (i + 1), 8);
	*at = i;
	return true;
}

/* A held sample as the sample it stands for: the callchain's deferred marker and cookie
 * replaced by PERF_CONTEXT_USER and ips (none: the kernel part alone). */
static int redeliver(struct reader_deferred *d, unsigned aidx, const uint8_t *rec, uint32_t len, uint64_t ord,
                     const uint8_t *ips, uint64_t nr)
{
	const struct perf_attr *a = &d->at->attrs[aidx];
	struct perf_sample ps;
	uint64_t cookie, at;
	if (!a || perf_sample_decode(a, rec + 8, len - 8, &ps) || !reader_deferred_cookie(&ps, &cookie, &at))
		return 0; /* (decoded when it was held) */
	size_t chain_off = (size_t)(ps.callchain - rec), old_bytes = ps.nr_callchain * 8;
	uint64_t new_nr = at + (nr ? 1 + nr : 0);
	size_t new_len = len - old_bytes + new_nr * 8;
	if (new_len > UINT16_MAX) {
		/* a record's size is 16 bits: the longest user part that fits */
		uint64_t room = (UINT16_MAX - (len - old_bytes)) / 8;
		nr = room > at + 1 ? UW_MIN(nr, room - at - 1) : 0;
		new_nr = at + (nr ? 1 + nr : 0);
		new_len = len - old_bytes + new_nr * 8;
	}
	if (!d->defbuf && !(d->defbuf = malloc(1u << 16)))
		return -ENOMEM;
	uint8_t *out = d->defbuf;
	memcpy(out, rec, chain_off);
	memcpy(out + chain_off, ps.callchain, at * 8);
	size_t w = chain_off + at * 8;
	if (nr) {
		uint64_t u = PC_USER;
		memcpy(out + w, &u, 8);
		memcpy(out + w + 8, ips, nr * 8);
		w += 8 + nr * 8;
	}
	memcpy(out + w, rec + chain_off + old_bytes, len - chain_off - old_bytes);
	memcpy(out + chain_off - 8, &new_nr, 8);
	uint16_t sz = (uint16_t)new_len;
	memcpy(out + 6, &sz, 2);
	return d->deliver(d->ctx, aidx, out, (uint32_t)new_len, ord, !nr);
}

static void release(struct held *h)
{
	free(h->rec);
	h->rec = NULL;
}

/* The oldest held sample delivered without its user part (the vector's live part starts at
 * held_head: taking the oldest costs no move of the others). */
static int give_up_oldest(struct reader_deferred *d)
{
	struct held *h = (struct held *)d->held.data + d->held_head;
	d->n.missing++;
	int err = redeliver(d, h->aidx, h->rec, h->len, h->ord, NULL, 0);
	release(h);
	if (++d->held_head == d->held.len) {
		d->held_head = d->held.len = 0;
	} else if (d->held_head >= 4096 && d->held_head * 2 >= d->held.len) {
		struct held *all = d->held.data;
		memmove(all, all + d->held_head, (d->held.len - d->held_head) * sizeof(*all));
		d->held.len -= d->held_head;
		d->held_head = 0;
	}
	return err;
}

int reader_deferred_hold(struct reader_deferred *d, unsigned aidx, const uint8_t *rec, uint32_t len, uint32_t tid, uint64_t time,
                         uint64_t cookie, uint64_t ord)
{
	d->n.samples++;
	/* its thread's record already came (the sample was taken on the way back to user space) */
	const struct last_chain *l = last_of(d, tid, cookie);
	if (l) {
		d->n.stitched++;
		return redeliver(d, aidx, rec, len, ord, (const uint8_t *)l->ips, l->nr);
	}
	if (d->held.len - d->held_head >= DEFERRED_MAX_HELD) {
		int err = give_up_oldest(d);
		if (err)
			return err;
	}
	if (!d->held.elem)
		d->held = BASE_VEC_INIT(struct held);
	uint8_t *copy = malloc(len);
	struct held *h = copy ? base_vec_push(&d->held) : NULL;
	if (!h) {
		free(copy);
		return -ENOMEM;
	}
	memcpy(copy, rec, len);
	*h = (struct held){ cookie, time, ord, tid, len, copy, aidx };
	return 0;
}

int reader_deferred_record(struct reader_deferred *d, unsigned aidx, const uint8_t *rec, uint32_t len, uint64_t time)
{
	d->n.records++;
	const struct perf_attr *a = &d->at->attrs[aidx];
	size_t n = len - 8;
	if (n < 16) {
		d->n.malformed++;
		return 0;
	}
	uint64_t cookie, nr;
	memcpy(&cookie, rec + 8, 8);
	memcpy(&nr, rec + 16, 8);
	size_t trailer = a ? a->id_trailer_size : 0;
	if (nr > (n - 16) / 8 || 16 + nr * 8 + trailer > n) {
		d->n.malformed++;
		return 0;
	}
	const uint8_t *ips = rec + 24;
	/* the thread: from the record's sample_id (pid, tid come first when the event has TID) */
	uint32_t tid = 0;
	bool has_tid = false;
	if (a && trailer) {
		struct perf_sample_id sid;
		if ((a->sample_type & PS_TID) && perf_sample_id_decode(a, rec + 8 + n - trailer, trailer, &sid) == 0) {
			tid = sid.tid;
			has_tid = true;
		}
	}
	/* the kernel writes PERF_CONTEXT_USER first: with it or without, the same chain */
	if (nr) {
		uint64_t first;
		memcpy(&first, ips, 8);
		if (first == PC_USER) {
			ips += 8;
			nr--;
		}
	}
	keep_last(d, last_key(has_tid, tid, cookie), cookie, ips, nr);
	/* every sample of the thread waiting on this cookie gets the chain. (perf's session.c also
	 * delivers the thread's samples waiting on an older cookie then, without: not here, a
	 * record delivered late, after its ordering window, may come after a newer one) */
	struct held *h = d->held.data;
	size_t keep = d->held_head, matched = 0;
	int err = 0;
	for (size_t i = d->held_head; i < d->held.len; i++) {
		bool match = h[i].cookie == cookie && (!has_tid || h[i].tid == tid) && h[i].time <= time;
		if (!match) {
			h[keep++] = h[i];
			continue;
		}
		if (!err)
			err = redeliver(d, h[i].aidx, h[i].rec, h[i].len, h[i].ord, ips, nr);
		d->n.stitched++;
		matched++;
		release(&h[i]);
	}
	d->held.len = keep;
	if (keep == d->held_head)
		d->held_head = d->held.len = 0;
	if (!matched)
		d->n.unmatched++;
	return err;
}

uint64_t reader_deferred_oldest(const struct reader_deferred *d)
{
	/* (held in time order) */
	return d->held.len > d->held_head ? ((const struct held *)d->held.data)[d->held_head].time : UINT64_MAX;
}

int reader_deferred_flush(struct reader_deferred *d)
{
	int err = 0;
	while (d->held.len > d->held_head && !err)
		err = give_up_oldest(d);
	return err;
}

void reader_deferred_free(struct reader_deferred *d)
{
	struct held *h = d->held.data;
	for (size_t i = d->held_head; i < d->held.len; i++)
		release(&h[i]);
	base_vec_free(&d->held);
	if (d->deflast_init)
		forget_last(d);
	base_map_free(&d->deflast);
	free(d->defbuf);
	d->defbuf = NULL;
}

void reader_deferred_init(struct reader_deferred *d, const struct reader_attrs *at, reader_deferred_fn deliver,
                          void *ctx)
{
	memset(d, 0, sizeof(*d));
	d->at = at;
	d->deliver = deliver;
	d->ctx = ctx;
}
