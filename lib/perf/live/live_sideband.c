/* SPDX-License-Identifier: MIT */
/*
 * The side-band records of the processes followed, when the events are opened per CPU (waits
 * timed in the kernel with a command, -p or -t: lib/kernel/kunw_wait.bpf.h): a record read from
 * a ring is kept when its process is followed, learnt from the FORK records as they are read and,
 * for a process the records have not told of yet, asked of the program's map (its fork hook
 * marked the process before it ran). live_ring.c asks as it reads; live_offcpu.c names the
 * targets. Its own file so that the ring's reading does not call up into the off-CPU setup.
 */
#include <string.h>

#include "perf/live/live.h"
#include "perf/perf_format.h"
#ifdef UW_HAVE_KERNEL_UNWIND
#include "kernel/kunw.h"
#endif

enum { OC_PROC_WANTED = 1, OC_PROC_OTHER = 2 };

static void oc_proc_put(struct live *lv, uint32_t pid, bool wanted)
{
	/* (without memory: asked of the program again next time) */
	(void)base_map_put(&lv->oc_procs, pid, (void *)(uintptr_t)(wanted ? OC_PROC_WANTED : OC_PROC_OTHER));
}

void live_sideband_follow(struct live *lv, uint32_t pid)
{
	oc_proc_put(lv, pid, true);
}

#ifdef UW_HAVE_KERNEL_UNWIND
static bool oc_proc(struct live *lv, uint32_t pid, bool *known)
{
	uintptr_t v = (uintptr_t)base_map_get(&lv->oc_procs, pid);
	*known = v != 0;
	return v == OC_PROC_WANTED;
}

bool live_sideband_wanted(struct live *lv, const uint8_t *rec, uint32_t len)
{
	uint32_t type, pid, ppid;
	if (!lv->oc_filter || len < 16)
		return true;
	memcpy(&type, rec, 4);
	memcpy(&pid, rec + 8, 4);
	bool known;
	switch (type) {
	case PR_FORK:
		/* FORK: pid, ppid, tid, ptid. A new process is followed as its parent is (before
		 * the program's fork hook has said so, which comes after the record) */
		memcpy(&ppid, rec + 12, 4);
		if (pid != ppid) {
			bool w = oc_proc(lv, ppid, &known);
			if (!known) {
				struct kunw *k = live_kunw_handle(lv->kunw);
				w = k && kunw_wait_sideband(k, ppid) > 0;
				oc_proc_put(lv, ppid, w);
			}
			oc_proc_put(lv, pid, w);
			if (!w)
				lv->oc_dropped++;
			return w;
		}
		break;
	case PR_MMAP:
	case PR_MMAP2:
	case PR_COMM:
	case PR_EXIT:
	case PR_NAMESPACES:
		if (pid == UINT32_MAX)
			return true; /* the kernel's */
		break;
	default:
		return true;
	}
	bool w = oc_proc(lv, pid, &known);
	if (!known) {
		/* (a process's records read before its FORK, from another CPU's ring: the program
		 * marked it at its fork, before it ran) */
		struct kunw *k = live_kunw_handle(lv->kunw);
		int r = k ? kunw_wait_sideband(k, pid) : 0;
		w = r > 0;
		if (r >= 0)
			oc_proc_put(lv, pid, w);
	}
	if (!w)
		lv->oc_dropped++;
	return w;
}
#else
bool live_sideband_wanted(struct live *lv, const uint8_t *rec, uint32_t len)
{
	(void)lv;
	(void)rec;
	(void)len;
	return true;
}
#endif
