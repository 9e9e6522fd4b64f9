/* SPDX-License-Identifier: MIT */
/* Address-space bookkeeping: overlapping mappings, fork, exec, exit before a late sample. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "process/tracker.h"

static struct uw_module *mod(struct uw_session *s, const char *path)
{
	return module_get(s, path, strlen(path), "", 8, 1, (uint64_t)strlen(path));
}

static void expect_map(struct tracker_proc *p, size_t i, uint64_t start, uint64_t end, uint64_t pgoff, struct uw_module *m)
{
	assert_true(i < p->maps.len);
	struct tracker_map *mp = base_vec_at(&p->maps, i);
	assert_int_equal(mp->start, start);
	assert_int_equal(mp->end, end);
	assert_int_equal(mp->pgoff, pgoff);
	assert_ptr_equal(mp->mod, m);
}

/* /proc/PID/maps lines, as the live recorder and the pre-6.11 lookup read them */
static void test_maps_lines(void **state)
{
	(void)state;
	struct tracker_maps_line m;
	char a[] = "7f12a4e28000-7f12a4fbd000 r-xp 00028000 fe:01 1311456                    /usr/lib/libc.so.6\n";
	assert_true(tracker_maps_parse(a, &m));
	assert_int_equal(m.start, 0x7f12a4e28000ull);
	assert_int_equal(m.end, 0x7f12a4fbd000ull);
	assert_int_equal(m.pgoff, 0x28000);
	assert_int_equal(m.maj, 0xfe);
	assert_int_equal(m.min, 1);
	assert_int_equal(m.ino, 1311456);
	assert_true(m.read && !m.write && m.exec);
	assert_string_equal(m.path, "/usr/lib/libc.so.6");
	char b[] = "7ffd1000-7ffd3000 rw-p 00000000 00:00 0 \n";
	assert_true(tracker_maps_parse(b, &m));
	assert_true(m.read && m.write && !m.exec);
	assert_string_equal(m.path, "//anon");
	char c[] = "7f00 r-xp 0 fe:01 1 /x\n", d[] = "1000-2000 x 0 fe:01 1 /x\n";
	assert_false(tracker_maps_parse(c, &m));
	assert_false(tracker_maps_parse(d, &m));
}

static void test_overlaps(void **state)
{
	(void)state;
	struct uw_session *s = uw_session_new(NULL);
	struct uw_tracker *t = uw_tracker_new(s, NULL);
	struct uw_module *a = mod(s, "/lib/a.so"), *b = mod(s, "/lib/b.so"), *c = mod(s, "/lib/c.so");
	assert_ptr_equal(a, mod(s, "/lib/a.so")); /* one module per identity */
	assert_int_equal(tracker_mmap(t, 10, 0x1000, 0x4000, 0, 5, a), 0);
	assert_int_equal(tracker_mmap(t, 10, 0x2000, 0x1000, 0x7000, 5, b), 0);
	struct tracker_proc *p = tracker_proc_get(t, 10, false);
	assert_int_equal(p->maps.len, 3);
	expect_map(p, 0, 0x1000, 0x2000, 0, a);
	expect_map(p, 1, 0x2000, 0x3000, 0x7000, b);
	expect_map(p, 2, 0x3000, 0x5000, 0x2000, a); /* the right part keeps its file offset */
	/* a mapping covering several replaces them all and trims the edges */
	assert_int_equal(tracker_mmap(t, 10, 0x1800, 0x3000, 0, 5, c), 0);
	assert_int_equal(p->maps.len, 3);
	expect_map(p, 0, 0x1000, 0x1800, 0, a);
	expect_map(p, 1, 0x1800, 0x4800, 0, c);
	expect_map(p, 2, 0x4800, 0x5000, 0x3800, a);
	assert_null(tracker_find_map(p, 0xfff));
	assert_ptr_equal(tracker_find_map(p, 0x1800)->mod, c);
	assert_ptr_equal(tracker_find_map(p, 0x4fff)->mod, a);
	assert_null(tracker_find_map(p, 0x5000));
	assert_int_equal(a->refs, 2);
	assert_int_equal(b->refs, 0);
	assert_int_equal(c->refs, 1);
	/* an exact replacement */
	assert_int_equal(tracker_mmap(t, 10, 0x1800, 0x3000, 0, 5, b), 0);
	assert_int_equal(p->maps.len, 3);
	assert_int_equal(c->refs, 0);
	/* zero length and wrap-around are rejected */
	assert_int_not_equal(tracker_mmap(t, 10, 0x1000, 0, 0, 5, a), 0);
	assert_int_not_equal(tracker_mmap(t, 10, UINT64_MAX - 10, 0x100, 0, 5, a), 0);
	uw_tracker_free(t);
	uw_session_free(s);
}

