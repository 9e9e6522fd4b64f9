/* SPDX-License-Identifier: MIT */
/*
 * The in-kernel unwinder (lib/kernel) against a live program, tests/programs/deeprec.c: two
 * threads spinning at the bottom of a DEPTH-deep recursion through 1 KiB frames, no frame
 * pointers, no SFrame. The program's stacks do not change while it spins, so every sample of a
 * thread must give the same frames beyond frame 0, and those are known:
 *   spin, recurse x DEPTH, main or worker, then libc's and _start's frames to the root.
 *
 *   kunwcheck PROGRAM [--depth N] [--samples N] [--copy-check] [--fallback] [--timing]
 *   kunwcheck --pid PID [--samples N] [--copy-check] [--min-root PERCENT] [--min-kernel PERCENT]
 *             [--timing]
 *
 * With --pid, a running process of any shape: the rows and verify phases without an expected
 * stack (the share reaching a root, frames per sample, the run time, and lib/unwind's agreement
 * over the copies), for measuring on real workloads.
 *
 * Phases, each on the same child, each run until N samples (no time limit but a watchdog):
 *   rows      every module's table loaded: >= 99% of samples reach the root through the whole
 *             recursion, with no walk handed to user space; the program's run time per sample
 *             (bpf_enable_stats) and the bytes of its maps are printed;
 *   verify    (--copy-check) the program also hands over frame 0's registers and 32 KiB of
 *             stack with every sample: lib/unwind's frames from that copy must equal the
 *             program's, frame for frame, as far as the copy reaches;
 *   fallback  (--fallback) libc's table dropped: every walk reaches libc and is handed to user
 *             space, which must finish it with the same frames as the rows phase.
 * --timing prints where the program's time went, stage by stage (kunw_opts.timing), after each
 * phase. Exit status 0 when every check holds; each failure says why.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>

#include "kernel/kunw.h"
#include "symbolize/symtab.h"

#define MAX_MODS 64
#define MAX_MAPS 512
#define MAX_FRAMES 4096

struct mod {
	char path[PATH_MAX];
	struct elfv *elf;
	struct unw_tables code;
	struct kunw_table table;
	uint32_t id;
	bool loaded;
};

struct map {
	uint64_t start, end, pgoff, rel_start;
	struct mod *mod; /* NULL: anonymous executable memory */
};

struct space {
	int pid;
	struct map maps[MAX_MAPS];
	unsigned nmaps;
	struct mod mods[MAX_MODS];
	unsigned nmods;
	struct mod *exe, *libc;
	struct symtab syms; /* the executable's */
};

static int failures;

static void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stdout, "FAIL: ");
	vfprintf(stdout, fmt, ap);
	fprintf(stdout, "\n");
	va_end(ap);
	failures++;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return level == LIBBPF_DEBUG ? 0 : vfprintf(stderr, fmt, ap);
}

/* ---------------------------------------------------------------- the child's address space */

static bool find_pc(void *ctx, uint64_t pc, struct unw_pc_info *out)
{
	struct space *sp = ctx;
	for (unsigned i = 0; i < sp->nmaps; i++) {
		const struct map *m = &sp->maps[i];
		if (pc < m->start || pc >= m->end)
			continue;
		out->module = m->mod ? (void *)m->mod : (void *)m;
		out->map_addr = pc - m->start + m->pgoff;
		out->bias = m->start - m->rel_start;
		out->code = m->mod ? &m->mod->code.code : NULL;
		return true;
	}
	return false;
}

/* The [vdso] image of the child, read from its memory. */
static int read_vdso(int pid, uint64_t start, uint64_t end, struct elfv **out)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/mem", pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t size = (size_t)(end - start);
	void *img = malloc(size);
	ssize_t n = img ? pread(fd, img, size, (off_t)start) : -1;
	close(fd);
	if (n != (ssize_t)size) {
		free(img);
		return -EIO;
	}
	return elfv_adopt_mem(img, size, out);
}

