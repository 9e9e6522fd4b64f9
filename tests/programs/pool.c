/* SPDX-License-Identifier: MIT */
/*
 * A pool whose threads exit while the process goes on (tests/e2e/live.sh), steered by files in
 * a control directory so the test decides when, not a clock:
 *
 *   pool CTL N   N threads run pool_work until CTL/exit-threads exists, then exit; main joins
 *                them, creates CTL/joined, and exits once CTL/exit exists.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char *ctl;
static volatile unsigned long sink;

static int exists(const char *name)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/%s", ctl, name);
	return access(p, F_OK) == 0;
}

__attribute__((noinline)) void pool_work(void)
{
	for (unsigned long i = 0; i < 100000; i++)
		sink += i * i;
}

static void *pool_thread(void *arg)
{
	(void)arg;
	while (!exists("exit-threads"))
		pool_work();
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	ctl = argv[1];
	int n = atoi(argv[2]);
	pthread_t t[64];
	if (n < 1 || n > 64)
		return 2;
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, pool_thread, NULL))
			return 1;
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	char p[4096];
	snprintf(p, sizeof(p), "%s/joined", ctl);
	FILE *f = fopen(p, "w");
	if (!f)
		return 1;
	fclose(f);
	while (!exists("exit"))
		usleep(20000);
	return 0;
}
