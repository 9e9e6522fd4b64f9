/* SPDX-License-Identifier: MIT */
/*
 * Every public call that touches a session's shared state, from several threads at once, on one
 * session (docs/threads.md: any number of threads may use a session). Run under ThreadSanitizer
 * (make check-tsan) and AddressSanitizer (make check-asan); without them its checks still see
 * names that are wrong or gone.
 *
 *   - a thread changes the session's kallsyms file (A, B, none) over and over while two threads
 *     name kernel addresses with the session's kernel (uw_symbolize_kernel: A's name, B's or
 *     none, never another) and with a tracker's kernel given A (uw_kernel_symbolize: always A's);
 *   - two threads, each with a live tracker, run short "processes" mapping libraries of a shared
 *     set (the modules are shared, counted and unloaded while the other thread maps them), keep
 *     a frame of each and name it now and then and all at the end;
 *   - a thread walks the session's modules (uw_session_foreach_module, uw_module_*) and names
 *     addresses in them (uw_symbolize, uw_symbolize_frames, uw_symbolize_inline).
 *
 * usage: hammer KALLSYMS_A KALLSYMS_B NSYMS LIBDIR NLIBS
 * (KALLSYMS_A names address 0xffffffff81000000 + K * 0x100 a_fn_K, B b_fn_K, for K < NSYMS;
 * LIBDIR/libltI.so defines uw_lt_fn_I.)
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <unwound/unwound.h>

#define KBASE 0xffffffff81000000ull
#define LOADS 300
#define KLOOKUPS 4000
#define PROCS 400

static const char *ka, *kb;
static unsigned nsyms;
static int nlibs;
static struct uw_session *s;
static struct uw_kernel *kernel_a; /* a tracker's kernel, given A */
static int stop;                  /* the loaders' end (atomic) */

struct lib {
	char path[512];
	uint64_t pc;            /* uw_lt_fn_I, mapped here */
	struct {
		uint64_t start, end, pgoff, ino;
		uint32_t maj, min, prot;
	} maps[8];
	int nmaps;
};
static struct lib *libs;

static pthread_mutex_t fail_mu = PTHREAD_MUTEX_INITIALIZER;
static int fails;
static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;
	pthread_mutex_lock(&fail_mu);
	if (fails++ < 20) {
		va_start(ap, fmt);
		printf("FAIL: ");
		vprintf(fmt, ap);
		printf("\n");
		va_end(ap);
	}
	pthread_mutex_unlock(&fail_mu);
}

static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* ---- kernel symbols */