static struct mod *module_of(struct space *sp, const char *path, uint64_t start, uint64_t end)
{
	for (unsigned i = 0; i < sp->nmods; i++)
		if (!strcmp(sp->mods[i].path, path))
			return &sp->mods[i];
	if (sp->nmods == MAX_MODS)
		return NULL;
	struct mod *m = &sp->mods[sp->nmods];
	memset(m, 0, sizeof(*m));
	snprintf(m->path, sizeof(m->path), "%s", path);
	int e;
	if (!strcmp(path, "[vdso]")) {
		e = read_vdso(sp->pid, start, end, &m->elf);
	} else {
		/* through map_files: the file mapped, whatever its path became */
		char mf[128];
		snprintf(mf, sizeof(mf), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, sp->pid, start, end);
		e = elfv_open(mf, 0, &m->elf);
	}
	if (e) {
		fail("%s: cannot open: %s", path, uw_strerror(e));
		return NULL;
	}
	if ((e = kunw_code_build(&m->code, m->elf, NULL)) || (e = kunw_table_build(&m->table, &m->code.code))) {
		fail("%s: unwind tables: %s", path, uw_strerror(e));
		elfv_close(m->elf);
		return NULL;
	}
	m->id = sp->nmods + 1;
	sp->nmods++;
	return m;
}

/* The executable mappings of the child (/proc/PID/maps), their modules opened and converted. */
static int load_space(struct space *sp, int pid, const char *exe, bool require)
{
	char p[64], line[PATH_MAX + 128];
	snprintf(p, sizeof(p), "/proc/%d/maps", pid);
	FILE *f = fopen(p, "r");
	if (!f)
		return -errno;
	sp->pid = pid;
	while (fgets(line, sizeof(line), f)) {
		uint64_t start, end, pgoff;
		char perms[8], path[PATH_MAX] = "";
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %4095[^\n]", &start, &end, perms, &pgoff,
		           path) < 4 ||
		    perms[2] != 'x' || !strcmp(path, "[vsyscall]"))
			continue;
		if (sp->nmaps == MAX_MAPS)
			break;
		struct map *m = &sp->maps[sp->nmaps];
		*m = (struct map){ start, end, pgoff, start, NULL };
		if (path[0] == '/' || !strcmp(path, "[vdso]")) {
			if (!(m->mod = module_of(sp, path, start, end)))
				continue;
			if (!elfv_offset_to_vaddr(m->mod->elf, pgoff, &m->rel_start)) {
				fail("%s: offset %#" PRIx64 " in no segment", path, pgoff);
				continue;
			}
			const char *base = strrchr(path, '/');
			if (!strcmp(path, exe))
				sp->exe = m->mod;
			else if (base && !strncmp(base + 1, "libc.so", 7))
				sp->libc = m->mod;
		}
		sp->nmaps++;
	}
	fclose(f);
	if (!require)
		return 0;
	if (!sp->exe || !sp->libc) {
		fail("the child's maps have no %s", sp->exe ? "libc" : exe);
		return -ENOENT;
	}
	int e = symtab_build(&sp->syms, sp->exe->elf, NULL, false);
	if (e)
		fail("%s: symbols: %s", exe, uw_strerror(e));
	return e;
}

static void free_space(struct space *sp)
{
	symtab_free(&sp->syms);
	for (unsigned i = 0; i < sp->nmods; i++) {
		kunw_table_free(&sp->mods[i].table);
		unw_tables_free(&sp->mods[i].code);
		elfv_close(sp->mods[i].elf);
	}
}

/* Loads every module's table (but skip's) and the child's mappings into the program. */
static int feed(struct kunw *k, struct space *sp, const struct mod *skip)
{
	struct kunw_map v[MAX_MAPS];
	for (unsigned i = 0; i < sp->nmods; i++) {
		struct mod *m = &sp->mods[i];
		if (m == skip)
			continue;
		int e = kunw_module_add(k, m->id, &m->table);
		if (e) {
			fail("%s: table not loaded: %s", m->path, uw_strerror(e));
			return e;
		}
		m->loaded = true;
	}
	for (unsigned i = 0; i < sp->nmaps; i++) {
		const struct map *m = &sp->maps[i];
		v[i] = (struct kunw_map){ m->start, m->end, m->mod ? m->mod->id : KUNW_MODULE_ANON, (uint32_t)m->rel_start };
	}
	int e = kunw_proc_set(k, (uint32_t)sp->pid, v, sp->nmaps);
	if (e)
		fail("mappings not loaded: %s", uw_strerror(e));
	return e;
}

/* ---------------------------------------------------------------- samples */

