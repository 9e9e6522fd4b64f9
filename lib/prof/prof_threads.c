/* SPDX-License-Identifier: MIT */
/*
 * Threads: the slot table, each thread's timer, how threads are found.
 *
 * A thread is sampled by a POSIX timer on its own clock (its CPU-time clock, or CLOCK_MONOTONIC
 * in wall-clock mode) whose signal goes to that thread alone (SIGEV_THREAD_ID), carrying the
 * slot's key. Threads are found two ways:
 *  - pthread_create is interposed (this library defines it, unversioned, so that it binds
 *    before glibc's versioned one in a preloaded or linked library): a thread created while a
 *    profiler runs registers itself before its start routine runs, with its exact stack bounds
 *    (pthread_getattr_np), and unregisters as it ends (a cleanup handler: return,
 *    pthread_exit and cancellation all run it);
 *  - the collector reads /proc/self/task every scan_ms: a thread not registered (it ran before
 *    the profiler started or the library was loaded, or was made by clone) gets a timer on its
 *    clock from there (CPU clock ids of other threads: MAKE_THREAD_CPUCLOCK, as glibc's
 *    pthread_getcpuclockid builds them); one gone from the list is let go. Its stack bounds are
 *    not known (the main thread's excepted: its mapping, found from the auxiliary vector): its
 *    stacks are copied by the kernel. Such a thread's first scan_ms go unsampled.
 * A tid reused within a scan is told apart: a CPU-time timer whose thread is gone reads back an
 * interval of zero (timer_gettime), and in wall-clock mode a slot that stopped receiving signals
 * has its thread's start time compared.
 */
#include <dirent.h>
#include <sys/stat.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "prof/iprof.h"

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

_Thread_local int iprof_tls_internal __attribute__((tls_model("initial-exec")));

static uint32_t key_gen; /* registry lock */

/* linux/posix-timers.h: a thread's scheduler CPU clock */
static clockid_t thread_cpu_clock(int tid)
{
	return (clockid_t)((~(unsigned)tid) << 3 | 4u /* PERTHREAD */ | 2u /* SCHED */);
}

int iprof_slots_init(void)
{
	if (atomic_load_explicit(&iprof_g.tab, memory_order_acquire))
		return 0;
	void *m = mmap(NULL, (size_t)IPROF_MAX_SLOTS * sizeof(struct iprof_slot), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return -ENOMEM;
	atomic_store_explicit(&iprof_g.tab, m, memory_order_release);
	return 0;
}

static struct iprof_slot *tab(void)
{
	return atomic_load_explicit(&iprof_g.tab, memory_order_acquire);
}

/* /proc/self/task/TID/stat's starttime (field 22), 0 when unreadable */
/* Field `field` (3: the state, 22: the start time) of /proc/self/task/TID/stat, into buf (the
 * rest of the line after it). @return it, or NULL. */
static const char *task_stat_field(int tid, unsigned field, char *buf, size_t cap)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	ssize_t n = read(fd, buf, cap - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	/* after the command's ") " (it may hold spaces and parentheses): field 3 first */
	char *c = strrchr(buf, ')');
	if (!c || c[1] != ' ')
		return NULL;
	c += 2;
	for (unsigned f = 3; f < field && c; f++)
		if ((c = strchr(c, ' ')))
			c++;
	return c && *c ? c : NULL;
}

static uint64_t start_ticks(int tid)
{
	char buf[512];
	const char *v = task_stat_field(tid, 22, buf, sizeof(buf));
	return v ? strtoull(v, NULL, 10) : 0;
}

/* The main thread's stack: the mapping holding the auxiliary vector's strings (AT_EXECFN points
 * into them, at the top of the stack). Stack mappings only grow down: a later, lower stack
 * pointer is copied by the kernel until the collector reads the mapping again. */
int iprof_main_stack(uintptr_t *lo, uintptr_t *hi)
{
	uintptr_t probe = (uintptr_t)getauxval(AT_EXECFN);
	if (!probe)
		probe = (uintptr_t)getauxval(AT_RANDOM);
	FILE *f = fopen("/proc/self/maps", "re");
	if (!f || !probe) {
		if (f)
			fclose(f);
		return -ENOENT;
	}
	char line[512];
	int found = -ENOENT;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, b;
		if (sscanf(line, "%llx-%llx", &a, &b) == 2 && probe >= a && probe < b) {
			*lo = (uintptr_t)a;
			*hi = (uintptr_t)b;
			found = 0;
			break;
		}
	}
	fclose(f);
	return found;
}

