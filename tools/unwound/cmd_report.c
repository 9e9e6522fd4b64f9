/* SPDX-License-Identifier: MIT */
/* unwound report: read a perf.data file, unwind, and print a table of shares per event, script
 * lines or folded stacks. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

enum mode { MODE_TOP, MODE_SCRIPT, MODE_FOLDED, MODE_PPROF, MODE_SPEEDSCOPE, MODE_HTML };

struct report {
	struct uw_session *s;
	struct uw_profile *prof;
	FILE *out;
	enum mode mode;
	int err;
	int tty;
	struct uw_script_opts script;
	struct uw_script_writer *sw;
	uint64_t first_time, last_time; /* of the samples (pprof's time and duration) */
	uint64_t time_start, time_end;  /* --time: samples kept (ns; end 0: no end) */
	uint64_t progress_from;         /* monotonic ns after which progress is shown */
	bool progress_shown;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int on_sample(void *ctx, const struct uw_sample *smp)
{
	struct report *r = ctx;
	int e;
	if ((r->time_start && smp->time < r->time_start) || (r->time_end && smp->time > r->time_end))
		return 0;
	if (smp->time && (!r->first_time || smp->time < r->first_time))
		r->first_time = smp->time;
	if (smp->time > r->last_time)
		r->last_time = smp->time;
	if (r->mode == MODE_SCRIPT)
		e = uw_script_writer_add(r->sw, smp);
	else
		e = uw_profile_add(r->prof, smp);
	if (e) {
		r->err = e;
		return 1;
	}
	return 0;
}

static void on_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct report *r = ctx;
	if (!r->tty || !total)
		return;
	/* only for reports that take a while: a quick one prints nothing */
	if (!r->progress_shown && (done >= total || now_ns() < r->progress_from))
		return;
	r->progress_shown = true;
	fprintf(stderr, "\rreading: %3u%% (%" PRIu64 " MiB)", (unsigned)(100 * done / total), done >> 20);
	if (done >= total)
		fprintf(stderr, "\r%40s\r", "");
}

static void report_usage(FILE *f)
{
	fprintf(f,
		"usage: unwound report [-i FILE] [options]\n\n"
		"Unwinds and symbolizes the samples of a perf.data file (file or pipe mode, compressed\n"
		"with perf record -z or not; '-': standard input). Samples with a user stack\n"
		"copy (perf record --call-graph dwarf) are unwound here; callchains recorded otherwise\n"
		"(perf record -g, unwound record and inject) are used as they are.\n\n"
		"output (default: per event, a table of functions by share, and an unwinding summary):\n"
		"  --script            one block per sample, in the format of 'perf script'\n"
		"  --no-inline         without inline frames (as 'perf script --no-inline')\n"
		"  --srcline           with the source file:line of each frame (--script)\n"
		"  --no-demangle       C++ and Rust names as in the symbol table\n"
		"  --folded            folded stacks: comm;outer;...;inner weight (one event: see --event)\n"
		"  --format FORMAT     top (the default), script, folded; pprof: gzipped profile.proto for\n"
		"                      go tool pprof and pprof-based tools (labels pid, tid, thread);\n"
		"                      speedscope: speedscope's JSON, a profile per thread in time order;\n"
		"                      html: a self-contained interactive flame graph (one event each)\n"
		"  -g, --call-graph[=caller|callee|none]  with the table: each row's call graph below it,\n"
		"                      callees (caller, the default) or callers (callee); perf report's\n"
		"                      graph,0.5,caller,function,percent form is read too\n"
		"  -G, --inverted      -g caller (as perf report)\n"
		"  -o, --output FILE   write to FILE instead of standard output\n"
		"  --stdio             (accepted for perf report's habit: the output is text)\n"
		"  -s, --sort KEYS     table rows by these keys, as perf report: comm, pid, tid, dso, sym,\n"
		"                      srcline, comma-separated (pid is perf's: the thread, 'tid:comm');\n"
		"                      without it, a row per function and module\n"
		"  -F, --fields FIELDS overhead (or overhead_children,overhead) and then sort keys, as\n"
		"                      perf report -F: the share columns and a row per key\n"
		"  --children          order the table by total share (\"Children\", then \"Self\")\n"
		"  --no-children       only the self share (\"Overhead\"), as perf report --no-children\n"
		"  --sort self|total   order of the default table (default self)\n"
		"  -q, --quiet         the table's rows only (no '#' lines, no summary) and no warnings\n"
		"  --header            (accepted: the table starts with the recording's header)\n"
		"  --header-only       only the recording's header: host, kernel, perf, command, events\n"
		"  --percent-limit PCT leave out rows under PCT percent\n"
		"  --rows N            rows of the table per event (default 30)\n"
		"  --weight samples|period  what a sample weighs: the table's default is its period (as\n"
		"                      perf report), folded stacks' the sample count (as FlameGraph)\n"
		"  --group function|line  rows by function (default) or by source line (DWARF)\n"
		"  --inline            --folded and the table with inline frames of their own (DWARF)\n"
		"  --no-kernel         leave kernel frames out\n"
		"  --addresses         name unknown frames module+0xoffset (--folded)\n"
		"filters:\n"
		"  --event NAME        samples of this event only (any output)\n"
		"  --pid PIDS, --tid TIDS, --comm NAMES   comma-separated lists, as perf report; shares are\n"
		"                      of the samples kept (perf's --percentage relative, accepted)\n"
		"  --time START,END    samples between these times (seconds, as perf script shows them;\n"
		"                      either may be left out)\n"
		"symbols and unwinding:\n"
		"  --kallsyms FILE     kernel symbols (default: perf's snapshot of the recorded kernel in\n"
		"                      ~/.debug, else /proc/kallsyms when the recorded kernel is the running one)\n"
		"  -k, --vmlinux FILE  kernel symbols from a vmlinux (its build-id must be the recorded kernel's)\n"
		"  --debug-dir DIR     extra root for separate debug files (repeatable; also $UNWOUND_DEBUG_PATH)\n"
		"  --symfs DIR         prefix for the recording's file paths\n"
		"  --search-path DIR   directory (and its subdirectories) where files the recording names are\n"
		"                      found by name when not at their path; used only when the build-id\n"
		"                      matches (repeatable)\n"
		"  --offline           never fetch from debuginfod servers ($DEBUGINFOD_URLS)\n"
		"  --debuginfod-timeout SECS  cap on one debuginfod fetch (default 30)\n"
		"  --sync-symbols      look inline frames up when printed (default: on a helper\n"
		"                      thread, a few thousand samples ahead, with 2 or more CPUs)\n"
		"  --no-dwarf-cache    neither read nor keep decompressed DWARF and decoded line tables (kept\n"
		"                      by build-id in $UNWOUND_CACHE_DIR, else $XDG_CACHE_HOME/unwound or\n"
		"                      ~/.cache/unwound)\n"
		"  --no-fp             never fall back to frame pointers\n"
		"  --stitch            complete stacks their copy cut short from the thread's complete\n"
		"                      stacks: a frame with the same return address and stack pointer\n"
		"                      is the same activation when a stack before the sample and the\n"
		"                      first after it agree on its callers\n"
		"  --stack-limit BYTES use only the first BYTES of each user stack copy, as if recorded with\n"
		"                      --call-graph dwarf,BYTES (to see what a smaller copy loses)\n"
		"  -v                  more messages (repeat for more)\n"
		CLI_LIMITS_HELP
		"\nWithout -i, the recording is standard input when that is a pipe, else ./perf.data (as\n"
		"perf report). perf report's and perf script's options that unwound report does not have\n"
		"(-n, -d/--dsos, -S/--symbols, -c/--comms, -T, --max-stack, --tui, --stats, --ns and others)\n"
		"are refused with what to use instead.\n");
}

