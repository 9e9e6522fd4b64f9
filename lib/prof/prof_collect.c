/* SPDX-License-Identifier: MIT */
/*
 * The collector thread: every pass it drains each thread's ring, unwinds each record with
 * uw_unwind_sample (the registers in perf's layout, the stack copy) against a live tracker of
 * this process, and adds the stack to the profile with the thread's name. It wakes every
 * scan period (250 ms), or sooner when a ring is half full; it also scans
 * /proc/self/task (prof_threads.c) and watches the loaded objects (prof_maps.c).
 *
 * Ordering with dlclose: records carry the mappings' generation they were taken in. A pass
 * first unwinds every record of the tracker's generation, then, if the generation moved,
 * forgets the mappings and unwinds the rest: a sample taken before a library was closed is
 * named after it, one taken after never is.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "prof/iprof.h"

/* ---- thread names, interned: a profile keeps each sample's name by pointer */
struct iprof_comm {
	struct iprof_comm *next;
	char name[];
};

static const char *comm_intern(struct uw_prof *p, const char *name)
{
	for (struct iprof_comm *c = p->comms; c; c = c->next)
		if (!strcmp(c->name, name))
			return c->name;
	size_t n = strlen(name);
	struct iprof_comm *c = malloc(sizeof(*c) + n + 1);
	if (!c)
		return NULL;
	memcpy(c->name, name, n + 1);
	c->next = p->comms;
	p->comms = c;
	return c->name;
}

void iprof_comms_free(struct uw_prof *p)
{
	while (p->comms) {
		struct iprof_comm *c = p->comms;
		p->comms = c->next;
		free(c);
	}
}

struct drain {
	struct uw_prof *p;
	struct iprof_slot *sl;
	uint64_t now;
	bool this_gen;           /* only records of the tracker's generation */
};

static void add_sample(struct uw_prof *p, const struct uw_sample *smp)
{
	if (uw_profile_add(p->profile, smp))
		return;
	atomic_fetch_add_explicit(&p->unwound, 1, memory_order_relaxed);
	if (smp->stop_reason == UW_STOP_END_OF_STACK)
		atomic_fetch_add_explicit(&p->root, 1, memory_order_relaxed);
	if (smp->stop_reason < UW_STOP_MAX)
		atomic_fetch_add_explicit(&p->stops[smp->stop_reason], 1, memory_order_relaxed);
}

/* A thread's sample is held back until its next one, so that its last one can carry the
 * periods the thread ran after it (iprof_flush_pending). */
static void hold(struct uw_prof *p, struct iprof_slot *sl, const struct uw_sample *smp)
{
	if (sl->has_pend) {
		add_sample(p, &sl->pend);
		sl->has_pend = false;
	}
	if (smp->nr_user > sl->pend_cap) {
		struct uw_frame *f = realloc(sl->pend_frames, smp->nr_user * sizeof(*f));
		if (!f) {
			add_sample(p, smp);
			return;
		}
		sl->pend_frames = f;
		sl->pend_cap = smp->nr_user;
	}
	sl->pend = *smp;
	if (smp->nr_user)
		memcpy(sl->pend_frames, smp->user, smp->nr_user * sizeof(*sl->pend_frames));
	sl->pend.user = sl->pend_frames;
	sl->has_pend = true;
}

/* A "[lost samples: CAUSE]" sample of the slot's thread (uw_profile_add's UW_STOP_LOST: one
 * frame, no stack, named after its cause: enum uw_lost_cause), at time; its period is the
 * caller's. */
static struct uw_sample lost_sample(const struct uw_prof *p, const struct iprof_slot *sl, uint64_t time,
				    uint8_t cause)
{
	return (struct uw_sample){
		.sz = sizeof(struct uw_sample),
		.pid = (uint32_t)p->pid,
		.tid = (uint32_t)sl->tid,
		.time = time,
		.cpumode = 2, /* PERF_RECORD_MISC_USER */
		.stop_reason = UW_STOP_LOST,
		.comm = sl->comm,
		.event_name = p->o.clock == UW_PROF_WALL ? "wall-clock" : "cpu-clock",
		.lost_cause = cause,
	};
}

/* A lost sample into the profile, its periods counted by cause (uw_prof_stats.lost_periods) */
static int add_lost_sample(struct uw_prof *p, const struct uw_sample *smp)
{
	int e = uw_profile_add(p->profile, smp);
	if (!e && smp->lost_cause < UW_LOST__COUNT && p->period_ns)
		atomic_fetch_add(&p->lost_periods[smp->lost_cause], smp->period / p->period_ns);
	return e;
}