/* Per thread (0: main, 1: the other): the frames of the first good sample beyond frame 0, which
 * every later sample of every phase must have. */
struct ref {
	uint64_t pc[2][MAX_FRAMES];
	uint8_t method[2][MAX_FRAMES];
	unsigned n[2];
};

struct check {
	struct space *sp;
	int depth;
	unsigned want;
	bool copy_check;          /* verify records: compare with lib/unwind over the copy */
	bool any;                 /* (--pid) any program: no expected shape */
	bool expect_fallback;     /* every walk handed over at libc */
	/* results */
	unsigned n, good, finished, handed, mismatches, copy_frames, copy_checked, max_frames;
	unsigned stops[UW_STOP__COUNT];
	unsigned methods[UW_METHOD_MAX]; /* frames by the method that found them */
	unsigned min_root;        /* (--pid) the share of samples that must reach a root, % */
	unsigned min_kernel;      /* (--pid) the share taken in the kernel with a kernel callchain, % */
	unsigned kmode, kchain, in_syscall, kbad;
	struct ref *ref;
	struct uw_frame frames[MAX_FRAMES], copy[MAX_FRAMES];
	char why[PATH_MAX + 256];
};

static const char *sym_of(struct check *c, const struct uw_frame *f)
{
	if (f->module != (void *)c->sp->exe)
		return "";
	const struct sym *s = symtab_find(&c->sp->syms, f->rel_pc);
	return s ? s->name : "";
}

/* Whether the stack is spin, recurse x depth, main or worker, then the root frames. */
static bool shape_ok(struct check *c, const struct uw_frame *f, unsigned n, enum uw_stop_reason stop, bool main)
{
	unsigned d = (unsigned)c->depth;
	if (stop != UW_STOP_END_OF_STACK) {
		snprintf(c->why, sizeof(c->why), "stopped after %u frames: %s", n, uw_stop_reason_str(stop));
		return false;
	}
	if (n < d + 3 || strcmp(sym_of(c, &f[0]), "spin")) {
		snprintf(c->why, sizeof(c->why), "%u frames, frame 0 in %s", n, sym_of(c, &f[0]));
		return false;
	}
	for (unsigned i = 1; i <= d; i++)
		if (strcmp(sym_of(c, &f[i]), "recurse")) {
			snprintf(c->why, sizeof(c->why), "frame %u in %s, not recurse", i, sym_of(c, &f[i]));
			return false;
		}
	const char *caller = main ? "main" : "worker";
	if (strcmp(sym_of(c, &f[d + 1]), caller)) {
		snprintf(c->why, sizeof(c->why), "frame %u in '%s', not %s", d + 1, sym_of(c, &f[d + 1]), caller);
		return false;
	}
	/* beyond: libc's frames, and the executable's _start for the main thread */
	for (unsigned i = d + 2; i < n; i++) {
		bool last = i + 1 == n;
		bool ok = f[i].module == (void *)c->sp->libc || (main && last && !strcmp(sym_of(c, &f[i]), "_start"));
		if (!ok) {
			snprintf(c->why, sizeof(c->why), "root frame %u at %#" PRIx64 " in %s", i, f[i].pc,
			         f[i].module ? ((struct mod *)f[i].module)->path : "no module");
			return false;
		}
	}
	if (main && strcmp(sym_of(c, &f[n - 1]), "_start")) {
		snprintf(c->why, sizeof(c->why), "the main thread's last frame is not _start");
		return false;
	}
	return true;
}

/* lib/unwind over the record's copy from frame 0 must give the program's frames as far as the
 * copy reaches. */
static void copy_check(struct check *c, const struct kunw_sample *s, const struct unw_opts *o, unsigned n)
{
	struct unw_result ur;
	kunw_unwind_copy(s, o, find_pc, c->sp, c->copy, MAX_FRAMES, &ur);
	c->copy_checked++;
	c->copy_frames += ur.n;
	unsigned upto = ur.n;
	/* the last frame lib/unwind produced may be where its copy ended (the step from it failed) */
	for (unsigned i = 0; i < upto && i < n; i++) {
		if (c->copy[i].pc != c->frames[i].pc || c->copy[i].method != c->frames[i].method) {
			if (c->mismatches++ < 5)
				fail("sample %u frame %u: kernel %#" PRIx64 " (method %u), lib/unwind over the copy %#" PRIx64
				     " (method %u)",
				     c->n, i, c->frames[i].pc, c->frames[i].method, c->copy[i].pc, c->copy[i].method);
			return;
		}
	}
	if (ur.stop != UW_STOP_STACK_EXHAUSTED && (ur.n != n || ur.stop != UW_STOP_END_OF_STACK)) {
		if (c->mismatches++ < 5)
			fail("sample %u: lib/unwind over the copy stopped after %u frames (%s), the kernel walked %u", c->n,
			     ur.n, uw_stop_reason_str(ur.stop), n);
	}
}

