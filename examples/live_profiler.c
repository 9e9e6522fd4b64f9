/* SPDX-License-Identifier: MIT */
/*
 * A small live profiler, as sysprof-like tools are built: it opens perf_event_open itself for a
 * command (cpu-clock, one ring per CPU), reads the rings, and pushes the raw records into an
 * unwound reader, which keeps the processes' mappings (its tracker), puts records in time order,
 * unwinds each sample and hands it back. Stacks are named and counted; at the end, one line per
 * distinct stack:
 *
 *     COUNT comm;outer;...;inner
 *
 * User stacks are walked in the kernel where it can be (uw_kernel_unwind: an eBPF program
 * attached to the events walks each stack where it lives, so a stack deeper than any copy is
 * whole); else, with one line saying why, the kernel copies 16 KiB of stack per sample (with the
 * registers) and the reader unwinds the copy.
 *
 * usage: live_profiler [-k | -c] [-d SECS] CMD [ARGS...]
 *   -k       kernel unwinding, or fail (root, or CAP_BPF and CAP_PERFMON)
 *   -c       stack copies only
 *   -d SECS  stop after SECS seconds (the command is ended)
 * (root, or kernel.perf_event_paranoid <= 1 for stack copies)
 * Build: cc live_profiler.c $(pkg-config --cflags --libs unwound)
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <unwound/unwound.h>

#define PAGES 256      /* data pages per ring */
#define STACK 16384    /* stack bytes copied per sample (without kernel unwinding) */

struct ring {
	int fd;
	uint8_t *base; /* the control page, then the data */
	size_t size;
};

/* ---- stacks counted by their text */
struct stack {
	char *text;
	unsigned long count;
};
static struct stack *stacks;
static size_t nstacks;
static struct uw_session *session;

static void count(const char *text)
{
	for (size_t i = 0; i < nstacks; i++)
		if (!strcmp(stacks[i].text, text)) {
			stacks[i].count++;
			return;
		}
	struct stack *ns = realloc(stacks, (nstacks + 1) * sizeof(*ns));
	if (!ns)
		return;
	stacks = ns;
	stacks[nstacks++] = (struct stack){ strdup(text), 1 };
}

/* Each sample, in time order, unwound: named, outermost first. */
static int on_sample(void *ctx, const struct uw_sample *smp)
{
	(void)ctx;
	char text[8192];
	size_t n = (size_t)snprintf(text, sizeof(text), "%s", smp->comm ? smp->comm : "?");
	UW_OPTS(uw_symbolize_opts, so);
	struct uw_symbols *syms;
	if (uw_symbolize_frames(session, smp->user, smp->nr_user, &so, &syms))
		return 0;
	for (size_t i = syms->count; i-- > 0 && n < sizeof(text);) {
		const char *name = syms->syms[i].name ? syms->syms[i].name : "[unknown]";
		n += (size_t)snprintf(text + n, sizeof(text) - n, ";%s", name);
	}
	uw_symbols_free(syms);
	count(text);
	return 0;
}

static int cmp_stack(const void *a, const void *b)
{
	const struct stack *x = a, *y = b;
	return x->count != y->count ? (x->count < y->count ? 1 : -1) : strcmp(x->text, y->text);
}

/* Every record in a ring, into the reader (a record may wrap around the ring's end). */
static int drain(struct uw_reader *r, struct ring *rg)
{
	struct perf_event_mmap_page *mp = (void *)rg->base;
	uint8_t *data = rg->base + sysconf(_SC_PAGESIZE);
	uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE), tail = mp->data_tail;
	static uint8_t buf[65536];
	int err = 0;
	while (tail < head && !err) {
		size_t off = tail % rg->size;
		struct perf_event_header h;
		for (size_t i = 0; i < sizeof(h); i++)
			((uint8_t *)&h)[i] = data[(off + i) % rg->size];
		const uint8_t *rec = data + off;
		if (off + h.size > rg->size) {
			size_t first = rg->size - off;
			memcpy(buf, data + off, first);
			memcpy(buf + first, data, h.size - first);
			rec = buf;
		}
		err = uw_reader_push(r, rec, h.size);
		tail += h.size;
	}
	__atomic_store_n(&mp->data_tail, tail, __ATOMIC_RELEASE);
	return err;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Kernel unwinding for the reader, attached to every event: NULL (stack copies) with one line
 * saying why, or (force) an error. */
