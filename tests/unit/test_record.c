/* SPDX-License-Identifier: MIT */
/*
 * The public decoding of raw perf records (uw_record_decode): each record type with and without
 * sample_id_all, MMAP2 with and without build-ids, malformed sizes refused with a clear error,
 * an older caller's smaller struct left alone past its size; and the ring merge (uw_order):
 * exact order over rings by perf's round rule, equal times in push order, late records, the
 * byte cap, a callback that stops.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <unwound/unwound.h>

/* records are built into this (8-byte aligned), a u64 at a time */
static uint64_t buf[1024];
static size_t pos;

static void begin(uint32_t type, uint16_t misc)
{
	memset(buf, 0, sizeof(buf));
	struct perf_event_header h = { type, misc, 0 };
	memcpy(buf, &h, 8);
	pos = 8;
}
static void u64(uint64_t v)
{
	memcpy((uint8_t *)buf + pos, &v, 8);
	pos += 8;
}
static void u32x2(uint32_t a, uint32_t b)
{
	u64((uint64_t)b << 32 | a);
}
static void str(const char *s) /* NUL-terminated, padded to 8 bytes */
{
	size_t n = strlen(s) + 1;
	memcpy((uint8_t *)buf + pos, s, n);
	pos += (n + 7) & ~(size_t)7;
}
static size_t end(void)
{
	uint16_t size = (uint16_t)pos;
	memcpy((uint8_t *)buf + 6, &size, 2);
	return pos;
}

/* sample_type of the trailer tests: TID, TIME, CPU, IDENTIFIER (trailer: pid/tid, time, cpu, id) */
#define ST (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU)

static struct uw_event *event(uint64_t sample_type, int id_all, int build_id, uint64_t regs)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.sample_type = sample_type;
	a.sample_id_all = (unsigned)id_all;
	a.build_id = (unsigned)build_id;
	a.sample_regs_user = regs;
	a.sample_stack_user = 64;
	struct uw_event *ev = uw_event_new(&a, sizeof(a));
	assert_non_null(ev);
	return ev;
}

static void trailer(void)
{
	u32x2(100, 101);      /* pid, tid */
	u64(5000);            /* time */
	u32x2(3, 0);          /* cpu */
	u64(77);              /* identifier */
}

static int decode(struct uw_event *ev, size_t len, struct uw_record *r)
{
	memset(r, 0xa5, sizeof(*r));
	r->sz = sizeof(*r);
	return uw_record_decode(ev, buf, len, r);
}

