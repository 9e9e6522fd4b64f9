/* SPDX-License-Identifier: MIT */
/*
 * Live recording: perf_event_open, one ring buffer per event, records read with the
 * data_head/data_tail protocol and handed to a reader in arrival order, one round per pass
 * over the rings, so they are put in time order as a file's are. Samples are unwound as they
 * come out of the ordering window and written with their callchain; stack copies never reach
 * the disk.
 *
 * Events: per CPU for -a; for a command or -p/-t, per task and per CPU with inherit (the kernel
 * refuses ring buffers on inherited events bound to no CPU), the tasks' events on a CPU writing
 * into one ring buffer (live_ring.c). The first event on each CPU (or of
 * each task) carries the side-band: MMAP2 with build-ids, COMM with exec, FORK/EXIT, on the
 * CLOCK_MONOTONIC clock (so jitdumps line up, as perf record -k 1).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kernel/kunw_abi.h"
#include "module/module.h"
#include "symbolize/symbolize.h"
#include "perf/live/live.h"
#include "unwind/unwind.h"

static double now_s(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t status_root(const struct uw_reader_stats *st)
{
	return st->stop_reasons[UW_STOP_END_OF_STACK];
}

static double cpu_self(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
	       (double)ru.ru_stime.tv_usec * 1e-6;
}

/* ---- the phases of a recording */

struct rec {
	struct uw_session *s;
	struct uw_record_opts o;
	struct evconf ec;
	bool ev_default;
	struct live lv;
	int ncpu;
	pid_t child;            /* the command, until reaped */
	int go[2];              /* the command waits on go[0] until the events exist */
	int execerr[2];         /* and writes its exec error to execerr[1] */
	int wstatus;            /* the command's wait status, -1 until reaped */
	int exec_errno;
	bool stopped_child;     /* the recorder ended the command */
	unsigned trims;
	double t0;
	double cpu0; /* the recorder's CPU time at t0 */
	bool want_kernel;       /* kernel unwinding asked for (or chosen: UW_UNWIND_AUTO) */
	/* UW_UNWIND_AUTO: the program verified on a thread of its own while the recording begins
	 * with stack copies, attached to the events once loaded (kunw_ready): the verifier (0.2 to
	 * several seconds of CPU) never delays the first sample */
	bool kunw_late;
	struct live_kunw_loading *loading;
	char unwind_why[160];   /* why not, when it was asked for and is not used */
	uint64_t end_ns;        /* --off-cpu: when the recording ended (waits still open close there) */
	struct offcpu_stats oc;
};

/* Is CAT:NAME one of the kernel's tracepoints (tracefs, or debugfs's copy)? */
static bool tracepoint_exists(const char *cat, const char *name)
{
	static const char *const roots[] = { "/sys/kernel/tracing/events", "/sys/kernel/debug/tracing/events" };
	for (size_t i = 0; i < UW_ARRAY_SIZE(roots); i++) {
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s/%s/%s/id", roots[i], cat, name);
		if (access(p, F_OK) == 0)
			return true;
	}
	return false;
}

/* perf's event modifiers after the colon (tools/perf/util/parse-events.c): u, k, h name the
 * privilege levels counted, all the others excluded once one is named; each p asks for one
 * more level of precise_ip, P for the highest. Others (G, H, I, S, D, W, ...) are refused. */
static int parse_modifiers(struct uw_session *s, struct evspec *e, const char *mods)
{
	bool u = false, k = false, h = false, any = false;
	unsigned pl = 0;
	if (!*mods)
		return base_err(&s->log, -EINVAL, "event '%s': nothing after the colon", e->full);
	for (const char *m = mods; *m; m++) {
		switch (*m) {
		case 'u': u = any = true; break;
		case 'k': k = any = true; break;
		case 'h': h = any = true; break;
		case 'p': pl++; break;
		case 'P': pl = 3; break;
		default:
			return base_err(&s->log, -EINVAL, "event '%s': the modifier '%c' is not supported (u, k, h, p, P are)",
					e->full, *m);
		}
	}
	if (pl > 3)
		return base_err(&s->log, -EINVAL, "event '%s': at most three p (precise_ip 3)", e->full);
	e->mods = true;
	if (any) {
		e->excl_user = !u;
		e->excl_kernel = !k;
		e->excl_hv = !h;
	}
	e->precise = (uint8_t)pl;
	return 0;
}

/* The sampling events: a name, or several separated by commas (perf's -e A,B; the CLI's
 * -e A -e B), each once. */
static int parse_events(struct rec *rc, const char *list)
{
	struct uw_session *s = rc->s;
	const char *p = list;
	rc->ec.nev = 0;
	for (;;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char name[64];
		if (len == 0 || len >= sizeof(name))
			return base_err(&s->log, -EINVAL, "unknown event '%.*s' in '%s' (cycles, instructions, cpu-clock, "
					"task-clock, page-faults)", (int)(len < 64 ? len : 64), p, list);
		memcpy(name, p, len);
		name[len] = 0;
		if (rc->ec.nev == LIVE_MAX_EVENTS)
			return base_err(&s->log, -EINVAL, "at most %d sampling events per recording ('%s')", LIVE_MAX_EVENTS, list);
		struct evspec *e = &rc->ec.ev[rc->ec.nev];
		memset(e, 0, sizeof(*e));
		snprintf(e->full, sizeof(e->full), "%s", name);
		char *colon = strchr(name, ':');
		if (colon)
			*colon = 0;
		if (!live_parse_event(name, e)) {
			if (colon && tracepoint_exists(name, colon + 1))
				return base_err(&s->log, -EOPNOTSUPP, "'%s' is a tracepoint: unwound record samples cycles, instructions, "
						"cpu-clock, task-clock and page-faults; record tracepoints with perf record -e %s "
						"--call-graph dwarf, then unwound report or unwound inject reads the file",
						e->full, e->full);
			return base_err(&s->log, -EINVAL, "unknown event '%s' (cycles, instructions, cpu-clock, task-clock, "
					"page-faults, each with perf's modifiers u, k, h, p, P: cycles:u)", e->full);
		}
		if (colon) {
			int err = parse_modifiers(s, e, colon + 1);
			if (err)
				return err;
		}
		for (unsigned k = 0; k < rc->ec.nev; k++)
			if (!strcmp(rc->ec.ev[k].full, e->full))
				return base_err(&s->log, -EINVAL, "the event %s is asked for twice ('%s')", e->full, list);
		rc->ec.nev++;
		if (!end)
			return 0;
		p = end + 1;
	}
}

