/* SPDX-License-Identifier: MIT */
/*
 * Live recording: perf_event_open, one ring buffer per event, records read with the
 * data_head/data_tail protocol and handed to a reader in arrival order, one round per pass
 * over the rings, so they are put in time order as a file's are. Samples are unwound as they
 * come out of the ordering window and written with their callchain; stack copies never reach
 * the disk.
 *
 * Events: per CPU for -a; for a command or -p/-t, per task and per CPU with inherit (the kernel
 * refuses ring buffers on inherited events bound to no CPU). The first event on each CPU (or of
 * each task) carries the side-band: MMAP2 with build-ids, COMM with exec, FORK/EXIT, on the
 * CLOCK_MONOTONIC clock (so jitdumps line up, as perf record -k 1).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "perf/perf.h"
#include "unwind/unwind.h"

/* perf_event_attr, as the kernel reads it (size 128); defined here, the installed UAPI headers
 * may be older than the kernel */
struct kattr {
	uint32_t type, size;
	uint64_t config, sample_period_or_freq, sample_type, read_format, flags;
	uint32_t wakeup, bp_type;
	uint64_t config1, config2, branch_sample_type, sample_regs_user;
	uint32_t sample_stack_user;
	int32_t clockid;
	uint64_t sample_regs_intr;
	uint32_t aux_watermark;
	uint16_t sample_max_stack, reserved2;
	uint32_t aux_sample_size, reserved3;
	uint64_t sig_data, config3;
};
_Static_assert(sizeof(struct kattr) == 136, "perf_event_attr VER8");

enum {
	A_DISABLED = 0, A_INHERIT = 1, A_MMAP = 8, A_COMM = 9, A_FREQ = 10, A_ENABLE_ON_EXEC = 12, A_TASK = 13,
	A_WATERMARK = 14, A_SAMPLE_ID_ALL = 18, A_EXCL_CALLCHAIN_USER = 22, A_MMAP2 = 23, A_COMM_EXEC = 24,
	A_USE_CLOCKID = 25, A_BUILD_ID = 34,
};
#define BIT(n) (1ull << (n))

/* the first page of a ring buffer (struct perf_event_mmap_page): data_head at 1024, data_tail
 * at 1032, data_offset 1040, data_size 1048 */
#define MP_DATA_HEAD 1024
#define MP_DATA_TAIL 1032

#define PERF_EVENT_IOC_ENABLE 0x2400
#define PERF_EVENT_IOC_DISABLE 0x2401
#define PERF_EVENT_IOC_ID 0x80082407

struct ring {
	int fd;
	uint8_t *base;       /* control page, then data */
	size_t data_size;
	uint64_t id;
};

struct live {
	struct cc_sink *sink;
	uint64_t id0;        /* the first ring's event id, for synthesized records' sample_id */
	struct uw_session *s;
	struct uw_tracker *t; /* live: mappings the events missed are asked of the kernel */
	struct uw_reader *r;
	struct ring *rings;
	size_t nrings;
	uint8_t *tmp;        /* a record that wraps around the ring's end */
	uint64_t lost, throttled;
};

static long sys_perf_event_open(struct kattr *a, pid_t pid, int cpu, int group, unsigned long flags)
{
	return syscall(SYS_perf_event_open, a, pid, cpu, group, flags);
}

static int ncpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);
	return n > 0 && n < 4096 ? (int)n : 1;
}

static int permission_error(struct uw_session *s, int err)
{
	int paranoid = -9;
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	if (f) {
		if (fscanf(f, "%d", &paranoid) != 1)
			paranoid = -9;
		fclose(f);
	}
	return base_err(&s->log, err,
			"perf_event_open: %s (kernel.perf_event_paranoid is %d): run as root, grant CAP_PERFMON, "
			"or allow it with 'sysctl -w kernel.perf_event_paranoid=1' (-1 for -a)",
			strerror(-err), paranoid);
}

/* Reads every record in the ring into the reader. */
static int drain(struct live *lv, struct ring *rg)
{
	uint8_t *data = rg->base + (size_t)sysconf(_SC_PAGESIZE);
	uint64_t head = __atomic_load_n((uint64_t *)(rg->base + MP_DATA_HEAD), __ATOMIC_ACQUIRE);
	uint64_t tail = *(uint64_t *)(rg->base + MP_DATA_TAIL);
	int err = 0;
	while (tail < head && !err) {
		size_t off = (size_t)(tail % rg->data_size);
		uint8_t hdr[8];
		for (int i = 0; i < 8; i++)
			hdr[i] = data[(off + (size_t)i) % rg->data_size];
		uint16_t size;
		memcpy(&size, hdr + 6, 2);
		if (size < 8 || size > head - tail)
			break; /* cannot happen with a sane kernel: stop reading this ring */
		const uint8_t *rec = data + off;
		if (off + size > rg->data_size) {
			size_t first = rg->data_size - off;
			memcpy(lv->tmp, data + off, first);
			memcpy(lv->tmp + first, data, size - first);
			rec = lv->tmp;
		}
		uint32_t type;
		memcpy(&type, rec, 4);
		if (type == PR_LOST && size >= 24) {
			uint64_t n;
			memcpy(&n, rec + 16, 8);
			lv->lost += n;
		} else if (type == PR_THROTTLE) {
			lv->throttled++;
		}
		err = uw_reader_push(lv->r, rec, size);
		tail += size;
	}
	__atomic_store_n((uint64_t *)(rg->base + MP_DATA_TAIL), tail, __ATOMIC_RELEASE);
	return err;
}