/* The slot's held sample into the profile, with the periods its thread ran after it; when it
 * has none, those periods are the "[lost samples]" frame's (registry lock held: the slot is
 * dead, its ring drained). The held sample's frames are freed. */
void iprof_flush_pending(struct uw_prof *p, struct iprof_slot *sl)
{
	uint64_t extra = sl->tail_periods * sl->period_ns;
	if (sl->has_pend) {
		sl->pend.period += extra;
		add_sample(p, &sl->pend);
	} else if (extra) {
		struct uw_sample smp = lost_sample(p, sl, iprof_now_ns(CLOCK_MONOTONIC), sl->tail_cause);
		smp.period = extra;
		if (!smp.comm && sl->end_comm[0])
			smp.comm = comm_intern(p, sl->end_comm);
		add_lost_sample(p, &smp);
	}
	iprof_drop_pending(sl);
}

/* Forgets the slot's held sample (none added) and frees its frames. */
void iprof_drop_pending(struct iprof_slot *sl)
{
	free(sl->pend_frames);
	sl->pend_frames = NULL;
	sl->pend_cap = 0;
	sl->has_pend = false;
}

static void unwind_one(struct uw_prof *p, struct iprof_slot *sl, const struct iprof_rec *rec, uint64_t now)
{
	uint64_t regs[IPROF_NREGS];
	unsigned k = 0;
	for (unsigned i = 0; i < IPROF_NREGS; i++)
		if (p->regs_mask >> i & 1)
			regs[k++] = rec->regs[i];
	struct uw_sample_regs in = {
		.sz = sizeof(in),
		.pid = (uint32_t)p->pid,
		.tid = (uint32_t)sl->tid,
		.time = UINT64_MAX,
		.abi = 2, /* PERF_SAMPLE_REGS_ABI_64 */
		.regs = regs,
		.regs_mask = p->regs_mask,
		.stack = rec + 1,
		.stack_size = rec->stack_size,
		.cpumode = rec->cpumode,
	};
	struct uw_unwind_result res = { .sz = sizeof(res) };
	if (uw_unwind_sample(p->t, &in, p->frames, p->o.max_frames, &res))
		return;
	/* a mapping changed by hand since the tracker learnt it (prof_maps.c): forgotten, and the
	 * sample unwound again against the kernel's; a frame that still does not match is left
	 * unnamed. (Only a sample of the present generation: one taken before a change the
	 * generation marks, the mmap interposer's, is unwound with the mappings of its time, which
	 * the kernel no longer shows.) */
	if (rec->gen == atomic_load(&iprof_g.gen) && !iprof_maps_verify(p, p->frames, res.nr_frames, false)) {
		p->maps_changed++;
		uint32_t gen = atomic_fetch_add(&iprof_g.gen, 1) + 1;
		if (!iprof_tracker_reset(p))
			p->tracker_gen = gen;
		p->nvmas = 0; /* (the modules checked were the old tracker's answers) */
		res = (struct uw_unwind_result){ .sz = sizeof(res) };
		if (uw_unwind_sample(p->t, &in, p->frames, p->o.max_frames, &res))
			return;
		iprof_maps_verify(p, p->frames, res.nr_frames, true);
	}
	char comm[16];
	memcpy(comm, rec->comm, sizeof(comm));
	comm[15] = 0;
	if (!sl->comm || strcmp(sl->comm, comm)) {
		const char *c = comm[0] ? comm_intern(p, comm) : NULL;
		if (c)
			sl->comm = c;
	}
	/* the profiler's own frames (a thread's start through the pthread_create trampoline, the
	 * dlclose and sigaction interposers) are not the program's */
	unsigned nf = 0;
	for (unsigned i = 0; i < res.nr_frames; i++)
		if (!p->self || p->frames[i].module != p->self)
			p->frames[nf++] = p->frames[i];
	struct uw_sample smp = {
		.sz = sizeof(smp),
		.pid = (uint32_t)p->pid,
		.tid = (uint32_t)sl->tid,
		.time = rec->time,
		.period = p->period_ns * (1 + (uint64_t)rec->overrun),
		.ip = rec->regs[8],
		.cpumode = 2, /* PERF_RECORD_MISC_USER */
		.stop_reason = (uint8_t)res.stop,
		.has_callchain = 1,
		.comm = sl->comm,
		.event_name = p->o.clock == UW_PROF_WALL ? "wall-clock" : "cpu-clock",
		.nr_user = nf,
		.user = p->frames,
		.user_ip = res.ip,
		.user_sp = res.sp,
		.user_fp = res.fp,
	};
	hold(p, sl, &smp);
	/* the main thread's stack grew below the mapping it had when it was registered: read it
	 * again (at most once a second), so that its copies are plain ones again */
	if (sl->main && rec->src == IPROF_STACK_KERNEL && now - p->main_stack_ns > 1000000000ull) {
		uintptr_t lo, hi;
		p->main_stack_ns = now;
		if (!iprof_main_stack(&lo, &hi) && hi == atomic_load(&sl->hi))
			atomic_store_explicit(&sl->lo, lo, memory_order_release);
	}
}