/* Random mappings over a small address space (most overlap others) against a model of its
 * pages: after each, every page's module and file offset as the model says, the list sorted
 * and disjoint, each module referenced once per mapping of it. */
static void test_overlaps_random(void **state)
{
	(void)state;
	enum { PAGES = 96, MODS = 4 };
	struct uw_session *s = uw_session_new(NULL);
	struct uw_tracker *t = uw_tracker_new(s, NULL);
	struct uw_module *mods[MODS];
	for (int i = 0; i < MODS; i++) {
		char path[32];
		snprintf(path, sizeof(path), "/lib/r%d.so", i);
		mods[i] = mod(s, path);
	}
	int model_mod[PAGES];
	uint64_t model_off[PAGES];
	for (int i = 0; i < PAGES; i++)
		model_mod[i] = -1;
	uint32_t seed = 12345;
	for (int round = 0; round < 4000; round++) {
		seed = seed * 1103515245u + 12345u;
		int first = (int)((seed >> 8) % PAGES);
		seed = seed * 1103515245u + 12345u;
		int n = 1 + (int)((seed >> 8) % (round % 3 == 0 ? 40 : 6));
		if (first + n > PAGES)
			n = PAGES - first;
		int k = (int)((seed >> 20) % MODS);
		uint64_t off = (uint64_t)((seed >> 4) % 64) * 0x1000;
		assert_int_equal(tracker_mmap(t, 7, 0x100000 + (uint64_t)first * 0x1000, (uint64_t)n * 0x1000, off, 5, mods[k]), 0);
		for (int i = 0; i < n; i++) {
			model_mod[first + i] = k;
			model_off[first + i] = off + (uint64_t)i * 0x1000;
		}
		struct tracker_proc *p = tracker_proc_get(t, 7, false);
		const struct tracker_map *m = p->maps.data;
		unsigned refs[MODS] = { 0 };
		for (size_t i = 0; i < p->maps.len; i++) {
			assert_true(m[i].start < m[i].end);
			if (i)
				assert_true(m[i - 1].end <= m[i].start);
			for (int j = 0; j < MODS; j++)
				refs[j] += m[i].mod == mods[j];
		}
		for (int j = 0; j < MODS; j++)
			assert_int_equal(mods[j]->refs, refs[j]);
		for (int i = 0; i < PAGES; i++) {
			uint64_t a = 0x100000 + (uint64_t)i * 0x1000 + 0x123;
			const struct tracker_map *f = tracker_find_map(p, a);
			if (model_mod[i] < 0) {
				assert_null(f);
				continue;
			}
			assert_non_null(f);
			assert_ptr_equal(f->mod, mods[model_mod[i]]);
			assert_int_equal(a - f->start + f->pgoff, model_off[i] + 0x123);
		}
	}
	uw_tracker_free(t);
	uw_session_free(s);
}