static int on_sample(void *ctx, const struct kunw_sample *s)
{
	struct check *c = ctx;
	const struct kunw_rec *r = s->rec;
	if ((int)r->pid != c->sp->pid || c->n >= c->want)
		return 0;
	struct unw_opts o = { .max_frames = MAX_FRAMES, .arch = &cfi_arch_x86_64 };
	struct kunw_result res;
	kunw_finish(s, &o, find_pc, c->sp, c->frames, MAX_FRAMES, &res);
	c->n++;
	c->stops[res.stop]++;
	c->finished += res.finished;
	c->handed += r->stop == KUNW_STOP_FALLBACK;
	c->max_frames = UW_MAX(c->max_frames, res.n);
	for (unsigned i = 0; i < res.n; i++)
		if (c->frames[i].method < UW_METHOD_MAX)
			c->methods[c->frames[i].method]++;
	if (r->flags & KUNW_F_KERNEL_MODE) {
		c->kmode++;
		c->kchain += r->nkernel > 0;
		for (unsigned i = 0; i < r->nkernel; i++)
			c->kbad += s->kernel[i] < 0xffff800000000000ull; /* not a kernel address */
		c->in_syscall += (r->flags & KUNW_F_IN_SYSCALL) != 0;
	}
	bool main = (int)r->tid == c->sp->pid;
	int t = main ? 0 : 1;
	if (c->any) {
		c->good += res.stop == UW_STOP_END_OF_STACK;
		if (c->copy_check && (r->flags & KUNW_F_VERIFY))
			copy_check(c, s, &o, res.n);
		return 0;
	}
	bool ok = shape_ok(c, c->frames, res.n, res.stop, main);
	if (ok && c->expect_fallback && (!res.finished || res.nkernel != (unsigned)c->depth + 2)) {
		snprintf(c->why, sizeof(c->why), "%s after %u frames from the kernel",
		         res.finished ? "finished by user space" : "not handed over", res.nkernel);
		ok = false;
	}
	if (ok && !c->expect_fallback && res.finished) {
		snprintf(c->why, sizeof(c->why), "handed to user space after %u frames (reason %u)", res.nkernel,
		         r->fb_reason);
		ok = false;
	}
	/* beyond frame 0, every sample of a thread has the same frames */
	struct ref *rf = c->ref;
	if (ok && rf->n[t]) {
		if (res.n - 1 != rf->n[t]) {
			snprintf(c->why, sizeof(c->why), "%u frames, the thread's first sample had %u", res.n, rf->n[t] + 1);
			ok = false;
		}
		for (unsigned i = 1; ok && i < res.n; i++)
			if (c->frames[i].pc != rf->pc[t][i - 1] || c->frames[i].method != rf->method[t][i - 1]) {
				snprintf(c->why, sizeof(c->why), "frame %u: %#" PRIx64 " (method %u), before %#" PRIx64
				         " (method %u)", i, c->frames[i].pc, c->frames[i].method, rf->pc[t][i - 1],
				         rf->method[t][i - 1]);
				ok = false;
			}
	} else if (ok) {
		for (unsigned i = 1; i < res.n; i++) {
			rf->pc[t][i - 1] = c->frames[i].pc;
			rf->method[t][i - 1] = c->frames[i].method;
		}
		rf->n[t] = res.n - 1;
	}
	if (ok)
		c->good++;
	else if (c->n - c->good <= 3)
		printf("  sample %u (tid %u): %s\n", c->n, r->tid, c->why);
	if (c->copy_check && (r->flags & KUNW_F_VERIFY))
		copy_check(c, s, &o, res.n);
	return 0;
}

/* ---------------------------------------------------------------- events and phases */

