/* SPDX-License-Identifier: MIT */
/*
 * The feature sections perf record writes about the machine it runs on, in perf's layouts
 * (tools/perf/util/header.c: write_cpudesc, write_cpu_topology, write_numa_topology,
 * write_pmu_mappings, write_cache, write_mem_topology, write_clock_data, ...), read from
 * /proc and sysfs as perf reads them, so `perf report --header` shows the same for a file of
 * unwound record as for one of perf record. A feature whose source cannot be read is left out,
 * as perf leaves it out.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "perf/perf.h"

#define SYS_CPU "/sys/devices/system/cpu"
#define SYS_NODE "/sys/devices/system/node"
#define SYS_PMU "/sys/bus/event_source/devices"
#define MAX_LIST 64     /* distinct sibling lists, caches, nodes kept */

/* A small sysfs or procfs file's first line, without its newline. @return false if unreadable. */
static bool read_line(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	bool ok = fgets(buf, (int)cap, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = 0;
	return ok;
}

static bool read_u64(const char *path, int base, uint64_t *v)
{
	char buf[64], *end;
	if (!read_line(path, buf, sizeof(buf)))
		return false;
	errno = 0;
	*v = strtoull(buf, &end, base);
	return !errno && end != buf;
}

/* The largest number in a list such as "0-3,8" plus one; 0 when there is none. */
static unsigned list_span(const char *list)
{
	unsigned max = 0;
	const char *p = list;
	for (;;) {
		char *end;
		unsigned long a = strtoul(p, &end, 10), b = a;
		if (end == p)
			break;
		if (*end == '-')
			b = strtoul(end + 1, &end, 10);
		if (b < (1u << 20) && b + 1 > max)
			max = (unsigned)b + 1;
		if (*end != ',')
			break;
		p = end + 1;
	}
	return max;
}

/* "model name" of /proc/cpuinfo with runs of blanks squashed (CPUDESC); the vendor, family,
 * model and stepping (CPUID, as perf's x86 get_cpuid prints them). */
static void cpuinfo(struct perf_writer *w)
{
	FILE *f = fopen("/proc/cpuinfo", "re");
	if (!f)
		return;
	char line[1024], desc[256] = "", vendor[64] = "";
	long family = -1, model = -1, stepping = -1;
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '\n')
			break; /* the first CPU's block */
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		char *val = colon + 1 + (colon[1] == ' ');
		val[strcspn(val, "\n")] = 0;
		if (!strncmp(line, "model name", 10)) {
			size_t n = 0;
			for (const char *p = val; *p && n + 1 < sizeof(desc); p++) {
				if (isspace((unsigned char)*p) && (n == 0 || desc[n - 1] == ' '))
					continue;
				desc[n++] = isspace((unsigned char)*p) ? ' ' : *p;
			}
			desc[n] = 0;
		} else if (!strncmp(line, "vendor_id", 9)) {
			snprintf(vendor, sizeof(vendor), "%s", val);
		} else if (!strncmp(line, "cpu family", 10)) {
			family = strtol(val, NULL, 10);
		} else if (!strncmp(line, "model\t", 6) || !strncmp(line, "model ", 6)) {
			model = strtol(val, NULL, 10);
		} else if (!strncmp(line, "stepping", 8)) {
			stepping = strtol(val, NULL, 10);
		}
	}
	fclose(f);
	struct perf_feat *ft;
	if (desc[0] && (ft = perf_writer_feature(w, FEAT_CPUDESC)))
		perf_feat_str(ft, desc);
	if (vendor[0] && family >= 0 && model >= 0 && stepping >= 0 && (ft = perf_writer_feature(w, FEAT_CPUID))) {
		char id[128];
		snprintf(id, sizeof(id), "%s,%ld,%ld,%ld", vendor, family, model, stepping);
		perf_feat_str(ft, id);
	}
}

static void total_mem(struct perf_writer *w)
{
	FILE *f = fopen("/proc/meminfo", "re");
	if (!f)
		return;
	char line[256];
	unsigned long long kb;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "MemTotal: %llu", &kb) == 1) {
			struct perf_feat *ft = perf_writer_feature(w, FEAT_TOTAL_MEM);
			if (ft)
				perf_feat_u64(ft, kb);
			break;
		}
	}
	fclose(f);
}