static void test_fork_exec(void **state)
{
	(void)state;
	struct uw_session *s = uw_session_new(NULL);
	struct uw_tracker *t = uw_tracker_new(s, NULL);
	struct uw_module *a = mod(s, "/bin/sh"), *b = mod(s, "/bin/cc1");
	assert_int_equal(tracker_set_comm(t, 100, 100, "sh", 2, false, 0), 0);
	assert_int_equal(tracker_mmap(t, 100, 0x400000, 0x1000, 0, 5, a), 0);
	assert_int_equal(tracker_fork(t, 101, 100, 101, 100, 5), 0);
	struct tracker_proc *c = tracker_proc_get(t, 101, false);
	assert_non_null(c);
	assert_int_equal(c->maps.len, 1);
	assert_string_equal(c->comm, "sh");
	assert_string_equal(tracker_thread_get(t, 101, 101, false)->comm, "sh");
	/* exec: a new image; the parent keeps its own */
	assert_int_equal(tracker_set_comm(t, 101, 101, "cc1", 3, true, 0), 0);
	assert_int_equal(c->maps.len, 0);
	assert_int_equal(tracker_mmap(t, 101, 0x400000, 0x2000, 0, 5, b), 0);
	assert_ptr_equal(tracker_find_map(c, 0x400100)->mod, b);
	assert_ptr_equal(tracker_find_map(tracker_proc_get(t, 100, false), 0x400100)->mod, a);
	/* a thread: same process, no copy */
	assert_int_equal(tracker_fork(t, 100, 100, 102, 100, 6), 0);
	assert_non_null(tracker_thread_get(t, 100, 102, false));
	assert_int_equal(tracker_proc_get(t, 100, false)->maps.len, 1);
	uw_tracker_free(t);
	uw_session_free(s);
}

/* A fork shares its parent's mapping list until one of them changes it: one copy and one
 * module reference however many children, a change copies the changer's alone. */
static void test_fork_shares(void **state)
{
	(void)state;
	struct uw_session *s = uw_session_new(NULL);
	struct uw_tracker *t = uw_tracker_new(s, NULL);
	struct uw_module *a = mod(s, "/bin/srv"), *b = mod(s, "/lib/plugin.so");
	for (int i = 0; i < 100; i++)
		assert_int_equal(tracker_mmap(t, 100, 0x400000 + (uint64_t)i * 0x10000, 0x1000, 0, 5, a), 0);
	for (int c = 0; c < 50; c++)
		assert_int_equal(tracker_fork(t, 200 + c, 100, 200 + c, 100, 5), 0);
	struct tracker_proc *p = tracker_proc_get(t, 100, false), *c1 = tracker_proc_get(t, 201, false);
	assert_ptr_equal(c1->maps.data, p->maps.data);
	assert_int_equal(a->refs, 100);
	/* a child maps something: its own list, the others still share */
	assert_int_equal(tracker_mmap(t, 201, 0x7f0000000000, 0x2000, 0, 5, b), 0);
	assert_ptr_not_equal(c1->maps.data, p->maps.data);
	assert_int_equal(c1->maps.len, 101);
	assert_int_equal(p->maps.len, 100);
	assert_int_equal(a->refs, 200);
	assert_int_equal(b->refs, 1);
	assert_null(tracker_find_map(p, 0x7f0000000100));
	assert_ptr_equal(tracker_find_map(c1, 0x7f0000000100)->mod, b);
	assert_ptr_equal(tracker_find_map(tracker_proc_get(t, 249, false), 0x400100)->mod, a);
	/* the parent execs: the children keep the old image */
	assert_int_equal(tracker_set_comm(t, 100, 100, "new", 3, true, 0), 0);
	assert_int_equal(p->maps.len, 0);
	assert_ptr_equal(tracker_find_map(tracker_proc_get(t, 249, false), 0x400100)->mod, a);
	assert_int_equal(a->refs, 200); /* the children's shared list, and 201's own */
	uw_tracker_free(t);
	assert_int_equal(a->refs, 0);
	assert_int_equal(b->refs, 0);
	uw_session_free(s);
}