/* The samples a full ring dropped since the last pass, into the profile: one frame, "[lost
 * samples: ring full]", weighing their periods (uw_profile_add's UW_STOP_LOST), so that the profile's time
 * adds up to what was sampled and says what could not be unwound. */
static void add_lost(struct uw_prof *p, struct iprof_slot *sl, uint64_t now)
{
	uint64_t n = atomic_load_explicit(&sl->n_dropped, memory_order_acquire);
	uint64_t periods = atomic_load_explicit(&sl->n_dropped_periods, memory_order_relaxed);
	if (n == sl->lost_added)
		return;
	uint64_t dn = n - sl->lost_added, dp = periods - sl->lost_periods_added;
	sl->lost_added = n;
	sl->lost_periods_added = periods;
	struct uw_sample smp = lost_sample(p, sl, now, UW_LOST_RING_FULL);
	/* as many samples as were lost, the periods spread over them (the overruns on the last) */
	for (uint64_t i = 0; i < dn; i++) {
		smp.period = p->period_ns * (i + 1 < dn ? 1 : dp >= dn ? dp - (dn - 1) : 1);
		if (add_lost_sample(p, &smp))
			return;
	}
}

static bool on_rec(void *ctx, const struct iprof_rec *rec)
{
	struct drain *d = ctx;
	if (d->this_gen && rec->gen != d->p->tracker_gen)
		return false;
	unwind_one(d->p, d->sl, rec, d->now);
	return true;
}

/* one pass over every ring */
static void drain_all(struct uw_prof *p, uint64_t now)
{
	/* the slots with rings, and which of them were dead already (no handler writes there) */
	pthread_mutex_lock(&iprof_g.lock);
	struct iprof_slot *t = atomic_load(&iprof_g.tab);
	unsigned n = 0;
	for (unsigned i = 0; i < p->hwm; i++) {
		if (t[i].state == SLOT_FREE || !t[i].ring)
			continue;
		p->snap[n] = i;
		p->snap_dead[n] = t[i].state == SLOT_DEAD;
		n++;
	}
	pthread_mutex_unlock(&iprof_g.lock);
	struct drain d = { p, NULL, now, true };
	for (unsigned k = 0; k < n; k++) {
		d.sl = &t[p->snap[k]];
		iprof_ring_drain(d.sl->ring, on_rec, &d);
	}
	uint32_t gen = atomic_load(&iprof_g.gen);
	d.this_gen = false;
	if (gen != p->tracker_gen && !iprof_tracker_reset(p))
		p->tracker_gen = gen;
	for (unsigned k = 0; k < n; k++) {
		d.sl = &t[p->snap[k]];
		iprof_ring_drain(d.sl->ring, on_rec, &d);
		add_lost(p, d.sl, now);
	}
	pthread_mutex_lock(&iprof_g.lock);
	for (unsigned k = 0; k < n; k++)
		if (p->snap_dead[k])
			iprof_release_slot(p, &t[p->snap[k]]);
	pthread_mutex_unlock(&iprof_g.lock);
}

static void sync_answer(uint64_t req)
{
	pthread_mutex_lock(&iprof_g.sync_lock);
	if (iprof_g.sync_done < req)
		iprof_g.sync_done = req;
	pthread_cond_broadcast(&iprof_g.sync_cond);
	pthread_mutex_unlock(&iprof_g.sync_lock);
}