struct modsum {
	unsigned missing, mismatch, bad, ok, noresource;
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

static void summary(struct uw_session *s, struct uw_reader *rd, const struct uw_reader_stats *st, const char *event,
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
	if (ms.noresource)
		fprintf(f, ", %u not opened for want of resources", ms.noresource);
	fprintf(f, "\n");
	cli_summary_resources(s, f);
}

struct ropts {
	const char *in, *outp, *kallsyms, *vmlinux, *symfs, *event, *sort;
	char *debugdirs, *search;
	int *pids, *tids;
	size_t npids, ntids, ncomms;
	const char **comms;
	int stitch, graph;
	uint64_t stack_limit;
	uint64_t time_start, time_end;
	int nofp, nokernel, addrs, noinline, srcline, nodemangle, inl, byline, nocache, syncsym, offline;
	int weight, order, columns, stdio, quiet, header, header_only;
	bool graph_set;
	unsigned rows, dbgd_ms;
	double percent_limit;
	struct cli_limits lim;
	enum mode mode;
	bool mode_set;
};

static const char *const sort_keys[] = { "comm", "pid", "tid", "dso", "sym", "srcline", NULL };

/* --sort (and -F's keys: opt names the option in messages): perf report's keys, or unwound's
 * own self|total ordering of the default table. */
static int parse_sort(struct ropts *o, char *arg, const char *opt)
{
	static const char *const orders[] = { "self", "total", NULL };
	int v;
	if (!strcmp(arg, "self") || !strcmp(arg, "total")) {
		cli_choice("report", "--sort", arg, orders, &v);
		o->order = v == 1 ? UW_TOP_TOTAL : UW_TOP_SELF;
		return 0;
	}
	char *copy = strdup(arg);
	if (!copy)
		return -1;
	for (char *save = NULL, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (cli_choice("report", opt, t, sort_keys, &v)) {
			free(copy);
			return -1;
		}
	}
	free(copy);
	if (!arg[0] || arg[0] == ',' || arg[strlen(arg) - 1] == ',' || strstr(arg, ",,")) {
		fprintf(stderr, "unwound report: %s takes comma-separated keys, not '%s'\n", opt, arg);
		return -1;
	}
	o->sort = arg;
	return 0;
}

static int set_mode(struct ropts *o, enum mode m)
{
	if (o->mode_set && o->mode != m) {
		fprintf(stderr, "unwound report: --script, --folded and --format are different outputs: give one\n");
		return -1;
	}
	o->mode = m;
	o->mode_set = true;
	return 0;
}

/* --time START,END: seconds as perf script prints them, either side may be empty (perf's
 * percentages and lists of ranges are refused, not read otherwise). */
static int parse_time(const char *arg, uint64_t *start, uint64_t *end)
{
	const char *comma = strchr(arg, ',');
	if (!comma || strchr(comma + 1, ',') || strpbrk(arg, "% /")) {
		fprintf(stderr, "unwound report: --time takes START,END in seconds (either may be left out), not '%s'"
				"%s\n", arg, strpbrk(arg, "%/") ? " (perf's percentage forms are not supported)" : "");
		return -1;
	}
	double v[2] = { 0, 0 };
	const char *part[2] = { arg, comma + 1 };
	size_t len[2] = { (size_t)(comma - arg), strlen(comma + 1) };
	for (int i = 0; i < 2; i++) {
		if (!len[i])
			continue;
		char buf[64], *endp;
		if (len[i] >= sizeof(buf))
			goto bad;
		memcpy(buf, part[i], len[i]);
		buf[len[i]] = 0;
		errno = 0;
		v[i] = strtod(buf, &endp);
		if (errno || *endp || endp == buf || !(v[i] >= 0) || v[i] > 1.8e10)
			goto bad;
	}
	if (len[1] && v[1] < v[0])
		goto bad;
	*start = (uint64_t)(v[0] * 1e9 + 0.5);
	*end = len[1] ? (uint64_t)(v[1] * 1e9 + 0.5) : 0;
	return 0;
bad:
	fprintf(stderr, "unwound report: --time: '%s' is not START,END in seconds with START <= END\n", arg);
	return -1;
}

/* perf report's (and perf script's) options that unwound report does not have, each refused
 * with what to use instead, rather than as an unknown option. */
enum { O_PERF = 512 };
static const struct perf_only {
	char shrt;
	const char *name, *what, *instead;
} perf_only[] = {
	{ 'n', "show-nr-samples", "the sample count column", "--weight samples gives shares of sample counts" },
	{ 'd', "dsos", "the module filter", "--sort dso,sym gives each module's functions" },
	{ 'S', "symbols", "the symbol filter", "--sort sym and --rows N, or --folded for whole stacks" },
	{ 'c', "comms", "the command filter", "--comm NAMES (shares of the samples kept, perf's --percentage relative)" },
	{ 'T', "threads", "per-thread counts", "--sort pid (a row per thread)" },
	{ 't', "field-separator", "the field separator", "--folded or --format pprof|speedscope for other programs" },
	{ 'U', "hide-unresolved", "hiding unnamed code", "--no-kernel leaves kernel frames out" },
	{ 'D', "dump-raw-trace", "the raw dump", "perf report -D reads the same file" },
	{ 'I', "show-info", "the header's CPU and NUMA details", "--header-only" },
	{ 'x', "exclude-other", "the parent filter", "-g callee shows each function's callers" },
	{ 'p', "parent", "the parent filter", "-g callee shows each function's callers" },
	{ 'M', "disassembler-style", "annotation", "perf annotate" },
	{ 'C', "cpu", "the CPU filter", "unwound record -C CPUS records only those CPUs" },
	{ 0, "max-stack", "the callchain depth limit", "--max-frames N (user frames unwound per stack) and --max-kernel-frames N" },
	{ 0, "stats", "the record counts", "the summary at the end of the table" },
	{ 0, "tasks", "the task list", "--sort pid" },
	{ 0, "mmaps", "the task list with mappings", "the summary at the end of the table lists missing modules" },
	{ 0, "tui", "the interactive view", "--format html (an interactive flame graph page)" },
	{ 0, "gtk", "the interactive view", "--format html (an interactive flame graph page)" },
	{ 0, "objdump", "annotation", "perf annotate" },
	{ 0, "asm-raw", "annotation", "perf annotate" },
	{ 0, "show-total-period", "the period column", "--weight period (the default) gives shares of the periods" },
	{ 0, "hierarchy", "the hierarchy view", "--sort KEYS and -g caller|callee" },
	{ 0, "ignore-callees", "the callee filter", "-g callee" },
	{ 0, "branch-stack", "branch stacks", "unwound reads call graphs, not branch records" },
	{ 0, "branch-history", "branch stacks", "unwound reads call graphs, not branch records" },
	{ 0, "mem-mode", "memory sampling", "perf mem report" },
	{ 0, "raw-trace", "the raw tracepoint fields", "perf script" },
	{ 0, "stdio2", "the stdio2 view", "the table (--stdio)" },
	/* perf script's */
	{ 0, "ns", "perf script's nanosecond times", "--script prints perf script's default microseconds" },
	{ 0, "show-mmap-events", "perf script's side-band records", "perf script -i FILE --show-mmap-events" },
	{ 0, "show-task-events", "perf script's side-band records", "perf script -i FILE --show-task-events" },
	{ 0, "show-switch-events", "perf script's side-band records", "perf script -i FILE --show-switch-events" },
	{ 0, "full-source-path", "full source paths", "--srcline" },
};
#define N_PERF_ONLY (sizeof(perf_only) / sizeof(perf_only[0]))

static int perf_refused(const struct perf_only *p)
{
	fprintf(stderr, "unwound report: ");
	if (p->shrt)
		fprintf(stderr, "-%c/", p->shrt);
	fprintf(stderr, "--%s (%s%s) is not supported: %s\n", p->name, p->what,
		strncmp(p->what, "perf ", 5) ? ", in perf report" : "", p->instead);
	cli_see_help("report");
	return -1;
}

/* perf report's -g/--call-graph value: graph (the only type drawn) or none, caller or callee,
 * function, percent, the threshold 0.5 and print limit 0 (what unwound draws); the rest is
 * refused with what unwound has instead. */
static int parse_call_graph(struct ropts *o, const char *arg)
{
	if (!arg) { /* -g alone: perf's default, graph,0.5,caller */
		o->graph = UW_GRAPH_CALLER;
		o->graph_set = true;
		return 0;
	}
	if (!arg[0]) {
		fprintf(stderr, "unwound report: -g/--call-graph takes caller, callee or none (or perf's graph,0.5,caller), "
				"not ''\n");
		cli_see_help("report");
		return -1;
	}
	char *copy = strdup(arg);
	if (!copy)
		return -1;
	int graph = UW_GRAPH_CALLER, numbers = 0, ret = 0;
	const char *bad = NULL, *instead = NULL;
	for (char *save = NULL, *t = strtok_r(copy, ",", &save); t && !bad; t = strtok_r(NULL, ",", &save)) {
		char *end;
		double v = strtod(t, &end);
		if (!strcmp(t, "graph") || !strcmp(t, "function") || !strcmp(t, "percent"))
			continue;
		if (!strcmp(t, "none")) {
			graph = UW_GRAPH_NONE;
		} else if (!strcmp(t, "caller") || !strcmp(t, "callee")) {
			if (graph != UW_GRAPH_NONE)
				graph = !strcmp(t, "callee") ? UW_GRAPH_CALLEE : UW_GRAPH_CALLER;
		} else if (end != t && !*end) {
			/* the threshold, then the print limit */
			if (numbers++ == 0 ? v != 0.5 : v != 0)
				bad = t, instead = numbers == 1 ? "branches under --percent-limit PCT are left out (0.5 by default)"
							       : "the graph has every branch over the threshold";
		} else if (!strcmp(t, "folded")) {
			bad = t, instead = "--folded writes folded stacks";
		} else if (!strcmp(t, "flat") || !strcmp(t, "fractal")) {
			bad = t, instead = "the graph is drawn as perf's graph type, shares of the event's total";
		} else if (!strcmp(t, "address") || !strcmp(t, "srcline")) {
			bad = t, instead = "the graph is of functions (--group line makes rows of source lines)";
		} else if (!strcmp(t, "period") || !strcmp(t, "count")) {
			bad = t, instead = "--weight samples|period chooses what the shares are of";
		} else if (!strcmp(t, "dwarf") || !strcmp(t, "fp") || !strcmp(t, "lbr")) {
			bad = t, instead = "that is perf record's --call-graph (how to record): unwound record takes it";
		} else {
			bad = t, instead = "it takes graph or none, caller or callee, function, percent, 0.5 (e.g. -g caller)";
		}
	}
	if (bad) {
		fprintf(stderr, "unwound report: -g/--call-graph '%s': %s is not supported: %s\n", arg, bad, instead);
		cli_see_help("report");
		ret = -1;
	}
	free(copy);
	o->graph = graph;
	o->graph_set = true;
	return ret;
}

/* perf report's -F/--fields: the share columns (overhead; overhead_children,overhead), then
 * sort keys. @return -1 (said) or 0. */
static int parse_fields(struct ropts *o, char *arg)
{
	const char *keys = arg;
	if (!strncmp(keys, "overhead_children,overhead,", 27)) {
		o->columns = UW_TABLE_CHILDREN;
		o->order = UW_TOP_TOTAL;
		keys += 27;
	} else if (!strncmp(keys, "overhead,", 9)) {
		o->columns = UW_TABLE_SELF;
		o->order = UW_TOP_SELF;
		keys += 9;
	} else {
		keys = NULL;
	}
	if (!keys || !strcmp(keys, "self") || !strcmp(keys, "total")) {
		fprintf(stderr, "unwound report: -F/--fields takes 'overhead,' or 'overhead_children,overhead,' and then "
				"sort keys (%s; the share columns come first), not '%s'\n", "comm, pid, tid, dso, sym, srcline", arg);
		cli_see_help("report");
		return -1;
	}
	if (parse_sort(o, (char *)keys, "-F/--fields")) {
		cli_see_help("report");
		return -1;
	}
	return 0;
}

/* An option's value that perf takes from the next argument when it is not an option (-g caller). */
static const char *optional_value(int argc, char **argv)
{
	if (optarg)
		return optarg;
	if (optind < argc && argv[optind][0] != '-')
		return argv[optind++];
	return NULL;
}

/* @return -1 (usage error, said), 0, or 1 for --help. */
static int parse_args(int argc, char **argv, struct ropts *o)
{
	enum { O_SCRIPT = 256, O_FOLDED, O_FORMAT, O_PID, O_TID, O_COMM, O_KALLSYMS, O_VMLINUX, O_DEBUGDIR, O_SYMFS,
	       O_NOFP, O_STITCH, O_STACKLIMIT, O_SORT, O_ROWS, O_NOKERNEL, O_ADDRS, O_NOINLINE, O_SRCLINE, O_NODEMANGLE, O_INLINE,
	       O_GROUP, O_OFFLINE, O_DBGDTIMEOUT, O_NOCACHE, O_SYNCSYM, O_STDIO, O_EVENT, O_WEIGHT,
	       O_PCTLIMIT, O_CHILDREN, O_NOCHILDREN, O_SEARCH, O_TIME, O_HEADER, O_HEADERONLY, O_PERCENTAGE, O_DEMANGLE,
	       O_FORCE, O_FIELDS, O_QUIET };
	static const struct option own[] = {
		{ "input", required_argument, 0, 'i' }, { "output", required_argument, 0, 'o' },
		{ "script", no_argument, 0, O_SCRIPT }, { "folded", no_argument, 0, O_FOLDED },
		{ "format", required_argument, 0, O_FORMAT },
		{ "pid", required_argument, 0, O_PID }, { "tid", required_argument, 0, O_TID },
		{ "comm", required_argument, 0, O_COMM }, { "kallsyms", required_argument, 0, O_KALLSYMS },
		{ "vmlinux", required_argument, 0, 'k' },
		{ "debug-dir", required_argument, 0, O_DEBUGDIR }, { "symfs", required_argument, 0, O_SYMFS },
		{ "search-path", required_argument, 0, O_SEARCH },
		{ "no-fp", no_argument, 0, O_NOFP },
		{ "stitch", no_argument, 0, O_STITCH },
		{ "stack-limit", required_argument, 0, O_STACKLIMIT },
		{ "sort", required_argument, 0, 's' }, { "rows", required_argument, 0, O_ROWS },
		{ "no-kernel", no_argument, 0, O_NOKERNEL }, { "addresses", no_argument, 0, O_ADDRS },
		{ "no-inline", no_argument, 0, O_NOINLINE }, { "srcline", no_argument, 0, O_SRCLINE },
		{ "no-demangle", no_argument, 0, O_NODEMANGLE }, { "inline", no_argument, 0, O_INLINE },
		{ "group", required_argument, 0, O_GROUP }, { "offline", no_argument, 0, O_OFFLINE },
		{ "debuginfod-timeout", required_argument, 0, O_DBGDTIMEOUT },
		{ "no-dwarf-cache", no_argument, 0, O_NOCACHE }, { "sync-symbols", no_argument, 0, O_SYNCSYM },
		{ "stdio", no_argument, 0, O_STDIO }, { "event", required_argument, 0, O_EVENT },
		{ "weight", required_argument, 0, O_WEIGHT }, { "percent-limit", required_argument, 0, O_PCTLIMIT },
		{ "children", no_argument, 0, O_CHILDREN }, { "no-children", no_argument, 0, O_NOCHILDREN },
		{ "time", required_argument, 0, O_TIME }, { "call-graph", optional_argument, 0, 'g' },
		{ "inverted", no_argument, 0, 'G' }, { "quiet", no_argument, 0, 'q' },
		{ "fields", required_argument, 0, 'F' }, { "header", no_argument, 0, O_HEADER },
		{ "header-only", no_argument, 0, O_HEADERONLY }, { "percentage", required_argument, 0, O_PERCENTAGE },
		{ "demangle", no_argument, 0, O_DEMANGLE }, { "force", no_argument, 0, 'f' },
		CLI_LIMIT_OPTIONS,
		{ "help", no_argument, 0, 'h' },
	};
	/* then perf's options that are refused, and their letters (with an optional value: the
	 * refusal, not a missing value, is what is said) */
	struct option lo[sizeof(own) / sizeof(own[0]) + N_PERF_ONLY + 1];
	char shorts[64] = ":i:o:g::Gs:F:k:qfvh";
	size_t base = sizeof(own) / sizeof(own[0]);
	memcpy(lo, own, sizeof(own));
	lo[base + N_PERF_ONLY] = (struct option){ 0, 0, 0, 0 };
	for (size_t i = 0; i < N_PERF_ONLY; i++) {
		lo[base + i] = (struct option){ perf_only[i].name, optional_argument, 0, O_PERF + (int)i };
		if (perf_only[i].shrt) {
			size_t l = strlen(shorts);
			shorts[l] = perf_only[i].shrt;
			memcpy(shorts + l + 1, "::", 3);
		}
	}
	static const char *const groups[] = { "function", "line", NULL };
	static const char *const weights[] = { "samples", "period", NULL };
	int c, v;
	double secs;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
		int l = cli_limit_option("report", c, optarg, &o->lim);
		if (l < 0)
			return -1;
		if (l)
			continue;
		if (c >= O_PERF && c < O_PERF + (int)N_PERF_ONLY)
			return perf_refused(&perf_only[c - O_PERF]);
		for (size_t i = 0; i < N_PERF_ONLY; i++)
			if (c == perf_only[i].shrt)
				return perf_refused(&perf_only[i]);
		switch (c) {
		case 'i': o->in = optarg; break;
		case 'o': o->outp = optarg; break;
		case 'v': cli_verbose++; break;
		case 'h': return 1;
		case 'q': o->quiet = 1; break;
		case 'f': break; /* perf's "don't complain": unwound checks no file's owner */
		case O_SCRIPT: if (set_mode(o, MODE_SCRIPT)) return -1; break;
		case O_FOLDED: if (set_mode(o, MODE_FOLDED)) return -1; break;
		case O_FORMAT: {
			static const char *const formats[] = { "top", "script", "folded", "pprof", "speedscope", "html", NULL };
			static const enum mode modes[] = { MODE_TOP, MODE_SCRIPT, MODE_FOLDED, MODE_PPROF, MODE_SPEEDSCOPE, MODE_HTML };
			int f;
			if (cli_choice("report", "--format", optarg, formats, &f) || set_mode(o, modes[f]))
				return -1;
			break;
		}
		case O_PID: if (cli_int_list("report", "--pid", optarg, 1, 0x7fffffff, 0, &o->pids, &o->npids)) return -1; break;
		case O_TID: if (cli_int_list("report", "--tid", optarg, 1, 0x7fffffff, 0, &o->tids, &o->ntids)) return -1; break;
		case O_COMM: if (cli_str_list("report", "--comm", optarg, &o->comms, &o->ncomms)) return -1; break;
		case O_KALLSYMS: o->kallsyms = optarg; break;
		case 'k': o->vmlinux = optarg; break;
		case O_DEBUGDIR: if (cli_append_path("report", "--debug-dir", optarg, &o->debugdirs)) return -1; break;
		case O_SEARCH: if (cli_append_path("report", "--search-path", optarg, &o->search)) return -1; break;
		case O_SYMFS: o->symfs = optarg; break;
		case O_NOFP: o->nofp = 1; break;
		case O_STITCH: o->stitch = 1; break;
		case O_STACKLIMIT: {
			unsigned bytes;
			if (cli_unsigned("report", "--stack-limit", optarg, 8, 65528, &bytes))
				return -1;
			o->stack_limit = bytes;
			break;
		}
		case O_NOKERNEL: o->nokernel = 1; break;
		case O_ADDRS: o->addrs = 1; break;
		case O_NOINLINE: o->noinline = 1; break;
		case O_SRCLINE: o->srcline = 1; break;
		case O_NODEMANGLE: o->nodemangle = 1; break;
		case O_DEMANGLE: o->nodemangle = 0; break;
		case O_INLINE: o->inl = 1; break;
		case O_OFFLINE: o->offline = 1; break;
		case O_NOCACHE: o->nocache = 1; break;
		case O_SYNCSYM: o->syncsym = 1; break;
		case O_STDIO: o->stdio = 1; break;
		case O_HEADER: o->header = 1; break;
		case O_HEADERONLY: o->header_only = 1; break;
		case O_PERCENTAGE:
			/* unwound's filters are the reader's: shares are of the samples kept */
			if (strcmp(optarg, "relative")) {
				fprintf(stderr, "unwound report: --percentage %s is not supported: shares are of the samples the "
						"filters (--pid, --tid, --comm, --event, --time) keep, perf's relative\n", optarg);
				cli_see_help("report");
				return -1;
			}
			break;
		case O_TIME:
			if (parse_time(optarg, &o->time_start, &o->time_end))
				return -1;
			break;
		case 'g':
			if (parse_call_graph(o, optional_value(argc, argv)))
				return -1;
			break;
		case 'G': o->graph = UW_GRAPH_CALLER; o->graph_set = true; break; /* perf's --inverted */
		case 'F':
			if (o->mode == MODE_SCRIPT) {
				fprintf(stderr, "unwound report: -F/--fields of perf script is not supported: --script prints perf "
						"script's default fields; --srcline adds source lines\n");
				cli_see_help("report");
				return -1;
			}
			if (parse_fields(o, optarg))
				return -1;
			break;
		case O_EVENT: o->event = optarg; break;
		case O_CHILDREN: o->columns = UW_TABLE_CHILDREN; o->order = UW_TOP_TOTAL; break;
		case O_NOCHILDREN: o->columns = UW_TABLE_SELF; o->order = UW_TOP_SELF; break;
		case O_DBGDTIMEOUT:
			if (cli_double("report", "--debuginfod-timeout", optarg, 0.001, 3600, &secs))
				return -1;
			o->dbgd_ms = (unsigned)(secs * 1000);
			break;
		case O_GROUP:
			if (cli_choice("report", "--group", optarg, groups, &v))
				return -1;
			o->byline = v;
			break;
		case O_WEIGHT:
			if (cli_choice("report", "--weight", optarg, weights, &v))
				return -1;
			o->weight = v ? UW_WEIGHT_PERIOD : UW_WEIGHT_SAMPLES;
			break;
		case O_PCTLIMIT:
			if (cli_double("report", "--percent-limit", optarg, 0, 100, &o->percent_limit))
				return -1;
			break;
		case O_ROWS:
			if (cli_unsigned("report", "--rows", optarg, 1, UINT32_MAX, &o->rows))
				return -1;
			break;
		case 's':
			if (parse_sort(o, optarg, "--sort"))
				return -1;
			break;
		default:
			cli_option_error("report", c, argv, lo);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "unwound report: unexpected argument '%s' (the recording is given with -i FILE)\n",
			argv[optind]);
		cli_see_help("report");
		return -1;
	}
	if (o->mode != MODE_TOP && (o->sort || o->percent_limit > 0 || o->columns || o->graph_set || o->header)) {
		fprintf(stderr, "unwound report: --sort, --percent-limit, --children, --no-children, -F, -g, -G and --header "
				"shape the table, not the other formats\n");
		return -1;
	}
	if (o->graph && o->sort && !strstr(o->sort, "sym")) {
		fprintf(stderr, "unwound report: -g draws the call graph of functions: --sort needs the sym key\n");
		return -1;
	}
	if (o->mode == MODE_SCRIPT && o->weight) {
		fprintf(stderr, "unwound report: --weight applies to the table and --folded; --script shows each sample\n");
		return -1;
	}
	return 0;
}