static void test_exit_then_late_sample(void **state)
{
	(void)state;
	struct uw_session *s = uw_session_new(NULL);
	struct uw_tracker *t = uw_tracker_new(s, NULL);
	struct uw_module *a = mod(s, "/bin/true");
	assert_int_equal(tracker_mmap(t, 200, 0x1000, 0x1000, 0, 5, a), 0);
	tracker_exit(t, 200, 200, 1000000000ull);
	/* a sample stamped before the exit but delivered after it still resolves */
	struct tracker_proc *p = tracker_proc_get(t, 200, false);
	assert_non_null(p);
	assert_true(p->exited);
	struct tracker_find_ctx fc = { .t = t, .p = p, .time = UINT64_MAX };
	struct unw_pc_info info;
	assert_true(tracker_find_pc(&fc, 0x1800, &info));
	assert_ptr_equal(info.module, a);
	assert_int_equal(info.map_addr, 0x800);
	/* within the grace period it stays; after it, it is freed */
	tracker_sweep(t, 1500000000ull);
	assert_non_null(tracker_proc_get(t, 200, false));
	tracker_sweep(t, 2500000000ull);
	assert_null(tracker_proc_get(t, 200, false));
	assert_int_equal(a->refs, 0);
	/* pid reuse by fork replaces the old process at once */
	assert_int_equal(tracker_mmap(t, 300, 0x1000, 0x1000, 0, 5, a), 0);
	tracker_exit(t, 300, 300, 5);
	assert_int_equal(tracker_fork(t, 300, 1, 300, 1, 6), 0);
	assert_int_equal(tracker_proc_get(t, 300, false)->maps.len, 0);
	assert_false(tracker_proc_get(t, 300, false)->exited);
	uw_tracker_free(t);
	uw_session_free(s);
}

/* Recording: modules no mapping refers to are unloaded beyond the idle list's size; their
 * handles (path, build-id) stay valid; one mapped again leaves the list. */
static void test_idle_modules(void **state)
{
	(void)state;
	struct uw_session *s = uw_session_new(NULL);
	struct uw_tracker *t = uw_tracker_new(s, &(struct uw_tracker_opts){ .sz = sizeof(struct uw_tracker_opts), .live = 1 });
	uint64_t now = 1000000000ull;
	struct uw_module *keep = mod(s, "/usr/bin/keeper");
	assert_int_equal(tracker_mmap(t, 1, 0x100000, 0x1000, 0, 5, keep), 0);
	struct uw_module *first = NULL;
	for (int i = 0; i < 3 * MODULE_IDLE_MAX; i++) {
		char path[64];
		snprintf(path, sizeof(path), "/tmp/prog%d", i);
		struct uw_module *m = mod(s, path);
		snprintf(m->build_id, sizeof(m->build_id), "%040x", i + 1);
		if (!first)
			first = m;
		int32_t pid = 1000 + i;
		assert_int_equal(tracker_mmap(t, pid, 0x1000, 0x1000, 0, 5, m), 0);
		tracker_exit(t, pid, pid, now);
		now += 2000000000ull; /* past the grace period: the process is freed at the next sweep */
		tracker_sweep(t, now);
	}
	/* bounded: the idle list holds at most MODULE_IDLE_MAX loaded modules; the handles stay */
	assert_true(module_cache(s)->idle_mods.len <= MODULE_IDLE_MAX);
	assert_int_equal(module_cache(s)->modules.len, 3 * MODULE_IDLE_MAX + 1);
	assert_false(first->idle);
	assert_string_equal(uw_module_path(first), "/tmp/prog0");
	assert_string_equal(first->build_id, "0000000000000000000000000000000000000001");
	assert_false(keep->idle);
	/* a module mapped again while idle is busy again, and not freed */
	struct uw_module *last = mod(s, "/tmp/last");
	assert_int_equal(tracker_mmap(t, 5000, 0x1000, 0x1000, 0, 5, last), 0);
	tracker_exit(t, 5000, 5000, now);
	tracker_sweep(t, now + 2000000000ull);
	assert_true(last->idle);
	assert_int_equal(tracker_mmap(t, 5001, 0x1000, 0x1000, 0, 5, last), 0);
	assert_false(last->idle);
	for (int i = 0; i < 2 * MODULE_IDLE_MAX; i++) {
		char path[64];
		snprintf(path, sizeof(path), "/tmp/more%d", i);
		struct uw_module *m = mod(s, path);
		assert_int_equal(tracker_mmap(t, 6000 + i, 0x1000, 0x1000, 0, 5, m), 0);
		tracker_exit(t, 6000 + i, 6000 + i, now);
		now += 2000000000ull;
		tracker_sweep(t, now);
	}
	assert_ptr_equal(base_map_get(&module_cache(s)->modules, last->key), last);
	assert_int_equal(last->refs, 1);
	uw_tracker_free(t);
	uw_session_free(s);
}

