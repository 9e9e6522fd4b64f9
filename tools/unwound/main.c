/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int cli_verbose;

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
