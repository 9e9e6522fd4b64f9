/* SPDX-License-Identifier: MIT */
/* Live recording: the events, their attributes, opened per CPU or per task (live.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "perf/live/live.h"
#include "unwind/unwind.h"

int live_ncpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);
	return n > 0 && n < 4096 ? (int)n : 1;
}

int live_permission_error(struct uw_session *s, int err)
{
	int paranoid = -9;
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	if (f) {
		if (fscanf(f, "%d", &paranoid) != 1)
			paranoid = -9;
		fclose(f);
	}
	return base_err(&s->log, err,
			"perf_event_open: %s (kernel.perf_event_paranoid is %d): run as root, grant CAP_PERFMON, "
			"or allow it with 'sysctl -w kernel.perf_event_paranoid=1' (-1 for -a)",
			strerror(-err), paranoid);
}

int live_probe_defer(struct uw_session *s)
{
	struct kattr a;
	memset(&a, 0, sizeof(a));
	a.type = 1; /* PERF_TYPE_SOFTWARE, cpu-clock: any kernel has it */
	a.size = sizeof(a);
	a.sample_period_or_freq = 1000000;
	a.sample_type = PS_IP | PS_TID | PS_CALLCHAIN;
	a.flags = BIT(A_DISABLED) | BIT(5) | BIT(6) | BIT(A_DEFER_CALLCHAIN) | BIT(A_DEFER_OUTPUT);
	int fd = live_event_open(&a, 0, -1);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	int e = -fd;
	if (e == EACCES || e == EPERM)
		return live_permission_error(s, -e);
	struct utsname u;
	return base_err(&s->log, -EOPNOTSUPP,
			"--call-graph fp,defer: this kernel (%s) does not write deferred user callchains "
			"(perf_event_open refused attr.defer_callchain: %s); they need Linux 6.19 or newer. "
			"Use --call-graph fp or dwarf",
			uname(&u) == 0 ? u.release : "?", strerror(e));
}

/* Reads every record in the ring into the reader. */
bool live_parse_event(const char *name, struct evspec *e)
{
	static const struct {
		uint32_t type;
		uint64_t config;
		const char *name;
	} known[] = {
		{ 0, 0, "cycles" },        /* PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES */
		{ 0, 1, "instructions" },
		{ 1, 0, "cpu-clock" },     /* PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK */
		{ 1, 1, "task-clock" },
		{ 1, 2, "page-faults" },
	};
	for (size_t i = 0; i < UW_ARRAY_SIZE(known); i++)
		if (!strcmp(name, known[i].name)) {
			/* (the modifiers stay: cycles that falls back to cpu-clock keeps them) */
			e->type = known[i].type;
			e->config = known[i].config;
			e->name = known[i].name;
			return true;
		}
	return false;
}