/* The event that could not be opened (err) is cycles: it becomes cpu-clock (no hardware
 * counters here), unless cpu-clock is recorded already. @return 1 when it did, 0 when it is
 * not cycles, or a negative error (said). */
static int cycles_to_cpu_clock(struct rec *rc, int err)
{
	struct evconf *ec = &rc->ec;
	unsigned k = rc->lv.failed_ev;
	if (k >= ec->nev || ec->ev[k].type != 0 || ec->ev[k].config != 0)
		return 0;
	for (unsigned j = 0; j < ec->nev; j++)
		if (ec->ev[j].type == 1 && ec->ev[j].config == 0)
			return base_err(&rc->s->log, err, "the cycles event is not supported here (no hardware counters: %s), "
					"and cpu-clock, which would stand for it, is recorded already", strerror(-err));
	/* said at the default level, asked for or not (the help says so; -q silences it) */
	base_log(&rc->s->log, UW_LOG_WARN,
		 "the cycles event is not supported here (no hardware counters: %s): recording cpu-clock instead",
		 strerror(-err));
	struct evspec *e = &ec->ev[k];
	live_parse_event("cpu-clock", e);
	/* named as perf names the event it falls back to: the privilege levels counted (k, u,
	 * h, where any is excluded), then the precise level */
	char m[8];
	size_t n = 0;
	if (e->excl_user || e->excl_kernel || e->excl_hv) {
		if (!e->excl_kernel)
			m[n++] = 'k';
		if (!e->excl_user)
			m[n++] = 'u';
		if (!e->excl_hv)
			m[n++] = 'h';
	}
	for (unsigned i = 0; i < e->precise; i++)
		m[n++] = 'p';
	m[n] = 0;
	snprintf(e->full, sizeof(e->full), "cpu-clock%s%s", n ? ":" : "", m);
	return 1;
}

static int check_opts(struct rec *rc)
{
	struct uw_session *s = rc->s;
	struct uw_record_opts *o = &rc->o;
	if (!o->output)
		o->output = "perf.data";
	if (!o->freq && !o->period)
		o->freq = 999;
	if (!o->stack_size)
		o->stack_size = 16384;
	if (o->stack_size > 65528)
		return base_err(&s->log, -EINVAL, "the user stack size is at most 65528 bytes");
	o->stack_size &= ~7u;
	if (!o->mmap_pages)
		o->mmap_pages = 1024;
	if (o->mmap_pages & (o->mmap_pages - 1))
		return base_err(&s->log, -EINVAL, "ring buffer pages must be a power of two");
	if (o->call_graph != UW_CALL_GRAPH_DWARF && o->call_graph != UW_CALL_GRAPH_FP &&
	    o->call_graph != UW_CALL_GRAPH_FP_DEFER)
		return base_err(&s->log, -EINVAL, "unknown call-graph mode %d", o->call_graph);
	if (o->call_graph == UW_CALL_GRAPH_FP_DEFER) {
		int e = live_probe_defer(s);
		if (e)
			return e;
	}
	if (o->unwind != UW_UNWIND_AUTO && o->unwind != UW_UNWIND_KERNEL && o->unwind != UW_UNWIND_COPY)
		return base_err(&s->log, -EINVAL, "unknown unwinding mode %d", o->unwind);
	if (o->unwind == UW_UNWIND_KERNEL && o->call_graph != UW_CALL_GRAPH_DWARF)
		return base_err(&s->log, -EINVAL, "kernel unwinding walks the stacks --call-graph dwarf would copy: not with fp");
	if (o->unwind == UW_UNWIND_KERNEL && o->stitch)
		return base_err(&s->log, -EINVAL, "--stitch completes stack copies: not with kernel unwinding");
	rc->want_kernel = o->call_graph == UW_CALL_GRAPH_DWARF && o->unwind != UW_UNWIND_COPY && !o->stitch;
	/* -a with a command: the whole system while the command runs (perf's -a -- CMD) */
	int targets = !!(o->system_wide || o->argv) + !!o->npids + !!o->ntids;
	if (targets != 1)
		return base_err(&s->log, -EINVAL, "give exactly one of: a command, -p PIDS, -t TIDS, -a (-a also with a command)");
	for (size_t i = 0; i < o->ncpus; i++)
		if (o->cpus[i] < 0 || o->cpus[i] >= rc->ncpu)
			return base_err(&s->log, -EINVAL, "CPU %d does not exist (this machine has 0-%d)", o->cpus[i],
					rc->ncpu - 1);
	if (o->off_cpu && !o->off_cpu_min_ns)
		o->off_cpu_min_ns = 500000;
	if (o->off_cpu_mode != UW_OFFCPU_AUTO && o->off_cpu_mode != UW_OFFCPU_KERNEL && o->off_cpu_mode != UW_OFFCPU_SWITCH)
		return base_err(&s->log, -EINVAL, "unknown off-CPU mode %d", o->off_cpu_mode);
	if (o->off_cpu && o->off_cpu_mode == UW_OFFCPU_KERNEL && !rc->want_kernel)
		return base_err(&s->log, -EINVAL, "--off-cpu-mode kernel: the waits are timed by the kernel unwinder's program, "
				"not with --unwind copy, --call-graph fp or --stitch");
	if (o->off_cpu && o->off_cpu_mode == UW_OFFCPU_KERNEL && o->off_cpu_every > 1)
		return base_err(&s->log, -EINVAL, "--off-cpu-every samples the switch events: not with --off-cpu-mode kernel");
	/* the program loaded while the recording runs unless every stack must be walked in the
	 * kernel (--unwind kernel; tests: UW_KUNW_VERIFY) or the waits are to be timed there
	 * (--off-cpu-mode kernel, or its --off-cpu-walks: the events are then per CPU, the program
	 * picks the followed tasks' samples, so it is there before they are enabled) */
	rc->kunw_late = rc->want_kernel && o->unwind == UW_UNWIND_AUTO && !getenv("UW_KUNW_VERIFY") &&
			!(o->off_cpu && (o->off_cpu_mode == UW_OFFCPU_KERNEL || o->off_cpu_walks));
	/* the waits timed in the kernel where the stacks are walked there from the start (else a
	 * sample at every switch-out, walked in the kernel once the program is loaded,
	 * docs/offcpu.md) */
	rc->lv.kwait = o->off_cpu && rc->want_kernel && !rc->kunw_late && o->off_cpu_mode != UW_OFFCPU_SWITCH &&
		       o->off_cpu_every <= 1;
	rc->ec.percpu = rc->lv.kwait && !o->system_wide;
	rc->ev_default = !o->event;
	int err = parse_events(rc, rc->ev_default ? "cycles" : o->event);
	if (err)
		return err;
	rc->ec.o = o;
	return 0;
}

