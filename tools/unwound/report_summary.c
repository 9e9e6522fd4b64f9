/* SPDX-License-Identifier: MIT */
/* unwound report's text around the table: the recording's header and the unwinding summary
 * (per event, the input, stitching, deferred callchains, frames by method, modules). */
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

void report_print_header(struct uw_reader *rd, FILE *out)
{
	const char *host = uw_reader_info(rd, UW_INFO_HOSTNAME), *os = uw_reader_info(rd, UW_INFO_OSRELEASE);
	const char *arch = uw_reader_info(rd, UW_INFO_ARCH), *cpus = uw_reader_info(rd, UW_INFO_NRCPUS);
	const char *cmd = uw_reader_info(rd, UW_INFO_CMDLINE), *ver = uw_reader_info(rd, UW_INFO_PERF_VERSION);
	if (host || os)
		fprintf(out, "# recorded on %s (Linux %s, %s, %s CPUs online/available) by perf %s\n", host ? host : "?",
			os ? os : "?", arch ? arch : "?", cpus ? cpus : "?", ver ? ver : "?");
	if (cmd)
		fprintf(out, "# %s\n", cmd);
}

struct modsum {
	unsigned missing, mismatch, other, bad, ok, noresource;
	FILE *f;
	int listed;
	struct modsteps {
		const char *name;
		uint64_t fp, sframe;
		uint64_t key; /* the count being listed (sorted by it) */
	} *steps;
	size_t nsteps, capsteps;
};

/* modules whose frames were left by frame pointers or SFrame, kept for the summary */
static void note_steps(struct modsum *ms, struct uw_module *m)
{
	struct uw_module_stats ks = { .sz = sizeof(ks) };
	if (uw_module_stats(m, &ks) || (!ks.steps_fp && !ks.steps_sframe))
		return;
	if (ms->nsteps == ms->capsteps) {
		size_t cap = ms->capsteps ? 2 * ms->capsteps : 16;
		void *n = realloc(ms->steps, cap * sizeof(*ms->steps));
		if (!n)
			return;
		ms->steps = n;
		ms->capsteps = cap;
	}
	ms->steps[ms->nsteps++] = (struct modsteps){ uw_module_name(m), ks.steps_fp, ks.steps_sframe, 0 };
}

static int cmp_steps(const void *x, const void *y)
{
	const struct modsteps *a = x, *b = y;
	if (a->key != b->key)
		return a->key < b->key ? 1 : -1;
	return strcmp(a->name, b->name);
}

/* "# frame-pointer steps by module: a 12, b 3" (the first 8; the rest summed) */
static void print_steps(FILE *f, struct modsum *ms, bool fp)
{
	for (size_t i = 0; i < ms->nsteps; i++)
		ms->steps[i].key = fp ? ms->steps[i].fp : ms->steps[i].sframe;
	if (ms->nsteps)
		qsort(ms->steps, ms->nsteps, sizeof(*ms->steps), cmp_steps);
	const char *sep = "";
	uint64_t rest = 0;
	size_t shown = 0, others = 0;
	for (size_t i = 0; i < ms->nsteps; i++) {
		uint64_t n = ms->steps[i].key;
		if (!n)
			continue;
		if (!shown)
			fprintf(f, "# %s steps by module:", fp ? "frame-pointer (no CFI or SFrame for the pc)" : "SFrame");
		if (shown < 8) {
			fprintf(f, "%s %s %" PRIu64, sep, ms->steps[i].name, n);
			sep = ",";
			shown++;
		} else {
			rest += n;
			others++;
		}
	}
	if (others)
		fprintf(f, ", %zu others %" PRIu64, others, rest);
	if (shown)
		fprintf(f, "\n");
}