/* A free slot, taken for tid with a ring (registry lock held). */
static struct iprof_slot *slot_take(struct uw_prof *p, int tid)
{
	struct iprof_slot *t = tab();
	for (unsigned i = 0; i < p->nslots; i++) {
		struct iprof_slot *sl = &t[i];
		if (sl->state != SLOT_FREE)
			continue;
		struct iprof_ring *r = iprof_ring_new(p->ring_bytes);
		if (!r)
			return NULL;
		atomic_store_explicit(&sl->ring, r, memory_order_release);
		sl->tid = tid;
		sl->state = SLOT_ACTIVE;
		sl->has_timer = 0;
		sl->own = 0;
		sl->main = tid == p->pid;
		sl->start_ticks = 0;
		sl->period_ns = sl->cpu_first = sl->cpu_end = sl->tail_periods = 0;
		sl->has_pend = false;
		sl->comm = NULL;
		sl->last_sample_ns = sl->seen_samples = 0;
		atomic_store(&sl->lo, 0);
		atomic_store(&sl->hi, 0);
		atomic_store(&sl->n_samples, 0);
		atomic_store(&sl->n_dropped, 0);
		atomic_store(&sl->n_dropped_periods, 0);
		sl->lost_added = sl->lost_periods_added = 0;
		atomic_store(&sl->n_kernel_copy, 0);
		atomic_store(&sl->n_no_copy, 0);
		atomic_store(&sl->n_altstack, 0);
		atomic_store(&sl->n_overruns, 0);
		if (++key_gen == 0)
			key_gen = 1;
		atomic_store(&sl->key, IPROF_KEY(key_gen, i));
		if (i >= p->hwm)
			p->hwm = i + 1;
		return sl;
	}
	return NULL;
}

/* Waits out any handler inside the slot: live is cleared first (prof_signal.c says why this
 * is enough). */
void iprof_quiesce_slot(struct iprof_slot *sl)
{
	atomic_store(&sl->live, 0);
	while (atomic_load(&sl->busy))
		sched_yield();
}