/* The command, forked now: it waits on a pipe until its events exist, then execs; an exec that
 * fails sends its errno back through a pipe that a successful exec closes. */
static int fork_command(struct rec *rc)
{
	if (pipe2(rc->go, O_CLOEXEC) || pipe2(rc->execerr, O_CLOEXEC))
		return base_err(&rc->s->log, -errno, "pipe: %s", strerror(errno));
	pid_t recorder = getpid();
	rc->child = fork();
	if (rc->child < 0)
		return base_err(&rc->s->log, -errno, "fork: %s", strerror(errno));
	if (rc->child == 0) {
		char c;
		/* a recorder that dies (SIGKILL, a crash: every other end stops the command itself)
		 * takes the command with it, as the user would expect of one run; the thread that
		 * forked it waits for it in uw_record, so the signal is not sent early. (Not kept
		 * across a set-user-ID exec.) */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != recorder)
			_exit(127);
		close(rc->go[1]);
		close(rc->execerr[0]);
		if (read(rc->go[0], &c, 1) != 1)
			_exit(127);
		/* the recording goes to standard output: the command's output goes to standard
		 * error, as perf does */
		if (c == 'p' && dup2(2, 1) < 0)
			_exit(127);
		/* the recorder's signal dispositions are not the command's */
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		execvp(rc->o.argv[0], rc->o.argv);
		int e = errno;
		if (write(rc->execerr[1], &e, sizeof(e)) != sizeof(e))
			_exit(127);
		_exit(127);
	}
	close(rc->go[0]);
	close(rc->execerr[1]);
	rc->go[0] = rc->execerr[1] = -1;
	return 0;
}

/* Opens every ring: per CPU for -a, per task and CPU otherwise; falls back to cpu-clock when the
 * default event has no hardware counter, and to user space when the kernel may not be sampled. */
static int open_events(struct rec *rc)
{
	struct uw_session *s = rc->s;
	const struct uw_record_opts *o = &rc->o;
	struct live *lv = &rc->lv;
	size_t pages = o->mmap_pages;
	int err = 0;
	/* processes and threads that are not there: said as such (not as a missing counter) */
	for (size_t i = 0; i < o->npids + o->ntids; i++) {
		int id = i < o->npids ? o->pids[i] : o->tids[i - o->npids];
		char p[64];
		snprintf(p, sizeof(p), "/proc/%d", id);
		if (access(p, F_OK))
			return base_err(&s->log, -ESRCH, "%s %d: no such %s", i < o->npids ? "process" : "thread", id,
					i < o->npids ? "process" : "thread");
	}
	for (int attempt = 0; attempt < 2 + LIVE_MAX_EVENTS; attempt++) {
		/* (waits timed in the kernel: per CPU for a command, -p and -t too, the program keeps
		 * the followed tasks' samples; no per-task event costs every context switch) */
		if (o->system_wide || lv->kwait) {
			for (int c = 0; c < rc->ncpu && !err; c++) {
				if (!live_cpu_wanted(o, c))
					continue;
				err = live_open_events(lv, &rc->ec, -1, c, pages, false);
				if (err == -ENODEV && !lv->failed_ev)
					err = 0;
			}
		} else if (o->argv) {
			err = live_open_task(lv, &rc->ec, rc->child, rc->ncpu, pages);
		} else {
			for (size_t i = 0; i < o->npids && !err; i++) {
				int *tids = NULL;
				size_t nt = 0;
				err = live_task_ids(o->pids[i], &tids, &nt);
				if (err)
					err = base_err(&s->log, err, "process %d: %s", o->pids[i], strerror(-err));
				for (size_t t = 0; t < nt && !err; t++)
					err = live_open_task(lv, &rc->ec, tids[t], rc->ncpu, pages);
				free(tids);
			}
			for (size_t i = 0; i < o->ntids && !err; i++)
				err = live_open_task(lv, &rc->ec, o->tids[i], rc->ncpu, pages);
		}
		/* no hardware counters (a VM): cycles falls back to cpu-clock, as perf's does; said
		 * when it was asked for */
		if (err == -ENOENT || err == -EOPNOTSUPP) {
			int c = cycles_to_cpu_clock(rc, err);
			if (c < 0)
				return c;
			if (c) {
				live_close_rings(lv);
				err = 0;
				continue;
			}
		}
		/* not allowed to sample the kernel (perf_event_paranoid 2): user space only, as perf
		 * does */
		if ((err == -EACCES || err == -EPERM) && !rc->ec.user_only && !o->system_wide && !lv->kwait) {
			live_close_rings(lv);
			rc->ec.user_only = true;
			base_log(&s->log, UW_LOG_WARN, "kernel samples excluded: kernel.perf_event_paranoid does not allow them "
				 "('sysctl -w kernel.perf_event_paranoid=1' does)");
			err = 0;
			continue;
		}
		break;
	}
	/* --off-cpu: a switch event beside each one, into its ring (not when the waits are timed in
	 * the kernel) */
	if (!err && o->off_cpu && !lv->kwait) {
		err = live_open_offcpu(lv, &rc->ec, !o->system_wide);
		if (err == -EACCES || err == -EPERM)
			return base_err(&s->log, err, "--off-cpu: the context-switches event with the kernel's frames was "
					"refused (%s): it needs kernel.perf_event_paranoid 1 or less, or CAP_PERFMON",
					strerror(-err));
		if (err)
			return base_err(&s->log, err, "--off-cpu: perf_event_open (context-switches): %s", strerror(-err));
	}
	if (err == -EACCES || err == -EPERM)
		return live_permission_error(s, err);
	const struct evspec *failed = &rc->ec.ev[lv->failed_ev < rc->ec.nev ? lv->failed_ev : 0];
	if ((err == -ENOENT || err == -EOPNOTSUPP) && failed->type == 0)
		return base_err(&s->log, err, "the %s event is not supported here (no hardware counters: %s); "
				"cpu-clock, task-clock and page-faults are software events", failed->name, strerror(-err));
	if (err)
		return base_err(&s->log, err, "perf_event_open (%s): %s", failed->name, strerror(-err));
	if (!lv->nrings)
		return base_err(&s->log, -ENODEV, "no events could be opened on the CPUs asked for");
	return 0;
}