/* ---- jitdump: a synthetic dump where code space is reused */
static size_t put(uint8_t *b, size_t at, const void *v, size_t n)
{
	memcpy(b + at, v, n);
	return at + n;
}

static size_t load(uint8_t *b, size_t at, uint64_t time, uint64_t addr, uint64_t size, uint64_t index, const char *name)
{
	size_t start = at, nl = strlen(name) + 1;
	uint32_t id = 0, total = (uint32_t)(16 + 8 + 8 * 4 + nl + size), pid = 77, tid = 77;
	uint64_t vma = addr;
	at = put(b, at, &id, 4);
	at = put(b, at, &total, 4);
	at = put(b, at, &time, 8);
	at = put(b, at, &pid, 4);
	at = put(b, at, &tid, 4);
	at = put(b, at, &vma, 8);
	at = put(b, at, &addr, 8);
	at = put(b, at, &size, 8);
	at = put(b, at, &index, 8);
	at = put(b, at, name, nl);
	memset(b + at, 0xcc, size); /* the code */
	return start + total;
}

static const char *jit_name(struct uw_session *s, struct jitdump *jd, uint64_t pc, uint64_t time, bool timed)
{
	struct uw_module *m = jit_dump_find(s, jd, 77, pc, time, timed);
	struct uw_symbol sy;
	uint64_t start;
	if (!m || !jit_symbol_at(m, pc, &start) || uw_symbolize(s, m, pc, &sy) || sy.start != start)
		return NULL;
	return sy.name;
}

static void test_jitdump(void **state)
{
	(void)state;
	static uint8_t b[4096];
	uint32_t hdr[4] = { 0x4A695444, 1, 40, 62 };
	size_t at = put(b, 0, hdr, 16);
	uint32_t pad = 0, pid = 77;
	uint64_t ts = 0, flags = 0;
	at = put(b, at, &pad, 4);
	at = put(b, at, &pid, 4);
	at = put(b, at, &ts, 8);
	at = put(b, at, &flags, 8);
	at = load(b, at, 100, 0x10000, 0x100, 1, "first");
	at = load(b, at, 200, 0x10080, 0x40, 2, "other");
	at = load(b, at, 300, 0x10000, 0x100, 3, "reused"); /* the code space of "first", later */
	size_t whole = at;
	at = load(b, at, 400, 0x20000, 0x100, 4, "cut"); /* the JIT was writing this one */
	struct uw_session *s = uw_session_new(NULL);
	struct jitdump *dump = NULL;
	assert_int_equal(jit_dump_parse(s, b, at - 10, &dump), 0); /* the cut record is ignored */
	assert_null(jit_name(s, dump, 0x10010, 50, true));                    /* before any load */
	assert_string_equal(jit_name(s, dump, 0x10010, 150, true), "first");
	assert_string_equal(jit_name(s, dump, 0x10090, 250, true), "other");   /* inner, later load */
	assert_string_equal(jit_name(s, dump, 0x10010, 250, true), "first");
	assert_string_equal(jit_name(s, dump, 0x10010, 350, true), "reused");
	assert_string_equal(jit_name(s, dump, 0x10090, 350, true), "reused");
	assert_null(jit_name(s, dump, 0x20010, 450, true));                    /* the cut record */
	/* times of another clock: the latest load */
	assert_string_equal(jit_name(s, dump, 0x10010, 150, false), "reused");
	jit_dump_free(dump);
	/* every truncation and a bad magic: an error or a partial table, never a crash */
	for (size_t n = 0; n < whole; n++) {
		struct jitdump *jd = NULL;
		int err = jit_dump_parse(s, b, n, &jd);
		assert_true(err != 0 || jd != NULL);
		jit_dump_free(jd);
	}
	b[0] ^= 0xff;
	struct jitdump *jd = NULL;
	assert_int_equal(jit_dump_parse(s, b, whole, &jd), -UW_EMAGIC);
	uw_session_free(s);
}

/* The module a mapping event made, through the public call (an embedder's path), opened: the
 * file at the path is used only when it is the recorded one (open.c, same_file). */
