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
 */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stddef.h>
#include <string.h>
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
