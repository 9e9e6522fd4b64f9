/* SPDX-License-Identifier: MIT */
/* The public tracker: events in plain fields, into the address spaces of tracker.c. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include <fcntl.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "process/tracker.h"

UW_API struct uw_tracker *uw_tracker_new(struct uw_session *s, const struct uw_tracker_opts *opts)
{
	if (!s) {
		errno = EINVAL;
		return NULL;
	}
	struct uw_tracker *t = calloc(1, sizeof(*t));
	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	int oe = BASE_OPTS_COPY(&t->o, uw_tracker_opts, live, opts);
	if (oe) {
		free(t);
		errno = -oe;
		return NULL;
	}
	t->s = s;
	t->o.sz = sizeof(t->o);
	if (!t->o.exit_grace_ns)
		t->o.exit_grace_ns = 1000000000ull; /* late samples within 1 s of EXIT still resolve */
	/* writers first: unwinding threads that always hold the read lock between them would
	 * otherwise keep the events out for ever */
	pthread_rwlockattr_t ra;
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&t->rw, &ra);
	pthread_rwlockattr_destroy(&ra);
	pthread_mutex_init(&t->jit_mu, NULL);
	pthread_mutex_init(&t->cache_mu, NULL);
	pthread_mutex_init(&t->hit_mu, NULL);
	t->old_hits = (struct base_vec)BASE_VEC_INIT(uint64_t *);
	t->spare_caches = BASE_VEC_INIT(struct cfi_cache *);
	base_map_init(&t->procs);
	base_map_init(&t->threads);
	base_map_init(&t->buildids);
	t->st.sz = sizeof(t->st);
	t->cfi_cache = cfi_cache_new();
	t->kernel = ksym_kernel_new(s, t->o.live != 0);
	if (!t->cfi_cache || !t->kernel) {
		uw_tracker_free(t);
		errno = ENOMEM;
		return NULL;
	}
	if (t->o.live)
		module_live(s);
	return t;
}

UW_API void uw_tracker_free(struct uw_tracker *t)
{
	if (!t)
		return;
	size_t it = 0;
	void *val;
	while (base_map_next(&t->procs, &it, NULL, &val))
		tracker_proc_free(t, val);
	base_map_free(&t->procs);
	it = 0;
	while (base_map_next(&t->threads, &it, NULL, &val))
		free(val);
	base_map_free(&t->threads);
	base_map_free(&t->buildids);
	free(t->hit);
	for (size_t i = 0; i < t->old_hits.len; i++)
		free(*(uint64_t **)base_vec_at(&t->old_hits, i));
	base_vec_free(&t->old_hits);
	pthread_mutex_destroy(&t->hit_mu);
	cfi_cache_free(t->cfi_cache);
	for (size_t i = 0; i < t->spare_caches.len; i++)
		cfi_cache_free(*(struct cfi_cache **)base_vec_at(&t->spare_caches, i));
	base_vec_free(&t->spare_caches);
	ksym_kernel_drop(t->kernel);
	pthread_rwlock_destroy(&t->rw);
	pthread_mutex_destroy(&t->jit_mu);
	pthread_mutex_destroy(&t->cache_mu);
	free(t);
}

/* Processes that exited long enough ago go as time passes. */
static void tick(struct uw_tracker *t, uint64_t time)
{
	if (time && ++t->since_sweep >= 4096) {
		t->since_sweep = 0;
		tracker_sweep(t, time);
	}
}

UW_API int uw_tracker_mmap(struct uw_tracker *t, const struct uw_mmap_event *ev)
{
	struct uw_mmap_event e;
	if (!t || !ev)
		return -EINVAL;
	int oe = BASE_OPTS_COPY(&e, uw_mmap_event, path, ev);
	if (oe)
		return oe;
	if (!e.path || (e.build_id_size && !e.build_id))
		return -EINVAL;
	tick(t, e.time);
	bool kernel = e.pid == (uint32_t)-1;
	return tracker_map_event(t, (int32_t)e.pid, kernel ? TRACKER_CPUMODE_KERNEL : 0, e.addr, e.len, e.pgoff, e.prot,
				 e.maj, e.min, e.ino, e.ino_generation, e.build_id, e.build_id_size, e.path, strlen(e.path));
}

