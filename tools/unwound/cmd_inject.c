/* SPDX-License-Identifier: MIT */
/* unwound inject: a --call-graph dwarf recording rewritten with ready callchains. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

static void inject_usage(FILE *f)
{
	fprintf(f, "usage: unwound inject -i IN -o OUT [options]\n\n"
		   "Unwinds every sample of a 'perf record --call-graph dwarf' file and writes a perf.data\n"
		   "file whose samples carry complete callchains instead of register and stack copies, for\n"
		   "perf report, perf script and hotspot. The input's header features are kept (those that\n"
		   "depend on what changed are written anew); each sample's stop reason is kept too, in a\n"
		   "section perf skips. An existing OUT is kept as OUT.old.\n\n"
		   "  -i, --input FILE    the recording ('-': standard input)\n"
		   "  -o, --output FILE   the file to write ('-': a pipe-mode stream on standard output)\n"
		   "  --debug-dir DIR, --symfs DIR, --search-path DIR, --offline, --no-fp, --stitch\n"
		   "                      as for report\n"
		   "  -v                  more messages\n"
		   CLI_LIMITS_HELP);
}

int cmd_inject(int argc, char **argv)
{
	enum { O_DEBUGDIR = 256, O_SYMFS, O_OFFLINE, O_NOFP, O_SEARCH, O_STITCH };
	static const struct option lo[] = {
		{ "input", required_argument, 0, 'i' }, { "output", required_argument, 0, 'o' },
		{ "debug-dir", required_argument, 0, O_DEBUGDIR }, { "symfs", required_argument, 0, O_SYMFS },
		{ "search-path", required_argument, 0, O_SEARCH },
		{ "offline", no_argument, 0, O_OFFLINE }, { "no-fp", no_argument, 0, O_NOFP },
		{ "stitch", no_argument, 0, O_STITCH }, CLI_LIMIT_OPTIONS,
		{ "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 },
	};
	const char *in = NULL, *out = NULL, *symfs = NULL;
	char *debugdirs = NULL, *search = NULL;
	int offline = 0, nofp = 0, stitch = 0, c, ret = CLI_EXIT_USAGE;
	struct cli_limits lim = { 0 };
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:o:vh", lo, NULL)) != -1) {
		int l = cli_limit_option("inject", c, optarg, &lim);
		if (l < 0)
			goto out;
		if (l)
			continue;
		switch (c) {
		case 'i': in = optarg; break;
		case 'o': out = optarg; break;
		case 'v': cli_verbose++; break;
		case 'h': inject_usage(stdout); ret = CLI_EXIT_OK; goto out;
		case O_DEBUGDIR: if (cli_append_path("inject", "--debug-dir", optarg, &debugdirs)) goto out; break;
		case O_SEARCH: if (cli_append_path("inject", "--search-path", optarg, &search)) goto out; break;
		case O_SYMFS: if (cli_dir_option("inject", "--symfs", optarg)) goto out; symfs = optarg; break;
		case O_OFFLINE: offline = 1; break;
		case O_NOFP: nofp = 1; break;
		case O_STITCH: stitch = 1; break;
		default: cli_option_error("inject", c, argv, lo); goto out;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "unwound inject: unexpected argument '%s' (the files are given with -i and -o)\n", argv[optind]);
		cli_see_help("inject");
		goto out;
	}
	if (!in || !out) {
		fprintf(stderr, "unwound inject: give the recording with -i FILE and the file to write with -o FILE\n");
		cli_see_help("inject");
		goto out;
	}
	ret = CLI_EXIT_ERROR;
	UW_OPTS(uw_session_opts, so, .log = cli_log, .log_level = (enum uw_log_level)(cli_verbose + 1),
		.max_frames = lim.max_frames, .debug_dirs = debugdirs, .sysroot = symfs, .no_fp_fallback = nofp,
		.offline = offline, .max_inflate_bytes = lim.max_inflate, .max_side_file_bytes = lim.max_side_file, .max_dwarf_cache_bytes = lim.max_dwarf_cache,
		.max_debuginfod_bytes = lim.max_debuginfod,
		.search_path = search);
	struct uw_session *s = uw_session_new(&so);
	if (!s) {
		fprintf(stderr, "unwound inject: %s\n", strerror(errno));
		goto out;
	}
	struct uw_inject_stats st = { .sz = sizeof(st) };
	UW_OPTS(uw_inject_opts, io, .max_queue_bytes = lim.max_queue, .max_kernel_frames = lim.max_kernel_frames,
		.stitch = stitch);
	int err = uw_inject(s, in, out, &io, &st);
	if (err)
		fprintf(stderr, "unwound inject: %s\n", uw_session_errmsg(s));
	else
		fprintf(stderr, "unwound inject: %" PRIu64 " samples with callchains, %" PRIu64 " other records; %.1f MiB -> %.1f MiB\n",
			st.samples_written, st.records_written, (double)st.bytes_in / 1048576.0,
			(double)st.bytes_out / 1048576.0);
	bool incomplete = !err && cli_incomplete("inject", s);
	uw_session_free(s);
	ret = err ? CLI_EXIT_ERROR : incomplete ? CLI_EXIT_INCOMPLETE : CLI_EXIT_OK;
out:
	free(debugdirs);
	free(search);
	return ret;
}