static void test_sample(void **state)
{
	(void)state;
	uint64_t st = ST | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	struct uw_event *ev = event(st, 1, 0, 0x3); /* two registers */
	begin(PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
	u64(77);                 /* identifier */
	u64(0x401234);           /* ip */
	u32x2(100, 101);         /* pid, tid */
	u64(5000);               /* time */
	u32x2(1, 0);             /* cpu */
	u64(250000);             /* period */
	u64(3);                  /* callchain */
	u64(PERF_CONTEXT_USER);
	u64(0x401234);
	u64(0x401000);
	u64(PERF_SAMPLE_REGS_ABI_64);
	u64(0x1111);
	u64(0x2222);
	u64(16);                 /* stack size */
	u64(0xaaaa);
	u64(0xbbbb);
	u64(8);                  /* dyn size */
	size_t len = end();
	struct uw_record r;
	assert_int_equal(decode(ev, len, &r), 0);
	assert_null(r.error);
	assert_int_equal(r.type, PERF_RECORD_SAMPLE);
	assert_int_equal(r.misc, PERF_RECORD_MISC_USER);
	assert_true(r.has_sample_id && r.has_time);
	assert_int_equal(r.id, 77);
	assert_int_equal(r.ip, 0x401234);
	assert_int_equal(r.pid, 100);
	assert_int_equal(r.tid, 101);
	assert_int_equal(r.time, 5000);
	assert_int_equal(r.cpu, 1);
	assert_int_equal(r.period, 250000);
	assert_int_equal(r.nr_callchain, 3);
	assert_int_equal(r.callchain[0], PERF_CONTEXT_USER);
	assert_int_equal(r.callchain[2], 0x401000);
	assert_int_equal(r.regs_abi, PERF_SAMPLE_REGS_ABI_64);
	assert_int_equal(r.regs_mask, 0x3);
	assert_int_equal(r.regs[0], 0x1111);
	assert_int_equal(r.regs[1], 0x2222);
	assert_int_equal(r.stack_size, 8); /* the bytes the kernel filled */
	assert_int_equal(((const uint64_t *)r.stack)[0], 0xaaaa);
	assert_null(r.path);
	assert_null(r.comm);
	assert_int_equal(r.map_addr, 0);

	/* a callchain longer than the record */
	memcpy((uint8_t *)buf + 8 + 6 * 8, &(uint64_t){ 1000 }, 8);
	assert_int_equal(decode(ev, len, &r), -UW_EFORMAT);
	assert_non_null(r.error);
	assert_non_null(strstr(r.error, "SAMPLE"));
	assert_int_equal(r.type, 0); /* nothing half-decoded */
	memcpy((uint8_t *)buf + 8 + 6 * 8, &(uint64_t){ 3 }, 8);
	/* a stack larger than the record */
	memcpy((uint8_t *)buf + len - 4 * 8, &(uint64_t){ 4096 }, 8);
	assert_int_equal(decode(ev, len, &r), -UW_EFORMAT);
	/* the record cut short: its header says more than given */
	memcpy((uint8_t *)buf + len - 4 * 8, &(uint64_t){ 16 }, 8);
	assert_int_equal(decode(ev, len - 8, &r), -UW_ETRUNC);
	assert_non_null(strstr(r.error, "longer than the bytes given"));
	uw_event_free(ev);
}

static void test_mmap(void **state)
{
	(void)state;
	/* MMAP, without sample_id_all */
	struct uw_event *ev = event(ST, 0, 0, 0);
	begin(PERF_RECORD_MMAP, PERF_RECORD_MISC_USER);
	u32x2(100, 100);
	u64(0x400000);
	u64(0x2000);
	u64(0x1000);
	str("/usr/bin/prog");
	struct uw_record r;
	assert_int_equal(decode(ev, end(), &r), 0);
	assert_int_equal(r.type, PERF_RECORD_MMAP);
	assert_false(r.has_sample_id);
	assert_false(r.has_time);
	assert_int_equal(r.pid, 100);
	assert_int_equal(r.map_addr, 0x400000);
	assert_int_equal(r.map_len, 0x2000);
	assert_int_equal(r.pgoff, 0x1000);
	assert_int_equal(r.prot, 5); /* PROT_READ | PROT_EXEC */
	assert_string_equal(r.path, "/usr/bin/prog");
	assert_null(r.build_id);
	/* a data mapping */
	begin(PERF_RECORD_MMAP, PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_DATA);
	u32x2(100, 100);
	u64(0x400000);
	u64(0x2000);
	u64(0);
	str("/data");
	assert_int_equal(decode(ev, end(), &r), 0);
	assert_int_equal(r.prot, 1);
	/* the path not terminated within the record */
	begin(PERF_RECORD_MMAP, PERF_RECORD_MISC_USER);
	u32x2(100, 100);
	u64(0x400000);
	u64(0x2000);
	u64(0);
	memcpy((uint8_t *)buf + pos, "abcdefgh", 8);
	pos += 8;
	assert_int_equal(decode(ev, end(), &r), -UW_EFORMAT);
	assert_non_null(strstr(r.error, "not terminated"));
	/* shorter than its fields */
	begin(PERF_RECORD_MMAP, PERF_RECORD_MISC_USER);
	u32x2(100, 100);
	u64(0x400000);
	assert_int_equal(decode(ev, end(), &r), -UW_ETRUNC);
	assert_non_null(strstr(r.error, "MMAP record shorter"));
	uw_event_free(ev);

	/* MMAP2 with device and inode, and a sample_id trailer */
	ev = event(ST, 1, 0, 0);
	begin(PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER);
	u32x2(100, 101);
	u64(0x7f0000000000);
	u64(0x10000);
	u64(0);
	u32x2(8, 1);       /* maj, min */
	u64(12345);        /* ino */
	u64(6);            /* ino generation */
	u32x2(5, 2);       /* prot, flags (MAP_PRIVATE) */
	str("/lib/libc.so.6");
	trailer();
	assert_int_equal(decode(ev, end(), &r), 0);
	assert_int_equal(r.type, PERF_RECORD_MMAP2);
	assert_int_equal(r.pid, 100);
	assert_int_equal(r.tid, 101);
	assert_int_equal(r.maj, 8);
	assert_int_equal(r.min, 1);
	assert_int_equal(r.ino, 12345);
	assert_int_equal(r.ino_generation, 6);
	assert_int_equal(r.prot, 5);
	assert_int_equal(r.flags, 2);
	assert_string_equal(r.path, "/lib/libc.so.6");
	assert_true(r.has_sample_id && r.has_time);
	assert_int_equal(r.time, 5000);
	assert_int_equal(r.cpu, 3);
	assert_int_equal(r.id, 77);
	/* the trailer missing: shorter than it */
	begin(PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER);
	u32x2(100, 101);
	assert_int_equal(decode(ev, end(), &r), -UW_ETRUNC);
	uw_event_free(ev);

	/* MMAP2 with a build-id: read as one only when the event asked for build-ids */
	for (int asked = 0; asked < 2; asked++) {
		ev = event(ST, 1, asked, 0);
		begin(PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_BUILD_ID);
		u32x2(100, 101);
		u64(0x7f0000000000);
		u64(0x10000);
		u64(0);
		uint8_t bid[24] = { 20, 0, 0, 0 };
		for (int i = 0; i < 20; i++)
			bid[4 + i] = (uint8_t)(0xa0 + i);
		memcpy((uint8_t *)buf + pos, bid, 24);
		pos += 24;
		u32x2(5, 2);
		str("/lib/libc.so.6");
		trailer();
		assert_int_equal(decode(ev, end(), &r), 0);
		if (asked) {
			assert_non_null(r.build_id);
			assert_int_equal(r.build_id_size, 20);
			assert_int_equal(r.build_id[0], 0xa0);
			assert_int_equal(r.build_id[19], 0xa0 + 19);
			assert_int_equal(r.ino, 0);
		} else {
			assert_null(r.build_id); /* the kernel's flag on an event that did not ask */
			assert_int_equal(r.maj, 20);
		}
		assert_string_equal(r.path, "/lib/libc.so.6");
		assert_int_equal(r.time, 5000);
		uw_event_free(ev);
	}
}

static void test_comm_fork_exit(void **state)
{
	(void)state;
	for (int id_all = 0; id_all < 2; id_all++) {
		struct uw_event *ev = event(ST, id_all, 0, 0);
		struct uw_record r;
		begin(PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC);
		u32x2(100, 101);
		str("worker");
		if (id_all)
			trailer();
		assert_int_equal(decode(ev, end(), &r), 0);
		assert_int_equal(r.type, PERF_RECORD_COMM);
		assert_int_equal(r.pid, 100);
		assert_int_equal(r.tid, 101);
		assert_string_equal(r.comm, "worker");
		assert_true(r.exec);
		assert_int_equal(r.has_time, id_all);
		assert_int_equal(r.time, id_all ? 5000 : 0);
		assert_int_equal(r.cpu, id_all ? 3 : 0);

		for (uint32_t type = PERF_RECORD_EXIT; type <= PERF_RECORD_FORK; type += PERF_RECORD_FORK - PERF_RECORD_EXIT) {
			begin(type, 0);
			u32x2(200, 100); /* pid, ppid */
			u32x2(201, 101); /* tid, ptid */
			u64(4000);       /* its own time */
			if (id_all)
				trailer();
			assert_int_equal(decode(ev, end(), &r), 0);
			assert_int_equal(r.type, type);
			assert_int_equal(r.pid, 200);
			assert_int_equal(r.tid, 201);
			assert_int_equal(r.ppid, 100);
			assert_int_equal(r.ptid, 101);
			assert_true(r.has_time);
			assert_int_equal(r.time, id_all ? 5000 : 4000); /* the trailer's, else its own */
			/* cut short */
			begin(type, 0);
			u32x2(200, 100);
			assert_int_equal(decode(ev, end(), &r), -UW_ETRUNC);
			assert_non_null(strstr(r.error, id_all ? "sample_id trailer" : type == PERF_RECORD_FORK ? "FORK" : "EXIT"));
		}
		begin(PERF_RECORD_LOST, 0);
		u64(77);
		u64(12);
		if (id_all)
			trailer();
		assert_int_equal(decode(ev, end(), &r), 0);
		assert_int_equal(r.lost, 12);
		/* a type without decoded fields: its header (and trailer) */
		begin(PERF_RECORD_THROTTLE, 0);
		u64(1);
		u64(2);
		u64(3);
		if (id_all)
			trailer();
		assert_int_equal(decode(ev, end(), &r), 0);
		assert_int_equal(r.type, PERF_RECORD_THROTTLE);
		assert_int_equal(r.has_sample_id, id_all);
		uw_event_free(ev);
	}
}

static void test_bad_input(void **state)
{
	(void)state;
	struct uw_event *ev = event(ST, 1, 0, 0);
	struct uw_record r;
	begin(PERF_RECORD_COMM, 0);
	u32x2(1, 1);
	str("x");
	trailer();
	size_t len = end();
	/* header size below 8 */
	uint16_t small = 4;
	memcpy((uint8_t *)buf + 6, &small, 2);
	assert_int_equal(decode(ev, len, &r), -UW_EFORMAT);
	assert_non_null(strstr(r.error, "smaller than its header"));
	len = end();
	/* fewer bytes than a header */
	assert_int_equal(decode(ev, 4, &r), -UW_ETRUNC);
	/* unaligned */
	r.sz = sizeof(r);
	assert_int_equal(uw_record_decode(ev, (uint8_t *)buf + 4, len, &r), -EINVAL);
	assert_non_null(strstr(r.error, "aligned"));
	assert_int_equal(uw_record_decode(NULL, buf, len, &r), -EINVAL);
	assert_int_equal(uw_record_decode(ev, buf, len, NULL), -EINVAL);
	/* an older caller's struct: nothing written past its size */
	struct {
		struct uw_record r;
		uint8_t guard[64];
	} old;
	memset(&old, 0xa5, sizeof(old));
	old.r.sz = offsetof(struct uw_record, pid);
	assert_int_equal(uw_record_decode(ev, buf, len, &old.r), 0);
	assert_int_equal(old.r.type, PERF_RECORD_COMM);
	assert_int_equal(((uint8_t *)&old.r)[offsetof(struct uw_record, pid)], 0xa5);
	/* and a newer one's: zeros past ours */
	old.r.sz = sizeof(old);
	assert_int_equal(uw_record_decode(ev, buf, len, &old.r), 0);
	assert_int_equal(old.guard[63], 0);
	assert_int_equal(old.r.sz, sizeof(old));
	/* attributes */
	uint8_t attr[128] = { 0 };
	assert_null(uw_event_new(attr, 32));
	assert_int_equal(errno, EINVAL);
	assert_null(uw_event_new(NULL, 64));
	struct uw_event *v0 = uw_event_new(attr, 64);
	assert_non_null(v0);
	uw_event_free(v0);
	uw_event_free(ev);
}

/* ---- the merge */
struct got {
	unsigned n;
	unsigned ring[64];
	uint64_t time[64];
	int stop_at;
};

static int take(void *ctx, unsigned ring, uint64_t time, const void *rec, size_t len)
{
	struct got *g = ctx;
	assert_int_equal(len, 16);
	assert_int_equal((uintptr_t)rec % 8, 0);
	uint64_t v;
	memcpy(&v, (const uint8_t *)rec + 8, 8);
	assert_int_equal(v, time); /* the record's bytes with it */
	g->ring[g->n] = ring;
	g->time[g->n++] = time;
	return g->stop_at && (int)g->n == g->stop_at ? 99 : 0;
}

static void push(struct uw_order *o, unsigned ring, uint64_t time)
{
	uint64_t rec[2] = { (uint64_t)16 << 48 | PERF_RECORD_SAMPLE, time };
	assert_int_equal(uw_order_push(o, ring, time, rec, 16), 0);
}

static void test_order(void **state)
{
	(void)state;
	struct uw_order *o = uw_order_new(NULL);
	assert_non_null(o);
	struct got g = { 0 };
	/* pass 1: three rings */
	push(o, 0, 10);
	push(o, 0, 40);
	push(o, 1, 20);
	push(o, 2, 15);
	push(o, 2, 30);
	assert_int_equal(uw_order_round(o, take, &g), 0);
	assert_int_equal(g.n, 0); /* nothing before the pass before */
	/* pass 2: ring 1 had a record older than pass 1's newest */
	push(o, 1, 35);
	push(o, 0, 50);
	push(o, 2, 45);
	assert_int_equal(uw_order_round(o, take, &g), 0);
	/* released: every record no newer than pass 1's newest (40) */
	uint64_t want1[] = { 10, 15, 20, 30, 35, 40 };
	unsigned ring1[] = { 0, 2, 1, 2, 1, 0 };
	assert_int_equal(g.n, 6);
	for (unsigned i = 0; i < 6; i++) {
		assert_int_equal(g.time[i], want1[i]);
		assert_int_equal(g.ring[i], ring1[i]);
	}
	/* a late record (older than 40, released): next, in push order, and counted */
	push(o, 1, 38);
	push(o, 2, 46);
	push(o, 1, 46); /* equal times: push order */
	assert_int_equal(uw_order_release_to(o, 46, take, &g), 0);
	uint64_t want2[] = { 38, 45, 46, 46 };
	unsigned ring2[] = { 1, 2, 2, 1 };
	assert_int_equal(g.n, 10);
	for (unsigned i = 0; i < 4; i++) {
		assert_int_equal(g.time[6 + i], want2[i]);
		assert_int_equal(g.ring[6 + i], ring2[i]);
	}
	struct uw_order_stats st = { .sz = sizeof(st) };
	assert_int_equal(uw_order_stats(o, &st), 0);
	assert_int_equal(st.pushed, 11);
	assert_int_equal(st.released, 10);
	assert_int_equal(st.late, 1);
	assert_int_equal(st.held, 1);
	assert_int_equal(st.held_bytes, 16);
	/* a callback that stops: its value, the rest held */
	push(o, 0, 60);
	push(o, 0, 70);
	g.stop_at = 12;
	assert_int_equal(uw_order_flush(o, take, &g), 99);
	assert_int_equal(g.n, 12);
	assert_int_equal(g.time[10], 50);
	assert_int_equal(g.time[11], 60);
	g.stop_at = 0;
	assert_int_equal(uw_order_flush(o, take, &g), 0);
	assert_int_equal(g.n, 13);
	assert_int_equal(g.time[12], 70);
	uw_order_free(o);

	/* the byte cap: past it a release hands on the oldest before their turn */
	UW_OPTS(uw_order_opts, oo, .max_bytes = 32);
	o = uw_order_new(&oo);
	memset(&g, 0, sizeof(g));
	push(o, 0, 5);
	push(o, 1, 3);
	push(o, 0, 9);
	assert_int_equal(uw_order_round(o, take, &g), 0);
	assert_int_equal(g.n, 1);
	assert_int_equal(g.time[0], 3);
	st.sz = sizeof(st);
	assert_int_equal(uw_order_stats(o, &st), 0);
	assert_int_equal(st.early, 1);
	uw_order_free(o);
	/* bad arguments */
	assert_int_equal(uw_order_push(NULL, 0, 0, buf, 16), -EINVAL);
	struct uw_order_opts bad = { .sz = 3 };
	assert_null(uw_order_new(&bad));
	/* a newer caller's larger options: taken while what follows max_bytes is zero, refused
	 * (E2BIG) when a field this library does not know is set */
	union {
		struct uw_order_opts o;
		uint8_t b[sizeof(struct uw_order_opts) + 16];
	} big;
	memset(&big, 0, sizeof(big));
	big.o.sz = sizeof(big);
	o = uw_order_new(&big.o);
	assert_non_null(o);
	uw_order_free(o);
	big.b[sizeof(struct uw_order_opts) + 3] = 1;
	errno = 0;
	assert_null(uw_order_new(&big.o));
	assert_int_equal(errno, E2BIG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sample),
		cmocka_unit_test(test_mmap),
		cmocka_unit_test(test_comm_fork_exit),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_order),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