/* The recording's header, as the table's first lines: where, on what, by which perf, how. */
static void print_header(struct uw_reader *rd, FILE *out)
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

/* -q: the table's lines but those beginning with '#' (perf's headers) and unwound's column
 * header. */
static void write_rows(const char *buf, size_t len, FILE *out)
{
	static const char head[] = "   self%   total%  function";
	for (const char *p = buf, *end = buf + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
		if (*p != '#' && !(n >= sizeof(head) - 1 && !memcmp(p, head, sizeof(head) - 1)))
			fwrite(p, 1, n, out);
		p += n;
	}
}

/* More than one event with samples and no --event: folded stacks would add their weights. */
static int check_one_event(struct report *rep, struct uw_reader *rd)
{
	unsigned n = uw_profile_nr_events(rep->prof);
	if (n <= 1)
		return 0;
	fprintf(stderr, "unwound report: the recording has samples of %u events (", n);
	for (unsigned i = 0; i < n; i++)
		fprintf(stderr, "%s%s", i ? ", " : "", uw_profile_event_name(rep->prof, i));
	fprintf(stderr, "): this output is of one event; choose it with --event NAME\n");
	(void)rd;
	return -1;
}

int cmd_report(int argc, char **argv)
{
	struct ropts o = { .rows = 30 };
	int pr = parse_args(argc, argv, &o);
	if (pr) {
		if (pr > 0)
			report_usage(stdout);
		free(o.pids);
		free(o.tids);
		free(o.comms);
		free(o.debugdirs);
		free(o.search);
		return pr > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	}
	struct report rep = { .mode = o.mode, .time_start = o.time_start, .time_end = o.time_end,
			      .progress_from = now_ns() + 1000000000u };
	struct cli_out outfd = { .fd = -1 };
	/* as perf: standard input when it is a pipe, else ./perf.data (a terminal, /dev/null, a
	 * file or socket given by cron or CI is not a recording) */
	struct stat st0;
	if (!o.in)
		o.in = !fstat(0, &st0) && S_ISFIFO(st0.st_mode) ? "-" : "perf.data";
	UW_OPTS(uw_session_opts, so, .log = cli_log, .log_level = (enum uw_log_level)(cli_verbose + 1),
		.max_frames = o.lim.max_frames, .debug_dirs = o.debugdirs, .sysroot = o.symfs, .no_fp_fallback = o.nofp,
		.no_demangle = o.nodemangle, .offline = o.offline, .debuginfod_timeout_ms = o.dbgd_ms,
		.max_inflate_bytes = o.lim.max_inflate, .max_side_file_bytes = o.lim.max_side_file, .max_dwarf_cache_bytes = o.lim.max_dwarf_cache,
		.max_debuginfod_bytes = o.lim.max_debuginfod,
		.no_dwarf_cache = o.nocache, .sync_symbols = o.syncsym, .search_path = o.search);
	int ret = CLI_EXIT_ERROR;
	struct uw_reader *rd = NULL;
	rep.s = uw_session_new(&so);
	if (!rep.s) {
		fprintf(stderr, "unwound report: %s\n", strerror(errno));
		goto out;
	}
	rep.tty = isatty(2);
	UW_OPTS(uw_reader_opts, ro, .on_sample = on_sample, .ctx = &rep, .on_progress = on_progress,
		.max_queue_bytes = o.lim.max_queue, .max_kernel_frames = o.lim.max_kernel_frames, .pids = o.pids,
		.npids = o.npids, .tids = o.tids, .ntids = o.ntids, .comms = o.comms, .ncomms = o.ncomms,
		.event = o.event, .stitch = o.stitch, .stack_limit = o.stack_limit);
	rd = uw_reader_open(rep.s, o.in, &ro);
	if (!rd) {
		fprintf(stderr, "unwound report: %s\n", uw_session_errmsg(rep.s));
		goto out;
	}
	if (o.event) {
		bool known = false;
		for (unsigned i = 0; i < uw_reader_nr_events(rd); i++)
			known |= !strcmp(uw_reader_event_name(rd, i), o.event);
		/* pipe mode names its events as they come: checked after reading */
		if (!known && uw_reader_nr_events(rd)) {
			fprintf(stderr, "unwound report: --event %s: the recording's events are", o.event);
			for (unsigned i = 0; i < uw_reader_nr_events(rd); i++)
				fprintf(stderr, "%s '%s'", i ? "," : "", uw_reader_event_name(rd, i));
			fprintf(stderr, "\n");
			ret = CLI_EXIT_USAGE;
			goto out;
		}
	}
	if (o.header_only) {
		/* what the recording says of itself, nothing read beyond its header */
		if (!(rep.out = cli_open_output("report", o.outp, &outfd)))
			goto out;
		print_header(rd, rep.out);
		for (unsigned i = 0; i < uw_reader_nr_events(rd); i++)
			fprintf(rep.out, "# event: %s\n", uw_reader_event_name(rd, i));
		ret = CLI_EXIT_OK;
		goto out;
	}
	rep.script.sz = sizeof(rep.script);
	rep.script.no_inline = o.noinline;
	rep.script.srcline = o.srcline;
	for (unsigned i = 0; i < uw_reader_nr_events(rd); i++) {
		size_t l = strlen(uw_reader_event_name(rd, i));
		if (l > rep.script.event_width)
			rep.script.event_width = (unsigned)l;
	}
	/* kernel symbols: the named files, else those found for the recording's kernel (read ahead) */
	cli_kernel_symbols("report", rep.s, uw_reader_tracker(rd), o.kallsyms, o.vmlinux);
	if (rep.mode == MODE_PPROF && (!o.outp || !strcmp(o.outp, "-")) && isatty(1)) {
		fprintf(stderr, "unwound report: --format pprof writes a gzipped binary profile: give -o FILE\n");
		ret = CLI_EXIT_USAGE;
		goto out;
	}
	if (!(rep.out = cli_open_output("report", o.outp, &outfd)))
		goto out;
	if (rep.mode == MODE_SCRIPT) {
		rep.sw = uw_script_writer_new(rep.s, rep.out, &rep.script);
		if (!rep.sw) {
			fprintf(stderr, "unwound report: %s\n", strerror(errno));
			goto out;
		}
	} else {
		/* the viewers show inline functions unless told not to (as perf script) */
		bool viewer = rep.mode == MODE_SPEEDSCOPE || rep.mode == MODE_HTML;
		UW_OPTS(uw_profile_opts, po, .no_kernel = o.nokernel, .addresses = o.addrs,
			.inline_frames = o.inl || o.byline || (viewer && !o.noinline), .by_line = o.byline, .weight = o.weight,
			.by_thread = rep.mode == MODE_PPROF || viewer || (o.sort && (strstr(o.sort, "pid") || strstr(o.sort, "tid"))),
			.keep_order = viewer);
		rep.prof = uw_profile_new(rep.s, &po);
		if (!rep.prof) {
			fprintf(stderr, "unwound report: %s\n", strerror(errno));
			goto out;
		}
	}
	int err = uw_reader_run(rd);
	if (rep.sw) {
		int e = uw_script_writer_close(rep.sw);
		rep.sw = NULL;
		if (e && !rep.err)
			rep.err = e;
	}
	if (rep.err) {
		fprintf(stderr, "unwound report: writing %s: %s\n", o.outp ? o.outp : "standard output",
			outfd.err ? strerror(outfd.err) : uw_strerror(rep.err));
		goto out;
	}
	struct uw_reader_stats st = { .sz = sizeof(st) };
	uw_reader_stats(rd, &st);
	if (rep.mode == MODE_FOLDED || rep.mode == MODE_PPROF || rep.mode == MODE_SPEEDSCOPE || rep.mode == MODE_HTML) {
		if (!o.event && check_one_event(&rep, rd)) {
			ret = CLI_EXIT_USAGE;
			goto out;
		}
		const char *base = strrchr(o.in, '/') ? strrchr(o.in, '/') + 1 : o.in;
		int pe = 0;
		if (rep.mode == MODE_FOLDED) {
			pe = uw_profile_write_folded(rep.prof, rep.out);
		} else if (rep.mode == MODE_SPEEDSCOPE) {
			UW_OPTS(uw_speedscope_opts, so2, .name = base);
			pe = uw_profile_write_speedscope(rep.prof, rep.out, &so2);
		} else if (rep.mode == MODE_HTML) {
			UW_OPTS(uw_html_opts, ho, .title = base);
			pe = uw_profile_write_html(rep.prof, rep.out, &ho);
		} else {
			UW_OPTS(uw_pprof_opts, pp, .duration_nanos = rep.last_time - rep.first_time);
			uint64_t wall;
			if (rep.first_time && uw_reader_wall_clock(rd, rep.first_time, &wall) == 0)
				pp.time_nanos = wall;
			pe = uw_profile_write_pprof(rep.prof, rep.out, &pp);
		}
		/* (a write error is the output stream's: said below with its reason) */
		if (pe && pe != -EIO && !outfd.err) {
			fprintf(stderr, "unwound report: %s\n", uw_strerror(pe));
			goto out;
		}
	} else if (rep.mode == MODE_TOP) {
		/* -q: the rows alone, as perf report -q (the table is written aside and its '#' lines
		 * and column header left out) */
		char *qbuf = NULL;
		size_t qlen = 0;
		FILE *tf = o.quiet ? open_memstream(&qbuf, &qlen) : rep.out;
		if (!tf) {
			fprintf(stderr, "unwound report: %s\n", strerror(errno));
			goto out;
		}
		if (!o.quiet) {
			print_header(rd, rep.out);
			fprintf(rep.out, "# %" PRIu64 " samples, %" PRIu64 " distinct stacks\n#\n",
				uw_profile_nr_samples(rep.prof), uw_profile_nr_stacks(rep.prof));
		}
		UW_OPTS(uw_table_opts, to, .sort = o.sort, .order = (enum uw_top_sort)o.order,
			.columns = (enum uw_table_columns)o.columns, .percent_limit = o.percent_limit, .max_rows = o.rows,
			.call_graph = o.graph);
		int te = uw_profile_write_table(rep.prof, tf, &to);
		if (o.quiet) {
			if (fclose(tf) && !te)
				te = -ENOMEM;
			if (!te)
				write_rows(qbuf, qlen, rep.out);
			free(qbuf);
		}
		if (te && te != -EIO) {
			fprintf(stderr, "unwound report: %s\n", uw_strerror(te));
			goto out;
		}
		if (!o.quiet)
			summary(rep.s, rd, &st, o.event, rep.out);
	}
	if (cli_verbose && rep.mode != MODE_TOP)
		summary(rep.s, rd, &st, o.event, stderr);
	else if (rep.mode != MODE_TOP && st.malformed_samples && !o.quiet)
		fprintf(stderr, "unwound report: warning: %" PRIu64 " malformed samples dropped\n", st.malformed_samples);
	if (fflush(rep.out) || ferror(rep.out)) {
		fprintf(stderr, "unwound report: writing %s: %s\n", o.outp ? o.outp : "standard output",
			strerror(outfd.err ? outfd.err : EIO));
		goto out;
	}
	if (err) {
		fprintf(stderr, "unwound report: %s\n", uw_session_errmsg(rep.s));
		goto out;
	}
	if (o.event && !st.samples_delivered) {
		bool known = false;
		for (unsigned i = 0; i < uw_reader_nr_events(rd); i++)
			known |= !strcmp(uw_reader_event_name(rd, i), o.event);
		if (!known) {
			fprintf(stderr, "unwound report: --event %s: no such event in the recording\n", o.event);
			ret = CLI_EXIT_USAGE;
			goto out;
		}
	}
	ret = cli_incomplete("report", rep.s) ? CLI_EXIT_INCOMPLETE : CLI_EXIT_OK;
out:
	uw_script_writer_close(rep.sw);
	/* the file at its path only when the report was written to its end (whole, or incomplete
	 * and said: exit status 3): a failed one leaves the path as it was */
	int ce = rep.out ? cli_close_output(rep.out, &outfd, ret == CLI_EXIT_OK || ret == CLI_EXIT_INCOMPLETE) : 0;
	if (ce && (ret == CLI_EXIT_OK || ret == CLI_EXIT_INCOMPLETE)) {
		fprintf(stderr, "unwound report: writing %s: %s\n", o.outp ? o.outp : "standard output", uw_strerror(ce));
		ret = CLI_EXIT_ERROR;
	}
	uw_profile_free(rep.prof);
	uw_reader_free(rd);
	uw_session_free(rep.s);
	free(o.pids);
	free(o.tids);
	free(o.comms);
	free(o.debugdirs);
	free(o.search);
	return ret;
}