static int list_module(void *ctx, struct uw_module *m)
{
	struct modsum *ms = ctx;
	note_steps(ms, m);
	switch (uw_module_state(m)) {
	case UW_MODULE_OK: ms->ok++; break;
	case UW_MODULE_MISSING:
		ms->missing++;
		if (uw_module_path(m)[0] == '/' && ms->listed++ < 8)
			fprintf(ms->f, "  missing:  %s\n", uw_module_path(m));
		break;
	case UW_MODULE_MISMATCH:
		/* (without a recorded build-id: the file found has another device, inode or inode
		 * generation than the recorded ones) */
		if (!uw_module_build_id(m)[0]) {
			ms->other++;
			fprintf(ms->f, "  not the file recorded (not used): %s (another device, inode or inode generation)\n",
				uw_module_path(m));
			break;
		}
		ms->mismatch++;
		fprintf(ms->f, "  build-id mismatch (not used): %s (recorded %s)\n", uw_module_path(m), uw_module_build_id(m));
		break;
	case UW_MODULE_BAD:
		ms->bad++;
		fprintf(ms->f, "  unusable: %s\n", uw_module_path(m));
		break;
	case UW_MODULE_NO_RESOURCE:
		ms->noresource++;
		if (ms->listed++ < 8)
			fprintf(ms->f, "  not opened (out of file descriptors or memory): %s\n", uw_module_path(m));
		break;
	default: break;
	}
	return 0;
}

/* One event's line of the unwinding summary. Stacks unwound here and callchains read from the
 * file are told apart: a callchain's completeness is what the file states (unwound's own) or
 * what its outermost frame shows. */
static void summary_event(const struct uw_event_stats *es, const char *name, bool several, FILE *f)
{
	uint64_t with_user = es->samples_delivered - es->samples_no_user - es->stop_reasons[UW_STOP_NONE];
	uint64_t root = es->stop_reasons[UW_STOP_END_OF_STACK];
	fprintf(f, "\n# unwinding%s%s%s: %" PRIu64 " samples", several ? " of '" : "", several ? name : "",
		several ? "'" : "", es->samples_delivered);
	if (es->stop_reasons[UW_STOP_NONE])
		fprintf(f, " (%" PRIu64 " without a callchain)", es->stop_reasons[UW_STOP_NONE]);
	fprintf(f, ", %" PRIu64 " with a user stack, %.2f%% reach a root frame, %.1f user frames per stack on average",
		with_user, with_user ? 100.0 * (double)root / (double)with_user : 0.0,
		with_user ? (double)es->user_frames / (double)with_user : 0.0);
	bool first = true;
	for (int i = 0; i < UW_STOP__COUNT; i++) {
		if (i == UW_STOP_END_OF_STACK || i == UW_STOP_NONE || !es->stop_reasons[i])
			continue;
		fprintf(f, "%s %s: %" PRIu64, first ? "; stopped early or unknown:" : ",", uw_stop_reason_str(i),
			es->stop_reasons[i]);
		first = false;
	}
	fprintf(f, ".\n");
}

