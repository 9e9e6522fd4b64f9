/* SPDX-License-Identifier: MIT */
/*
 * Live recording with kernel unwinding (lib/kernel, docs/kernel-unwind.md): the program is
 * attached to every sampling event, its records are pushed into the reader as PR_UW_KUNW
 * records (time-ordered with the side-band, reader_kunw.c), and its maps are fed from the
 * tracker as the records are delivered:
 *
 *  - a process's mappings are loaded after each mapping change the side-band tells of (MMAP,
 *    MMAP2, COMM with exec, FORK of a process: its parent's), at most once per round, and when
 *    one of its samples was handed to user space for want of them; dropped at its EXIT;
 *  - a module's table is built (whole, from its files) when a loaded process first maps it
 *    (or a sample was finished in user space through it; for 20 ms at most per update, the
 *    rest left for the next), loaded, and dropped when no loaded process maps it (the built
 *    table is kept to load again);
 *  - a mapping is loaded only with its module's table (else the walk hands the stack over
 *    there), anonymous executable memory (JIT code) as module 0 (frame pointers, as user space
 *    unwinds it), files that cannot be read likewise.
 *
 * Generations: each load of a process's mappings has a generation, which the records of walks
 * that used it carry; the process's version counts the mapping changes delivered. A sample
 * delivered while the version is still the one its generation was loaded at used the mappings
 * the tracker has; else each frame the kernel stepped from is checked against the mappings the
 * tracker has at the sample's time, and the stack is cut after the first that differs (never a
 * wrong stack).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int live_kunw_open(struct live *lv, const struct uw_record_opts *o, char *why, size_t len)
{
	(void)lv;
	(void)o;
	snprintf(why, len, "not compiled in (the build had no libbpf, clang BPF target, bpftool or kernel BTF)");
	return -EOPNOTSUPP;
}
int live_kunw_attach(struct live *lv, int fd, bool sw)
{
	(void)lv;
	(void)fd;
	(void)sw;
	return -EOPNOTSUPP;
}
int live_kunw_start(struct live *lv)
{
	(void)lv;
	return 0;
}
int live_kunw_fd(struct live *lv)
{
	(void)lv;
	return -1;
}
int live_kunw_prime(struct live *lv)
{
	(void)lv;
	return 0;
}
int live_kunw_drain(struct live *lv)
{
	(void)lv;
	return 0;
}
int live_kunw_update(struct live *lv)
{
	(void)lv;
	return 0;
}
void live_kunw_status(struct live *lv, struct uw_record_status *st)
{
	(void)lv;
	(void)st;
}
void live_kunw_close(struct live *lv)
{
	(void)lv;
}

#else

#define HIST 4                  /* loads of a process's mappings kept for checking records */

struct kmod {
	struct uw_module *m;
	uint32_t id;
	uint32_t refs;          /* loaded processes whose mappings name it */
	bool built, failed, loaded, wanted;
	struct kunw_table tbl;
};

struct kload {
	uint32_t gen;
	uint64_t ver;           /* the process's version when loaded */
	struct kunw_map *maps;  /* sorted by start */
	unsigned n;
};

struct kproc {
	int32_t pid;
	uint64_t ver;           /* mapping changes delivered */
	bool dirty;             /* to load (again) at the next update */
	bool loaded;
	bool refused;           /* the cap or a limit refused it: its stacks are handed over */
	unsigned exited;        /* updates since its EXIT (freed after two) */
	struct kload hist[HIST]; /* [0] the newest */
	unsigned nhist;
};

