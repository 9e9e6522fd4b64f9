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

#include "process/process.h"

/* A mapping stops or starts referring to a module; with a live tracker, an unreferenced module
 * goes to the idle list (module.c), from which the oldest are freed. */
static void mod_unref(struct uw_tracker *t, struct uw_module *m)
{
	if (m)
		proc_module_unref(t->s, m);
}

static void mod_ref(struct uw_tracker *t, struct uw_module *m)
{
	if (m)
		proc_module_ref(t->s, m);
}

static void proc_free(struct uw_tracker *t, struct proc *p)
{
	struct map *maps = p->maps.data;
	for (size_t i = 0; i < p->maps.len; i++)
		mod_unref(t, maps[i].mod);
	base_vec_free(&p->maps);
	jitdump_free(p->jd);
	if (p->maps_fd > 0)
		close(p->maps_fd);
	free(p);
}

struct proc *proc_get(struct uw_tracker *t, int32_t pid, bool create)
{
	struct proc *p = base_map_get(&t->procs, (uint64_t)(uint32_t)pid);
	if (p || !create)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->maps = BASE_VEC_INIT(struct map);
	if (base_map_put(&t->procs, (uint64_t)(uint32_t)pid, p)) {
		free(p);
		return NULL;
	}
	return p;
}

struct thread *proc_thread(struct uw_tracker *t, int32_t pid, int32_t tid, bool create)
{
	struct thread *th = base_map_get(&t->threads, (uint64_t)(uint32_t)tid);
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
	struct proc *p = proc_get(t, pid, false);
	if (p)
		pcomm = p->comm;
	th->tid = tid;
	th->pid = pid;
	th->comm = pcomm;
	th->exited = false;
	return th;
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

int proc_mmap(struct uw_tracker *t, int32_t pid, uint64_t addr, uint64_t len, uint64_t pgoff,
              uint32_t prot, struct uw_module *mod)
{
	if (!len || addr + len < addr)
		return -UW_EFORMAT;
	struct proc *p = proc_get(t, pid, true);
	if (!p)
		return -ENOMEM;
	uint64_t end = addr + len;
	/* referenced before the mappings it replaces let go of theirs (it may be one of them) */
	mod_ref(t, mod);
	if (t->o.live && mod && !mod->special && !mod->live_pid && !proc_module_is_opened(mod)) {
		mod->live_pid = pid;
		mod->live_start = addr;
		mod->live_end = end;
	}
	struct base_vec out = BASE_VEC_INIT(struct map);
	if (base_vec_reserve(&out, p->maps.len + 2)) {
		mod_unref(t, mod);
		return -ENOMEM;
	}
	struct map *old = p->maps.data, *o = out.data;
	size_t n = 0;
	bool placed = false;
	struct map nm = { .start = addr, .end = end, .pgoff = pgoff, .mod = mod, .exec = (prot & PROT_EXEC) != 0 };
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
				base_vec_free(&out);
				mod_unref(t, mod);
				return -ENOMEM;
			}
			o = out.data;
			o[n++] = right;
			if (kept)
				mod_ref(t, m.mod); /* one mapping became two */
			kept = true;
		}
		if (!kept)
			mod_unref(t, m.mod);
	}
	if (!placed)
		o[n++] = nm;
	out.len = n;
	base_vec_free(&p->maps);
	p->maps = out;
	return 0;
}

int proc_fork(struct uw_tracker *t, int32_t pid, int32_t ppid, int32_t tid, int32_t ptid, uint64_t time)
{
	struct thread *pt = proc_thread(t, ppid, ptid, false);
	const char *comm = pt ? pt->comm : NULL;
	if (pid == ppid) {
		/* a new thread in the same process */
		struct proc *p = proc_get(t, pid, true);
		if (!p)
			return -ENOMEM;
		struct thread *th = proc_thread(t, pid, tid, true);
		if (!th)
			return -ENOMEM;
		if (comm)
			th->comm = comm;
		return 0;
	}
	struct proc *old = proc_get(t, pid, false);
	if (old) {
		/* pid reuse: the old process is gone for good */
		base_map_del(&t->procs, (uint64_t)(uint32_t)pid);
		proc_free(t, old);
		t->st.processes_freed++;
	}
	struct proc *p = proc_get(t, pid, true);
	if (!p)
		return -ENOMEM;
	/* born in the recording: a perf map older than this is another process's */
	p->start_time = time;
	p->start_known = true;
	struct proc *parent = proc_get(t, ppid, false);
	if (parent && parent->maps.len) {
		if (base_vec_reserve(&p->maps, parent->maps.len))
			return -ENOMEM;
		memcpy(p->maps.data, parent->maps.data, parent->maps.len * sizeof(struct map));
		p->maps.len = parent->maps.len;
		struct map *m = p->maps.data;
		for (size_t i = 0; i < p->maps.len; i++)
			mod_ref(t, m[i].mod);
	}
	if (parent)
		p->comm = parent->comm;
	if (comm)
		p->comm = comm;
	struct thread *th = proc_thread(t, pid, tid, true);
	if (!th)
		return -ENOMEM;
	th->comm = p->comm;
	return 0;
}

