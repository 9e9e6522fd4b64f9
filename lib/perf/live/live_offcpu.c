/* SPDX-License-Identifier: MIT */
/*
 * Live recording, --off-cpu: a sample at every switch-out of a followed thread, with its user
 * stack, and the switch records that say when it runs again (live.h; the pairing is write/offcpu.c).
 *
 * Why the context-switches software event and switch records, not the sched:sched_switch
 * tracepoint: both fire in the context of the task going off the CPU (perf_sw_event_sched() in
 * perf_event_task_sched_out(), the tracepoint in __schedule()), so both see its user registers
 * and stack; but the software event needs no tracefs, is counted per task as a CPU sample is
 * (per-task events with inherit see only their threads' switches, where a per-task tracepoint
 * would also but with raw data we do not need), and a BPF_PROG_TYPE_PERF_EVENT program can be
 * attached to it as to the CPU samples' events: the in-kernel unwinder (lib/kernel) can then walk
 * the blocking stack at the switch with the same program, with no stack copied. A tracepoint
 * takes a BPF_PROG_TYPE_TRACEPOINT program, another program. The switch back in comes from
 * attr.context_switch (PERF_RECORD_SWITCH per task, SWITCH_CPU_WIDE per CPU): a record of about
 * 48 bytes with no stack.
 *
 * Each switch event writes into the ring of the CPU event of the same task and CPU
 * (PERF_EVENT_IOC_SET_OUTPUT): no ring of its own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "perf/live/live.h"
#include "unwind/unwind.h"
#ifdef UW_HAVE_KERNEL_UNWIND
#include "kernel/kunw.h"
#endif

#define A_CONTEXT_SWITCH 26

void live_offcpu_attr(struct kattr *a, const struct evconf *ec, bool task)
{
	const struct uw_record_opts *o = ec->o;
	live_attr_init(a, ec, 0, false, task);
	a->type = 1;   /* PERF_TYPE_SOFTWARE */
	a->config = 3; /* PERF_COUNT_SW_CONTEXT_SWITCHES */
	a->sample_period_or_freq = o->off_cpu_every ? o->off_cpu_every : 1;
	/* the kernel's frames are those of the switch (the event's regs are the scheduler's): a
	 * switch event that excluded the kernel would never fire */
	a->flags &= ~(BIT(A_FREQ) | BIT(5) | BIT(6) | BIT(A_DEFER_CALLCHAIN) | BIT(A_DEFER_OUTPUT));
	a->flags |= BIT(A_CONTEXT_SWITCH);
	/* a software event that records its period without a frequency samples every event,
	 * whatever its sample_period (perf_swevent_event(): "data->period = nr"): one switch in N
	 * needs the period left out (the offcpu-time samples written have one: the time) */
	if (a->sample_period_or_freq > 1)
		a->sample_type &= ~(uint64_t)PS_PERIOD;
}

int live_open_offcpu(struct live *lv, const struct evconf *ec, bool task)
{
	size_t n = lv->nrings;
	lv->sw_fds = calloc(n ? n : 1, sizeof(*lv->sw_fds));
	lv->sw_ids = calloc(n ? n : 1, sizeof(*lv->sw_ids));
	if (!lv->sw_fds || !lv->sw_ids)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct ring *rg = &lv->rings[i];
		if (rg->fd < 0)
			continue;
		struct kattr a;
		live_offcpu_attr(&a, ec, task);
		int fd = live_event_open(&a, rg->pid, rg->cpu);
		if (fd < 0)
			return fd;
		lv->sw_fds[lv->nsw] = fd;
		if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, rg->fd) < 0 || ioctl(fd, PERF_EVENT_IOC_ID, &lv->sw_ids[lv->nsw]) < 0) {
			int e = -errno;
			close(fd);
			return e;
		}
		lv->nsw++;
	}
	return 0;
}