struct live_kunw {
	struct kunw *k;
	struct live *lv;
	struct base_map mods;   /* (uintptr_t)struct uw_module * -> struct kmod * */
	struct base_map ids;    /* id -> struct kmod * */
	struct base_map procs;  /* pid -> struct kproc * */
	uint32_t next_id;
	bool any_dirty, any_wanted;
	uint64_t finished, stale, tables, peak_bytes, too_big;
	uint64_t sw_walked, sw_finished; /* --off-cpu: switch-outs walked, finished in user space */
	uint64_t build_until;   /* CLOCK_MONOTONIC ns: no more tables built in this update after */
	uint8_t *buf;           /* a record being pushed */
	int err;
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

static void kmod_unref(struct live_kunw *lk, uint32_t id)
{
	struct kmod *km = base_map_get(&lk->ids, id);
	if (km && km->refs && !--km->refs && km->loaded) {
		kunw_module_drop(lk->k, km->id);
		km->loaded = false;
	}
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
	free(kp);
}

/* ---- side-band records, as the reader delivers them (in time order) */

static int on_record(void *ctx, const uint8_t *rec, uint32_t len)
{
	struct live_kunw *lk = ctx;
	int err = cc_sink_record(lk->lv->sink, rec, len);
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
		/* a profiled process maps code: its tables and mappings loaded at the next update */
		if ((kp = kproc_get(lk, (int32_t)pid, true))) {
			kp->ver++;
			kp->dirty = true;
			lk->any_dirty = true;
		}
		break;
	case PR_FORK:
		/* FORK: pid, ppid, tid, ptid. A new process (not a thread) has its parent's mappings
		 * and no mapping event tells of them: loaded at the next update too */
		if (len >= 24) {
			uint32_t ppid;
			memcpy(&ppid, rec + 12, 4);
			if (pid != ppid && (kp = kproc_get(lk, (int32_t)pid, true))) {
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
	struct tracker_find_ctx fc = { lk->lv->t, p, time, false, 0 };
	struct unw_pc_info info = { 0 };
	if (!tracker_find_pc(&fc, pc, &info))
		return false;
	if (km->module == KUNW_MODULE_ANON)
		return anon_code(info.module) || !info.code;
	struct kmod *m = info.module ? kmod_get(lk, info.module, false) : NULL;
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
	bool sw = lk->lv->nsw && smp->attr_index == LIVE_SWITCH_ATTR;
	if (!finished)
		return;
	lk->finished++;
	if (sw)
		lk->sw_finished++;
	/* what would have let the kernel walk it: the process's mappings, the modules' tables */
	if (p && !p->exited && !kp->refused && (!kp->loaded || kr->fb_reason == KUNW_FB_NO_MAP ||
					       kr->fb_reason == KUNW_FB_NO_TABLE || kr->fb_reason == KUNW_FB_NO_PROC)) {
		kp->dirty = true;
		lk->any_dirty = true;
	}
	for (unsigned i = nkernel; i < smp->nr_user; i++) {
		struct uw_module *m = smp->user[i].module;
		if (!m || anon_code(m) || m->jit || m->jitdump)
			continue;
		struct kmod *km = kmod_get(lk, m, true);
		if (km && !km->loaded && !km->failed && !km->wanted) {
			km->wanted = true;
			lk->any_wanted = true;
		}
	}
}

/* ---- the maps fed */

static int cmp_map(const void *x, const void *y)
{
	const struct kunw_map *a = x, *b = y;
	return a->start < b->start ? -1 : a->start > b->start;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A module's table built from its files (whole: the session's may be lazy) and loaded; false
 * when it is left for a later update (this one has built tables for long enough). */
static bool kmod_load(struct live_kunw *lk, struct kmod *km)
{
	struct uw_session *s = lk->lv->s;
	if (!km->built && lk->build_until && now_ns() > lk->build_until)
		return false;
	km->wanted = false;
	if (!km->built) {
		if (!module_open(s, km->m) || !km->m->elf) {
			km->failed = true;
			return true;
		}
		struct unw_tables c;
		int e = kunw_code_build(&c, km->m->elf, km->m->dbg);
		if (!e) {
			e = kunw_table_build(&km->tbl, &c.code);
			unw_tables_free(&c);
		}
		if (e || !km->tbl.nwords) {
			km->failed = true;
			return true;
		}
		km->built = true;
	}
	int e = kunw_module_add(lk->k, km->id, &km->tbl);
	if (e && e != -EEXIST) {
		/* the cap: walks reaching it are handed over; tried again when a module is wanted
		 * after some were dropped */
		return true;
	}
	km->loaded = true;
	lk->tables++;
	base_log(&lk->lv->s->log, UW_LOG_INFO, "kernel unwinding: table of %s loaded (%u rows, %llu bytes)", km->m->path,
		 km->tbl.nrows, (unsigned long long)kunw_table_bytes(&km->tbl));
	return true;
}

/* The process's executable mappings whose module has a table loaded (and JIT code), loaded. */
static void kproc_load(struct live_kunw *lk, struct kproc *kp)
{
	kp->dirty = false;
	struct uw_tracker *t = lk->lv->t;
	struct tracker_proc *p = tracker_proc_get(t, kp->pid, false);
	if (!p || p->exited || kp->exited)
		return;
	struct kunw_map *v = malloc((p->maps.len + 1) * sizeof(*v));
	if (!v)
		return;
	unsigned n = 0;
	bool later = false; /* a module's table left for a later update: loaded again then */
	struct tracker_find_ctx fc = { t, p, UINT64_MAX, false, 0 };
	for (size_t i = 0; i < p->maps.len && n < KUNW_PROC_MAPS; i++) {
		struct tracker_map *m = base_vec_at(&p->maps, i);
		if (!m->exec || m->end <= m->start)
			continue;
		if (anon_code(m->mod)) {
			v[n++] = (struct kunw_map){ m->start, m->end, KUNW_MODULE_ANON, 0 };
			continue;
		}
		struct kmod *km = kmod_get(lk, m->mod, true);
		if (km && !km->loaded && !km->failed && !kmod_load(lk, km))
			later = true;
		if (!km || !km->loaded)
			continue;
		struct unw_pc_info info = { 0 };
		if (!tracker_find_pc(&fc, m->start, &info) || info.module != m->mod)
			continue;
		uint64_t rel = m->start - info.bias;
		if (rel > UINT32_MAX || m->end - m->start > UINT32_MAX - rel)
			continue;
		v[n++] = (struct kunw_map){ m->start, m->end, km->id, (uint32_t)rel };
	}
	qsort(v, n, sizeof(*v), cmp_map);
	int e = kunw_proc_set(lk->k, (uint32_t)kp->pid, v, n);
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
	kp->hist[0] = (struct kload){ kunw_gen(lk->k), kp->ver, v, n };
	kp->nhist++;
	kp->loaded = true;
	kp->refused = false;
	if (later) {
		kp->dirty = true;
		lk->any_dirty = true;
	}
}

static int on_kunw_record(void *ctx, const struct kunw_sample *s);

/* Building a table takes time (milliseconds for a large module): the program's ring is drained
 * between loads, so that it does not fill meanwhile. (The records are only queued by the reader,
 * as the main loop's drain before the side-band's would queue them.) */
static void drain_between(struct live_kunw *lk)
{
	int n = kunw_poll(lk->k, 0, on_kunw_record, lk);
	if (n < 0 && !lk->err)
		lk->err = n;
}

/* Tables built per update, at most: the loop must go on delivering records (a process's
 * mappings are loaded only once its mapping events are delivered) while large modules' tables
 * are built; a process whose module waits is loaded without it (walks hand over there), and
 * again with it. */
#define BUILD_NS (20u * 1000000u)

static int update(struct live_kunw *lk);

int live_kunw_update(struct live *lv)
{
	struct live_kunw *lk = lv->kunw;
	if (!lk)
		return 0;
	lk->build_until = now_ns() + BUILD_NS;
	int err = update(lk);
	lk->build_until = 0;
	return err;
}

static int update(struct live_kunw *lk)
{
	size_t it = 0;
	uint64_t key;
	void *v;
	if (lk->any_wanted) {
		lk->any_wanted = false;
		while (base_map_next(&lk->mods, &it, &key, &v))
			if (((struct kmod *)v)->wanted) {
				if (!kmod_load(lk, v))
					lk->any_wanted = true;
				drain_between(lk);
			}
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
		while (base_map_next(&lk->procs, &it, &key, &v))
			if (((struct kproc *)v)->dirty) {
				kproc_load(lk, v);
				drain_between(lk);
			}
	}
	uint64_t b = kunw_bytes(lk->k);
	if (b > lk->peak_bytes)
		lk->peak_bytes = b;
	return lk->err;
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
	uint64_t id = lk->lv->id0;
	if (s->rec->kind == KUNW_KIND_SWITCH && lk->lv->nsw) {
		id = lk->lv->sw_ids[0];
		lk->sw_walked++;
	}
	memcpy(lk->buf, &type, 4);
	memcpy(lk->buf + 4, &misc, 2);
	memcpy(lk->buf + 6, &sz, 2);
	memcpy(lk->buf + 8, &id, 8);
	memset(lk->buf + size - 8, 0, 8);
	memcpy(lk->buf + 16, s->rec, s->rec->size);
	int err = uw_reader_push(lk->lv->r, lk->buf, size);
	return err ? err : 0;
}

int live_kunw_drain(struct live *lv)
{
	struct live_kunw *lk = lv->kunw;
	if (!lk)
		return 0;
	int n = kunw_poll(lk->k, 0, on_kunw_record, lk);
	return n < 0 ? n : 0;
}

int live_kunw_prime(struct live *lv)
{
	if (!lv->kunw)
		return 0;
	/* (nothing else is queued yet: the events are not enabled) */
	int err = uw_reader_flush(lv->r);
	/* (everything that runs already, before the recording begins: no budget) */
	return err ? err : update(lv->kunw);
}

int live_kunw_fd(struct live *lv)
{
	return lv->kunw ? kunw_ring_fd(lv->kunw->k) : -1;
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

int live_kunw_open(struct live *lv, const struct uw_record_opts *o, char *why, size_t len)
{
	if (system_refuses(why, len))
		return -EOPNOTSUPP;
	struct live_kunw *lk = calloc(1, sizeof(*lk));
	if (!lk || !(lk->buf = malloc(1u << 16))) {
		free(lk);
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	lk->lv = lv;
	base_map_init(&lk->mods);
	base_map_init(&lk->procs);
	base_map_init(&lk->ids);
	struct kunw_opts ko = { .max_frames = lv->s->opts.max_frames < KUNW_MAX_FRAMES ? lv->s->opts.max_frames : 0,
				.max_bytes = o->kernel_max_bytes,
				/* (tests: every record also carries frame 0's registers and stack, for the
				 * reader to compare the program's frames with lib/unwind's) */
				.verify = getenv("UW_KUNW_VERIFY") != NULL,
				/* --off-cpu: the walk at each switch-out too */
				.switches = o->off_cpu != 0 };
	char err[512] = "";
	int e = kunw_open(&ko, &lk->k, err, sizeof(err));
	if (e) {
		if (e == -EPERM || e == -EACCES)
			snprintf(why, len, "not privileged (loading BPF needs root, or CAP_BPF and CAP_PERFMON)");
		else if (e == -ENOSYS)
			snprintf(why, len, "the kernel has no BPF");
		else
			snprintf(why, len, "the program could not be loaded (verifier refusal?): %.120s", err);
		free(lk->buf);
		free(lk);
		return e;
	}
	lv->kunw = lk;
	return 0;
}

int live_kunw_attach(struct live *lv, int fd, bool sw)
{
	if (!lv->kunw)
		return -EINVAL;
	return sw ? kunw_attach_switch(lv->kunw->k, fd) : kunw_attach(lv->kunw->k, fd);
}

int live_kunw_start(struct live *lv)
{
	struct live_kunw *lk = lv->kunw;
	if (!lk)
		return 0;
	perf_reader_set_record_fn(lv->r, on_record, lk);
	reader_set_kunw_hook(lv->r, on_sample, lk);
	return 0;
}

void live_kunw_status(struct live *lv, struct uw_record_status *st)
{
	struct live_kunw *lk = lv->kunw;
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

void live_kunw_close(struct live *lv)
{
	struct live_kunw *lk = lv->kunw;
	if (!lk)
		return;
	if (lv->r && lv->r->kunw.compared)
		base_log(&lv->s->log, UW_LOG_WARN,
			 "kernel unwinding verify: %llu samples compared where the copy reached a root, %llu differ",
			 (unsigned long long)lv->r->kunw.compared, (unsigned long long)lv->r->kunw.differ);
	struct kunw_prog_info pi;
	struct kunw_counters c;
	if (!kunw_prog_info(lk->k, &pi) && !kunw_counters(lk->k, &c))
		base_log(&lv->s->log, UW_LOG_INFO,
			 "kernel unwinding: the program ran %llu times, %llu ns in all (kernel.bpf_stats_enabled; 0 when "
			 "off), at the switch-outs %llu times, %llu ns in all; %llu user frames walked, %llu records lost; "
			 "%llu bytes in BPF maps at most",
			 (unsigned long long)pi.run_cnt, (unsigned long long)pi.run_time_ns,
			 (unsigned long long)pi.switch_run_cnt, (unsigned long long)pi.switch_run_time_ns, (unsigned long long)c.frames,
			 (unsigned long long)c.lost, (unsigned long long)lk->peak_bytes);
	if (!kunw_counters(lk->k, &c))
		base_log(&lv->s->log, UW_LOG_INFO,
			 "kernel unwinding: handed over: %llu with no mappings loaded for the process, %llu with the pc in "
			 "none of them, %llu through a module without its table, %llu at a rule the program does not follow, "
			 "%llu at frame 0 without a row or frame pointer, %llu at a table that does not hold together",
			 (unsigned long long)c.fallbacks[KUNW_FB_NO_PROC], (unsigned long long)c.fallbacks[KUNW_FB_NO_MAP],
			 (unsigned long long)c.fallbacks[KUNW_FB_NO_TABLE], (unsigned long long)c.fallbacks[KUNW_FB_RULE],
			 (unsigned long long)c.fallbacks[KUNW_FB_FP], (unsigned long long)c.fallbacks[KUNW_FB_TABLE]);
	size_t it = 0;
	uint64_t key;
	void *v;
	while (base_map_next(&lk->procs, &it, &key, &v))
		kproc_free(lk, v);
	base_map_free(&lk->procs);
	it = 0;
	while (base_map_next(&lk->mods, &it, &key, &v)) {
		kunw_table_free(&((struct kmod *)v)->tbl);
		free(v);
	}
	base_map_free(&lk->mods);
	base_map_free(&lk->ids);
	kunw_close(lk->k);
	free(lk->buf);
	free(lk);
	lv->kunw = NULL;
}

#endif
