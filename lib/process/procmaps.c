/* SPDX-License-Identifier: MIT */
/*
 * Live VMA sources: a mapping the events did not show (created before recording began, or a
 * record lost) asked of the kernel: PROCMAP_QUERY (Linux 6.11), else a /proc/PID/maps scan.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include <fcntl.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "process/process.h"

bool proc_maps_parse(char *line, struct proc_maps_line *out)
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
	*out = (struct proc_maps_line){ start, end, pgoff, ino, maj, min, perms[0] == 'r', perms[1] == 'w',
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

bool proc_ask_kernel(struct uw_tracker *t, struct proc *p, uint64_t pc, uint64_t time)
{
	uint64_t page = pc >> 12;
	for (unsigned i = 0; i < p->nmissed && i < UW_ARRAY_SIZE(p->missed); i++)
		if (p->missed[i] == page)
			return false;
	if (p->maps_fd == 0) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/maps", (int)p->pid);
		p->maps_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (p->maps_fd == 0) { /* never 0 here: keep 0 for "not opened" */
			close(p->maps_fd);
			p->maps_fd = -1;
		}
	}
	bool found = false;
	char name[4096];
	uint8_t bid[ELFV_MAX_BUILD_ID];
	struct procmap_query q = { sizeof(q), PMQ_EXECUTABLE, pc, 0, 0, 0, 0, 0, 0, 0, 0, sizeof(name), sizeof(bid),
				   (uint64_t)(uintptr_t)name, (uint64_t)(uintptr_t)bid };
	uint64_t start = 0, end = 0, off = 0, ino = 0;
	uint32_t maj = 0, min = 0;
	size_t blen = 0;
	if (p->maps_fd > 0 && ioctl(p->maps_fd, PROCMAP_QUERY, &q) == 0) {
		found = q.vma_start <= pc && pc < q.vma_end;
		start = q.vma_start;
		end = q.vma_end;
		off = q.vma_offset;
		ino = q.inode;
		maj = q.dev_major;
		min = q.dev_minor;
		blen = q.build_id_size <= sizeof(bid) ? q.build_id_size : 0;
		if (!q.vma_name_size)
			snprintf(name, sizeof(name), "//anon");
		if (found)
			t->st.procmap_queries++;
	} else if (p->maps_fd > 0 && errno != ENOENT) {
		/* a kernel before 6.11: scan the maps text */
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/maps", (int)p->pid);
		FILE *f = fopen(path, "re");
		char line[4096 + 256];
		struct proc_maps_line ml;
		while (f && !found && fgets(line, sizeof(line), f)) {
			if (!proc_maps_parse(line, &ml) || pc < ml.start || pc >= ml.end || !ml.exec)
				continue;
			found = true;
			start = ml.start;
			end = ml.end;
			off = ml.pgoff;
			ino = ml.ino;
			maj = ml.maj;
			min = ml.min;
			snprintf(name, sizeof(name), "%s", ml.path);
		}
		if (f)
			fclose(f);
		if (found)
			t->st.maps_scans++;
	}
	if (!found) {
		p->missed[p->nmissed++ % UW_ARRAY_SIZE(p->missed)] = page;
		return false;
	}
	char hex[2 * ELFV_MAX_BUILD_ID + 1] = "";
	if (blen)
		base_hex(bid, blen, hex);
	struct uw_module *m = module_get(t->s, name, strlen(name), hex, maj, min, ino);
	if (!m || proc_mmap(t, p->pid, start, end - start, off, PROT_READ | PROT_EXEC, m))
		return false;
	/* the recorder writes it out, so readers of its output know the mapping too */
	if (t->on_new_map)
		t->on_new_map(t->on_new_map_ctx, p->pid, start, end - start, off, maj, min, ino, name,
			      blen ? bid : NULL, blen, time);
	return true;
}

