/* SPDX-License-Identifier: MIT */
/* unwound diff: two recordings (one session, so names match), compared per function (perf
 * diff's table), per stack, as FlameGraph's differential folded input, or as a differential
 * flame graph page. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"

enum dformat { F_FUNCTIONS, F_STACKS, F_FOLDED, F_HTML };

struct dopts {
	const char *outp, *kallsyms, *vmlinux, *symfs, *event;
	char *debugdirs, *search;
	const char **comms;
	size_t ncomms;
	int nokernel, inl, offline, weight;
	unsigned rows;
	double percent_limit;
	enum dformat format;
	const char *default_path[2]; /* the paths not named on the command line (perf diff's defaults) */
};

static void diff_usage(FILE *f)
{
	fprintf(f,
		"usage: unwound diff [options] [BASELINE [NEW]]\n\n"
		"Compares two recordings (default perf.data.old and perf.data, as perf diff) of the same\n"
		"event: each one unwound and symbolized as unwound report does, shares taken of each\n"
		"recording's total, so runs of different lengths compare.\n\n"
		"  --format FORMAT     functions (the default): perf diff's table, per function and module\n"
		"                      the baseline's share and the change, largest change first;\n"
		"                      stacks: the same per folded stack; folded: 'stack BASE NEW' lines,\n"
		"                      flamegraph.pl's differential input (difffolded.pl's output);\n"
		"                      html: a differential flame graph of NEW (red grew, blue shrank)\n"
		"  -o, --output FILE   write to FILE instead of standard output\n"
		"  --event NAME        the event to compare (needed when a recording has several)\n"
		"  --weight samples|period  shares by period (the default for tables, as perf diff) or\n"
		"                      sample count (the default of folded)\n"
		"  --rows N            rows of a table (default all)\n"
		"  --percent-limit PCT leave out rows whose shares and change are all under PCT\n"
		"  --comm NAMES        samples of these commands only\n"
		"  --inline            inline functions as frames of their own (stacks, folded, html)\n"
		"  --no-kernel         leave kernel frames out\n"
		"  --kallsyms FILE, -k/--vmlinux FILE, --symfs DIR, --debug-dir DIR, --search-path DIR,\n"
		"  --offline           as unwound report (each recording's kernel frames are named with\n"
		"                      its own kernel's symbols; files given apply to both)\n");
}

static int parse(int argc, char **argv, struct dopts *o, const char **paths)
{
	enum { O_FORMAT = 256, O_EVENT, O_WEIGHT, O_ROWS, O_PCT, O_COMM, O_INLINE, O_NOKERNEL, O_KALLSYMS, O_SYMFS,
	       O_DEBUGDIR, O_SEARCH, O_OFFLINE };
	static const struct option lo[] = {
		{ "output", required_argument, 0, 'o' }, { "format", required_argument, 0, O_FORMAT },
		{ "event", required_argument, 0, O_EVENT }, { "weight", required_argument, 0, O_WEIGHT },
		{ "rows", required_argument, 0, O_ROWS }, { "percent-limit", required_argument, 0, O_PCT },
		{ "comm", required_argument, 0, O_COMM }, { "inline", no_argument, 0, O_INLINE },
		{ "no-kernel", no_argument, 0, O_NOKERNEL }, { "kallsyms", required_argument, 0, O_KALLSYMS },
		{ "vmlinux", required_argument, 0, 'k' },
		{ "symfs", required_argument, 0, O_SYMFS }, { "debug-dir", required_argument, 0, O_DEBUGDIR },
		{ "search-path", required_argument, 0, O_SEARCH }, { "offline", no_argument, 0, O_OFFLINE },
		{ "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 },
	};
	static const char *const formats[] = { "functions", "stacks", "folded", "html", NULL };
	static const char *const weights[] = { "samples", "period", NULL };
	int c, v;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:k:vh", lo, NULL)) != -1) {
		switch (c) {
		case 'o': o->outp = optarg; break;
		case 'v': cli_verbose++; break;
		case 'h': return 1;
		case O_FORMAT:
			if (cli_choice("diff", "--format", optarg, formats, &v))
				return -1;
			o->format = (enum dformat)v;
			break;
		case O_EVENT: o->event = optarg; break;
		case O_WEIGHT:
			if (cli_choice("diff", "--weight", optarg, weights, &v))
				return -1;
			o->weight = v ? UW_WEIGHT_PERIOD : UW_WEIGHT_SAMPLES;
			break;
		case O_ROWS:
			if (cli_unsigned("diff", "--rows", optarg, 1, UINT32_MAX, &o->rows))
				return -1;
			break;
		case O_PCT:
			if (cli_double("diff", "--percent-limit", optarg, 0, 100, &o->percent_limit))
				return -1;
			break;
		case O_COMM: if (cli_str_list("diff", "--comm", optarg, &o->comms, &o->ncomms)) return -1; break;
		case O_INLINE: o->inl = 1; break;
		case O_NOKERNEL: o->nokernel = 1; break;
		case O_KALLSYMS: o->kallsyms = optarg; break;
		case 'k': o->vmlinux = optarg; break;
		case O_SYMFS: if (cli_dir_option("diff", "--symfs", optarg)) return -1; o->symfs = optarg; break;
		case O_DEBUGDIR: if (cli_append_path("diff", "--debug-dir", optarg, &o->debugdirs)) return -1; break;
		case O_SEARCH: if (cli_append_path("diff", "--search-path", optarg, &o->search)) return -1; break;
		case O_OFFLINE: o->offline = 1; break;
		default: cli_option_error("diff", c, argv, lo); return -1;
		}
	}
	if (argc - optind > 2) {
		fprintf(stderr, "unwound diff: two recordings at most, not '%s'\n", argv[optind + 2]);
		cli_see_help("diff");
		return -1;
	}
	static const char old_data[] = "perf.data.old", new_data[] = "perf.data";
	paths[0] = argc - optind == 2 ? argv[optind] : old_data;
	paths[1] = argc - optind == 2 ? argv[optind + 1] : new_data;
	if (argc - optind == 1) /* as perf diff: one file is compared with perf.data */
		paths[0] = argv[optind];
	o->default_path[0] = paths[0] == old_data ? old_data : NULL;
	o->default_path[1] = paths[1] == new_data ? new_data : NULL;
	return 0;
}