/* A thread's CPU time in ns; 0 when it cannot be read (the thread is gone). */
static uint64_t thread_cpu_ns(int tid)
{
	struct timespec ts;
	if (clock_gettime(thread_cpu_clock(tid), &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A thread's name into name[16] ("" when it cannot be read). */
static void thread_name(int tid, char name[16])
{
	name[0] = 0;
	if (tid == iprof_gettid()) {
		if (prctl(PR_GET_NAME, name, 0, 0, 0))
			name[0] = 0;
		name[15] = 0;
		return;
	}
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, name, 15);
	close(fd);
	n = n < 0 ? 0 : n;
	while (n > 0 && name[n - 1] == '\n')
		n--;
	name[n] = 0;
}

/* Whether the thread blocks signo now (false when that cannot be read: it is gone). Its own
 * mask, or the kernel's SigBlk line of its status (a mask in hex, bit signo - 1). */
static bool signal_blocked(int tid, int signo)
{
	if (tid == iprof_gettid()) {
		sigset_t m;
		return !pthread_sigmask(SIG_BLOCK, NULL, &m) && sigismember(&m, signo) == 1;
	}
	char path[64], buf[2048];
	snprintf(path, sizeof(path), "/proc/self/task/%d/status", tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	const char *l = strstr(buf, "\nSigBlk:");
	if (!l)
		return false;
	unsigned long long m = strtoull(l + 9, NULL, 16);
	return signo >= 1 && signo <= 64 && (m >> (signo - 1) & 1);
}

/* The thread is gone or no longer sampled: its timer deleted, the handler kept out; the
 * collector drains the ring and frees the slot (registry lock held).
 *
 * A CPU-time timer's signal is sent from a tick that finds its thread running (the expiry is
 * noticed there), and each signal's overrun counts the periods since the one before, so that
 * the signals account for every period up to the last one exactly. After the last one, the
 * thread's periods are counted here from its clock: on a loaded machine, ticks may miss the
 * thread for hundreds of milliseconds of its CPU time, and they would be missing from the
 * profile. (The count errs low: cpu_first was read after the timer was armed.) A thread that is
 * already gone cannot be read: its last periods go uncounted. */
void iprof_kill_slot(struct iprof_slot *sl, uint8_t end)
{
	/* why no signal took the periods after its last one, said by the lost samples of a thread
	 * that had none: its signal blocked (as the worker threads of xz -T2 block every signal:
	 * their time was all "[lost samples]", nothing saying why), else it ended or the profiler
	 * stopped before a tick found it running. (Read while its timer still runs: the thread
	 * may unblock nothing after.) */
	sl->tail_cause = signal_blocked(sl->tid, iprof_g.signo) ? UW_LOST_SIGNALS_BLOCKED : end;
	if (sl->has_timer) {
		sl->cpu_end = sl->cpu_first ? thread_cpu_ns(sl->tid) : 0;
		timer_delete(sl->timer);
		sl->has_timer = 0;
	}
	iprof_quiesce_slot(sl);
	sl->state = SLOT_DEAD;
	sl->tail_periods = 0;
	if (sl->cpu_end >= sl->cpu_first && sl->cpu_first && sl->period_ns) {
		uint64_t due = (sl->cpu_end - sl->cpu_first) / sl->period_ns + 1;
		uint64_t got = atomic_load(&sl->n_samples) + atomic_load(&sl->n_overruns);
		sl->tail_periods = due > got ? due - got : 0;
	}
	/* (its name, for a thread that had no sample to take it from) */
	sl->end_comm[0] = 0;
	if (sl->tail_periods && !atomic_load(&sl->n_samples))
		thread_name(sl->tid, sl->end_comm);
}

/* The collector's part of a slot's end, after its last records were drained (registry lock
 * held): counters to the profiler's totals, the ring unmapped. */
void iprof_release_slot(struct uw_prof *p, struct iprof_slot *sl)
{
	if (sl->state == SLOT_ACTIVE)
		iprof_kill_slot(sl, UW_LOST_PROFILER_STOPPED);
	iprof_flush_pending(p, sl);
	p->f_samples += atomic_load(&sl->n_samples);
	p->f_dropped += atomic_load(&sl->n_dropped);
	p->f_kernel_copy += atomic_load(&sl->n_kernel_copy);
	p->f_no_copy += atomic_load(&sl->n_no_copy);
	p->f_altstack += atomic_load(&sl->n_altstack);
	p->f_overruns += atomic_load(&sl->n_overruns);
	p->f_tail += sl->tail_periods;
	atomic_store(&sl->key, 0);
	iprof_ring_free(sl->ring);
	sl->ring = NULL;
	sl->tid = 0;
	sl->state = SLOT_FREE;
}

static uint64_t rnd_state;

static uint64_t rnd(void)
{
	/* xorshift64*: spreads the threads' first expiries over one period */
	if (!rnd_state)
		rnd_state = iprof_now_ns(CLOCK_MONOTONIC) | 1;
	rnd_state ^= rnd_state >> 12;
	rnd_state ^= rnd_state << 25;
	rnd_state ^= rnd_state >> 27;
	return rnd_state * 2685821657736338717ull;
}

/* Its timer, armed (registry lock held). @return 0 or -errno (the slot is then released). */
static int slot_arm(struct uw_prof *p, struct iprof_slot *sl)
{
	struct sigevent sev;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = p->signo;
	sev.sigev_value.sival_ptr = (void *)(uintptr_t)atomic_load(&sl->key);
	sev.sigev_notify_thread_id = sl->tid;
	clockid_t clk = p->o.clock == UW_PROF_WALL ? CLOCK_MONOTONIC : thread_cpu_clock(sl->tid);
	if (timer_create(clk, &sev, &sl->timer)) {
		int e = -errno;
		/* (a thread found by a scan may be gone already: its clock is then invalid) */
		if ((e != -EINVAL && e != -ESRCH) || !syscall(SYS_tgkill, p->pid, sl->tid, 0))
			p->threads_refused++;
		iprof_release_slot(p, sl);
		return e;
	}
	sl->has_timer = 1;
	atomic_store(&sl->live, 1);
	struct itimerspec its;
	uint64_t first = 1 + rnd() % p->period_ns;
	its.it_interval.tv_sec = (time_t)(p->period_ns / 1000000000u);
	its.it_interval.tv_nsec = (long)(p->period_ns % 1000000000u);
	its.it_value.tv_sec = (time_t)(first / 1000000000u);
	its.it_value.tv_nsec = (long)(first % 1000000000u);
	if (timer_settime(sl->timer, 0, &its, NULL)) {
		int e = -errno;
		p->threads_refused++;
		iprof_release_slot(p, sl);
		return e;
	}
	/* (read after arming: the first expiry counted is no earlier than the kernel's) */
	uint64_t now = p->o.clock == UW_PROF_CPU ? thread_cpu_ns(sl->tid) : 0;
	sl->period_ns = p->period_ns;
	sl->cpu_first = now ? now + first : 0;
	p->threads++;
	return 0;
}

static struct iprof_slot *slot_of_tid(struct uw_prof *p, int tid)
{
	struct iprof_slot *t = tab();
	for (unsigned i = 0; i < p->hwm; i++)
		if (t[i].state == SLOT_ACTIVE && t[i].tid == tid)
			return &t[i];
	return NULL;
}

int iprof_gettid(void)
{
	return (int)syscall(SYS_gettid);
}

/* The calling thread, with its stack bounds. */
int iprof_register_self(uint64_t *key)
{
	int tid = iprof_gettid();
	uintptr_t lo = 0, hi = 0;
	if (tid == getpid()) {
		if (iprof_main_stack(&lo, &hi))
			lo = hi = 0;
	} else {
		pthread_attr_t attr;
		void *addr;
		size_t size;
		if (!pthread_getattr_np(pthread_self(), &attr)) {
			if (!pthread_attr_getstack(&attr, &addr, &size) && addr) {
				lo = (uintptr_t)addr;
				hi = lo + size;
			}
			pthread_attr_destroy(&attr);
		}
	}
	pthread_mutex_lock(&iprof_g.lock);
	int e = 0;
	struct uw_prof *p = iprof_g.running;
	if (!p || iprof_g.forked || atomic_load(&p->stopping)) {
		e = -ESRCH;
	} else {
		struct iprof_slot *sl = slot_of_tid(p, tid);
		if (sl) {
			/* found by a scan already: now with exact bounds */
			atomic_store_explicit(&sl->lo, lo, memory_order_release);
			atomic_store_explicit(&sl->hi, hi, memory_order_release);
			sl->own = 1;
		} else if (!(sl = slot_take(p, tid))) {
			p->threads_refused++;
			e = -EBUSY;
		} else {
			atomic_store_explicit(&sl->lo, lo, memory_order_release);
			atomic_store_explicit(&sl->hi, hi, memory_order_release);
			sl->own = 1;
			e = slot_arm(p, sl);
		}
		if (!e && key)
			*key = atomic_load(&sl->key);
	}
	pthread_mutex_unlock(&iprof_g.lock);
	return e;
}

void iprof_unregister_self(uint64_t key)
{
	struct iprof_slot *t = tab();
	if (!key || !t)
		return;
	pthread_mutex_lock(&iprof_g.lock);
	struct iprof_slot *sl = &t[IPROF_KEY_INDEX(key)];
	if (!iprof_g.forked && sl->state == SLOT_ACTIVE && atomic_load(&sl->key) == key)
		iprof_kill_slot(sl, UW_LOST_THREAD_ENDED);
	pthread_mutex_unlock(&iprof_g.lock);
}

bool iprof_is_internal(struct uw_prof *p, int tid)
{
	if (tid == p->collector_tid)
		return true;
	for (unsigned i = 0; i < p->ninternal; i++)
		if (p->internal[i] == tid)
			return true;
	return false;
}

void iprof_note_internal(int tid, bool add)
{
	pthread_mutex_lock(&iprof_g.lock);
	struct uw_prof *p = iprof_g.running;
	if (p && !iprof_g.forked) {
		if (add && p->ninternal < sizeof(p->internal) / sizeof(p->internal[0])) {
			p->internal[p->ninternal++] = tid;
		} else if (!add) {
			for (unsigned i = 0; i < p->ninternal; i++)
				if (p->internal[i] == tid)
					p->internal[i] = p->internal[--p->ninternal];
		}
	}
	pthread_mutex_unlock(&iprof_g.lock);
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* The threads of /proc/self/task, sorted; *n of them. NULL when it cannot be read. The
 * directory stays open between scans (rewound): opening it costs more than reading it. */
static int *list_tasks(struct uw_prof *p, size_t *n)
{
	DIR *d = p->task_dir;
	/* the program closed its descriptor (a daemon's loop over every descriptor), perhaps
	 * opened a file of its own at that number: let go of it, closing nothing of the program's
	 * (the DIR's memory is left) */
	if (d && !base_fd_is(dirfd(d), p->task_dev, p->task_ino)) {
		p->task_dir = d = NULL;
	}
	if (d) {
		rewinddir(d);
	} else {
		if (!(d = p->task_dir = opendir("/proc/self/task")))
			return NULL;
		base_fd_identity(dirfd(d), &p->task_dev, &p->task_ino);
	}
	size_t cap = 64, k = 0;
	int *v = malloc(cap * sizeof(*v));
	struct dirent *de;
	while (v && (de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		if (k == cap) {
			int *nv = realloc(v, 2 * cap * sizeof(*v));
			if (!nv) {
				free(v);
				v = NULL;
				break;
			}
			v = nv;
			cap *= 2;
		}
		v[k++] = atoi(de->d_name);
	}
	if (v)
		qsort(v, k, sizeof(*v), cmp_int);
	*n = k;
	return v;
}

/* A task's state letter, or 0. */
static char task_state(int tid)
{
	char buf[512];
	const char *v = task_stat_field(tid, 3, buf, sizeof(buf));
	return v ? *v : 0;
}

/* Only the library's threads live: the main thread has called pthread_exit (a zombie until the
 * process ends) and every other thread of the program has ended. The kernel ends a process with
 * its last thread; the library's would keep it alive for ever (registry lock held). */
static bool program_gone(struct uw_prof *p, const int *tids, size_t n)
{
	int pid = getpid();
	char st = task_state(pid);
	if (st != 'Z' && st != 'X')
		return false;
	for (size_t k = 0; k < n; k++) {
		if (tids[k] == pid || iprof_is_internal(p, tids[k]))
			continue;
		st = task_state(tids[k]);
		if (st && st != 'Z' && st != 'X')
			return false;
	}
	return true;
}

void iprof_scan_threads(struct uw_prof *p, uint64_t now_ns)
{
	size_t n = 0;
	int *tids = list_tasks(p, &n);
	if (!tids)
		return;
	/* read outside the lock: start times of threads about to be registered */
	pthread_mutex_lock(&iprof_g.lock);
	struct iprof_slot *t = tab();
	/* threads gone */
	char *known = calloc(n ? n : 1, 1);
	for (unsigned i = 0; known && i < p->hwm; i++) {
		struct iprof_slot *sl = &t[i];
		if (sl->state != SLOT_ACTIVE)
			continue;
		int *hit = bsearch(&sl->tid, tids, n, sizeof(*tids), cmp_int);
		if (!hit)
			iprof_kill_slot(sl, UW_LOST_THREAD_ENDED);
		else
			known[hit - tids] = 1;
	}
	/* threads new */
	for (size_t k = 0; known && k < n && !atomic_load(&p->stopping); k++) {
		if (known[k] || iprof_is_internal(p, tids[k]))
			continue;
		struct iprof_slot *sl = slot_take(p, tids[k]);
		if (!sl) {
			p->threads_refused++;
			break;
		}
		if (sl->main) {
			uintptr_t lo, hi;
			if (!iprof_main_stack(&lo, &hi)) {
				atomic_store_explicit(&sl->lo, lo, memory_order_release);
				atomic_store_explicit(&sl->hi, hi, memory_order_release);
			}
		}
		if (p->o.clock == UW_PROF_WALL)
			sl->start_ticks = start_ticks(sl->tid);
		sl->last_sample_ns = now_ns;
		slot_arm(p, sl);
	}
	if (program_gone(p, tids, n))
		atomic_store(&p->alone, 1);
	pthread_mutex_unlock(&iprof_g.lock);
	free(known);
	free(tids);
}

/* Threads found by scans whose tid may have been reused since (about once a second). */
void iprof_check_threads(struct uw_prof *p, uint64_t now_ns)
{
	pthread_mutex_lock(&iprof_g.lock);
	struct iprof_slot *t = tab();
	for (unsigned i = 0; i < p->hwm; i++) {
		struct iprof_slot *sl = &t[i];
		if (sl->state != SLOT_ACTIVE || !sl->has_timer)
			continue;
		uint64_t ns = atomic_load(&sl->n_samples);
		bool silent = ns == sl->seen_samples;
		sl->seen_samples = ns;
		if (!silent)
			sl->last_sample_ns = now_ns;
		if (p->o.clock == UW_PROF_CPU) {
			/* a CPU-time timer of a thread that is gone reads back no interval (a thread
			 * that registered itself and ended without its cleanup: raw SYS_exit) */
			struct itimerspec its;
			if (silent && !timer_gettime(sl->timer, &its) && !its.it_interval.tv_sec &&
			    !its.it_interval.tv_nsec)
				iprof_kill_slot(sl, UW_LOST_THREAD_ENDED);
		} else if (silent && now_ns - sl->last_sample_ns > 1000000000ull) {
			uint64_t st = start_ticks(sl->tid);
			if (!sl->start_ticks)
				sl->start_ticks = st;
			else if (st != sl->start_ticks)
				iprof_kill_slot(sl, UW_LOST_THREAD_ENDED);
			sl->last_sample_ns = now_ns;
		}
	}
	pthread_mutex_unlock(&iprof_g.lock);
}

/* ---- pthread_create, interposed */

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

IPROF_NO_SANITIZE static create_fn real_create(void)
{
	static _Atomic(create_fn) real;
	create_fn f = atomic_load_explicit(&real, memory_order_acquire);
	if (!f) {
		f = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
		atomic_store_explicit(&real, f, memory_order_release);
	}
	return f;
}

struct tramp {
	void *(*fn)(void *);
	void *arg;
	int internal;
};

static void tramp_end(void *arg)
{
	iprof_unregister_self((uint64_t)(uintptr_t)arg);
}

static void internal_end(void *arg)
{
	(void)arg;
	iprof_note_internal(iprof_gettid(), false);
}

static void *tramp_main(void *v)
{
	struct tramp t = *(struct tramp *)v;
	free(v);
	void *ret;
	if (t.internal) {
		/* a thread of the collector's (libunwound's helpers): never sampled */
		iprof_tls_internal = 1;
		iprof_note_internal(iprof_gettid(), true);
		pthread_cleanup_push(internal_end, NULL);
		ret = t.fn(t.arg);
		pthread_cleanup_pop(1);
		return ret;
	}
	uint64_t key = 0;
	iprof_register_self(&key);
	pthread_cleanup_push(tramp_end, (void *)(uintptr_t)key);
	ret = t.fn(t.arg);
	pthread_cleanup_pop(1);
	return ret;
}

/* The interposer's C name is prof_pthread_create; the asm label gives it the symbol
 * pthread_create, which the program's references (and libunwound's own, through the PLT) bind to.
 * A C function named pthread_create would read as the definition every call in lib/ reaches. */
IPROF_NO_SANITIZE __attribute__((visibility("default"))) int
prof_pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
	__asm__("pthread_create");

IPROF_NO_SANITIZE int prof_pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	create_fn real = real_create();
	if (!real)
		return EAGAIN;
	/* Under ThreadSanitizer, whose pthread_create comes first and calls this one with its own
	 * start routine, a trampoline would run before that routine has set the thread up for it:
	 * threads are then found by the scans. */
	static _Atomic int tsan = -1;
	if (atomic_load_explicit(&tsan, memory_order_relaxed) < 0)
		atomic_store(&tsan, dlsym(RTLD_DEFAULT, "__tsan_init") != NULL);
	if (atomic_load_explicit(&tsan, memory_order_relaxed))
		return real(th, attr, fn, arg);
	pthread_mutex_lock(&iprof_g.lock);
	bool on = !iprof_g.forked && iprof_g.running && !atomic_load(&iprof_g.running->stopping);
	pthread_mutex_unlock(&iprof_g.lock);
	if (!on)
		return real(th, attr, fn, arg);
	struct tramp *t = malloc(sizeof(*t));
	if (!t)
		return real(th, attr, fn, arg);
	*t = (struct tramp){ fn, arg, iprof_tls_internal };
	int e = real(th, attr, tramp_main, t);
	if (e)
		free(t);
	return e;
}
