/* SPDX-License-Identifier: MIT */
/* Live recording: ring buffers, mapped per event and drained into the reader (live.h). */
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

#include "perf/live/live.h"
#include "unwind/unwind.h"

int live_event_open(struct kattr *a, pid_t pid, int cpu)
{
	long fd = syscall(SYS_perf_event_open, a, pid, cpu, -1, 8 /* PERF_FLAG_FD_CLOEXEC */);
	return fd < 0 ? -errno : (int)fd;
}

/* Is id a sampling event's of an entry writing into entry bi's buffer? */
static bool buffer_has_id(const struct live *lv, size_t bi, uint64_t id)
{
	if (live_ring_has_id(&lv->rings[bi], id))
		return true;
	for (size_t i = 0; i < lv->nrings; i++)
		if (lv->rings[i].out == (ssize_t)bi && live_ring_has_id(&lv->rings[i], id))
			return true;
	return false;
}

static int drain(struct live *lv, size_t bi)
{
	struct ring *rg = &lv->rings[bi];
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
		} else if (type == PR_SAMPLE && lv->nsw && size >= 16) {
			/* (--off-cpu: the other event writing here is the switch event; a switch-out
			 * sample in the ring is one whose stack the kernel copied, where the program was
			 * not attached) */
			uint64_t id;
			memcpy(&id, rec + 8, 8);
			if (!(rg->pid != -1 ? buffer_has_id(lv, bi, id) : live_ring_has_id(rg, id)))
				lv->sw_copied++;
		}
		/* (waits timed in the kernel: per-CPU rings, the side-band of the followed processes
		 * only) */
		if (lv->oc_filter && !live_sideband_wanted(lv, rec, size)) {
			tail += size;
			continue;
		}
		if (lv->kunw)
			live_kunw_read(lv->kunw, rec, size);
		err = uw_reader_push(lv->r, rec, size);
		tail += size;
	}
	__atomic_store_n((uint64_t *)(rg->base + MP_DATA_TAIL), tail, __ATOMIC_RELEASE);
	return err;
}

int live_drain_all(struct live *lv)
{
	int err = 0;
	for (size_t i = 0; i < lv->nrings && !err; i++)
		if (lv->rings[i].base)
			err = drain(lv, i);
	if (!err)
		err = uw_reader_round(lv->r);
	return err;
}

/* The entry whose buffer a task's event on CPU cpu writes into: the first task's there (-1:
 * none yet, or not a task's event). */
static ssize_t cpu_buffer(const struct live *lv, pid_t pid, int cpu)
{
	if (pid == -1 || cpu < 0)
		return -1; /* (-a: one event per CPU already) */
	for (size_t i = 0; i < lv->nrings; i++) {
		const struct ring *rg = &lv->rings[i];
		if (rg->cpu == cpu && rg->pid != -1 && rg->out < 0 && rg->base && rg->fd >= 0)
			return (ssize_t)i;
	}
	return -1;
}

static int add_entry(struct live *lv, int fd, uint8_t *base, size_t data_size, pid_t pid, int cpu, ssize_t out)
{
	struct ring *nr = realloc(lv->rings, (lv->nrings + 1) * sizeof(*nr));
	if (!nr)
		return -ENOMEM;
	lv->rings = nr;
	struct ring *rg = &lv->rings[lv->nrings++];
	rg->fd = fd;
	rg->base = base;
	rg->data_size = data_size;
	rg->pid = pid;
	rg->cpu = cpu;
	rg->out = out;
	rg->users = 1;
	rg->id = 0;
	if (ioctl(fd, PERF_EVENT_IOC_ID, &rg->id) < 0)
		rg->id = 0;
	rg->nx = 0;
	return 0;
}

int live_open_ring(struct live *lv, struct kattr *a, pid_t pid, int cpu, size_t pages)
{
	int fd = live_event_open(a, pid, cpu);
	if (fd < 0)
		return fd;
	/* a task's event: into the buffer of the first task's on this CPU (it and the tasks that
	 * inherit it; the kernel allows one buffer for several tasks' events bound to a CPU) */
	ssize_t to = cpu_buffer(lv, pid, cpu);
	if (to >= 0) {
		if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, lv->rings[to].fd) < 0) {
			int e = -errno;
			close(fd);
			return e;
		}
		int err = add_entry(lv, fd, NULL, 0, pid, cpu, to);
		if (err)
			close(fd);
		else
			lv->rings[to].users++;
		return err;
	}
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), len = (pages + 1) * pg;
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
	if (m == MAP_FAILED) {
		int e = -errno;
		close((int)fd);
		return e;
	}
	int err = add_entry(lv, fd, m, pages * pg, pid, cpu, -1);
	if (err) {
		munmap(m, len);
		close(fd);
	}
	return err;
}

int live_open_events(struct live *lv, const struct evconf *ec, pid_t pid, int cpu, size_t pages, bool task)
{
	struct kattr a;
	live_attr_init(&a, ec, 0, true, task);
	lv->failed_ev = 0;
	int err = live_open_ring(lv, &a, pid, cpu, pages);
	if (err)
		return err;
	struct ring *rg = &lv->rings[lv->nrings - 1];
	for (unsigned k = 1; k < ec->nev && k < LIVE_MAX_EVENTS; k++) {
		live_attr_init(&a, ec, k, false, task);
		lv->failed_ev = k;
		int fd = live_event_open(&a, pid, cpu);
		if (fd < 0)
			return fd; /* (the ring and the events so far closed with the others) */
		rg->xfd[rg->nx] = fd;
		rg->xid[rg->nx] = 0;
		rg->nx++;
		if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, rg->fd) < 0 || ioctl(fd, PERF_EVENT_IOC_ID, &rg->xid[rg->nx - 1]) < 0)
			return -errno;
	}
	return 0;
}

bool live_ring_has_id(const struct ring *rg, uint64_t id)
{
	if (id == rg->id)
		return true;
	for (unsigned k = 0; k < rg->nx; k++)
		if (rg->xid[k] == id)
			return true;
	return false;
}

void live_enable_events(struct live *lv, unsigned long req)
{
	for (size_t i = 0; i < lv->nrings; i++) {
		const struct ring *rg = &lv->rings[i];
		if (rg->fd < 0)
			continue;
		ioctl(rg->fd, req, 0);
		for (unsigned k = 0; k < rg->nx; k++)
			if (rg->xfd[k] >= 0)
				ioctl(rg->xfd[k], req, 0);
	}
	live_enable_offcpu(lv, req);
}

void live_close_ring(struct live *lv, size_t i)
{
	struct ring *rg = &lv->rings[i];
	if (rg->fd < 0)
		return;
	/* (the events writing into it first) */
	for (unsigned k = 0; k < rg->nx; k++)
		if (rg->xfd[k] >= 0) {
			close(rg->xfd[k]);
			rg->xfd[k] = -1;
		}
	close(rg->fd);
	rg->fd = -1; /* (poll skips it) */
	/* the buffer it wrote into, once no other task's event writes there (the first task's
	 * fd closed before the others': its mapping keeps the buffer) */
	struct ring *b = rg->out >= 0 ? &lv->rings[rg->out] : rg;
	if (b->users && --b->users == 0 && b->base) {
		munmap(b->base, b->data_size + (size_t)sysconf(_SC_PAGESIZE));
		b->base = NULL;
	}
}

void live_close_rings(struct live *lv)
{
	for (size_t i = 0; i < lv->nrings; i++)
		live_close_ring(lv, i);
	free(lv->rings);
	lv->rings = NULL;
	lv->nrings = 0;
}

/* The threads of a process, from /proc/PID/task. */