/* Kernel unwinding could not be set up (err, rc->unwind_why): the program unloaded; an error
 * where it was asked for (--unwind kernel) or where the events are per CPU for the waits timed
 * in the kernel (recorded only through the program), else stack copies with one line saying
 * why. */
static int kunw_unavailable(struct rec *rc, int err)
{
	struct uw_session *s = rc->s;
	struct live *lv = &rc->lv;
	live_kunw_close(lv->kunw);
	lv->kunw = NULL;
	if (rc->o.unwind == UW_UNWIND_KERNEL || lv->kwait)
		return base_err(&s->log, err, "kernel unwinding: %s", rc->unwind_why);
	rc->want_kernel = false;
	/* (a build without it says so in the summary and in --help, not as a warning at every run) */
	if (uw_kernel_unwind_built())
		base_log(&s->log, UW_LOG_WARN, "kernel unwinding unavailable: %s; copying %u bytes of stack per sample instead",
			 rc->unwind_why, rc->o.stack_size);
	return 0;
}

/* The program's records of waits timed in the kernel that are no samples (live_kunw_conf.wait_fn). */
static int kwait_record(void *ctx, const void *rec)
{
	return live_offcpu_kwait_record(ctx, rec);
}

/* The program's options, as the recording's ask. */
static void kunw_conf(struct rec *rc, struct live_kunw_conf *out)
{
	struct uw_session *s = rc->s;
	struct live *lv = &rc->lv;
	struct live_kunw_conf kc = { .s = s,
				     /* (the program walks at most KUNW_MAX_FRAMES) */
				     .max_frames = UW_MIN(s->opts.max_frames, (unsigned)KUNW_MAX_FRAMES),
				     .max_bytes = rc->o.kernel_max_bytes,
				     /* (tests: every record also carries frame 0's registers and stack, for
				      * the reader to compare the program's frames with lib/unwind's) */
				     .verify = getenv("UW_KUNW_VERIFY") != NULL,
				     /* --off-cpu: the walk at each switch-out too, or the waits timed in
				      * the kernel (live_offcpu.c) */
				     .switches = rc->o.off_cpu && !lv->kwait,
				     .wait = lv->kwait,
				     .wait_all = rc->o.system_wide != 0,
				     .wait_self = (uint32_t)getpid(),
				     .wait_min_ns = rc->o.off_cpu_min_ns,
				     .wait_walks = rc->o.off_cpu_walks,
				     .wait_fn = kwait_record,
				     .wait_ctx = lv,
				     /* (its records are the one event's, or a switch-out's by their kind) */
				     .one_event = rc->ec.nev == 1 };
	/* (tests: a small ring, for a recorder stopped to lose samples in the program) */
	const char *rb = getenv("UW_KUNW_RING_BYTES");
	if (rb)
		kc.ring_bytes = (unsigned)strtoul(rb, NULL, 0);
	*out = kc;
}

/* The program loaded (the verifier runs), as the recording's options ask. */
static int kunw_open(struct rec *rc)
{
	struct live_kunw_conf kc;
	kunw_conf(rc, &kc);
	return live_kunw_open(&kc, &rc->lv.kunw, rc->unwind_why, sizeof(rc->unwind_why));
}

/* Kernel unwinding: the program loaded (the verifier runs) before the events are opened (waits
 * timed in the kernel open them per CPU), with its programs for the waits attached; where those
 * cannot be (UW_OFFCPU_AUTO), switch events instead; where the program cannot be loaded
 * (UW_UNWIND_AUTO), stack copies, with one line saying why. */
static int load_kernel_unwind(struct rec *rc)
{
	struct uw_session *s = rc->s;
	struct live *lv = &rc->lv;
	if (!rc->want_kernel)
		return 0;
	if (rc->kunw_late) {
		/* (verified on its own thread: attached in record_loop once loaded) */
		struct live_kunw_conf kc;
		kunw_conf(rc, &kc);
		int err = live_kunw_load(&kc, &rc->loading, rc->unwind_why, sizeof(rc->unwind_why));
		return err ? kunw_unavailable(rc, err) : 0;
	}
	int err = kunw_open(rc);
	if (!err && lv->kwait) {
		err = live_offcpu_kwait_start(lv, &rc->o, rc->child > 0 ? rc->child : 0);
		if (err)
			snprintf(rc->unwind_why, sizeof(rc->unwind_why),
				 "the off-CPU programs could not be attached (the sched_switch tracepoint): %s", strerror(-err));
	}
	if (err && lv->kwait && rc->o.off_cpu_mode != UW_OFFCPU_KERNEL) {
		base_log(&s->log, UW_LOG_WARN, "--off-cpu: the waits cannot be timed in the kernel here (%s): a sample at "
			 "every switch-out and switch records instead", rc->unwind_why);
		live_kunw_close(lv->kunw);
		lv->kunw = NULL;
		lv->kwait = false;
		rc->ec.percpu = false;
		err = kunw_open(rc);
	}
	return err ? kunw_unavailable(rc, err) : 0;
}

/* The program attached to every event open (the switch events' too): 0, or an error and why
 * in rc->unwind_why. */