static struct uw_module *mapped(struct uw_session *s, struct uw_tracker *t, uint32_t pid, const char *path,
                                const struct stat *st, int dmin, int dino, uint64_t gen)
{
	struct uw_mmap_event ev = { .sz = sizeof(ev), .pid = pid, .tid = pid, .addr = 0x400000, .len = 0x1000,
				    .prot = PROT_READ | PROT_EXEC, .maj = major(st->st_dev),
				    .min = minor(st->st_dev) + (uint32_t)dmin, .ino = st->st_ino + (uint64_t)dino,
				    .ino_generation = gen, .path = path };
	assert_int_equal(uw_tracker_mmap(t, &ev), 0);
	struct tracker_proc *p = tracker_proc_get(t, (int32_t)pid, false);
	assert_non_null(p);
	struct tracker_map *m = base_vec_at(&p->maps, 0);
	module_open(s, m->mod);
	return m->mod;
}

static void test_identity(void **state)
{
	(void)state;
	/* an ELF file of our own, on the build's filesystem (tmpfs has no inode generations) */
	const char *b = getenv("UW_BUILD");
	char dir[4096], path[4200];
	snprintf(dir, sizeof(dir), "%s/tests/work", b ? b : ".");
	mkdir(dir, 0755);
	snprintf(path, sizeof(path), "%s/ident-%d.so", dir, (int)getpid());
	int in = open("/proc/self/exe", O_RDONLY), out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(in >= 0 && out >= 0);
	char buf[65536];
	ssize_t n;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	close(in);
	struct stat st;
	assert_int_equal(fstat(out, &st), 0);
	unsigned int gen = 0;
	bool has_gen = ioctl(out, FS_IOC_GETVERSION, &gen) == 0 && gen;
	close(out);
	struct uw_session *s = uw_session_new(NULL);
	struct uw_tracker *t = uw_tracker_new(s, NULL);
	/* the recorded device and inode: used */
	assert_int_equal(uw_module_state(mapped(s, t, 10, path, &st, 0, 0, 0)), UW_MODULE_OK);
	/* the same device, another inode: another file */
	assert_int_equal(uw_module_state(mapped(s, t, 11, path, &st, 0, 1, 0)), UW_MODULE_MISMATCH);
	/* another device: a recording of another machine (another device proves nothing) ... */
	assert_int_equal(uw_module_state(mapped(s, t, 12, path, &st, 1, 0, 0)), UW_MODULE_OK);
	/* ... unless a live tracker saw it mapped: a file of this machine */
	struct uw_module *live = module_get(s, path, strlen(path), "", major(st.st_dev), minor(st.st_dev) + 2, st.st_ino);
	module_note_live(live, 999999999, 0x1000, 0x2000); /* (no such process: its path is opened) */
	assert_false(module_open(s, live));
	assert_int_equal(uw_module_state(live), UW_MODULE_MISMATCH);
	uw_tracker_free(t);
	uw_session_free(s);
	if (has_gen) {
		/* the inode's number given again to another file: its generation tells (a module of
		 * its own: two generations are two files; a session of its own, where no module of
		 * that path, device and inode came without a generation and took the first given) */
		s = uw_session_new(NULL);
		t = uw_tracker_new(s, NULL);
		struct uw_module *other = mapped(s, t, 13, path, &st, 0, 0, (uint64_t)gen + 1);
		assert_int_equal(uw_module_state(other), UW_MODULE_MISMATCH);
		struct uw_module *same = mapped(s, t, 14, path, &st, 0, 0, gen);
		assert_ptr_not_equal(same, other);
		assert_int_equal(uw_module_state(same), UW_MODULE_OK);
		uw_tracker_free(t);
		uw_session_free(s);
	} else {
		print_message("(the build's filesystem gives no inode generation: that part not tested here)\n");
	}
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_maps_lines),
		cmocka_unit_test(test_overlaps),
		cmocka_unit_test(test_overlaps_random),
		cmocka_unit_test(test_fork_exec),
		cmocka_unit_test(test_fork_shares),
		cmocka_unit_test(test_exit_then_late_sample),
		cmocka_unit_test(test_jitdump),
		cmocka_unit_test(test_idle_modules),
		cmocka_unit_test(test_identity),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
