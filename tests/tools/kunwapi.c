/* SPDX-License-Identifier: MIT */
/*
 * Kernel unwinding for a reader of pushed records (uw_kernel_unwind, public API only): what it
 * refuses, each with its error and a message that says why, and that it works.
 *
 *   kunwapi          (root, BPF available) the refusals: no reader, a reader of a file, options
 *                    (size, -E2BIG for an unknown trailing byte, values out of range), a second
 *                    one on a reader, calls before load (attach, fd, drain, update, prime),
 *                    load twice, descriptors that are no perf event, events not added to the
 *                    reader, events not as the program needs them (clock, sample_id_all, TIME,
 *                    sample_type, counting events), before Linux 6.2 events of a second
 *                    attribute, stats' size; then the program attached to a cpu-clock event of
 *                    this process and (Linux 6.2) a task-clock event of a fixed period: the
 *                    events left disabled by the attach, then sampled, their samples walked in
 *                    the kernel (methods BPF_*) once the process's mappings are loaded, reaching
 *                    main, each with its own event's name and period;
 *                    a sample the kernel wrote itself counted as copied; the reader as before
 *                    once freed
 *   kunwapi refused  (run without CAP_BPF) load says "not privileged" (-EPERM); the reader
 *                    still takes records
 *
 * Prints one line per check; exit 1 when one is wrong.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <unwound/unwound.h>

static int failed;
static struct uw_session *s;

/* got as wanted, and (want < 0) the session's message containing says */
static void expect(const char *what, int got, int want, const char *says)
{
	const char *msg = uw_session_errmsg(s);
	int ok = got == want && (!says || strstr(msg, says));
	printf("%-66s %s (%d)%s%s\n", what, ok ? "ok" : "WRONG", got, want < 0 ? ": " : "", want < 0 ? msg : "");
	if (!ok) {
		fprintf(stderr, "kunwapi: %s: got %d (%s), want %d (%s)%s%s; message \"%s\"\n", what, got, uw_strerror(got),
			want, uw_strerror(want), says ? ", saying " : "", says ? says : "", msg);
		failed = 1;
	}
}

static void expect_true(const char *what, int cond, const char *detail)
{
	printf("%-66s %s%s%s\n", what, cond ? "ok" : "WRONG", detail ? ": " : "", detail ? detail : "");
	if (!cond) {
		fprintf(stderr, "kunwapi: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
		failed = 1;
	}
}

/* new as an error value */
static int ku_new(struct uw_reader *r, const void *o, struct uw_kernel_unwind **out)
{
	errno = 0;
	struct uw_kernel_unwind *k = uw_kernel_unwind_new(r, o);
	if (out)
		*out = k;
	else
		uw_kernel_unwind_free(k);
	return k ? 0 : -errno;
}

#define END(T, last) (offsetof(struct T, last) + sizeof(((struct T *)0)->last))

/* ---- samples delivered */
static unsigned long samples, bpf_samples, rooted, bpf_rooted;
/* task-clock's (the second attribute): samples, walked in the kernel and reaching main, and
 * those whose period is not the event's */
#define TASK_PERIOD 2000000ull
static unsigned long task_samples, task_bpf_rooted, task_bad_period;

static __attribute__((noinline)) int is_main(struct uw_module *m, uint64_t rel)
{
	struct uw_symbol sym;
	return m && !uw_symbolize(s, m, rel, &sym) && sym.name && !strcmp(sym.name, "main");
}

static int on_sample(void *ctx, const struct uw_sample *smp)
{
	(void)ctx;
	if (smp->pid != (uint32_t)getpid())
		return 0;
	samples++;
	int bpf = 0, root = 0;
	for (unsigned i = 0; i < smp->nr_user; i++) {
		const struct uw_frame *f = &smp->user[i];
		bpf |= f->method == UW_METHOD_BPF_ROWS || f->method == UW_METHOD_BPF_FP;
		root |= is_main(f->module, f->rel_pc - (f->is_call ? 1 : 0));
	}
	bpf_samples += bpf;
	rooted += root;
	bpf_rooted += bpf && root;
	if (smp->event_name && !strcmp(smp->event_name, "task-clock")) {
		task_samples++;
		task_bpf_rooted += bpf && root;
		task_bad_period += smp->period != TASK_PERIOD;
	}
	return 0;
}

/* ---- events of this process */
static struct perf_event_attr good_attr(void)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.sample_freq = 999;
	a.freq = 1;
	a.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			PERF_SAMPLE_PERIOD;
	a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.mmap = a.mmap2 = a.comm = a.comm_exec = a.task = 1;
	a.sample_id_all = 1;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	return a;
}