static int drain_all(struct live *lv)
{
	int err = 0;
	for (size_t i = 0; i < lv->nrings && !err; i++)
		err = drain(lv, &lv->rings[i]);
	if (!err)
		err = uw_reader_round(lv->r);
	return err;
}

static double now_s(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ---- synthesized records for processes that exist before recording (-p, -a) */

/* A synthesized record with the sample_id trailer the event's records carry (sample_id_all):
 * pid/tid, time 0 (before everything recorded), cpu 0, the first event's id. */
/* The sample_id trailer of the event's records (sample_id_all): pid/tid, time, cpu 0, the first
 * event's id; the record's size set. @return the record's size. */
static uint16_t put_trailer(const struct live *lv, uint8_t *rec, size_t len, int32_t pid, int32_t tid, uint64_t time)
{
	uint64_t z = 0;
	memcpy(rec + len, &pid, 4);
	memcpy(rec + len + 4, &tid, 4);
	memcpy(rec + len + 8, &time, 8);
	memcpy(rec + len + 16, &z, 8);
	memcpy(rec + len + 24, &lv->id0, 8);
	uint16_t sz = (uint16_t)(len + 32);
	memcpy(rec + 6, &sz, 2);
	return sz;
}

/* A synthesized record, at time 0 (before everything recorded), into the reader. */
static int push_synth(struct live *lv, uint8_t *rec, size_t len, int32_t pid, int32_t tid)
{
	return uw_reader_push(lv->r, rec, put_trailer(lv, rec, len, pid, tid, 0));
}

static int push_comm(struct live *lv, int32_t pid, int32_t tid, const char *comm)
{
	uint8_t rec[8 + 8 + 24 + 32];
	size_t cl = strnlen(comm, 15), size = (8 + 8 + cl + 1 + 7) & ~(size_t)7;
	memset(rec, 0, sizeof(rec));
	uint32_t type = PR_COMM;
	uint16_t misc = PM_USER, sz = (uint16_t)size;
	memcpy(rec, &type, 4);
	memcpy(rec + 4, &misc, 2);
	memcpy(rec + 6, &sz, 2);
	memcpy(rec + 8, &pid, 4);
	memcpy(rec + 12, &tid, 4);
	memcpy(rec + 16, comm, cl);
	return push_synth(lv, rec, size, pid, tid);
}

/* MMAP2 of a /proc/PID/maps line's executable mapping, as the kernel would have written it */
#define MMAP2_MAX (8 + 64 + 4096 + 32)

/* An MMAP2 record as the kernel writes it (without its trailer): with a build-id when there is
 * one, else device and inode. @return its size. */
static size_t mmap2_record(uint8_t *rec, int32_t pid, uint64_t start, uint64_t len, uint64_t pgoff, uint32_t maj,
                           uint32_t min, uint64_t ino, const uint8_t *bid, size_t blen, uint32_t prot, const char *path)
{
	size_t pl = strnlen(path, 4095), size = (8 + 64 + pl + 1 + 7) & ~(size_t)7;
	memset(rec, 0, size + 32);
	uint32_t type = PR_MMAP2, flags = MAP_PRIVATE;
	uint16_t misc = PM_USER | (blen ? PM_MMAP_BUILD_ID : 0);
	memcpy(rec, &type, 4);
	memcpy(rec + 4, &misc, 2);
	memcpy(rec + 8, &pid, 4);
	memcpy(rec + 12, &pid, 4);
	memcpy(rec + 16, &start, 8);
	memcpy(rec + 24, &len, 8);
	memcpy(rec + 32, &pgoff, 8);
	if (blen) {
		rec[40] = (uint8_t)UW_MIN(blen, (size_t)20);
		memcpy(rec + 44, bid, UW_MIN(blen, (size_t)20));
	} else {
		memcpy(rec + 40, &maj, 4);
		memcpy(rec + 44, &min, 4);
		memcpy(rec + 48, &ino, 8); /* then the inode generation, 0 */
	}
	memcpy(rec + 64, &prot, 4);
	memcpy(rec + 68, &flags, 4);
	memcpy(rec + 72, path, pl);
	return size;
}

static int push_mmap2(struct live *lv, int32_t pid, uint64_t start, uint64_t end, uint64_t pgoff, uint32_t maj,
                      uint32_t min, uint64_t ino, uint32_t prot, const char *path)
{
	uint8_t rec[MMAP2_MAX];
	size_t size = mmap2_record(rec, pid, start, end - start, pgoff, maj, min, ino, NULL, 0, prot, path);
	return push_synth(lv, rec, size, pid, pid);
}

/* The kernel's text as perf record describes it: an MMAP of "[kernel.kallsyms]_text" from _text
 * to _etext with pgoff = the address of _text (its relocation reference), and the running
 * kernel's build-id, so that perf and unwound name kernel frames. */
static int push_kernel_map(struct live *lv)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	if (!f)
		return 0;
	/* _text is among the first lines; the map reaches to the top of the address space, so
	 * module code is in it too (kallsyms names both). Reading no further matters: the kernel
	 * formats /proc/kallsyms as it is read, 40-70 ms for all of it. */
	unsigned long long text = 0, a;
	char type, name[256];
	for (int i = 0; i < 100000 && !text && fscanf(f, "%llx %c %255s%*[^\n]", &a, &type, name) == 3; i++)
		if (!strcmp(name, "_text"))
			text = a;
	fclose(f);
	unsigned long long etext = text ? ~0ull : 0;
	char hex[2 * ELFV_MAX_BUILD_ID + 1];
	if (running_kernel_build_id(hex))
		proc_note_build_id_hex(lv->t, "[kernel.kallsyms]", hex);
	if (!text || etext <= text)
		return 0; /* addresses hidden (kptr_restrict): kernel frames stay unnamed */
	uint8_t rec[8 + 32 + 24 + 32];
	const char *fn = "[kernel.kallsyms]_text";
	size_t fl = strlen(fn), size = (8 + 32 + fl + 1 + 7) & ~(size_t)7;
	memset(rec, 0, sizeof(rec));
	uint32_t type32 = PR_MMAP;
	uint16_t misc = PM_KERNEL;
	int32_t pid = -1, tid = 0;
	uint64_t len = etext - text, pgoff = text;
	memcpy(rec, &type32, 4);
	memcpy(rec + 4, &misc, 2);
	memcpy(rec + 8, &pid, 4);
	memcpy(rec + 12, &tid, 4);
	memcpy(rec + 16, &text, 8);
	memcpy(rec + 24, &len, 8);
	memcpy(rec + 32, &pgoff, 8);
	memcpy(rec + 40, fn, fl);
	return push_synth(lv, rec, size, pid, tid);
}

