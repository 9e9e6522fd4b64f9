/* SPDX-License-Identifier: MIT */
/*
 * The process's mappings as the collector's tracker knows them. The tracker is live: a pc in no
 * mapping it knows is asked of the kernel (PROCMAP_QUERY, else /proc/self/maps), so code that
 * dlopen loads is found when a sample first lands in it. What it must not do is keep a
 * mapping after the library was closed: another one loaded at the same address would be named
 * after the old. So:
 *  - dlclose is interposed (prof_dlclose.c): before the library goes, the caller waits (at most
 *    200 ms) for the collector to unwind what was sampled until then; after it, the mappings'
 *    generation moves on, and the collector forgets every mapping (a new tracker; modules, their
 *    tables and symbols stay in the session) before it unwinds a sample taken later;
 *  - for objects closed or opened some other way (a dlclose the interposer does not see: a
 *    library bound to another definition, or libunwound-prof loaded with dlopen, which
 *    interposes nothing), the collector compares dl_iterate_phdr's counts of objects added and
 *    removed (dlpi_adds, dlpi_subs) at each pass: a change moves the generation on too.
 * Neither runs in the signal handler (dl_iterate_phdr takes the loader's lock).
 *
 * Code mapped by hand (mmap of another file with MAP_FIXED over a library's code: no dlopen, no
 * dlclose, the loader's counts unchanged) is seen by neither: the tracker kept the mapping it
 * had learnt there and named the new code after the old file. So:
 *  - mmap is interposed (prof_mmap.c): a file mapped executable moves the generation on, as
 *    dlclose does;
 *  - for mappings made some other way (the system call itself, or libunwound-prof loaded with
 *    dlopen, which interposes nothing), the collector checks each unwound frame of a sample of
 *    the present generation against the kernel's mappings (iprof_maps_verify): the mapping now
 *    at its pc (PROCMAP_QUERY, else /proc/self/maps), asked once a pass for each, must be the
 *    module's file (its path, else its device and inode) at the frame's file offset. When it is
 *    not, the generation moves on, the mappings are forgotten and the sample is unwound again,
 *    against what the kernel says now; a frame that still does not match is left unnamed
 *    ("[unknown]"), never given the old file's name. (Samples taken before such a change but
 *    unwound after it are then named after the new file: the collector cannot tell when the
 *    program mapped it.)
 */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "prof/iprof.h"

struct dl_counts {
	unsigned long long adds, subs;
	bool known;
};

static int dl_cb(struct dl_phdr_info *info, size_t size, void *ctx)
{
	struct dl_counts *c = ctx;
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		c->adds = info->dlpi_adds;
		c->subs = info->dlpi_subs;
		c->known = true;
	}
	return 1; /* the counts are the same in every entry: one is enough */
}

void iprof_maps_check(struct uw_prof *p)
{
	/* (a pass: the kernel's mappings are asked again, from a file opened for it) */
	p->nvmas = 0;
	iprof_maps_close(p);
	struct dl_counts c = { 0, 0, false };
	dl_iterate_phdr(dl_cb, &c);
	if (!c.known)
		return;
	if (c.adds != p->dl_adds || c.subs != p->dl_subs) {
		p->dl_adds = c.adds;
		p->dl_subs = c.subs;
		atomic_fetch_add(&iprof_g.gen, 1);
	}
}

/* The tracker of this process, new: it knows the process (uw_tracker_comm) so that it asks the
 * kernel for the mappings of pcs it has not seen. */
int iprof_tracker_reset(struct uw_prof *p)
{
	UW_OPTS(uw_tracker_opts, to, .live = 1);
	struct uw_tracker *t = uw_tracker_new(p->s, &to);
	if (!t)
		return -errno;
	char comm[64] = "";
	int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, comm, sizeof(comm) - 1);
		close(fd);
		comm[n > 0 ? n : 0] = 0;
		comm[strcspn(comm, "\n")] = 0;
	}
	int e = uw_tracker_comm(t, (uint32_t)p->pid, (uint32_t)p->pid, comm, 0, 0);
	if (e) {
		uw_tracker_free(t);
		return e;
	}
	if (p->t) {
		uw_tracker_free(p->t);
		atomic_fetch_add(&p->map_resets, 1);
	}
	p->t = t;
	return 0;
}

/* ---- the frames' mappings against the kernel's */

/* include/uapi/linux/fs.h (Linux 6.11): 104 bytes */
struct iprof_procmap_query {
	uint64_t size, query_flags, query_addr, vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
	uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
	uint64_t vma_name_addr, build_id_addr;
};
_Static_assert(sizeof(struct iprof_procmap_query) == 104, "procmap_query");
#define IPROF_PROCMAP_QUERY 0xC0686611u /* _IOWR('f', 17, struct procmap_query) */