static int attach_kernel_unwind(struct rec *rc)
{
	struct live *lv = &rc->lv;
	int err = 0;
	/* several events: each record says its event (Linux 6.2) */
	if (rc->ec.nev > 1 && !live_kunw_event_ids(lv->kunw)) {
		snprintf(rc->unwind_why, sizeof(rc->unwind_why),
			 "%u events: a walk's record says its event from Linux 6.2 on (bpf_cast_to_kern_ctx)", rc->ec.nev);
		err = -EOPNOTSUPP;
	}
	for (size_t i = 0; !err && i < lv->nrings; i++) {
		const struct ring *rg = &lv->rings[i];
		for (unsigned k = 0; !err && k <= rg->nx; k++) {
			int fd = k ? rg->xfd[k - 1] : rg->fd;
			if (fd < 0)
				continue; /* (a task's event closed: the task has gone) */
			err = live_kunw_attach(lv->kunw, fd, false);
			if (err)
				snprintf(rc->unwind_why, sizeof(rc->unwind_why),
					 "the program could not be attached to the %s event: %s", rc->ec.ev[k].name, strerror(-err));
		}
	}
	/* --off-cpu: the same walk at each switch-out (the context-switches events are sampling
	 * events of the same kind; its own entry program marks the records as switch-outs): no
	 * stack is copied per switch */
	for (size_t i = 0; !err && i < lv->nsw; i++) {
		if (lv->sw_fds[i] < 0)
			continue;
		err = live_kunw_attach(lv->kunw, lv->sw_fds[i], true);
		if (err)
			snprintf(rc->unwind_why, sizeof(rc->unwind_why),
				 "the program could not be attached to the context-switches event (--off-cpu): %s",
				 strerror(-err));
	}
	return err;
}

/* Kernel unwinding: the program attached to every event, or (UW_UNWIND_AUTO) stack copies,
 * with one line saying why. */
static int start_kernel_unwind(struct rec *rc)
{
	struct live *lv = &rc->lv;
	if (!lv->kunw)
		return 0;
	int err = attach_kernel_unwind(rc);
	/* (libbpf enables an event it attaches to: off again until the recording begins) */
	live_enable_events(lv, PERF_EVENT_IOC_DISABLE);
	return err ? kunw_unavailable(rc, err) : 0;
}

