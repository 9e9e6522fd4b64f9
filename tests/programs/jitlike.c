/* SPDX-License-Identifier: MIT */
/*
 * A process that runs code from anonymous memory, as a JIT does, and makes its
 * /tmp/perf-PID.map hostile: argv[1] is "fifo" (a FIFO), "urandom" or "zero" (a link to that
 * device), "huge" (a regular file of argv[2] MiB of entries in reverse order) or "none". It
 * runs for argv[3] seconds (default 30) and then removes what it made.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char map_path[64];

static void cleanup(int sig)
{
	unlink(map_path);
	if (sig)
		_exit(0);
}

static void huge_map(const char *path, long mib)
{
	FILE *f = fopen(path, "w");
	if (!f)
		exit(1);
	long lines = mib * 1024 * 1024 / 40;
	for (long i = lines; i > 0; i--)
		fprintf(f, "%lx 10 JS:*fn%ld x.js:1:1\n", 0x7f0000000000l + (unsigned long)i * 16, i);
	fclose(f);
}

int main(int argc, char **argv)
{
	const char *kind = argc > 1 ? argv[1] : "none";
	double secs = argc > 3 ? atof(argv[3]) : 30;
	snprintf(map_path, sizeof(map_path), "/tmp/perf-%d.map", (int)getpid());
	unlink(map_path);
	if (!strcmp(kind, "fifo"))
		mkfifo(map_path, 0600);
	else if (!strcmp(kind, "urandom"))
		symlink("/dev/urandom", map_path);
	else if (!strcmp(kind, "zero"))
		symlink("/dev/zero", map_path);
	else if (!strcmp(kind, "huge"))
		huge_map(map_path, argc > 2 ? atol(argv[2]) : 16);
	signal(SIGTERM, cleanup);
	signal(SIGINT, cleanup);
	/* a loop in anonymous executable memory: dec ecx; jnz -4; ret */
	static const uint8_t code[] = { 0xff, 0xc9, 0x75, 0xfc, 0xc3 };
	uint8_t *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 1;
	memcpy(p, code, sizeof(code));
	void (*fn)(unsigned) = (void (*)(unsigned))(uintptr_t)p;
	printf("ready\n");
	fflush(stdout);
	/* SECS of CPU time, not of the clock: the same work on a busy machine */
	struct timespec t0, t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	do {
		__asm__ volatile("mov $1000000, %%ecx; call *%0" : : "r"(fn) : "rcx", "memory");
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) * 1e-9 < secs);
	cleanup(0);
	return 0;
}