int proc_comm(struct uw_tracker *t, int32_t pid, int32_t tid, const char *comm, size_t len, bool exec, uint64_t time)
{
	const char *c = proc_intern(t->s, comm, len);
	if (!c)
		return -ENOMEM;
	struct proc *p = proc_get(t, pid, true);
	if (!p)
		return -ENOMEM;
	if (exec) {
		/* the old image is gone: mappings of the new one follow this record */
		struct map *m = p->maps.data;
		for (size_t i = 0; i < p->maps.len; i++)
			mod_unref(t, m[i].mod);
		p->maps.len = 0;
		p->exited = false;
		jitdump_free(p->jd); /* JIT code of the old image */
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
	struct thread *th = proc_thread(t, pid, tid, true);
	if (!th)
		return -ENOMEM;
	th->comm = c;
	return 0;
}

void proc_exit(struct uw_tracker *t, int32_t pid, int32_t tid, uint64_t time)
{
	struct thread *th = proc_thread(t, pid, tid, false);
	if (th) {
		th->exited = true;
		th->exit_time = time;
	}
	if (pid == tid) {
		struct proc *p = proc_get(t, pid, false);
		if (p) {
			p->exited = true;
			p->exit_time = time;
		}
	}
}

void proc_sweep(struct uw_tracker *t, uint64_t now)
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
		struct proc *p = val;
		if (p->exited && p->exit_time < limit) {
			uint64_t *k = base_vec_push(&dead);
			if (k)
				*k = key;
		}
	}
	for (size_t i = 0; i < dead.len; i++) {
		uint64_t k = *(uint64_t *)base_vec_at(&dead, i);
		struct proc *p = base_map_del(&t->procs, k);
		if (p) {
			proc_free(t, p);
			t->st.processes_freed++;
		}
	}
	dead.len = 0;
	it = 0;
	while (base_map_next(&t->threads, &it, &key, &val)) {
		struct thread *th = val;
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

/* ---- what the recording says: build-ids by path, the kernel */

void proc_note_build_id_hex(struct uw_tracker *t, const char *path, const char *hex)
{
	size_t n = strlen(hex);
	if (!n || n > 2 * ELFV_MAX_BUILD_ID)
		return;
	const char *h = proc_intern(t->s, hex, n);
	if (h)
		base_map_put(&t->buildids, base_hash_bytes(path, strlen(path)), (void *)h);
	/* the session's kernel symbols are the first recording's kernel's */
	if (!strcmp(path, "[kernel.kallsyms]"))
		proc_session_kernel(t->s, 0, hex);
}

void proc_note_build_id(struct uw_tracker *t, const char *path, const uint8_t *bid, size_t len)
{
	if (!len || len > ELFV_MAX_BUILD_ID)
		return;
	char hex[2 * ELFV_MAX_BUILD_ID + 1];
	base_hex(bid, len, hex);
	proc_note_build_id_hex(t, path, hex);
}

const char *tracker_build_id(const struct uw_tracker *t, const char *path, size_t len)
{
	return base_map_get(&t->buildids, base_hash_bytes(path, len));
}

int tracker_map_event(struct uw_tracker *t, int32_t pid, uint32_t cpumode, uint64_t addr, uint64_t len,
                      uint64_t pgoff, uint32_t prot, uint32_t maj, uint32_t min, uint64_t ino, const uint8_t *bid,
                      size_t blen, const char *path, size_t fl)
{
	if (blen > ELFV_MAX_BUILD_ID)
		blen = ELFV_MAX_BUILD_ID;
	if (pid == -1 || cpumode == PROC_CPUMODE_KERNEL) {
		/* kernel and module maps: symbols come from kallsyms; perf records the kernel map
		 * with pgoff = the address of _text (its relocation reference) */
		if (fl >= 17 && memcmp(path, "[kernel.kallsyms]", 17) == 0) {
			if (pgoff >= addr && !t->kernel_text) {
				t->kernel_text = pgoff;
				proc_session_kernel(t->s, pgoff, NULL);
			}
			if (bid && blen)
				proc_note_build_id(t, "[kernel.kallsyms]", bid, blen);
		}
		return 0;
	}
	if (!len || addr + len < addr) {
		t->st.malformed_mmap++;
		return -EINVAL;
	}
	/* a JIT's jitdump, mapped so that the recording shows it: its loads name JIT code (not
	 * while recording: names are a report's business, and the file is the process's) */
	if ((prot & PROT_EXEC) && !t->o.live && jitdump_is_path(path, fl) && proc_jitdump_mmap(t, pid, path, fl))
		return -ENOMEM;
	char hex[2 * ELFV_MAX_BUILD_ID + 1] = "";
	if (blen)
		base_hex(bid, blen, hex);
	else if (tracker_build_id(t, path, fl))
		snprintf(hex, sizeof(hex), "%s", tracker_build_id(t, path, fl));
	struct uw_module *m = proc_module_get(t->s, path, fl, hex, maj, min, ino);
	if (!m)
		return -ENOMEM;
	int e = proc_mmap(t, pid, addr, len, pgoff, prot, m);
	return e == -ENOMEM ? e : 0;
}

const char *tracker_comm(struct uw_tracker *t, uint32_t pid, uint32_t tid)
{
	struct thread *th = proc_thread(t, (int32_t)pid, (int32_t)tid, false);
	if (th && th->comm)
		return th->comm;
	struct proc *p = proc_get(t, (int32_t)pid, false);
	if (p && p->comm)
		return p->comm;
	char buf[24];
	int n = snprintf(buf, sizeof(buf), ":%d", (int)tid);
	return proc_intern(t->s, buf, (size_t)n);
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

static bool ask_kernel(struct uw_tracker *t, struct proc *p, uint64_t pc, uint64_t time)
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
			t->st.procmap_queries++;
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
			t->st.maps_scans++;
	}
	if (!found) {
		p->missed[p->nmissed++ % UW_ARRAY_SIZE(p->missed)] = page;
		return false;
	}
	char hex[2 * ELFV_MAX_BUILD_ID + 1] = "";
	if (blen)
		base_hex(bid, blen, hex);
	struct uw_module *m = proc_module_get(t->s, name, strlen(name), hex, maj, min, ino);
	if (!m || proc_mmap(t, p->pid, start, end - start, off, PROT_READ | PROT_EXEC, m))
		return false;
	/* the recorder writes it out, so readers of its output know the mapping too */
	if (t->on_new_map)
		t->on_new_map(t->on_new_map_ctx, p->pid, start, end - start, off, maj, min, ino, name,
			      blen ? bid : NULL, blen, time);
	return true;
}