static int open_event(struct perf_event_attr *a, uint64_t *id)
{
	int fd = (int)syscall(SYS_perf_event_open, a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "kunwapi: perf_event_open: %s\n", strerror(errno));
		exit(1);
	}
	if (ioctl(fd, PERF_EVENT_IOC_ID, id)) {
		fprintf(stderr, "kunwapi: PERF_EVENT_IOC_ID: %s\n", strerror(errno));
		exit(1);
	}
	return fd;
}

/* An event of attribute a added to the reader (its own attribute), attached: the error. */
static int attach_as(struct uw_reader *r, struct uw_kernel_unwind *ku, struct perf_event_attr a, int add)
{
	uint64_t id;
	int fd = open_event(&a, &id);
	int e = add ? uw_reader_add_event(r, &a, sizeof(a), &id, 1, NULL) : 0;
	if (e) {
		fprintf(stderr, "kunwapi: uw_reader_add_event: %d\n", e);
		exit(1);
	}
	e = uw_kernel_unwind_attach(ku, fd);
	close(fd);
	return e;
}

/* A stack of some depth, no frame pointers needed: the program walks it with CFI. */
static volatile unsigned long sink;
static __attribute__((noinline)) unsigned long work(int depth, double until)
{
	volatile char pad[200];
	pad[0] = (char)depth;
	if (depth > 0)
		return work(depth - 1, until) + pad[0];
	struct timespec ts;
	unsigned long x = 1;
	for (;;) {
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005ul + 1;
		sink = x;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		if ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9 >= until)
			return x;
	}
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t time_enabled(int fd)
{
	uint64_t v[2] = { 0, 0 };
	if (read(fd, v, sizeof(v)) != (ssize_t)sizeof(v))
		return UINT64_MAX;
	return v[1];
}

static int refused(void)
{
	UW_OPTS(uw_reader_opts, ro, .on_sample = on_sample);
	struct uw_reader *r = uw_reader_new(s, &ro);
	struct uw_kernel_unwind *ku;
	expect("new (unprivileged: not checked until load)", ku_new(r, NULL, &ku), 0, NULL);
	expect("load without CAP_BPF: -EPERM, not privileged", uw_kernel_unwind_load(ku), -EPERM, "not privileged");
	expect("attach after a refused load: -EINVAL", uw_kernel_unwind_attach(ku, 0), -EINVAL, "not loaded");
	uw_kernel_unwind_free(ku);
	expect("the reader after: a round pushed", uw_reader_round(r), 0, NULL);
	uw_reader_free(r);
	return failed;
}