/* One process from /proc: its threads' names and its executable mappings. */
static int synthesize(struct live *lv, int32_t pid)
{
	char p[64], comm[64] = "";
	snprintf(p, sizeof(p), "/proc/%d/comm", pid);
	FILE *f = fopen(p, "re");
	if (!f)
		return 0; /* gone already */
	if (fgets(comm, sizeof(comm), f))
		comm[strcspn(comm, "\n")] = 0;
	fclose(f);
	int err = push_comm(lv, pid, pid, comm);
	/* every thread's name */
	snprintf(p, sizeof(p), "/proc/%d/task", pid);
	DIR *td = opendir(p);
	struct dirent *te;
	while (!err && td && (te = readdir(td))) {
		char *end;
		long tid = strtol(te->d_name, &end, 10);
		if (*end || tid <= 0 || tid == pid)
			continue;
		char tp[96], tc[64] = "";
		snprintf(tp, sizeof(tp), "/proc/%d/task/%ld/comm", pid, tid);
		FILE *tf = fopen(tp, "re");
		if (!tf)
			continue;
		if (fgets(tc, sizeof(tc), tf))
			tc[strcspn(tc, "\n")] = 0;
		fclose(tf);
		err = push_comm(lv, pid, (int32_t)tid, tc);
	}
	if (td)
		closedir(td);
	snprintf(p, sizeof(p), "/proc/%d/maps", pid);
	f = fopen(p, "re");
	if (!f)
		return err;
	char line[4096 + 256];
	struct proc_maps_line ml;
	while (!err && fgets(line, sizeof(line), f)) {
		if (!proc_maps_parse(line, &ml) || !ml.exec)
			continue;
		uint32_t prot = (ml.read ? PROT_READ : 0) | (ml.write ? PROT_WRITE : 0) | PROT_EXEC;
		err = push_mmap2(lv, pid, ml.start, ml.end, ml.pgoff, ml.maj, ml.min, ml.ino, prot, ml.path);
	}
	fclose(f);
	return err;
}

