/* SPDX-License-Identifier: MIT */
/*
 * The perf.data writer, read back by the reader: each sample's stop reason in feature 250
 * (spilled to an unnamed file past the runs kept in memory, so alternating reasons over 150,000
 * samples exercise it); a writer stopped after a sync (as a killed recorder leaves its file)
 * gives a file every synced record of which is read, and which says it was not finished; a
 * writer closed before it finished or published leaves the path as it was.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "perf/perf.h"

#define NSAMPLES 150000

static char dir[] = "/tmp/uw-test-writer-XXXXXX";

/* A sample: IP, TID, TIME, CALLCHAIN of one user frame. */
static size_t sample(uint8_t *b, uint64_t time)
{
	uint64_t v[] = { 0x401000, (uint64_t)7 << 32 | 7, time, 2, (uint64_t)-512, 0x401000 };
	uint32_t type = PR_SAMPLE;
	uint16_t misc = PM_USER, size = 8 + sizeof(v);
	memcpy(b, &type, 4);
	memcpy(b + 4, &misc, 2);
	memcpy(b + 6, &size, 2);
	memcpy(b + 8, v, sizeof(v));
	return size;
}

static struct perf_writer *writer(const char *path)
{
	struct perf_writer *w;
	assert_int_equal(perf_writer_open(path, &w), 0);
	uint8_t attr[128] = { 0 };
	uint32_t size = 128;
	uint64_t st = PS_IP | PS_TID | PS_TIME | PS_CALLCHAIN, id = 1;
	memcpy(attr + 4, &size, 4);
	memcpy(attr + 24, &st, 8);
	assert_int_equal(perf_writer_add_attr(w, attr, size, "cpu-clock", &id, 1), 0);
	return w;
}

struct counts {
	uint64_t n, reasons[UW_STOP__COUNT];
};

static int on_sample(void *ctx, const struct uw_sample *smp)
{
	struct counts *c = ctx;
	c->n++;
	c->reasons[smp->stop_reason]++;
	return 0;
}

static void read_back(const char *path, struct counts *c, struct uw_reader_stats *st)
{
	struct uw_session *s = uw_session_new(NULL);
	assert_non_null(s);
	UW_OPTS(uw_reader_opts, ro, .on_sample = on_sample, .ctx = c);
	struct uw_reader *r = uw_reader_open(s, path, &ro);
	assert_non_null(r);
	assert_int_equal(uw_reader_run(r), 0);
	st->sz = sizeof(*st);
	uw_reader_stats(r, st);
	uw_reader_free(r);
	uw_session_free(s);
}

static void stop_reasons_spilled(void **state)
{
	(void)state;
	char path[128];
	snprintf(path, sizeof(path), "%s/stops.data", dir);
	struct perf_writer *w = writer(path);
	uint8_t rec[128];
	for (uint64_t i = 0; i < NSAMPLES; i++) {
		assert_int_equal(perf_writer_record(w, rec, sample(rec, 1000 + i)), 0);
		perf_writer_sample(w, true, 1000 + i, i % 2 ? UW_STOP_CHAIN_CUT : UW_STOP_END_OF_STACK);
	}
	assert_int_equal(perf_writer_finish(w), 0);
	perf_writer_close(w);
	struct counts c = { 0 };
	struct uw_reader_stats st;
	read_back(path, &c, &st);
	assert_int_equal(c.n, NSAMPLES);
	assert_int_equal(st.stops_stated, NSAMPLES);
	assert_int_equal(c.reasons[UW_STOP_END_OF_STACK], NSAMPLES / 2);
	assert_int_equal(c.reasons[UW_STOP_CHAIN_CUT], NSAMPLES / 2);
	assert_int_equal(st.unfinished, 0);
	unlink(path);
}

/* Every stop reason round-trips through the file's FEAT_UW_STOPS section, the newest
 * (UW_STOP_CALLBACK, issue 25) too: the reader takes each reason below UW_STOP__COUNT. */
