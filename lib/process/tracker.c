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
#include <unistd.h>

#include "process/process.h"

/* A mapping stops or starts referring to a module; recording, an unreferenced module goes to
 * the idle list (module.c), from which the oldest are freed. */
static void mod_unref(struct uw_session *s, struct uw_module *m)
{
	if (!m || !m->refs)
		return;
	if (--m->refs == 0 && s->live)
		proc_module_idle(s, m);
}

static void mod_ref(struct uw_session *s, struct uw_module *m)
{
	if (m && m->refs++ == 0 && m->idle)
		proc_module_busy(s, m);
}

static void proc_free(struct uw_session *s, struct proc *p)
{
	struct map *maps = p->maps.data;
	for (size_t i = 0; i < p->maps.len; i++)
		mod_unref(s, maps[i].mod);
	base_vec_free(&p->maps);
	jitdump_free(p->jd);
	if (p->maps_fd > 0)
		close(p->maps_fd);
	free(p);
}

struct proc *proc_get(struct uw_session *s, int32_t pid, bool create)
{
	struct proc *p = base_map_get(&s->procs, (uint64_t)(uint32_t)pid);
	if (p || !create)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->maps = BASE_VEC_INIT(struct map);
	if (base_map_put(&s->procs, (uint64_t)(uint32_t)pid, p)) {
		free(p);
		return NULL;
	}
	return p;
}

struct thread *proc_thread(struct uw_session *s, int32_t pid, int32_t tid, bool create)
{
	struct thread *t = base_map_get(&s->threads, (uint64_t)(uint32_t)tid);
	if (t && (t->pid == pid || pid < 0 || !create))
		return t;
	if (!create)
		return NULL;
	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t)
			return NULL;
		if (base_map_put(&s->threads, (uint64_t)(uint32_t)tid, t)) {
			free(t);
			return NULL;
		}
	}
	/* a reused tid, or a new thread: start fresh */
	const char *pcomm = NULL;
	struct proc *p = proc_get(s, pid, false);
	if (p)
		pcomm = p->comm;
	t->tid = tid;
	t->pid = pid;
	t->comm = pcomm;
	t->exited = false;
	return t;
}

bool proc_maps_parse(char *line, struct proc_maps_line *out)
{
	unsigned long long start, end, pgoff, ino;
	unsigned maj, min;
	char perms[8];
	int n = 0;
	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &pgoff, &maj, &min, &ino, &n) < 7 ||
	    strlen(perms) < 3)
		return false;
	char *path = line + n;
	path[strcspn(path, "\n")] = 0;
	*out = (struct proc_maps_line){ start, end, pgoff, ino, maj, min, perms[0] == 'r', perms[1] == 'w',
					perms[2] == 'x', *path ? path : "//anon" };
	return true;
}

const struct map *proc_find_map(struct proc *p, uint64_t addr)
{
	const struct map *m = p->maps.data;
	/* consecutive frames mostly fall in the mapping of the one before */
	if (p->last_map < p->maps.len && addr >= m[p->last_map].start && addr < m[p->last_map].end)
		return &m[p->last_map];
	size_t lo = base_upper_bound(m, p->maps.len, sizeof(*m), offsetof(struct map, start), addr);
	if (lo && addr < m[lo - 1].end) {
		p->last_map = (uint32_t)(lo - 1);
		return &m[lo - 1];
	}
	return NULL;
}