static int synthesize_all(struct live *lv, const int *pids, size_t npids, bool all)
{
	int err = 0;
	if (!all) {
		for (size_t i = 0; i < npids && !err; i++)
			err = synthesize(lv, pids[i]);
		return err;
	}
	DIR *d = opendir("/proc");
	if (!d)
		return -errno;
	struct dirent *e;
	while (!err && (e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		err = synthesize(lv, (int32_t)pid);
	}
	closedir(d);
	return err;
}

/* A mapping the tracker found on demand: an MMAP2 into the output (not into the reader, which
 * has it), at the time of the sample that needed it. */
static void on_new_map(void *ctx, int32_t pid, uint64_t start, uint64_t len, uint64_t pgoff, uint32_t maj, uint32_t min,
                       uint64_t ino, const char *path, const uint8_t *bid, size_t blen, uint64_t time)
{
	struct live *lv = ctx;
	uint8_t rec[MMAP2_MAX];
	size_t size = mmap2_record(rec, pid, start, len, pgoff, maj, min, ino, bid, blen, PROT_READ | PROT_EXEC, path);
	cc_sink_record(lv->sink, rec, put_trailer(lv, rec, size, pid, pid, time == UINT64_MAX ? 0 : time));
}

/* ---- events */

struct evspec {
	uint32_t type;
	uint64_t config;
	const char *name;
};

static bool parse_event(const char *name, struct evspec *e)
{
	static const struct evspec known[] = {
		{ 0, 0, "cycles" },        /* PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES */
		{ 0, 1, "instructions" },
		{ 1, 0, "cpu-clock" },     /* PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK */
		{ 1, 1, "task-clock" },
		{ 1, 2, "page-faults" },
	};
	for (size_t i = 0; i < UW_ARRAY_SIZE(known); i++)
		if (!strcmp(name, known[i].name)) {
			*e = known[i];
			return true;
		}
	return false;
}

/* How the events of one recording are opened. */
struct evconf {
	struct evspec ev;
	const struct uw_record_opts *o;
	bool user_only;         /* the kernel may not be sampled (perf_event_paranoid 2) */
};

static void attr_init(struct kattr *a, const struct evconf *ec, bool sideband, bool task)
{
	const struct uw_record_opts *o = ec->o;
	memset(a, 0, sizeof(*a));
	a->type = ec->ev.type;
	a->size = sizeof(*a);
	a->config = ec->ev.config;
	if (o->period) {
		a->sample_period_or_freq = o->period;
	} else {
		a->sample_period_or_freq = o->freq;
		a->flags |= BIT(A_FREQ);
	}
	a->sample_type = PS_IDENTIFIER | PS_IP | PS_TID | PS_TIME | PS_CPU | PS_PERIOD | PS_CALLCHAIN;
	a->flags |= BIT(A_DISABLED) | BIT(A_SAMPLE_ID_ALL) | BIT(A_USE_CLOCKID) | BIT(A_WATERMARK);
	if (o->call_graph == UW_CALL_GRAPH_DWARF) {
		/* the kernel's part of the callchain only: the user part is ours */
		a->sample_type |= PS_REGS_USER | PS_STACK_USER;
		a->flags |= BIT(A_EXCL_CALLCHAIN_USER);
		a->sample_regs_user = unw_x86_64_perf_mask();
		a->sample_stack_user = o->stack_size;
	}
	if (task)
		a->flags |= BIT(A_INHERIT);
	if (ec->user_only)
		a->flags |= BIT(5) | BIT(6); /* exclude_kernel, exclude_hv */
	if (o->argv)
		a->flags |= BIT(A_ENABLE_ON_EXEC);
	if (sideband)
		a->flags |= BIT(A_MMAP) | BIT(A_MMAP2) | BIT(A_COMM) | BIT(A_COMM_EXEC) | BIT(A_TASK) | BIT(A_BUILD_ID);
	a->clockid = CLOCK_MONOTONIC;
	a->wakeup = 0; /* with watermark: bytes; 0 means half the buffer */
}

/* Is CPU c one the recording uses (-C)? */
static bool cpu_wanted(const struct uw_record_opts *o, int c)
{
	if (!o->ncpus)
		return true;
	for (size_t i = 0; i < o->ncpus; i++)
		if (o->cpus[i] == c)
			return true;
	return false;
}

static int open_ring(struct live *lv, struct kattr *a, pid_t pid, int cpu, size_t pages)
{
	long fd = sys_perf_event_open(a, pid, cpu, -1, 8 /* PERF_FLAG_FD_CLOEXEC */);
	if (fd < 0)
		return -errno;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), len = (pages + 1) * pg;
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
	if (m == MAP_FAILED) {
		int e = -errno;
		close((int)fd);
		return e;
	}
	struct ring *nr = realloc(lv->rings, (lv->nrings + 1) * sizeof(*nr));
	if (!nr) {
		munmap(m, len);
		close((int)fd);
		return -ENOMEM;
	}
	lv->rings = nr;
	struct ring *rg = &lv->rings[lv->nrings++];
	rg->fd = (int)fd;
	rg->base = m;
	rg->data_size = pages * pg;
	rg->id = 0;
	if (ioctl((int)fd, PERF_EVENT_IOC_ID, &rg->id) < 0)
		rg->id = 0;
	return 0;
}

