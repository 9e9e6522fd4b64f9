/* SPDX-License-Identifier: MIT */
/* unwound report's options: its own, perf report's and perf script's spelled as perf does (-g,
 * -F, -s, --time, ...), and those perf has and unwound does not, refused with what to use
 * instead. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

void report_usage(FILE *f)
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
		"                      go tool pprof and pprof-based tools (labels pid, tid, thread; a\n"
		"                      value per event: cpu/nanoseconds, off-cpu/nanoseconds, ...);\n"
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
		"  --addresses         name unknown frames module+0xADDRESS (--folded; the address in the file)\n"
		"filters:\n"
		"  --event NAME        samples of this event only (any output); offcpu-time: the off-CPU\n"
		"                      time of record --off-cpu (or perf record --off-cpu), weighed by\n"
		"                      its period (ns)\n"
		"  --wall              on-CPU and off-CPU time as one event, 'wall', weighed by time:\n"
		"                      cpu-clock and task-clock samples by their period (ns), offcpu-time\n"
		"                      by theirs (any output; other events are left out)\n"
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
int report_parse_args(int argc, char **argv, struct ropts *o)
{
	enum { O_SCRIPT = 256, O_FOLDED, O_FORMAT, O_PID, O_TID, O_COMM, O_KALLSYMS, O_VMLINUX, O_DEBUGDIR, O_SYMFS,
	       O_NOFP, O_STITCH, O_STACKLIMIT, O_SORT, O_ROWS, O_NOKERNEL, O_ADDRS, O_NOINLINE, O_SRCLINE, O_NODEMANGLE, O_INLINE,
	       O_GROUP, O_OFFLINE, O_DBGDTIMEOUT, O_NOCACHE, O_SYNCSYM, O_STDIO, O_EVENT, O_WEIGHT,
	       O_PCTLIMIT, O_CHILDREN, O_NOCHILDREN, O_SEARCH, O_TIME, O_HEADER, O_HEADERONLY, O_PERCENTAGE, O_DEMANGLE,
	       O_FORCE, O_FIELDS, O_QUIET, O_WALL };
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
		{ "wall", no_argument, 0, O_WALL },
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
		case O_SYMFS: if (cli_dir_option("report", "--symfs", optarg)) return -1; o->symfs = optarg; break;
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
		case O_WALL: o->wall = 1; break;
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
	if (o->wall && o->event) {
		fprintf(stderr, "unwound report: --wall is the CPU and off-CPU events as one: it takes no --event\n");
		return -1;
	}
	/* off-CPU samples weigh their time (a sample may be many short waits added up) */
	if (!o->weight && (o->wall || (o->event && !strcmp(o->event, "offcpu-time"))) && o->mode != MODE_SCRIPT)
		o->weight = UW_WEIGHT_PERIOD;
	if (o->mode == MODE_SCRIPT && o->weight) {
		fprintf(stderr, "unwound report: --weight applies to the table and --folded; --script shows each sample\n");
		return -1;
	}
	return 0;
}

void report_opts_free(struct ropts *o)
{
	free(o->pids);
	free(o->tids);
	free(o->comms);
	free(o->debugdirs);
	free(o->search);
}
