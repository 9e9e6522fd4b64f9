/* SPDX-License-Identifier: MIT */
/* unwound report's parts: its options (report_options.c, perf report's and perf script's habits),
 * its run and outputs (cmd_report.c), the recording's header and the unwinding summary
 * (report_summary.c). */
#ifndef UW_CLI_REPORT_H
#define UW_CLI_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"

enum mode { MODE_TOP, MODE_SCRIPT, MODE_FOLDED, MODE_PPROF, MODE_SPEEDSCOPE, MODE_HTML };

/* The command line, parsed */
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
	int weight, order, columns, stdio, quiet, header, header_only, wall;
	bool graph_set;
	unsigned rows, dbgd_ms;
	double percent_limit;
	struct cli_limits lim;
	enum mode mode;
	bool mode_set;
};

/* Parses argv into o (o->rows preset to the default). @return -1 (usage error, said), 0, or 1
 * for --help. What o holds is freed by report_opts_free either way. */
int report_parse_args(int argc, char **argv, struct ropts *o);
void report_opts_free(struct ropts *o);
void report_usage(FILE *f);

/* The recording's header, as the table's first lines: where, on what, by which perf, how. */
void report_print_header(struct uw_reader *rd, FILE *out);
/* The unwinding summary (per event; the input's, stitching's and modules' counts; what ran out),
 * as '#' lines: below the table, or on standard error with -v. event: --event's name or NULL. */
void report_summary(struct uw_session *s, struct uw_reader *rd, const struct uw_reader_stats *st, const char *event,
                    FILE *f);

#endif