int proc_mmap(struct uw_session *s, int32_t pid, uint64_t addr, uint64_t len, uint64_t pgoff,
              uint32_t prot, struct uw_module *mod)
{
	if (!len || addr + len < addr)
		return -UW_EFORMAT;
	struct proc *p = proc_get(s, pid, true);
	if (!p)
		return -ENOMEM;
	uint64_t end = addr + len;
	/* referenced before the mappings it replaces let go of theirs (it may be one of them) */
	mod_ref(s, mod);
	if (s->live && mod && !mod->special && !mod->live_pid && mod->state == UW_MODULE_UNOPENED) {
		mod->live_pid = pid;
		mod->live_start = addr;
		mod->live_end = end;
	}
	struct base_vec out = BASE_VEC_INIT(struct map);
	if (base_vec_reserve(&out, p->maps.len + 2)) {
		mod_unref(s, mod);
		return -ENOMEM;
	}
	struct map *old = p->maps.data, *o = out.data;
	size_t n = 0;
	bool placed = false;
	struct map nm = { .start = addr, .end = end, .pgoff = pgoff, .mod = mod, .exec = (prot & 4) != 0 };
	for (size_t i = 0; i < p->maps.len; i++) {
		struct map m = old[i];
		if (m.end <= addr || m.start >= end) {
			if (!placed && m.start >= end) {
				o[n++] = nm;
				placed = true;
			}
			o[n++] = m;
			continue;
		}
		/* overlap: keep the parts of m outside [addr, end) */
		bool kept = false;
		if (m.start < addr) {
			struct map left = m;
			left.end = addr;
			o[n++] = left;
			kept = true;
		}
		if (!placed) {
			o[n++] = nm;
			placed = true;
		}
		if (m.end > end) {
			struct map right = m;
			right.pgoff += end - m.start;
			right.start = end;
			right.bias_known = m.bias_known; /* same segment, same bias */
			if (n >= out.cap - 1 && base_vec_reserve(&out, out.cap + 2)) {
				base_vec_free(&out); {
				mod_unref(s, mod);
				return -ENOMEM;
			}
			}
			o = out.data;
			o[n++] = right;
			if (kept && m.mod)
				m.mod->refs++; /* one mapping became two */
			kept = true;
		}
		if (!kept)
			mod_unref(s, m.mod);
	}
	if (!placed)
		o[n++] = nm;
	out.len = n;
	base_vec_free(&p->maps);
	p->maps = out;
	return 0;
}

int proc_fork(struct uw_session *s, int32_t pid, int32_t ppid, int32_t tid, int32_t ptid, uint64_t time)
{
	struct thread *pt = proc_thread(s, ppid, ptid, false);
	const char *comm = pt ? pt->comm : NULL;
	if (pid == ppid) {
		/* a new thread in the same process */
		struct proc *p = proc_get(s, pid, true);
		if (!p)
			return -ENOMEM;
		struct thread *t = proc_thread(s, pid, tid, true);
		if (!t)
			return -ENOMEM;
		if (comm)
			t->comm = comm;
		return 0;
	}
	struct proc *old = proc_get(s, pid, false);
	if (old) {
		/* pid reuse: the old process is gone for good */
		base_map_del(&s->procs, (uint64_t)(uint32_t)pid);
		proc_free(s, old);
		s->nproc_freed++;
	}
	struct proc *p = proc_get(s, pid, true);
	if (!p)
		return -ENOMEM;
	struct proc *parent = proc_get(s, ppid, false);
	if (parent && parent->maps.len) {
		if (base_vec_reserve(&p->maps, parent->maps.len))
			return -ENOMEM;
		memcpy(p->maps.data, parent->maps.data, parent->maps.len * sizeof(struct map));
		p->maps.len = parent->maps.len;
		struct map *m = p->maps.data;
		for (size_t i = 0; i < p->maps.len; i++)
			if (m[i].mod)
				m[i].mod->refs++;
	}
	if (parent)
		p->comm = parent->comm;
	if (comm)
		p->comm = comm;
	struct thread *t = proc_thread(s, pid, tid, true);
	if (!t)
		return -ENOMEM;
	t->comm = p->comm;
	(void)time;
	return 0;
}

int proc_comm(struct uw_session *s, int32_t pid, int32_t tid, const char *comm, size_t len, bool exec)
{
	const char *c = base_intern(&s->strings, comm, len);
	if (!c)
		return -ENOMEM;
	struct proc *p = proc_get(s, pid, true);
	if (!p)
		return -ENOMEM;
	if (exec) {
		/* the old image is gone: mappings of the new one follow this record */
		struct map *m = p->maps.data;
		for (size_t i = 0; i < p->maps.len; i++)
			mod_unref(s, m[i].mod);
		p->maps.len = 0;
		p->exited = false;
		jitdump_free(p->jd); /* JIT code of the old image */
		p->jd = NULL;
		p->jd_tried = false;
		p->jit = NULL;
		p->jit_tried = false;
	}
	if (pid == tid || exec || !p->comm)
		p->comm = c;
	struct thread *t = proc_thread(s, pid, tid, true);
	if (!t)
		return -ENOMEM;
	t->comm = c;
	return 0;
}

