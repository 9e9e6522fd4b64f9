/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_verbose;

/* A whole number in [lo, hi], else a message. */
static int number(const char *cmd, const char *opt, const char *arg, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(arg, &end, 0);
	if (errno || end == arg || *end || arg[0] == '-' || v < lo || v > hi) {
		fprintf(stderr, "unwound %s: --%s takes a number from %" PRIu64 " to %" PRIu64 "\n", cmd, opt, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

int cli_limit_option(const char *cmd, int c, const char *arg, struct cli_limits *l)
{
	uint64_t v;
	switch (c) {
	case CLI_O_MAXFR:
		if (number(cmd, "max-frames", arg, 1, 4096, &v))
			return -1;
		l->max_frames = (unsigned)v;
		return 1;
	case CLI_O_MAXKFR:
		if (number(cmd, "max-kernel-frames", arg, 1, 65536, &v))
			return -1;
		l->max_kernel_frames = (unsigned)v;
		return 1;
	case CLI_O_MAXINFLATE:
		if (number(cmd, "max-inflate", arg, 1, 1 << 20, &v))
			return -1;
		l->max_inflate = v << 20;
		return 1;
	case CLI_O_MAXSIDE:
		if (number(cmd, "max-side-file", arg, 1, 1 << 20, &v))
			return -1;
		l->max_side_file = v << 20;
		return 1;
	case CLI_O_MAXQUEUE:
		if (number(cmd, "max-queue", arg, 1, 1 << 20, &v))
			return -1;
		l->max_queue = (size_t)(v << 20);
		return 1;
	default:
		return 0;
	}
}

void cli_log(void *ctx, enum uw_log_level lvl, const char *msg)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	(void)ctx;
	fprintf(stderr, "unwound: %s: %s\n", names[lvl], msg);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: unwound <command> [options]\n\n"
		   "commands:\n"
		   "  report   unwind and symbolize a perf.data file recorded with --call-graph dwarf\n"
		   "  record   record with perf_event_open and unwind online (perf.data with callchains)\n"
		   "  inject   rewrite such a file with ready callchains (for perf report, hotspot)\n\n"
		   "Run 'unwound <command> --help' for the options of a command.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "report"))
		return cmd_report(argc - 1, argv + 1);
	if (!strcmp(argv[1], "record"))
		return cmd_record(argc - 1, argv + 1);
	if (!strcmp(argv[1], "inject"))
		return cmd_inject(argc - 1, argv + 1);
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return CLI_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("unwound %d.%d.%d\n", UW_VERSION_MAJOR, UW_VERSION_MINOR, UW_VERSION_PATCH);
		return CLI_EXIT_OK;
	}
	fprintf(stderr, "unwound: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return CLI_EXIT_USAGE;
}
