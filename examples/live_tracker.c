/* SPDX-License-Identifier: MIT */
/*
 * A tracker-level live profiler (as sysprof or eu-stackprof are built): it opens
 * perf_event_open itself for a command (cpu-clock, registers and a copy of the user stack per
 * sample, one ring per CPU), reads the rings, merges them in time order (uw_order), decodes
 * each record (uw_record_decode), tells a live tracker of mappings, names, forks and exits, and
 * unwinds each sample itself (uw_unwind_sample). At the end, one line per distinct stack:
 *
 *     COUNT comm;outer;...;inner
 *
 * usage: live_tracker CMD [ARGS...]     (root, or kernel.perf_event_paranoid <= 1)
 * Build: cc live_tracker.c $(pkg-config --cflags --libs unwound)
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
#include <unistd.h>

#include <unwound/unwound.h>

#define PAGES 256 /* data pages per ring */

struct ring {
	int fd;
	uint8_t *base;     /* the control page, then the data */
	size_t size;
	uint64_t last_time; /* of its last record (for one without a time) */
};

static struct uw_session *session;
static struct uw_tracker *tracker;
static struct uw_event *event;

/* ---- stacks counted by their text; thread names from COMM records */
struct stack {
	char *text;
	unsigned long count;
};
static struct stack *stacks;
static size_t nstacks;
static struct name {
	uint32_t tid;
	char comm[16];
} names[4096];

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

static int cmp_stack(const void *a, const void *b)
{
	const struct stack *x = a, *y = b;
	return x->count != y->count ? (x->count < y->count ? 1 : -1) : strcmp(x->text, y->text);
}

/* A sample: unwound, named, outermost first. */
static void sample(const struct uw_record *rec)
{
	struct uw_frame frames[128];
	struct uw_sample_regs in = { .sz = sizeof(in), .pid = rec->pid, .tid = rec->tid, .time = rec->time,
				     .abi = (uint32_t)rec->regs_abi, .regs = rec->regs, .regs_mask = rec->regs_mask,
				     .stack = rec->stack, .stack_size = rec->stack_size, .cpumode = rec->misc & 7 };
	struct uw_unwind_result res = { .sz = sizeof(res) };
	if (uw_unwind_sample(tracker, &in, frames, 128, &res) || !res.nr_frames)
		return;
	char text[8192];
	const char *comm = names[rec->tid % 4096].tid == rec->tid ? names[rec->tid % 4096].comm : "?";
	size_t n = (size_t)snprintf(text, sizeof(text), "%s", comm);
	UW_OPTS(uw_symbolize_opts, so);
	struct uw_symbols *syms;
	if (uw_symbolize_frames(session, frames, res.nr_frames, &so, &syms))
		return;
	for (size_t i = syms->count; i-- > 0 && n < sizeof(text);) {
		const char *name = syms->syms[i].name ? syms->syms[i].name : "[unknown]";
		n += (size_t)snprintf(text + n, sizeof(text) - n, ";%s", name);
	}
	uw_symbols_free(syms);
	count(text);
}

/* Each record in time order: side-band into the tracker, samples unwound. */
static int on_record(void *ctx, unsigned ring, uint64_t time, const void *raw, size_t len)
{
	(void)ctx, (void)ring, (void)time;
	struct uw_record rec = { .sz = sizeof(rec) };
	if (uw_record_decode(event, raw, len, &rec)) {
		fprintf(stderr, "a %s record: %s\n", uw_record_type_name(rec.type), rec.error);
		return 0;
	}
	switch (rec.type) {
	case PERF_RECORD_SAMPLE:
		sample(&rec);
		return 0;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2: {
		struct uw_mmap_event ev = { .sz = sizeof(ev), .pid = rec.pid, .tid = rec.tid, .time = rec.time,
					    .addr = rec.map_addr, .len = rec.map_len, .pgoff = rec.pgoff,
					    .prot = rec.prot, .flags = rec.flags, .maj = rec.maj, .min = rec.min,
					    .ino = rec.ino, .ino_generation = rec.ino_generation,
					    .build_id = rec.build_id, .build_id_size = rec.build_id_size, .path = rec.path };
		return uw_tracker_mmap(tracker, &ev) == -ENOMEM ? -ENOMEM : 0;
	}
	case PERF_RECORD_COMM:
		names[rec.tid % 4096].tid = rec.tid;
		snprintf(names[rec.tid % 4096].comm, sizeof(names[0].comm), "%s", rec.comm);
		return uw_tracker_comm(tracker, rec.pid, rec.tid, rec.comm, rec.exec, rec.time) == -ENOMEM ? -ENOMEM : 0;
	case PERF_RECORD_FORK:
		return uw_tracker_fork(tracker, rec.ppid, rec.ptid, rec.pid, rec.tid, rec.time) == -ENOMEM ? -ENOMEM : 0;
	case PERF_RECORD_EXIT:
		return uw_tracker_exit(tracker, rec.pid, rec.tid, rec.time) == -ENOMEM ? -ENOMEM : 0;
	default:
		return 0;
	}
}

