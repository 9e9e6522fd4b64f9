/* SPDX-License-Identifier: MIT */
/*
 * Options structs from a newer caller (issue 25): a struct larger than this library's, as a
 * later header would make it, is accepted when every byte past the end of the last field the
 * library knows is zero, and refused with -E2BIG (errno E2BIG for constructors) when one is
 * not; the padding after the last field counts (a field added there later would otherwise be
 * ignored unsaid). One struct of each kind of call: a constructor (uw_session_new,
 * uw_tracker_new, uw_profile_new), calls that take options (uw_symbolize_frames,
 * uw_profile_write_folded's siblings) and inputs (uw_tracker_mmap, uw_unwind_sample); and the
 * options of the raw-record calls (uw_order_new: the experimental calls of 0.2 take no other).
 * Also: UW_OPTS leaves the padding zero on a dirty stack. Public header of 0.1 and those calls.
 *
 * usage: optsgrow      (prints one line per check; exit 1 on the first wrong answer)
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unwound/unwound.h>

static int failed;

static void expect(const char *what, int got, int want)
{
	printf("%-62s %s (%d)\n", what, got == want ? "ok" : "WRONG", got);
	if (got != want) {
		fprintf(stderr, "optsgrow: %s: got %d (%s), want %d (%s)\n", what, got, uw_strerror(got), want,
			uw_strerror(want));
		failed = 1;
	}
}

/* the end of a struct's last field */
#define END(T, last) (offsetof(struct T, last) + sizeof(((struct T *)0)->last))

/* A newer caller's struct: the library's, then 16 more bytes. */
#define BIG(T)                          \
	union {                         \
		struct T o;             \
		unsigned char b[sizeof(struct T) + 16]; \
	}

static struct uw_session *s;

/* Constructors: NULL and errno, as an error value. */
static int session_new(const void *o)
{
	errno = 0;
	struct uw_session *x = uw_session_new(o);
	int e = x ? 0 : -errno;
	uw_session_free(x);
	return e;
}

static int tracker_new(const void *o)
{
	errno = 0;
	struct uw_tracker *x = uw_tracker_new(s, o);
	int e = x ? 0 : -errno;
	uw_tracker_free(x);
	return e;
}

static int profile_new(const void *o)
{
	errno = 0;
	struct uw_profile *x = uw_profile_new(s, o);
	int e = x ? 0 : -errno;
	uw_profile_free(x);
	return e;
}

static int order_new(const void *o)
{
	errno = 0;
	struct uw_order *x = uw_order_new(o);
	int e = x ? 0 : -errno;
	uw_order_free(x);
	return e;
}

static int symbolize(const void *o)
{
	struct uw_frame f;
	memset(&f, 0, sizeof(f));
	struct uw_symbols *out = NULL;
	int e = uw_symbolize_frames(s, &f, 0, o, &out);
	uw_symbols_free(out);
	return e;
}

static struct uw_tracker *t;

static int mmap_ev(const void *o)
{
	if (!t)
		t = uw_tracker_new(s, NULL);
	return uw_tracker_mmap(t, o);
}

static int unwind(const void *o)
{
	if (!t)
		t = uw_tracker_new(s, NULL);
	struct uw_frame frames[4];
	UW_OPTS(uw_unwind_result, res);
	return uw_unwind_sample(t, o, frames, 4, &res);
}

static int script(const void *o)
{
	UW_OPTS(uw_sample, smp, .pid = 1, .tid = 1, .comm = "x", .event_name = "cpu-clock");
	FILE *f = fopen("/dev/null", "w");
	int e = uw_script_write_sample(s, f, &smp, o);
	fclose(f);
	return e;
}

/* The three answers for one struct: larger and zero past the end (0), a byte past sizeof (-E2BIG),
 * a byte in the padding after the last field when it has some (-E2BIG). fill sets its fields. */
#define CHECK(T, last, pad, call, fill)                                                                     \
	do {                                                                                              \
		BIG(T) u;                                                                                 \
		memset(&u, 0, sizeof(u));                                                                 \
		u.o.sz = sizeof(u);                                                                       \
		fill;                                                                                     \
		char what[128];                                                                           \
		snprintf(what, sizeof(what), "%s %zu bytes, zero past its %zu", #T, sizeof(u), sizeof(struct T)); \
		expect(what, call(&u), 0);                                                                \
		u.b[sizeof(struct T) + 5] = 1;                                                            \
		snprintf(what, sizeof(what), "%s %zu bytes, byte %zu set", #T, sizeof(u), sizeof(struct T) + 5); \
		expect(what, call(&u), -E2BIG);                                                           \
		u.b[sizeof(struct T) + 5] = 0;                                                            \
		if (pad && END(T, last) < sizeof(struct T)) {                                              \
			u.o.sz = sizeof(struct T);                                                        \
			u.b[END(T, last)] = 1;                                                            \
			snprintf(what, sizeof(what), "%s of its size, padding byte %zu set", #T, END(T, last)); \
			expect(what, call(&u), -E2BIG);                                                   \
			u.b[END(T, last)] = 0;                                                            \
		}                                                                                         \
		u.o.sz = sizeof(struct T);                                                                \
		snprintf(what, sizeof(what), "%s of its size, all zero", #T);                             \
		expect(what, call(&u), 0);                                                                \
	} while (0)

__attribute__((noinline)) static void dirty_stack(void)
{
	volatile unsigned char junk[4096];
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = 0xa5;
}

__attribute__((noinline)) static int padding_of_opts(void)
{
	UW_OPTS(uw_symbolize_opts, o, .lines = 1);
	const unsigned char *b = (const unsigned char *)&o;
	int bad = 0;
	for (size_t i = END(uw_symbolize_opts, lines); i < sizeof(o); i++)
		bad |= b[i];
	return bad ? -E2BIG : symbolize(&o);
}

int main(void)
{
	s = uw_session_new(NULL);
	if (!s)
		return 1;
	uint64_t regs[3] = { 0x1000, 0x2000, 0x3000 }; /* BP SP IP */
	/* (the structs of 0.1 that ended in padding, with their last field: the test builds
	 * against 0.1's header too; the others without a padding check) */
	CHECK(uw_session_opts, sz, 0, session_new, (void)0);
	CHECK(uw_tracker_opts, live, 1, tracker_new, (void)0);
	CHECK(uw_profile_opts, keep_order, 1, profile_new, (void)0);
	CHECK(uw_symbolize_opts, lines, 1, symbolize, u.o.lines = 1);
	CHECK(uw_script_opts, srcline, 1, script, (void)0);
	CHECK(uw_mmap_event, sz, 0, mmap_ev,
	      (u.o.pid = 7, u.o.addr = 0x400000, u.o.len = 4096, u.o.path = "/nonexistent/optsgrow"));
	CHECK(uw_sample_regs, cpumode, 1, unwind,
	      (u.o.pid = 7, u.o.abi = 2, u.o.regs = regs, u.o.regs_mask = (1ull << 6) | (1ull << 7) | (1ull << 8)));
	CHECK(uw_order_opts, max_bytes, 1, order_new, u.o.max_bytes = 4096);
	dirty_stack();
	expect("UW_OPTS(uw_symbolize_opts) on a dirty stack: padding zero", padding_of_opts(), 0);
	uw_tracker_free(t);
	uw_session_free(s);
	return failed;
}