struct side {
	struct uw_profile *prof;
	int err;
	unsigned events_seen;
};

static int on_sample(void *ctx, const struct uw_sample *smp)
{
	struct side *sd = ctx;
	int e = uw_profile_add(sd->prof, smp);
	if (e) {
		sd->err = e;
		return 1;
	}
	return 0;
}

/* A reader's error for path: the path once (the session's message names it already when it
 * is about the file), and why that path when the command line did not name it. */
static void read_error(struct uw_session *s, const char *path, const struct dopts *o)
{
	const char *m = uw_session_errmsg(s);
	size_t l = strlen(path);
	if (!strncmp(m, path, l) && m[l] == ':')
		fprintf(stderr, "unwound diff: %s", m);
	else
		fprintf(stderr, "unwound diff: %s: %s", path, m);
	if (path == o->default_path[0] || path == o->default_path[1])
		fprintf(stderr, " (perf diff's default %s: unwound diff [BASELINE [NEW]])",
			path == o->default_path[0] ? "baseline" : "new recording");
	fprintf(stderr, "\n");
}

/* Reads one recording into a profile. @return CLI_EXIT_*. */
static int read_one(struct uw_session *s, const char *path, const struct dopts *o, struct side *sd)
{
	UW_OPTS(uw_reader_opts, ro, .on_sample = on_sample, .ctx = sd, .comms = o->comms, .ncomms = o->ncomms,
		.event = o->event);
	struct uw_reader *rd = uw_reader_open(s, path, &ro);
	if (!rd) {
		read_error(s, path, o);
		return CLI_EXIT_ERROR;
	}
	/* each recording's kernel frames named with its own kernel's symbols */
	cli_kernel_symbols("diff", s, uw_reader_tracker(rd), o->kallsyms, o->vmlinux);
	int err = uw_reader_run(rd);
	int ret = CLI_EXIT_OK;
	if (sd->err) {
		fprintf(stderr, "unwound diff: %s: %s\n", path,
			sd->err == -EOVERFLOW ? "the periods of one event's samples add up past 2^64 (a damaged or crafted "
						"recording)"
					      : uw_strerror(sd->err));
		ret = CLI_EXIT_ERROR;
	} else if (err) {
		read_error(s, path, o);
		ret = CLI_EXIT_ERROR;
	} else if (uw_profile_nr_events(sd->prof) > 1) {
		fprintf(stderr, "unwound diff: %s has samples of %u events (", path, uw_profile_nr_events(sd->prof));
		for (unsigned i = 0; i < uw_profile_nr_events(sd->prof); i++)
			fprintf(stderr, "%s%s", i ? ", " : "", uw_profile_event_name(sd->prof, i));
		fprintf(stderr, "): choose one with --event NAME\n");
		ret = CLI_EXIT_USAGE;
	} else if (o->event && !uw_profile_nr_samples(sd->prof)) {
		fprintf(stderr, "unwound diff: %s: no samples of event '%s'\n", path, o->event);
		ret = CLI_EXIT_USAGE;
	}
	uw_reader_free(rd);
	return ret;
}

