/* SPDX-License-Identifier: MIT */
/*
 * Module handles outlive the processes that mapped them: a profiler through the public API (as
 * sysprof, hotspot and perf report do) keeps raw frames (module handle, module address) of many
 * short processes, each loading a library of its own, and names them all at the end. Each
 * process is a child that dlopens LIBDIR/libltI.so and reports where uw_lt_fn_I is; a live
 * tracker is told of its mappings (from /proc/PID/maps), its exit and the sweeps that forget it,
 * so the session unloads the libraries no process maps any more (64 stay loaded). At the end
 * every frame's module still says its path, build-id and state, and is named uw_lt_fn_I (its
 * file opened again); the files the session holds open stay bounded throughout.
 *
 * usage: lifetime LIBDIR N
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <unwound/unwound.h>

/* the idle modules a session keeps loaded (docs/threads.md); the rest are unloaded */
#define IDLE_LOADED 64

struct kept {
	struct uw_module *m;
	uint64_t rel;
	char path[512];
	char build_id[128];
};

static int fails;
#define FAIL(...)                                  \
	do {                                       \
		printf("FAIL: " __VA_ARGS__);      \
		printf("\n");                      \
		fails++;                           \
	} while (0)

/* Files under dir this process holds open. */
static int open_files_under(const char *dir)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char p[300], target[1024];
		snprintf(p, sizeof(p), "/proc/self/fd/%s", e->d_name);
		ssize_t l = readlink(p, target, sizeof(target) - 1);
		if (l > 0) {
			target[l] = 0;
			n += strncmp(target, dir, strlen(dir)) == 0;
		}
	}
	if (d)
		closedir(d);
	return n;
}

/* The child: maps the library, says where its function is, waits to be let go. */
static void child(const char *lib, int i, int to_parent, int from_parent)
{
	char fn[64];
	snprintf(fn, sizeof(fn), "uw_lt_fn_%d", i);
	void *h = dlopen(lib, RTLD_NOW);
	void *f = h ? dlsym(h, fn) : NULL;
	uint64_t addr = (uint64_t)(uintptr_t)f;
	char c;
	if (write(to_parent, &addr, sizeof(addr)) != sizeof(addr) || read(from_parent, &c, 1) < 0)
		_exit(1);
	_exit(0);
}