void proc_exit(struct uw_session *s, int32_t pid, int32_t tid, uint64_t time)
{
	struct thread *t = proc_thread(s, pid, tid, false);
	if (t) {
		t->exited = true;
		t->exit_time = time;
	}
	if (pid == tid) {
		struct proc *p = proc_get(s, pid, false);
		if (p) {
			p->exited = true;
			p->exit_time = time;
		}
	}
}

void proc_sweep(struct uw_session *s, uint64_t now)
{
	if (now < s->exit_grace_ns)
		return;
	uint64_t limit = now - s->exit_grace_ns;
	size_t it = 0;
	uint64_t key;
	void *val;
	/* collect first: deleting while iterating would skip entries moved by backward shift */
	struct base_vec dead = BASE_VEC_INIT(uint64_t);
	while (base_map_next(&s->procs, &it, &key, &val)) {
		struct proc *p = val;
		if (p->exited && p->exit_time < limit) {
			uint64_t *k = base_vec_push(&dead);
			if (k)
				*k = key;
		}
	}
	for (size_t i = 0; i < dead.len; i++) {
		uint64_t k = *(uint64_t *)base_vec_at(&dead, i);
		struct proc *p = base_map_del(&s->procs, k);
		if (p) {
			proc_free(s, p);
			s->nproc_freed++;
		}
	}
	dead.len = 0;
	it = 0;
	while (base_map_next(&s->threads, &it, &key, &val)) {
		struct thread *t = val;
		if (t->exited && t->exit_time < limit) {
			uint64_t *k = base_vec_push(&dead);
			if (k)
				*k = key;
		}
	}
	for (size_t i = 0; i < dead.len; i++)
		free(base_map_del(&s->threads, *(uint64_t *)base_vec_at(&dead, i)));
	base_vec_free(&dead);
}

/* ---- live: a mapping the events did not show (created before recording began, or a record
 * lost), asked of the kernel */

_Static_assert(sizeof(struct { uint64_t a[9]; uint32_t b[4]; uint64_t c[2]; }) == 104, "procmap_query");
struct procmap_query { /* include/uapi/linux/fs.h, Linux 6.11 */
	uint64_t size, query_flags, query_addr, vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
	uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
	uint64_t vma_name_addr, build_id_addr;
};
#define PROCMAP_QUERY 0xC0686611u /* _IOWR('f', 17, struct procmap_query): 104 bytes */
#define PMQ_EXECUTABLE 0x04

