/* SPDX-License-Identifier: MIT */
/* unwound: the command table; each command is in its cmd_*.c, the helpers they share in cli.c. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

static const struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *help;
} commands[] = {
	{ "report", cmd_report, "unwind and symbolize a perf.data file recorded with --call-graph dwarf" },
	{ "record", cmd_record, "record with perf_event_open and unwind online (perf.data with callchains)" },
	{ "inject", cmd_inject, "rewrite such a file with ready callchains (for perf report, hotspot)" },
	{ "diff", cmd_diff, "compare two recordings: per function, per stack, folded or a flame graph" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: unwound <command> [options]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\nRun 'unwound <command> --help' for the options of a command.\n");
}

/* Descriptors 0, 1 and 2 started closed ('2>&-'): each is held by /dev/null opened the other
 * way round (reading from 1 and 2, writing to 0 fail with EBADF, as on a closed descriptor), so
 * that no file the command opens (an output, a cache file) becomes its standard output or
 * error and receives its messages. */
static void hold_std_fds(void)
{
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
			int n = open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
			if (n >= 0 && n != fd) {
				/* (a lower one was closed too and is held now: this one in its turn) */
				dup2(n, fd);
				close(n);
			}
		}
}

/* A signal that ends the command (its output's reader gone, ^C, kill): the library's temporary
 * files with a name removed first (a cache entry half written on a file system without
 * O_TMPFILE), then the signal raised again, so the command ends as it would have. */
static void on_fatal_signal(int sig)
{
	uw_remove_temporaries();
	raise(sig); /* (SA_RESETHAND: the default action now) */
}

static void remove_temporaries_on_exit(void)
{
	uw_remove_temporaries();
}

static void clean_up_on_signals(void)
{
	static const int sigs[] = { SIGPIPE, SIGINT, SIGTERM, SIGHUP };
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct sigaction old, sa = { 0 };
		/* (one ignored by whoever started the command stays ignored) */
		if (sigaction(sigs[i], NULL, &old) || old.sa_handler != SIG_DFL)
			continue;
		sa.sa_handler = on_fatal_signal;
		sa.sa_flags = SA_RESETHAND | SA_NODEFER;
		sigaction(sigs[i], &sa, NULL);
	}
	atexit(remove_temporaries_on_exit);
}

int main(int argc, char **argv)
{
	hold_std_fds();
	clean_up_on_signals();
	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return CLI_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("unwound %d.%d.%d\n", UW_VERSION_MAJOR, UW_VERSION_MINOR, UW_VERSION_PATCH);
		return CLI_EXIT_OK;
	}
	fprintf(stderr, "unwound: unknown command '%s' (commands:", argv[1]);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(stderr, "%s %s", i ? "," : "", commands[i].name);
	fprintf(stderr, "); see 'unwound --help'\n");
	return CLI_EXIT_USAGE;
}
