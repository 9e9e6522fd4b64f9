/* SPDX-License-Identifier: MIT */
/*
 * An unprivileged process against a recorder attached to it (record -p, record -a): it
 * dlopens a library of its own, runs in it, dlcloses it and puts a FIFO where the library was.
 * When the recorder then opens the library for the samples taken in it, /proc/PID/map_files no
 * longer has the mapping and the path names a FIFO that no one will ever write to.
 *
 * usage: dlfifo DIR N: waits for DIR/go, then for k = 1..N dlopens DIR/libdlfifo-k.so (each a
 * build of its own: a new module every time), calls its work function (a fixed amount of work,
 * about 20 ms), dlcloses it, replaces the file with a FIFO and works 200 ms in the program
 * itself. Prints "done" and exits. The libraries: cc -shared -fPIC -DLIBDLFIFO dlfifo.c.
 */
#ifdef LIBDLFIFO
volatile unsigned long dlfifo_sink;

__attribute__((noinline)) unsigned long dlfifo_work(unsigned long n)
{
	unsigned long x = 1;
	for (unsigned long i = 0; i < n; i++)
		x = x * 6364136223846793005ul + i;
	dlfifo_sink = x;
	return x;
}
#else
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

/* spins for ms milliseconds of wall time: the program's own samples after each library */
__attribute__((noinline)) static void main_work(long ms)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		for (int i = 0; i < 100000; i++)
			sink += (unsigned long)i;
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	const char *dir = argv[1];
	int n = atoi(argv[2]);
	char path[4096];
	snprintf(path, sizeof(path), "%s/go", dir);
	while (access(path, F_OK))
		usleep(10000);
	for (int k = 1; k <= n; k++) {
		snprintf(path, sizeof(path), "%s/libdlfifo-%d.so", dir, k);
		void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			fprintf(stderr, "dlfifo: %s\n", dlerror());
			return 1;
		}
		unsigned long (*work)(unsigned long) = (unsigned long (*)(unsigned long))dlsym(h, "dlfifo_work");
		if (!work)
			return 1;
		work(20000000);
		dlclose(h);
		if (unlink(path) || mkfifo(path, 0644)) {
			perror("dlfifo: the FIFO");
			return 1;
		}
		main_work(200);
	}
	printf("done\n");
	return 0;
}
#endif