static void stop_reasons_all(void **state)
{
	(void)state;
	char path[128];
	snprintf(path, sizeof(path), "%s/allstops.data", dir);
	struct perf_writer *w = writer(path);
	uint8_t rec[128];
	for (uint64_t i = 0; i < 3 * UW_STOP__COUNT; i++) {
		assert_int_equal(perf_writer_record(w, rec, sample(rec, 1000 + i)), 0);
		perf_writer_sample(w, true, 1000 + i, (uint8_t)(i % UW_STOP__COUNT));
	}
	assert_int_equal(perf_writer_finish(w), 0);
	perf_writer_close(w);
	struct counts c = { 0 };
	struct uw_reader_stats st;
	read_back(path, &c, &st);
	assert_int_equal(c.n, 3 * UW_STOP__COUNT);
	assert_int_equal(st.stops_stated, 3 * UW_STOP__COUNT);
	for (unsigned r = 0; r < UW_STOP__COUNT; r++)
		assert_int_equal(c.reasons[r], 3);
	assert_int_equal(st.stop_reasons[UW_STOP_CALLBACK], 3);
	assert_string_equal(uw_stop_reason_str(UW_STOP_CALLBACK), "stopped by the callback");
	unlink(path);
}

static void killed_after_sync(void **state)
{
	(void)state;
	char path[128];
	snprintf(path, sizeof(path), "%s/killed.data", dir);
	struct perf_writer *w = writer(path);
	uint8_t rec[128];
	for (uint64_t i = 0; i < 1000; i++)
		assert_int_equal(perf_writer_record(w, rec, sample(rec, 1000 + i)), 0);
	assert_int_equal(perf_writer_sync(w), 0);
	assert_int_equal(perf_writer_publish(w), 0); /* (a recorder's file is at its path early) */
	/* records after the last sync, then the writer dies: no finish */
	for (uint64_t i = 1000; i < 1500; i++)
		assert_int_equal(perf_writer_record(w, rec, sample(rec, 1000 + i)), 0);
	perf_writer_sync(w);
	perf_writer_close(w);
	/* and a last record cut short, as a write interrupted by the kill */
	FILE *f = fopen(path, "ab");
	assert_non_null(f);
	size_t n = sample(rec, 9999);
	assert_int_equal(fwrite(rec, 1, n / 2, f), n / 2);
	fclose(f);
	struct counts c = { 0 };
	struct uw_reader_stats st;
	read_back(path, &c, &st);
	assert_int_equal(c.n, 1500);
	assert_int_equal(st.unfinished, 1);
	assert_int_equal(st.records_cut, 1);
	assert_int_equal(st.stops_judged, 1500); /* no section: judged */
	unlink(path);
}

static void read_text(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	size_t n = fread(buf, 1, cap - 1, f);
	buf[n] = 0;
	fclose(f);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Files in dir, but for "." and "..". */
static int nfiles(void)
{
	int n = 0;
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "ls -A %s | wc -l", dir);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	assert_int_equal(fscanf(p, "%d", &n), 1);
	pclose(p);
	return n;
}

/* A writer that fails or dies before finishing leaves the path as it was and nothing beside it;
 * one that finishes puts its file there, the previous one kept as PATH.old. */
static void unfinished_leaves_nothing(void **state)
{
	(void)state;
	char path[128], old[160], text[64];
	snprintf(path, sizeof(path), "%s/out.data", dir);
	snprintf(old, sizeof(old), "%s.old", path);
	write_text(path, "previous");
	struct perf_writer *w = writer(path);
	uint8_t rec[128];
	for (uint64_t i = 0; i < 1000; i++)
		assert_int_equal(perf_writer_record(w, rec, sample(rec, 1000 + i)), 0);
	assert_int_equal(perf_writer_sync(w), 0);
	perf_writer_close(w); /* no finish, no publish */
	read_text(path, text, sizeof(text));
	assert_string_equal(text, "previous");
	assert_int_equal(access(old, F_OK), -1);
	assert_int_equal(nfiles(), 1);
	w = writer(path);
	assert_int_equal(perf_writer_record(w, rec, sample(rec, 1000)), 0);
	assert_int_equal(perf_writer_finish(w), 0);
	perf_writer_close(w);
	read_text(old, text, sizeof(text));
	assert_string_equal(text, "previous");
	struct counts c = { 0 };
	struct uw_reader_stats st;
	read_back(path, &c, &st);
	assert_int_equal(c.n, 1);
	assert_int_equal(nfiles(), 2);
	unlink(path);
	unlink(old);
}