/* How the events of one recording are opened. */
void live_attr_init(struct kattr *a, const struct evconf *ec, unsigned k, bool sideband, bool task)
{
	const struct uw_record_opts *o = ec->o;
	memset(a, 0, sizeof(*a));
	a->type = ec->ev[k].type;
	a->size = sizeof(*a);
	a->config = ec->ev[k].config;
	if (o->period) {
		a->sample_period_or_freq = o->period;
	} else {
		a->sample_period_or_freq = o->freq;
		a->flags |= BIT(A_FREQ);
	}
	a->sample_type = PS_IDENTIFIER | PS_IP | PS_TID | PS_TIME | PS_CPU | PS_PERIOD | PS_CALLCHAIN;
	a->flags |= BIT(A_DISABLED) | BIT(A_SAMPLE_ID_ALL) | BIT(A_USE_CLOCKID) | BIT(A_WATERMARK);
	if (o->call_graph == UW_CALL_GRAPH_DWARF) {
		/* the kernel's part of the callchain only: the user part is ours */
		a->sample_type |= PS_REGS_USER | PS_STACK_USER;
		a->flags |= BIT(A_EXCL_CALLCHAIN_USER);
		a->sample_regs_user = unw_x86_64_perf_mask();
		a->sample_stack_user = o->stack_size;
	}
	if (o->call_graph == UW_CALL_GRAPH_FP_DEFER) {
		/* the user part in PERF_RECORD_CALLCHAIN_DEFERRED records (Linux 6.19+), written on
		 * the ring of the event that carries the side-band */
		a->flags |= BIT(A_DEFER_CALLCHAIN);
		if (sideband)
			a->flags |= BIT(A_DEFER_OUTPUT);
	}
	if (task)
		a->flags |= BIT(A_INHERIT);
	/* -e NAME:MODS: exclude_user (bit 4), exclude_kernel (5), exclude_hv (6), precise_ip (15-16) */
	const struct evspec *ev = &ec->ev[k];
	a->flags |= (ev->excl_user ? BIT(4) : 0) | (ev->excl_kernel ? BIT(5) : 0) | (ev->excl_hv ? BIT(6) : 0) |
		    (uint64_t)(ev->precise & 3) << 15;
	if (ec->user_only)
		a->flags |= BIT(5) | BIT(6); /* exclude_kernel, exclude_hv */
	/* a command's events begin at its exec; with -a the system's begin at once */
	if (o->argv && !o->system_wide && !ec->percpu)
		a->flags |= BIT(A_ENABLE_ON_EXEC);
	/* No build-ids in MMAP2 (attr.build_id): while one event asks for them, kernels up to at
	 * least 6.18 mark every other session's MMAP2 records PERF_RECORD_MISC_MMAP_BUILD_ID over
	 * their maj/min/ino (the flag is set on the record shared by all events and not cleared),
	 * and perf 6.1 aborts on those. The tracker reads a module's build-id from the mapped file
	 * itself (/proc/PID/map_files), as perf record does. */
	if (sideband)
		a->flags |= BIT(A_MMAP) | BIT(A_MMAP2) | BIT(A_COMM) | BIT(A_COMM_EXEC) | BIT(A_TASK);
	a->clockid = CLOCK_MONOTONIC;
	a->wakeup = 0; /* with watermark: bytes; 0 means half the buffer */
}

/* Is CPU c one the recording uses (-C)? */
bool live_cpu_wanted(const struct uw_record_opts *o, int c)
{
	if (!o->ncpus)
		return true;
	for (size_t i = 0; i < o->ncpus; i++)
		if (o->cpus[i] == c)
			return true;
	return false;
}

int live_task_ids(int pid, int **out, size_t *n)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/task", pid);
	DIR *d = opendir(p);
	if (!d)
		return -errno;
	size_t cap = 16;
	*out = malloc(cap * sizeof(**out));
	*n = 0;
	struct dirent *e;
	while (*out && (e = readdir(d))) {
		char *end;
		long tid = strtol(e->d_name, &end, 10);
		if (*end || tid <= 0)
			continue;
		if (*n == cap) {
			int *nt = realloc(*out, 2 * cap * sizeof(*nt));
			if (!nt) {
				free(*out);
				*out = NULL;
				break;
			}
			*out = nt;
			cap *= 2;
		}
		(*out)[(*n)++] = (int)tid;
	}
	closedir(d);
	return *out ? 0 : -ENOMEM;
}

/* Events for a task on every CPU: the first of each task carries the side-band. */
int live_open_task(struct live *lv, const struct evconf *ec, pid_t tid, int ncpu, size_t pages)
{
	for (int c = 0; c < ncpu; c++) {
		if (!live_cpu_wanted(ec->o, c))
			continue;
		int err = live_open_events(lv, ec, tid, c, pages, true);
		if ((err == -ENODEV || err == -EINVAL) && !lv->failed_ev)
			continue; /* an offline CPU */
		if (err)
			return err;
	}
	return 0;
}

