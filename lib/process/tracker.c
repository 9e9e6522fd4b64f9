/* SPDX-License-Identifier: MIT */
/*
 * pid -> address space. Mappings are built from MMAP/MMAP2 (addr, len, pgoff) and kept sorted
 * and disjoint: a new mapping replaces whatever it overlaps, splitting older ones as the kernel
 * does. FORK copies the parent's space, COMM with the exec flag starts a new one, and EXIT only
 * marks the process: it is freed after a grace period (or when the pid is reused), so late
 * samples from other CPUs still resolve.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include <fcntl.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/file.h"
#include "process/tracker.h"

/* A mapping stops or starts referring to a module; with a live tracker, an unreferenced module
 * goes to the idle list (module.c), from which the oldest are freed. */
static void mod_unref(struct uw_tracker *t, struct uw_module *m)
{
	if (m)
		module_unref(t->s, m);
}

static void mod_ref(struct uw_tracker *t, struct uw_module *m)
{
	if (m)
		module_ref(t->s, m);
}

/* ---- locks (see struct uw_tracker) */

void tracker_wrlock(struct uw_tracker *t)
{
	pthread_rwlock_wrlock(&t->rw);
}

void tracker_rdlock(struct uw_tracker *t)
{
	pthread_rwlock_rdlock(&t->rw);
}

void tracker_unlock(struct uw_tracker *t)
{
	pthread_rwlock_unlock(&t->rw);
}

struct cfi_cache *tracker_cache_take(struct uw_tracker *t)
{
	/* one thread at a time finds the slot full: no lock, no allocation */
	struct cfi_cache *c = __atomic_exchange_n(&t->cfi_cache, NULL, __ATOMIC_ACQUIRE);
	if (c)
		return c;
	pthread_mutex_lock(&t->cache_mu);
	if (t->spare_caches.len)
		c = *(struct cfi_cache **)base_vec_at(&t->spare_caches, --t->spare_caches.len);
	pthread_mutex_unlock(&t->cache_mu);
	return c ? c : cfi_cache_new(); /* (one per thread unwinding at once, kept) */
}

