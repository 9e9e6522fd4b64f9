/* SPDX-License-Identifier: MIT */
/*
 * Live VMA sources: a mapping the events did not show (created before recording began, or a
 * record lost) asked of the kernel: PROCMAP_QUERY (Linux 6.11), else a /proc/PID/maps scan.
 * What is found is returned; the tracker maps it.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/file.h"
#include "process/tracker.h"

bool tracker_maps_parse(char *line, struct tracker_maps_line *out)
{
	unsigned long long start, end, pgoff, ino;
	unsigned maj, min;
	char perms[8];
	int n = 0;
	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &pgoff, &maj, &min, &ino, &n) < 7 ||
	    strlen(perms) < 3)
		return false;
	char *path = line + n;
	path[strcspn(path, "\n")] = 0;
	*out = (struct tracker_maps_line){ start, end, pgoff, ino, maj, min, perms[0] == 'r', perms[1] == 'w',
					perms[2] == 'x', *path ? path : "//anon" };
	return true;
}

_Static_assert(sizeof(struct { uint64_t a[9]; uint32_t b[4]; uint64_t c[2]; }) == 104, "procmap_query");
struct procmap_query { /* include/uapi/linux/fs.h, Linux 6.11 */
	uint64_t size, query_flags, query_addr, vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
	uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
	uint64_t vma_name_addr, build_id_addr;
};
#define PROCMAP_QUERY 0xC0686611u /* _IOWR('f', 17, struct procmap_query): 104 bytes */
#define PMQ_EXECUTABLE 0x04

static void maps_path(char *path, size_t n, int32_t pid, int32_t tid)
{
	if (tid)
		snprintf(path, n, "/proc/%d/task/%d/maps", (int)pid, (int)tid);
	else
		snprintf(path, n, "/proc/%d/maps", (int)pid);
}

/* Whether the maps file fd shows any mapping (it is empty when its task has no memory). */
static bool maps_nonempty(int fd)
{
	char c;
	ssize_t r;
	while ((r = read(fd, &c, 1)) < 0 && errno == EINTR)
		;
	return r == 1;
}

/* The maps of process pid: its own file, else, when that is empty, a live thread's (*tid). A
 * process whose main thread has exited (pthread_exit in main) lives on in its other threads,
 * but /proc/PID/maps shows the thread group leader's memory, which it has none of once exited:
 * the file is empty and PROCMAP_QUERY on it fails (ESRCH). A file opened while the leader had
 * its memory goes on showing it. @return the descriptor, or -1. */
static int maps_open(int32_t pid, int32_t *tid)
{
	char path[64];
	*tid = 0;
	maps_path(path, sizeof(path), pid, 0);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || maps_nonempty(fd))
		return fd;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		int32_t t = (int32_t)strtol(e->d_name, NULL, 10);
		if (t <= 0 || t == pid)
			continue;
		maps_path(path, sizeof(path), pid, t);
		int f = open(path, O_RDONLY | O_CLOEXEC);
		if (f >= 0 && maps_nonempty(f)) {
			close(fd);
			fd = f;
			*tid = t;
			break;
		}
		if (f >= 0)
			close(f);
	}
	if (d)
		closedir(d);
	return fd;
}

int tracker_vma_query(struct tracker_proc *p, uint64_t pc, struct tracker_vma *v)
{
	/* (in a process that profiles itself, the program may have closed the descriptor, and
	 * another file have its number: not used, nor closed, then) */
	if (p->maps_fd > 0 && !base_fd_is(p->maps_fd, p->maps_dev, p->maps_ino))
		p->maps_fd = 0;
	if (p->maps_fd == 0) {
		p->maps_fd = maps_open(p->pid, &p->maps_tid);
		if (p->maps_fd == 0) { /* never 0 here: keep 0 for "not opened" */
			close(p->maps_fd);
			p->maps_fd = -1;
		} else if (p->maps_fd > 0) {
			base_fd_identity(p->maps_fd, &p->maps_dev, &p->maps_ino);
		}
	}
	int32_t pid = p->pid;
	int *maps_fd = &p->maps_fd;
	memset(v, 0, offsetof(struct tracker_vma, name));
	v->name[0] = 0;
	struct procmap_query q = { sizeof(q), PMQ_EXECUTABLE, pc, 0, 0, 0, 0, 0, 0, 0, 0, sizeof(v->name), sizeof(v->bid),
				   (uint64_t)(uintptr_t)v->name, (uint64_t)(uintptr_t)v->bid };
	if (*maps_fd > 0 && ioctl(*maps_fd, PROCMAP_QUERY, &q) == 0) {
		v->start = q.vma_start;
		v->end = q.vma_end;
		v->pgoff = q.vma_offset;
		v->ino = q.inode;
		v->maj = q.dev_major;
		v->min = q.dev_minor;
		v->blen = q.build_id_size <= sizeof(v->bid) ? q.build_id_size : 0;
		if (!q.vma_name_size)
			snprintf(v->name, sizeof(v->name), "//anon");
		return q.vma_start <= pc && pc < q.vma_end ? TRACKER_VMA_QUERIED : 0;
	}
	if (*maps_fd <= 0 || errno == ENOENT)
		return 0;
	/* a kernel before 6.11: scan the maps text (the thread's whose file was opened) */
	char path[64];
	maps_path(path, sizeof(path), pid, p->maps_tid);
	FILE *f = fopen(path, "re");
	char line[4096 + 256];
	struct tracker_maps_line ml;
	bool found = false;
	while (f && !found && fgets(line, sizeof(line), f)) {
		if (!tracker_maps_parse(line, &ml) || pc < ml.start || pc >= ml.end || !ml.exec)
			continue;
		found = true;
		v->start = ml.start;
		v->end = ml.end;
		v->pgoff = ml.pgoff;
		v->ino = ml.ino;
		v->maj = ml.maj;
		v->min = ml.min;
		snprintf(v->name, sizeof(v->name), "%s", ml.path);
	}
	if (f)
		fclose(f);
	return found ? TRACKER_VMA_SCANNED : 0;
}