/* The kernel's mapping at pc into v (its name into name[cap]). @return 1 found, 0 none there,
 * -1 not known (the file cannot be read). */
static int kernel_vma(struct uw_prof *p, uint64_t pc, struct iprof_vma *v, char *name, size_t cap)
{
	/* (the program may close the descriptor, and open a file of its own at that number:
	 * not used, nor closed, then) */
	if (p->maps_fd > 0 && !base_fd_is(p->maps_fd, p->maps_dev, p->maps_ino))
		p->maps_fd = 0;
	if (p->maps_fd == 0) {
		p->maps_fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
		if (p->maps_fd == 0) { /* (0 is "not opened") */
			p->maps_fd = fcntl(0, F_DUPFD_CLOEXEC, 1);
			close(0);
		}
		if (p->maps_fd > 0 && !base_fd_identity(p->maps_fd, &p->maps_dev, &p->maps_ino)) {
			close(p->maps_fd);
			p->maps_fd = -1;
		}
	}
	if (p->maps_fd < 0)
		return -1;
	name[0] = 0;
	struct iprof_procmap_query q = { .size = sizeof(q), .query_addr = pc, .vma_name_size = (uint32_t)cap,
					 .vma_name_addr = (uint64_t)(uintptr_t)name };
	if (!p->maps_scan) {
		if (!ioctl(p->maps_fd, IPROF_PROCMAP_QUERY, &q)) {
			*v = (struct iprof_vma){ q.vma_start, q.vma_end, q.vma_offset, q.inode, q.dev_major, q.dev_minor, NULL, false };
			return 1;
		}
		if (errno == ENOENT)
			return 0;
		p->maps_scan = true; /* (before Linux 6.11: the text, read whole) */
	}
	FILE *f = fopen("/proc/self/maps", "re");
	if (!f)
		return -1;
	char line[4096 + 256];
	int found = 0;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long long s, e, off, ino;
		unsigned maj, min;
		int n = 0;
		if (sscanf(line, "%llx-%llx %*s %llx %x:%x %llu %n", &s, &e, &off, &maj, &min, &ino, &n) < 6 || pc < s ||
		    pc >= e)
			continue;
		*v = (struct iprof_vma){ s, e, off, ino, maj, min, NULL, false };
		line[strcspn(line, "\n")] = 0;
		snprintf(name, cap, "%s", line + n);
		found = 1;
	}
	fclose(f);
	return found;
}

/* Whether the kernel's mapping v, named name, is the module's file. */
static bool same_file(const struct uw_module *m, const struct iprof_vma *v, const char *name)
{
	const char *path = uw_module_path(m);
	if (!strcmp(path, name))
		return true;
	struct stat st;
	return !stat(path, &st) && st.st_ino == v->ino && major(st.st_dev) == v->maj && minor(st.st_dev) == v->min;
}

/* The pass's check of the mapping at frame f. @return false when it is not the frame's. */
static bool frame_ok(struct uw_prof *p, const struct uw_frame *f)
{
	const struct iprof_vma *v = NULL;
	for (unsigned i = 0; i < p->nvmas; i++)
		if (p->vmas[i].mod == f->module && p->vmas[i].start <= f->pc && f->pc < p->vmas[i].end) {
			v = &p->vmas[i];
			break;
		}
	if (!v) {
		struct iprof_vma k;
		char name[4096];
		int r = kernel_vma(p, f->pc, &k, name, sizeof(name));
		/* (not known, or nothing there now: unmapped since, no other file's code to misname) */
		if (r <= 0)
			return true;
		k.mod = f->module;
		k.ok = same_file(f->module, &k, name);
		if (p->nvmas == IPROF_NVMAS)
			p->nvmas = 0; /* (a pass over more mappings than that: asked again) */
		p->vmas[p->nvmas] = k;
		v = &p->vmas[p->nvmas++];
	}
	return v->ok && f->pc - v->start + v->off == f->map_addr;
}

bool iprof_maps_verify(struct uw_prof *p, struct uw_frame *frames, unsigned n, bool unname)
{
	bool ok = true;
	for (unsigned i = 0; i < n; i++) {
		if (!frames[i].module || frame_ok(p, &frames[i]))
			continue;
		ok = false;
		if (!unname)
			break;
		frames[i].module = NULL;
		frames[i].rel_pc = frames[i].pc;
		frames[i].map_addr = frames[i].pc;
	}
	return ok;
}

void iprof_maps_close(struct uw_prof *p)
{
	if (p->maps_fd > 0 && base_fd_is(p->maps_fd, p->maps_dev, p->maps_ino))
		close(p->maps_fd);
	p->maps_fd = 0;
}