void tracker_cache_give(struct uw_tracker *t, struct cfi_cache *c)
{
	if (!c)
		return;
	struct cfi_cache *none = NULL;
	if (__atomic_compare_exchange_n(&t->cfi_cache, &none, c, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&t->cache_mu);
	struct cfi_cache **slot = base_vec_push(&t->spare_caches);
	if (slot)
		*slot = c;
	pthread_mutex_unlock(&t->cache_mu);
	if (!slot)
		cfi_cache_free(c);
}

/* ---- processes and threads (changed under the write lock) */

/* The process lets go of its mapping list: the last holder of a shared one, or its only one,
 * frees it and the module references it holds. */
static void maps_release(struct uw_tracker *t, struct tracker_proc *p)
{
	if (p->share && --p->share->refs > 0) {
		p->share = NULL;
		p->maps = BASE_VEC_INIT(struct tracker_map);
		return;
	}
	free(p->share);
	p->share = NULL;
	struct tracker_map *maps = p->maps.data;
	for (size_t i = 0; i < p->maps.len; i++)
		mod_unref(t, maps[i].mod);
	base_vec_free(&p->maps);
}

/* The process's list its own before it changes: a shared one is copied (fork shares it: a
 * recording of many forks of a process with many mappings held a copy per child, gigabytes
 * for a file of megabytes). @return 0 or -ENOMEM. */
static int maps_own(struct uw_tracker *t, struct tracker_proc *p)
{
	if (!p->share)
		return 0;
	if (p->share->refs == 1) {
		free(p->share);
		p->share = NULL;
		return 0;
	}
	struct base_vec v = BASE_VEC_INIT(struct tracker_map);
	if (base_vec_reserve(&v, p->maps.len + 2))
		return -ENOMEM;
	memcpy(v.data, p->maps.data, p->maps.len * sizeof(struct tracker_map));
	v.len = p->maps.len;
	struct tracker_map *m = v.data;
	for (size_t i = 0; i < v.len; i++)
		mod_ref(t, m[i].mod);
	p->share->refs--;
	p->share = NULL;
	p->maps = v;
	return 0;
}

void tracker_proc_free(struct uw_tracker *t, struct tracker_proc *p)
{
	if (__atomic_load_n(&t->last_proc, __ATOMIC_RELAXED) == p)
		__atomic_store_n(&t->last_proc, NULL, __ATOMIC_RELAXED);
	maps_release(t, p);
	jit_dump_free(p->jd);
	if (p->maps_fd > 0 && base_fd_is(p->maps_fd, p->maps_dev, p->maps_ino))
		close(p->maps_fd);
	free(p);
}

struct tracker_proc *tracker_proc_get(struct uw_tracker *t, int32_t pid, bool create)
{
	/* (samples come in runs of one process: the last one found is asked for again) */
	struct tracker_proc *last = __atomic_load_n(&t->last_proc, __ATOMIC_RELAXED);
	if (last && last->pid == pid)
		return last;
	struct tracker_proc *p = base_map_get(&t->procs, (uint64_t)(uint32_t)pid);
	if (p && p != last)
		__atomic_store_n(&t->last_proc, p, __ATOMIC_RELAXED);
	if (p || !create)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->maps = BASE_VEC_INIT(struct tracker_map);
	if (base_map_put(&t->procs, (uint64_t)(uint32_t)pid, p)) {
		free(p);
		return NULL;
	}
	return p;
}

static struct tracker_proc *sample_proc_make(struct uw_tracker *t, int32_t pid, uint64_t time)
{
	struct tracker_proc *p = tracker_proc_get(t, pid, false);
	if (p)
		return p; /* (made by another thread meanwhile) */
	/* the header's promise for a live tracker: a pc in no known mapping is asked of the kernel,
	 * for a process no event told of too */
	char path[32];
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	bool gone = access(path, F_OK) != 0;
	p = tracker_proc_get(t, pid, true);
	if (p && gone) {
		/* (kept marked, so that its further samples do not look again) */
		p->exited = true;
		p->exit_time = time == UINT64_MAX ? 0 : time;
		if (p->maps_fd > 0 && base_fd_is(p->maps_fd, p->maps_dev, p->maps_ino))
			close(p->maps_fd);
		p->maps_fd = -1;
	}
	return p;
}

struct tracker_proc *tracker_sample_proc(struct uw_tracker *t, int32_t pid, uint64_t time)
{
	struct tracker_proc *p = tracker_proc_get(t, pid, false);
	if (p || !t->o.live || pid <= 0)
		return p;
	tracker_wrlock(t);
	p = sample_proc_make(t, pid, time);
	tracker_unlock(t);
	return p;
}

struct tracker_proc *tracker_sample_proc_rd(struct uw_tracker *t, int32_t pid, uint64_t time)
{
	struct tracker_proc *p = tracker_proc_get(t, pid, false);
	if (p || !t->o.live || pid <= 0)
		return p;
	tracker_unlock(t);
	tracker_wrlock(t);
	sample_proc_make(t, pid, time);
	tracker_unlock(t);
	tracker_rdlock(t);
	return tracker_proc_get(t, pid, false); /* (an EXIT swept meanwhile: NULL) */
}

bool tracker_resolve_miss(struct tracker_find_ctx *fc, int32_t pid)
{
	struct uw_tracker *t = fc->t;
	uint64_t pc = fc->miss_pc;
	fc->miss_pc = 0;
	tracker_unlock(t);
	tracker_wrlock(t);
	struct tracker_proc *p = tracker_proc_get(t, pid, false);
	bool found = p && tracker_ask_kernel(t, p, pc, fc->time);
	tracker_unlock(t);
	tracker_rdlock(t);
	fc->p = tracker_proc_get(t, pid, false);
	return found && fc->p;
}

struct tracker_thread *tracker_thread_get(struct uw_tracker *t, int32_t pid, int32_t tid, bool create)
{
	struct tracker_thread *th = base_map_get(&t->threads, (uint64_t)(uint32_t)tid);
	if (th && (th->pid == pid || pid < 0 || !create))
		return th;
	if (!create)
		return NULL;
	if (!th) {
		th = calloc(1, sizeof(*th));
		if (!th)
			return NULL;
		if (base_map_put(&t->threads, (uint64_t)(uint32_t)tid, th)) {
			free(th);
			return NULL;
		}
	}
	/* a reused tid, or a new thread: start fresh */
	const char *pcomm = NULL;
	struct tracker_proc *p = tracker_proc_get(t, pid, false);
	if (p)
		pcomm = p->comm;
	th->tid = tid;
	th->pid = pid;
	th->comm = pcomm;
	th->exited = false;
	return th;
}

/* (every frame's: inlined into tracker_find_pc) */
static inline const struct tracker_map *find_map(struct tracker_proc *p, uint64_t addr)
{
	const struct tracker_map *m = p->maps.data;
	/* consecutive frames mostly fall in the mapping of the one before */
	uint32_t last = __atomic_load_n(&p->last_map, __ATOMIC_RELAXED);
	if (last < p->maps.len && addr >= m[last].start && addr < m[last].end)
		return &m[last];
	size_t lo = base_upper_bound(m, p->maps.len, sizeof(*m), offsetof(struct tracker_map, start), addr);
	if (lo && addr < m[lo - 1].end) {
		__atomic_store_n(&p->last_map, (uint32_t)(lo - 1), __ATOMIC_RELAXED);
		return &m[lo - 1];
	}
	return NULL;
}

const struct tracker_map *tracker_find_map(struct tracker_proc *p, uint64_t addr)
{
	return find_map(p, addr);
}

int tracker_mmap(struct uw_tracker *t, int32_t pid, uint64_t addr, uint64_t len, uint64_t pgoff,
              uint32_t prot, struct uw_module *mod)
{
	if (!len || addr + len < addr)
		return -UW_EFORMAT;
	struct tracker_proc *p = tracker_proc_get(t, pid, true);
	if (!p)
		return -ENOMEM;
	uint64_t end = addr + len;
	if (maps_own(t, p))
		return -ENOMEM;
	/* referenced before the mappings it replaces let go of theirs (it may be one of them) */
	mod_ref(t, mod);
	if (t->o.live && mod)
		module_note_live(mod, pid, addr, end);
	/* The mappings it overlaps, [lo, hi) (sorted by start and disjoint: by end too), are
	 * replaced in place by what is left of the first and the last beside it and the new one:
	 * a binary search and one move of the mappings above, not a copy of the whole list (a
	 * process's mappings come in address order when synthesized, and the list was rebuilt for
	 * each: quadratic in a recording's mappings, minutes for a file of a few hundred thousand). */
	struct tracker_map *m = p->maps.data;
	size_t n = p->maps.len;
	size_t lo = base_upper_bound(m, n, sizeof(*m), offsetof(struct tracker_map, end), addr);
	size_t hi = base_upper_bound(m, n, sizeof(*m), offsetof(struct tracker_map, start), end - 1);
	if (hi < lo)
		hi = lo;
	struct tracker_map left, right;
	bool has_left = lo < hi && m[lo].start < addr, has_right = lo < hi && m[hi - 1].end > end;
	size_t put = 1 + has_left + has_right;
	if (put > hi - lo && base_vec_reserve(&p->maps, n - (hi - lo) + put)) {
		mod_unref(t, mod);
		return -ENOMEM;
	}
	m = p->maps.data;
	if (has_left) {
		left = m[lo];
		left.end = addr;
		mod_ref(t, left.mod);
	}
	if (has_right) {
		right = m[hi - 1];
		right.pgoff += end - right.start;
		right.start = end;
		right.bias_known = m[hi - 1].bias_known; /* same segment, same bias */
		mod_ref(t, right.mod);
	}
	/* (what they keep referenced first: a module is let go only when no piece of it is left) */
	for (size_t i = lo; i < hi; i++)
		mod_unref(t, m[i].mod);
	memmove(&m[lo + put], &m[hi], (n - hi) * sizeof(*m));
	size_t at = lo;
	if (has_left)
		m[at++] = left;
	m[at++] = (struct tracker_map){ .start = addr, .end = end, .pgoff = pgoff, .mod = mod, .exec = (prot & PROT_EXEC) != 0 };
	if (has_right)
		m[at++] = right;
	p->maps.len = n - (hi - lo) + put;
	return 0;
}

static int fork_locked(struct uw_tracker *t, int32_t pid, int32_t ppid, int32_t tid, int32_t ptid, uint64_t time)
{
	struct tracker_thread *pt = tracker_thread_get(t, ppid, ptid, false);
	const char *comm = pt ? pt->comm : NULL;
	if (pid == ppid) {
		/* a new thread in the same process */
		struct tracker_proc *p = tracker_proc_get(t, pid, true);
		if (!p)
			return -ENOMEM;
		struct tracker_thread *th = tracker_thread_get(t, pid, tid, true);
		if (!th)
			return -ENOMEM;
		if (comm)
			th->comm = comm;
		return 0;
	}
	struct tracker_proc *old = tracker_proc_get(t, pid, false);
	if (old) {
		/* pid reuse: the old process is gone for good */
		base_map_del(&t->procs, (uint64_t)(uint32_t)pid);
		tracker_proc_free(t, old);
		t->st.processes_freed++;
	}
	struct tracker_proc *p = tracker_proc_get(t, pid, true);
	if (!p)
		return -ENOMEM;
	/* born in the recording: a perf map older than this is another process's */
	p->start_time = time;
	p->start_known = true;
	struct tracker_proc *parent = tracker_proc_get(t, ppid, false);
	if (parent && parent->maps.len) {
		/* the parent's list, shared until one of them changes (maps_own) */
		if (!parent->share) {
			if (!(parent->share = calloc(1, sizeof(*parent->share))))
				return -ENOMEM;
			parent->share->refs = 1;
		}
		parent->share->refs++;
		p->share = parent->share;
		p->maps = parent->maps;
	}
	if (parent)
		p->comm = parent->comm;
	if (comm)
		p->comm = comm;
	struct tracker_thread *th = tracker_thread_get(t, pid, tid, true);
	if (!th)
		return -ENOMEM;
	th->comm = p->comm;
	return 0;
}

int tracker_fork(struct uw_tracker *t, int32_t pid, int32_t ppid, int32_t tid, int32_t ptid, uint64_t time)
{
	tracker_wrlock(t);
	int e = fork_locked(t, pid, ppid, tid, ptid, time);
	tracker_unlock(t);
	return e;
}

static int comm_locked(struct uw_tracker *t, int32_t pid, int32_t tid, const char *comm, size_t len, bool exec,
                       uint64_t time)
{
	const char *c = session_intern(t->s, comm, len);
	if (!c)
		return -ENOMEM;
	struct tracker_proc *p = tracker_proc_get(t, pid, true);
	if (!p)
		return -ENOMEM;
	if (exec) {
		/* the old image is gone: mappings of the new one follow this record */
		maps_release(t, p);
		p->exited = false;
		jit_dump_free(p->jd); /* JIT code of the old image */
		p->jd = NULL;
		p->jd_tried = false;
		p->jit = NULL;
		p->jit_tried = false;
		if (time) { /* a new program in it */
			p->start_time = time;
			p->start_known = true;
		}
	}
	if (pid == tid || exec || !p->comm)
		p->comm = c;
	struct tracker_thread *th = tracker_thread_get(t, pid, tid, true);
	if (!th)
		return -ENOMEM;
	th->comm = c;
	return 0;
}

int tracker_set_comm(struct uw_tracker *t, int32_t pid, int32_t tid, const char *comm, size_t len, bool exec, uint64_t time)
{
	tracker_wrlock(t);
	int e = comm_locked(t, pid, tid, comm, len, exec, time);
	tracker_unlock(t);
	return e;
}

void tracker_exit(struct uw_tracker *t, int32_t pid, int32_t tid, uint64_t time)
{
	tracker_wrlock(t);
	struct tracker_thread *th = tracker_thread_get(t, pid, tid, false);
	if (th) {
		th->exited = true;
		th->exit_time = time;
	}
	if (pid == tid) {
		struct tracker_proc *p = tracker_proc_get(t, pid, false);
		if (p) {
			p->exited = true;
			p->exit_time = time;
		}
	}
	tracker_unlock(t);
}

static void sweep_locked(struct uw_tracker *t, uint64_t now)
{
	if (now < t->o.exit_grace_ns)
		return;
	uint64_t limit = now - t->o.exit_grace_ns;
	size_t it = 0;
	uint64_t key;
	void *val;
	/* collect first: deleting while iterating would skip entries moved by backward shift */
	struct base_vec dead = BASE_VEC_INIT(uint64_t);
	while (base_map_next(&t->procs, &it, &key, &val)) {
		struct tracker_proc *p = val;
		if (p->exited && p->exit_time < limit) {
			uint64_t *k = base_vec_push(&dead);
			if (k)
				*k = key;
		}
	}
	for (size_t i = 0; i < dead.len; i++) {
		uint64_t k = *(uint64_t *)base_vec_at(&dead, i);
		struct tracker_proc *p = base_map_del(&t->procs, k);
		if (p) {
			tracker_proc_free(t, p);
			t->st.processes_freed++;
		}
	}
	dead.len = 0;
	it = 0;
	while (base_map_next(&t->threads, &it, &key, &val)) {
		struct tracker_thread *th = val;
		if (th->exited && th->exit_time < limit) {
			uint64_t *k = base_vec_push(&dead);
			if (k)
				*k = key;
		}
	}
	for (size_t i = 0; i < dead.len; i++)
		free(base_map_del(&t->threads, *(uint64_t *)base_vec_at(&dead, i)));
	base_vec_free(&dead);
}

void tracker_sweep(struct uw_tracker *t, uint64_t now)
{
	tracker_wrlock(t);
	sweep_locked(t, now);
	tracker_unlock(t);
}

/* ---- what the recording says: build-ids by path, the kernel */

static void note_build_id_hex(struct uw_tracker *t, const char *path, const char *hex)
{
	size_t n = strlen(hex);
	if (!n || n > 2 * ELFV_MAX_BUILD_ID)
		return;
	const char *h = session_intern(t->s, hex, n);
	if (h)
		base_map_put(&t->buildids, base_hash_bytes(path, strlen(path)), (void *)h);
	if (!strcmp(path, "[kernel.kallsyms]"))
		ksym_kernel_note_build_id(t->kernel, hex);
}

static void note_build_id(struct uw_tracker *t, const char *path, const uint8_t *bid, size_t len)
{
	if (!len || len > ELFV_MAX_BUILD_ID)
		return;
	char hex[2 * ELFV_MAX_BUILD_ID + 1];
	base_hex(bid, len, hex);
	note_build_id_hex(t, path, hex);
}

void tracker_note_build_id_hex(struct uw_tracker *t, const char *path, const char *hex)
{
	tracker_wrlock(t);
	note_build_id_hex(t, path, hex);
	tracker_unlock(t);
}

void tracker_note_build_id(struct uw_tracker *t, const char *path, const uint8_t *bid, size_t len)
{
	tracker_wrlock(t);
	note_build_id(t, path, bid, len);
	tracker_unlock(t);
}

const char *tracker_build_id(const struct uw_tracker *t, const char *path, size_t len)
{
	return base_map_get(&t->buildids, base_hash_bytes(path, len));
}

static int map_event_locked(struct uw_tracker *t, int32_t pid, uint32_t cpumode, uint64_t addr, uint64_t len,
                            uint64_t pgoff, uint32_t prot, uint32_t maj, uint32_t min, uint64_t ino, uint64_t ino_gen,
                            const uint8_t *bid, size_t blen, const char *path, size_t fl)
{
	if (blen > ELFV_MAX_BUILD_ID)
		blen = ELFV_MAX_BUILD_ID;
	if (pid == -1 || cpumode == TRACKER_CPUMODE_KERNEL) {
		/* kernel and module maps: symbols come from kallsyms; perf records the kernel map
		 * with pgoff = the address of _text (its relocation reference) */
		if (fl >= 17 && memcmp(path, "[kernel.kallsyms]", 17) == 0) {
			if (pgoff >= addr)
				ksym_kernel_note_text(t->kernel, pgoff);
			if (bid && blen)
				note_build_id(t, "[kernel.kallsyms]", bid, blen);
		}
		return 0;
	}
	if (!len || addr + len < addr) {
		t->st.malformed_mmap++;
		return -EINVAL;
	}
	/* a JIT's jitdump, mapped so that the recording shows it: its loads name JIT code (not
	 * while recording: names are a report's business, and the file is the process's) */
	if ((prot & PROT_EXEC) && !t->o.live && jit_dump_is_path(path, fl) && tracker_jitdump_mmap(t, pid, path, fl))
		return -ENOMEM;
	char hex[2 * ELFV_MAX_BUILD_ID + 1] = "";
	if (blen)
		base_hex(bid, blen, hex);
	else if (tracker_build_id(t, path, fl))
		snprintf(hex, sizeof(hex), "%s", tracker_build_id(t, path, fl));
	struct uw_module *m = module_get_gen(t->s, path, fl, hex, maj, min, ino, ino_gen);
	if (!m)
		return -ENOMEM;
	int e = tracker_mmap(t, pid, addr, len, pgoff, prot, m);
	return e == -ENOMEM ? e : 0;
}

int tracker_map_event(struct uw_tracker *t, int32_t pid, uint32_t cpumode, uint64_t addr, uint64_t len,
                      uint64_t pgoff, uint32_t prot, uint32_t maj, uint32_t min, uint64_t ino, uint64_t ino_gen,
                      const uint8_t *bid, size_t blen, const char *path, size_t fl)
{
	tracker_wrlock(t);
	int e = map_event_locked(t, pid, cpumode, addr, len, pgoff, prot, maj, min, ino, ino_gen, bid, blen, path, fl);
	tracker_unlock(t);
	return e;
}

const char *tracker_comm(struct uw_tracker *t, uint32_t pid, uint32_t tid)
{
	struct tracker_thread *th = tracker_thread_get(t, (int32_t)pid, (int32_t)tid, false);
	if (th && th->comm)
		return th->comm;
	struct tracker_proc *p = tracker_proc_get(t, (int32_t)pid, false);
	if (p && p->comm)
		return p->comm;
	char buf[24];
	int n = snprintf(buf, sizeof(buf), ":%d", (int)tid);
	return session_intern(t->s, buf, (size_t)n);
}

bool tracker_find_pc(void *ctx, uint64_t pc, struct unw_pc_info *out)
{
	struct tracker_find_ctx *c = ctx;
	struct uw_tracker *t = c->t;
	const struct tracker_map *cm = c->p ? find_map(c->p, pc) : NULL;
	if (!cm && c->p && t->o.live && pc >= 4096 && pc < (1ull << 47)) {
		if (c->locked) {
			/* readers do not change mappings: the caller asks, then walks again (pages
			 * asked about in vain are not asked again) */
			uint64_t page = pc >> 12;
			bool vain = false;
			for (unsigned i = 0; i < c->p->nmissed && i < UW_ARRAY_SIZE(c->p->missed); i++)
				vain |= c->p->missed[i] == page;
			if (!vain && !c->miss_pc)
				c->miss_pc = pc;
		} else {
			tracker_wrlock(t);
			bool found = tracker_ask_kernel(t, c->p, pc, c->time);
			tracker_unlock(t);
			if (found)
				cm = find_map(c->p, pc);
		}
	}
	/* JIT code: in an anonymous mapping (or one the recording missed), named by the process's
	 * jitdump as it was at the sample's time, else by its perf-PID.map; the address is
	 * absolute, as perf shows it (not live: the output keeps addresses, and reading a file a
	 * process controls has no place on the thread that drains the rings) */
	if (c->p && !t->o.live && (!cm || !cm->mod || (cm->mod->special && !cm->mod->jit && cm->mod->path[0] != '['))) {
		/* (read when first needed, by whichever thread unwinding needs it first) */
		pthread_mutex_lock(&t->jit_mu);
		struct uw_module *jm = c->p->jd ? jit_dump_find(t->s, c->p->jd, c->p->pid, pc, c->time, t->clock_monotonic) : NULL;
		if (!jm)
			jm = tracker_jit_module(t, c->p);
		pthread_mutex_unlock(&t->jit_mu);
		uint64_t js;
		if (jm && jit_symbol_at(jm, pc, &js)) {
			out->module = jm;
			out->map_addr = jm->jitdump ? JITDUMP_TEXT_OFFSET + (pc - js) : pc;
			out->bias = 0;
			out->code = NULL;
			tracker_module_hit(t, jm);
			return true;
		}
	}
	if (!cm)
		return false;
	struct tracker_map *m = (struct tracker_map *)cm;
	out->module = m->mod;
	out->map_addr = pc - m->start + m->pgoff;
	if (!__atomic_load_n(&m->bias_known, __ATOMIC_ACQUIRE)) {
		/* (threads unwinding at once may both compute it: the same value) */
		uint64_t bias = m->start - m->pgoff; /* rel = file offset unless the ELF says otherwise */
		if (m->mod && module_open(t->s, m->mod)) {
			uint64_t vaddr;
			if (elfv_offset_to_vaddr(m->mod->elf, out->map_addr, &vaddr))
				bias = pc - vaddr;
		}
		__atomic_store_n(&m->bias, bias, __ATOMIC_RELAXED);
		/* the first frame in this mapping: its module is hit (not asked at every frame) */
		if (m->mod)
			tracker_module_hit(t, m->mod);
		__atomic_store_n(&m->bias_known, true, __ATOMIC_RELEASE);
	}
	out->bias = __atomic_load_n(&m->bias, __ATOMIC_RELAXED);
	out->code = m->mod ? module_code(t->s, m->mod) : NULL;
	return true;
}

void tracker_frame_at(struct tracker_find_ctx *fc, uint64_t ip, uint8_t method, struct uw_frame *f)
{
	struct unw_pc_info info = { 0 };
	memset(f, 0, sizeof(*f));
	bool mapped = fc->p && tracker_find_pc(fc, ip, &info);
	f->pc = ip;
	f->module = info.module;
	f->map_addr = mapped ? info.map_addr : ip;
	f->rel_pc = ip - info.bias;
	f->method = method;
	/* the kernel's frame-pointer callchain: addresses shown as given (perf script does not
	 * adjust them either) */
	f->is_call = 0;
}

void tracker_note_kernel_release(struct uw_tracker *t, const char *release)
{
	ksym_kernel_note_release(t->kernel, release);
}

void tracker_on_new_map(struct uw_tracker *t, tracker_map_fn fn, void *ctx)
{
	t->on_new_map = fn;
	t->on_new_map_ctx = ctx;
}


/* ---- JIT code: the process's jitdump and perf map, read by lib/symbolize from what the tracker
 * knows of the process */

int tracker_jitdump_mmap(struct uw_tracker *t, int32_t pid, const char *path, size_t len)
{
	struct tracker_proc *p = tracker_proc_get(t, pid, true);
	if (!p)
		return -ENOMEM;
	if (!p->jd && !p->jd_tried) {
		p->jd_tried = true;
		p->jd = jit_dump_read(t->s, path, len);
	}
	return 0;
}

struct uw_module *tracker_jit_module(struct uw_tracker *t, struct tracker_proc *p)
{
	if (p->jit_tried)
		return p->jit;
	p->jit_tried = true;
	struct jit_proc jp = { .pid = p->pid, .start_known = p->start_known };
	int64_t started; /* its start in wall-clock time (a recording's claims may overflow it) */
	if (p->start_known && t->wall_known && !__builtin_add_overflow((int64_t)p->start_time, t->wall_offset, &started)) {
		jp.start_wall_known = true;
		jp.start_wall = started;
	}
	p->jit = jit_map_module(t->s, &jp);
	return p->jit;
}

/* ---- modules this recording's frames landed in */

void tracker_hit_set(struct uw_tracker *t, uint32_t id)
{
	pthread_mutex_lock(&t->hit_mu);
	size_t w = id >> 6;
	if (w >= t->nhit) {
		size_t n = UW_MAX(w + 1, 2 * t->nhit);
		uint64_t *h = calloc(n, sizeof(*h)), **old = h ? base_vec_push(&t->old_hits) : NULL;
		if (!old) {
			free(h);
			pthread_mutex_unlock(&t->hit_mu);
			return; /* (its build-id is then not written: as a module no frame hit) */
		}
		for (size_t i = 0; i < t->nhit; i++)
			h[i] = __atomic_load_n(&t->hit[i], __ATOMIC_RELAXED);
		*old = t->hit;
		/* (the array before its size: a thread that reads the new size reads this one) */
		__atomic_store_n(&t->hit, h, __ATOMIC_RELEASE);
		__atomic_store_n(&t->nhit, n, __ATOMIC_RELEASE);
	}
	__atomic_fetch_or(&t->hit[w], 1ull << (id & 63), __ATOMIC_RELAXED);
	pthread_mutex_unlock(&t->hit_mu);
}

bool tracker_module_was_hit(const struct uw_tracker *t, const struct uw_module *m)
{
	size_t n = __atomic_load_n(&t->nhit, __ATOMIC_ACQUIRE);
	const uint64_t *h = __atomic_load_n(&t->hit, __ATOMIC_ACQUIRE);
	return (m->id >> 6) < n && (__atomic_load_n(&h[m->id >> 6], __ATOMIC_RELAXED) >> (m->id & 63) & 1);
}

/* ---- live: mappings asked of the kernel */

bool tracker_ask_kernel(struct uw_tracker *t, struct tracker_proc *p, uint64_t pc, uint64_t time)
{
	uint64_t page = pc >> 12;
	for (unsigned i = 0; i < p->nmissed && i < UW_ARRAY_SIZE(p->missed); i++)
		if (p->missed[i] == page)
			return false;
	struct tracker_vma v;
	int how = tracker_vma_query(p, pc, &v);
	if (!how) {
		p->missed[p->nmissed++ % UW_ARRAY_SIZE(p->missed)] = page;
		return false;
	}
	if (how == TRACKER_VMA_QUERIED)
		t->st.procmap_queries++;
	else
		t->st.maps_scans++;
	char hex[2 * ELFV_MAX_BUILD_ID + 1] = "";
	if (v.blen)
		base_hex(v.bid, v.blen, hex);
	struct uw_module *m = module_get(t->s, v.name, strlen(v.name), hex, v.maj, v.min, v.ino);
	if (!m || tracker_mmap(t, p->pid, v.start, v.end - v.start, v.pgoff, PROT_READ | PROT_EXEC, m))
		return false;
	/* the recorder writes it out, so readers of its output know the mapping too */
	if (t->on_new_map)
		t->on_new_map(t->on_new_map_ctx, p->pid, v.start, v.end - v.start, v.pgoff, v.maj, v.min, v.ino, v.name,
			      v.blen ? v.bid : NULL, v.blen, time);
	return true;
}