/* Adds s to the distinct strings of v (at most MAX_LIST). */
static void add_distinct(char v[][64], unsigned *n, const char *s)
{
	for (unsigned i = 0; i < *n; i++)
		if (!strcmp(v[i], s))
			return;
	if (*n < MAX_LIST)
		snprintf(v[(*n)++], 64, "%s", s);
}

/* CPU_TOPOLOGY: the distinct package and core sibling lists of the online CPUs, each CPU's core
 * and socket id, then the die lists and die ids. */
static void cpu_topology(struct perf_writer *w, unsigned ncpu)
{
	char online[256], path[PATH_MAX], buf[64];
	if (!read_line(SYS_CPU "/online", online, sizeof(online)))
		return;
	static char pk[MAX_LIST][64], core[MAX_LIST][64], die[MAX_LIST][64];
	unsigned npk = 0, ncore = 0, ndie = 0;
	bool has_die = true;
	for (unsigned c = 0; c < ncpu; c++) {
		snprintf(path, sizeof(path), SYS_CPU "/cpu%u/topology/package_cpus_list", c);
		if (!read_line(path, buf, sizeof(buf))) {
			snprintf(path, sizeof(path), SYS_CPU "/cpu%u/topology/core_siblings_list", c);
			if (!read_line(path, buf, sizeof(buf)))
				continue; /* offline */
		}
		add_distinct(pk, &npk, buf);
		snprintf(path, sizeof(path), SYS_CPU "/cpu%u/topology/die_cpus_list", c);
		if (read_line(path, buf, sizeof(buf)))
			add_distinct(die, &ndie, buf);
		else
			has_die = false;
		snprintf(path, sizeof(path), SYS_CPU "/cpu%u/topology/core_cpus_list", c);
		if (!read_line(path, buf, sizeof(buf))) {
			snprintf(path, sizeof(path), SYS_CPU "/cpu%u/topology/thread_siblings_list", c);
			if (!read_line(path, buf, sizeof(buf)))
				continue;
		}
		add_distinct(core, &ncore, buf);
	}
	if (!npk)
		return;
	struct perf_feat *f = perf_writer_feature(w, FEAT_CPU_TOPOLOGY);
	if (!f)
		return;
	perf_feat_u32(f, npk);
	for (unsigned i = 0; i < npk; i++)
		perf_feat_str(f, pk[i]);
	perf_feat_u32(f, ncore);
	for (unsigned i = 0; i < ncore; i++)
		perf_feat_str(f, core[i]);
	for (unsigned c = 0; c < ncpu; c++) {
		uint64_t core_id = (uint64_t)-1, socket_id = (uint64_t)-1;
		snprintf(path, sizeof(path), SYS_CPU "/cpu%u/topology/core_id", c);
		read_u64(path, 10, &core_id);
		snprintf(path, sizeof(path), SYS_CPU "/cpu%u/topology/physical_package_id", c);
		read_u64(path, 10, &socket_id);
		perf_feat_u32(f, (uint32_t)core_id);
		perf_feat_u32(f, (uint32_t)socket_id);
	}
	if (!has_die || !ndie)
		return;
	perf_feat_u32(f, ndie);
	for (unsigned i = 0; i < ndie; i++)
		perf_feat_str(f, die[i]);
	for (unsigned c = 0; c < ncpu; c++) {
		uint64_t die_id = (uint64_t)-1;
		snprintf(path, sizeof(path), SYS_CPU "/cpu%u/topology/die_id", c);
		read_u64(path, 10, &die_id);
		perf_feat_u32(f, (uint32_t)die_id);
	}
}

/* The numbers in a list such as "0,2-3", into v (at most cap). */
static unsigned list_items(const char *list, unsigned *v, unsigned cap)
{
	unsigned n = 0;
	for (const char *p = list; *p && n < cap;) {
		char *end;
		unsigned long a = strtoul(p, &end, 10), b = a;
		if (end == p)
			break;
		if (*end == '-')
			b = strtoul(end + 1, &end, 10);
		for (unsigned long x = a; x <= b && n < cap; x++)
			v[n++] = (unsigned)x;
		if (*end != ',')
			break;
		p = end + 1;
	}
	return n;
}