void live_close_offcpu(struct live *lv)
{
	for (size_t i = 0; i < lv->nsw; i++)
		close(lv->sw_fds[i]);
	free(lv->sw_fds);
	free(lv->sw_ids);
	lv->sw_fds = NULL;
	lv->sw_ids = NULL;
	lv->nsw = 0;
}

void live_enable_offcpu(struct live *lv, unsigned long req)
{
	for (size_t i = 0; i < lv->nsw; i++)
		ioctl(lv->sw_fds[i], req, 0);
}

uint64_t live_now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Is the thread off the CPU in the kernel, and where did it leave user space? */
static bool blocked_at(int32_t tid, uint64_t *sp, uint64_t *pc)
{
	char p[64], buf[512];
	snprintf(p, sizeof(p), "/proc/%d/stat", tid);
	FILE *f = fopen(p, "re");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *rp = strrchr(buf, ')'); /* the name may hold anything */
	if (!rp || (rp[2] != 'S' && rp[2] != 'D'))
		return false;
	snprintf(p, sizeof(p), "/proc/%d/syscall", tid);
	f = fopen(p, "re");
	if (!f)
		return false;
	/* "nr arg1 ... arg6 sp pc", or "-1 sp pc" outside a system call, or "running" */
	char *tok[9] = { 0 };
	int nt = 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	for (char *save = NULL, *t = strtok_r(buf, " \n", &save); t && nt < 9; t = strtok_r(NULL, " \n", &save))
		tok[nt++] = t;
	if (nt != 9 && nt != 3)
		return false;
	*sp = strtoull(tok[nt - 2], NULL, 0);
	*pc = strtoull(tok[nt - 1], NULL, 0);
	return *sp && *pc;
}

/* A switch-out sample of the context-switches event for a thread found blocked: its user
 * registers (sp and pc; the others unknown, 0) and the stack read from sp, at time. */
static int push_blocked(struct live *lv, const struct uw_record_opts *o, int32_t pid, int32_t tid, uint64_t time)
{
	uint64_t sp, pc;
	if (!lv->oc_on)
		return 0;
#ifdef UW_HAVE_KERNEL_UNWIND
	/* waits timed in the kernel: its next switch-in ends the wait (said before its state is
	 * read: a wake-up in between then ends a wait user space did not open, which is nothing) */
	struct kunw *k = lv->kwait ? live_kunw_handle(lv->kunw) : NULL;
	if (k && kunw_wait_blocked(k, (uint32_t)tid, time, true))
		k = NULL;
	if (!blocked_at(tid, &sp, &pc)) {
		if (k)
			kunw_wait_blocked(k, (uint32_t)tid, 0, false);
		return 0;
	}
#else
	if (!blocked_at(tid, &sp, &pc))
		return 0;
#endif
	uint64_t mask = unw_x86_64_perf_mask();
	unsigned nregs = (unsigned)__builtin_popcountll(mask);
	size_t fixed = 8 + 8 * 6 + 8 + 8 + 8 * nregs + 8 + 8;
	size_t ssize = o->stack_size;
	if (fixed + ssize > 65528)
		ssize = (65528 - fixed) & ~(size_t)7;
	uint8_t *rec = calloc(1, fixed + ssize);
	if (!rec)
		return -ENOMEM;
	uint8_t *stack = malloc(ssize ? ssize : 1);
	if (!stack) {
		free(rec);
		return -ENOMEM;
	}
	/* the stack, a page at a time: it ends where its mapping does */
	size_t got = 0;
	while (got < ssize) {
		size_t want = 4096 - ((sp + got) & 4095);
		if (want > ssize - got)
			want = ssize - got;
		struct iovec lio = { stack + got, want }, rio = { (void *)(uintptr_t)(sp + got), want };
		if (process_vm_readv(pid, &lio, 1, &rio, 1, 0) != (ssize_t)want)
			break;
		got += want;
	}
	size_t at = 8;
	uint64_t v[] = { lv->oc_id, pc, (uint64_t)(uint32_t)tid << 32 | (uint32_t)pid, time, 0, 1, 0 };
	for (size_t i = 0; i < UW_ARRAY_SIZE(v); i++, at += 8)
		memcpy(rec + at, &v[i], 8); /* id, ip, pid/tid, time, cpu, period, callchain nr 0 */
	uint64_t abi = 2; /* PERF_SAMPLE_REGS_ABI_64 */
	memcpy(rec + at, &abi, 8);
	at += 8;
	for (uint64_t m = mask; m; m &= m - 1, at += 8) {
		unsigned bit = (unsigned)__builtin_ctzll(m);
		uint64_t r = bit == UNW_PERF_X86_IP ? pc : bit == UNW_PERF_X86_SP ? sp : 0;
		memcpy(rec + at, &r, 8);
	}
	uint64_t sz = ssize, dyn = got;
	memcpy(rec + at, &sz, 8);
	at += 8;
	memcpy(rec + at, stack, ssize);
	at += ssize;
	memcpy(rec + at, &dyn, 8);
	at += 8;
	free(stack);
	uint32_t type = PR_SAMPLE;
	uint16_t misc = PM_USER, size = (uint16_t)at;
	memcpy(rec, &type, 4);
	memcpy(rec + 4, &misc, 2);
	memcpy(rec + 6, &size, 2);
	int err = uw_reader_push(lv->r, rec, at);
	free(rec);
	lv->sw_blocked++;
	return err;
}

