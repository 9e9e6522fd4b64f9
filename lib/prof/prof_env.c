/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD mode (and any program linked with the library): when UNWOUND_PROF names a file, a
 * profiler starts as the library is loaded and writes the file as the process exits (the
 * library's destructor, after the program's atexit handlers: a process ended by _exit or a
 * signal writes nothing). The environment:
 *   UNWOUND_PROF=FILE          pprof (gzipped profile.proto), or folded stacks for FILE.folded
 *   UNWOUND_PROF_HZ=N          samples per second of each thread's time (default 99)
 *   UNWOUND_PROF_CLOCK=cpu|wall
 *   UNWOUND_PROF_SIGNAL=NAME   PROF (default), USR1, USR2, VTALRM, RTMIN+N, or a number
 *   UNWOUND_PROF_STACK=BYTES   stack copied per sample (default 16384)
 *   UNWOUND_PROF_RING=BYTES    each thread's ring (default 4 samples of the stack copy)
 *   UNWOUND_PROF_FORMAT=pprof|folded (default: by the name)
 *   UNWOUND_PROF_BY_THREAD=1   labels pid and tid
 *   UNWOUND_PROF_STATS=FILE    the counts at exit ("-": standard error)
 * FILE is made absolute at the start. A program run from this one inherits the environment: the
 * first process writes FILE, any other
 * (an exec'd child) FILE with its pid before the extension (out.pb.gz: out.1234.pb.gz); the
 * first process's pid is kept in UNWOUND_PROF_OWNER for them. Problems are said on standard
 * error, prefixed "unwound-prof:"; this is the only part of the library that prints.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prof/iprof.h"

static struct uw_prof *env_prof;
static char *env_out;
static int env_pid;

static int signal_by_name(const char *v)
{
	static const struct {
		const char *name;
		int sig;
	} names[] = { { "PROF", SIGPROF }, { "USR1", SIGUSR1 }, { "USR2", SIGUSR2 },
		      { "VTALRM", SIGVTALRM }, { "ALRM", SIGALRM }, { "IO", SIGIO } };
	if (!strncmp(v, "SIG", 3))
		v += 3;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(v, names[i].name))
			return names[i].sig;
	char *end;
	if (!strncmp(v, "RTMIN+", 6)) {
		long n = strtol(v + 6, &end, 10);
		return *end || n < 0 || SIGRTMIN + n > SIGRTMAX ? -1 : SIGRTMIN + (int)n;
	}
	long n = strtol(v, &end, 10);
	return *end || n < 1 || n > 64 ? -1 : (int)n;
}

static bool env_uint(const char *name, unsigned *out)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return true;
	char *end;
	unsigned long n = strtoul(v, &end, 10);
	if (*end || n > 1u << 30) {
		fprintf(stderr, "unwound-prof: %s=%s: not a number\n", name, v);
		return false;
	}
	*out = (unsigned)n;
	return true;
}

/* FILE, or FILE with ".PID" before its extension in a process other than the first; made
 * absolute (the program may change its directory before it exits) */
static char *output_name(const char *path, int pid)
{
	char cwd[4096], abs_path[8192];
	const char *out = path;
	if (path[0] != '/' && getcwd(cwd, sizeof(cwd)) &&
	    (size_t)snprintf(abs_path, sizeof(abs_path), "%s/%s", cwd, path) < sizeof(abs_path))
		out = abs_path;
	const char *owner = getenv("UNWOUND_PROF_OWNER");
	char buf[32];
	snprintf(buf, sizeof(buf), "%d", pid);
	if (!owner || !*owner) {
		setenv("UNWOUND_PROF_OWNER", buf, 1);
		return strdup(out);
	}
	if (atoi(owner) == pid)
		return strdup(out);
	const char *base = strrchr(out, '/');
	base = base ? base + 1 : out;
	const char *dot = strchr(base, '.');
	size_t at = dot && dot != base ? (size_t)(dot - out) : strlen(out);
	size_t n = strlen(out) + strlen(buf) + 2;
	char *r = malloc(n);
	if (r)
		snprintf(r, n, "%.*s.%s%s", (int)at, out, buf, out + at);
	return r;
}

__attribute__((constructor)) static void iprof_env_start(void)
{
	const char *out = getenv("UNWOUND_PROF");
	if (!out || !*out)
		return;
	env_pid = getpid();
	env_out = output_name(out, env_pid);
	if (!env_out)
		return;
	UW_OPTS(uw_prof_opts, o, .output = env_out);
	bool ok = env_uint("UNWOUND_PROF_HZ", &o.hz) && env_uint("UNWOUND_PROF_STACK", &o.stack_bytes) &&
	          env_uint("UNWOUND_PROF_RING", &o.ring_bytes);
	const char *v = getenv("UNWOUND_PROF_CLOCK");
	if (v && *v) {
		if (!strcmp(v, "wall"))
			o.clock = UW_PROF_WALL;
		else if (strcmp(v, "cpu")) {
			fprintf(stderr, "unwound-prof: UNWOUND_PROF_CLOCK=%s: cpu or wall\n", v);
			ok = false;
		}
	}
	if ((v = getenv("UNWOUND_PROF_SIGNAL")) && *v && (o.signal = signal_by_name(v)) < 0) {
		fprintf(stderr, "unwound-prof: UNWOUND_PROF_SIGNAL=%s: not a signal\n", v);
		ok = false;
	}
	if ((v = getenv("UNWOUND_PROF_FORMAT")) && *v) {
		if (!strcmp(v, "pprof"))
			o.format = UW_PROF_PPROF;
		else if (!strcmp(v, "folded"))
			o.format = UW_PROF_FOLDED;
		else {
			fprintf(stderr, "unwound-prof: UNWOUND_PROF_FORMAT=%s: pprof or folded\n", v);
			ok = false;
		}
	}
	if ((v = getenv("UNWOUND_PROF_BY_THREAD")) && *v)
		o.by_thread = strcmp(v, "0") != 0;
	if (!ok)
		return;
	/* said now rather than at exit: the file is written in a directory that must exist */
	char dir[8192];
	snprintf(dir, sizeof(dir), "%s", env_out);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir)
		*slash = 0;
	if (slash && access(dir, W_OK))
		fprintf(stderr, "unwound-prof: %s: %s (the profile is written there at exit)\n", dir, strerror(errno));
	env_prof = uw_prof_start(&o);
	if (!env_prof)
		fprintf(stderr, "unwound-prof: cannot start profiling: %s\n", strerror(errno));
}