/* Round markers wait for samples still to come that are older than what perf would deliver at
 * the next marker (a reader holding samples): gated, the second marker waits until none is
 * held; without a gate they come every 8192 records. */
struct gate {
	uint64_t oldest, newest;
};

static uint64_t gate_fn(void *ctx, uint64_t *newest)
{
	struct gate *g = ctx;
	*newest = g->newest;
	return g->oldest;
}

static uint64_t rounds_written(const char *path, bool gated)
{
	struct perf_writer *w = writer(path);
	struct gate g = { UINT64_MAX, 0 };
	if (gated)
		perf_writer_round_gate(w, gate_fn, &g);
	uint8_t rec[128];
	for (uint64_t i = 0; i < 26000; i++) {
		/* a sample of time 1005 held from the 9000th record to the 25000th */
		g.oldest = i >= 9000 && i < 25000 ? 1005 : UINT64_MAX;
		g.newest = 1000 + i;
		assert_int_equal(perf_writer_record(w, rec, sample(rec, 1000 + i)), 0);
		perf_writer_sample(w, true, 1000 + i, UW_STOP_END_OF_STACK);
	}
	assert_int_equal(perf_writer_finish(w), 0);
	perf_writer_close(w);
	struct uw_session *s = uw_session_new(NULL);
	UW_OPTS(uw_reader_opts, ro);
	struct uw_reader *r = uw_reader_open(s, path, &ro);
	assert_non_null(r);
	assert_int_equal(uw_reader_run(r), 0);
	uint64_t n = uw_reader_nr_records(r, PR_FINISHED_ROUND);
	uw_reader_free(r);
	uw_session_free(s);
	unlink(path);
	return n;
}

static void rounds_wait_for_held(void **state)
{
	(void)state;
	char path[128];
	snprintf(path, sizeof(path), "%s/rounds.data", dir);
	assert_int_equal(rounds_written(path, false), 3); /* after 8192, 16384, 24576 records */
	assert_int_equal(rounds_written(path, true), 2);  /* after 8192, then 25088 */
}

/* uw_reader_open's errno says which way a file is not a recording: project codes are errno
 * values too (uw_strerror names them), not all folded into EPROTO. */
static int open_errno(const char *path)
{
	struct uw_session *s = uw_session_new(NULL);
	assert_non_null(s);
	UW_OPTS(uw_reader_opts, ro, .on_sample = on_sample);
	errno = 0;
	struct uw_reader *r = uw_reader_open(s, path, &ro);
	int e = errno;
	uw_reader_free(r);
	uw_session_free(s);
	return r ? 0 : e;
}

static void open_errors(void **state)
{
	(void)state;
	char path[64];
	snprintf(path, sizeof(path), "%s/magic.data", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("this is not a perf.data file, only text that is long enough to fill a header; "
	      "it goes on for a while so that no read is short, more than the 104 bytes of perf's header.\n", f);
	fclose(f);
	assert_int_equal(open_errno(path), UW_EMAGIC);
	/* perf's magic, then less than its header */
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("PERFILE2\x68", f);
	fclose(f);
	assert_int_equal(open_errno(path), UW_ETRUNC);
	unlink(path);
	snprintf(path, sizeof(path), "%s/none.data", dir);
	assert_int_equal(open_errno(path), ENOENT);
	/* a directory that is not perf's directory format (no "data" in it) */
	snprintf(path, sizeof(path), "%s/d.data", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	int e = open_errno(path);
	rmdir(path);
	assert_int_equal(e, UW_EMAGIC);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(stop_reasons_spilled),
		cmocka_unit_test(stop_reasons_all),
		cmocka_unit_test(killed_after_sync),
		cmocka_unit_test(unfinished_leaves_nothing),
		cmocka_unit_test(rounds_wait_for_held),
		cmocka_unit_test(open_errors),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	rmdir(dir);
	return rc;
}
