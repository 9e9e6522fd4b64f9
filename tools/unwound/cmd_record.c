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
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"

static volatile int stop_flag;

/* user frames kept per stack by default (--max-frames) */
#define RECORD_MAX_FRAMES 1024

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static void record_usage(FILE *f)
{
	fprintf(f, "usage: unwound record [-F HZ | -c PERIOD] [-e EVENT] [-a] [-p PID,... | -t TID,... | -- CMD ARGS...] [-o FILE]\n\n"
		   "Samples with perf_event_open, unwinds each sample's user stack as it comes and writes a\n"
		   "perf.data file whose samples carry complete callchains: perf report, perf script, hotspot\n"
		   "and unwound report read it. Stack copies never reach the disk. With a command, its exit\n"
		   "status is unwound's (a command that cannot be run: 255, as perf); a recorder that is\n"
		   "killed takes its command with it.\n\n"
		   "  -F, --freq HZ       samples per second and CPU (default 999; 'max': the kernel's limit)\n"
		   "  -c, --count N       one sample every N events instead\n"
		   "  -e, --event EVENT   cycles (default; cpu-clock, said, where the machine has no\n"
		   "                      hardware counters), instructions, cpu-clock, task-clock,\n"
		   "                      page-faults; several: -e A -e B or -e A,B (at most 8), each\n"
		   "                      sample with the stack, as perf record does; perf's modifiers\n"
		   "                      u, k, h (privilege levels) and p, P (precise_ip): cycles:u\n"
		   "  -g                  record call graphs (unwound always does: --call-graph's method)\n"
		   "  --call-graph MODE   dwarf[,SIZE] (default: user stacks copied, SIZE bytes, and unwound\n"
		   "                      here), fp (the kernel's frame-pointer callchains, for programs\n"
		   "                      built with frame pointers) or fp,defer (the same, the user part\n"
		   "                      walked once when the task returns to user space: Linux 6.19+)\n"
		   "  --unwind MODE       kernel (each user stack walked in the kernel by an eBPF program,\n"
		   "                      no stack copy: the recording begins once the program is\n"
		   "                      verified, an error where it cannot be) or copy (--call-graph\n"
		   "                      dwarf's copies). Default: the recording begins at once with\n"
		   "                      copies, the program is verified meanwhile and walks the\n"
		   "                      stacks from then on (the tasks that exist then keep copying);\n"
		   "                      it needs root or CAP_BPF+CAP_PERFMON and the kernel's BTF,\n"
		   "                      else a line says why\n"
		   "  --bpf-map-bytes N   kernel unwinding: cap on the BPF maps' bytes (module tables and\n"
		   "                      mappings; default 64 MiB); past it, stacks through modules\n"
		   "                      without a table are finished in user space from a stack copy\n"
		   "  -a, --all-cpus      every process on every CPU (with a command: while it runs)\n"
		   "  -p, --pid PIDS      processes that already run (comma-separated); ends when they\n"
		   "                      have all exited\n"
		   "  -t, --tid TIDS      threads (the same)\n"
		   "  -C, --cpu CPUS      only these CPUs (comma-separated, ranges A-B); without -p or\n"
		   "                      -t, every process on them (-a implied, as perf)\n"
		   "  -o, --output FILE   default perf.data (an existing one is kept as FILE.old); '-': a\n"
		   "                      pipe-mode stream on standard output\n"
		   "  --stack-size BYTES  user stack copied per sample (default 16384, at most 65528)\n"
		   "  --max-frames N      user frames kept per stack (default 1024, at most 4096; walked\n"
		   "                      in the kernel: at most 2048). perf report and perf script show\n"
		   "                      127 frames unless told more (--max-stack N): the summary says\n"
		   "                      the N a recording needs\n"
		   "  --duration SECS     stop after this long (also: Ctrl-C, SIGTERM, SIGHUP, the command's exit)\n"
		   "  -m, --mmap-pages N  data pages per ring buffer (power of two, default 1024)\n"
		   "  --off-cpu           off-CPU time too: where each followed thread waits and how long,\n"
		   "                      written as samples of the event offcpu-time whose period is\n"
		   "                      the time off the CPU in ns, with the stack it blocked in\n"
		   "  --off-cpu-mode kernel|switch  kernel (the default with --unwind kernel): every\n"
		   "                      wait timed by the eBPF program at the\n"
		   "                      sched_switch tracepoint, its stack walked there within a\n"
		   "                      budget, else given the stack walked at the same pc and stack\n"
		   "                      pointer; switch: a sample at every switch-out with its stack\n"
		   "                      and switch records (the default otherwise: it begins with\n"
		   "                      copies, as the CPU samples do)\n"
		   "  --off-cpu-walks N   (kernel, which it chooses) stacks walked per second and CPU at\n"
		   "                      most (default 500)\n"
		   "  --off-cpu-every N   (switch) take the stack at one switch-out in N (default 1);\n"
		   "                      every wait is still timed, one without a stack of its own\n"
		   "                      counted in its thread's last\n"
		   "  --off-cpu-min USEC  shorter waits are added up per thread and stack, written when\n"
		   "                      their total reaches USEC or at the end (default 500; 0: none)\n"
		   "  --no-table-cache    neither read nor keep the kernel unwinding tables built from the\n"
		   "                      programs' unwind information (kept by build-id in\n"
		   "                      $UNWOUND_CACHE_DIR, else $XDG_CACHE_HOME/unwound or\n"
		   "                      ~/.cache/unwound, with report's DWARF cache and under its cap)\n"
		   "  -N, --no-buildid-cache  the files samples landed in are not kept in perf's build-id\n"
		   "                      cache ($HOME/.debug), where perf record keeps them by default\n"
		   "                      and unwound record too, so that a recording still reads after\n"
		   "                      they change (a rebuild, an upgrade)\n"
		   "  --debug-dir DIR, --offline, --no-fp, --stitch   as for report\n"
		   "  -q, --quiet         nothing printed but errors\n"
		   "  -v                  more messages\n\n"
		   "Kernel unwinding is %s.\n",
		uw_kernel_unwind_built() ? "compiled into this build"
					 : "not compiled into this build (no libbpf, clang BPF target or bpftool at build time)");
}

