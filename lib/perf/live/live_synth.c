/* SPDX-License-Identifier: MIT */
/* Live recording: records synthesized for what existed before it began (live.h). */
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

/* LOST_SAMPLES for the samples lost in all (the rings' and kernel unwinding's program's), at
 * the end of the recording. perf record 6.0+ writes one from each event's lost count
 * (PERF_FORMAT_LOST) and perf report then takes the loss from these records alone ("Total Lost
 * Samples"; the kernel's LOST records are its "lost chunks"), as unwound's reader does: the
 * samples a full BPF ring dropped, which no LOST record tells of, are counted there too. */
int live_push_lost_samples(struct live *lv, uint64_t lost, uint64_t time)
{
	uint8_t rec[16 + 32];
	memset(rec, 0, sizeof(rec));
	uint32_t type = PR_LOST_SAMPLES;
	memcpy(rec, &type, 4);
	memcpy(rec + 8, &lost, 8);
	return uw_reader_push(lv->r, rec, put_trailer(lv, rec, 16, 0, 0, time));
}

int live_push_comm(struct live *lv, int32_t pid, int32_t tid, const char *comm)
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
int live_push_kernel_map(struct live *lv)
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
	if (ksym_running_build_id(hex))
		tracker_note_build_id_hex(lv->t, "[kernel.kallsyms]", hex);
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
	int err = live_push_comm(lv, pid, pid, comm);
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
		err = live_push_comm(lv, pid, (int32_t)tid, tc);
	}
	if (td)
		closedir(td);
	snprintf(p, sizeof(p), "/proc/%d/maps", pid);
	f = fopen(p, "re");
	if (!f)
		return err;
	char line[4096 + 256];
	struct tracker_maps_line ml;
	while (!err && fgets(line, sizeof(line), f)) {
		if (!tracker_maps_parse(line, &ml) || !ml.exec)
			continue;
		uint32_t prot = (ml.read ? PROT_READ : 0) | (ml.write ? PROT_WRITE : 0) | PROT_EXEC;
		err = push_mmap2(lv, pid, ml.start, ml.end, ml.pgoff, ml.maj, ml.min, ml.ino, prot, ml.path);
	}
	fclose(f);
	return err;
}

/* The process a thread belongs to (its Tgid): -p given a thread's id records its whole process,
 * whose samples carry the process's id. */
int32_t live_tgid_of(int32_t tid)
{
	char p[64], line[256];
	snprintf(p, sizeof(p), "/proc/%d/status", tid);
	FILE *f = fopen(p, "re");
	int32_t pid = tid;
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "Tgid:", 5)) {
			pid = (int32_t)strtol(line + 5, NULL, 10);
			break;
		}
	if (f)
		fclose(f);
	return pid > 0 ? pid : tid;
}

int live_synthesize_all(struct live *lv, const int *pids, size_t npids, bool all)
{
	int err = 0;
	if (!all) {
		for (size_t i = 0; i < npids && !err; i++)
			err = synthesize(lv, live_tgid_of(pids[i]));
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
void live_on_new_map(void *ctx, int32_t pid, uint64_t start, uint64_t len, uint64_t pgoff, uint32_t maj, uint32_t min,
                       uint64_t ino, const char *path, const uint8_t *bid, size_t blen, uint64_t time)
{
	struct live *lv = ctx;
	uint8_t rec[MMAP2_MAX];
	size_t size = mmap2_record(rec, pid, start, len, pgoff, maj, min, ino, bid, blen, PROT_READ | PROT_EXEC, path);
	cc_sink_record(lv->sink, rec, put_trailer(lv, rec, size, pid, pid, time == UINT64_MAX ? 0 : time));
}