int main(int argc, char **argv)
{
	s = uw_session_new(NULL);
	if (!s)
		return 1;
	if (argc > 1 && !strcmp(argv[1], "refused"))
		return refused();
	if (!uw_kernel_unwind_built()) {
		fprintf(stderr, "kunwapi: kernel unwinding is not compiled in (needs libbpf-dev, clang, bpftool: "
				"scripts/install-deps build)\n");
		return 1;
	}
	UW_OPTS(uw_reader_opts, ro, .on_sample = on_sample);
	struct uw_reader *r = uw_reader_new(s, &ro);
	struct uw_kernel_unwind *ku = NULL;

	/* ---- new */
	errno = 0;
	expect_true("new without a reader: NULL, EINVAL", !uw_kernel_unwind_new(NULL, NULL) && errno == EINVAL, NULL);
	char path[] = "/tmp/kunwapi.XXXXXX";
	int tfd = mkstemp(path);
	static const uint8_t pipe_hdr[16] = { 'P', 'E', 'R', 'F', 'I', 'L', 'E', '2', 16 };
	if (tfd < 0 || write(tfd, pipe_hdr, sizeof(pipe_hdr)) != (ssize_t)sizeof(pipe_hdr))
		return 1;
	close(tfd);
	struct uw_reader *fr = uw_reader_open(s, path, NULL);
	unlink(path);
	if (!fr) {
		fprintf(stderr, "kunwapi: uw_reader_open: %s\n", uw_session_errmsg(s));
		return 1;
	}
	expect("new on a reader of a file: EINVAL", ku_new(fr, NULL, NULL), -EINVAL, "reader of a file");
	uw_reader_free(fr);
	struct uw_kernel_unwind_opts o;
	memset(&o, 0, sizeof(o));
	expect("new with options of size 0: EINVAL", ku_new(r, &o, NULL), -EINVAL, "size");
	union {
		struct uw_kernel_unwind_opts o;
		unsigned char b[sizeof(struct uw_kernel_unwind_opts) + 16];
	} big;
	memset(&big, 0, sizeof(big));
	big.o.sz = sizeof(big);
	expect("new with a larger struct, zero past its end", ku_new(r, &big, NULL), 0, NULL);
	big.b[sizeof(struct uw_kernel_unwind_opts) + 3] = 1;
	expect("new with a larger struct, a byte past its end set: E2BIG", ku_new(r, &big, NULL), -E2BIG, "does not know");
	memset(&big, 0, sizeof(big));
	big.o.sz = sizeof(struct uw_kernel_unwind_opts);
	big.o.reserved = 1;
	expect("new with reserved set: E2BIG", ku_new(r, &big, NULL), -E2BIG, NULL);
	expect_true("(reserved is past the last field known)", END(uw_kernel_unwind_opts, ring_bytes) <
			    sizeof(struct uw_kernel_unwind_opts), NULL);
	UW_OPTS(uw_kernel_unwind_opts, of, .max_frames = 4096);
	expect("new with max_frames 4096: EINVAL", ku_new(r, &of, NULL), -EINVAL, "max_frames");
	UW_OPTS(uw_kernel_unwind_opts, oc, .copy_bytes = 65536);
	expect("new with copy_bytes 65536: EINVAL", ku_new(r, &oc, NULL), -EINVAL, "copy_bytes");
	UW_OPTS(uw_kernel_unwind_opts, orb, .ring_bytes = 5000);
	expect("new with ring_bytes 5000: EINVAL", ku_new(r, &orb, NULL), -EINVAL, "power of two");
	UW_OPTS(uw_kernel_unwind_opts, ors, .ring_bytes = 2048);
	expect("new with ring_bytes 2048: EINVAL", ku_new(r, &ors, NULL), -EINVAL, "at least 4096");
	UW_OPTS(uw_kernel_unwind_opts, ok, .max_frames = 512, .ring_bytes = 1u << 22, .copy_bytes = 8192);
	expect("new with options in range", ku_new(r, &ok, &ku), 0, NULL);
	expect("a second on the same reader: EBUSY", ku_new(r, NULL, NULL), -EBUSY, "one already");

	/* ---- before load */
	struct perf_event_attr ga = good_attr();
	uint64_t id1, id2;
	int fd1 = open_event(&ga, &id1), fd2 = open_event(&ga, &id2);
	expect("attach before load: EINVAL", uw_kernel_unwind_attach(ku, fd1), -EINVAL, "not loaded");
	expect("fd before load: EINVAL", uw_kernel_unwind_fd(ku), -EINVAL, "not loaded");
	expect("drain before load: EINVAL", uw_kernel_unwind_drain(ku), -EINVAL, "not loaded");
	expect("update before load: EINVAL", uw_kernel_unwind_update(ku), -EINVAL, "not loaded");
	expect("prime before load: EINVAL", uw_kernel_unwind_prime(ku, 0), -EINVAL, "not loaded");
	UW_OPTS(uw_kernel_unwind_stats, st);
	expect("stats before load: 0", uw_kernel_unwind_stats(ku, &st), 0, NULL);
	expect_true("... all zero", !st.samples && !st.tables && !st.map_bytes, NULL);

	/* ---- load */
	int e = uw_kernel_unwind_load(ku);
	expect("load", e, 0, NULL);
	if (e)
		return 1;
	expect("load again: EALREADY", uw_kernel_unwind_load(ku), -EALREADY, "loaded already");
	expect_true("fd after load", uw_kernel_unwind_fd(ku) >= 0, NULL);

	/* ---- attach: the descriptor, the event, its attribute */
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	expect("attach a descriptor of /dev/null: EINVAL", uw_kernel_unwind_attach(ku, devnull), -EINVAL,
	       "not a perf event");
	close(devnull);
	expect("attach -1: EINVAL", uw_kernel_unwind_attach(ku, -1), -EINVAL, "not a perf event");
	expect("attach an event not added to the reader: ENOENT", uw_kernel_unwind_attach(ku, fd1), -ENOENT,
	       "uw_reader_add_event");
	uint64_t ids[2] = { id1, id2 };
	if (uw_reader_add_event(r, &ga, sizeof(ga), ids, 2, "cpu-clock"))
		return 1;
	struct perf_event_attr a = ga;
	a.use_clockid = 0;
	a.clockid = 0;
	expect("attach an event of the perf clock: EINVAL", attach_as(r, ku, a, 1), -EINVAL, "CLOCK_MONOTONIC");
	a = ga;
	a.clockid = CLOCK_REALTIME;
	expect("attach an event of CLOCK_REALTIME: EINVAL", attach_as(r, ku, a, 1), -EINVAL, "CLOCK_MONOTONIC");
	a = ga;
	a.sample_id_all = 0;
	expect("attach an event without sample_id_all: EINVAL", attach_as(r, ku, a, 1), -EINVAL, "sample_id_all");
	a = ga;
	a.sample_type &= ~(uint64_t)PERF_SAMPLE_TIME;
	expect("attach an event without PERF_SAMPLE_TIME: EINVAL", attach_as(r, ku, a, 1), -EINVAL, "PERF_SAMPLE_TIME");
	a = ga;
	a.sample_type |= PERF_SAMPLE_ADDR;
	expect("attach an event sampling PERF_SAMPLE_ADDR: EINVAL", attach_as(r, ku, a, 1), -EINVAL, "PERF_SAMPLE_ADDR");
	a = ga;
	a.sample_type |= PERF_SAMPLE_RAW;
	expect("attach an event sampling PERF_SAMPLE_RAW: EINVAL", attach_as(r, ku, a, 1), -EINVAL, "PERF_SAMPLE_RAW");
	a = ga;
	a.freq = 0;
	a.sample_period = 0;
	expect("attach a counting event: EINVAL", attach_as(r, ku, a, 1), -EINVAL, "not a sampling event");
	expect("attach", uw_kernel_unwind_attach(ku, fd1), 0, NULL);
	expect("attach a second event of the attribute", uw_kernel_unwind_attach(ku, fd2), 0, NULL);
	/* a second attribute: task-clock at a fixed period (Linux 6.2: the records say their event) */
	struct utsname un;
	unsigned kmaj = 0, kmin = 0;
	if (!uname(&un))
		sscanf(un.release, "%u.%u", &kmaj, &kmin);
	int ids_said = kmaj > 6 || (kmaj == 6 && kmin >= 2);
	struct perf_event_attr ta = ga;
	ta.config = PERF_COUNT_SW_TASK_CLOCK;
	ta.freq = 0;
	ta.sample_period = TASK_PERIOD;
	uint64_t tid3;
	int fd3 = open_event(&ta, &tid3);
	if (uw_reader_add_event(r, &ta, sizeof(ta), &tid3, 1, "task-clock"))
		return 1;
	if (ids_said)
		expect("attach an event of another attribute (task-clock)", uw_kernel_unwind_attach(ku, fd3), 0, NULL);
	else
		expect("attach an event of another attribute: EINVAL (before Linux 6.2)", uw_kernel_unwind_attach(ku, fd3),
		       -EINVAL, "Linux 6.2");

	/* ---- the event left disabled by the attach (libbpf enables it) */
	uint64_t t0 = time_enabled(fd1);
	work(0, now_s() + 0.05);
	uint64_t t1 = time_enabled(fd1);
	char d[128];
	snprintf(d, sizeof(d), "time enabled %llu, then %llu ns", (unsigned long long)t0, (unsigned long long)t1);
	expect_true("the event is disabled after attach", t0 == t1, d);

	/* ---- sampled: the first stacks handed over (no mappings of this process loaded: the reader
	 * was told of none, its tracker asks the kernel), then walked in the kernel */
	int kfd = uw_kernel_unwind_fd(ku);
	ioctl(fd1, PERF_EVENT_IOC_ENABLE, 0);
	if (ids_said)
		ioctl(fd3, PERF_EVENT_IOC_ENABLE, 0);
	e = 0;
	for (int round = 0; round < 100 && !e && (samples < 300 || bpf_rooted < 100 || (ids_said && task_bpf_rooted < 50));
	     round++) {
		work(20, now_s() + 0.05);
		e = uw_kernel_unwind_drain(ku);
		if (!e)
			e = uw_reader_round(r);
		if (!e)
			e = uw_kernel_unwind_update(ku);
	}
	ioctl(fd1, PERF_EVENT_IOC_DISABLE, 0);
	ioctl(fd3, PERF_EVENT_IOC_DISABLE, 0);
	expect("drain, round, update", e, 0, NULL);
	expect("drain at the end", uw_kernel_unwind_drain(ku), 0, NULL);
	expect("flush", uw_reader_flush(r), 0, NULL);
	snprintf(d, sizeof(d), "%lu samples of this process, %lu reach main, %lu walked in the kernel, %lu of them reach main",
		 samples, rooted, bpf_samples, bpf_rooted);
	expect_true("samples walked in the kernel reach main", samples >= 100 && bpf_rooted >= 50, d);
	expect_true("... nearly all of them", bpf_rooted * 100 >= bpf_samples * 95, d);
	if (ids_said) {
		snprintf(d, sizeof(d), "%lu task-clock samples, %lu walked in the kernel reaching main, %lu of another period",
			 task_samples, task_bpf_rooted, task_bad_period);
		expect_true("task-clock's samples are its own: its name, its period, walked", task_samples >= 50 &&
				    task_bpf_rooted >= 50 && !task_bad_period && task_samples < samples, d);
	}
	(void)kfd;
	UW_OPTS(uw_kernel_unwind_stats, ks);
	expect("stats", uw_kernel_unwind_stats(ku, &ks), 0, NULL);
	snprintf(d, sizeof(d), "%llu samples walked, %llu finished (%llu missing mappings), %llu tables, %llu bytes at most",
		 (unsigned long long)ks.samples, (unsigned long long)ks.finished, (unsigned long long)ks.finished_missing,
		 (unsigned long long)ks.tables, (unsigned long long)ks.map_bytes_peak);
	expect_true("stats count the walks, hand-overs and tables",
		    ks.samples >= samples && ks.finished >= 1 && ks.handover_no_process >= 1 && ks.tables >= 1 &&
			    ks.map_bytes_peak > 0 && ks.finished_missing <= ks.finished,
		    d);
	expect_true("... none copied by the kernel (no ring read)", ks.copied == 0, NULL);
	/* a sample of the attribute written by the kernel itself (its event without the program):
	 * counted as copied, and delivered as any sample */
	uint64_t srec[7] = { (uint64_t)PERF_RECORD_SAMPLE | (uint64_t)PERF_RECORD_MISC_USER << 32 | 56ull << 48, id1,
			     0x1000, (uint64_t)getpid() << 32 | (uint32_t)getpid(), 1, 0, 1 };
	unsigned long before_copy = samples;
	expect("a SAMPLE record of the attribute pushed", uw_reader_push(r, srec, sizeof(srec)), 0, NULL);
	expect("... flushed", uw_reader_flush(r), 0, NULL);
	expect("stats", uw_kernel_unwind_stats(ku, &ks), 0, NULL);
	snprintf(d, sizeof(d), "copied %llu, samples %lu -> %lu", (unsigned long long)ks.copied, before_copy, samples);
	expect_true("... counted as copied, delivered", ks.copied == 1 && samples == before_copy + 1, d);
	struct uw_kernel_unwind_stats zs;
	memset(&zs, 0, sizeof(zs));
	expect("stats of size 0: EINVAL", uw_kernel_unwind_stats(ku, &zs), -EINVAL, NULL);
	union {
		struct uw_kernel_unwind_stats st;
		unsigned char b[sizeof(struct uw_kernel_unwind_stats) + 16];
	} bst;
	memset(&bst, 0xa5, sizeof(bst));
	bst.st.sz = sizeof(bst);
	int zero = 1;
	expect("stats of a larger struct", uw_kernel_unwind_stats(ku, &bst.st), 0, NULL);
	for (size_t i = sizeof(struct uw_kernel_unwind_stats); i < sizeof(bst); i++)
		zero &= !bst.b[i];
	expect_true("... zero past this library's fields, sz kept", zero && bst.st.sz == sizeof(bst), NULL);

	/* ---- freed: the reader as before */
	uw_kernel_unwind_free(ku);
	uw_kernel_unwind_free(NULL);
	unsigned long before = samples;
	expect("the reader after free: a round pushed", uw_reader_round(r), 0, NULL);
	expect("... flushed", uw_reader_flush(r), 0, NULL);
	expect_true("... no sample from nowhere", samples == before, NULL);
	expect("a new one on the reader once freed", ku_new(r, NULL, &ku), 0, NULL);
	uw_kernel_unwind_free(ku);
	close(fd1);
	close(fd2);
	close(fd3);
	uw_reader_free(r);
	uw_session_free(s);
	printf("%s\n", failed ? "FAIL" : "PASS");
	return failed;
}