void report_summary(struct uw_session *s, struct uw_reader *rd, const struct uw_reader_stats *st, const char *event,
                    FILE *f)
{
	unsigned nev = uw_reader_nr_events(rd), shown = 0;
	for (unsigned i = 0; i < nev; i++) {
		struct uw_event_stats es = { .sz = sizeof(es) };
		uw_reader_event_stats(rd, i, &es);
		if (es.samples_delivered)
			shown++;
	}
	for (unsigned i = 0; i < nev; i++) {
		struct uw_event_stats es = { .sz = sizeof(es) };
		uw_reader_event_stats(rd, i, &es);
		if (!es.samples_delivered && (shown || i))
			continue;
		summary_event(&es, uw_reader_event_name(rd, i), nev > 1 && !event, f);
	}
	if (st->stops_stated || st->stops_judged)
		fprintf(f, "# callchains read from the file: %" PRIu64 " with the stop reason the file states, %" PRIu64
			   " judged by their outermost frame\n", st->stops_stated, st->stops_judged);
	if (st->lost_events || st->late_records || st->malformed_samples || st->unknown_records) {
		fprintf(f, "# input:");
		const char *sep = "";
		if (st->lost_events)
			fprintf(f, "%s %" PRIu64 " events lost (%" PRIu64 " LOST records)", sep, st->lost_events, st->lost_records), sep = ";";
		if (st->late_records)
			fprintf(f, "%s %" PRIu64 " records arrived after their ordering window", sep, st->late_records), sep = ";";
		if (st->malformed_samples)
			fprintf(f, "%s %" PRIu64 " malformed samples dropped", sep, st->malformed_samples), sep = ";";
		if (st->unknown_records)
			fprintf(f, "%s %" PRIu64 " records of unknown types skipped", sep, st->unknown_records);
		fprintf(f, ".\n");
	}
	if (st->skipped_records) {
		fprintf(f, "# records not used:");
		const char *sep = "";
		for (uint32_t t = 0; t < 256; t++) {
			uint64_t n = uw_reader_nr_skipped(rd, t);
			if (n) {
				fprintf(f, "%s %" PRIu64 " %s", sep, n, uw_record_type_name(t));
				sep = ",";
			}
		}
		fprintf(f, "\n");
	}
	/* side-band records that could not be applied (a mapping of length 0, a cut COMM): said,
	 * not silently dropped */
	struct uw_tracker_stats ts = { .sz = sizeof(ts) };
	if (uw_tracker_stats(uw_reader_tracker(rd), &ts) == 0 &&
	    ts.malformed_mmap + ts.malformed_comm + ts.malformed_fork + ts.malformed_exit)
		fprintf(f, "# malformed records skipped: %" PRIu64 " MMAP, %" PRIu64 " COMM, %" PRIu64 " FORK, %" PRIu64 " EXIT\n",
			ts.malformed_mmap, ts.malformed_comm, ts.malformed_fork, ts.malformed_exit);
	if (st->stitched_samples || st->stitch_failed)
		fprintf(f, "# stacks cut short by their copy: %" PRIu64 " completed from their thread's stacks before and after (%"
			   PRIu64 " frames added), %" PRIu64 " not\n",
			st->stitched_samples, st->stitched_frames, st->stitch_failed);
	if (st->stitch_given_up)
		fprintf(f, "# stitching gave up %" PRIu64 " times: held samples and references passed 64 MiB (too many "
			   "threads at once): those held went as they were\n", st->stitch_given_up);
	if (st->deferred_samples || st->deferred_records)
		fprintf(f, "# deferred user callchains: %" PRIu64 " samples waited for one, %" PRIu64 " completed, %" PRIu64
			   " never got it (kernel part only); %" PRIu64 " records, %" PRIu64 " matching no sample, %" PRIu64
			   " malformed\n",
			st->deferred_samples, st->deferred_stitched, st->deferred_missing, st->deferred_records,
			st->deferred_unmatched, st->deferred_malformed);
	if (st->unfinished)
		fprintf(f, "# the recording was not finished (its writer stopped before its end): all %.1f MiB of it read%s\n",
			(double)st->bytes / 1048576.0, st->records_cut ? ", its last record cut short" : "");
	if (st->compressed_bytes)
		fprintf(f, "# compressed records: %.1f MiB expanded to %.1f MiB\n", (double)st->compressed_bytes / 1048576.0,
			(double)st->decompressed_bytes / 1048576.0);
	if (st->stack_bytes_read)
		fprintf(f, "# input: %.1f MiB of user stacks read (%" PRIu64 " stacks read back whole)\n",
			(double)st->stack_bytes_read / 1048576.0, st->stack_rereads);
	uint64_t nm = 0;
	for (int i = 0; i < UW_METHOD_MAX; i++)
		nm += st->frames_by_method[i];
	if (nm) {
		/* how each user frame unwound here was found (the first: the sampled registers) */
		fprintf(f, "# user frames by method:");
		const char *sep = "";
		for (int i = 0; i < UW_METHOD_MAX; i++) {
			if (st->frames_by_method[i]) {
				fprintf(f, "%s %s %" PRIu64 " (%.1f%%)", sep, uw_frame_method_str(i), st->frames_by_method[i],
					100.0 * (double)st->frames_by_method[i] / (double)nm);
				sep = ",";
			}
		}
		fprintf(f, "\n");
	}
	struct modsum ms = { .f = f };
	uw_session_foreach_module(s, list_module, &ms);
	print_steps(f, &ms, false);
	print_steps(f, &ms, true);
	free(ms.steps);
	fprintf(f, "# modules: %u opened, %u missing, %u with a different build-id, %u unusable", ms.ok, ms.missing,
		ms.mismatch, ms.bad);
	if (ms.other)
		fprintf(f, ", %u not the file recorded (another device, inode or inode generation)", ms.other);
	if (ms.noresource)
		fprintf(f, ", %u not opened for want of resources", ms.noresource);
	fprintf(f, "\n");
	cli_summary_resources(s, f);
}
