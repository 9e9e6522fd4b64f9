/* SPDX-License-Identifier: MIT */
/*
 * Two libraries at one address, one after the other: the recorder must name each one's samples
 * with its own file (tests/e2e/ident.sh). /proc/PID/map_files/START-END of libA's range names
 * libB's file once libB is mapped there, and a file at libA's path may be another since.
 *
 *   dlsame DIR MS [replace] [gated]
 * (gated: prints "ready" and waits for DIR/go1 first, and for DIR/go2 once libB is in place,
 * so that a test can hold the recorder stopped in between) dlopens DIR/libA.so, spins MS ms of its own CPU time in it (A_run -> A_f1 -> A_f2), dlcloses
 * it, then (replace) puts another file at DIR/libA.so (unlinked, then a copy of
 * DIR/libA.other written in its place: a new inode, often with the old one's number), dlopens
 * DIR/libB.so until its code lands at libA's range (a mapping kept in the way of each place it
 * lands otherwise; it must land: else exit 3, said), and spins MS ms in it (B_run -> B_f1 ->
 * B_f2). Prints where each was ("A r-xp START-END", "B r-xp START-END") and "done".
 * The libraries, of one layout (the same code, names of one length):
 *   cc -shared -fPIC -DDLSAME_LIB=A dlsame.c -o libA.so; ... =B ... -o libB.so
 */
#ifdef DLSAME_LIB
#include <time.h>

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define FN(x) CAT(DLSAME_LIB, x)

volatile unsigned long FN(_sink);

__attribute__((noipa)) void FN(_f2)(unsigned long n)
{
	unsigned long x = FN(_sink);
	for (unsigned long i = 0; i < n; i++)
		x = x * 6364136223846793005ul + i;
	FN(_sink) = x;
}

static double cpu_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* ms of the thread's own CPU time (the same work whatever CPU the machine gives it) */
__attribute__((noipa)) void FN(_f1)(double ms)
{
	double end = cpu_ms() + ms;
	while (cpu_ms() < end)
		FN(_f2)(200000);
}

__attribute__((noipa)) void FN(_run)(double ms)
{
	FN(_f1)(ms);
	FN(_sink)++;
}
#else
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The executable mapping of a file whose path ends with name, as /proc/self/maps says now. */
static int code_range(const char *name, unsigned long *start, unsigned long *end)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[4096];
	int found = 0;
	size_t nl = strlen(name);
	while (f && !found && fgets(line, sizeof(line), f)) {
		unsigned long s, e;
		char perms[8];
		int off = 0;
		if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &s, &e, perms, &off) < 3 || !off || perms[2] != 'x')
			continue;
		char *p = line + off;
		p[strcspn(p, "\n")] = 0;
		size_t pl = strlen(p);
		if (pl >= nl && strcmp(p + pl - nl, name) == 0) {
			*start = s;
			*end = e;
			found = 1;
		}
	}
	if (f)
		fclose(f);
	return found;
}

static void wait_for(const char *dir, const char *name)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	while (access(path, F_OK))
		usleep(5000);
}

static void *open_lib(const char *dir, const char *name, const char *sym, void (**fn)(double))
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h || !(*fn = (void (*)(double))dlsym(h, sym))) {
		fprintf(stderr, "dlsame: %s: %s\n", path, dlerror());
		exit(1);
	}
	return h;
}

/* DIR/libA.so unlinked, and a copy of DIR/libA.other written at its path (a new file). */
static void replace_a(const char *dir)
{
	char a[4096], other[4096];
	snprintf(a, sizeof(a), "%s/libA.so", dir);
	snprintf(other, sizeof(other), "%s/libA.other", dir);
	struct stat before, after;
	if (stat(a, &before) || unlink(a)) {
		perror("dlsame: libA.so");
		exit(1);
	}
	int in = open(other, O_RDONLY | O_CLOEXEC), out = open(a, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	char buf[65536];
	ssize_t n;
	while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			perror("dlsame: writing libA.so");
			exit(1);
		}
	if (in < 0 || out < 0 || close(out) || stat(a, &after)) {
		perror("dlsame: replacing libA.so");
		exit(1);
	}
	close(in);
	printf("libA.so replaced: inode %lu, now %lu%s\n", (unsigned long)before.st_ino, (unsigned long)after.st_ino,
	       before.st_ino == after.st_ino ? " (the number reused)" : "");
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: dlsame DIR MS [replace]\n");
		return 2;
	}
	const char *dir = argv[1];
	double ms = atof(argv[2]);
	int replace = 0, gated = 0;
	for (int i = 3; i < argc; i++) {
		replace |= !strcmp(argv[i], "replace");
		gated |= !strcmp(argv[i], "gated");
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (gated) {
		printf("ready\n");
		wait_for(dir, "go1");
	}
	void (*run)(double);
	void *h = open_lib(dir, "libA.so", "A_run", &run);
	unsigned long as, ae, bs, be;
	if (!code_range("/libA.so", &as, &ae)) {
		fprintf(stderr, "dlsame: libA.so's code is not in /proc/self/maps\n");
		return 1;
	}
	printf("A r-xp %lx-%lx\n", as, ae);
	run(ms);
	dlclose(h);
	if (code_range("/libA.so", &bs, &be)) {
		fprintf(stderr, "dlsame: libA.so still mapped after dlclose\n");
		return 1;
	}
	if (replace)
		replace_a(dir);
	/* the kernel puts a new mapping in the highest hole it fits (libA's, mostly): where libB
	 * lands elsewhere, that place is kept taken and libB dlopened again */
	for (int tries = 0;; tries++) {
		h = open_lib(dir, "libB.so", "B_run", &run);
		if (!code_range("/libB.so", &bs, &be)) {
			fprintf(stderr, "dlsame: libB.so's code is not in /proc/self/maps\n");
			return 1;
		}
		if (bs == as && be == ae)
			break;
		dlclose(h);
		if (tries == 32 || mmap((void *)bs, be - bs, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) !=
					   (void *)bs) {
			fprintf(stderr, "dlsame: libB.so's code never landed at libA.so's range %lx-%lx (last at %lx-%lx)\n", as,
				ae, bs, be);
			return 3;
		}
	}
	printf("B r-xp %lx-%lx\n", bs, be);
	if (gated)
		wait_for(dir, "go2");
	run(ms);
	printf("done\n");
	return 0;
}
#endif