static struct uw_kernel_unwind *kernel_unwind(struct uw_reader *r, const struct ring *rings, size_t nr, bool force,
                                             bool *failed)
{
	struct uw_kernel_unwind *ku = uw_kernel_unwind_new(r, NULL);
	int err = ku ? uw_kernel_unwind_load(ku) : -errno;
	for (size_t i = 0; i < nr && !err; i++)
		err = uw_kernel_unwind_attach(ku, rings[i].fd); /* (it leaves the event disabled) */
	/* what was pushed so far loaded (nothing here: the command has not exec'd), and the loop
	 * woken every 2 ms while the command starts, so its mappings are loaded as they come */
	if (!err)
		err = uw_kernel_unwind_prime(ku, 0);
	if (!err)
		return ku;
	uw_kernel_unwind_free(ku); /* (the reader is as before: stack copies) */
	if (force) {
		fprintf(stderr, "live_profiler: %s\n", uw_session_errmsg(session));
		*failed = true;
	} else {
		fprintf(stderr, "live_profiler: %s; copying %d bytes of stack per sample instead\n",
			uw_session_errmsg(session), STACK);
	}
	return NULL;
}

/* What the reader and the kernel unwinding did, on standard error. */
static void summary(struct uw_reader *r, struct uw_kernel_unwind *ku)
{
	UW_OPTS(uw_reader_stats, rs);
	uw_reader_stats(r, &rs);
	fprintf(stderr, "live_profiler: %llu samples; user frames by method:", (unsigned long long)rs.samples_delivered);
	for (unsigned m = 0; m < UW_METHOD__COUNT; m++)
		if (rs.frames_by_method[m])
			fprintf(stderr, " %s %llu,", uw_frame_method_str((enum uw_frame_method)m),
				(unsigned long long)rs.frames_by_method[m]);
	fprintf(stderr, "\n");
	UW_OPTS(uw_kernel_unwind_stats, ks);
	if (!ku || uw_kernel_unwind_stats(ku, &ks))
		return;
	fprintf(stderr,
		"live_profiler: kernel unwinding: %llu samples walked, %llu finished in user space (%llu for want of "
		"mappings or a table), %llu lost, %llu copied by the kernel instead; %llu tables, %llu bytes in BPF "
		"maps at most\n",
		(unsigned long long)ks.samples, (unsigned long long)ks.finished, (unsigned long long)ks.finished_missing,
		(unsigned long long)ks.lost, (unsigned long long)ks.copied, (unsigned long long)ks.tables,
		(unsigned long long)ks.map_bytes_peak);
}

