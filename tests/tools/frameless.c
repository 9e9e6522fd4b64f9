/* SPDX-License-Identifier: MIT */
/*
 * Samples with no frame at all (no user stack and no kernel callchain: a kernel thread's
 * off-CPU sample, a stack lost) added to a profile through the public API and written in every
 * format, for tests/e2e/pprof.sh: each format must count them (go tool pprof leaves a sample
 * with no location out of every total).
 *
 * usage: frameless DIR    writes DIR/frameless.{pb.gz,folded,speedscope.json,html,top,table,diff}:
 *                         3 samples of "kworker" with no frame, period 1000000 ns each, of
 *                         cpu-clock (the diff against the profile itself)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unwound/unwound.h>

static int write_one(struct uw_profile *p, const char *dir, const char *ext)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/frameless.%s", dir, ext);
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		return -1;
	}
	int e = !strcmp(ext, "pb.gz")   ? uw_profile_write_pprof(p, f, NULL)
	        : !strcmp(ext, "folded") ? uw_profile_write_folded(p, f)
	        : !strcmp(ext, "html")   ? uw_profile_write_html(p, f, NULL)
	        : !strcmp(ext, "top")    ? uw_profile_write_top(p, f, 0, UW_TOP_SELF)
	        : !strcmp(ext, "table")  ? uw_profile_write_table(p, f, NULL)
	        : !strcmp(ext, "diff")   ? uw_profile_write_diff(p, p, f, NULL)
	                                 : uw_profile_write_speedscope(p, f, NULL);
	if (fclose(f) || e) {
		fprintf(stderr, "frameless: %s: %s\n", path, uw_strerror(e ? e : -5));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: frameless DIR\n");
		return 2;
	}
	struct uw_session *s = uw_session_new(NULL);
	UW_OPTS(uw_profile_opts, po, .keep_order = 1);
	struct uw_profile *p = s ? uw_profile_new(s, &po) : NULL;
	if (!p) {
		fprintf(stderr, "frameless: no session or profile\n");
		return 1;
	}
	for (int i = 0; i < 3; i++) {
		struct uw_sample smp = { .sz = sizeof(smp), .pid = 0, .tid = 77, .time = 1000000000ull + i * 1000000ull,
					 .period = 1000000, .cpumode = 1, .has_callchain = 1, .comm = "kworker",
					 .event_name = "cpu-clock", .stop_reason = UW_STOP_NO_REGS };
		if (uw_profile_add(p, &smp)) {
			fprintf(stderr, "frameless: uw_profile_add failed\n");
			return 1;
		}
	}
	/* and, in frameless-lost.folded, a caller frame at pc 0 outside every mapping (a damaged
	 * recording's: "[unknown]") beside a sample of lost ones ("[lost samples]") */
	UW_OPTS(uw_profile_opts, lo);
	struct uw_profile *lp = uw_profile_new(s, &lo);
	struct uw_frame zero[2] = { { .pc = 0x1000 }, { .pc = 0, .is_call = 1 } };
	struct uw_sample bad = { .sz = sizeof(bad), .tid = 78, .period = 1000000, .cpumode = 2, .has_callchain = 1,
				 .comm = "damaged", .event_name = "cpu-clock", .nr_user = 2, .user = zero };
	struct uw_sample lost = { .sz = sizeof(lost), .tid = 79, .period = 1000000, .cpumode = 2, .comm = "lossy",
				  .event_name = "cpu-clock", .stop_reason = UW_STOP_LOST, .nr_user = 2, .user = zero };
	char lpath[4096];
	snprintf(lpath, sizeof(lpath), "%s/frameless-lost.folded", argv[1]);
	FILE *lf = fopen(lpath, "w");
	if (!lp || uw_profile_add(lp, &bad) || uw_profile_add(lp, &lost) || !lf || uw_profile_write_folded(lp, lf) ||
	    fclose(lf)) {
		fprintf(stderr, "frameless: %s could not be written\n", lpath);
		return 1;
	}
	uw_profile_free(lp);
	int rc = 0;
	const char *exts[] = { "pb.gz", "folded", "speedscope.json", "html", "top", "table", "diff" };
	for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++)
		rc |= write_one(p, argv[1], exts[i]);
	uw_profile_free(p);
	uw_session_free(s);
	return rc ? 1 : 0;
}
