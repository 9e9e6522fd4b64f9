/* SPDX-License-Identifier: MIT */
/*
 * A live tracker told nothing but samples (no COMM, no MMAP, no FORK: attached to a process
 * that runs already, as a profiler that opens its own events without side-band is): every pc
 * must be asked of the kernel (PROCMAP_QUERY, or /proc/PID/maps), as the header promises.
 * Public API only; built by tests/e2e/live.sh at test time.
 *
 *   livequery self          this process's own stack, captured here, through uw_unwind_sample
 *                           and uw_tracker_lookup
 *   livequery pid PID N     N samples of a running process (cpu-clock, registers and stack
 *                           copies, no side-band) pushed through uw_reader_new / uw_reader_push
 *   livequery leaderexit    self, from a thread, once the main thread has exited (pthread_exit
 *                           in main): /proc/PID/maps is then empty, the process lives on
 *
 * Prints what it found; exits 1 with the reason when stacks do not reach main.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_getattr_np */
#endif
#include <asm/perf_regs.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <unwound/unwound.h>

static struct uw_session *session;

static int fail(const char *why)
{
	printf("FAIL: %s\n", why);
	return 1;
}

/* ---- self: registers and a stack copy of this process, as the kernel takes them */

struct snapshot {
	uint64_t regs[8];    /* BX BP SP IP R12 R13 R14 R15: perf's bit order of MASK */
	uint8_t stack[32768];
	uint64_t stack_size;
};
#define MASK                                                                                                    \
	((1ull << PERF_REG_X86_BX) | (1ull << PERF_REG_X86_BP) | (1ull << PERF_REG_X86_SP) |                      \
	 (1ull << PERF_REG_X86_IP) | (1ull << PERF_REG_X86_R12) | (1ull << PERF_REG_X86_R13) |                    \
	 (1ull << PERF_REG_X86_R14) | (1ull << PERF_REG_X86_R15))

static uint64_t stack_top;

__attribute__((no_sanitize_address)) static void copy_stack(uint8_t *dst, uint64_t src, uint64_t n)
{
	const volatile uint8_t *p = (const volatile uint8_t *)(uintptr_t)src;
	for (uint64_t i = 0; i < n; i++)
		dst[i] = p[i];
}

__attribute__((noinline, noclone)) static void capture(struct snapshot *s)
{
	uint64_t *r = s->regs;
	__asm__ volatile("mov %%rbx, 0(%0)\n\t"
			 "mov %%rbp, 8(%0)\n\t"
			 "mov %%rsp, 16(%0)\n\t"
			 "lea 0(%%rip), %%rax\n\t"
			 "mov %%rax, 24(%0)\n\t"
			 "mov %%r12, 32(%0)\n\t"
			 "mov %%r13, 40(%0)\n\t"
			 "mov %%r14, 48(%0)\n\t"
			 "mov %%r15, 56(%0)\n\t"
			 :
			 : "r"(r)
			 : "rax", "memory");
	uint64_t sp = r[2], n = stack_top - sp;
	s->stack_size = n < sizeof(s->stack) ? n : sizeof(s->stack);
	copy_stack(s->stack, sp, s->stack_size);
}

__attribute__((noinline, noclone)) static void query_inner(struct snapshot *s)
{
	capture(s);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline, noclone)) static void query_outer(struct snapshot *s)
{
	query_inner(s);
	__asm__ volatile("" ::: "memory");
}

static uint64_t find_stack_top(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096 + 256];
	unsigned long long start, end;
	uint64_t top = 0;
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "[stack]") && sscanf(line, "%llx-%llx", &start, &end) == 2)
			top = end;
	if (f)
		fclose(f);
	return top;
}