static int open_events(int pid, int *fds, unsigned cap, unsigned *n)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/task", pid);
	DIR *d = opendir(p);
	if (!d)
		return -errno;
	struct dirent *de;
	*n = 0;
	while ((de = readdir(d)) && *n < cap) {
		int tid = atoi(de->d_name);
		if (tid <= 0)
			continue;
		struct perf_event_attr a = { 0 };
		a.size = sizeof(a);
		a.type = PERF_TYPE_SOFTWARE;
		a.config = PERF_COUNT_SW_CPU_CLOCK;
		a.sample_period = 1000000; /* 1 ms of the thread's CPU time */
		a.sample_type = PERF_SAMPLE_TID;
		int fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			int e = -errno;
			closedir(d);
			return e;
		}
		fds[(*n)++] = fd;
	}
	closedir(d);
	return 0;
}

/* Runs the child's events into a freshly loaded program until c->want samples. */
static int run_phase(const char *name, struct check *c, const struct kunw_opts *ko, const struct mod *skip,
                     const int *fds, unsigned nfds, bool timing)
{
	struct kunw *k;
	char err[4096];
	double t0 = now();
	int e = kunw_open(ko, &k, err, sizeof(err));
	double t_load = now() - t0;
	if (e) {
		fail("%s: the program did not load: %s\n%s", name, uw_strerror(e), err);
		return e;
	}
	struct kunw_prog_info pi = { 0 };
	kunw_prog_info(k, &pi);
	printf("%s: loaded in %.3f s, %u instructions verified, %u bytes translated, %u jited\n", name, t_load,
	       pi.verified_insns, pi.xlated_bytes, pi.jited_bytes);
	int stats_fd = timing ? bpf_enable_stats(BPF_STATS_RUN_TIME) : -1;
	if (timing && stats_fd < 0)
		printf("%s: bpf_enable_stats: %s (run time not measured)\n", name, strerror(errno));
	if ((e = feed(k, c->sp, skip)))
		goto out;
	for (unsigned i = 0; i < nfds && !e; i++)
		if ((e = kunw_attach(k, fds[i])))
			fail("%s: attaching to event %u: %s", name, i, uw_strerror(e));
	double last = now();
	unsigned before = 0;
	while (!e && c->n < c->want) {
		e = kunw_poll(k, 200, on_sample, c);
		if (e > 0)
			e = 0;
		if (c->n != before) {
			before = c->n;
			last = now();
		} else if (now() - last > 60) {
			fail("%s: no sample for 60 s (%u of %u)", name, c->n, c->want);
			e = -ETIMEDOUT;
		}
	}
	if (e < 0 && e != -ETIMEDOUT)
		fail("%s: polling: %s", name, uw_strerror(e));
	struct kunw_counters cnt;
	if (kunw_counters(k, &cnt) == 0) {
		printf("%s: program: %llu samples, %llu records, %llu lost, %.1f frames/sample, rule cache %.1f%% hits; "
		       "handed over: %llu (no process %llu, no mapping %llu, no table %llu, rule %llu, fp %llu)\n",
		       name, (unsigned long long)cnt.samples, (unsigned long long)cnt.records, (unsigned long long)cnt.lost,
		       cnt.samples ? (double)cnt.frames / (double)cnt.samples : 0,
		       cnt.cache_hits + cnt.cache_misses ? 100.0 * (double)cnt.cache_hits /
		                                               (double)(cnt.cache_hits + cnt.cache_misses) : 0,
		       (unsigned long long)cnt.stops[KUNW_STOP_FALLBACK], (unsigned long long)cnt.fallbacks[KUNW_FB_NO_PROC],
		       (unsigned long long)cnt.fallbacks[KUNW_FB_NO_MAP], (unsigned long long)cnt.fallbacks[KUNW_FB_NO_TABLE],
		       (unsigned long long)cnt.fallbacks[KUNW_FB_RULE], (unsigned long long)cnt.fallbacks[KUNW_FB_FP]);
		if (cnt.lost)
			fail("%s: %llu records lost (ring full)", name, (unsigned long long)cnt.lost);
	}
	if (timing && kunw_prog_info(k, &pi) == 0 && pi.run_cnt)
		printf("%s: run time %.0f ns per sample (%" PRIu64 " runs, %" PRIu64 " ns)\n", name,
		       (double)pi.run_time_ns / (double)pi.run_cnt, pi.run_cnt, pi.run_time_ns);
	printf("%s: map bytes %" PRIu64 " (tables and mappings, the kernel's count)\n", name, kunw_bytes(k));
	struct kunw_timing tm;
	if (ko->timing && kunw_timing_read(k, &tm) == 0)
		kunw_timing_print(&tm, stdout);
out:
	if (stats_fd >= 0)
		close(stats_fd);
	kunw_close(k);
	return e;
}