bool proc_find_pc(void *ctx, uint64_t pc, struct unw_pc_info *out)
{
	struct proc_find_ctx *c = ctx;
	struct uw_tracker *t = c->t;
	const struct map *cm = c->p ? proc_find_map(c->p, pc) : NULL;
	if (!cm && c->p && t->o.live && pc >= 4096 && pc < (1ull << 47) && ask_kernel(t, c->p, pc, c->time))
		cm = proc_find_map(c->p, pc);
	/* JIT code: in an anonymous mapping (or one the recording missed), named by the process's
	 * jitdump as it was at the sample's time, else by its perf-PID.map; the address is
	 * absolute, as perf shows it (not live: the output keeps addresses, and reading a file a
	 * process controls has no place on the thread that drains the rings) */
	if (c->p && !t->o.live && (!cm || !cm->mod || (cm->mod->special && !cm->mod->jit && cm->mod->path[0] != '['))) {
		struct uw_module *jm = c->p->jd ? proc_jitdump_find(t, c->p, pc, c->time) : NULL;
		if (!jm)
			jm = proc_jit_module(t, c->p);
		const struct sym *js = jm ? symtab_find(&jm->syms, pc) : NULL;
		if (js) {
			out->module = jm;
			out->map_addr = jm->jitdump ? JITDUMP_TEXT_OFFSET + (pc - js->start) : pc;
			out->bias = 0;
			out->code = NULL;
			proc_module_hit(jm);
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
		if (m->mod && proc_module_open(t->s, m->mod)) {
			uint64_t vaddr;
			if (elfv_offset_to_vaddr(m->mod->elf, out->map_addr, &vaddr))
				m->bias = pc - vaddr;
		}
		m->bias_known = true;
	}
	out->bias = m->bias;
	out->code = m->mod ? proc_module_code(t->s, m->mod) : NULL;
	if (m->mod)
		proc_module_hit(m->mod);
	return true;
}

void tracker_frame_at(struct proc_find_ctx *fc, uint64_t ip, uint8_t method, struct uw_frame *f)
{
	struct unw_pc_info info = { 0 };
	memset(f, 0, sizeof(*f));
	bool mapped = fc->p && proc_find_pc(fc, ip, &info);
	f->pc = ip;
	f->module = info.module;
	f->map_addr = mapped ? info.map_addr : ip;
	f->rel_pc = ip - info.bias;
	f->method = method;
	/* the kernel's frame-pointer callchain: addresses shown as given (perf script does not
	 * adjust them either) */
	f->is_call = 0;
}

void tracker_on_new_map(struct uw_tracker *t, tracker_map_fn fn, void *ctx)
{
	t->on_new_map = fn;
	t->on_new_map_ctx = ctx;
}

/* ---- the public tracker */

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
	if (base_opts_copy(&t->o, sizeof(t->o), opts)) {
		free(t);
		errno = EINVAL;
		return NULL;
	}
	t->s = s;
	t->o.sz = sizeof(t->o);
	if (!t->o.exit_grace_ns)
		t->o.exit_grace_ns = 1000000000ull; /* late samples within 1 s of EXIT still resolve */
	base_map_init(&t->procs);
	base_map_init(&t->threads);
	base_map_init(&t->buildids);
	t->st.sz = sizeof(t->st);
	t->frames = calloc(s->opts.max_frames, sizeof(*t->frames));
	t->cfi_cache = cfi_cache_new();
	if (!t->frames || !t->cfi_cache) {
		uw_tracker_free(t);
		errno = ENOMEM;
		return NULL;
	}
	if (t->o.live)
		proc_session_live(s);
	return t;
}