/* (as a profile names them: "[lost samples: ...]") */
static const char *const lost_cause_text[UW_LOST__COUNT] = {
	[UW_LOST_UNSTATED] = "unstated",
	[UW_LOST_RING_FULL] = "ring full",
	[UW_LOST_SIGNALS_BLOCKED] = "signals blocked",
	[UW_LOST_THREAD_ENDED] = "thread ended",
	[UW_LOST_PROFILER_STOPPED] = "profiler stopped",
};

static void write_stats(struct uw_prof *p, const char *where)
{
	UW_OPTS(uw_prof_stats, st);
	if (uw_prof_stats(p, &st))
		return;
	FILE *f = !strcmp(where, "-") ? stderr : fopen(where, "we");
	if (!f) {
		fprintf(stderr, "unwound-prof: %s: %s\n", where, strerror(errno));
		return;
	}
	fprintf(f, "output %s\n", env_out);
	fprintf(f, "samples %" PRIu64 "\nsamples_unwound %" PRIu64 "\nsamples_root %" PRIu64 "\ndropped %" PRIu64
		   "\noverruns %" PRIu64 "\nstack_copied_by_kernel %" PRIu64 "\nstack_not_copied %" PRIu64
		   "\non_altstack %" PRIu64 "\nforeign_signals %" PRIu64 "\nstale_signals %" PRIu64
		   "\nthreads %" PRIu64 "\nthreads_refused %" PRIu64 "\nmap_resets %" PRIu64
		   "\nhandler_replaced %" PRIu64 "\ncollector_cpu_ns %" PRIu64 "\nperiods_after_last %" PRIu64 "\n",
		st.samples, st.samples_unwound, st.samples_root, st.dropped, st.overruns, st.stack_copied_by_kernel,
		st.stack_not_copied, st.on_altstack, st.foreign_signals, st.stale_signals, st.threads,
		st.threads_refused, st.map_resets, st.handler_replaced, st.collector_cpu_ns, st.periods_after_last);
	for (unsigned i = 0; i < UW_STOP__COUNT; i++)
		if (st.stop_reasons[i])
			fprintf(f, "stop %s: %" PRIu64 "\n", uw_stop_reason_str((enum uw_stop_reason)i), st.stop_reasons[i]);
	/* the lost samples' periods by cause, as their frames name them */
	for (unsigned i = 0; i < UW_LOST__COUNT; i++)
		if (st.lost_periods[i])
			fprintf(f, "lost %s: %" PRIu64 "\n", lost_cause_text[i], st.lost_periods[i]);
	if (f != stderr)
		fclose(f);
}

__attribute__((destructor)) static void iprof_env_stop(void)
{
	/* (in a child of fork, the parent's: nothing to do) */
	if (!env_prof || getpid() != env_pid)
		return;
	int e = uw_prof_stop(env_prof);
	if (e)
		fprintf(stderr, "unwound-prof: %s: %s\n", env_out, uw_strerror(e));
	const char *st = getenv("UNWOUND_PROF_STATS");
	if (st && *st)
		write_stats(env_prof, st);
	/* as perf says its lost chunks: a profile short of time is said, not only counted */
	UW_OPTS(uw_prof_stats, s);
	if (!e && !uw_prof_stats(env_prof, &s) && s.dropped)
		fprintf(stderr,
			"unwound-prof: %" PRIu64 " of %" PRIu64 " samples lost to full rings (the profiler's thread did not "
			"empty them in time): in %s as [lost samples: ring full]; UNWOUND_PROF_RING=BYTES gives each "
			"thread a larger ring (%" PRIu64 " now)\n",
			s.dropped, s.samples, env_out, env_prof->ring_bytes);
	/* and time no signal could sample (threads that block every signal: xz -T2's workers) */
	uint64_t blocked = s.lost_periods[UW_LOST_SIGNALS_BLOCKED];
	if (!e && blocked)
		fprintf(stderr,
			"unwound-prof: %.3f s of CPU time (%" PRIu64 " periods) not sampled: threads that ran it blocked "
			"the profiler's signal (%d%s): in %s as [lost samples: signals blocked]\n",
			(double)blocked * (double)env_prof->period_ns * 1e-9, blocked, env_prof->signo,
			env_prof->signo == SIGPROF ? ", SIGPROF" : "", env_out);
	uw_prof_free(env_prof);
	env_prof = NULL;
	free(env_out);
	env_out = NULL;
}
