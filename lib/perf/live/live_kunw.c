/* SPDX-License-Identifier: MIT */
/*
 * Live recording with kernel unwinding (lib/kernel, docs/kernel-unwind.md): the program is
 * attached to every sampling event, its records are pushed into the reader as PR_UW_KUNW
 * records (time-ordered with the side-band, reader_kunw.c), and its maps are fed as fast as
 * the records allow:
 *
 *  - a process's executable mappings are kept as its records are read from the rings
 *    (live_kunw_read: MMAP/MMAP2 of code, COMM with exec, FORK of a process), before the reader
 *    orders and delivers them, and loaded at the next update; once the tracker has been
 *    delivered as many of its records as were read, the tracker's mappings vouch for the load
 *    or replace it; a process the records never told of (a hand-over for want of its mappings)
 *    is loaded from the tracker; dropped at its delivered EXIT;
 *  - a module's table is built on the builder thread (whole, from its files; a file built
 *    already under another module is not built again) when a process first maps it, loaded
 *    by the loop once built (an eventfd in the loop's poll), and kept loaded while the cap
 *    allows: a table no load names is dropped, oldest first, only to make room;
 *  - a mapping is loaded only with its module's table (else the walk hands the stack over
 *    there, as while the table is being built), anonymous executable memory (JIT code) as
 *    module 0 (frame pointers, as user space unwinds it);
 *  - the swaps into the program's maps are batched on lib/kernel's committer thread (each
 *    map-in-map update waits for an RCU grace period);
 *  - for 150 ms after a program starts, the loop goes round every 2 ms (a timerfd in its poll):
 *    the dynamic linker's mappings are read as they come, not when the rings fill.
 *
 * Generations: each load of a process's mappings has a generation, which the records of walks
 * that used it carry; the process's version counts the mapping changes delivered. A sample
 * delivered while the version is still the one its load was vouched for at used the mappings
 * the tracker has; else (a load from records read ahead, or mappings changed since) each frame
 * the kernel stepped from is checked against the mappings the tracker has at the sample's
 * time, and the stack is cut after the first that differs (never a wrong stack).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "perf/live/live.h"
#include "perf/read/reader.h"
#include "kernel/kunw.h"

UW_API int uw_kernel_unwind_built(void)
{
#ifdef UW_HAVE_KERNEL_UNWIND
	return 1;
#else
	return 0;
#endif
}

#ifndef UW_HAVE_KERNEL_UNWIND

int live_kunw_open(const struct live_kunw_conf *c, struct live_kunw **out, char *why, size_t len)
{
	(void)c;
	*out = NULL;
	snprintf(why, len, "not compiled in (the build had no libbpf, clang BPF target, bpftool or kernel BTF)");
	return -EOPNOTSUPP;
}
int live_kunw_attach(struct live_kunw *lk, int fd, bool sw)
{
	(void)lk;
	(void)fd;
	(void)sw;
	return -EOPNOTSUPP;
}
int live_kunw_load(const struct live_kunw_conf *c, struct live_kunw_loading **out, char *why, size_t len)
{
	(void)c;
	*out = NULL;
	snprintf(why, len, "not compiled in (the build had no libbpf, clang BPF target, bpftool or kernel BTF)");
	return -EOPNOTSUPP;
}
int live_kunw_loading_fd(const struct live_kunw_loading *ld)
{
	(void)ld;
	return -1;
}
int live_kunw_loading_take(struct live_kunw_loading *ld, struct live_kunw **out, uint64_t *ns, char *why, size_t len)
{
	(void)ld;
	(void)ns;
	*out = NULL;
	snprintf(why, len, "not compiled in");
	return -EOPNOTSUPP;
}
void live_kunw_loading_cancel(struct live_kunw_loading *ld)
{
	(void)ld;
}
void live_kunw_late_start(struct live_kunw *lk)
{
	(void)lk;
}
void live_kunw_start(struct live_kunw *lk, struct uw_reader *r)
{
	(void)lk;
	(void)r;
}
void live_kunw_ids(struct live_kunw *lk, uint64_t id, uint64_t sw_id, unsigned sw_attr)
{
	(void)lk;
	(void)id;
	(void)sw_id;
	(void)sw_attr;
}

bool live_kunw_event_ids(const struct live_kunw *lk)
{
	(void)lk;
	return false;
}

int live_kunw_fd(const struct live_kunw *lk)
{
	(void)lk;
	return -1;
}
struct kunw *live_kunw_handle(struct live_kunw *lk)
{
	(void)lk;
	return NULL;
}
int live_kunw_prime(struct live_kunw *lk, uint64_t timeout_ns)
{
	(void)lk;
	(void)timeout_ns;
	return 0;
}
int live_kunw_drain(struct live_kunw *lk)
{
	(void)lk;
	return 0;
}
void live_kunw_read(struct live_kunw *lk, const uint8_t *rec, uint32_t len)
{
	(void)lk;
	(void)rec;
	(void)len;
}
int live_kunw_update(struct live_kunw *lk)
{
	(void)lk;
	return 0;
}
void live_kunw_status(struct live_kunw *lk, struct uw_record_status *st)
{
	(void)lk;
	(void)st;
}
void live_kunw_stats(struct live_kunw *lk, struct uw_kernel_unwind_stats *st)
{
	(void)lk;
	(void)st;
}
void live_kunw_close(struct live_kunw *lk)
{
	(void)lk;
}

#else

#define HIST 16                 /* loads of a process's mappings kept for checking records */
#define VER_UNCHECKED UINT64_MAX /* a load made from records read, not yet delivered */

enum { KM_NEW, KM_QUEUED, KM_BUILT, KM_FAILED };

struct kmod {
	struct uw_module *m;
	uint32_t id;
	uint32_t refs;          /* loads of processes' mappings that name it */
	uint8_t state;          /* KM_*: the builder's (KM_QUEUED) until it hands it back */
	bool loaded;            /* its table is in the program's map */
	bool fresh;             /* built since the last update */
	bool urgent;            /* moved to the builder's queue's head once (builder_urgent) */
	uint64_t idle_since;    /* loaded, named by no load: when it became so (the eviction order) */
	unsigned letgo;         /* times its table was let go for room (evicted, or not kept) */
	uint64_t retry_after;   /* CLOCK_MONOTONIC ns: not built again before (1 s, doubling) */
	struct kunw_table tbl;  /* built and not loaded (the cap refused it): kept to load later */
	uint32_t nrows;
	uint64_t bytes;
	struct elfv_seg *segs;  /* its PT_LOADs (file offset -> module address) */
	size_t nsegs;
	/* the same file as another module (one by build-id, one by path: a process that ran
	 * before the recording and one started since): that one's table and id are used */
	struct kmod *canon;
	char ident[2 * ELFV_MAX_BUILD_ID + 48]; /* the file's build-id, else device, inode, mtime */
	/* the builder's, while queued (KM_QUEUED): its table, PT_LOADs and outcome */
	bool build_ok;
	bool from_cache;        /* its table read from the cache directory, not built */
	struct kmod *build_canon;
	uint64_t build_ns;
	struct kmod *qnext;     /* the builder's queue, or its list of built ones (under its lock) */
};

struct kload {
	uint32_t gen;
	uint64_t ver;           /* the process's version when loaded (VER_UNCHECKED: read ahead) */
	struct kunw_map *maps;  /* sorted by start */
	unsigned n;
};

/* An executable mapping as read from the rings (before the reader orders and delivers it). */
struct smap {
	uint64_t start, end, pgoff, time;
	struct uw_module *mod;
};

struct kproc {
	int32_t pid;
	uint64_t ver;           /* mapping changes delivered */
	bool dirty;             /* delivered changes (or a hand-over) to look at in the next update */
	bool loaded;
	bool refused;           /* the cap or a limit refused it: its stacks are handed over */
	bool waiting;           /* its last load left out modules whose tables are being built */
	unsigned exited;        /* updates since its EXIT was delivered (freed after three) */
	struct kload hist[HIST]; /* [0] the newest */
	unsigned nhist;
	/* its executable mappings as the records read say (ahead of the tracker's) */
	bool shadow;            /* (else the tracker's are its mappings) */
	bool sdirty;            /* changed since loaded */
	uint64_t rcount;        /* mapping changes read (ver counts them as delivered) */
	uint64_t walked;        /* samples of the program it runs (since its exec or FORK) */
	uint64_t exec_time;     /* its last exec read (mappings older than it are gone) */
	struct base_vec smaps;  /* struct smap, sorted by start, disjoint */
};