static bool ask_kernel(struct uw_session *s, struct proc *p, uint64_t pc, uint64_t time)
{
	uint64_t page = pc >> 12;
	for (unsigned i = 0; i < p->nmissed && i < UW_ARRAY_SIZE(p->missed); i++)
		if (p->missed[i] == page)
			return false;
	if (p->maps_fd == 0) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/maps", (int)p->pid);
		p->maps_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (p->maps_fd == 0) { /* never 0 here: keep 0 for "not opened" */
			close(p->maps_fd);
			p->maps_fd = -1;
		}
	}
	bool found = false;
	char name[4096];
	uint8_t bid[ELFV_MAX_BUILD_ID];
	struct procmap_query q = { sizeof(q), PMQ_EXECUTABLE, pc, 0, 0, 0, 0, 0, 0, 0, 0, sizeof(name), sizeof(bid),
				   (uint64_t)(uintptr_t)name, (uint64_t)(uintptr_t)bid };
	uint64_t start = 0, end = 0, off = 0, ino = 0;
	uint32_t maj = 0, min = 0;
	size_t blen = 0;
	if (p->maps_fd > 0 && ioctl(p->maps_fd, PROCMAP_QUERY, &q) == 0) {
		found = q.vma_start <= pc && pc < q.vma_end;
		start = q.vma_start;
		end = q.vma_end;
		off = q.vma_offset;
		ino = q.inode;
		maj = q.dev_major;
		min = q.dev_minor;
		blen = q.build_id_size <= sizeof(bid) ? q.build_id_size : 0;
		if (!q.vma_name_size)
			snprintf(name, sizeof(name), "//anon");
		if (found)
			s->procmap_queries++;
	} else if (p->maps_fd > 0 && errno != ENOENT) {
		/* a kernel before 6.11: scan the maps text */
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/maps", (int)p->pid);
		FILE *f = fopen(path, "re");
		char line[4096 + 256];
		struct proc_maps_line ml;
		while (f && !found && fgets(line, sizeof(line), f)) {
			if (!proc_maps_parse(line, &ml) || pc < ml.start || pc >= ml.end || !ml.exec)
				continue;
			found = true;
			start = ml.start;
			end = ml.end;
			off = ml.pgoff;
			ino = ml.ino;
			maj = ml.maj;
			min = ml.min;
			snprintf(name, sizeof(name), "%s", ml.path);
		}
		if (f)
			fclose(f);
		if (found)
			s->maps_scans++;
	}
	if (!found) {
		p->missed[p->nmissed++ % UW_ARRAY_SIZE(p->missed)] = page;
		return false;
	}
	struct uw_module *m = proc_module_get(s, name, strlen(name), blen ? bid : NULL, blen, maj, min, ino);
	if (!m || proc_mmap(s, p->pid, start, end - start, off, 5, m))
		return false;
	/* the recorder writes it out, so readers of its output know the mapping too */
	if (s->on_new_map)
		s->on_new_map(s->on_new_map_ctx, p->pid, start, end - start, off, maj, min, ino, name,
			      blen ? bid : NULL, blen, time);
	return true;
}

bool proc_find_pc(void *ctx, uint64_t pc, struct unw_pc_info *out)
{
	struct proc_find_ctx *c = ctx;
	const struct map *cm = c->p ? proc_find_map(c->p, pc) : NULL;
	if (!cm && c->p && c->s->live && pc >= 4096 && pc < (1ull << 47) && ask_kernel(c->s, c->p, pc, c->time))
		cm = proc_find_map(c->p, pc);
	/* JIT code: in an anonymous mapping (or one the recording missed), named by the process's
	 * jitdump as it was at the sample's time, else by its perf-PID.map; the address is
	 * absolute, as perf shows it */
	/* (not while recording: the output keeps addresses, and reading a file a process controls
	 * has no place on the thread that drains the rings) */
	if (c->p && !c->s->live && (!cm || !cm->mod || (cm->mod->special && !cm->mod->jit && cm->mod->path[0] != '['))) {
		struct uw_module *jm = c->p->jd ? proc_jitdump_find(c->s, c->p, pc, c->time) : NULL;
		if (!jm)
			jm = proc_jit_module(c->s, c->p);
		const struct sym *js = jm ? symtab_find(&jm->syms, pc) : NULL;
		if (js) {
			out->module = jm;
			out->map_addr = jm->jitdump ? JITDUMP_TEXT_OFFSET + (pc - js->start) : pc;
			out->bias = 0;
			out->code = NULL;
			jm->hits++;
			return true;
		}
	}
	if (!cm)
		return false;
	struct map *m = (struct map *)cm;
	out->module = m->mod;
	out->map_addr = pc - m->start + m->pgoff;
	if (!m->bias_known) {
		m->bias = m->start - m->pgoff; /* rel = file offset unless the ELF says otherwise */
		if (m->mod && proc_module_open(c->s, m->mod)) {
			uint64_t vaddr;
			if (elfv_offset_to_vaddr(m->mod->elf, out->map_addr, &vaddr))
				m->bias = pc - vaddr;
		}
		m->bias_known = true;
	}
	out->bias = m->bias;
	out->code = m->mod ? proc_module_code(c->s, m->mod) : NULL;
	if (m->mod)
		m->mod->hits++;
	return true;
}

void proc_free_all(struct uw_session *s);
void proc_free_all(struct uw_session *s)
{
	size_t it = 0;
	void *val;
	while (base_map_next(&s->procs, &it, NULL, &val))
		proc_free(s, val);
	base_map_free(&s->procs);
	it = 0;
	while (base_map_next(&s->threads, &it, NULL, &val))
		free(val);
	base_map_free(&s->threads);
}