static void close_rings(struct live *lv)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	for (size_t i = 0; i < lv->nrings; i++) {
		munmap(lv->rings[i].base, lv->rings[i].data_size + pg);
		close(lv->rings[i].fd);
	}
	free(lv->rings);
	lv->rings = NULL;
	lv->nrings = 0;
}

/* The threads of a process, from /proc/PID/task. */
static int task_ids(int pid, int **out, size_t *n)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/task", pid);
	DIR *d = opendir(p);
	if (!d)
		return -errno;
	size_t cap = 16;
	*out = malloc(cap * sizeof(**out));
	*n = 0;
	struct dirent *e;
	while (*out && (e = readdir(d))) {
		char *end;
		long tid = strtol(e->d_name, &end, 10);
		if (*end || tid <= 0)
			continue;
		if (*n == cap) {
			int *nt = realloc(*out, 2 * cap * sizeof(*nt));
			if (!nt) {
				free(*out);
				*out = NULL;
				break;
			}
			*out = nt;
			cap *= 2;
		}
		(*out)[(*n)++] = (int)tid;
	}
	closedir(d);
	return *out ? 0 : -ENOMEM;
}

/* Events for a task on every CPU: the first of each task carries the side-band. */
static int open_task(struct live *lv, const struct evconf *ec, pid_t tid, int ncpu, size_t pages)
{
	for (int c = 0; c < ncpu; c++) {
		if (!cpu_wanted(ec->o, c))
			continue;
		struct kattr a;
		attr_init(&a, ec, true, true);
		int err = open_ring(lv, &a, tid, c, pages);
		if (err == -ENODEV || err == -EINVAL)
			continue; /* an offline CPU */
		if (err)
			return err;
	}
	return 0;
}

static uint64_t status_root(const struct uw_reader_stats *st)
{
	return st->stop_reasons[UW_STOP_END_OF_STACK];
}

static double cpu_self(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
	       (double)ru.ru_stime.tv_usec * 1e-6;
}

/* ---- the phases of a recording */

struct rec {
	struct uw_session *s;
	struct uw_record_opts o;
	struct evconf ec;
	bool ev_default;
	struct live lv;
	int ncpu;
	pid_t child;            /* the command, until reaped */
	int go[2];              /* the command waits on go[0] until the events exist */
	int execerr[2];         /* and writes its exec error to execerr[1] */
	int wstatus;            /* the command's wait status, -1 until reaped */
	int exec_errno;
	bool stopped_child;     /* the recorder ended the command */
	unsigned trims;
	double t0;
};

static int check_opts(struct rec *rc)
{
	struct uw_session *s = rc->s;
	struct uw_record_opts *o = &rc->o;
	if (!o->output)
		o->output = "perf.data";
	if (!o->freq && !o->period)
		o->freq = 999;
	if (!o->stack_size)
		o->stack_size = 16384;
	if (o->stack_size > 65528)
		return base_err(&s->log, -EINVAL, "the user stack size is at most 65528 bytes");
	o->stack_size &= ~7u;
	if (!o->mmap_pages)
		o->mmap_pages = 1024;
	if (o->mmap_pages & (o->mmap_pages - 1))
		return base_err(&s->log, -EINVAL, "ring buffer pages must be a power of two");
	if (o->call_graph != UW_CALL_GRAPH_DWARF && o->call_graph != UW_CALL_GRAPH_FP)
		return base_err(&s->log, -EINVAL, "unknown call-graph mode %d", o->call_graph);
	int targets = !!o->system_wide + !!o->npids + !!o->ntids + !!o->argv;
	if (targets != 1)
		return base_err(&s->log, -EINVAL, "give exactly one of: a command, -p PIDS, -t TIDS, -a");
	for (size_t i = 0; i < o->ncpus; i++)
		if (o->cpus[i] < 0 || o->cpus[i] >= rc->ncpu)
			return base_err(&s->log, -EINVAL, "CPU %d does not exist (this machine has 0-%d)", o->cpus[i],
					rc->ncpu - 1);
	rc->ev_default = !o->event;
	if (!parse_event(rc->ev_default ? "cycles" : o->event, &rc->ec.ev))
		return base_err(&s->log, -EINVAL, "unknown event '%s' (cycles, instructions, cpu-clock, task-clock, page-faults)",
				o->event);
	rc->ec.o = o;
	return 0;
}

/* The command, forked now: it waits on a pipe until its events exist, then execs; an exec that
 * fails sends its errno back through a pipe that a successful exec closes. */