__attribute__((noinline, noclone)) static int self(const char *via)
{
	UW_OPTS(uw_tracker_opts, to, .live = 1);
	struct uw_tracker *t = uw_tracker_new(session, &to);
	if (!stack_top)
		stack_top = find_stack_top();
	if (!t || !stack_top)
		return fail("no tracker, or no [stack] mapping");
	static struct snapshot snap;
	query_outer(&snap);
	uint32_t pid = (uint32_t)getpid();
	UW_OPTS(uw_sample_regs, in, .pid = pid, .tid = pid, .time = UINT64_MAX, .abi = UW_REGS_ABI_64,
		.regs = snap.regs, .regs_mask = MASK, .stack = snap.stack, .stack_size = snap.stack_size);
	struct uw_frame frames[64];
	UW_OPTS(uw_unwind_result, res);
	if (uw_unwind_sample(t, &in, frames, 64, &res))
		return fail("uw_unwind_sample");
	UW_OPTS(uw_symbolize_opts, so);
	struct uw_symbols *syms;
	if (uw_symbolize_frames(session, frames, res.nr_frames, &so, &syms))
		return fail("uw_symbolize_frames");
	char chain[2048] = "";
	size_t n = 0;
	for (size_t i = 0; i < syms->count && n < sizeof(chain); i++)
		n += (size_t)snprintf(chain + n, sizeof(chain) - n, "%s%s", i ? ";" : "",
				      syms->syms[i].name ? syms->syms[i].name : uw_sym_reason_str(syms->syms[i].reason));
	uw_symbols_free(syms);
	UW_OPTS(uw_tracker_stats, st);
	uw_tracker_stats(t, &st);
	printf("self: %u frames, stop: %s; %s; mappings asked: %llu PROCMAP_QUERY, %llu /proc/PID/maps\n", res.nr_frames,
	       uw_stop_reason_str(res.stop), chain, (unsigned long long)st.procmap_queries,
	       (unsigned long long)st.maps_scans);
	char want[128];
	snprintf(want, sizeof(want), "capture;query_inner;query_outer;self;%s", via);
	if (!strstr(chain, want))
		return fail("the stack does not reach its root through the known frames");
	if (!st.procmap_queries && !st.maps_scans)
		return fail("nothing was asked of the kernel");
	/* an address of a process the tracker was told nothing of, looked up as it is now */
	struct uw_module *m = NULL;
	uint64_t rel = 0;
	if (uw_tracker_lookup(t, pid, (uint64_t)(uintptr_t)&self, &m, &rel) || !m)
		return fail("uw_tracker_lookup does not find this program's code");
	printf("self: uw_tracker_lookup(%u, self) = %s+%#llx\n", pid, uw_module_path(m), (unsigned long long)rel);
	/* a pid that runs no process: nothing found, and nothing kept that would look again */
	if (uw_tracker_lookup(t, 0x3ffffff0u, 0x401000, &m, &rel) != -ENOENT)
		return fail("a pid that does not exist: not -ENOENT");
	uw_tracker_free(t);
	return 0;
}

/* ---- leaderexit: the main thread gone, the process asked of the kernel from another thread */

static int leader_state(void)
{
	char buf[512];
	FILE *f = fopen("/proc/self/stat", "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = 0;
	const char *r = strrchr(buf, ')');
	return r && r[1] == ' ' ? r[2] : 0;
}

__attribute__((noinline, noclone)) static void *leader_gone(void *arg)
{
	(void)arg;
	/* the leader a zombie: its /proc/PID/maps shows nothing, PROCMAP_QUERY on it fails */
	for (int i = 0; i < 5000 && leader_state() != 'Z'; i++)
		usleep(1000);
	if (leader_state() != 'Z')
		exit(fail("the main thread did not exit"));
	FILE *f = fopen("/proc/self/maps", "r");
	char line[256];
	bool empty = !f || !fgets(line, sizeof(line), f);
	if (f)
		fclose(f);
	printf("leaderexit: /proc/self/maps %s once the main thread exited\n", empty ? "empty" : "not empty");
	pthread_attr_t a;
	void *lo;
	size_t sz;
	if (pthread_getattr_np(pthread_self(), &a) || pthread_attr_getstack(&a, &lo, &sz))
		exit(fail("pthread_getattr_np"));
	pthread_attr_destroy(&a);
	stack_top = (uint64_t)(uintptr_t)lo + sz;
	int rc = self("leader_gone;start_thread");
	uw_session_free(session);
	exit(rc);
}

static int leaderexit(void)
{
	pthread_t th;
	if (pthread_create(&th, NULL, leader_gone, NULL))
		return fail("pthread_create");
	pthread_exit(NULL);
}

/* ---- pid: samples of another process pushed into a live reader */

struct counts {
	unsigned long samples, with_user, to_main, outside;
};

static int on_sample(void *ctx, const struct uw_sample *smp)
{
	struct counts *c = ctx;
	c->samples++;
	if (!smp->nr_user)
		return 0;
	c->with_user++;
	if (smp->stop_reason == UW_STOP_NO_MODULE)
		c->outside++;
	UW_OPTS(uw_symbolize_opts, so);
	struct uw_symbols *syms;
	if (uw_symbolize_frames(session, smp->user, smp->nr_user, &so, &syms))
		return 0;
	for (size_t i = 0; i < syms->count; i++)
		if (syms->syms[i].name && !strcmp(syms->syms[i].name, "main")) {
			c->to_main++;
			break;
		}
	uw_symbols_free(syms);
	return 0;
}

static int drain(struct uw_reader *r, uint8_t *base, size_t size)
{
	struct perf_event_mmap_page *mp = (void *)base;
	uint8_t *data = base + sysconf(_SC_PAGESIZE);
	uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE), tail = mp->data_tail;
	static uint8_t buf[65536];
	int err = 0;
	while (tail < head && !err) {
		size_t off = tail % size;
		struct perf_event_header h;
		for (size_t i = 0; i < sizeof(h); i++)
			((uint8_t *)&h)[i] = data[(off + i) % size];
		const uint8_t *rec = data + off;
		if (off + h.size > size) {
			memcpy(buf, data + off, size - off);
			memcpy(buf + (size - off), data, h.size - (size - off));
			rec = buf;
		}
		err = uw_reader_push(r, rec, h.size);
		tail += h.size;
	}
	__atomic_store_n(&mp->data_tail, tail, __ATOMIC_RELEASE);
	return err;
}