int main(int argc, char **argv)
{
	bool force_kernel = false, copies = false;
	double duration = 0;
	int arg = 1;
	for (; arg < argc && argv[arg][0] == '-'; arg++) {
		if (!strcmp(argv[arg], "-k"))
			force_kernel = true;
		else if (!strcmp(argv[arg], "-c"))
			copies = true;
		else if (!strcmp(argv[arg], "-d") && arg + 1 < argc)
			duration = atof(argv[++arg]);
		else
			break;
	}
	if (arg >= argc || (force_kernel && copies)) {
		fprintf(stderr, "usage: %s [-k | -c] [-d SECS] CMD [ARGS...]\n", argv[0]);
		return 2;
	}
	/* the command waits until its events exist, then execs (they begin there) */
	int go[2];
	if (pipe(go))
		return 1;
	pid_t child = fork();
	if (child == 0) {
		char c;
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		execvp(argv[arg], argv + arg);
		_exit(127);
	}
	close(go[0]);

	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.sample_freq = 999;
	a.freq = 1;
	a.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			PERF_SAMPLE_PERIOD | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	a.sample_regs_user = uw_regs_mask(UW_ARCH_X86_64); /* what the unwinder reads */
	a.sample_stack_user = STACK;
	a.disabled = 1;
	a.enable_on_exec = 1;
	a.inherit = 1;
	a.exclude_kernel = 1;
	a.mmap = a.mmap2 = a.comm = a.comm_exec = a.task = 1; /* the side-band the tracker needs */
	a.sample_id_all = 1;
	/* the clock of the kernel unwinding program's records */
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	a.watermark = 1;
	a.wakeup_watermark = PAGES * 4096 / 4;

	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	struct ring *rings = calloc((size_t)ncpu, sizeof(*rings));
	uint64_t *ids = calloc((size_t)ncpu, sizeof(*ids));
	size_t nr = 0;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	for (long c = 0; c < ncpu; c++) {
		int fd = (int)syscall(SYS_perf_event_open, &a, child, (int)c, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0)
			continue; /* an offline CPU */
		void *m = mmap(NULL, (PAGES + 1) * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED || ioctl(fd, PERF_EVENT_IOC_ID, &ids[nr]))
			return 1;
		rings[nr++] = (struct ring){ fd, m, PAGES * page };
	}
	if (!nr) {
		fprintf(stderr, "perf_event_open: %s\n", strerror(errno));
		kill(child, SIGKILL);
		return 1;
	}

	/* the reader: the events with their ring ids, then records as they come */
	session = uw_session_new(NULL);
	UW_OPTS(uw_reader_opts, ro, .on_sample = on_sample);
	struct uw_reader *r = session ? uw_reader_new(session, &ro) : NULL;
	if (!r || uw_reader_add_event(r, &a, sizeof(a), ids, nr, "cpu-clock"))
		return 1;
	bool failed = false;
	struct uw_kernel_unwind *ku = copies ? NULL : kernel_unwind(r, rings, nr, force_kernel, &failed);
	if (failed) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		return 1;
	}
	if (write(go[1], "x", 1) != 1)
		return 1;
	close(go[1]);

	/* the rings, and the kernel unwinding program's records */
	struct pollfd *pfd = calloc(nr + 1, sizeof(*pfd));
	for (size_t i = 0; i < nr; i++)
		pfd[i] = (struct pollfd){ rings[i].fd, POLLIN, 0 };
	size_t npfd = nr;
	if (ku)
		pfd[npfd++] = (struct pollfd){ uw_kernel_unwind_fd(ku), POLLIN, 0 };
	double end = duration > 0 ? now_s() + duration : 0;
	int status = 0, err = 0;
	bool ended = false;
	for (bool running = true; running && !err;) {
		poll(pfd, npfd, ku ? 20 : 100);
		running = waitpid(child, &status, WNOHANG) == 0;
		if (running && end && now_s() >= end) {
			kill(child, SIGTERM);
			waitpid(child, &status, 0);
			running = false;
			ended = true;
		}
		if (ku)
			err = uw_kernel_unwind_drain(ku); /* the program's records first */
		for (size_t i = 0; i < nr && !err; i++)
			err = drain(r, &rings[i]);
		if (!err)
			err = uw_reader_round(r); /* a pass over every ring: a round */
		if (!err && ku)
			err = uw_kernel_unwind_update(ku); /* what the records told loaded for the program */
	}
	if (!err)
		err = uw_reader_flush(r); /* the end: everything held goes */
	if (err)
		fprintf(stderr, "%s\n", uw_session_errmsg(session));

	qsort(stacks, nstacks, sizeof(*stacks), cmp_stack);
	for (size_t i = 0; i < nstacks; i++) {
		printf("%lu %s\n", stacks[i].count, stacks[i].text);
		free(stacks[i].text);
	}
	free(stacks);
	summary(r, ku);
	uw_kernel_unwind_free(ku); /* (before its reader) */
	uw_reader_free(r);
	uw_session_free(session);
	for (size_t i = 0; i < nr; i++) {
		munmap(rings[i].base, rings[i].size + page);
		close(rings[i].fd);
	}
	free(rings);
	free(ids);
	free(pfd);
	if (err)
		return 1;
	return ended ? 0 : WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