int cmd_diff(int argc, char **argv)
{
	struct dopts o = { 0 };
	const char *paths[2];
	int pr = parse(argc, argv, &o, paths);
	if (pr) {
		if (pr > 0)
			diff_usage(stdout);
		free(o.comms);
		free(o.debugdirs);
		free(o.search);
		return pr > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	}
	int ret = CLI_EXIT_ERROR;
	struct side sd[2] = { { 0 } };
	struct cli_out outfd = { .fd = -1 };
	FILE *out = NULL;
	UW_OPTS(uw_session_opts, so, .log = cli_log, .log_level = (enum uw_log_level)(cli_verbose + 1),
		.debug_dirs = o.debugdirs, .sysroot = o.symfs, .offline = o.offline, .search_path = o.search);
	struct uw_session *s = uw_session_new(&so);
	if (!s) {
		fprintf(stderr, "unwound diff: %s\n", strerror(errno));
		goto out;
	}
	if (o.format == F_HTML && (!o.outp || !strcmp(o.outp, "-")) && isatty(1)) {
		fprintf(stderr, "unwound diff: --format html writes a page: give -o FILE.html\n");
		ret = CLI_EXIT_USAGE;
		goto out;
	}
	bool viewer = o.format == F_HTML;
	UW_OPTS(uw_profile_opts, po, .no_kernel = o.nokernel, .inline_frames = o.inl || (viewer && o.inl),
		.weight = o.weight);
	for (int i = 0; i < 2; i++) {
		if (!(sd[i].prof = uw_profile_new(s, &po))) {
			fprintf(stderr, "unwound diff: %s\n", strerror(errno));
			goto out;
		}
		if ((ret = read_one(s, paths[i], &o, &sd[i])) != CLI_EXIT_OK)
			goto out;
		ret = CLI_EXIT_ERROR;
	}
	if (uw_profile_nr_events(sd[0].prof) && uw_profile_nr_events(sd[1].prof) &&
	    strcmp(uw_profile_event_name(sd[0].prof, 0), uw_profile_event_name(sd[1].prof, 0))) {
		fprintf(stderr, "unwound diff: the recordings are of different events ('%s', '%s'): choose one with --event NAME\n",
			uw_profile_event_name(sd[0].prof, 0), uw_profile_event_name(sd[1].prof, 0));
		ret = CLI_EXIT_USAGE;
		goto out;
	}
	if (!(out = cli_open_output("diff", o.outp, &outfd)))
		goto out;
	int e;
	if (o.format == F_HTML) {
		char title[512];
		snprintf(title, sizeof(title), "%s → %s", paths[0], paths[1]);
		UW_OPTS(uw_html_opts, ho, .title = title, .baseline = sd[0].prof);
		e = uw_profile_write_html(sd[1].prof, out, &ho);
	} else {
		static const int fmts[] = { UW_DIFF_FUNCTIONS, UW_DIFF_STACKS, UW_DIFF_FOLDED };
		UW_OPTS(uw_diff_opts, dop, .format = fmts[o.format], .max_rows = o.rows, .percent_limit = o.percent_limit);
		e = uw_profile_write_diff(sd[0].prof, sd[1].prof, out, &dop);
	}
	if (e && e != -EIO) {
		fprintf(stderr, "unwound diff: %s\n", uw_strerror(e));
		goto out;
	}
	ret = CLI_EXIT_OK;
out:; /* (a declaration may not follow a label before C23: clang 14 refuses it) */
	int ce = out ? cli_close_output(out, &outfd, ret == CLI_EXIT_OK) : 0;
	if (ce && ret == CLI_EXIT_OK) {
		fprintf(stderr, "unwound diff: writing %s: %s\n", o.outp ? o.outp : "standard output", uw_strerror(ce));
		ret = CLI_EXIT_ERROR;
	}
	uw_profile_free(sd[0].prof);
	uw_profile_free(sd[1].prof);
	uw_session_free(s);
	free(o.comms);
	free(o.debugdirs);
	free(o.search);
	return ret;
}