struct status_ctx {
	bool tty;
	bool quiet;
	bool started;
	bool walk_wanted;       /* kernel unwinding asked for or by default */
	double t_cmd;           /* CLOCK_MONOTONIC at the command line's start */
	uint64_t last_samples;
	double last_t;
};

static double mono_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The first status comes as the recording begins: said in one line (the time, so that a script
 * or a person knows from when the samples are), unless -q. */
static void say_started(struct status_ctx *c, const struct uw_record_status *st)
{
	c->started = true;
	if (c->quiet)
		return;
	struct timespec ts;
	struct tm tm;
	char hms[32] = "?";
	clock_gettime(CLOCK_REALTIME, &ts);
	if (localtime_r(&ts.tv_sec, &tm))
		strftime(hms, sizeof(hms), "%H:%M:%S", &tm);
	fprintf(stderr, "unwound record: recording started at %s.%03ld, %.2f s after the command line%s\n", hms,
		ts.tv_nsec / 1000000, mono_now() - c->t_cmd,
		st->kernel_unwind ? "; stacks walked in the kernel"
		: c->walk_wanted && uw_kernel_unwind_built() && !st->unwind_why[0]
			? "; stacks copied until the kernel's walker is verified"
			: "");
}

static void on_status(void *ctx, const struct uw_record_status *st)
{
	struct status_ctx *c = ctx;
	if (!c->started) {
		say_started(c, st);
		return;
	}
	if (!c->tty)
		return;
	double dt = st->elapsed - c->last_t;
	double rate = dt > 0 ? (double)(st->samples - c->last_samples) / dt : 0;
	c->last_samples = st->samples;
	c->last_t = st->elapsed;
	uint64_t with_user = st->samples - st->samples_no_user;
	fprintf(stderr, "\rrecording %.0f s: %" PRIu64 " samples (%.0f/s), %" PRIu64 " lost, %.1f%% unwound to a root, own CPU %.2f%%   ",
		st->elapsed, st->samples, rate, st->lost,
		with_user ? 100.0 * (double)st->samples_root / (double)with_user : 0.0,
		st->elapsed > 0 ? 100.0 * st->cpu_self / st->elapsed : 0.0);
}

/* A number the kernel says in a /proc/sys file, else def. */
static uint64_t sysctl_u64(const char *path, uint64_t def)
{
	FILE *f = fopen(path, "re");
	uint64_t v = 0;
	if (f) {
		if (fscanf(f, "%" SCNu64, &v) != 1)
			v = 0;
		fclose(f);
	}
	return v ? v : def;
}