UW_API void uw_tracker_free(struct uw_tracker *t)
{
	if (!t)
		return;
	size_t it = 0;
	void *val;
	while (base_map_next(&t->procs, &it, NULL, &val))
		proc_free(t, val);
	base_map_free(&t->procs);
	it = 0;
	while (base_map_next(&t->threads, &it, NULL, &val))
		free(val);
	base_map_free(&t->threads);
	base_map_free(&t->buildids);
	free(t->frames);
	cfi_cache_free(t->cfi_cache);
	free(t);
}

/* Processes that exited long enough ago go as time passes. */
static void tick(struct uw_tracker *t, uint64_t time)
{
	if (time && ++t->since_sweep >= 4096) {
		t->since_sweep = 0;
		proc_sweep(t, time);
	}
}

UW_API int uw_tracker_mmap(struct uw_tracker *t, const struct uw_mmap_event *ev)
{
	struct uw_mmap_event e;
	if (!t || base_opts_copy(&e, sizeof(e), ev) || !e.path || (e.build_id_size && !e.build_id))
		return -EINVAL;
	tick(t, e.time);
	bool kernel = e.pid == (uint32_t)-1;
	return tracker_map_event(t, (int32_t)e.pid, kernel ? PROC_CPUMODE_KERNEL : 0, e.addr, e.len, e.pgoff, e.prot,
				 e.maj, e.min, e.ino, e.build_id, e.build_id_size, e.path, strlen(e.path));
}

UW_API int uw_tracker_comm(struct uw_tracker *t, uint32_t pid, uint32_t tid, const char *comm, int exec,
                           uint64_t time)
{
	if (!t || !comm) {
		if (t)
			t->st.malformed_comm++;
		return -EINVAL;
	}
	tick(t, time);
	return proc_comm(t, (int32_t)pid, (int32_t)tid, comm, strnlen(comm, 4096), exec != 0, time);
}

UW_API int uw_tracker_fork(struct uw_tracker *t, uint32_t ppid, uint32_t ptid, uint32_t pid, uint32_t tid,
                           uint64_t time)
{
	if (!t)
		return -EINVAL;
	tick(t, time);
	return proc_fork(t, (int32_t)pid, (int32_t)ppid, (int32_t)tid, (int32_t)ptid, time);
}

UW_API int uw_tracker_exit(struct uw_tracker *t, uint32_t pid, uint32_t tid, uint64_t time)
{
	if (!t)
		return -EINVAL;
	tick(t, time);
	proc_exit(t, (int32_t)pid, (int32_t)tid, time);
	return 0;
}

UW_API int uw_tracker_note_build_id(struct uw_tracker *t, const char *path, const uint8_t *build_id, size_t size)
{
	if (!t || !path || !build_id || !size || size > ELFV_MAX_BUILD_ID)
		return -EINVAL;
	proc_note_build_id(t, path, build_id, size);
	return 0;
}

UW_API void uw_tracker_sweep(struct uw_tracker *t, uint64_t now)
{
	if (t)
		proc_sweep(t, now);
}

UW_API int uw_tracker_stats(const struct uw_tracker *t, struct uw_tracker_stats *st)
{
	if (!t || !st || st->sz < sizeof(size_t))
		return -EINVAL;
	struct uw_tracker_stats cur = t->st;
	cur.processes = t->procs.len;
	cur.threads = t->threads.len;
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
	struct proc_find_ctx fc = { t, proc_get(t, (int32_t)pid, false), UINT64_MAX };
	struct unw_pc_info info = { 0 };
	if (!fc.p || !proc_find_pc(&fc, addr, &info))
		return -ENOENT;
	if (m)
		*m = info.module;
	if (rel)
		*rel = addr - info.bias;
	return 0;
}