/* Every record in a ring, into the merge with its time (a record may wrap around the ring's
 * end: copied whole into an aligned buffer). */
static int drain(struct uw_order *o, unsigned i, struct ring *rg)
{
	struct perf_event_mmap_page *mp = (void *)rg->base;
	uint8_t *data = rg->base + sysconf(_SC_PAGESIZE);
	uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE), tail = mp->data_tail;
	static uint64_t buf[65536 / 8];
	int err = 0;
	while (tail < head && !err) {
		size_t off = tail % rg->size;
		struct perf_event_header h;
		for (size_t k = 0; k < sizeof(h); k++)
			((uint8_t *)&h)[k] = data[(off + k) % rg->size];
		const void *raw = data + off;
		if (off + h.size > rg->size) {
			size_t first = rg->size - off;
			memcpy(buf, data + off, first);
			memcpy((uint8_t *)buf + first, data, h.size - first);
			raw = buf;
		}
		struct uw_record rec = { .sz = sizeof(rec) };
		if (uw_record_decode(event, raw, h.size, &rec) == 0 && rec.has_time)
			rg->last_time = rec.time;
		err = uw_order_push(o, i, rg->last_time, raw, h.size);
		tail += h.size;
	}
	__atomic_store_n(&mp->data_tail, tail, __ATOMIC_RELEASE);
	return err;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s CMD [ARGS...]\n", argv[0]);
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
		execvp(argv[1], argv + 1);
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
	a.sample_stack_user = 16384;
	a.disabled = 1;
	a.enable_on_exec = 1;
	a.inherit = 1;
	a.exclude_kernel = 1;
	a.mmap = a.mmap2 = a.comm = a.comm_exec = a.task = 1; /* the side-band the tracker needs */
	a.sample_id_all = 1;
	a.watermark = 1;
	a.wakeup_watermark = PAGES * 4096 / 4;

	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	struct ring *rings = calloc((size_t)ncpu, sizeof(*rings));
	size_t nr = 0;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	for (long c = 0; c < ncpu; c++) {
		int fd = (int)syscall(SYS_perf_event_open, &a, child, (int)c, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0)
			continue; /* an offline CPU */
		void *m = mmap(NULL, (PAGES + 1) * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED)
			return 1;
		rings[nr++] = (struct ring){ fd, m, PAGES * page, 0 };
	}
	if (!nr) {
		fprintf(stderr, "perf_event_open: %s\n", strerror(errno));
		kill(child, SIGKILL);
		return 1;
	}

	session = uw_session_new(NULL);
	UW_OPTS(uw_tracker_opts, to, .live = 1);
	tracker = session ? uw_tracker_new(session, &to) : NULL;
	event = uw_event_new(&a, sizeof(a));
	struct uw_order *order = uw_order_new(NULL);
	if (!tracker || !event || !order)
		return 1;
	if (write(go[1], "x", 1) != 1)
		return 1;
	close(go[1]);

	struct pollfd *pfd = calloc(nr, sizeof(*pfd));
	for (size_t i = 0; i < nr; i++)
		pfd[i] = (struct pollfd){ rings[i].fd, POLLIN, 0 };
	int status = 0, err = 0;
	for (bool running = true; running && !err;) {
		poll(pfd, nr, 100);
		running = waitpid(child, &status, WNOHANG) == 0;
		for (size_t i = 0; i < nr && !err; i++)
			err = drain(order, (unsigned)i, &rings[i]);
		if (!err)
			err = uw_order_round(order, on_record, NULL); /* a pass over every ring: a round */
	}
	if (!err)
		err = uw_order_flush(order, on_record, NULL); /* the end: everything held goes */
	if (err)
		fprintf(stderr, "%s\n", uw_strerror(err));

	qsort(stacks, nstacks, sizeof(*stacks), cmp_stack);
	for (size_t i = 0; i < nstacks; i++) {
		printf("%lu %s\n", stacks[i].count, stacks[i].text);
		free(stacks[i].text);
	}
	free(stacks);
	uw_order_free(order);
	uw_event_free(event);
	uw_tracker_free(tracker);
	uw_session_free(session);
	for (size_t i = 0; i < nr; i++) {
		munmap(rings[i].base, rings[i].size + page);
		close(rings[i].fd);
	}
	free(rings);
	free(pfd);
	return err ? 1 : WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