/* NUMA_TOPOLOGY: per online node its id, memory total and free (kB) and its CPU list. */
static void numa_topology(struct perf_writer *w)
{
	char online[256], path[PATH_MAX], line[256], cpus[256];
	unsigned nodes[MAX_LIST];
	if (!read_line(SYS_NODE "/online", online, sizeof(online)))
		return;
	unsigned nn = list_items(online, nodes, MAX_LIST);
	if (!nn)
		return;
	struct perf_feat *f = perf_writer_feature(w, FEAT_NUMA_TOPOLOGY);
	if (!f)
		return;
	perf_feat_u32(f, nn);
	for (unsigned i = 0; i < nn; i++) {
		unsigned long long total = 0, mfree = 0, v;
		snprintf(path, sizeof(path), SYS_NODE "/node%u/meminfo", nodes[i]);
		FILE *mf = fopen(path, "re");
		while (mf && fgets(line, sizeof(line), mf)) {
			unsigned node;
			char key[64];
			if (sscanf(line, "Node %u %63s %llu", &node, key, &v) != 3)
				continue;
			if (!strcmp(key, "MemTotal:"))
				total = v;
			else if (!strcmp(key, "MemFree:"))
				mfree = v;
		}
		if (mf)
			fclose(mf);
		snprintf(path, sizeof(path), SYS_NODE "/node%u/cpulist", nodes[i]);
		if (!read_line(path, cpus, sizeof(cpus)))
			cpus[0] = 0;
		perf_feat_u32(f, nodes[i]);
		perf_feat_u64(f, total);
		perf_feat_u64(f, mfree);
		perf_feat_str(f, cpus);
	}
}

/* PMU_MAPPINGS: every PMU's type and name, in directory order (perf's scan order). */
static void pmu_mappings(struct perf_writer *w)
{
	DIR *d = opendir(SYS_PMU);
	if (!d)
		return;
	struct {
		uint32_t type;
		char name[64];
	} v[MAX_LIST];
	unsigned n = 0;
	struct dirent *e;
	char path[PATH_MAX];
	while (n < MAX_LIST && (e = readdir(d))) {
		uint64_t type;
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), SYS_PMU "/%s/type", e->d_name);
		if (!read_u64(path, 10, &type))
			continue;
		v[n].type = (uint32_t)type;
		snprintf(v[n].name, sizeof(v[n].name), "%.63s", e->d_name);
		n++;
	}
	closedir(d);
	struct perf_feat *f = perf_writer_feature(w, FEAT_PMU_MAPPINGS);
	if (!f)
		return;
	perf_feat_u32(f, n);
	for (unsigned i = 0; i < n; i++) {
		perf_feat_u32(f, v[i].type);
		perf_feat_str(f, v[i].name);
	}
}

/* A PMU's capabilities (its caps/ directory): u32 count, then name and value strings.
 * @return the count (0: none, nothing written). */
static unsigned pmu_caps(struct perf_feat *f, const char *pmu, bool write)
{
	char path[PATH_MAX], val[256];
	snprintf(path, sizeof(path), SYS_PMU "/%s/caps", pmu);
	DIR *d = opendir(path);
	if (!d)
		return 0;
	struct dirent *e;
	unsigned n = 0;
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1) {
			if (!write || !n)
				break;
			perf_feat_u32(f, n);
			rewinddir(d);
		}
		while ((e = readdir(d))) {
			char file[PATH_MAX + 256];
			if (e->d_name[0] == '.')
				continue;
			snprintf(file, sizeof(file), "%s/%s", path, e->d_name);
			if (!read_line(file, val, sizeof(val)))
				continue;
			if (pass == 0) {
				n++;
			} else {
				perf_feat_str(f, e->d_name);
				perf_feat_str(f, val);
			}
		}
	}
	closedir(d);
	return n;
}

/* CPU_PMU_CAPS (the "cpu" PMU's, when it has any) and PMU_CAPS (the other PMUs', each followed
 * by its name). */
static void caps(struct perf_writer *w)
{
	struct perf_feat *f;
	if (pmu_caps(NULL, "cpu", false) && (f = perf_writer_feature(w, FEAT_CPU_PMU_CAPS)))
		pmu_caps(f, "cpu", true);
	DIR *d = opendir(SYS_PMU);
	if (!d)
		return;
	char names[MAX_LIST][64];
	unsigned n = 0;
	struct dirent *e;
	while (n < MAX_LIST && (e = readdir(d)))
		if (e->d_name[0] != '.' && strcmp(e->d_name, "cpu") && pmu_caps(NULL, e->d_name, false))
			snprintf(names[n++], 64, "%.63s", e->d_name);
	closedir(d);
	if (!(f = perf_writer_feature(w, FEAT_PMU_CAPS)))
		return;
	perf_feat_u32(f, n);
	for (unsigned i = 0; i < n; i++) {
		pmu_caps(f, names[i], true);
		perf_feat_str(f, names[i]);
	}
}