UW_API int uw_tracker_comm(struct uw_tracker *t, uint32_t pid, uint32_t tid, const char *comm, int exec,
                           uint64_t time)
{
	if (!t || !comm) {
		if (t) {
			tracker_wrlock(t);
			t->st.malformed_comm++;
			tracker_unlock(t);
		}
		return -EINVAL;
	}
	tick(t, time);
	return tracker_set_comm(t, (int32_t)pid, (int32_t)tid, comm, strnlen(comm, 4096), exec != 0, time);
}

UW_API int uw_tracker_fork(struct uw_tracker *t, uint32_t ppid, uint32_t ptid, uint32_t pid, uint32_t tid,
                           uint64_t time)
{
	if (!t)
		return -EINVAL;
	tick(t, time);
	return tracker_fork(t, (int32_t)pid, (int32_t)ppid, (int32_t)tid, (int32_t)ptid, time);
}

UW_API int uw_tracker_exit(struct uw_tracker *t, uint32_t pid, uint32_t tid, uint64_t time)
{
	if (!t)
		return -EINVAL;
	tick(t, time);
	tracker_exit(t, (int32_t)pid, (int32_t)tid, time);
	return 0;
}

UW_API int uw_tracker_note_build_id(struct uw_tracker *t, const char *path, const uint8_t *build_id, size_t size)
{
	if (!t || !path || !build_id || !size || size > ELFV_MAX_BUILD_ID)
		return -EINVAL;
	tracker_note_build_id(t, path, build_id, size);
	return 0;
}

UW_API void uw_tracker_sweep(struct uw_tracker *t, uint64_t now)
{
	if (t)
		tracker_sweep(t, now);
}

UW_API int uw_tracker_stats(const struct uw_tracker *t, struct uw_tracker_stats *st)
{
	if (!t || !st || st->sz < sizeof(size_t))
		return -EINVAL;
	struct uw_tracker *w = (struct uw_tracker *)t; /* (its lock) */
	tracker_rdlock(w);
	struct uw_tracker_stats cur = t->st;
	cur.processes = t->procs.len;
	cur.threads = t->threads.len;
	tracker_unlock(w);
	size_t want = st->sz;
	memcpy(st, &cur, UW_MIN(want, sizeof(cur)));
	if (want > sizeof(cur))
		memset((char *)st + sizeof(cur), 0, want - sizeof(cur));
	st->sz = want;
	return 0;
}

UW_API int uw_tracker_lookup(struct uw_tracker *t, uint32_t pid, uint64_t addr, struct uw_module **m, uint64_t *rel)
{
	if (!t)
		return -EINVAL;
	tracker_rdlock(t);
	struct tracker_find_ctx fc = { t, tracker_sample_proc_rd(t, (int32_t)pid, UINT64_MAX), UINT64_MAX, true, 0 };
	struct unw_pc_info info = { 0 };
	bool found = fc.p && tracker_find_pc(&fc, addr, &info);
	if (!found && fc.miss_pc && tracker_resolve_miss(&fc, (int32_t)pid))
		found = tracker_find_pc(&fc, addr, &info);
	tracker_unlock(t);
	if (!found)
		return -ENOENT;
	if (m)
		*m = info.module;
	if (rel)
		*rel = addr - info.bias;
	return 0;
}


UW_API struct uw_kernel *uw_tracker_kernel(struct uw_tracker *t)
{
	return t ? ksym_kernel_keep(t->kernel) : NULL;
}

UW_API int uw_tracker_load_kallsyms(struct uw_tracker *t, const char *path)
{
	return t ? ksym_kernel_load(t->kernel, path, false) : -EINVAL;
}

UW_API int uw_tracker_load_vmlinux(struct uw_tracker *t, const char *path)
{
	return t ? ksym_kernel_load(t->kernel, path, true) : -EINVAL;
}

UW_API const char *uw_tracker_comm_of(struct uw_tracker *t, uint32_t pid, uint32_t tid)
{
	if (!t)
		return NULL;
	tracker_rdlock(t);
	struct tracker_thread *th = tracker_thread_get(t, (int32_t)pid, (int32_t)tid, false);
	const char *c = th && th->pid == (int32_t)pid ? th->comm : NULL;
	if (!c) { /* a thread no event named: its process's name, as perf shows it */
		struct tracker_proc *p = tracker_proc_get(t, (int32_t)pid, false);
		c = p ? p->comm : NULL;
	}
	tracker_unlock(t);
	return c;
}