/* Is the output our standard output ("-", /dev/stdout, a path to the same pipe)? */
static bool output_is_stdout(const char *path)
{
	struct stat a, b;
	return !strcmp(path, "-") || (stat(path, &a) == 0 && fstat(1, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino &&
				       !S_ISREG(a.st_mode));
}

/* Lets the command exec. @return 0, or -errno when it could not be executed. */
static int start_command(struct rec *rc)
{
	if (write(rc->go[1], output_is_stdout(rc->o.output) ? "p" : "x", 1) != 1)
		return base_err(&rc->s->log, -errno, "starting the command: %s", strerror(errno));
	close(rc->go[1]);
	rc->go[1] = -1;
	int e = 0;
	ssize_t n;
	while ((n = read(rc->execerr[0], &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close(rc->execerr[0]);
	rc->execerr[0] = -1;
	if (n == (ssize_t)sizeof(e) && e) {
		rc->exec_errno = e;
		return base_err(&rc->s->log, -e, "%s: %s", rc->o.argv[0], strerror(e));
	}
	return 0;
}

/* The output and the reader that feeds it, with the machine's features, then the event as
 * opened with every ring's id. */
static int create_output(struct rec *rc)
{
	struct uw_session *s = rc->s;
	struct live *lv = &rc->lv;
	int err = cc_sink_new(s, rc->o.output, &lv->sink);
	if (err)
		return err;
	UW_OPTS(uw_tracker_opts, to, .live = 1);
	lv->t = uw_tracker_new(s, &to);
	if (!lv->t)
		return -ENOMEM;
	/* the mappings it finds on demand go into the output too */
	tracker_on_new_map(lv->t, live_on_new_map, lv);
	UW_OPTS(uw_reader_opts, ro, .on_sample = cc_sink_on_sample, .ctx = lv->sink, .tracker = lv->t,
		.stitch = rc->o.stitch);
	lv->r = uw_reader_new(s, &ro);
	lv->tmp = malloc(1u << 16);
	if (!lv->r || !lv->tmp)
		return -ENOMEM;
	cc_sink_attach(lv->sink, lv->r);
	perf_host_features(cc_sink_writer(lv->sink), rc->o.cmd_argc, rc->o.cmd_argv, CLOCK_MONOTONIC);
	/* attributes 0..nev-1: the sampling events, with every ring's id of each */
	struct kattr a;
	uint64_t *ids = malloc((lv->nrings ? lv->nrings : 1) * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	for (unsigned k = 0; !err && k < rc->ec.nev; k++) {
		live_attr_init(&a, &rc->ec, k, k == 0, !rc->o.system_wide);
		size_t n = 0;
		for (size_t i = 0; i < lv->nrings; i++)
			if (k == 0 || k <= lv->rings[i].nx)
				ids[n++] = k ? lv->rings[i].xid[k - 1] : lv->rings[i].id;
		/* the event's name as given (perf writes -e's text): with the kernel excluded for
		 * want of permission, ":u" as perf names it then */
		char nm[72];
		const struct evspec *ev = &rc->ec.ev[k];
		snprintf(nm, sizeof(nm), "%s%s", ev->full, rc->ec.user_only && !ev->mods ? ":u" : "");
		err = uw_reader_add_event(lv->r, &a, sizeof(a), ids, n, nm);
	}
	free(ids);
	lv->id0 = lv->nrings ? lv->rings[0].id : 0;
	lv->oc_attr = rc->ec.nev;
	if (!err && rc->o.off_cpu) {
		/* attribute nev: the switch-outs, written as offcpu-time (waits timed in the kernel:
		 * no event of its own, an id for the recorder's records) */
		live_offcpu_attr(&a, &rc->ec, !rc->o.system_wide);
		uint64_t wid = LIVE_WAIT_ID;
		lv->oc_on = true;
		lv->oc_id = lv->kwait ? wid : lv->nsw ? lv->sw_ids[0] : 0;
		lv->oc_sample_type = a.sample_type;
		err = uw_reader_add_event(lv->r, &a, sizeof(a), lv->kwait ? &wid : lv->sw_ids, lv->kwait ? 1 : lv->nsw,
					  "context-switches");
		struct offcpu_opts oo = { .min_ns = rc->o.off_cpu_min_ns, .every = rc->o.off_cpu_every,
					  .self_pid = rc->o.system_wide ? getpid() : 0, .keyed = lv->kwait };
		if (!err)
			err = cc_sink_offcpu(lv->sink, &oo, lv->oc_attr);
	}
	/* kernel unwinding: the program's records into the reader, samples of the events' ids (a
	 * switch-out's: of the switch attribute, any of its events' ids names it) */
	live_kunw_start(lv->kunw, lv->r);
	live_kunw_ids(lv->kunw, lv->id0, lv->oc_on ? lv->oc_id : 0, lv->oc_attr);
	return err;
}

/* Processes that already run: their names and mappings, before anything they do next; for -t
 * only the threads' names: their mappings are asked for when a pc needs one (PROCMAP_QUERY, or
 * a /proc/PID/maps scan on kernels before 6.11). */
static int synthesize_existing(struct rec *rc)
{
	struct live *lv = &rc->lv;
	const struct uw_record_opts *o = &rc->o;
	int err = live_push_kernel_map(lv);
	if (!err && (o->system_wide || o->npids))
		err = live_synthesize_all(lv, o->pids, o->npids, o->system_wide);
	/* -t with kernel unwinding: the threads' processes' mappings too, loaded into the program's
	 * maps before the events are enabled (live_kunw_prime); the kernel walks only through
	 * mappings it was given, and those found on demand come one at a time, after a sample
	 * needed them: until then every stack would be handed over (a blocking stack deeper than
	 * the copy then lost) */
	if (!err && o->ntids && lv->kunw) {
		int *pids = malloc(o->ntids * sizeof(*pids));
		size_t np = 0;
		if (!pids)
			return -ENOMEM;
		for (size_t i = 0; i < o->ntids; i++) {
			int32_t pid = live_tgid_of(o->tids[i]);
			size_t j = 0;
			while (j < np && pids[j] != pid)
				j++;
			if (j == np)
				pids[np++] = pid;
		}
		err = live_synthesize_all(lv, pids, np, false);
		free(pids);
	}
	for (size_t i = 0; i < o->ntids && !err; i++) {
		char p[64], comm[64] = "";
		int32_t pid = o->tids[i];
		snprintf(p, sizeof(p), "/proc/%d/status", o->tids[i]);
		FILE *f = fopen(p, "re");
		char line[256];
		while (f && fgets(line, sizeof(line), f)) {
			if (!strncmp(line, "Name:", 5))
				sscanf(line + 5, " %63[^\n]", comm);
			else if (!strncmp(line, "Tgid:", 5))
				pid = (int32_t)strtol(line + 5, NULL, 10);
		}
		if (f)
			fclose(f);
		err = live_push_comm(lv, pid, o->tids[i], comm);
	}
	return err;
}

static void report_status(struct rec *rc, double now, uint64_t bytes_out, struct uw_record_status *st)
{
	struct uw_reader_stats rs = { .sz = sizeof(rs) };
	if (rc->lv.r)
		uw_reader_stats(rc->lv.r, &rs);
	memset(st, 0, sizeof(*st));
	st->sz = sizeof(*st);
	st->samples = rs.samples_delivered;
	st->samples_root = status_root(&rs);
	st->samples_no_user = rs.samples_no_user;
	/* --off-cpu: the switch-outs the reader delivers are not samples of the file (each wait
	 * becomes an offcpu-time sample, counted in offcpu_samples): the counts are the sampling
	 * events' alone, the file's */
	struct uw_event_stats es = { .sz = sizeof(es) };
	if (rc->lv.r && rc->lv.oc_on && uw_reader_event_stats(rc->lv.r, rc->lv.oc_attr, &es) == 0) {
		st->samples -= UW_MIN(st->samples, es.samples_delivered);
		st->samples_root -= UW_MIN(st->samples_root, es.stop_reasons[UW_STOP_END_OF_STACK]);
		st->samples_no_user -= UW_MIN(st->samples_no_user, es.samples_no_user);
	}
	st->stitched = rs.stitched_samples;
	st->stitch_failed = rs.stitch_failed;
	st->lost = rc->lv.lost;
	st->throttled = rc->lv.throttled;
	st->bytes_out = bytes_out;
	struct uw_tracker_stats ts = { .sz = sizeof(ts) };
	if (rc->lv.t)
		uw_tracker_stats(rc->lv.t, &ts);
	st->procmap_query = ts.procmap_queries;
	st->maps_scan = ts.maps_scans;
	st->elapsed = now - rc->t0;
	st->cpu_self = cpu_self() - rc->cpu0;
	st->cpu_setup = rc->cpu0;
	st->workload_wstatus = rc->wstatus;
	st->workload_errno = rc->exec_errno;
	st->workload_stopped = rc->stopped_child;
	live_kunw_status(rc->lv.kunw, st);
	if (!st->kernel_unwind)
		snprintf(st->unwind_why, sizeof(st->unwind_why), "%s", rc->unwind_why);
	st->offcpu_switches = rc->oc.switches_out;
	st->offcpu_samples = rc->oc.samples;
	st->offcpu_ns = rc->oc.ns;
	st->offcpu_open_at_end = rc->oc.open_at_end;
	st->offcpu_copied = rc->lv.sw_copied;
	st->offcpu_blocked = rc->lv.sw_blocked;
	st->offcpu_keyed = rc->oc.keyed;
	st->offcpu_keyed_ns = rc->oc.keyed_ns;
	st->offcpu_unkeyed = rc->oc.unkeyed;
	st->offcpu_unkeyed_ns = rc->oc.unkeyed_ns;
	live_offcpu_kwait_status(&rc->lv, st);
}

/* The whole loss in a LOST_SAMPLES record at the end (live_push_lost_samples), as perf record
 * writes one from the events' lost counts: perf report's "Total Lost Samples" is these records'
 * sum (the kernel's LOST records are its "lost chunks"), so without it perf report said 0 of a
 * stack copies' recording that lost samples. It also counts the samples kernel unwinding's
 * program lost (its ring full), which no LOST record tells of. */
static int push_lost(struct rec *rc)
{
	struct uw_record_status st;
	report_status(rc, now_s(CLOCK_MONOTONIC), 0, &st);
	if (!st.lost || !rc->lv.r)
		return 0;
	return live_push_lost_samples(&rc->lv, st.lost, rc->end_ns);
}

/* The program loaded on its thread (rc->loading): attached to the events, which walk the
 * stacks in the kernel from now on (the samples already taken carry stack copies: the reader
 * unwinds each kind as it comes). Where it could not be loaded or attached, the recording goes
 * on copying stacks, with one line saying why (kunw_unavailable). @return 0, or an error that
 * ends the recording. */
static int kunw_ready(struct rec *rc)
{
	struct live *lv = &rc->lv;
	uint64_t ns = 0;
	int err = live_kunw_loading_take(rc->loading, &lv->kunw, &ns, rc->unwind_why, sizeof(rc->unwind_why));
	if (err == -EINPROGRESS)
		return 0;
	rc->loading = NULL;
	if (!err) {
		/* the reader's records followed from now on (the records delivered so far went by:
		 * the processes the tracker knows are loaded at the next update), then the events'
		 * program: its first records find the maps being fed */
		live_kunw_start(lv->kunw, lv->r);
		live_kunw_ids(lv->kunw, lv->id0, lv->oc_on ? lv->oc_id : 0, lv->oc_attr);
		live_kunw_late_start(lv->kunw);
		err = attach_kernel_unwind(rc);
	}
	if (err)
		return kunw_unavailable(rc, err);
	base_log(&rc->s->log, UW_LOG_INFO,
		 "kernel unwinding: the program loaded (verified) in %.3f s, %.3f s into the recording: stacks walked in "
		 "the kernel from now on (the threads that existed then keep their stack copies: a task's event "
		 "inherited before has no program)", (double)ns * 1e-9, now_s(CLOCK_MONOTONIC) - rc->t0);
	return 0;
}

/* Reads the rings until the command exits (or, for -p and -t, every task followed has), *stop
 * is set or the duration has passed; the file's data size is brought up to date once a second. */
static int record_loop(struct rec *rc)
{
	struct live *lv = &rc->lv;
	const struct uw_record_opts *o = &rc->o;
	struct pollfd *pfd = calloc(lv->nrings + 2, sizeof(*pfd));
	if (!pfd)
		return -ENOMEM;
	for (size_t i = 0; i < lv->nrings; i++)
		pfd[i] = (struct pollfd){ lv->rings[i].fd, POLLIN, 0 };
	double last_status = rc->t0;
	int err = 0;
	size_t open_rings = lv->nrings;
	/* -p, -t: the recording ends when every task it follows has gone (perf record -p) */
	bool follow_tasks = !o->system_wide && !o->argv;
	while (!err) {
		/* (kernel unwinding: the program's ring, or the loading's fd while it is verified,
		 * last) */
		int kfd = lv->kunw ? live_kunw_fd(lv->kunw) : live_kunw_loading_fd(rc->loading);
		pfd[lv->nrings] = (struct pollfd){ kfd, POLLIN, 0 };
		/* (kernel unwinding: a new program's tables are loaded once its mappings are read:
		 * every 20 ms, its first samples are finished in user space) */
		int pr = poll(pfd, lv->nrings + (kfd >= 0), lv->kunw ? 20 : 100);
		if (pr < 0 && errno != EINTR) {
			err = -errno;
			break;
		}
		if (rc->loading && (err = kunw_ready(rc)))
			break;
		/* the program's records first: the side-band before each is on the rings by now */
		err = live_kunw_drain(lv->kunw);
		if (!err)
			err = live_drain_all(lv);
		if (!err)
			err = live_kunw_update(lv->kunw);
		/* A task's event whose task has exited, and every task that inherited it too, reports
		 * POLLHUP from then on and gets nothing more: drained above, it is closed, else
		 * every poll would return at once and the loop spin a CPU. */
		for (size_t i = 0; !err && pr > 0 && i < lv->nrings; i++) {
			if (pfd[i].fd >= 0 && (pfd[i].revents & (POLLHUP | POLLERR | POLLNVAL))) {
				live_close_ring(lv, i);
				pfd[i].fd = -1;
				open_rings--;
			}
		}
		double now = now_s(CLOCK_MONOTONIC);
		if (rc->child > 0 && waitpid(rc->child, &rc->wstatus, WNOHANG) == rc->child)
			rc->child = -1; /* reaped */
		/* (waits timed in the kernel: per-CPU rings; the program counts the tasks followed) */
		bool gone = follow_tasks && (rc->lv.kwait ? live_offcpu_kwait_live(&rc->lv) <= 0 : !open_rings);
		bool stop = (o->argv && rc->child < 0) || (o->stop && *o->stop) ||
			    (o->duration > 0 && now - rc->t0 >= o->duration) || gone;
		if (now - last_status >= 1.0 || stop) {
			last_status = now;
			/* what processes and modules that came and went freed goes back to the system:
			 * a recorder's memory follows what runs, not what ran */
			if (++rc->trims % 10 == 0)
				malloc_trim(0);
			if (!err)
				err = cc_sink_sync(lv->sink);
			if (o->on_status) {
				struct uw_record_status st;
				report_status(rc, now, 0, &st);
				o->on_status(o->ctx, &st);
			}
		}
		if (stop)
			break;
	}
	free(pfd);
	return err;
}

/* The command, if it still runs, is ended (SIGTERM, or SIGKILL when recording failed) and
 * reaped. */
static void end_command(struct rec *rc, bool failed)
{
	if (rc->child <= 0)
		return;
	if (waitpid(rc->child, &rc->wstatus, WNOHANG) == 0) {
		kill(rc->child, failed ? SIGKILL : SIGTERM);
		rc->stopped_child = !failed;
		waitpid(rc->child, &rc->wstatus, 0);
	}
	rc->child = -1;
}


/* ---- the recorded files kept in perf's build-id cache, as perf record keeps them */
struct keep {
	struct rec *rc;
	int err;
	const char *what;
};

static int keep_module(void *ctx, struct uw_module *m)
{
	struct keep *k = ctx;
	if (!tracker_module_was_hit(k->rc->lv.t, m))
		return 0;
	int e = module_keep_in_cache(k->rc->s, m);
	if (e && !k->err) {
		k->err = e;
		k->what = m->path;
	}
	return 0;
}

static void keep_build_ids(struct rec *rc)
{
	struct keep k = { .rc = rc };
	if (!rc->s->buildid_dir)
		return;
	uw_session_foreach_module(rc->s, keep_module, &k);
	const char *kb = tracker_build_id(rc->lv.t, "[kernel.kallsyms]", 17);
	if (kb && kb[0]) {
		int e = ksym_keep_in_cache(rc->s, kb);
		if (e && !k.err) {
			k.err = e;
			k.what = "[kernel.kallsyms]";
		}
	}
	if (k.err)
		base_log(&rc->s->log, UW_LOG_WARN,
			 "build-id cache %s: %s not kept: %s (the recording is whole; reading it needs the files at "
			 "their paths)", rc->s->buildid_dir, k.what, uw_strerror(k.err));
}

UW_API int uw_record(struct uw_session *s, const struct uw_record_opts *opts, struct uw_record_status *final)
{
	struct rec rc = { .s = s, .child = -1, .go = { -1, -1 }, .execerr = { -1, -1 }, .wstatus = -1 };
	int oe = BASE_OPTS_COPY(&rc.o, uw_record_opts, buildid_cache, opts);
	if (oe)
		return oe;
	if (!s)
		return -EINVAL;
	rc.ncpu = live_ncpus();
	rc.lv.s = s;
	base_map_init(&rc.lv.oc_procs);
	base_errmsg_clear(&s->log); /* what goes wrong below says why */
	int err = check_opts(&rc);
	if (err)
		return err;
	/* The output is written without a name until the recording has begun: a run that
	 * cannot record (events refused, a command that cannot run) leaves the path alone, and
	 * one killed at any time leaves either that or a file that reads (cc_sink_publish). */
	if (rc.o.argv)
		err = fork_command(&rc);
	if (!err)
		err = load_kernel_unwind(&rc);
	if (!err)
		err = open_events(&rc);
	if (!err)
		err = start_kernel_unwind(&rc);
	if (!err)
		err = create_output(&rc);
	if (!err)
		err = synthesize_existing(&rc);
	if (!err)
		err = live_kunw_prime(rc.lv.kunw, 60ull * 1000000000u); /* (a minute at most) */
	/* -a with a command: the system from before the command starts (its exec seen); a
	 * command's own events begin at its exec (enable_on_exec) */
	if (!err && (rc.o.system_wide || rc.lv.kwait)) {
		live_enable_events(&rc.lv, PERF_EVENT_IOC_ENABLE);
		/* (waits timed in the kernel: from here; the per-CPU events see the command's exec) */
		live_offcpu_kwait_on(&rc.lv, true);
	}
	if (!err && rc.o.argv)
		err = start_command(&rc);
	if (!err)
		err = cc_sink_publish(rc.lv.sink);
	if (!err) {
		live_enable_events(&rc.lv, PERF_EVENT_IOC_ENABLE);
		rc.t0 = now_s(CLOCK_MONOTONIC);
		rc.cpu0 = cpu_self();
		/* (what a script waits for before the work it records: priming the kernel's tables of
		 * every process can take seconds) */
		base_log(&s->log, UW_LOG_INFO, "recording: events enabled");
		/* the caller told at once that the recording has begun: a status of 0 s (the kernel
		 * walk's program may still be verified: kernel_unwind 0 then) */
		if (rc.o.on_status) {
			struct uw_record_status st;
			report_status(&rc, rc.t0, 0, &st);
			rc.o.on_status(rc.o.ctx, &st);
		}
		/* threads blocked since before: their waits count from now (time taken before their
		 * state is read, so a wake-up after it closes the wait) */
		if (rc.o.off_cpu)
			err = live_offcpu_blocked(&rc.lv, &rc.o, live_now_ns());
		if (!err)
			err = record_loop(&rc);
		rc.end_ns = live_now_ns();
		/* the program still being verified: not wanted any more (its thread frees it; the
		 * process exiting ends the verifier where it is) */
		if (rc.loading) {
			double t = now_s(CLOCK_MONOTONIC) - rc.t0;
			live_kunw_loading_cancel(rc.loading);
			rc.loading = NULL;
			snprintf(rc.unwind_why, sizeof(rc.unwind_why),
				 "the recording (%.2f s) ended before its program was verified", t);
		}
		live_enable_events(&rc.lv, PERF_EVENT_IOC_DISABLE);
		/* waits timed in the kernel: off, what they hold written up to the end */
		if (!err && rc.lv.kwait)
			err = live_offcpu_kwait_end(&rc.lv, rc.end_ns);
	}
	if (err == -UW_ECANCELED && cc_sink_error(rc.lv.sink))
		err = cc_sink_error(rc.lv.sink); /* the writing failed (said): disk full, ... */
	else if (err && !base_errmsg(&s->log)[0])
		base_err(&s->log, err, "recording: %s", uw_strerror(err));
	/* a command that outlived the recording, or could not be recorded, is not left running */
	end_command(&rc, err != 0);
	if (!err)
		err = live_kunw_drain(rc.lv.kunw);
	if (!err)
		err = live_drain_all(&rc.lv);
	if (!err)
		err = push_lost(&rc);
	if (!err)
		err = uw_reader_flush(rc.lv.r);
	if (!err)
		err = cc_sink_offcpu_finish(rc.lv.sink, rc.end_ns, &rc.oc);
	if (!err)
		err = cc_sink_finish(rc.lv.sink);
	if (!err && rc.o.buildid_cache)
		keep_build_ids(&rc);
	struct uw_inject_stats is = { .sz = sizeof(is) };
	if (final && final->sz >= sizeof(size_t)) {
		struct uw_record_status st;
		cc_sink_free(rc.lv.sink, &is);
		rc.lv.sink = NULL;
		report_status(&rc, now_s(CLOCK_MONOTONIC), is.bytes_out, &st);
		st.max_stack = is.max_stack;
		size_t sz = final->sz;
		memcpy(final, &st, UW_MIN(sz, sizeof(st)));
		final->sz = sz;
	}
	for (int i = 0; i < 2; i++) {
		if (rc.go[i] >= 0)
			close(rc.go[i]);
		if (rc.execerr[i] >= 0)
			close(rc.execerr[i]);
	}
	live_kunw_loading_cancel(rc.loading);
	live_kunw_close(rc.lv.kunw);
	rc.lv.kunw = NULL;
	live_close_offcpu(&rc.lv);
	base_map_free(&rc.lv.oc_procs);
	live_close_rings(&rc.lv);
	cc_sink_free(rc.lv.sink, NULL);
	uw_reader_free(rc.lv.r);
	uw_tracker_free(rc.lv.t);
	free(rc.lv.tmp);
	return err;
}