static int attach(int pid, unsigned long want)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.sample_freq = 999;
	a.freq = 1;
	a.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			PERF_SAMPLE_PERIOD | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	a.sample_regs_user = uw_regs_mask(UW_ARCH_X86_64);
	a.sample_stack_user = 16384;
	a.exclude_kernel = 1;
	a.sample_id_all = 1; /* and no mmap, comm or task: samples only */
	int fd = (int)syscall(SYS_perf_event_open, &a, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		perror("perf_event_open");
		return 1;
	}
	size_t page = (size_t)sysconf(_SC_PAGESIZE), pages = 256;
	uint8_t *base = mmap(NULL, (pages + 1) * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	uint64_t id = 0;
	if (base == MAP_FAILED || ioctl(fd, PERF_EVENT_IOC_ID, &id))
		return fail("mmap or PERF_EVENT_IOC_ID");
	struct counts c = { 0 };
	UW_OPTS(uw_reader_opts, ro, .on_sample = on_sample, .ctx = &c);
	struct uw_reader *r = uw_reader_new(session, &ro); /* its tracker is live */
	if (!r || uw_reader_add_event(r, &a, sizeof(a), &id, 1, "cpu-clock"))
		return fail("uw_reader_new");
	/* until want samples with a user stack (the target spins: work done, not time), or 120 s
	 * without them */
	struct pollfd pfd = { fd, POLLIN, 0 };
	int err = 0;
	time_t t0 = time(NULL);
	while (!err && c.with_user < want && time(NULL) - t0 < 120) {
		if (poll(&pfd, 1, 100) > 0 && (pfd.revents & POLLHUP))
			break; /* the process exited */
		err = drain(r, base, pages * page);
		if (!err)
			err = uw_reader_round(r);
	}
	if (!err)
		err = uw_reader_flush(r);
	UW_OPTS(uw_tracker_stats, st);
	uw_tracker_stats(uw_reader_tracker(r), &st);
	printf("pid %d: %lu samples, %lu with a user stack, %lu reach main, %lu stop outside any known mapping; "
	       "mappings asked: %llu PROCMAP_QUERY, %llu /proc/PID/maps\n",
	       pid, c.samples, c.with_user, c.to_main, c.outside, (unsigned long long)st.procmap_queries,
	       (unsigned long long)st.maps_scans);
	uw_reader_free(r);
	munmap(base, (pages + 1) * page);
	close(fd);
	if (err)
		return fail(uw_session_errmsg(session));
	if (c.with_user < want)
		return fail("too few samples before the process exited");
	if (c.to_main * 100 < c.with_user * 99)
		return fail("stacks of a process no event told of do not reach main");
	return 0;
}

int main(int argc, char **argv)
{
	session = uw_session_new(NULL);
	if (!session)
		return fail("uw_session_new");
	int rc;
	if (argc == 2 && !strcmp(argv[1], "self"))
		rc = self("main");
	else if (argc == 2 && !strcmp(argv[1], "leaderexit"))
		rc = leaderexit();
	else if (argc == 4 && !strcmp(argv[1], "pid"))
		rc = attach(atoi(argv[2]), strtoul(argv[3], NULL, 10));
	else
		rc = fail("usage: livequery self | leaderexit | pid PID N");
	uw_session_free(session);
	return rc;
}