/* Every thread of a process found blocked. */
static int blocked_of_process(struct live *lv, const struct uw_record_opts *o, int32_t pid, uint64_t time)
{
	int *tids = NULL;
	size_t nt = 0;
	if (live_task_ids(pid, &tids, &nt))
		return 0; /* gone */
	int err = 0;
	for (size_t i = 0; i < nt && !err; i++)
		err = push_blocked(lv, o, pid, tids[i], time);
	free(tids);
	return err;
}

int live_offcpu_blocked(struct live *lv, const struct uw_record_opts *o, uint64_t time)
{
	int err = 0;
	for (size_t i = 0; i < o->npids && !err; i++)
		err = blocked_of_process(lv, o, o->pids[i], time);
	for (size_t i = 0; i < o->ntids && !err; i++) {
		int32_t pid = live_tgid_of(o->tids[i]);
		err = push_blocked(lv, o, pid, o->tids[i], time);
	}
	return err;
}

/* ---- waits timed in the kernel */

#ifdef UW_HAVE_KERNEL_UNWIND

/* The sample_id trailer of a record of the off-CPU attribute, at b: @return its length. */
static size_t oc_trailer(const struct live *lv, uint8_t *b, uint32_t pid, uint32_t tid, uint64_t time, uint32_t cpu)
{
	uint64_t st = lv->oc_sample_type, v[6];
	unsigned n = 0;
	if (st & PS_TID)
		v[n++] = (uint64_t)tid << 32 | pid;
	if (st & PS_TIME)
		v[n++] = time;
	if (st & PS_ID)
		v[n++] = lv->oc_id;
	if (st & PS_STREAM_ID)
		v[n++] = lv->oc_id;
	if (st & PS_CPU)
		v[n++] = cpu;
	if (st & PS_IDENTIFIER)
		v[n++] = lv->oc_id;
	memcpy(b, v, (size_t)n * 8);
	return (size_t)n * 8;
}