/* Tables are built on a thread of their own: the recording loop only loads them. */
struct builder {
	pthread_t th;
	bool started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct kmod *queue, *qtail; /* to build (FIFO) */
	struct kmod *done;          /* built (or failed): the loop takes them */
	unsigned pending;           /* queued or being built */
	bool stop;
	int efd;                    /* eventfd: something built */
	struct base_map idents;     /* the builder's: hash of ident -> struct kmod * built */
	uint64_t delay_ns;          /* (tests: UW_KUNW_BUILD_DELAY_MS) each build begins this late,
	                             * as on a loaded machine */
};

struct live_kunw {
	struct kunw *k;
	struct uw_session *s;
	struct uw_reader *r;    /* the records go into it (live_kunw_start) */
	struct uw_tracker *t;   /* its tracker */
	perf_record_fn next_fn; /* the reader's record function before (a writer's): chained */
	void *next_ctx;
	uint64_t id;            /* the sampling events' id the program's records carry */
	uint64_t sw_id;         /* --off-cpu: the switch events' (0: none) */
	unsigned sw_attr;       /* ... their attribute */
	bool wait;              /* waits timed in the kernel (live_kunw_conf.wait) */
	int (*wait_fn)(void *ctx, const void *rec); /* ... their records (live_kunw_conf.wait_fn) */
	void *wait_ctx;
	struct base_map mods;   /* (uintptr_t)struct uw_module * -> struct kmod * */
	struct base_map ids;    /* id -> struct kmod * */
	struct base_map procs;  /* pid -> struct kproc * */
	uint32_t next_id;
	bool any_dirty, any_fresh;
	uint64_t finished, stale, tables, peak_bytes, too_big, built, cached, evicted, held_bytes, clock;
	/* samples finished in user space for want of the process's mappings or a module's table,
	 * and those after each program's first LATE_AFTER samples (of late_total) */
	uint64_t missing, late_missing, late_total;
	uint64_t urgent;        /* queued tables moved to the queue's head for samples handed over */
	uint64_t cap;           /* the maps' byte cap; also the built tables kept unloaded at most */
	struct builder b;
	int epfd;               /* polls the program's ring, the builder's eventfd and tfd */
	int tfd;                /* a timerfd: the loop goes round every YOUNG_TICK while young */
	uint64_t young_until;   /* CLOCK_MONOTONIC ns: a process started (or exec'd) lately */
	bool ticking;
	uint64_t sw_walked, sw_finished; /* --off-cpu: switch-outs walked, finished in user space */
	uint64_t wait_ins, wait_sums;    /* (waits timed in the kernel) the program's switch-ins and
	                                  * totals read */
	uint8_t *buf;           /* a record being pushed */
	int err;
	struct kunw_opts ko;    /* the program's options (lk_new) */
};

static struct kproc *kproc_get(struct live_kunw *lk, int32_t pid, bool create)
{
	struct kproc *kp = base_map_get(&lk->procs, (uint32_t)pid);
	if (kp || !create)
		return kp;
	kp = calloc(1, sizeof(*kp));
	if (!kp || base_map_put(&lk->procs, (uint32_t)pid, kp)) {
		free(kp);
		return NULL;
	}
	kp->pid = pid;
	kp->smaps = BASE_VEC_INIT(struct smap);
	return kp;
}

static struct kmod *kmod_get(struct live_kunw *lk, struct uw_module *m, bool create)
{
	struct kmod *km = base_map_get(&lk->mods, (uintptr_t)m);
	if (km || !create)
		return km;
	km = calloc(1, sizeof(*km));
	if (!km || base_map_put(&lk->mods, (uintptr_t)m, km)) {
		free(km);
		return NULL;
	}
	km->m = m;
	km->id = ++lk->next_id;
	if (base_map_put(&lk->ids, km->id, km)) {
		base_map_del(&lk->mods, (uintptr_t)m);
		free(km);
		return NULL;
	}
	return km;
}

/* Anonymous executable memory (JIT code): frame pointers, in the kernel as in user space. */
static bool anon_code(const struct uw_module *m)
{
	return !m || (m->special && (!strncmp(m->path, "//anon", 6) || !strncmp(m->path, "[anon", 5) ||
				     !strncmp(m->path, "/memfd:", 7)));
}

/* A load no longer names its modules: a table named by none stays loaded (a program run again
 * maps it again at once) until the cap needs its room (evict). */
static void kmod_unref(struct live_kunw *lk, uint32_t id)
{
	struct kmod *km = base_map_get(&lk->ids, id);
	if (km && km->refs && !--km->refs)
		km->idle_since = ++lk->clock;
}

static void kload_free(struct live_kunw *lk, struct kload *l)
{
	for (unsigned i = 0; i < l->n; i++)
		if (l->maps[i].module)
			kmod_unref(lk, l->maps[i].module);
	free(l->maps);
	memset(l, 0, sizeof(*l));
}