/* The tracker is told of the library's mappings in pid (as a profiler's MMAP2 records would). */
static int tell_mappings(struct uw_tracker *t, int pid, const char *lib, uint64_t time)
{
	char p[64], line[1024];
	snprintf(p, sizeof(p), "/proc/%d/maps", pid);
	FILE *f = fopen(p, "re");
	int n = 0;
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off, ino;
		unsigned maj, min;
		char perm[8], path[512] = "";
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %511s", &start, &end, perm, &off, &maj, &min, &ino, path) < 7 ||
		    strcmp(path, lib))
			continue;
		uint32_t prot = (perm[0] == 'r' ? PROT_READ : 0) | (perm[1] == 'w' ? PROT_WRITE : 0) |
				(perm[2] == 'x' ? PROT_EXEC : 0);
		UW_OPTS(uw_mmap_event, ev, .pid = (uint32_t)pid, .tid = (uint32_t)pid, .time = time, .addr = start,
			.len = end - start, .pgoff = off, .prot = prot, .maj = maj, .min = min, .ino = ino, .path = path);
		if (uw_tracker_mmap(t, &ev) == 0)
			n++;
	}
	if (f)
		fclose(f);
	return n;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	char dir[256];
	char rp[PATH_MAX];
	if (!realpath(argv[1], rp) || strlen(rp) >= sizeof(dir))
		return 2;
	memcpy(dir, rp, strlen(rp) + 1);
	int n = atoi(argv[2]);
	if (n < 1 || n > 10000)
		return 2;
	struct uw_session *s = uw_session_new(NULL);
	UW_OPTS(uw_tracker_opts, to, .live = 1);
	struct uw_tracker *t = s ? uw_tracker_new(s, &to) : NULL;
	struct kept *k = calloc((size_t)n, sizeof(*k));
	if (!t || !k)
		return 1;
	uint64_t time = 1000000000ull;
	int most_open = 0;
	for (int i = 0; i < n; i++) {
		char lib[512];
		snprintf(lib, sizeof(lib), "%s/liblt%d.so", dir, i);
		int up[2], down[2];
		if (pipe(up) || pipe(down))
			return 1;
		pid_t pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			close(up[0]);
			close(down[1]);
			child(lib, i, up[1], down[0]);
		}
		close(up[1]);
		close(down[0]);
		uint64_t addr = 0;
		if (read(up[0], &addr, sizeof(addr)) != sizeof(addr) || !addr) {
			FAIL("process %d: %s not loaded", i, lib);
			return 1;
		}
		uw_tracker_comm(t, (uint32_t)pid, (uint32_t)pid, "lt", 0, time);
		if (!tell_mappings(t, pid, lib, time))
			FAIL("process %d: no mapping of %s", i, lib);
		/* a frame in it: kept raw, as a profiler keeps samples */
		if (uw_tracker_lookup(t, (uint32_t)pid, addr, &k[i].m, &k[i].rel) || !k[i].m) {
			FAIL("process %d: %#" PRIx64 " in no module", i, addr);
			return 1;
		}
		snprintf(k[i].path, sizeof(k[i].path), "%s", uw_module_path(k[i].m));
		snprintf(k[i].build_id, sizeof(k[i].build_id), "%s", uw_module_build_id(k[i].m));
		/* half of them named now too (their symbols built before they are unloaded) */
		if (i % 2 == 0) {
			struct uw_symbol sym;
			uw_symbolize(s, k[i].m, k[i].rel, &sym);
		}
		/* the process ends; the tracker forgets it after its grace period */
		char c = 0;
		if (write(down[1], &c, 1) != 1)
			return 1;
		waitpid(pid, NULL, 0);
		close(up[0]);
		close(down[1]);
		uw_tracker_exit(t, (uint32_t)pid, (uint32_t)pid, time);
		time += 2000000000ull;
		uw_tracker_sweep(t, time);
		int open_now = open_files_under(dir);
		if (open_now > most_open)
			most_open = open_now;
	}
	printf("%d processes, each with a library of its own: at most %d of the libraries held open\n", n, most_open);
	if (most_open > IDLE_LOADED + 1)
		FAIL("%d libraries held open: idle modules are not unloaded", most_open);
	/* every frame named at the end */
	int named = 0;
	struct uw_frame *fr = calloc((size_t)n, sizeof(*fr));
	for (int i = 0; i < n; i++) {
		char want_path[512], want_name[64];
		snprintf(want_path, sizeof(want_path), "%s/liblt%d.so", dir, i);
		snprintf(want_name, sizeof(want_name), "uw_lt_fn_%d", i);
		const char *path = uw_module_path(k[i].m), *bid = uw_module_build_id(k[i].m);
		if (strcmp(path, want_path) || strcmp(k[i].path, want_path))
			FAIL("frame %d: module path %s, want %s", i, path, want_path);
		if (!bid[0] || strcmp(bid, k[i].build_id))
			FAIL("frame %d: build-id '%s', was '%s'", i, bid, k[i].build_id);
		if (uw_module_state(k[i].m) != UW_MODULE_OK)
			FAIL("frame %d: module state %d", i, (int)uw_module_state(k[i].m));
		struct uw_symbol sym;
		int err = uw_symbolize(s, k[i].m, k[i].rel, &sym);
		if (err || !sym.name || strcmp(sym.name, want_name) || sym.offset)
			FAIL("frame %d: named %s+%" PRIu64 " (%d), want %s", i, sym.name ? sym.name : "(none)", sym.offset, err,
			     want_name);
		else
			named++;
		fr[i] = (struct uw_frame){ .module = k[i].m, .rel_pc = k[i].rel };
	}
	/* and in one batch, whose names live as long as the session */
	UW_OPTS(uw_symbolize_opts, so);
	struct uw_symbols *syms = NULL;
	if (uw_symbolize_frames(s, fr, (size_t)n, &so, &syms)) {
		FAIL("uw_symbolize_frames");
	} else {
		for (int i = 0; i < n; i++) {
			char want_name[64];
			snprintf(want_name, sizeof(want_name), "uw_lt_fn_%d", i);
			const struct uw_symbolized *y = &syms->syms[i];
			if (y->reason != UW_SYM_OK || !y->name || strcmp(y->name, want_name))
				FAIL("batch frame %d: %s (%s), want %s", i, y->name ? y->name : "(none)",
				     uw_sym_reason_str(y->reason), want_name);
		}
	}
	int open_end = open_files_under(dir);
	printf("named at the end: %d of %d frames; %d libraries held open after naming them all\n", named, n, open_end);
	if (open_end > IDLE_LOADED + 1)
		FAIL("%d libraries held open after naming: modules opened again stay loaded", open_end);
	uw_symbols_free(syms);
	free(fr);
	uw_tracker_free(t);
	uw_session_free(s);
	free(k);
	if (fails)
		return 1;
	printf("module handles ok\n");
	return 0;
}