static void *collector_main(void *arg)
{
	struct uw_prof *p = arg;
	iprof_tls_internal = 1;
	/* Each wake-up costs (a sleep and a wake, tens of microseconds): it wakes when a ring is
	 * half full (its handler writes the eventfd), when dlclose or the stop asks, and otherwise
	 * once a scan period; waiting does not lose samples, a full ring would */
	unsigned poll_ms = p->o.scan_ms;
	uint32_t seen = atomic_load(&iprof_g.wake);
	for (;;) {
		bool stopping = atomic_load(&p->stopping);
		if (!stopping) {
			/* until the word moves on from what this pass began with, or the period ends */
			struct timespec ts = { (time_t)(poll_ms / 1000), (long)(poll_ms % 1000) * 1000000L };
			syscall(SYS_futex, &iprof_g.wake, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
			seen = atomic_load(&iprof_g.wake);
		}
		/* (no fork in the middle of a pass: prof.c) */
		pthread_mutex_lock(&iprof_g.work_lock);
		pthread_mutex_lock(&iprof_g.sync_lock);
		uint64_t req = iprof_g.sync_req;
		pthread_mutex_unlock(&iprof_g.sync_lock);
		uint64_t now = iprof_now_ns(CLOCK_MONOTONIC);
		if (!stopping && now >= p->next_scan_ns) {
			iprof_scan_threads(p, now);
			p->next_scan_ns = now + (uint64_t)p->o.scan_ms * 1000000u;
		}
		if (!stopping && now >= p->next_check_ns) {
			iprof_check_threads(p, now);
			iprof_handler_check(p);
			p->next_check_ns = now + 1000000000ull;
		}
		iprof_maps_check(p);
		drain_all(p, now);
		sync_answer(req);
		atomic_store(&p->collector_cpu_ns, iprof_now_ns(CLOCK_THREAD_CPUTIME_ID));
		pthread_mutex_unlock(&iprof_g.work_lock);
		if (stopping)
			break;
		/* the program's threads are all gone (main's pthread_exit waiting for the others):
		 * the process ends as with its last thread's pthread_exit, exit status 0, its exit
		 * handlers and destructors run (a preloaded profiler's writes the profile) */
		if (atomic_load(&p->alone))
			exit(0);
	}
	return NULL;
}

IPROF_NO_TSAN void iprof_wake(void)
{
	atomic_fetch_add_explicit(&iprof_g.wake, 1, memory_order_release);
	syscall(SYS_futex, &iprof_g.wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

int iprof_collector_start(struct uw_prof *p)
{
	p->snap = malloc(p->nslots * sizeof(*p->snap));
	p->snap_dead = malloc(p->nslots);
	if (!p->snap || !p->snap_dead)
		return -ENOMEM;
	atomic_store(&iprof_g.waking, 1);
	/* no signal is delivered to it (the program's process-wide signals go to its threads), and
	 * what it creates is internal (prof_threads.c) */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int saved = iprof_tls_internal;
	iprof_tls_internal = 1;
	int e = pthread_create(&p->collector, NULL, collector_main, p);
	iprof_tls_internal = saved;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e)
		return -e;
	/* seen as the profiler's in top, ps and a debugger (named before uw_prof_start returns) */
	pthread_setname_np(p->collector, "unwound-prof");
	p->collector_running = true;
	return 0;
}

void iprof_collector_stop(struct uw_prof *p)
{
	atomic_store(&p->stopping, 1);
	if (p->collector_running) {
		/* (from the collector itself: its exit(0) when the program's threads were gone; its
		 * last pass drained every ring) */
		if (!pthread_equal(pthread_self(), p->collector)) {
			iprof_wake();
			pthread_join(p->collector, NULL);
		}
		p->collector_running = false;
	}
	iprof_maps_close(p);
	atomic_store(&iprof_g.waking, 0);
	/* whoever waits for a pass: there will be none */
	pthread_mutex_lock(&iprof_g.sync_lock);
	iprof_g.sync_done = iprof_g.sync_req;
	pthread_cond_broadcast(&iprof_g.sync_cond);
	pthread_mutex_unlock(&iprof_g.sync_lock);
}

/* Waits (at most timeout_ms) until the collector has drained what was taken until now. */
void iprof_collector_sync(unsigned timeout_ms)
{
	if (iprof_tls_internal)
		return;
	pthread_mutex_lock(&iprof_g.lock);
	bool on = iprof_g.running && !iprof_g.forked && !atomic_load(&iprof_g.running->stopping);
	pthread_mutex_unlock(&iprof_g.lock);
	if (!on)
		return;
	pthread_mutex_lock(&iprof_g.sync_lock);
	uint64_t my = ++iprof_g.sync_req;
	pthread_mutex_unlock(&iprof_g.sync_lock);
	iprof_wake();
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	uint64_t ns = (uint64_t)dl.tv_nsec + (uint64_t)timeout_ms * 1000000u;
	dl.tv_sec += (time_t)(ns / 1000000000u);
	dl.tv_nsec = (long)(ns % 1000000000u);
	pthread_mutex_lock(&iprof_g.sync_lock);
	while (iprof_g.sync_done < my)
		if (pthread_cond_timedwait(&iprof_g.sync_cond, &iprof_g.sync_lock, &dl) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&iprof_g.sync_lock);
}