int live_offcpu_kwait_start(struct live *lv, const struct uw_record_opts *o, int32_t child)
{
	struct kunw *k = live_kunw_handle(lv->kunw);
	if (!k)
		return -EINVAL;
	lv->oc_filter = !o->system_wide;
	int e = 0;
	if (child > 0)
		e = kunw_wait_follow_proc(k, (uint32_t)child);
	for (size_t i = 0; !e && i < o->npids; i++)
		e = kunw_wait_follow_proc(k, (uint32_t)o->pids[i]);
	for (size_t i = 0; !e && i < o->ntids; i++)
		e = kunw_wait_follow_thread(k, (uint32_t)o->tids[i], (uint32_t)live_tgid_of(o->tids[i]));
	/* their side-band is wanted (the rest is learnt from FORK records, else asked of the
	 * program's map) */
	if (child > 0)
		live_sideband_follow(lv, (uint32_t)child);
	for (size_t i = 0; i < o->npids; i++)
		live_sideband_follow(lv, (uint32_t)o->pids[i]);
	for (size_t i = 0; i < o->ntids; i++)
		live_sideband_follow(lv, (uint32_t)live_tgid_of(o->tids[i]));
	if (!e)
		e = kunw_wait_attach(k);
	return e;
}

void live_offcpu_kwait_on(struct live *lv, bool on)
{
	struct kunw *k = lv->kwait ? live_kunw_handle(lv->kunw) : NULL;
	if (k)
		kunw_wait_on(k, on);
}

int64_t live_offcpu_kwait_live(struct live *lv)
{
	struct kunw *k = lv->kwait ? live_kunw_handle(lv->kunw) : NULL;
	return k ? kunw_wait_live(k) : 0;
}

int live_offcpu_kwait_end(struct live *lv, uint64_t end)
{
	struct kunw *k = lv->kwait ? live_kunw_handle(lv->kunw) : NULL;
	return k ? kunw_wait_end(k, end) : 0;
}

int live_offcpu_kwait_record(struct live *lv, const void *p)
{
	const struct kunw_sample *ks = p;
	const struct kunw_rec *r = ks->rec;
	uint8_t b[8 + 32 + 64];
	size_t at = 8;
	uint32_t type = PR_SWITCH;
	if (r->kind == KUNW_KIND_WAIT_SUM && ks->sum) {
		uint64_t v[4] = { ks->sum[0], ks->sum[1], r->period, ks->sum[2] };
		memcpy(b + at, v, sizeof(v));
		at += sizeof(v);
		type = PR_UW_OFFCPU;
	}
	at += oc_trailer(lv, b + at, r->pid, r->tid, r->time, r->cpu);
	uint16_t misc = 0, size = (uint16_t)at; /* (PR_SWITCH: the switch in) */
	memcpy(b, &type, 4);
	memcpy(b + 4, &misc, 2);
	memcpy(b + 6, &size, 2);
	return uw_reader_push(lv->r, b, at);
}

void live_offcpu_kwait_status(struct live *lv, struct uw_record_status *st)
{
	struct kunw *k = lv->kwait ? live_kunw_handle(lv->kunw) : NULL;
	struct kunw_wait_counters c;
	if (!k || kunw_wait_counters(k, &c))
		return;
	st->offcpu_kernel_timed = 1;
	st->offcpu_waits = c.waits;
	st->offcpu_walked = c.walked;
	st->offcpu_untimed = c.untimed;
	/* (records of the program lost with its ring full are lost records) */
	st->lost += c.lost;
}

#else

int live_offcpu_kwait_start(struct live *lv, const struct uw_record_opts *o, int32_t child)
{
	(void)lv;
	(void)o;
	(void)child;
	return -EOPNOTSUPP;
}
void live_offcpu_kwait_on(struct live *lv, bool on)
{
	(void)lv;
	(void)on;
}
int64_t live_offcpu_kwait_live(struct live *lv)
{
	(void)lv;
	return 0;
}
int live_offcpu_kwait_end(struct live *lv, uint64_t end)
{
	(void)lv;
	(void)end;
	return 0;
}
int live_offcpu_kwait_record(struct live *lv, const void *rec)
{
	(void)lv;
	(void)rec;
	return 0;
}
void live_offcpu_kwait_status(struct live *lv, struct uw_record_status *st)
{
	(void)lv;
	(void)st;
}

#endif