struct cache_level {
	uint32_t level, line, sets, ways;
	char type[32], size[32], map[64];
};

/* CACHE: version 1, then the distinct caches of all CPUs, by level. */
static void cache(struct perf_writer *w, unsigned ncpu)
{
	static struct cache_level v[MAX_LIST];
	unsigned n = 0;
	char path[PATH_MAX], file[PATH_MAX + 32];
	for (unsigned c = 0; c < ncpu && n < MAX_LIST; c++) {
		for (unsigned k = 0; k < 10 && n < MAX_LIST; k++) {
			struct cache_level cl;
			uint64_t x;
			snprintf(path, sizeof(path), SYS_CPU "/cpu%u/cache/index%u", c, k);
			snprintf(file, sizeof(file), "%s/level", path);
			if (!read_u64(file, 10, &x))
				break;
			cl.level = (uint32_t)x;
			snprintf(file, sizeof(file), "%s/coherency_line_size", path);
			cl.line = read_u64(file, 10, &x) ? (uint32_t)x : 0;
			snprintf(file, sizeof(file), "%s/number_of_sets", path);
			cl.sets = read_u64(file, 10, &x) ? (uint32_t)x : 0;
			snprintf(file, sizeof(file), "%s/ways_of_associativity", path);
			cl.ways = read_u64(file, 10, &x) ? (uint32_t)x : 0;
			snprintf(file, sizeof(file), "%s/type", path);
			bool ok = read_line(file, cl.type, sizeof(cl.type));
			snprintf(file, sizeof(file), "%s/size", path);
			ok = ok && read_line(file, cl.size, sizeof(cl.size));
			snprintf(file, sizeof(file), "%s/shared_cpu_list", path);
			ok = ok && read_line(file, cl.map, sizeof(cl.map));
			if (!ok)
				return; /* perf gives up on the feature too */
			bool seen = false;
			for (unsigned i = 0; i < n && !seen; i++)
				seen = v[i].level == cl.level && v[i].line == cl.line && v[i].sets == cl.sets &&
				       v[i].ways == cl.ways && !strcmp(v[i].type, cl.type) && !strcmp(v[i].size, cl.size) &&
				       !strcmp(v[i].map, cl.map);
			if (!seen)
				v[n++] = cl;
		}
	}
	if (!n)
		return;
	/* by level, keeping the order found within a level */
	for (unsigned i = 1; i < n; i++) {
		struct cache_level t = v[i];
		unsigned j = i;
		for (; j > 0 && v[j - 1].level > t.level; j--)
			v[j] = v[j - 1];
		v[j] = t;
	}
	struct perf_feat *f = perf_writer_feature(w, FEAT_CACHE);
	if (!f)
		return;
	perf_feat_u32(f, 1);
	perf_feat_u32(f, n);
	for (unsigned i = 0; i < n; i++) {
		perf_feat_u32(f, v[i].level);
		perf_feat_u32(f, v[i].line);
		perf_feat_u32(f, v[i].sets);
		perf_feat_u32(f, v[i].ways);
		perf_feat_str(f, v[i].type);
		perf_feat_str(f, v[i].size);
		perf_feat_str(f, v[i].map);
	}
}

/* MEM_TOPOLOGY: version 1, the memory block size, then per node its id and a bitmap of its
 * memory blocks (u64 bits, then the words). */
