/* SPDX-License-Identifier: MIT */
/*
 * The public calls of libunwound-prof (uw_prof_*): a profiler's start and stop, its counts,
 * its output; and fork.
 *
 * Fork: POSIX timers are not inherited, nor the collector thread. The child stops: the
 * registry's lock is held across fork (pthread_atfork) so that the child's copy is consistent,
 * and so is the collector's (a fork waits for the end of its pass: the collector never holds an
 * allocator's lock at the fork, which the child would wait for forever where the allocator does
 * not take its locks across fork, as GCC 12's AddressSanitizer does not),
 * and the child marks everything inert (no thread registers, dlclose waits for nobody, the
 * handler finds no live slot). Its copy of the parent's profiler is left as it is (uw_prof_stop
 * and uw_prof_free do nothing there: the collector's locks may have been held at the fork). A
 * new profiler may be started in the child: the parent's slots are then cleared.
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "prof/iprof.h"

/* ---- fork */

static void fork_prepare(void)
{
	pthread_mutex_lock(&iprof_g.work_lock);
	pthread_mutex_lock(&iprof_g.lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&iprof_g.lock);
	pthread_mutex_unlock(&iprof_g.work_lock);
}

static void fork_child(void)
{
	iprof_g.forked = true;
	atomic_store(&iprof_g.waking, 0);
	pthread_mutex_unlock(&iprof_g.lock);
	pthread_mutex_unlock(&iprof_g.work_lock);
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void atfork_register(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* In a child of fork that starts a profiler of its own: the parent's slots are dropped (no
 * timer of the child refers to them). Registry lock held. */
static void forget_parent(void)
{
	struct iprof_slot *t = atomic_load(&iprof_g.tab);
	for (unsigned i = 0; t && i < IPROF_MAX_SLOTS; i++) {
		if (t[i].state == SLOT_FREE && !t[i].ring)
			continue;
		atomic_store(&t[i].live, 0);
		atomic_store(&t[i].key, 0);
		iprof_ring_free(t[i].ring);
		t[i].ring = NULL;
		iprof_drop_pending(&t[i]);
		t[i].state = SLOT_FREE;
		t[i].has_timer = 0;
	}
	iprof_g.running = NULL;
	iprof_g.forked = false;
	pthread_mutex_lock(&iprof_g.sync_lock);
	iprof_g.sync_done = iprof_g.sync_req;
	pthread_mutex_unlock(&iprof_g.sync_lock);
}

/* ---- options */

/* The caller's options, as far as its size says; a larger struct must be zero past ours. */
static int opts_take(struct uw_prof_opts *o, const struct uw_prof_opts *in)
{
	memset(o, 0, sizeof(*o));
	if (!in)
		return 0;
	if (in->sz < sizeof(size_t))
		return -EINVAL;
	size_t ours = offsetof(struct uw_prof_opts, session) + sizeof(o->session);
	if (in->sz > ours) {
		for (size_t i = ours; i < in->sz; i++)
			if (((const unsigned char *)in)[i])
				return -EINVAL;
	}
	memcpy(o, in, in->sz < ours ? in->sz : ours);
	return 0;
}

static uint64_t pow2_at_least(uint64_t v)
{
	uint64_t r = 1;
	while (r < v)
		r <<= 1;
	return r;
}

static int opts_check(struct uw_prof_opts *o)
{
	if (!o->hz)
		o->hz = 99;
	if (!o->signal)
		o->signal = SIGPROF;
	if (!o->stack_bytes)
		o->stack_bytes = 16384;
	if (!o->max_threads)
		o->max_threads = 4096;
	if (!o->max_frames)
		o->max_frames = 1024;
	if (!o->scan_ms)
		o->scan_ms = 250;
	/* (not SIGKILL, SIGSTOP, nor a signal the kernel sends for a fault: a program's crash in
	 * that signal would be taken for another's signal, and the faulting instruction run again) */
	if (o->signal == SIGSEGV || o->signal == SIGBUS || o->signal == SIGILL || o->signal == SIGFPE ||
	    o->signal == SIGTRAP || o->signal == SIGSYS)
		return -EINVAL;
	if (o->hz > 10000 || o->signal < 1 || o->signal > 64 || o->signal == SIGKILL || o->signal == SIGSTOP ||
	    o->stack_bytes < 512 || o->stack_bytes > 262144 || o->max_threads > IPROF_MAX_SLOTS ||
	    o->max_frames > 4096 || o->ring_bytes > (256u << 20) || (o->clock != UW_PROF_CPU && o->clock != UW_PROF_WALL) ||
	    (o->format != UW_PROF_AUTO && o->format != UW_PROF_PPROF && o->format != UW_PROF_FOLDED))
		return -EINVAL;
	o->stack_bytes = (o->stack_bytes + 7) & ~7u;
	return 0;
}

/* ---- start and stop */

/* every slot let go (registry lock held) */
static void release_all(struct uw_prof *p)
{
	struct iprof_slot *t = atomic_load(&iprof_g.tab);
	for (unsigned i = 0; t && i < p->hwm; i++)
		if (t[i].state != SLOT_FREE)
			iprof_release_slot(p, &t[i]);
}

static void kill_all(struct uw_prof *p)
{
	struct iprof_slot *t = atomic_load(&iprof_g.tab);
	for (unsigned i = 0; t && i < p->hwm; i++) {
		struct iprof_slot *sl = &t[i];
		if (sl->state == SLOT_ACTIVE)
			iprof_kill_slot(sl, UW_LOST_PROFILER_STOPPED);
	}
}

static void iprof_destroy(struct uw_prof *p)
{
	uw_profile_free(p->profile);
	uw_tracker_free(p->t);
	if (p->own_session)
		uw_session_free(p->s);
	if (p->task_dir && base_fd_is(dirfd(p->task_dir), p->task_dev, p->task_ino))
		closedir(p->task_dir);
	iprof_comms_free(p);
	free(p->frames);
	free(p->snap);
	free(p->snap_dead);
	free(p->output);
	free(p);
}

UW_API struct uw_prof *uw_prof_start(const struct uw_prof_opts *opts)
{
	struct uw_prof_opts o;
	int e = opts_take(&o, opts);
	if (!e)
		e = opts_check(&o);
	if (e) {
		errno = -e;
		return NULL;
	}
	uint64_t mask = uw_regs_mask(UW_ARCH_X86_64);
	if (!mask || mask >> IPROF_NREGS) {
		errno = ENOTSUP;
		return NULL;
	}
	struct uw_prof *p = calloc(1, sizeof(*p));
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	p->o = o;
	p->regs_mask = mask;
	p->period_ns = 1000000000ull / o.hz;
	p->pid = getpid();
	p->signo = o.signal;
	p->nslots = o.max_threads;
	uint64_t rec_max = sizeof(struct iprof_rec) + o.stack_bytes;
	p->ring_bytes = pow2_at_least(!o.ring_bytes ? 4 * rec_max : o.ring_bytes > 2 * rec_max ? o.ring_bytes : 2 * rec_max);
	if (p->ring_bytes < 65536)
		p->ring_bytes = 65536;
	p->o.output = NULL;
	if (o.output && !(p->output = strdup(o.output)))
		goto nomem;
	p->frames = calloc(o.max_frames, sizeof(*p->frames));
	if (!p->frames)
		goto nomem;
	if (o.session) {
		p->s = o.session;
	} else {
		/* offline (a profiled program fetches nothing of its own accord), no helper thread;
		 * the DWARF cache as the CLI uses it: naming frames at the stop inflates compressed
		 * debug files (20 ms for libc's here), which the next run then maps */
		UW_OPTS(uw_session_opts, so, .max_frames = o.max_frames, .offline = 1, .sync_symbols = 1);
		p->s = uw_session_new(&so);
		p->own_session = true;
		if (!p->s)
			goto fail_errno;
	}
	UW_OPTS(uw_profile_opts, po, .by_thread = o.by_thread);
	p->profile = uw_profile_new(p->s, &po);
	if (!p->profile)
		goto fail_errno;
	e = iprof_tracker_reset(p);
	if (e) {
		errno = -e;
		goto fail;
	}
	uw_tracker_lookup(p->t, (uint32_t)p->pid, (uint64_t)(uintptr_t)&iprof_handler, &p->self, NULL);
	p->start_wall_ns = iprof_now_ns(CLOCK_REALTIME);
	p->start_mono_ns = iprof_now_ns(CLOCK_MONOTONIC);
	pthread_once(&atfork_once, atfork_register);

	pthread_mutex_lock(&iprof_g.lock);
	if (iprof_g.forked)
		forget_parent();
	if (iprof_g.running) {
		pthread_mutex_unlock(&iprof_g.lock);
		errno = EBUSY;
		goto fail;
	}
	e = iprof_slots_init();
	if (!e)
		e = iprof_install_handler(p->signo);
	if (e) {
		pthread_mutex_unlock(&iprof_g.lock);
		errno = -e;
		goto fail;
	}
	atomic_store(&iprof_g.stack_bytes, o.stack_bytes);
	atomic_store(&iprof_g.pid, p->pid);
	iprof_g.signo = p->signo;
	p->foreign0 = atomic_load(&iprof_g.foreign);
	p->stale0 = atomic_load(&iprof_g.stale);
	iprof_g.running = p;
	pthread_mutex_unlock(&iprof_g.lock);

	/* the loaded objects now: a later change is a dlopen or dlclose */
	iprof_maps_check(p);
	p->tracker_gen = atomic_load(&iprof_g.gen);
	e = iprof_collector_start(p);
	if (e) {
		pthread_mutex_lock(&iprof_g.lock);
		atomic_store(&p->stopping, 1);
		kill_all(p);
		release_all(p);
		iprof_g.running = NULL;
		pthread_mutex_unlock(&iprof_g.lock);
		iprof_collector_stop(p);
		errno = -e;
		goto fail;
	}
	/* the calling thread now, with its exact bounds; the others at the collector's first scan */
	iprof_register_self(NULL);
	return p;

nomem:
	errno = ENOMEM;
	goto fail;
fail_errno:
	if (!errno)
		errno = ENOMEM;
fail:
	e = errno;
	iprof_destroy(p);
	errno = e;
	return NULL;
}

UW_API int uw_prof_stop(struct uw_prof *p)
{
	if (!p)
		return -EINVAL;
	if (p->stopped)
		return 0;
	pthread_mutex_lock(&iprof_g.lock);
	if (iprof_g.forked || iprof_g.running != p) {
		/* a child's copy of its parent's profiler */
		p->forked_off = 1;
		p->stopped = true;
		pthread_mutex_unlock(&iprof_g.lock);
		return 0;
	}
	atomic_store(&p->stopping, 1);
	kill_all(p);
	pthread_mutex_unlock(&iprof_g.lock);
	/* its last pass drains every ring and frees the slots */
	iprof_collector_stop(p);
	pthread_mutex_lock(&iprof_g.lock);
	release_all(p);
	iprof_g.running = NULL;
	pthread_mutex_unlock(&iprof_g.lock);
	p->stop_mono_ns = iprof_now_ns(CLOCK_MONOTONIC);
	p->stopped = true;
	if (p->output)
		p->stop_err = uw_prof_write(p, p->output, p->o.format);
	return p->stop_err;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && !strcmp(s + n - k, suffix);
}

UW_API int uw_prof_write(struct uw_prof *p, const char *path, int format)
{
	if (!p || !path || !p->stopped || p->forked_off)
		return -EINVAL;
	if (format == UW_PROF_AUTO)
		format = ends_with(path, ".folded") || ends_with(path, ".collapsed") ? UW_PROF_FOLDED : UW_PROF_PPROF;
	if (format != UW_PROF_PPROF && format != UW_PROF_FOLDED)
		return -EINVAL;
	int fd = uw_output_create(path, 0644);
	if (fd < 0)
		return fd;
	FILE *f = fdopen(fd, "w");
	if (!f) {
		int e = -errno;
		close(fd);
		return e;
	}
	int e;
	if (format == UW_PROF_FOLDED) {
		e = uw_profile_write_folded(p->profile, f);
	} else {
		/* the lost samples' causes, said in the profile too (go tool pprof -comments): a
		 * program that closes its standard error (xz does, at exit) leaves no other trace */
		static const char *const text[UW_LOST__COUNT] = {
			[UW_LOST_UNSTATED] = "unstated",
			[UW_LOST_RING_FULL] = "ring full (the profiler's thread fell behind)",
			[UW_LOST_SIGNALS_BLOCKED] = "signals blocked (threads that ran it blocked the profiler's signal)",
			[UW_LOST_THREAD_ENDED] = "thread ended (it ran after its last signal, or ended before its first)",
			[UW_LOST_PROFILER_STOPPED] = "profiler stopped (it ran after its thread's last signal)",
		};
		char lines[UW_LOST__COUNT][192];
		const char *comments[UW_LOST__COUNT];
		size_t nc = 0;
		for (unsigned i = 0; i < UW_LOST__COUNT; i++) {
			uint64_t n = atomic_load(&p->lost_periods[i]);
			if (!n)
				continue;
			snprintf(lines[nc], sizeof(lines[nc]), "lost samples: %.3f s (%" PRIu64 " periods): %s",
				 (double)n * (double)p->period_ns * 1e-9, n, text[i]);
			comments[nc] = lines[nc];
			nc++;
		}
		UW_OPTS(uw_pprof_opts, po, .time_nanos = p->start_wall_ns,
			.duration_nanos = p->stop_mono_ns - p->start_mono_ns, .comments = comments, .nr_comments = nc);
		e = uw_profile_write_pprof(p->profile, f, &po);
	}
	if (fclose(f) && !e)
		e = -errno;
	return e;
}

UW_API struct uw_profile *uw_prof_profile(struct uw_prof *p)
{
	return p && p->stopped && !p->forked_off ? p->profile : NULL;
}

UW_API int uw_prof_stats(struct uw_prof *p, struct uw_prof_stats *st)
{
	if (!p || !st || st->sz < sizeof(size_t))
		return -EINVAL;
	struct uw_prof_stats s;
	memset(&s, 0, sizeof(s));
	pthread_mutex_lock(&iprof_g.lock);
	s.samples = p->f_samples;
	s.dropped = p->f_dropped;
	s.stack_copied_by_kernel = p->f_kernel_copy;
	s.stack_not_copied = p->f_no_copy;
	s.on_altstack = p->f_altstack;
	s.overruns = p->f_overruns;
	s.periods_after_last = p->f_tail;
	struct iprof_slot *t = atomic_load(&iprof_g.tab);
	if (iprof_g.running == p && !iprof_g.forked) {
		for (unsigned i = 0; t && i < p->hwm; i++) {
			struct iprof_slot *sl = &t[i];
			if (sl->state == SLOT_FREE)
				continue;
			s.samples += atomic_load(&sl->n_samples);
			s.dropped += atomic_load(&sl->n_dropped);
			s.stack_copied_by_kernel += atomic_load(&sl->n_kernel_copy);
			s.stack_not_copied += atomic_load(&sl->n_no_copy);
			s.on_altstack += atomic_load(&sl->n_altstack);
			s.overruns += atomic_load(&sl->n_overruns);
			if (sl->state == SLOT_DEAD)
				s.periods_after_last += sl->tail_periods;
			if (sl->state == SLOT_ACTIVE)
				s.threads_now++;
		}
	}
	s.threads = p->threads;
	s.threads_refused = p->threads_refused;
	pthread_mutex_unlock(&iprof_g.lock);
	s.samples_unwound = atomic_load(&p->unwound);
	s.samples_root = atomic_load(&p->root);
	s.foreign_signals = atomic_load(&iprof_g.foreign) - p->foreign0;
	s.stale_signals = atomic_load(&iprof_g.stale) - p->stale0;
	s.map_resets = atomic_load(&p->map_resets);
	s.handler_replaced = (uint64_t)atomic_load(&p->handler_replaced);
	s.collector_cpu_ns = atomic_load(&p->collector_cpu_ns);
	for (unsigned i = 0; i < UW_STOP_MAX; i++)
		s.stop_reasons[i] = atomic_load(&p->stops[i]);
	_Static_assert(UW_LOST__COUNT <= sizeof(s.lost_periods) / sizeof(s.lost_periods[0]), "lost causes");
	for (unsigned i = 0; i < UW_LOST__COUNT; i++)
		s.lost_periods[i] = atomic_load(&p->lost_periods[i]);
	size_t sz = st->sz;
	memcpy(st, &s, sz < sizeof(s) ? sz : sizeof(s));
	st->sz = sz;
	return 0;
}

UW_API int uw_prof_register_thread(void)
{
	return iprof_register_self(NULL);
}

UW_API void uw_prof_free(struct uw_prof *p)
{
	if (!p)
		return;
	if (!p->stopped) {
		free(p->output);
		p->output = NULL;
		uw_prof_stop(p);
	}
	if (p->forked_off)
		return; /* a child's copy: its locks may be held by threads that are not here */
	iprof_destroy(p);
}