static int fork_command(struct rec *rc)
{
	if (pipe2(rc->go, O_CLOEXEC) || pipe2(rc->execerr, O_CLOEXEC))
		return base_err(&rc->s->log, -errno, "pipe: %s", strerror(errno));
	rc->child = fork();
	if (rc->child < 0)
		return base_err(&rc->s->log, -errno, "fork: %s", strerror(errno));
	if (rc->child == 0) {
		char c;
		close(rc->go[1]);
		close(rc->execerr[0]);
		if (read(rc->go[0], &c, 1) != 1)
			_exit(127);
		/* the recording goes to standard output: the command's output goes to standard
		 * error, as perf does */
		if (c == 'p' && dup2(2, 1) < 0)
			_exit(127);
		/* the recorder's signal dispositions are not the command's */
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		execvp(rc->o.argv[0], rc->o.argv);
		int e = errno;
		if (write(rc->execerr[1], &e, sizeof(e)) != sizeof(e))
			_exit(127);
		_exit(127);
	}
	close(rc->go[0]);
	close(rc->execerr[1]);
	rc->go[0] = rc->execerr[1] = -1;
	return 0;
}

/* Opens every ring: per CPU for -a, per task and CPU otherwise; falls back to cpu-clock when the
 * default event has no hardware counter, and to user space when the kernel may not be sampled. */
static int open_events(struct rec *rc)
{
	struct uw_session *s = rc->s;
	const struct uw_record_opts *o = &rc->o;
	struct live *lv = &rc->lv;
	size_t pages = o->mmap_pages;
	int err = 0;
	/* processes and threads that are not there: said as such (not as a missing counter) */
	for (size_t i = 0; i < o->npids + o->ntids; i++) {
		int id = i < o->npids ? o->pids[i] : o->tids[i - o->npids];
		char p[64];
		snprintf(p, sizeof(p), "/proc/%d", id);
		if (access(p, F_OK))
			return base_err(&s->log, -ESRCH, "%s %d: no such %s", i < o->npids ? "process" : "thread", id,
					i < o->npids ? "process" : "thread");
	}
	for (int attempt = 0; attempt < 3; attempt++) {
		if (o->system_wide) {
			for (int c = 0; c < rc->ncpu && !err; c++) {
				if (!cpu_wanted(o, c))
					continue;
				struct kattr a;
				attr_init(&a, &rc->ec, true, false);
				err = open_ring(lv, &a, -1, c, pages);
				if (err == -ENODEV)
					err = 0;
			}
		} else if (o->argv) {
			err = open_task(lv, &rc->ec, rc->child, rc->ncpu, pages);
		} else {
			for (size_t i = 0; i < o->npids && !err; i++) {
				int *tids = NULL;
				size_t nt = 0;
				err = task_ids(o->pids[i], &tids, &nt);
				if (err)
					err = base_err(&s->log, err, "process %d: %s", o->pids[i], strerror(-err));
				for (size_t t = 0; t < nt && !err; t++)
					err = open_task(lv, &rc->ec, tids[t], rc->ncpu, pages);
				free(tids);
			}
			for (size_t i = 0; i < o->ntids && !err; i++)
				err = open_task(lv, &rc->ec, o->tids[i], rc->ncpu, pages);
		}
		/* no hardware counters (a VM): the default falls back to cpu-clock */
		if ((err == -ENOENT || err == -EOPNOTSUPP) && rc->ev_default && rc->ec.ev.type == 0) {
			close_rings(lv);
			parse_event("cpu-clock", &rc->ec.ev);
			err = 0;
			continue;
		}
		/* not allowed to sample the kernel (perf_event_paranoid 2): user space only, as perf
		 * does */
		if ((err == -EACCES || err == -EPERM) && !rc->ec.user_only && !o->system_wide) {
			close_rings(lv);
			rc->ec.user_only = true;
			base_log(&s->log, UW_LOG_WARN, "kernel samples excluded: kernel.perf_event_paranoid does not allow them "
				 "('sysctl -w kernel.perf_event_paranoid=1' does)");
			err = 0;
			continue;
		}
		break;
	}
	if (err == -EACCES || err == -EPERM)
		return permission_error(s, err);
	if (err)
		return base_err(&s->log, err, "perf_event_open (%s): %s", rc->ec.ev.name, strerror(-err));
	if (!lv->nrings)
		return base_err(&s->log, -ENODEV, "no events could be opened on the CPUs asked for");
	return 0;
}

