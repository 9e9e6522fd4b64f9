/* SPDX-License-Identifier: MIT */
/* unwound report: read a perf.data file, unwind, and print a top table, script lines or
 * folded stacks. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

enum mode { MODE_TOP, MODE_SCRIPT, MODE_FOLDED };

struct report {
	struct uw_session *s;
	struct uw_profile *prof;
	FILE *out;
	enum mode mode;
	int err;
	int tty;
	struct uw_script_opts script;
	struct uw_script_writer *sw;
};

static int on_sample(void *ctx, const struct uw_sample *smp)
{
	struct report *r = ctx;
	int e;
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
	fprintf(stderr, "\rreading: %3u%% (%" PRIu64 " MiB)", (unsigned)(100 * done / total), done >> 20);
	if (done >= total)
		fprintf(stderr, "\r%40s\r", "");
}

static void report_usage(FILE *f)
{
	fprintf(f,
		"usage: unwound report [-i FILE] [options]\n\n"
		"Unwinds and symbolizes the samples of a perf.data file recorded with\n"
		"'perf record --call-graph dwarf' (file or pipe mode; '-' or no -i with a pipe: stdin).\n\n"
		"output (default: a table of functions and an unwinding summary):\n"
		"  --script            one block per sample, in the format of 'perf script'\n"
		"  --no-inline         without inline frames (as 'perf script --no-inline')\n"
		"  --srcline           with the source file:line of each frame (--script)\n"
		"  --no-demangle       C++ and Rust names as in the symbol table\n"
		"  --folded            folded stacks: comm;outer;...;inner count\n"
		"  -o, --output FILE   write to FILE instead of standard output\n"
		"  --sort self|total   order of the table (default self)\n"
		"  --group function|line  rows by function (default) or by source line (DWARF)\n"
		"  --inline            --folded and the table with inline frames of their own (DWARF)\n"
		"  --rows N            rows of the table (default 30)\n"
		"  --no-kernel         leave kernel frames out\n"
		"  --addresses         name unknown frames module+0xoffset\n"
		"filters:\n"
		"  --pid PID, --tid TID, --comm NAME\n"
		"symbols and unwinding:\n"
		"  --kallsyms FILE     kernel symbols (default /proc/kallsyms when the recording's kernel is running)\n"
		"  --debug-dir DIR     extra root for separate debug files (also $UNWOUND_DEBUG_PATH)\n"
		"  --symfs DIR         prefix for the recording's file paths\n"
		"  --offline           never fetch from debuginfod servers ($DEBUGINFOD_URLS)\n"
		"  --debuginfod-timeout SECS  cap on one debuginfod fetch (default 30)\n"
		"  --sync-symbols      look inline frames up when printed (default: on a helper\n"
		"                      thread, a few thousand samples ahead, with 2 or more CPUs)\n"
		"  --no-dwarf-cache    neither read nor keep decompressed DWARF and decoded line tables (kept\n"
		"                      by build-id in $UNWOUND_CACHE_DIR, else $XDG_CACHE_HOME/unwound or\n"
		"                      ~/.cache/unwound)\n"
		"  --no-fp             never fall back to frame pointers\n"
		"  -v                  more messages (repeat for more)\n"
		CLI_LIMITS_HELP);
}

struct modsum {
	unsigned missing, mismatch, bad, ok;
	FILE *f;
	int listed;
};

static int list_module(void *ctx, struct uw_module *m)
{
	struct modsum *ms = ctx;
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
	default: break;
	}
	return 0;
}

static void summary(struct uw_session *s, const struct uw_reader_stats *st, FILE *f)
{
	uint64_t with_user = st->samples_delivered - st->samples_no_user;
	uint64_t complete = st->stop_reasons[UW_STOP_END_OF_STACK] + st->stop_reasons[UW_STOP_NONE];
	fprintf(f, "\n# unwinding: %" PRIu64 " samples (%" PRIu64 " with a user stack), %.2f%% reach a root frame, "
		   "%.1f user frames per stack on average",
		st->samples_delivered, with_user, with_user ? 100.0 * (double)complete / (double)with_user : 0.0,
		with_user ? (double)st->user_frames / (double)with_user : 0.0);
	bool first = true;
	for (int i = 0; i < UW_STOP__COUNT; i++) {
		if (i == UW_STOP_END_OF_STACK || i == UW_STOP_NONE || !st->stop_reasons[i])
			continue;
		fprintf(f, "%s %s: %" PRIu64, first ? "; stopped early:" : ",", uw_stop_reason_str(i), st->stop_reasons[i]);
		first = false;
	}
	if (st->lost_events)
		fprintf(f, "; %" PRIu64 " events lost in %" PRIu64 " LOST records", st->lost_events, st->lost_records);
	if (st->late_records)
		fprintf(f, "; %" PRIu64 " records arrived after their ordering window", st->late_records);
	if (st->malformed_samples)
		fprintf(f, "; %" PRIu64 " malformed samples dropped", st->malformed_samples);
	if (st->unknown_records)
		fprintf(f, "; %" PRIu64 " unknown records skipped", st->unknown_records);
	fprintf(f, ".\n");
	if (st->stack_bytes_read)
		fprintf(f, "# input: %.1f MiB of user stacks read (%" PRIu64 " stacks read back whole)\n",
			(double)st->stack_bytes_read / 1048576.0, st->stack_rereads);
	struct modsum ms = { .f = f };
	uw_session_foreach_module(s, list_module, &ms);
	fprintf(f, "# modules: %u opened, %u missing, %u with a different build-id, %u unusable\n", ms.ok, ms.missing,
		ms.mismatch, ms.bad);
}

int cmd_report(int argc, char **argv)
{
	enum { O_SCRIPT = 256, O_FOLDED, O_PID, O_TID, O_COMM, O_KALLSYMS, O_DEBUGDIR, O_SYMFS,
	       O_NOFP, O_SORT, O_ROWS, O_NOKERNEL, O_ADDRS, O_NOINLINE, O_SRCLINE, O_NODEMANGLE, O_INLINE,
	       O_GROUP, O_OFFLINE, O_DBGDTIMEOUT, O_NOCACHE, O_SYNCSYM };
	static const struct option lo[] = {
		{ "input", required_argument, 0, 'i' }, { "output", required_argument, 0, 'o' },
		{ "script", no_argument, 0, O_SCRIPT }, { "folded", no_argument, 0, O_FOLDED },
		{ "pid", required_argument, 0, O_PID }, { "tid", required_argument, 0, O_TID },
		{ "comm", required_argument, 0, O_COMM }, { "kallsyms", required_argument, 0, O_KALLSYMS },
		{ "debug-dir", required_argument, 0, O_DEBUGDIR }, { "symfs", required_argument, 0, O_SYMFS },
		{ "no-fp", no_argument, 0, O_NOFP },
		{ "sort", required_argument, 0, O_SORT }, { "rows", required_argument, 0, O_ROWS },
		{ "no-kernel", no_argument, 0, O_NOKERNEL }, { "addresses", no_argument, 0, O_ADDRS },
		{ "no-inline", no_argument, 0, O_NOINLINE }, { "srcline", no_argument, 0, O_SRCLINE },
		{ "no-demangle", no_argument, 0, O_NODEMANGLE }, { "inline", no_argument, 0, O_INLINE },
		{ "group", required_argument, 0, O_GROUP }, { "offline", no_argument, 0, O_OFFLINE },
		{ "debuginfod-timeout", required_argument, 0, O_DBGDTIMEOUT },
		{ "no-dwarf-cache", no_argument, 0, O_NOCACHE }, { "sync-symbols", no_argument, 0, O_SYNCSYM },
		CLI_LIMIT_OPTIONS,
		{ "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 },
	};
	const char *in = NULL, *outp = NULL, *kallsyms = NULL, *debugdir = NULL, *symfs = NULL, *comm = NULL;
	int pid = 0, tid = 0, nofp = 0, nokernel = 0, addrs = 0, noinline = 0, srcline = 0, nodemangle = 0, inl = 0, byline = 0, nocache = 0, syncsym = 0;
	unsigned rows = 30, dbgd_ms = 0;
	int offline = 0;
	struct cli_limits lim = { 0 };
	enum uw_top_sort sort = UW_TOP_SELF;
	struct report rep = { .mode = MODE_TOP };
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "i:o:vh", lo, NULL)) != -1) {
		int l = cli_limit_option("report", c, optarg, &lim);
		if (l < 0)
			return CLI_EXIT_USAGE;
		if (l)
			continue;
		switch (c) {
		case 'i': in = optarg; break;
		case 'o': outp = optarg; break;
		case 'v': cli_verbose++; break;
		case 'h': report_usage(stdout); return CLI_EXIT_OK;
		case O_SCRIPT: rep.mode = MODE_SCRIPT; break;
		case O_FOLDED: rep.mode = MODE_FOLDED; break;
		case O_PID: pid = atoi(optarg); break;
		case O_TID: tid = atoi(optarg); break;
		case O_COMM: comm = optarg; break;
		case O_KALLSYMS: kallsyms = optarg; break;
		case O_DEBUGDIR: debugdir = optarg; break;
		case O_SYMFS: symfs = optarg; break;
		case O_NOFP: nofp = 1; break;
		case O_NOKERNEL: nokernel = 1; break;
		case O_ADDRS: addrs = 1; break;
		case O_NOINLINE: noinline = 1; break;
		case O_SRCLINE: srcline = 1; break;
		case O_NODEMANGLE: nodemangle = 1; break;
		case O_INLINE: inl = 1; break;
		case O_OFFLINE: offline = 1; break;
		case O_NOCACHE: nocache = 1; break;
		case O_SYNCSYM: syncsym = 1; break;
		case O_DBGDTIMEOUT: {
			double sec = atof(optarg);
			if (sec <= 0 || sec > 3600) {
				fprintf(stderr, "unwound report: --debuginfod-timeout takes seconds (0 < s <= 3600)\n");
				return CLI_EXIT_USAGE;
			}
			dbgd_ms = (unsigned)(sec * 1000);
			break;
		}
		case O_GROUP:
			if (!strcmp(optarg, "function"))
				byline = 0;
			else if (!strcmp(optarg, "line"))
				byline = 1;
			else {
				fprintf(stderr, "unwound report: --group takes function or line\n");
				return CLI_EXIT_USAGE;
			}
			break;
		case O_ROWS: rows = (unsigned)strtoul(optarg, NULL, 0); break;
		case O_SORT:
			if (!strcmp(optarg, "self"))
				sort = UW_TOP_SELF;
			else if (!strcmp(optarg, "total"))
				sort = UW_TOP_TOTAL;
			else {
				fprintf(stderr, "unwound report: --sort takes self or total\n");
				return CLI_EXIT_USAGE;
			}
			break;
		default: report_usage(stderr); return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "unwound report: unexpected argument '%s'\n", argv[optind]);
		return CLI_EXIT_USAGE;
	}
	if (!in)
		in = isatty(0) ? "perf.data" : "-";
	UW_OPTS(uw_session_opts, so, .log = cli_log, .log_level = (enum uw_log_level)(cli_verbose + 1),
		.max_frames = lim.max_frames, .debug_dirs = debugdir, .sysroot = symfs, .no_fp_fallback = nofp,
		.no_demangle = nodemangle, .offline = offline, .debuginfod_timeout_ms = dbgd_ms,
		.max_inflate_bytes = lim.max_inflate, .max_side_file_bytes = lim.max_side_file, .no_dwarf_cache = nocache, .sync_symbols = syncsym);
	rep.s = uw_session_new(&so);
	if (!rep.s) {
		fprintf(stderr, "unwound report: %s\n", strerror(errno));
		return CLI_EXIT_ERROR;
	}
	int ret = CLI_EXIT_ERROR;
	struct uw_reader *rd = NULL;
	rep.out = stdout;
	rep.tty = isatty(2);
	UW_OPTS(uw_reader_opts, ro, .pid = pid, .tid = tid, .comm = comm, .on_sample = on_sample, .ctx = &rep,
		.on_progress = on_progress, .max_queue_bytes = lim.max_queue, .max_kernel_frames = lim.max_kernel_frames);
	rd = uw_reader_open(rep.s, in, &ro);
	if (!rd) {
		fprintf(stderr, "unwound report: %s\n", uw_session_errmsg(rep.s));
		goto out;
	}
	rep.script.sz = sizeof(rep.script);
	rep.script.no_inline = noinline;
	rep.script.srcline = srcline;
	for (unsigned i = 0; i < uw_reader_nr_events(rd); i++) {
		size_t l = strlen(uw_reader_event_name(rd, i));
		if (l > rep.script.event_width)
			rep.script.event_width = (unsigned)l;
	}
	/* kernel symbols: the named file, else the running kernel's when it is the recorded one */
	int ke = uw_session_load_kallsyms(rep.s, kallsyms);
	if (ke && (kallsyms || cli_verbose))
		fprintf(stderr, "unwound report: kernel symbols not loaded: %s\n", uw_session_errmsg(rep.s));
	if (outp) {
		rep.out = fopen(outp, "w");
		if (!rep.out) {
			fprintf(stderr, "unwound report: %s: %s\n", outp, strerror(errno));
			rep.out = stdout;
			goto out;
		}
	}
	if (rep.mode == MODE_SCRIPT) {
		rep.sw = uw_script_writer_new(rep.s, rep.out, &rep.script);
		if (!rep.sw) {
			fprintf(stderr, "unwound report: %s\n", strerror(errno));
			goto out;
		}
	} else {
		UW_OPTS(uw_profile_opts, po, .no_kernel = nokernel, .addresses = addrs, .inline_frames = inl || byline,
			.by_line = byline);
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
		fprintf(stderr, "unwound report: writing output: %s\n", uw_strerror(rep.err));
		goto out;
	}
	struct uw_reader_stats st = { .sz = sizeof(st) };
	uw_reader_stats(rd, &st);
	if (rep.mode == MODE_FOLDED) {
		uw_profile_write_folded(rep.prof, rep.out);
	} else if (rep.mode == MODE_TOP) {
		const char *host = uw_reader_info(rd, UW_INFO_HOSTNAME), *os = uw_reader_info(rd, UW_INFO_OSRELEASE);
		const char *arch = uw_reader_info(rd, UW_INFO_ARCH), *cpus = uw_reader_info(rd, UW_INFO_NRCPUS);
		const char *cmd = uw_reader_info(rd, UW_INFO_CMDLINE), *ver = uw_reader_info(rd, UW_INFO_PERF_VERSION);
		if (host || os)
			fprintf(rep.out, "# recorded on %s (Linux %s, %s, %s CPUs online/available) by perf %s\n",
				host ? host : "?", os ? os : "?", arch ? arch : "?", cpus ? cpus : "?", ver ? ver : "?");
		if (cmd)
			fprintf(rep.out, "# %s\n", cmd);
		fprintf(rep.out, "# %" PRIu64 " samples, %" PRIu64 " distinct stacks\n", uw_profile_nr_samples(rep.prof),
			uw_profile_nr_stacks(rep.prof));
		uw_profile_write_top(rep.prof, rep.out, rows, sort);
		summary(rep.s, &st, rep.out);
	}
	if (cli_verbose && rep.mode != MODE_TOP)
		summary(rep.s, &st, stderr);
	else if (rep.mode != MODE_TOP && st.malformed_samples)
		fprintf(stderr, "unwound report: warning: %" PRIu64 " malformed samples dropped\n", st.malformed_samples);
	if (fflush(rep.out) || ferror(rep.out)) {
		fprintf(stderr, "unwound report: writing output: %s\n", strerror(errno));
		goto out;
	}
	if (err) {
		fprintf(stderr, "unwound report: %s\n", uw_session_errmsg(rep.s));
		goto out;
	}
	ret = CLI_EXIT_OK;
out:
	uw_script_writer_close(rep.sw);
	if (rep.out && rep.out != stdout)
		fclose(rep.out);
	uw_profile_free(rep.prof);
	uw_reader_free(rd);
	uw_session_free(rep.s);
	return ret;
}
