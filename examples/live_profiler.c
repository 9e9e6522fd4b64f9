/* SPDX-License-Identifier: MIT */
/*
 * A small live profiler, as sysprof-like tools are built: it opens perf_event_open itself for a
 * command (cpu-clock, registers and a copy of the user stack per sample, one ring per CPU),
 * reads the rings, and pushes the raw records into an unwound reader, which keeps the
 * processes' mappings (its tracker), puts records in time order, unwinds each sample and hands
 * it back. Stacks are named and counted; at the end, one line per distinct stack:
 *
 *     COUNT comm;outer;...;inner
 *
 * usage: live_profiler CMD [ARGS...]     (root, or kernel.perf_event_paranoid <= 1)
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
#include <unistd.h>

#include <unwound/unwound.h>

#define PAGES 256 /* data pages per ring */

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
			err = drain(r, &rings[i]);
		if (!err)
			err = uw_reader_round(r); /* a pass over every ring: a round */
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
	uw_reader_free(r);
	uw_session_free(session);
	for (size_t i = 0; i < nr; i++) {
		munmap(rings[i].base, rings[i].size + page);
		close(rings[i].fd);
	}
	free(rings);
	free(ids);
	free(pfd);
	return err ? 1 : WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