/* Is the output our standard output ("-", /dev/stdout, a path to the same pipe)? */
static bool output_is_stdout(const char *path)
{
	struct stat a, b;
	return !strcmp(path, "-") || (stat(path, &a) == 0 && fstat(1, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino &&
				       !S_ISREG(a.st_mode));
}

/* Lets the command exec. @return 0, or -errno when it could not be executed. */
static int start_command(struct rec *rc)
{
	if (write(rc->go[1], output_is_stdout(rc->o.output) ? "p" : "x", 1) != 1)
		return base_err(&rc->s->log, -errno, "starting the command: %s", strerror(errno));
	close(rc->go[1]);
	rc->go[1] = -1;
	int e = 0;
	ssize_t n;
	while ((n = read(rc->execerr[0], &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close(rc->execerr[0]);
	rc->execerr[0] = -1;
	if (n == (ssize_t)sizeof(e) && e) {
		rc->exec_errno = e;
		return base_err(&rc->s->log, -e, "%s: %s", rc->o.argv[0], strerror(e));
	}
	return 0;
}

/* The output and the reader that feeds it, with the machine's features, then the event as
 * opened with every ring's id. */
static int create_output(struct rec *rc)
{
	struct uw_session *s = rc->s;
	struct live *lv = &rc->lv;
	int err = cc_sink_new(s, rc->o.output, &lv->sink);
	if (err)
		return err;
	UW_OPTS(uw_tracker_opts, to, .live = 1);
	lv->t = uw_tracker_new(s, &to);
	if (!lv->t)
		return -ENOMEM;
	/* the mappings it finds on demand go into the output too */
	tracker_on_new_map(lv->t, on_new_map, lv);
	UW_OPTS(uw_reader_opts, ro, .on_sample = cc_sink_on_sample, .ctx = lv->sink, .tracker = lv->t);
	lv->r = uw_reader_new(s, &ro);
	lv->tmp = malloc(1u << 16);
	if (!lv->r || !lv->tmp)
		return -ENOMEM;
	cc_sink_attach(lv->sink, lv->r);
	perf_host_features(cc_sink_writer(lv->sink), rc->o.cmd_argc, rc->o.cmd_argv, CLOCK_MONOTONIC);
	struct kattr a;
	attr_init(&a, &rc->ec, true, !rc->o.system_wide);
	uint64_t *ids = malloc(lv->nrings * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	for (size_t i = 0; i < lv->nrings; i++)
		ids[i] = lv->rings[i].id;
	err = uw_reader_add_event(lv->r, &a, sizeof(a), ids, lv->nrings, NULL);
	free(ids);
	lv->id0 = lv->nrings ? lv->rings[0].id : 0;
	return err;
}

/* Processes that already run: their names and mappings, before anything they do next; for -t
 * only the threads' names: their mappings are asked for when a pc needs one (PROCMAP_QUERY, or
 * a /proc/PID/maps scan on kernels before 6.11). */
static int synthesize_existing(struct rec *rc)
{
	struct live *lv = &rc->lv;
	const struct uw_record_opts *o = &rc->o;
	int err = push_kernel_map(lv);
	if (!err && (o->system_wide || o->npids))
		err = synthesize_all(lv, o->pids, o->npids, o->system_wide);
	for (size_t i = 0; i < o->ntids && !err; i++) {
		char p[64], comm[64] = "";
		int32_t pid = o->tids[i];
		snprintf(p, sizeof(p), "/proc/%d/status", o->tids[i]);
		FILE *f = fopen(p, "re");
		char line[256];
		while (f && fgets(line, sizeof(line), f)) {
			if (!strncmp(line, "Name:", 5))
				sscanf(line + 5, " %63[^\n]", comm);
			else if (!strncmp(line, "Tgid:", 5))
				pid = (int32_t)strtol(line + 5, NULL, 10);
		}
		if (f)
			fclose(f);
		err = push_comm(lv, pid, o->tids[i], comm);
	}
	return err;
}

static void report_status(struct rec *rc, double now, uint64_t bytes_out, struct uw_record_status *st)
{
	struct uw_reader_stats rs = { .sz = sizeof(rs) };
	if (rc->lv.r)
		uw_reader_stats(rc->lv.r, &rs);
	memset(st, 0, sizeof(*st));
	st->sz = sizeof(*st);
	st->samples = rs.samples_delivered;
	st->samples_root = status_root(&rs);
	st->samples_no_user = rs.samples_no_user;
	st->lost = rc->lv.lost;
	st->throttled = rc->lv.throttled;
	st->bytes_out = bytes_out;
	struct uw_tracker_stats ts = { .sz = sizeof(ts) };
	if (rc->lv.t)
		uw_tracker_stats(rc->lv.t, &ts);
	st->procmap_query = ts.procmap_queries;
	st->maps_scan = ts.maps_scans;
	st->elapsed = now - rc->t0;
	st->cpu_self = cpu_self();
	st->workload_wstatus = rc->wstatus;
	st->workload_errno = rc->exec_errno;
	st->workload_stopped = rc->stopped_child;
}

/* Reads the rings until the command exits, *stop is set or the duration has passed; the file's
 * data size is brought up to date once a second. */
static int record_loop(struct rec *rc)
{
	struct live *lv = &rc->lv;
	const struct uw_record_opts *o = &rc->o;
	struct pollfd *pfd = calloc(lv->nrings ? lv->nrings : 1, sizeof(*pfd));
	if (!pfd)
		return -ENOMEM;
	for (size_t i = 0; i < lv->nrings; i++)
		pfd[i] = (struct pollfd){ lv->rings[i].fd, POLLIN, 0 };
	double last_status = rc->t0;
	int err = 0;
	while (!err) {
		int pr = poll(pfd, lv->nrings, 100);
		if (pr < 0 && errno != EINTR) {
			err = -errno;
			break;
		}
		err = drain_all(lv);
		double now = now_s(CLOCK_MONOTONIC);
		if (rc->child > 0 && waitpid(rc->child, &rc->wstatus, WNOHANG) == rc->child)
			rc->child = -1; /* reaped */
		bool stop = (o->argv && rc->child < 0) || (o->stop && *o->stop) ||
			    (o->duration > 0 && now - rc->t0 >= o->duration);
		if (now - last_status >= 1.0 || stop) {
			last_status = now;
			/* what processes and modules that came and went freed goes back to the system:
			 * a recorder's memory follows what runs, not what ran */
			if (++rc->trims % 10 == 0)
				malloc_trim(0);
			if (!err)
				err = cc_sink_sync(lv->sink);
			if (o->on_status) {
				struct uw_record_status st;
				report_status(rc, now, 0, &st);
				o->on_status(o->ctx, &st);
			}
		}
		if (stop)
			break;
	}
	free(pfd);
	return err;
}

/* The command, if it still runs, is ended (SIGTERM, or SIGKILL when recording failed) and
 * reaped. */
static void end_command(struct rec *rc, bool failed)
{
	if (rc->child <= 0)
		return;
	if (waitpid(rc->child, &rc->wstatus, WNOHANG) == 0) {
		kill(rc->child, failed ? SIGKILL : SIGTERM);
		rc->stopped_child = !failed;
		waitpid(rc->child, &rc->wstatus, 0);
	}
	rc->child = -1;
}

UW_API int uw_record(struct uw_session *s, const struct uw_record_opts *opts, struct uw_record_status *final)
{
	struct rec rc = { .s = s, .child = -1, .go = { -1, -1 }, .execerr = { -1, -1 }, .wstatus = -1 };
	if (!s || base_opts_copy(&rc.o, sizeof(rc.o), opts))
		return -EINVAL;
	rc.ncpu = ncpus();
	rc.lv.s = s;
	base_errmsg_clear(&s->log); /* what goes wrong below says why */
	int err = check_opts(&rc);
	if (err)
		return err;
	if (rc.o.argv)
		err = fork_command(&rc);
	if (!err)
		err = open_events(&rc);
	if (!err && rc.o.argv)
		err = start_command(&rc);
	if (!err)
		err = create_output(&rc);
	if (!err)
		err = synthesize_existing(&rc);
	if (!err) {
		for (size_t i = 0; i < rc.lv.nrings; i++)
			ioctl(rc.lv.rings[i].fd, PERF_EVENT_IOC_ENABLE, 0);
		rc.t0 = now_s(CLOCK_MONOTONIC);
		err = record_loop(&rc);
		for (size_t i = 0; i < rc.lv.nrings; i++)
			ioctl(rc.lv.rings[i].fd, PERF_EVENT_IOC_DISABLE, 0);
	}
	if (err == -UW_ECANCELED && cc_sink_error(rc.lv.sink))
		err = cc_sink_error(rc.lv.sink); /* the writing failed (said): disk full, ... */
	else if (err && !base_errmsg(&s->log)[0])
		base_err(&s->log, err, "recording: %s", uw_strerror(err));
	/* a command that outlived the recording, or could not be recorded, is not left running */
	end_command(&rc, err != 0);
	if (!err)
		err = drain_all(&rc.lv);
	if (!err)
		err = uw_reader_flush(rc.lv.r);
	if (!err)
		err = cc_sink_finish(rc.lv.sink);
	struct uw_inject_stats is = { .sz = sizeof(is) };
	if (final && final->sz >= sizeof(size_t)) {
		struct uw_record_status st;
		cc_sink_free(rc.lv.sink, &is);
		rc.lv.sink = NULL;
		report_status(&rc, now_s(CLOCK_MONOTONIC), is.bytes_out, &st);
		size_t sz = final->sz;
		memcpy(final, &st, UW_MIN(sz, sizeof(st)));
		final->sz = sz;
	}
	for (int i = 0; i < 2; i++) {
		if (rc.go[i] >= 0)
			close(rc.go[i]);
		if (rc.execerr[i] >= 0)
			close(rc.execerr[i]);
	}
	close_rings(&rc.lv);
	cc_sink_free(rc.lv.sink, NULL);
	uw_reader_free(rc.lv.r);
	uw_tracker_free(rc.lv.t);
	free(rc.lv.tmp);
	return err;
}