static void report(const char *name, struct check *c)
{
	if (c->any)
		printf("%s: %u samples, %u (%.2f%%) reach the root; deepest %u frames; handed to user space %u, finished "
		       "there %u\n",
		       name, c->n, c->good, c->n ? 100.0 * c->good / c->n : 0, c->max_frames, c->handed, c->finished);
	else
		printf("%s: %u samples, %u (%.2f%%) reach the root through %d recurse frames; deepest %u frames; handed "
		       "to user space %u, finished there %u\n",
		       name, c->n, c->good, c->n ? 100.0 * c->good / c->n : 0, c->depth, c->max_frames, c->handed,
		       c->finished);
	for (unsigned i = 0; i < UW_STOP__COUNT; i++)
		if (c->stops[i] && i != UW_STOP_END_OF_STACK)
			printf("  %u stopped: %s\n", c->stops[i], uw_stop_reason_str(i));
	printf("%s: frames by method: regs %u, cfi %u, fp %u, plt %u, signal %u, sframe %u\n", name,
	       c->methods[UW_METHOD_REGS], c->methods[UW_METHOD_CFI], c->methods[UW_METHOD_FP], c->methods[UW_METHOD_PLT],
	       c->methods[UW_METHOD_SIGNAL], c->methods[UW_METHOD_SFRAME]);
	printf("%s: taken in the kernel %u (with a kernel callchain %u, in a syscall %u)\n", name, c->kmode, c->kchain,
	       c->in_syscall);
	if (c->kbad)
		fail("%s: %u kernel callchain entries outside the kernel's half of the address space", name, c->kbad);
	if (c->any && c->kchain * 100 < c->n * c->min_kernel)
		fail("%s: %u samples of %u taken in the kernel with a callchain (want >= %u%%)", name, c->kchain, c->n,
		     c->min_kernel);
	if (c->any && c->good * 100 < c->n * c->min_root)
		fail("%s: %.2f%% of samples reach a root (want >= %u%%)", name, c->n ? 100.0 * c->good / c->n : 0,
		     c->min_root);
	if (c->n < c->want)
		fail("%s: %u samples of %u", name, c->n, c->want);
	if (!c->any && c->good * 100 < c->n * 99)
		fail("%s: %.2f%% of samples reach the root (want >= 99%%)", name, c->n ? 100.0 * c->good / c->n : 0);
	if (c->copy_check) {
		printf("%s: %u samples checked against lib/unwind over a copy of frame 0's stack: %u mismatches, %.1f "
		       "frames each\n",
		       name, c->copy_checked, c->mismatches, c->copy_checked ? (double)c->copy_frames / c->copy_checked : 0);
		if (c->copy_checked < c->n / 2)
			fail("%s: only %u verify records", name, c->copy_checked);
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: kunwcheck PROGRAM [--depth N] [--samples N] [--copy-check] [--fallback] [--timing]\n"
	                "       kunwcheck --pid PID [--samples N] [--copy-check] [--min-root PERCENT]\n"
	                "                 [--min-kernel PERCENT] [--timing]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	const char *prog = NULL;
	int depth = 200, attach = 0;
	unsigned want = 2000, min_root = 0, min_kernel = 0;
	bool copy = false, fallback = false, timing = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--depth") && i + 1 < argc)
			depth = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--samples") && i + 1 < argc)
			want = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--pid") && i + 1 < argc)
			attach = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--min-root") && i + 1 < argc)
			min_root = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--min-kernel") && i + 1 < argc)
			min_kernel = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--copy-check"))
			copy = true;
		else if (!strcmp(argv[i], "--fallback"))
			fallback = true;
		else if (!strcmp(argv[i], "--timing"))
			timing = true;
		else if (argv[i][0] != '-' && !prog)
			prog = argv[i];
		else
			usage();
	}
	if (!prog == !attach)
		usage();
	char exe[PATH_MAX];
	libbpf_set_print(libbpf_print);
	pid_t pid = attach;
	if (attach) {
		char p[64];
		snprintf(p, sizeof(p), "/proc/%d/exe", attach);
		ssize_t n = readlink(p, exe, sizeof(exe) - 1);
		if (n <= 0) {
			fprintf(stdout, "FAIL: %s: %s\n", p, strerror(errno));
			return 1;
		}
		exe[n] = 0;
	} else if (!realpath(prog, exe)) {
		fprintf(stdout, "FAIL: %s: %s\n", prog, strerror(errno));
		return 1;
	}

	/* the child, spinning at the bottom of its recursion */
	if (!attach) {
		int out[2];
		if (pipe(out))
			return 1;
		pid = fork();
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			dup2(out[1], 1);
			close(out[0]);
			char d[16];
			snprintf(d, sizeof(d), "%d", depth);
			execl(exe, exe, d, (char *)NULL);
			_exit(127);
		}
		close(out[1]);
		char line[64] = "";
		FILE *f = fdopen(out[0], "r");
		if (!f || !fgets(line, sizeof(line), f) || strncmp(line, "ready", 5)) {
			fprintf(stdout, "FAIL: %s did not get ready\n", exe);
			kill(pid, SIGKILL);
			return 1;
		}
	}

	static struct space sp;
	static struct check c;
	int fds[64];
	unsigned nfds = 0;
	int e = load_space(&sp, pid, exe, !attach);
	if (!e) {
		printf("child %d: %u executable mappings, %u modules\n", pid, sp.nmaps, sp.nmods);
		for (unsigned i = 0; i < sp.nmods; i++) {
			const struct kunw_table *t = &sp.mods[i].table;
			printf("  %s: %u rows, %u rules, %u blocks, %" PRIu64 " bytes (%u handed to user space, %u PLT, %u "
			       "signal, %u SFrame)\n",
			       sp.mods[i].path, t->nrows, t->nrules, t->nblocks, kunw_table_bytes(t), t->nfallback, t->nplt,
			       t->nsignal, t->nsframe);
		}
		e = open_events(pid, fds, 64, &nfds);
		if (e)
			fail("perf_event_open: %s", strerror(-e));
		else if (!attach && nfds != 2)
			fail("the child has %u threads, not 2", nfds);
	}
	/* every phase's samples must have the frames of the first good one */
	static struct ref ref;
	struct kunw_opts ko = { .max_frames = KUNW_MAX_FRAMES, .timing = timing };
	if (!e && !failures) {
		c = (struct check){ .sp = &sp, .ref = &ref, .depth = depth, .want = want, .any = attach != 0,
			            .min_root = min_root, .min_kernel = min_kernel };
		run_phase("rows", &c, &ko, NULL, fds, nfds, true);
		report("rows", &c);
		if (c.handed && !attach)
			fail("rows: %u walks handed to user space with every table loaded", c.handed);
	}
	if (!failures && copy) {
		c = (struct check){ .sp = &sp, .ref = &ref, .depth = depth, .want = want, .copy_check = true,
			            .any = attach != 0, .min_root = min_root, .min_kernel = min_kernel };
		struct kunw_opts kv = ko;
		kv.verify = true;
		kv.copy_bytes = KUNW_COPY_MAX;
		run_phase("verify", &c, &kv, NULL, fds, nfds, true);
		report("verify", &c);
	}
	if (!failures && fallback && !attach) {
		/* libc's table not loaded: handed over at libc's first frame, finished by lib/unwind,
		 * which must give the frames (and methods) the program gave in the rows phase */
		c = (struct check){ .sp = &sp, .ref = &ref, .depth = depth, .want = want, .expect_fallback = true };
		run_phase("fallback", &c, &ko, sp.libc, fds, nfds, false);
		report("fallback", &c);
	}
	for (unsigned i = 0; i < nfds; i++)
		close(fds[i]);
	if (!attach) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	free_space(&sp);
	if (failures) {
		printf("kunwcheck: %d failure(s)\n", failures);
		return 1;
	}
	printf("kunwcheck: all checks hold\n");
	return 0;
}
