/* SPDX-License-Identifier: MIT */
/*
 * Lock contention, counted from outside (LD_PRELOAD): every pthread_mutex_lock and
 * pthread_rwlock_{rd,wr}lock of the process is tried first; one that finds the lock taken is
 * counted as contended, with the time it then waited, by the address it was called from. At
 * exit the call sites that waited are printed, most waited first, as "module+offset" (name them
 * with addr2line -f -e MODULE OFFSET). The counts do not depend on the CPU time the process
 * gets; the waits do (a holder that is descheduled is waited for longer).
 *
 * Build: gcc -O2 -shared -fPIC -o liblockstat.so bench/lockstat.c -ldl
 * Run:   LD_PRELOAD=./liblockstat.so LOCKSTAT_OUT=/tmp/locks.txt PROGRAM ...
 * (the whole run is counted: for symscale, compare with a run of -t 1, whose timed part takes
 * no lock another thread holds).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SITES 4096

struct site {
	uintptr_t pc;
	uint64_t contended, wait_ns;
};

static struct site sites[SITES];
static uint64_t total_locks, total_contended;
static int (*real_mutex_lock)(pthread_mutex_t *);
static int (*real_rdlock)(pthread_rwlock_t *);
static int (*real_wrlock)(pthread_rwlock_t *);

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void note(uintptr_t pc, uint64_t wait)
{
	__atomic_add_fetch(&total_contended, 1, __ATOMIC_RELAXED);
	size_t h = (pc * 0x9e3779b97f4a7c15ull) >> 52;
	for (size_t i = 0; i < SITES; i++) {
		struct site *s = &sites[(h + i) % SITES];
		uintptr_t cur = __atomic_load_n(&s->pc, __ATOMIC_RELAXED);
		if (!cur && __atomic_compare_exchange_n(&s->pc, &cur, pc, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			cur = pc;
		if (cur == pc) {
			__atomic_add_fetch(&s->contended, 1, __ATOMIC_RELAXED);
			__atomic_add_fetch(&s->wait_ns, wait, __ATOMIC_RELAXED);
			return;
		}
	}
}

int pthread_mutex_lock(pthread_mutex_t *m)
{
	if (!real_mutex_lock)
		*(void **)&real_mutex_lock = dlsym(RTLD_NEXT, "pthread_mutex_lock");
	__atomic_add_fetch(&total_locks, 1, __ATOMIC_RELAXED);
	if (pthread_mutex_trylock(m) == 0)
		return 0;
	uint64_t t = now_ns();
	int r = real_mutex_lock(m);
	note((uintptr_t)__builtin_return_address(0), now_ns() - t);
	return r;
}

int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
	if (!real_rdlock)
		*(void **)&real_rdlock = dlsym(RTLD_NEXT, "pthread_rwlock_rdlock");
	__atomic_add_fetch(&total_locks, 1, __ATOMIC_RELAXED);
	if (pthread_rwlock_tryrdlock(l) == 0)
		return 0;
	uint64_t t = now_ns();
	int r = real_rdlock(l);
	note((uintptr_t)__builtin_return_address(0), now_ns() - t);
	return r;
}

int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
	if (!real_wrlock)
		*(void **)&real_wrlock = dlsym(RTLD_NEXT, "pthread_rwlock_wrlock");
	__atomic_add_fetch(&total_locks, 1, __ATOMIC_RELAXED);
	if (pthread_rwlock_trywrlock(l) == 0)
		return 0;
	uint64_t t = now_ns();
	int r = real_wrlock(l);
	note((uintptr_t)__builtin_return_address(0), now_ns() - t);
	return r;
}

static int by_wait(const void *a, const void *b)
{
	const struct site *x = a, *y = b;
	return x->wait_ns < y->wait_ns ? 1 : x->wait_ns > y->wait_ns ? -1 : 0;
}

__attribute__((destructor)) static void report(void)
{
	const char *path = getenv("LOCKSTAT_OUT");
	FILE *f = path ? fopen(path, "a") : stderr;
	if (!f)
		return;
	qsort(sites, SITES, sizeof(sites[0]), by_wait);
	fprintf(f, "locks taken %llu, contended %llu\n", (unsigned long long)total_locks,
		(unsigned long long)total_contended);
	for (size_t i = 0; i < SITES && sites[i].pc; i++) {
		Dl_info di;
		const char *mod = "?";
		uintptr_t off = sites[i].pc;
		if (dladdr((void *)sites[i].pc, &di) && di.dli_fname) {
			mod = di.dli_fname;
			off = sites[i].pc - (uintptr_t)di.dli_fbase;
		}
		fprintf(f, "%10llu contended %10.3f ms waited  %s+%#lx\n", (unsigned long long)sites[i].contended,
			sites[i].wait_ns / 1e6, mod, (unsigned long)off);
	}
	if (path)
		fclose(f);
}