static void *loader(void *arg)
{
	(void)arg;
	for (int i = 0; i < LOADS; i++) {
		const char *f = i % 3 == 2 ? NULL : i % 3 ? kb : ka;
		int err = uw_session_load_kallsyms(s, f);
		if (err)
			fail("uw_session_load_kallsyms(%s): %d", f ? f : "NULL", err);
		if (i % 16 == 0)
			sched_yield();
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void *kernel_namer(void *arg)
{
	uint64_t x = (uintptr_t)arg * 7919 + 1;
	for (int i = 0; i < KLOOKUPS || !__atomic_load_n(&stop, __ATOMIC_ACQUIRE); i++) {
		unsigned k = (unsigned)(rnd(&x) % nsyms);
		uint64_t addr = KBASE + (uint64_t)k * 0x100 + rnd(&x) % 0x100;
		char wa[32], wb[32];
		snprintf(wa, sizeof(wa), "a_fn_%u", k);
		snprintf(wb, sizeof(wb), "b_fn_%u", k);
		struct uw_symbol sym;
		if (uw_symbolize_kernel(s, addr, &sym))
			fail("uw_symbolize_kernel: an error");
		else if (sym.name && strcmp(sym.name, wa) && strcmp(sym.name, wb))
			fail("uw_symbolize_kernel(%#" PRIx64 "): %s, want %s, %s or none", addr, sym.name, wa, wb);
		if (uw_kernel_symbolize(kernel_a, addr, &sym) || !sym.name || strcmp(sym.name, wa))
			fail("uw_kernel_symbolize(%#" PRIx64 "): %s, want %s", addr, sym.name ? sym.name : "(none)", wa);
		if (i > 100 * KLOOKUPS)
			break;
	}
	return NULL;
}

/* ---- live trackers: short processes mapping shared libraries */

struct kept {
	struct uw_module *m;
	uint64_t rel;
	int lib;
};

static void check_name(const struct kept *k, const char *what)
{
	char want[64];
	snprintf(want, sizeof(want), "uw_lt_fn_%d", k->lib);
	struct uw_symbol sym;
	if (uw_symbolize(s, k->m, k->rel, &sym) || !sym.name || strcmp(sym.name, want))
		fail("%s: lib %d named %s, want %s", what, k->lib, sym.name ? sym.name : "(none)", want);
	if (strcmp(uw_module_path(k->m), libs[k->lib].path))
		fail("%s: lib %d's module says %s", what, k->lib, uw_module_path(k->m));
}

static void *live(void *arg)
{
	int id = (int)(uintptr_t)arg;
	UW_OPTS(uw_tracker_opts, to, .live = 1);
	struct uw_tracker *t = uw_tracker_new(s, &to);
	struct kept *kept = calloc(PROCS, sizeof(*kept));
	if (!t || !kept) {
		fail("no tracker");
		return NULL;
	}
	uint64_t time = 1000000000ull, x = 977 + (uint64_t)id;
	for (int i = 0; i < PROCS; i++) {
		/* pids no process has (files are opened by path) */
		uint32_t pid = 4000000 + (uint32_t)id * 100000 + (uint32_t)i;
		int li = (int)(rnd(&x) % (uint64_t)nlibs);
		const struct lib *L = &libs[li];
		uw_tracker_comm(t, pid, pid, "hammer", 0, time);
		for (int k = 0; k < L->nmaps; k++) {
			UW_OPTS(uw_mmap_event, ev, .pid = pid, .tid = pid, .time = time, .addr = L->maps[k].start,
				.len = L->maps[k].end - L->maps[k].start, .pgoff = L->maps[k].pgoff, .prot = L->maps[k].prot,
				.maj = L->maps[k].maj, .min = L->maps[k].min, .ino = L->maps[k].ino, .path = L->path);
			uw_tracker_mmap(t, &ev);
		}
		kept[i].lib = li;
		if (uw_tracker_lookup(t, pid, L->pc, &kept[i].m, &kept[i].rel) || !kept[i].m) {
			fail("tracker %d: lib %d's function in no module", id, li);
			kept[i].m = NULL;
		} else if (i % 5 == 0) {
			check_name(&kept[i], "named at once");
		}
		/* now and then an older frame, whose module may have been unloaded since */
		if (i % 7 == 0 && i) {
			int j = (int)(rnd(&x) % (uint64_t)i);
			if (kept[j].m)
				check_name(&kept[j], "named later");
		}
		uw_tracker_exit(t, pid, pid, time);
		time += 2000000000ull;
		uw_tracker_sweep(t, time);
	}
	/* all at the end, in one batch too */
	struct uw_frame *fr = calloc(PROCS, sizeof(*fr));
	for (int i = 0; i < PROCS && fr; i++) {
		if (kept[i].m)
			check_name(&kept[i], "named at the end");
		fr[i] = (struct uw_frame){ .module = kept[i].m, .rel_pc = kept[i].rel };
	}
	UW_OPTS(uw_symbolize_opts, so, .lines = 1);
	struct uw_symbols *syms = NULL;
	if (fr && uw_symbolize_frames(s, fr, PROCS, &so, &syms) == 0) {
		for (int i = 0; i < PROCS; i++) {
			char want[64];
			snprintf(want, sizeof(want), "uw_lt_fn_%d", kept[i].lib);
			if (kept[i].m && (!syms->syms[i].name || strcmp(syms->syms[i].name, want)))
				fail("batch: lib %d named %s", kept[i].lib, syms->syms[i].name ? syms->syms[i].name : "(none)");
		}
		uw_symbols_free(syms);
	} else {
		fail("uw_symbolize_frames");
	}
	free(fr);
	free(kept);
	uw_tracker_free(t);
	return NULL;
}

/* ---- a reader of the session's modules */

struct walk {
	struct uw_module *m[256];
	int n;
};

static int walk_one(void *ctx, struct uw_module *m)
{
	struct walk *w = ctx;
	/* (under the session's lock: the getters and symbolization take it again) */
	uw_module_state(m);
	uw_module_build_id(m);
	if (w->n < 256)
		w->m[w->n++] = m;
	return 0;
}

static void *walker(void *arg)
{
	(void)arg;
	uint64_t x = 31337;
	for (int i = 0; !__atomic_load_n(&stop, __ATOMIC_ACQUIRE) || i < 200; i++) {
		struct walk w = { .n = 0 };
		uw_session_foreach_module(s, walk_one, &w);
		for (int k = 0; k < w.n; k++) {
			struct uw_module *m = w.m[k];
			const char *p = uw_module_path(m), *b = uw_module_build_id(m);
			if (!p || !b)
				fail("a module without path or build-id string");
			struct uw_symbol sym;
			uint64_t rel = 0x1000 + rnd(&x) % 0x200;
			uw_symbolize(s, m, rel, &sym);
			const struct uw_source_frame *inl;
			unsigned n;
			uw_symbolize_inline(s, m, rel, &inl, &n);
			struct uw_module_stats st = { .sz = sizeof(st) };
			uw_module_stats(m, &st);
		}
		if (i > 5000)
			break;
	}
	return NULL;
}

/* Where the libraries are mapped in this process: the mappings the trackers are told of. */
static int map_libs(const char *dir)
{
	libs = calloc((size_t)nlibs, sizeof(*libs));
	if (!libs)
		return -1;
	for (int i = 0; i < nlibs; i++) {
		struct lib *L = &libs[i];
		char rp[4096], fn[64];
		snprintf(rp, sizeof(rp), "%s/liblt%d.so", dir, i);
		if (!realpath(rp, L->path))
			return -1;
		snprintf(fn, sizeof(fn), "uw_lt_fn_%d", i);
		void *h = dlopen(L->path, RTLD_NOW);
		void *f = h ? dlsym(h, fn) : NULL;
		if (!f)
			return -1;
		L->pc = (uint64_t)(uintptr_t)f;
	}
	FILE *mf = fopen("/proc/self/maps", "re");
	char line[1024];
	while (mf && fgets(line, sizeof(line), mf)) {
		unsigned long long start, end, off, ino;
		unsigned maj, min;
		char perm[8], path[512] = "";
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %511s", &start, &end, perm, &off, &maj, &min, &ino, path) < 8)
			continue;
		for (int i = 0; i < nlibs; i++) {
			struct lib *L = &libs[i];
			if (strcmp(path, L->path) || L->nmaps == 8)
				continue;
			L->maps[L->nmaps].start = start;
			L->maps[L->nmaps].end = end;
			L->maps[L->nmaps].pgoff = off;
			L->maps[L->nmaps].ino = ino;
			L->maps[L->nmaps].maj = maj;
			L->maps[L->nmaps].min = min;
			L->maps[L->nmaps].prot = (perm[0] == 'r' ? PROT_READ : 0) | (perm[1] == 'w' ? PROT_WRITE : 0) |
						 (perm[2] == 'x' ? PROT_EXEC : 0);
			L->nmaps++;
		}
	}
	if (mf)
		fclose(mf);
	for (int i = 0; i < nlibs; i++)
		if (!libs[i].nmaps)
			return -1;
	return 0;
}

static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "FAIL: hung (a thread waits for ever: a join or a lock)\n";
	if (write(1, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);
}

int main(int argc, char **argv)
{
	if (argc != 6)
		return 2;
	ka = argv[1];
	kb = argv[2];
	nsyms = (unsigned)atoi(argv[3]);
	nlibs = atoi(argv[5]);
	if (!nsyms || nlibs < 1 || map_libs(argv[4])) {
		printf("FAIL: setting up (libraries in %s)\n", argv[4]);
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGALRM, on_alarm);
	alarm(600);
	s = uw_session_new(NULL);
	/* the session's first tracker: uw_symbolize_kernel names with its kernel, which has no file
	 * of its own and says nothing of itself: the session's file, or none */
	struct uw_tracker *t0 = uw_tracker_new(s, NULL);
	struct uw_tracker *ta = uw_tracker_new(s, NULL);
	if (!t0 || !ta || uw_tracker_load_kallsyms(ta, ka)) {
		printf("FAIL: trackers\n");
		return 1;
	}
	kernel_a = uw_tracker_kernel(ta);
	uw_tracker_free(ta); /* (its kernel stays: handed out) */
	pthread_t th[6];
	pthread_create(&th[0], NULL, loader, NULL);
	pthread_create(&th[1], NULL, kernel_namer, (void *)1);
	pthread_create(&th[2], NULL, kernel_namer, (void *)2);
	pthread_create(&th[3], NULL, live, (void *)0);
	pthread_create(&th[4], NULL, live, (void *)1);
	pthread_create(&th[5], NULL, walker, NULL);
	for (int i = 0; i < 6; i++)
		pthread_join(th[i], NULL);
	uw_tracker_free(t0);
	uw_session_free(s);
	printf("6 threads on one session: %d kallsyms changes, %d kernel names x2, %d processes x2 over %d libraries: %d failures\n",
	       LOADS, KLOOKUPS, PROCS, nlibs, fails);
	return fails ? 1 : 0;
}
