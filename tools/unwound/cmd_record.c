/* SPDX-License-Identifier: MIT */
/* unwound record: perf_event_open, online unwinding, a perf.data file with callchains. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static volatile int stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static void record_usage(FILE *f)
{
	fprintf(f, "usage: unwound record [-F HZ | -c PERIOD] [-e EVENT] [-a | -p PID,... | -t TID,... | -- CMD ARGS...] [-o FILE]\n\n"
		   "Samples with perf_event_open, unwinds each sample's user stack as it comes and writes a\n"
		   "perf.data file whose samples carry complete callchains: perf report, perf script, hotspot\n"
		   "and unwound report read it. Stack copies never reach the disk.\n\n"
		   "  -F, --freq HZ       samples per second and CPU (default 999)\n"
		   "  -c, --count N       one sample every N events instead\n"
		   "  -e, --event EVENT   cycles (default when the CPU has it), instructions, cpu-clock,\n"
		   "                      task-clock, page-faults\n"
		   "  -a, --all-cpus      every process on every CPU\n"
		   "  -p, --pid PIDS      processes that already run (comma-separated)\n"
		   "  -t, --tid TIDS      threads\n"
		   "  -o, --output FILE   default perf.data (an existing one is kept as FILE.old)\n"
		   "  --stack-size BYTES  user stack copied per sample (default 16384, at most 65528)\n"
		   "  --duration SECS     stop after this long (also: Ctrl-C, SIGTERM, the command's exit)\n"
		   "  -m, --mmap-pages N  data pages per ring buffer (power of two, default 1024)\n"
		   "  --debug-dir DIR, --offline, --no-fp   as for report\n"
		   "  -q, --quiet         no status line\n"
		   "  -v                  more messages\n");
}

static int parse_list(const char *arg, int **out, size_t *n)
{
	char *dup = strdup(arg), *save = NULL;
	if (!dup)
		return -1;
	for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *end;
		long v = strtol(t, &end, 10);
		int *nv = realloc(*out, (*n + 1) * sizeof(*nv));
		if (*end || v <= 0 || !nv) {
			free(dup);
			if (nv)
				*out = nv;
			return -1;
		}
		*out = nv;
		(*out)[(*n)++] = (int)v;
	}
	free(dup);
	return 0;
}

struct status_ctx {
	bool tty;
	uint64_t last_samples;
	double last_t;
};

static void on_status(void *ctx, const struct uw_record_status *st)
{
	struct status_ctx *c = ctx;
	if (!c->tty)
		return;
	double dt = st->elapsed - c->last_t;
	double rate = dt > 0 ? (double)(st->samples - c->last_samples) / dt : 0;
	c->last_samples = st->samples;
	c->last_t = st->elapsed;
	fprintf(stderr, "\rrecording %.0f s: %" PRIu64 " samples (%.0f/s), %" PRIu64 " lost, %.1f%% unwound to a root, own CPU %.2f%%   ",
		st->elapsed, st->samples, rate, st->lost,
		st->samples ? 100.0 * (double)st->samples_root / (double)st->samples : 0.0,
		st->elapsed > 0 ? 100.0 * st->cpu_self / st->elapsed : 0.0);
}

int cmd_record(int argc, char **argv)
{
	enum { O_STACK = 256, O_DURATION, O_DEBUGDIR, O_OFFLINE, O_NOFP };
	static const struct option lo[] = {
		{ "freq", required_argument, 0, 'F' }, { "count", required_argument, 0, 'c' },
		{ "event", required_argument, 0, 'e' }, { "all-cpus", no_argument, 0, 'a' },
		{ "pid", required_argument, 0, 'p' }, { "tid", required_argument, 0, 't' },
		{ "output", required_argument, 0, 'o' }, { "stack-size", required_argument, 0, O_STACK },
		{ "duration", required_argument, 0, O_DURATION }, { "mmap-pages", required_argument, 0, 'm' },
		{ "debug-dir", required_argument, 0, O_DEBUGDIR }, { "offline", no_argument, 0, O_OFFLINE },
		{ "no-fp", no_argument, 0, O_NOFP }, { "quiet", no_argument, 0, 'q' },
		{ "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 },
	};
	UW_OPTS(uw_record_opts, ro, .stop = &stop_flag);
	int *pids = NULL, *tids = NULL, c, offline = 0, nofp = 0, quiet = 0;
	size_t npids = 0, ntids = 0;
	const char *debugdir = NULL;
	optind = 1;
	/* '+': options end at the command */
	while ((c = getopt_long(argc, argv, "+F:c:e:ap:t:o:m:qvh", lo, NULL)) != -1) {
		switch (c) {
		case 'F': ro.freq = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'c': ro.period = strtoull(optarg, NULL, 0); break;
		case 'e': ro.event = optarg; break;
		case 'a': ro.system_wide = 1; break;
		case 'p':
			if (parse_list(optarg, &pids, &npids)) {
				fprintf(stderr, "unwound record: -p takes process ids: %s\n", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 't':
			if (parse_list(optarg, &tids, &ntids)) {
				fprintf(stderr, "unwound record: -t takes thread ids: %s\n", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'o': ro.output = optarg; break;
		case 'm': ro.mmap_pages = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'q': quiet = 1; break;
		case 'v': cli_verbose++; break;
		case O_STACK: ro.stack_size = (unsigned)strtoul(optarg, NULL, 0); break;
		case O_DURATION: ro.duration = atof(optarg); break;
		case O_DEBUGDIR: debugdir = optarg; break;
		case O_OFFLINE: offline = 1; break;
		case O_NOFP: nofp = 1; break;
		case 'h': record_usage(stdout); return CLI_EXIT_OK;
		default: record_usage(stderr); return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc)
		ro.argv = argv + optind;
	ro.pids = pids;
	ro.npids = npids;
	ro.tids = tids;
	ro.ntids = ntids;
	/* the header's command line: "unwound record ..." as given */
	ro.cmd_argc = argc;
	ro.cmd_argv = (const char *const *)argv;
	struct status_ctx sc = { .tty = !quiet && isatty(2) };
	ro.on_status = on_status;
	ro.ctx = &sc;
	struct sigaction sa = { 0 };
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	UW_OPTS(uw_session_opts, so, .log = cli_log, .log_level = (enum uw_log_level)(cli_verbose + 1),
		.debug_dirs = debugdir, .no_fp_fallback = nofp, .offline = offline);
	struct uw_session *s = uw_session_new(&so);
	if (!s) {
		fprintf(stderr, "unwound record: %s\n", strerror(errno));
		return CLI_EXIT_ERROR;
	}
	struct uw_record_status st = { .sz = sizeof(st) };
	int err = uw_record(s, &ro, &st);
	if (sc.tty)
		fprintf(stderr, "\n");
	if (err)
		fprintf(stderr, "unwound record: %s\n", uw_session_errmsg(s));
	else {
		fprintf(stderr, "unwound record: %" PRIu64 " samples (%.2f%% unwound to a root), %" PRIu64 " lost, %.1f KiB written to %s; own CPU %.2f s in %.1f s\n",
			st.samples, st.samples ? 100.0 * (double)st.samples_root / (double)st.samples : 0.0, st.lost,
			(double)st.bytes_out / 1024.0, ro.output ? ro.output : "perf.data", st.cpu_self, st.elapsed);
		if (st.procmap_query || st.maps_scan)
			fprintf(stderr, "unwound record: mappings found on demand: %" PRIu64 " with PROCMAP_QUERY, %" PRIu64 " from /proc/PID/maps\n",
				st.procmap_query, st.maps_scan);
	}
	uw_session_free(s);
	free(pids);
	free(tids);
	return err ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}