/* perf's -F max: the kernel's kernel.perf_event_max_sample_rate. */
static unsigned max_rate(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "re");
	unsigned v = 0;
	if (f) {
		if (fscanf(f, "%u", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v ? v : 100000;
}

/* --call-graph dwarf[,SIZE] | fp */
static int parse_call_graph(const char *arg, struct uw_record_opts *ro)
{
	if (!strcmp(arg, "fp")) {
		ro->call_graph = UW_CALL_GRAPH_FP;
		return 0;
	}
	if (!strcmp(arg, "fp,defer")) {
		ro->call_graph = UW_CALL_GRAPH_FP_DEFER;
		return 0;
	}
	if (!strncmp(arg, "dwarf", 5) && (arg[5] == 0 || arg[5] == ',')) {
		ro->call_graph = UW_CALL_GRAPH_DWARF;
		if (arg[5] == ',' && cli_unsigned("record", "--call-graph dwarf,SIZE", arg + 6, 8, 65528, &ro->stack_size))
			return -1;
		return 0;
	}
	fprintf(stderr, "unwound record: --call-graph takes dwarf, dwarf,SIZE, fp or fp,defer, not '%s'%s\n", arg,
		!strncmp(arg, "lbr", 3) ? " (LBR call stacks are not supported)" : "");
	return -1;
}

/* The command's fate as the shell would report it: its exit code, or its signal raised again
 * here (perf's rule). A command that could not be run: 255, as perf. */
static int workload_exit(const struct uw_record_status *st)
{
	if (st->workload_errno)
		return 255;
	int ws = st->workload_wstatus;
	if (ws == -1 || st->workload_stopped)
		return CLI_EXIT_OK;
	if (WIFEXITED(ws))
		return WEXITSTATUS(ws);
	if (WIFSIGNALED(ws)) {
		int sig = WTERMSIG(ws);
		fflush(NULL);
		/* die the same way, without a core file of our own */
		struct rlimit rl = { 0, 0 };
		setrlimit(RLIMIT_CORE, &rl);
		signal(sig, SIG_DFL);
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, sig);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		raise(sig);
		return 128 + sig;
	}
	return CLI_EXIT_ERROR;
}

/* The last lines: what was recorded, and how. */
static void summary(const struct uw_record_opts *ro, const struct uw_record_status *st)
{
	const char *outname = ro->output ? ro->output : "perf.data";
	uint64_t with_user = st->samples - st->samples_no_user;
	fprintf(stderr, "unwound record: %" PRIu64 " samples, %" PRIu64 " with a user stack (%.2f%% unwound to a root), %" PRIu64 " lost, %.1f KiB written to %s; own CPU %.2f s in %.1f s (and %.2f s setting up before)\n",
		st->samples, with_user, with_user ? 100.0 * (double)st->samples_root / (double)with_user : 0.0, st->lost,
		(double)st->bytes_out / 1024.0, strcmp(outname, "-") ? outname : "standard output", st->cpu_self, st->elapsed,
		st->cpu_setup);
	if (ro->stitch)
		fprintf(stderr, "unwound record: stacks cut short by their copy: %" PRIu64 " completed from their thread's "
			   "stacks before and after, %" PRIu64 " not\n", st->stitched, st->stitch_failed);
	if (ro->call_graph == UW_CALL_GRAPH_DWARF && st->kernel_unwind) {
		uint64_t k = st->kernel_samples;
		fprintf(stderr, "unwound record: stacks walked in the kernel (eBPF): %" PRIu64 " samples, %" PRIu64 " (%.2f%%) finished in user space from a stack copy, %" PRIu64 " cut by a mapping change, %" PRIu64 " lost by the program; %" PRIu64 " module tables loaded, at most %.1f KiB in BPF maps\n",
			k, st->kernel_finished, k ? 100.0 * (double)st->kernel_finished / (double)k : 0.0, st->kernel_stale,
			st->kernel_lost, st->kernel_tables, (double)st->kernel_map_bytes / 1024.0);
	} else if (ro->call_graph == UW_CALL_GRAPH_DWARF) {
		fprintf(stderr, "unwound record: stacks copied (%u bytes) and unwound in user space%s%s%s\n",
			ro->stack_size ? ro->stack_size : 16384,
			st->unwind_why[0] ? "; kernel unwinding unavailable: " : "", st->unwind_why,
			!st->unwind_why[0] && !uw_kernel_unwind_built() ? " (kernel unwinding not compiled in)" : "");
	}
	if (ro->off_cpu && st->offcpu_kernel_timed) {
		fprintf(stderr, "unwound record: off-CPU: %" PRIu64 " waits timed in the kernel (sched_switch tracepoint), %" PRIu64 " with their stack walked at the switch-out (%.2f%%), %" PRIu64 " given the stack walked at the same pc and stack pointer (%.3f s), %" PRIu64 " with no stack walked (their pc alone, %.3f s); %" PRIu64 " offcpu-time samples, %.3f s off the CPU in all, %" PRIu64 " threads still off the CPU at the end\n",
			st->offcpu_waits, st->offcpu_walked,
			st->offcpu_waits ? 100.0 * (double)st->offcpu_walked / (double)st->offcpu_waits : 0.0, st->offcpu_keyed,
			(double)st->offcpu_keyed_ns * 1e-9, st->offcpu_unkeyed, (double)st->offcpu_unkeyed_ns * 1e-9,
			st->offcpu_samples, (double)st->offcpu_ns * 1e-9, st->offcpu_open_at_end);
		if (st->offcpu_untimed)
			fprintf(stderr, "unwound record: off-CPU: %" PRIu64 " switches of followed threads not timed: the kernel made no task storage for the thread there (in a tracing program it makes none while its per-CPU task storage lock is taken, or with no memory at hand); their waits are missing or joined to the next\n",
				st->offcpu_untimed);
	} else if (ro->off_cpu) {
		fprintf(stderr, "unwound record: off-CPU: %" PRIu64 " switch-outs sampled%s, %" PRIu64 " offcpu-time samples, %.3f s off the CPU in all, %" PRIu64 " threads still off the CPU at the end\n",
			st->offcpu_switches, ro->off_cpu_every > 1 ? " with their stack (one in N)" : "", st->offcpu_samples,
			(double)st->offcpu_ns * 1e-9, st->offcpu_open_at_end);
	}
	/* where the blocking stacks came from: walked in the kernel at the switch, or copied */
	if (ro->off_cpu)
		fprintf(stderr, "unwound record: off-CPU stacks: %" PRIu64 " walked in the kernel at the switch (%" PRIu64 " of them finished in user space from the program's copy), %" PRIu64 " copied by the kernel (%u bytes each), %" PRIu64 " read from threads blocked at the start\n",
			st->offcpu_kernel, st->offcpu_kernel_finished, st->offcpu_copied, ro->stack_size ? ro->stack_size : 16384,
			st->offcpu_blocked);
	/* perf report and perf script cut callchains at kernel.perf_event_max_stack frames (127)
	 * unless told more: a deep stack would seem cut short */
	uint64_t perf_max = sysctl_u64("/proc/sys/kernel/perf_event_max_stack", 127);
	if (st->max_stack > perf_max)
		fprintf(stderr, "unwound record: stacks of up to %" PRIu64 " frames written; perf report and perf script show %" PRIu64 " unless told more: use perf report --max-stack %" PRIu64 " (perf script --max-stack %" PRIu64 ")\n",
			st->max_stack, perf_max, st->max_stack, st->max_stack);
	if (st->procmap_query || st->maps_scan)
		fprintf(stderr, "unwound record: mappings found on demand: %" PRIu64 " with PROCMAP_QUERY, %" PRIu64 " from /proc/PID/maps\n",
			st->procmap_query, st->maps_scan);
}

/* Modules whose file was found and is not the one mapped (another build-id, device, inode or
 * inode generation: a library dlclosed and another mapped at its range before its samples were
 * unwound, and its file replaced on disk): their frames are [unknown], said with their count. */
struct other_files {
	unsigned n;
	char names[512];
};

static int note_other_file(void *ctx, struct uw_module *m)
{
	struct other_files *o = ctx;
	if (uw_module_state(m) != UW_MODULE_MISMATCH)
		return 0;
	size_t l = strlen(o->names);
	if (o->n++ < 4 && l + 8 < sizeof(o->names))
		snprintf(o->names + l, sizeof(o->names) - l, "%s%s", l ? ", " : "", uw_module_path(m));
	return 0;
}

static void summary_files(struct uw_session *s)
{
	struct other_files o = { 0 };
	uw_session_foreach_module(s, note_other_file, &o);
	if (o.n)
		fprintf(stderr, "unwound record: modules: %u not used: not the file mapped (another build-id, device, inode or "
				"inode generation; their frames are [unknown]): %s%s\n",
			o.n, o.names, o.n > 4 ? ", ..." : "");
}

int cmd_record(int argc, char **argv)
{
	enum { O_STACK = 256, O_DURATION, O_DEBUGDIR, O_OFFLINE, O_NOFP, O_CALLGRAPH, O_STITCH, O_OFFCPU, O_OCEVERY,
	       O_OCMIN, O_UNWIND, O_BPFBYTES, O_OCMODE, O_OCWALKS, O_NOTCACHE, O_SWITCHOUT };
	static const struct option lo[] = {
		{ "freq", required_argument, 0, 'F' }, { "count", required_argument, 0, 'c' },
		{ "event", required_argument, 0, 'e' }, { "all-cpus", no_argument, 0, 'a' },
		{ "pid", required_argument, 0, 'p' }, { "tid", required_argument, 0, 't' },
		{ "cpu", required_argument, 0, 'C' }, { "call-graph", required_argument, 0, O_CALLGRAPH },
		{ "output", required_argument, 0, 'o' }, { "stack-size", required_argument, 0, O_STACK },
		{ "duration", required_argument, 0, O_DURATION }, { "mmap-pages", required_argument, 0, 'm' },
		{ "debug-dir", required_argument, 0, O_DEBUGDIR }, { "offline", no_argument, 0, O_OFFLINE },
		{ "no-fp", no_argument, 0, O_NOFP }, { "quiet", no_argument, 0, 'q' },
		{ "stitch", no_argument, 0, O_STITCH }, { "off-cpu", no_argument, 0, O_OFFCPU },
		{ "off-cpu-every", required_argument, 0, O_OCEVERY }, { "off-cpu-min", required_argument, 0, O_OCMIN },
		{ "unwind", required_argument, 0, O_UNWIND }, { "bpf-map-bytes", required_argument, 0, O_BPFBYTES },
		{ "off-cpu-mode", required_argument, 0, O_OCMODE }, { "off-cpu-walks", required_argument, 0, O_OCWALKS },
		{ "no-buildid-cache", no_argument, 0, 'N' }, { "no-buildid", no_argument, 0, 'B' },
		{ "no-table-cache", no_argument, 0, O_NOTCACHE }, { "switch-output", optional_argument, 0, O_SWITCHOUT },
		{ "help", no_argument, 0, 'h' }, { "max-frames", required_argument, 0, CLI_O_MAXFR }, { 0, 0, 0, 0 },
	};
	UW_OPTS(uw_record_opts, ro, .stop = &stop_flag, .buildid_cache = 1);
	int *pids = NULL, *tids = NULL, *cpus = NULL, c, offline = 0, nofp = 0, quiet = 0, notcache = 0, ret = CLI_EXIT_USAGE;
	double t_cmd = mono_now();
	size_t npids = 0, ntids = 0, ncpus = 0;
	char *debugdirs = NULL, *events = NULL;
	bool freq_set = false, count_set = false;
	struct uw_session *s = NULL;
	struct cli_limits lim = { 0 };
	optind = 1;
	opterr = 0;
	/* '+': options end at the command; ':' and opterr 0: errors are said by cli_option_error */
	while ((c = getopt_long(argc, argv, "+:F:c:e:gap:t:C:o:m:qvhNB", lo, NULL)) != -1) {
		switch (c) {
		case 'F':
			freq_set = true;
			if (!strcmp(optarg, "max"))
				ro.freq = max_rate();
			else if (cli_unsigned("record", "-F/--freq", optarg, 1, max_rate(), &ro.freq))
				goto out;
			break;
		case 'c':
			count_set = true;
			if (cli_u64("record", "-c/--count", optarg, 1, INT64_MAX, &ro.period))
				goto out;
			break;
		case 'e': {
			/* every -e is recorded, as perf does: the list joined with commas (uw_record
			 * checks the names) */
			size_t have = events ? strlen(events) + 1 : 0, add = strlen(optarg);
			char *ne = realloc(events, have + add + 1);
			if (!ne) {
				fprintf(stderr, "unwound record: out of memory\n");
				goto out;
			}
			if (have)
				ne[have - 1] = ',';
			memcpy(ne + have, optarg, add + 1);
			events = ne;
			ro.event = events;
			break;
		}
		case 'g': break; /* call graphs are what unwound records; --call-graph chooses how */
		case O_CALLGRAPH:
			if (parse_call_graph(optarg, &ro))
				goto out;
			break;
		case 'a': ro.system_wide = 1; break;
		case 'p':
			if (cli_int_list("record", "-p/--pid", optarg, 1, 0x7fffffff, 0, &pids, &npids))
				goto out;
			break;
		case 't':
			if (cli_int_list("record", "-t/--tid", optarg, 1, 0x7fffffff, 0, &tids, &ntids))
				goto out;
			break;
		case 'C':
			if (cli_int_list("record", "-C/--cpu", optarg, 0, 4095, 1, &cpus, &ncpus))
				goto out;
			break;
		case 'o': ro.output = optarg; break;
		case 'm':
			if (cli_unsigned("record", "-m/--mmap-pages", optarg, 1, 1u << 20, &ro.mmap_pages))
				goto out;
			if (ro.mmap_pages & (ro.mmap_pages - 1)) {
				fprintf(stderr, "unwound record: -m/--mmap-pages takes a power of two, not '%s'\n", optarg);
				goto out;
			}
			break;
		case 'q': quiet = 1; break;
		case 'v': cli_verbose++; break;
		case O_STACK:
			if (cli_unsigned("record", "--stack-size", optarg, 8, 65528, &ro.stack_size))
				goto out;
			break;
		case O_DURATION:
			if (cli_double("record", "--duration", optarg, 0.001, 1e9, &ro.duration))
				goto out;
			break;
		case O_DEBUGDIR:
			if (cli_append_path("record", "--debug-dir", optarg, &debugdirs))
				goto out;
			break;
		case O_OFFLINE: offline = 1; break;
		case O_NOFP: nofp = 1; break;
		case O_STITCH: ro.stitch = 1; break;
		case 'N': ro.buildid_cache = 0; break;
		case O_NOTCACHE: notcache = 1; break;
		case 'B':
			/* (perf's -B leaves the build-id table out: a file that names no build-id reads
			 * wrongly once a file changes; getopt alone took --no-buildid for -N's prefix) */
			fprintf(stderr, "unwound record: -B/--no-buildid (no build-id table in the file) is not supported: "
					"the build-ids of the files samples landed in are always written; "
					"-N/--no-buildid-cache keeps the files out of the build-id cache\n");
			cli_see_help("record");
			goto out;
		case O_BPFBYTES:
			if (cli_u64("record", "--bpf-map-bytes", optarg, 1, UINT64_MAX, &ro.kernel_max_bytes))
				goto out;
			break;
		case O_UNWIND:
			if (!strcmp(optarg, "kernel")) {
				ro.unwind = UW_UNWIND_KERNEL;
			} else if (!strcmp(optarg, "copy")) {
				ro.unwind = UW_UNWIND_COPY;
			} else {
				fprintf(stderr, "unwound record: --unwind takes kernel or copy, not '%s'\n", optarg);
				goto out;
			}
			break;
		case O_OFFCPU: ro.off_cpu = 1; break;
		case O_OCMODE:
			if (!strcmp(optarg, "kernel")) {
				ro.off_cpu_mode = UW_OFFCPU_KERNEL;
			} else if (!strcmp(optarg, "switch")) {
				ro.off_cpu_mode = UW_OFFCPU_SWITCH;
			} else {
				fprintf(stderr, "unwound record: --off-cpu-mode takes kernel or switch, not '%s'\n", optarg);
				goto out;
			}
			break;
		case O_OCWALKS:
			if (cli_unsigned("record", "--off-cpu-walks", optarg, 1, 1000000, &ro.off_cpu_walks))
				goto out;
			break;
		case O_OCEVERY:
			if (cli_unsigned("record", "--off-cpu-every", optarg, 1, 1u << 20, &ro.off_cpu_every))
				goto out;
			break;
		case O_OCMIN: {
			uint64_t us;
			if (cli_u64("record", "--off-cpu-min", optarg, 0, UINT64_MAX / 1000, &us))
				goto out;
			ro.off_cpu_min_ns = us ? us * 1000 : 1; /* 1 ns: every wait is written as it ends */
			break;
		}
		case O_SWITCHOUT:
			/* a perf habit not supported: said, with what does the job, never ignored */
			fprintf(stderr, "unwound record: --switch-output is not supported: record in slices with "
					"--duration SECS (one file each, -o NAME), or rotate with perf record "
					"--call-graph dwarf --switch-output and unwind each file with unwound inject\n");
			goto out;
		case CLI_O_MAXFR:
			if (cli_limit_option("record", c, optarg, &lim) < 0)
				goto out;
			break;
		case 'h': record_usage(stdout); ret = CLI_EXIT_OK; goto out;
		default: cli_option_error("record", c, argv, lo); goto out;
		}
	}
	if (freq_set && count_set) {
		fprintf(stderr, "unwound record: -F and -c both set the sampling rate: give one\n");
		goto out;
	}
	if ((ro.off_cpu_every || ro.off_cpu_min_ns || ro.off_cpu_mode || ro.off_cpu_walks) && !ro.off_cpu) {
		fprintf(stderr, "unwound record: --off-cpu-mode, --off-cpu-walks, --off-cpu-every and --off-cpu-min go with --off-cpu\n");
		goto out;
	}
	if (optind < argc)
		ro.argv = argv + optind;
	/* -C without -p or -t: every process on those CPUs, as perf record -C (-a implied) */
	if (ncpus && !npids && !ntids)
		ro.system_wide = 1;
	/* -a with a command: the whole system while the command runs, as perf */
	if (!!(ro.argv || ro.system_wide) + !!npids + !!ntids != 1) {
		fprintf(stderr, "unwound record: give exactly one of: a command, -p PIDS, -t TIDS, -a (-a also with a command)\n");
		goto out;
	}
	ro.pids = pids;
	ro.npids = npids;
	ro.tids = tids;
	ro.ntids = ntids;
	ro.cpus = cpus;
	ro.ncpus = ncpus;
	/* the header's command line: "record ..." as given, after the program's path */
	ro.cmd_argc = argc;
	ro.cmd_argv = (const char *const *)argv;
	struct status_ctx sc = { .tty = !quiet && isatty(2), .quiet = quiet, .t_cmd = t_cmd,
				 .walk_wanted = ro.unwind != UW_UNWIND_COPY && ro.call_graph == UW_CALL_GRAPH_DWARF &&
						!ro.stitch };
	ro.on_status = on_status;
	ro.ctx = &sc;
	struct sigaction sa = { 0 };
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	ret = CLI_EXIT_ERROR;
	/* -q: nothing but errors */
	UW_OPTS(uw_session_opts, so, .log = cli_log,
		.log_level = quiet ? UW_LOG_ERROR : (enum uw_log_level)(cli_verbose + 1),
		.debug_dirs = debugdirs, .no_fp_fallback = nofp, .offline = offline, .no_dwarf_cache = notcache,
		/* deep stacks (recursive parsers, interpreters) whole: report's default of 256 would cut
		 * them where nothing can be unwound again later */
		.max_frames = lim.max_frames ? lim.max_frames : RECORD_MAX_FRAMES);
	s = uw_session_new(&so);
	if (!s) {
		fprintf(stderr, "unwound record: %s\n", strerror(errno));
		goto out;
	}
	struct uw_record_status st = { .sz = sizeof(st) };
	int err = uw_record(s, &ro, &st);
	if (sc.tty)
		fprintf(stderr, "\n");
	if (err) {
		fprintf(stderr, "unwound record: %s\n", uw_session_errmsg(s));
		ret = st.workload_errno ? 255 : CLI_EXIT_ERROR;
		goto out;
	}
	if (!quiet) {
		summary(&ro, &st);
		summary_files(s);
	}
	bool incomplete = cli_incomplete("record", s);
	uw_session_free(s);
	s = NULL;
	ret = workload_exit(&st);
	/* a command's own status comes first (its caller expects it) */
	if (incomplete && !ro.argv)
		ret = CLI_EXIT_INCOMPLETE;
out:
	uw_session_free(s);
	free(pids);
	free(tids);
	free(cpus);
	free(debugdirs);
	free(events);
	return ret;
}