static void kproc_free(struct live_kunw *lk, struct kproc *kp)
{
	for (unsigned i = 0; i < kp->nhist; i++)
		kload_free(lk, &kp->hist[i]);
	base_vec_free(&kp->smaps);
	free(kp);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the builder thread */

static void *builder_main(void *arg)
{
	struct live_kunw *lk = arg;
	struct builder *b = &lk->b;
	struct uw_session *s = lk->s;
	pthread_mutex_lock(&b->mu);
	for (;;) {
		while (!b->stop && !b->queue)
			pthread_cond_wait(&b->cv, &b->mu);
		if (b->stop)
			break;
		struct kmod *km = b->queue;
		b->queue = km->qnext;
		if (!b->queue)
			b->qtail = NULL;
		pthread_mutex_unlock(&b->mu);
		/* (the module is not unloaded while used: its files are read here) */
		struct uw_module *m = km->m;
		bool ok = false;
		if (b->delay_ns) {
			struct timespec d = { (time_t)(b->delay_ns / 1000000000u), (long)(b->delay_ns % 1000000000u) };
			nanosleep(&d, NULL);
		}
		uint64_t t0 = now_ns();
		module_use(m);
		bool open = module_open(s, m) && m->elf;
		struct kmod *same = NULL;
		uint64_t h = 0;
		if (open) {
			/* a file built already under another module: not built again */
			if (m->elf->build_id_len)
				elfv_build_id_hex(m->elf, km->ident);
			else
				snprintf(km->ident, sizeof(km->ident), "%llx:%llx:%lld", (unsigned long long)m->elf->dev,
					 (unsigned long long)m->elf->ino, (long long)m->elf->mtime_ns);
			h = base_hash_bytes(km->ident, strlen(km->ident));
			same = base_map_get(&b->idents, h);
			if (same && (same == km || strcmp(same->ident, km->ident)))
				same = NULL; /* (itself: built again after an eviction) */
		}
		if (same) {
			km->build_canon = same;
			ok = true;
			open = false;
		}
		km->from_cache = false;
		if (open) {
			struct unw_tables c;
			const char *cdir = session_cache_dir(s); /* (checked once: outside the lock) */
			/* (the views read sections lazily, as the module's own tables do: under its lock;
			 * the cache's entry is for the files as they are now, the debug file included) */
			pthread_mutex_lock(&m->mu);
			char *cpath = kunw_cache_path(cdir, m->elf, m->dbg);
			int e = cpath ? kunw_cache_read(cpath, m->elf, m->dbg, lk->cap, &km->tbl) : -ENOENT;
			if (!e) {
				km->from_cache = true;
			} else {
				e = kunw_code_build(&c, m->elf, m->dbg);
				if (!e) {
					e = kunw_table_build(&km->tbl, &c.code);
					unw_tables_free(&c);
				}
				if (!e && cpath && km->tbl.nwords)
					kunw_cache_write(cpath, m->elf, m->dbg, &km->tbl, s->opts.max_dwarf_cache_bytes);
			}
			pthread_mutex_unlock(&m->mu);
			free(cpath);
			if (!e && km->tbl.nwords && m->elf->nloads && !km->segs &&
			    (km->segs = malloc(m->elf->nloads * sizeof(*km->segs)))) {
				memcpy(km->segs, m->elf->loads, m->elf->nloads * sizeof(*km->segs));
				km->nsegs = m->elf->nloads;
			}
			ok = !e && km->tbl.nwords && (km->nsegs || !m->elf->nloads);
			if (!ok)
				kunw_table_free(&km->tbl);
			else if (!base_map_has(&b->idents, h))
				base_map_put(&b->idents, h, km); /* (without memory: built again when met again) */
		}
		module_unuse(m);
		km->build_ns = now_ns() - t0;
		pthread_mutex_lock(&b->mu);
		km->build_ok = ok;
		km->qnext = b->done;
		b->done = km;
		b->pending--;
		uint64_t one = 1;
		if (write(b->efd, &one, sizeof(one)) < 0) {
			/* (the counter is full: the loop is woken anyway) */
		}
	}
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

static void builder_queue(struct live_kunw *lk, struct kmod *km)
{
	struct builder *b = &lk->b;
	if (km->state != KM_NEW || !b->started || (km->letgo && now_ns() < km->retry_after))
		return;
	km->state = KM_QUEUED;
	km->qnext = NULL;
	pthread_mutex_lock(&b->mu);
	if (b->qtail)
		b->qtail->qnext = km;
	else
		b->queue = km;
	b->qtail = km;
	b->pending++;
	pthread_cond_signal(&b->cv);
	pthread_mutex_unlock(&b->mu);
}

/* A queued table that samples are handed over for: built next. The queue is in mapping order,
 * and a program maps more modules than its samples need (the dynamic linker's, libraries used
 * at start-up only); where the builder gets little CPU (a loaded machine, no table in the cache),
 * the tables behind them came after the program's end, and every walk of the run was handed
 * over ("the pc in none of them"). */
static void builder_urgent(struct live_kunw *lk, struct kmod *km)
{
	struct builder *b = &lk->b;
	pthread_mutex_lock(&b->mu);
	/* (still queued: not taken by the builder yet) */
	struct kmod **pp = &b->queue, *prev = NULL;
	while (*pp && *pp != km) {
		prev = *pp;
		pp = &(*pp)->qnext;
	}
	if (*pp && pp != &b->queue) {
		*pp = km->qnext;
		if (b->qtail == km)
			b->qtail = prev;
		km->qnext = b->queue;
		b->queue = km;
		lk->urgent += !km->urgent;
		if (!km->urgent)
			base_log(&lk->s->log, UW_LOG_INFO, "kernel unwinding: table of %s built next: samples were handed "
				 "over for want of it", km->m->path);
		km->urgent = true;
	}
	pthread_mutex_unlock(&b->mu);
}

/* ---- module tables into the program's map */

/* A table let go to make room: built again if a program maps its module again, but not at once
 * (1 s, doubling each time: a cap too small for what runs does not make a loop of builds). */
static void kmod_let_go(struct kmod *km)
{
	km->state = KM_NEW;
	km->letgo++;
	km->retry_after = now_ns() + (1000000000ull << UW_MIN(km->letgo - 1, 5u));
}

/* Tables no load names dropped, the longest unused first, until need bytes are free (or one
 * map's room: need 0); none when all of them would not be enough. */
static bool evict(struct live_kunw *lk, uint64_t need)
{
	size_t it = 0;
	uint64_t key, spare = 0;
	void *v;
	while (base_map_next(&lk->mods, &it, &key, &v)) {
		struct kmod *km = v;
		if (km->loaded && !km->refs)
			spare += km->bytes ? km->bytes : 1;
	}
	if (!spare || spare < need)
		return false;
	uint64_t freed = 0;
	do {
		struct kmod *old = NULL;
		it = 0;
		while (base_map_next(&lk->mods, &it, &key, &v)) {
			struct kmod *km = v;
			if (km->loaded && !km->refs && (!old || km->idle_since < old->idle_since))
				old = km;
		}
		if (!old)
			break;
		kunw_module_drop(lk->k, old->id);
		old->loaded = false;
		kmod_let_go(old);
		lk->evicted++;
		freed += old->bytes ? old->bytes : 1;
	} while (freed < need);
	return true;
}

/* Bytes beyond the cap that adding bytes would need (0: the count of maps, not their bytes). */
static uint64_t need_for(struct live_kunw *lk, uint64_t bytes)
{
	uint64_t b = kunw_bytes(lk->k);
	return b + bytes > lk->cap ? b + bytes - lk->cap : 0;
}

/* Keeps a built table that could not be loaded, within the cap (the oldest let go: built again
 * when wanted). */
static void hold_trim(struct live_kunw *lk)
{
	while (lk->held_bytes > lk->cap) {
		size_t it = 0;
		uint64_t key;
		void *v;
		struct kmod *old = NULL;
		while (base_map_next(&lk->mods, &it, &key, &v)) {
			struct kmod *km = v;
			if (km->state == KM_BUILT && !km->loaded && km->tbl.nwords && (!old || km->id < old->id))
				old = km;
		}
		if (!old)
			break;
		lk->held_bytes -= old->bytes;
		kunw_table_free(&old->tbl);
		kmod_let_go(old);
	}
}

/* A built table into the program's map (room made by evicting tables no load names); the
 * user-space copy is let go once loaded. */
static bool kmod_add(struct live_kunw *lk, struct kmod *km)
{
	if (km->loaded)
		return true;
	if (km->state != KM_BUILT || !km->tbl.nwords)
		return false;
	int e = kunw_module_add(lk->k, km->id, &km->tbl);
	if (e == -ENOSPC && km->bytes <= lk->cap && evict(lk, need_for(lk, km->bytes)))
		e = kunw_module_add(lk->k, km->id, &km->tbl);
	if (e && e != -EEXIST)
		return false; /* the cap: walks reaching it are handed over; tried again later */
	km->loaded = true;
	km->idle_since = ++lk->clock;
	lk->tables++;
	base_log(&lk->s->log, UW_LOG_INFO, "kernel unwinding: table of %s loaded (%u rows, %llu bytes, %s in %.1f ms)",
		 km->m->path, km->nrows, (unsigned long long)km->bytes, km->from_cache ? "read from the cache" : "built",
		 (double)km->build_ns / 1e6);
	if (km->tbl.nwords) {
		lk->held_bytes -= km->bytes;
		kunw_table_free(&km->tbl);
	}
	return true;
}

/* The tables the builder finished: loaded. */
static void take_built(struct live_kunw *lk)
{
	struct builder *b = &lk->b;
	uint64_t n;
	if (read(b->efd, &n, sizeof(n)) < 0) {
		/* (nothing built since: EAGAIN) */
	}
	pthread_mutex_lock(&b->mu);
	struct kmod *km = b->done;
	b->done = NULL;
	pthread_mutex_unlock(&b->mu);
	while (km) {
		struct kmod *next = km->qnext;
		km->qnext = NULL;
		km->state = km->build_ok ? KM_BUILT : KM_FAILED;
		if (km->build_ok && km->build_canon) {
			km->canon = km->build_canon;
			km->fresh = true;
			lk->any_fresh = true;
			if (km->canon->state == KM_NEW)
				builder_queue(lk, km->canon); /* (evicted meanwhile) */
		} else if (km->state == KM_BUILT) {
			lk->built++;
			lk->cached += km->from_cache;
			km->nrows = km->tbl.nrows;
			km->bytes = kunw_table_bytes(&km->tbl);
			lk->held_bytes += km->bytes;
			km->fresh = true;
			lk->any_fresh = true;
			kmod_add(lk, km);
		}
		km = next;
	}
	hold_trim(lk);
}

/* The module address of file offset pgoff, as the tracker's bias makes it. */
static uint64_t kmod_rel(const struct kmod *km, uint64_t pgoff)
{
	for (size_t i = 0; i < km->nsegs; i++) {
		const struct elfv_seg *s = &km->segs[i];
		if (pgoff >= s->offset && pgoff - s->offset < UW_MAX(s->filesz, (uint64_t)1))
			return pgoff - s->offset + s->vaddr;
	}
	return pgoff;
}

/* ---- side-band records as they are read from the rings (before ordering) */

/* A program starts: its mappings come in the next milliseconds (the dynamic linker maps its
 * libraries), and side-band records do not wake the loop (the rings wake it half full), so
 * the loop goes round every YOUNG_TICK for YOUNG_NS: each new mapping is read, and its
 * module's table asked for, within a tick rather than the loop's usual wait. */
#define YOUNG_NS (150u * 1000000u)
#define YOUNG_TICK_NS (2u * 1000000u)

static void young(struct live_kunw *lk)
{
	lk->young_until = now_ns() + YOUNG_NS;
}

static void tick(struct live_kunw *lk)
{
	uint64_t n;
	if (read(lk->tfd, &n, sizeof(n)) < 0) {
		/* (not expired: EAGAIN) */
	}
	bool on = lk->young_until && now_ns() < lk->young_until;
	if (on == lk->ticking && !on)
		return;
	struct itimerspec its = { .it_interval = { 0, on ? YOUNG_TICK_NS : 0 }, .it_value = { 0, on ? YOUNG_TICK_NS : 0 } };
	if (on != lk->ticking && !timerfd_settime(lk->tfd, 0, &its, NULL))
		lk->ticking = on;
}

/* The process's mappings as read start from the tracker's (what was delivered of it). */
static void shadow_init(struct live_kunw *lk, struct kproc *kp, int32_t from)
{
	if (kp->shadow)
		return;
	kp->shadow = true;
	kp->smaps.len = 0;
	struct tracker_proc *p = tracker_proc_get(lk->t, from, false);
	for (size_t i = 0; p && !p->exited && i < p->maps.len; i++) {
		struct tracker_map *m = base_vec_at(&p->maps, i);
		struct smap *sm;
		if (!m->exec || m->end <= m->start || !(sm = base_vec_push(&kp->smaps)))
			continue;
		*sm = (struct smap){ m->start, m->end, m->pgoff, 0, m->mod };
	}
}

static void shadow_map(struct kproc *kp, uint64_t start, uint64_t end, uint64_t pgoff, struct uw_module *mod,
                       uint64_t time)
{
	struct smap *v = kp->smaps.data;
	size_t n = kp->smaps.len;
	/* one read out of order (another CPU's ring): what came after it stays */
	for (size_t i = 0; i < n; i++)
		if (v[i].start < end && v[i].end > start && v[i].time > time)
			return;
	if (base_vec_reserve(&kp->smaps, n + 2))
		return;
	v = kp->smaps.data;
	size_t o = 0;
	struct smap tail = { 0 };
	bool split = false;
	for (size_t i = 0; i < n; i++) {
		struct smap m = v[i];
		if (m.end <= start || m.start >= end) {
			v[o++] = m;
			continue;
		}
		if (m.start < start && m.end > end) {
			tail = m;
			tail.pgoff += end - m.start;
			tail.start = end;
			split = true;
		}
		if (m.start < start) {
			m.end = start;
			v[o++] = m;
		} else if (m.end > end) {
			m.pgoff += end - m.start;
			m.start = end;
			v[o++] = m;
		}
	}
	v[o++] = (struct smap){ start, end, pgoff, time, mod };
	if (split)
		v[o++] = tail;
	kp->smaps.len = o;
	/* (sorted again: a few dozen entries) */
	for (size_t i = 1; i < o; i++)
		for (size_t j = i; j > 0 && v[j - 1].start > v[j].start; j--) {
			struct smap t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
}

void live_kunw_read(struct live_kunw *lk, const uint8_t *rec, uint32_t len)
{
	if (!lk || !lk->r || !lk->r->at.nattrs || len < 8)
		return;
	uint32_t type;
	uint16_t misc;
	memcpy(&type, rec, 4);
	memcpy(&misc, rec + 4, 2);
	if (type != PR_MMAP && type != PR_MMAP2 && type != PR_COMM && type != PR_FORK && type != PR_EXIT)
		return;
	if ((type == PR_MMAP || type == PR_MMAP2) && (misc & PM_MMAP_DATA))
		return;
	if (type == PR_COMM && !(misc & PM_COMM_EXEC))
		return;
	/* (counted as on_record counts them delivered: the tracker has caught up with the records
	 * read of a process when it has been delivered as many) */
	if (len >= 16 && type != PR_EXIT) {
		uint32_t pid, ppid;
		memcpy(&pid, rec + 8, 4);
		memcpy(&ppid, rec + 12, 4);
		struct kproc *cp = type != PR_FORK || (len >= 24 && pid != ppid) ? kproc_get(lk, (int32_t)pid, true) : NULL;
		if (cp)
			cp->rcount++;
	}
	const struct perf_attr *a = reader_attr_of(&lk->r->at, rec, len, NULL);
	struct perf_sideband sb;
	const char *what;
	bool bid_ok = type == PR_MMAP2 && (misc & PM_MMAP_BUILD_ID) && a && (a->flags & PA_BUILD_ID);
	if (perf_sideband_decode(a, rec, len, bid_ok, &sb, &what))
		return;
	struct perf_sample_id sid = { 0 };
	if (a && a->id_trailer_size && perf_sample_id_decode(a, rec + 8, len - 8, &sid))
		sid.has_time = false;
	uint64_t time = sid.has_time ? sid.time : sb.time;
	struct kproc *kp = NULL;
	switch (type) {
	case PR_MMAP:
	case PR_MMAP2: {
		if (sb.pid == -1 || (misc & PM_CPUMODE_MASK) == TRACKER_CPUMODE_KERNEL || !sb.len ||
		    sb.addr + sb.len < sb.addr || (type == PR_MMAP2 && !(sb.prot & PROT_EXEC)))
			return;
		if (!(kp = kproc_get(lk, sb.pid, true)) || time < kp->exec_time)
			return;
		char hex[2 * ELFV_MAX_BUILD_ID + 1] = "";
		if (sb.blen)
			base_hex(sb.bid, UW_MIN(sb.blen, (size_t)ELFV_MAX_BUILD_ID), hex);
		else if (tracker_build_id(lk->t, sb.str, sb.str_len))
			snprintf(hex, sizeof(hex), "%s", tracker_build_id(lk->t, sb.str, sb.str_len));
		/* (the module the tracker makes of the same record, when it is delivered) */
		struct uw_module *m = module_get_gen(lk->s, sb.str, sb.str_len, hex, sb.maj, sb.min, sb.ino, sb.ino_gen);
		if (!m)
			return;
		if (!anon_code(m))
			module_note_live(m, sb.pid, sb.addr, sb.addr + sb.len);
		shadow_init(lk, kp, sb.pid);
		shadow_map(kp, sb.addr, sb.addr + sb.len, sb.pgoff, m, time);
		break;
	}
	case PR_COMM:
		/* exec: another program; its mappings follow */
		if (!(kp = kproc_get(lk, sb.pid, true)) || time < kp->exec_time)
			return;
		shadow_init(lk, kp, sb.pid);
		kp->exec_time = time;
		young(lk);
		size_t o = 0;
		for (size_t i = 0; i < kp->smaps.len; i++) {
			struct smap *m = base_vec_at(&kp->smaps, i);
			if (m->time >= time)
				*(struct smap *)base_vec_at(&kp->smaps, o++) = *m;
		}
		kp->smaps.len = o;
		break;
	case PR_FORK: {
		/* a new process (not a thread): its parent's mappings, under what the child did since
		 * that was read already (another CPU's ring read first) */
		if (sb.pid == sb.ppid || !(kp = kproc_get(lk, sb.pid, true)))
			return;
		young(lk);
		if (kp->shadow && kp->exec_time > time)
			break; /* it has exec'd since: nothing of its parent's is left */
		struct base_vec own = BASE_VEC_INIT(struct smap);
		for (size_t i = 0; kp->shadow && i < kp->smaps.len; i++) {
			struct smap *m = base_vec_at(&kp->smaps, i), *mo;
			if (m->time >= time && (mo = base_vec_push(&own)))
				*mo = *m;
		}
		struct kproc *pp = kproc_get(lk, sb.ppid, false);
		kp->shadow = false;
		kp->exec_time = UW_MAX(kp->exec_time, time);
		if (pp && pp->shadow) {
			kp->shadow = true;
			kp->smaps.len = 0;
			if (pp->smaps.len && !base_vec_reserve(&kp->smaps, pp->smaps.len)) {
				memcpy(kp->smaps.data, pp->smaps.data, pp->smaps.len * sizeof(struct smap));
				kp->smaps.len = pp->smaps.len;
			}
		} else {
			shadow_init(lk, kp, sb.ppid);
		}
		for (size_t i = 0; i < own.len; i++) {
			struct smap *m = base_vec_at(&own, i);
			shadow_map(kp, m->start, m->end, m->pgoff, m->mod, m->time);
		}
		base_vec_free(&own);
		break;
	}
	case PR_EXIT:
		/* (left to its delivery: a thread that execs makes its leader's EXIT, and the
		 * process goes on) */
		return;
	}
	if (kp) {
		kp->sdirty = true;
		lk->any_dirty = true;
	}
}

/* ---- side-band records, as the reader delivers them (in time order) */

static int on_record(void *ctx, const uint8_t *rec, uint32_t len)
{
	struct live_kunw *lk = ctx;
	int err = lk->next_fn ? lk->next_fn(lk->next_ctx, rec, len) : 0;
	uint32_t type, pid = 0, tid = 0;
	uint16_t misc;
	memcpy(&type, rec, 4);
	memcpy(&misc, rec + 4, 2);
	if (len >= 16) {
		memcpy(&pid, rec + 8, 4);
		memcpy(&tid, rec + 12, 4);
	}
	struct kproc *kp = NULL;
	switch (type) {
	case PR_MMAP:
	case PR_MMAP2:
		/* (data mappings do not change what the walk reads) */
		if (misc & PM_MMAP_DATA)
			break;
		/* fall through */
	case PR_COMM:
		if (type == PR_COMM && !(misc & PM_COMM_EXEC))
			break;
		/* a profiled process maps code: the tracker now has what the load made from the
		 * records read (or, when none were, its mappings are loaded) */
		if ((kp = kproc_get(lk, (int32_t)pid, true))) {
			if (type == PR_COMM)
				kp->walked = 0; /* another program */
			kp->ver++;
			kp->dirty = true;
			lk->any_dirty = true;
		}
		break;
	case PR_FORK:
		/* FORK: pid, ppid, tid, ptid. A new process (not a thread) has its parent's mappings
		 * and no mapping event tells of them */
		if (len >= 24) {
			uint32_t ppid;
			memcpy(&ppid, rec + 12, 4);
			if (pid != ppid && (kp = kproc_get(lk, (int32_t)pid, true))) {
				kp->walked = 0;
				kp->ver++;
				kp->dirty = true;
				lk->any_dirty = true;
			}
		}
		break;
	case PR_EXIT:
		/* EXIT: pid, ppid, tid, ptid: the process's last thread */
		if (len >= 24 && (kp = kproc_get(lk, (int32_t)pid, false))) {
			memcpy(&tid, rec + 16, 4);
			if (pid == tid && !kp->exited) {
				kp->exited = 1;
				if (kp->loaded)
					kunw_proc_drop(lk->k, pid);
				kp->loaded = false;
			}
		}
		break;
	default:
		break;
	}
	return err;
}

/* ---- samples, as the reader makes them (reader_kunw_fn) */

/* A program's first samples may be handed over while its mappings and tables are loaded; the
 * summary says how many were after these (issue 26's measure: < 1% after a program's first
 * second, here counted in samples: 0.2 s of CPU at 999 Hz). */
#define LATE_AFTER 200

static const struct kload *kload_of(const struct kproc *kp, uint32_t gen)
{
	for (unsigned i = 0; kp && i < kp->nhist; i++)
		if (kp->hist[i].gen == gen)
			return &kp->hist[i];
	return NULL;
}

static const struct kunw_map *kmap_find(const struct kload *l, uint64_t pc)
{
	size_t lo = 0, hi = l->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (l->maps[mid].end <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < l->n && l->maps[lo].start <= pc ? &l->maps[lo] : NULL;
}

/* Did the walk find at pc the module (and place in it) the tracker has there at the sample's
 * time? */
static bool frame_agrees(struct live_kunw *lk, const struct kload *l, struct tracker_proc *p, uint64_t pc,
                         uint64_t time)
{
	const struct kunw_map *km = kmap_find(l, pc);
	if (!km)
		return false;
	struct tracker_find_ctx fc = { lk->t, p, time, false, 0 };
	struct unw_pc_info info = { 0 };
	if (!tracker_find_pc(&fc, pc, &info))
		return false;
	if (km->module == KUNW_MODULE_ANON)
		return anon_code(info.module) || !info.code;
	struct kmod *m = info.module ? kmod_get(lk, info.module, false) : NULL;
	if (m && m->canon)
		m = m->canon;
	return m && m->id == km->module && pc - km->start + km->rel_start == pc - info.bias;
}

static void on_sample(void *ctx, const struct kunw_sample *ks, struct tracker_proc *p, struct uw_sample *smp,
                      unsigned nkernel, bool finished)
{
	struct live_kunw *lk = ctx;
	const struct kunw_rec *kr = ks->rec;
	struct kproc *kp = kproc_get(lk, (int32_t)kr->pid, true);
	if (!kp)
		return;
	/* the generation check: frames the kernel stepped from, against the tracker's mappings */
	if (nkernel && kr->gen) {
		const struct kload *l = kload_of(kp, kr->gen);
		if (!l || l->ver != kp->ver) {
			struct uw_frame *f = (struct uw_frame *)smp->user;
			unsigned steps = finished ? nkernel : nkernel - 1; /* frames stepped from */
			for (unsigned i = 0; i < steps && i < smp->nr_user; i++) {
				if (!l || !frame_agrees(lk, l, p, f[i].pc, kr->time)) {
					smp->nr_user = i + 1;
					smp->stop_reason = UW_STOP_UNKNOWN;
					smp->stack = NULL;
					smp->stack_size = 0;
					lk->stale++;
					break;
				}
			}
		}
	}
	bool sw = lk->sw_id && smp->attr_index == lk->sw_attr;
	bool missing = finished && (kr->fb_reason == KUNW_FB_NO_PROC || kr->fb_reason == KUNW_FB_NO_MAP ||
				    kr->fb_reason == KUNW_FB_NO_TABLE);
	lk->missing += missing;
	/* (CPU samples: the measure is of them) */
	if (!sw && ++kp->walked > LATE_AFTER) {
		lk->late_total++;
		lk->late_missing += missing;
	}
	if (!finished)
		return;
	lk->finished++;
	if (sw)
		lk->sw_finished++;
	/* what would have let the kernel walk it: the process's mappings, the modules' tables */
	if (p && !p->exited && !kp->refused &&
	    (!kp->loaded || kr->fb_reason == KUNW_FB_NO_MAP || kr->fb_reason == KUNW_FB_NO_TABLE ||
	     kr->fb_reason == KUNW_FB_NO_PROC)) {
		kp->dirty = true;
		lk->any_dirty = true;
	}
	for (unsigned i = nkernel; i < smp->nr_user; i++) {
		struct uw_module *m = smp->user[i].module;
		if (!m || anon_code(m) || m->jit || m->jitdump)
			continue;
		struct kmod *km = kmod_get(lk, m, true);
		if (km && km->canon)
			km = km->canon;
		if (km && km->state == KM_NEW)
			builder_queue(lk, km);
		else if (km && km->state == KM_QUEUED)
			builder_urgent(lk, km);
	}
}

/* ---- the maps fed */

static int cmp_map(const void *x, const void *y)
{
	const struct kunw_map *a = x, *b = y;
	return a->start < b->start ? -1 : a->start > b->start;
}

/* One executable mapping into v (when its module's table is loaded; else its table is asked
 * of the builder and *later set). */
static void map_push(struct live_kunw *lk, struct kunw_map *v, unsigned *n, uint64_t start, uint64_t end,
                     uint64_t pgoff, struct uw_module *mod, bool *later)
{
	if (end <= start || *n >= KUNW_PROC_MAPS)
		return;
	if (anon_code(mod)) {
		v[(*n)++] = (struct kunw_map){ start, end, KUNW_MODULE_ANON, 0 };
		return;
	}
	if (mod->jit || mod->jitdump)
		return;
	struct kmod *km = kmod_get(lk, mod, true);
	if (!km)
		return;
	if (km->canon)
		km = km->canon;
	if (km->state == KM_NEW)
		builder_queue(lk, km);
	if (km->state == KM_QUEUED)
		*later = true;
	if (!kmod_add(lk, km))
		return;
	uint64_t rel = kmod_rel(km, pgoff);
	if (rel > UINT32_MAX || end - start > UINT32_MAX - rel)
		return;
	v[(*n)++] = (struct kunw_map){ start, end, km->id, (uint32_t)rel };
}

/* The process's executable mappings whose module has a table loaded (and JIT code): from the
 * records read (from_shadow), else from the tracker. A load the same as the newest is not made
 * again; one from the tracker then vouches for the newest (its samples need no check). */
static void kproc_load(struct live_kunw *lk, struct kproc *kp, bool from_shadow)
{
	struct uw_tracker *t = lk->t;
	struct tracker_proc *p = NULL;
	size_t cap;
	if (from_shadow) {
		kp->sdirty = false;
		cap = kp->smaps.len;
	} else {
		kp->dirty = false;
		p = tracker_proc_get(t, kp->pid, false);
		if (!p || p->exited)
			return;
		cap = p->maps.len;
	}
	if (kp->exited)
		return;
	struct kunw_map *v = malloc((cap + 1) * sizeof(*v));
	if (!v)
		return;
	unsigned n = 0;
	bool later = false;
	if (from_shadow) {
		for (size_t i = 0; i < kp->smaps.len; i++) {
			struct smap *m = base_vec_at(&kp->smaps, i);
			map_push(lk, v, &n, m->start, m->end, m->pgoff, m->mod, &later);
		}
	} else {
		for (size_t i = 0; i < p->maps.len; i++) {
			struct tracker_map *m = base_vec_at(&p->maps, i);
			if (m->exec)
				map_push(lk, v, &n, m->start, m->end, m->pgoff, m->mod, &later);
		}
	}
	qsort(v, n, sizeof(*v), cmp_map);
	kp->waiting = later;
	struct kload *h = kp->nhist ? &kp->hist[0] : NULL;
	if (kp->loaded && h && h->n == n && !memcmp(h->maps, v, n * sizeof(*v))) {
		if (!from_shadow)
			h->ver = kp->ver;
		free(v);
		return;
	}
	if (!from_shadow && kp->shadow) {
		/* records read and not yet delivered: they are ahead of the tracker, whose mappings do
		 * not replace theirs (samples walked with them are checked frame by frame until it
		 * catches up) */
		if (kp->loaded && kp->ver < kp->rcount) {
			free(v);
			return;
		}
		/* it has caught up: its mappings (put in time order) are the process's */
		kp->shadow = false;
		shadow_init(lk, kp, kp->pid);
	}
	int e = kunw_proc_set(lk->k, (uint32_t)kp->pid, v, n);
	if (e == -ENOSPC && evict(lk, need_for(lk, ((uint64_t)n + 1) * sizeof(*v))))
		e = kunw_proc_set(lk->k, (uint32_t)kp->pid, v, n);
	if (e) {
		free(v);
		kp->refused = true;
		if (kp->loaded)
			kunw_proc_drop(lk->k, (uint32_t)kp->pid);
		kp->loaded = false;
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		struct kmod *km = v[i].module ? base_map_get(&lk->ids, v[i].module) : NULL;
		if (km)
			km->refs++;
	}
	if (kp->nhist == HIST)
		kload_free(lk, &kp->hist[--kp->nhist]);
	memmove(&kp->hist[1], &kp->hist[0], kp->nhist * sizeof(kp->hist[0]));
	kp->hist[0] = (struct kload){ kunw_gen(lk->k), from_shadow ? VER_UNCHECKED : kp->ver, v, n };
	kp->nhist++;
	kp->loaded = true;
	kp->refused = false;
}

static int on_kunw_record(void *ctx, const struct kunw_sample *s);

/* Does the process map a module built since the last update? */
static bool maps_fresh(struct live_kunw *lk, struct kproc *kp)
{
	if (kp->shadow) {
		for (size_t i = 0; i < kp->smaps.len; i++) {
			struct smap *m = base_vec_at(&kp->smaps, i);
			struct kmod *km = m->mod ? kmod_get(lk, m->mod, false) : NULL;
			if (km && km->fresh)
				return true;
		}
		return false;
	}
	struct tracker_proc *p = tracker_proc_get(lk->t, kp->pid, false);
	for (size_t i = 0; p && i < p->maps.len; i++) {
		struct tracker_map *m = base_vec_at(&p->maps, i);
		struct kmod *km = m->exec && m->mod ? kmod_get(lk, m->mod, false) : NULL;
		if (km && km->fresh)
			return true;
	}
	return false;
}

static int update(struct live_kunw *lk)
{
	size_t it = 0;
	uint64_t key;
	void *v;
	take_built(lk);
	if (lk->any_fresh) {
		/* processes that wait for a table built now: loaded again with it */
		lk->any_fresh = false;
		while (base_map_next(&lk->procs, &it, &key, &v)) {
			struct kproc *kp = v;
			if (kp->waiting && maps_fresh(lk, kp)) {
				if (kp->shadow)
					kp->sdirty = true;
				else
					kp->dirty = true;
				lk->any_dirty = true;
			}
		}
		it = 0;
		while (base_map_next(&lk->mods, &it, &key, &v))
			((struct kmod *)v)->fresh = false;
	}
	/* processes gone two updates ago: no record of theirs is still queued */
	it = 0;
	while (base_map_next(&lk->procs, &it, &key, &v)) {
		struct kproc *kp = v;
		if (kp->exited && ++kp->exited > 3) {
			base_map_del(&lk->procs, key);
			kproc_free(lk, kp);
			it = 0; /* (the map changed under the iteration) */
			continue;
		}
	}
	if (lk->any_dirty) {
		lk->any_dirty = false;
		it = 0;
		while (base_map_next(&lk->procs, &it, &key, &v)) {
			struct kproc *kp = v;
			if (kp->sdirty)
				kproc_load(lk, kp, true);
			if (kp->dirty)
				kproc_load(lk, kp, false);
		}
	}
	uint64_t b = kunw_bytes(lk->k);
	if (b > lk->peak_bytes)
		lk->peak_bytes = b;
	tick(lk);
	int e = kunw_commit(lk->k, false);
	return lk->err ? lk->err : e;
}

int live_kunw_update(struct live_kunw *lk)
{
	return lk && lk->r ? update(lk) : 0;
}

/* ---- the program's ring */

static int on_kunw_record(void *ctx, const struct kunw_sample *s)
{
	struct live_kunw *lk = ctx;
	uint32_t size = 16 + ((s->rec->size + 7) & ~7u);
	if (size > 65535) {
		lk->too_big++;
		return 0;
	}
	uint32_t type = PR_UW_KUNW;
	uint16_t misc = 0, sz = (uint16_t)size;
	/* the event it came from, by the program that wrote it: a switch-out is a sample of the
	 * switch attribute (any of its events' ids names it), paired as a copied one is
	 * (write/offcpu.c) */
	uint64_t id = lk->id;
	if (s->rec->kind == KUNW_KIND_WAIT_IN || s->rec->kind == KUNW_KIND_WAIT_SUM) { /* (waits timed in the kernel: no stack) */
		if (s->rec->kind == KUNW_KIND_WAIT_IN)
			lk->wait_ins++;
		else
			lk->wait_sums++;
		return lk->wait_fn ? lk->wait_fn(lk->wait_ctx, s) : 0;
	}
	if ((s->rec->kind == KUNW_KIND_SWITCH || s->rec->kind == KUNW_KIND_WAIT) && lk->sw_id) {
		id = lk->sw_id;
		lk->sw_walked++;
	}
	/* (the event the record says, where the kernel can say: its attribute, of several) */
	if (s->rec->event_id)
		id = s->rec->event_id;
	memcpy(lk->buf, &type, 4);
	memcpy(lk->buf + 4, &misc, 2);
	memcpy(lk->buf + 6, &sz, 2);
	memcpy(lk->buf + 8, &id, 8);
	memset(lk->buf + size - 8, 0, 8);
	memcpy(lk->buf + 16, s->rec, s->rec->size);
	int err = uw_reader_push(lk->r, lk->buf, size);
	return err ? err : 0;
}

int live_kunw_drain(struct live_kunw *lk)
{
	if (!lk || !lk->r)
		return 0;
	int n = kunw_poll(lk->k, 0, on_kunw_record, lk);
	return n < 0 ? n : 0;
}

int live_kunw_prime(struct live_kunw *lk, uint64_t timeout_ns)
{
	if (!lk || !lk->r)
		return 0;
	/* (nothing else is queued yet: the events are not enabled) */
	int err = uw_reader_flush(lk->r);
	/* everything that runs already, before the recording begins: its tables built and loaded
	 * (within the timeout: what is not built by then is loaded as the recording goes) */
	uint64_t until = now_ns() + timeout_ns;
	for (;;) {
		if (!err)
			err = update(lk);
		pthread_mutex_lock(&lk->b.mu);
		bool busy = lk->b.pending || lk->b.done;
		pthread_mutex_unlock(&lk->b.mu);
		if (err || !busy || now_ns() > until)
			break;
		struct pollfd pf = { lk->b.efd, POLLIN, 0 };
		poll(&pf, 1, 100);
	}
	if (!err)
		err = kunw_commit(lk->k, true);
	/* (the recording begins: a command started now execs at once) */
	young(lk);
	tick(lk);
	return err;
}

bool live_kunw_event_ids(const struct live_kunw *lk)
{
	return lk && kunw_event_ids(lk->k);
}

int live_kunw_fd(const struct live_kunw *lk)
{
	return lk ? lk->epfd : -1;
}

struct kunw *live_kunw_handle(struct live_kunw *lk)
{
	return lk ? lk->k : NULL;
}

/* Why BPF cannot be used here, when it is something the system says before loading. */
static bool system_refuses(char *why, size_t len)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		snprintf(why, len, "the kernel has no BTF (/sys/kernel/btf/vmlinux: CONFIG_DEBUG_INFO_BTF)");
		return true;
	}
	FILE *f = fopen("/sys/kernel/security/lockdown", "re");
	char line[128] = "";
	if (f) {
		if (!fgets(line, sizeof(line), f))
			line[0] = 0;
		fclose(f);
	}
	if (strstr(line, "[confidentiality]")) {
		snprintf(why, len, "kernel lockdown (confidentiality) forbids BPF reading memory");
		return true;
	}
	return false;
}

/* The parts of live_kunw_open: lk_new (what the system refuses at once, the options), lk_load
 * (the verifier: the slow part, on a thread of its own for live_kunw_load; it touches nothing
 * but lk->ko and lk->k), lk_finish (the builder thread and the poll). */
static struct live_kunw *lk_new(const struct live_kunw_conf *c, char *why, size_t len, int *err)
{
	if (system_refuses(why, len)) {
		*err = -EOPNOTSUPP;
		return NULL;
	}
	struct live_kunw *lk = calloc(1, sizeof(*lk));
	if (!lk || !(lk->buf = malloc(1u << 16))) {
		free(lk);
		snprintf(why, len, "out of memory");
		*err = -ENOMEM;
		return NULL;
	}
	lk->s = c->s;
	lk->wait = c->wait;
	lk->wait_fn = c->wait_fn;
	lk->wait_ctx = c->wait_ctx;
	lk->epfd = lk->b.efd = lk->tfd = -1;
	base_map_init(&lk->mods);
	base_map_init(&lk->procs);
	base_map_init(&lk->ids);
	lk->ko = (struct kunw_opts){ .max_frames = c->max_frames,
				     .copy_bytes = c->copy_bytes,
				     .ring_bytes = c->ring_bytes,
				     .max_bytes = c->max_bytes,
				     .verify = c->verify,
				     .switches = c->switches,
				     .wait = c->wait,
				     .wait_all = c->wait_all,
				     .wait_self = c->wait_self,
				     .wait_min_ns = c->wait_min_ns,
				     .wait_walks = c->wait_walks,
				     .one_event = c->one_event,
				     /* swaps into the maps batched off the loop (each waits for a grace period) */
				     .deferred = true };
	/* built tables kept unloaded (the cap refused them) at most as many bytes as the cap */
	lk->cap = c->max_bytes ? c->max_bytes : 64ull << 20;
	*err = 0;
	return lk;
}

/* Why kunw_open or kunw_probe refused (e), in words. */
static void lk_why(int e, const char *err, char *why, size_t len)
{
	/* (the verifier refuses with -EACCES as well as -EINVAL: only -EPERM is privilege) */
	if (e == -EPERM)
		snprintf(why, len, "not privileged (loading BPF needs root, or CAP_BPF and CAP_PERFMON)");
	else if (e == -ENOSYS)
		snprintf(why, len, "the kernel has no BPF");
	else if (e == -ELIBACC)
		snprintf(why, len, "libbpf cannot be loaded (%.200s)", err);
	else {
		size_t n;
		const char *w = kunw_verifier_why(err, &n);
		snprintf(why, len, "the program could not be loaded (verifier refusal?): %.*s", (int)(n < 160 ? n : 160), w);
	}
}

static int lk_load(struct live_kunw *lk, char *why, size_t len)
{
	char err[512] = "";
	int e = kunw_open(&lk->ko, &lk->k, err, sizeof(err));
	if (e)
		lk_why(e, err, why, len);
	return e;
}

/* A live_kunw that lk_finish did not start. */
static void lk_free(struct live_kunw *lk)
{
	if (!lk)
		return;
	kunw_close(lk->k);
	base_map_free(&lk->mods);
	base_map_free(&lk->procs);
	base_map_free(&lk->ids);
	free(lk->buf);
	free(lk);
}

static int lk_finish(struct live_kunw *lk, char *why, size_t len)
{
	/* the builder, and a poll of its eventfd with the program's ring */
	struct epoll_event ev = { .events = EPOLLIN };
	base_map_init(&lk->b.idents);
	const char *delay = getenv("UW_KUNW_BUILD_DELAY_MS");
	lk->b.delay_ns = delay ? strtoull(delay, NULL, 10) * 1000000u : 0;
	pthread_mutex_init(&lk->b.mu, NULL);
	pthread_cond_init(&lk->b.cv, NULL);
	lk->b.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	lk->epfd = epoll_create1(EPOLL_CLOEXEC);
	lk->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	int e = lk->b.efd < 0 || lk->epfd < 0 || lk->tfd < 0 ? -errno : 0;
	if (!e && epoll_ctl(lk->epfd, EPOLL_CTL_ADD, kunw_ring_fd(lk->k), &ev))
		e = -errno;
	if (!e && epoll_ctl(lk->epfd, EPOLL_CTL_ADD, lk->b.efd, &ev))
		e = -errno;
	if (!e && epoll_ctl(lk->epfd, EPOLL_CTL_ADD, lk->tfd, &ev))
		e = -errno;
	if (!e)
		e = -pthread_create(&lk->b.th, NULL, builder_main, lk);
	lk->b.started = !e;
	if (e) {
		snprintf(why, len, "the table builder could not be started: %s", strerror(-e));
		live_kunw_close(lk);
	}
	return e;
}

int live_kunw_open(const struct live_kunw_conf *c, struct live_kunw **out, char *why, size_t len)
{
	*out = NULL;
	int e;
	struct live_kunw *lk = lk_new(c, why, len, &e);
	if (!lk)
		return e;
	if ((e = lk_load(lk, why, len))) {
		lk_free(lk);
		return e;
	}
	if ((e = lk_finish(lk, why, len)))
		return e;
	*out = lk;
	return 0;
}

/* ---- the program loaded on a thread of its own (live_kunw_load) */

struct live_kunw_loading {
	pthread_t th;
	pthread_mutex_t mu;
	bool done;              /* the thread is through (under mu) */
	bool abandoned;         /* nobody takes it: the thread frees it all (under mu) */
	int err;
	char why[256];
	struct live_kunw *lk;   /* not finished (lk_finish) until taken */
	int efd;                /* eventfd, readable once done */
	uint64_t t0, ns;        /* when the load began, how long it took */
};

static void loading_free(struct live_kunw_loading *ld)
{
	lk_free(ld->lk);
	if (ld->efd >= 0)
		close(ld->efd);
	pthread_mutex_destroy(&ld->mu);
	free(ld);
}

static void *loading_main(void *arg)
{
	struct live_kunw_loading *ld = arg;
	char why[256] = "";
	int e = lk_load(ld->lk, why, sizeof(why));
	uint64_t ns = now_ns() - ld->t0;
	pthread_mutex_lock(&ld->mu);
	ld->err = e;
	ld->ns = ns;
	memcpy(ld->why, why, sizeof(why));
	ld->done = true;
	bool mine = ld->abandoned;
	uint64_t one = 1;
	if (!mine && write(ld->efd, &one, sizeof(one)) < 0) {
		/* (an eventfd's counter does not overflow from one write) */
	}
	pthread_mutex_unlock(&ld->mu);
	if (mine)
		loading_free(ld);
	return NULL;
}

int live_kunw_load(const struct live_kunw_conf *c, struct live_kunw_loading **out, char *why, size_t len)
{
	*out = NULL;
	int e;
	/* what would fail at once fails here, before the recording begins: said as it always was */
	char err[512] = "";
	if ((e = kunw_probe(err, sizeof(err)))) {
		lk_why(e, err, why, len);
		return e;
	}
	struct live_kunw *lk = lk_new(c, why, len, &e);
	if (!lk)
		return e;
	struct live_kunw_loading *ld = calloc(1, sizeof(*ld));
	if (!ld) {
		lk_free(lk);
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	ld->lk = lk;
	pthread_mutex_init(&ld->mu, NULL);
	ld->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ld->t0 = now_ns();
	e = ld->efd < 0 ? -errno : 0;
	/* (detached: an abandoned load frees itself when the verifier is done with it) */
	pthread_attr_t at;
	if (!e && !(e = -pthread_attr_init(&at))) {
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		e = -pthread_create(&ld->th, &at, loading_main, ld);
		pthread_attr_destroy(&at);
	}
	if (e) {
		snprintf(why, len, "the loading thread could not be started: %s", strerror(-e));
		loading_free(ld);
		return e;
	}
	*out = ld;
	return 0;
}

int live_kunw_loading_fd(const struct live_kunw_loading *ld)
{
	return ld ? ld->efd : -1;
}

int live_kunw_loading_take(struct live_kunw_loading *ld, struct live_kunw **out, uint64_t *ns, char *why, size_t len)
{
	*out = NULL;
	pthread_mutex_lock(&ld->mu);
	bool done = ld->done;
	pthread_mutex_unlock(&ld->mu);
	if (!done)
		return -EINPROGRESS;
	*ns = ld->ns;
	int e = ld->err;
	if (e) {
		snprintf(why, len, "%s", ld->why);
		loading_free(ld);
		return e;
	}
	struct live_kunw *lk = ld->lk;
	ld->lk = NULL;
	loading_free(ld);
	if ((e = lk_finish(lk, why, len)))
		return e;
	*out = lk;
	return 0;
}

void live_kunw_loading_cancel(struct live_kunw_loading *ld)
{
	if (!ld)
		return;
	pthread_mutex_lock(&ld->mu);
	bool done = ld->done;
	ld->abandoned = true;
	pthread_mutex_unlock(&ld->mu);
	/* (still in the verifier: the thread frees it when that returns; a process that exits
	 * meanwhile ends it there, the verifier stopping at the pending signal) */
	if (done)
		loading_free(ld);
}

void live_kunw_late_start(struct live_kunw *lk)
{
	if (!lk || !lk->r)
		return;
	/* the processes the tracker knows: their mappings loaded at the next update (their records
	 * went by before the program was there) */
	size_t it = 0;
	uint64_t key;
	void *v;
	while (base_map_next(&lk->t->procs, &it, &key, &v)) {
		struct tracker_proc *p = v;
		struct kproc *kp = p->exited ? NULL : kproc_get(lk, p->pid, true);
		if (kp) {
			kp->dirty = true;
			lk->any_dirty = true;
		}
	}
	young(lk);
	tick(lk);
}

void live_kunw_ids(struct live_kunw *lk, uint64_t id, uint64_t sw_id, unsigned sw_attr)
{
	if (!lk)
		return;
	lk->id = id;
	lk->sw_id = sw_id;
	lk->sw_attr = sw_attr;
}

int live_kunw_attach(struct live_kunw *lk, int fd, bool sw)
{
	if (!lk)
		return -EINVAL;
	if (sw)
		return kunw_attach_switch(lk->k, fd);
	/* (waits timed in the kernel: the events are per CPU, the followed tasks' samples kept) */
	return lk->wait ? kunw_attach_followed(lk->k, fd) : kunw_attach(lk->k, fd);
}

void live_kunw_start(struct live_kunw *lk, struct uw_reader *r)
{
	if (!lk || lk->r)
		return;
	lk->r = r;
	lk->t = uw_reader_tracker(r);
	lk->next_fn = r->record_fn;
	lk->next_ctx = r->record_ctx;
	perf_reader_set_record_fn(r, on_record, lk);
	reader_set_kunw_hook(r, on_sample, lk);
}

void live_kunw_status(struct live_kunw *lk, struct uw_record_status *st)
{
	if (!lk)
		return;
	st->kernel_unwind = 1;
	struct kunw_counters c;
	if (!kunw_counters(lk->k, &c)) {
		st->kernel_samples = c.samples;
		st->kernel_lost = c.lost;
		/* (samples the program could not hand over are lost samples, as the rings' are) */
		st->lost += c.lost;
	}
	st->kernel_finished = lk->finished;
	st->kernel_stale = lk->stale;
	st->kernel_map_bytes = lk->peak_bytes;
	st->kernel_tables = lk->tables;
	st->offcpu_kernel = lk->sw_walked;
	st->offcpu_kernel_finished = lk->sw_finished;
}

void live_kunw_stats(struct live_kunw *lk, struct uw_kernel_unwind_stats *st)
{
	if (!lk)
		return;
	struct kunw_counters c;
	if (!kunw_counters(lk->k, &c)) {
		st->samples = c.samples;
		st->frames = c.frames;
		st->lost = c.lost;
		st->handover_no_process = c.fallbacks[KUNW_FB_NO_PROC];
		st->handover_no_mapping = c.fallbacks[KUNW_FB_NO_MAP];
		st->handover_no_table = c.fallbacks[KUNW_FB_NO_TABLE];
		st->handover_rule = c.fallbacks[KUNW_FB_RULE];
		st->handover_frame0 = c.fallbacks[KUNW_FB_FP];
		st->handover_bad_table = c.fallbacks[KUNW_FB_TABLE];
	}
	st->finished = lk->finished;
	st->finished_missing = lk->missing;
	st->late_samples = lk->late_total;
	st->late_missing = lk->late_missing;
	st->stale = lk->stale;
	st->tables = lk->tables;
	st->tables_built = lk->built;
	st->tables_evicted = lk->evicted;
	st->map_bytes = kunw_bytes(lk->k);
	st->map_bytes_peak = UW_MAX(lk->peak_bytes, st->map_bytes);
	struct kunw_prog_info pi;
	if (!kunw_prog_info(lk->k, &pi)) {
		st->run_count = pi.run_cnt;
		st->run_time_ns = pi.run_time_ns;
	}
}

void live_kunw_close(struct live_kunw *lk)
{
	if (!lk)
		return;
	struct uw_reader *r = lk->r;
	if (r) {
		/* the reader as it was before live_kunw_start */
		perf_reader_set_record_fn(r, lk->next_fn, lk->next_ctx);
		reader_set_kunw_hook(r, NULL, NULL);
	}
	if (r && r->kunw.compared)
		base_log(&lk->s->log, UW_LOG_WARN,
			 "kernel unwinding verify: %llu samples compared where the copy reached a root, %llu differ",
			 (unsigned long long)r->kunw.compared, (unsigned long long)r->kunw.differ);
	struct kunw_prog_info pi;
	struct kunw_counters c;
	if (!kunw_prog_info(lk->k, &pi) && !kunw_counters(lk->k, &c))
		base_log(&lk->s->log, UW_LOG_INFO,
			 "kernel unwinding: the program ran %llu times, %llu ns in all (kernel.bpf_stats_enabled; 0 when "
			 "off), at the switch-outs %llu times, %llu ns in all, at the sched_switch tracepoint %llu times, "
			 "%llu ns in all; %llu user frames walked, %llu records lost; %llu bytes in BPF maps at most",
			 (unsigned long long)pi.run_cnt, (unsigned long long)pi.run_time_ns,
			 (unsigned long long)pi.switch_run_cnt, (unsigned long long)pi.switch_run_time_ns,
			 (unsigned long long)pi.wait_run_cnt, (unsigned long long)pi.wait_run_time_ns, (unsigned long long)c.frames,
			 (unsigned long long)c.lost, (unsigned long long)lk->peak_bytes);
	base_log(&lk->s->log, UW_LOG_INFO,
		 "kernel unwinding: %llu samples finished in user space for want of the process's mappings or a table; "
		 "after each program's first %u samples: %llu of %llu (%.2f%%); %llu queued tables built first for them",
		 (unsigned long long)lk->missing, LATE_AFTER, (unsigned long long)lk->late_missing,
		 (unsigned long long)lk->late_total, lk->late_total ? 100.0 * (double)lk->late_missing / (double)lk->late_total : 0.0,
		 (unsigned long long)lk->urgent);
	if (!kunw_counters(lk->k, &c))
		base_log(&lk->s->log, UW_LOG_INFO,
			 "kernel unwinding: handed over: %llu with no mappings loaded for the process, %llu with the pc in "
			 "none of them, %llu through a module without its table, %llu at a rule the program does not follow, "
			 "%llu at frame 0 without a row or frame pointer, %llu at a table that does not hold together; "
			 "%llu lookups found a process's mappings in the young processes' store",
			 (unsigned long long)c.fallbacks[KUNW_FB_NO_PROC], (unsigned long long)c.fallbacks[KUNW_FB_NO_MAP],
			 (unsigned long long)c.fallbacks[KUNW_FB_NO_TABLE], (unsigned long long)c.fallbacks[KUNW_FB_RULE],
			 (unsigned long long)c.fallbacks[KUNW_FB_FP], (unsigned long long)c.fallbacks[KUNW_FB_TABLE],
			 (unsigned long long)c.young);
	struct kunw_wait_counters wc;
	if (!kunw_wait_counters(lk->k, &wc) && wc.waits)
		base_log(&lk->s->log, UW_LOG_INFO,
			 "kernel unwinding: waits: %llu begun, %llu walked, %llu records written (switch-ins, totals), "
			 "%llu lost, %llu switches untimed, %llu switch-ins the tracepoint did not show (closed at the "
			 "thread's last arrival); read: %llu walks, %llu switch-ins, %llu totals",
			 (unsigned long long)wc.waits, (unsigned long long)wc.walked, (unsigned long long)wc.records,
			 (unsigned long long)wc.lost, (unsigned long long)wc.untimed, (unsigned long long)wc.missed_ins,
			 (unsigned long long)lk->sw_walked,
			 (unsigned long long)lk->wait_ins, (unsigned long long)lk->wait_sums);
	if (lk->b.started) {
		pthread_mutex_lock(&lk->b.mu);
		lk->b.stop = true;
		pthread_cond_signal(&lk->b.cv);
		pthread_mutex_unlock(&lk->b.mu);
		pthread_join(lk->b.th, NULL);
	}
	base_map_free(&lk->b.idents);
	pthread_mutex_destroy(&lk->b.mu);
	pthread_cond_destroy(&lk->b.cv);
	if (lk->b.efd >= 0)
		close(lk->b.efd);
	if (lk->epfd >= 0)
		close(lk->epfd);
	if (lk->tfd >= 0)
		close(lk->tfd);
	base_log(&lk->s->log, UW_LOG_INFO,
		 "kernel unwinding: %llu tables built (on the builder thread; %llu of them read from the cache directory), %llu loaded, %llu evicted to make room",
		 (unsigned long long)lk->built, (unsigned long long)lk->cached, (unsigned long long)lk->tables,
		 (unsigned long long)lk->evicted);
	size_t it = 0;
	uint64_t key;
	void *v;
	while (base_map_next(&lk->procs, &it, &key, &v))
		kproc_free(lk, v);
	base_map_free(&lk->procs);
	it = 0;
	while (base_map_next(&lk->mods, &it, &key, &v)) {
		kunw_table_free(&((struct kmod *)v)->tbl);
		free(((struct kmod *)v)->segs);
		free(v);
	}
	base_map_free(&lk->mods);
	base_map_free(&lk->ids);
	kunw_close(lk->k);
	free(lk->buf);
	free(lk);
}

#endif