static void mem_topology(struct perf_writer *w)
{
	uint64_t bsize;
	char online[256];
	unsigned nodes[MAX_LIST];
	if (!read_u64("/sys/devices/system/memory/block_size_bytes", 16, &bsize) ||
	    !read_line(SYS_NODE "/online", online, sizeof(online)))
		return;
	unsigned nn = list_items(online, nodes, MAX_LIST);
	struct perf_feat *f = nn ? perf_writer_feature(w, FEAT_MEM_TOPOLOGY) : NULL;
	if (!f)
		return;
	perf_feat_u64(f, 1);
	perf_feat_u64(f, bsize);
	perf_feat_u64(f, nn);
	for (unsigned i = 0; i < nn; i++) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), SYS_NODE "/node%u", nodes[i]);
		uint64_t *bits = NULL, nbits = 0;
		for (int pass = 0; pass < 2; pass++) {
			DIR *d = opendir(path);
			struct dirent *e;
			while (d && (e = readdir(d))) {
				unsigned blk;
				if (sscanf(e->d_name, "memory%u", &blk) != 1 || blk >= 1u << 24)
					continue;
				if (pass == 0 && blk + 1 > nbits)
					nbits = blk + 1;
				else if (pass == 1 && bits)
					bits[blk / 64] |= 1ull << (blk % 64);
			}
			if (d)
				closedir(d);
			if (pass == 0)
				bits = calloc((nbits + 63) / 64 + 1, 8);
		}
		perf_feat_u64(f, nodes[i]);
		perf_feat_u64(f, nbits);
		perf_feat_u64(f, nbits);
		perf_feat_bytes(f, bits, bits ? 8 * ((nbits + 63) / 64) : 0);
		free(bits);
	}
}

static uint64_t clock_ns(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

void perf_host_features(struct perf_writer *w, int argc, const char *const *argv, int clockid)
{
	struct utsname u;
	struct perf_feat *f;
	if (uname(&u) == 0) {
		if ((f = perf_writer_feature(w, FEAT_HOSTNAME)))
			perf_feat_str(f, u.nodename);
		if ((f = perf_writer_feature(w, FEAT_OSRELEASE)))
			perf_feat_str(f, u.release);
		if ((f = perf_writer_feature(w, FEAT_ARCH)))
			perf_feat_str(f, u.machine);
	}
	char vers[32];
	snprintf(vers, sizeof(vers), "unwound %d.%d.%d", UW_VERSION_MAJOR, UW_VERSION_MINOR, UW_VERSION_PATCH);
	if ((f = perf_writer_feature(w, FEAT_VERSION)))
		perf_feat_str(f, vers);
	char present[256];
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned ncpu = read_line(SYS_CPU "/present", present, sizeof(present)) ? list_span(present) : 0;
	if (!ncpu)
		ncpu = online > 0 ? (unsigned)online : 1;
	if ((f = perf_writer_feature(w, FEAT_NRCPUS))) {
		perf_feat_u32(f, ncpu);
		perf_feat_u32(f, online > 0 ? (uint32_t)online : ncpu);
	}
	cpuinfo(w);
	total_mem(w);
	/* the command line: the program's path, then the arguments after it */
	if (argc > 0 && (f = perf_writer_feature(w, FEAT_CMDLINE))) {
		char exe[PATH_MAX];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		exe[n > 0 ? n : 0] = 0;
		perf_feat_u32(f, (uint32_t)argc + 1);
		perf_feat_str(f, exe[0] ? exe : "unwound");
		for (int i = 0; i < argc; i++)
			perf_feat_str(f, argv[i] ? argv[i] : "");
	}
	cpu_topology(w, ncpu);
	numa_topology(w);
	pmu_mappings(w);
	cache(w, ncpu);
	mem_topology(w);
	/* no BPF programs or BTF recorded: empty, as perf writes them without any */
	if ((f = perf_writer_feature(w, FEAT_BPF_PROG_INFO)))
		perf_feat_u32(f, 0);
	if ((f = perf_writer_feature(w, FEAT_BPF_BTF)))
		perf_feat_u32(f, 0);
	caps(w);
	if (clockid >= 0) {
		struct timespec res;
		if ((f = perf_writer_feature(w, FEAT_CLOCKID)) && clock_getres(clockid, &res) == 0)
			perf_feat_u64(f, (uint64_t)res.tv_sec * 1000000000u + (uint64_t)res.tv_nsec);
		if ((f = perf_writer_feature(w, FEAT_CLOCK_DATA))) {
			uint64_t tod = clock_ns(CLOCK_REALTIME), cl = clock_ns(clockid);
			perf_feat_u32(f, 1);
			perf_feat_u32(f, (uint32_t)clockid);
			perf_feat_u64(f, tod);
			perf_feat_u64(f, cl);
		}
	}
}
