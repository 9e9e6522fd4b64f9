/* SPDX-License-Identifier: MIT */
/*
 * jitdump files (perf's tools/perf/Documentation/jitdump-specification.txt): JITs such as V8
 * (--perf-prof), the JVM agent and CPython 3.12 write jit-PID.dump, a header then records, and
 * mmap it executable so that the recording holds an MMAP of it. Each CODE_LOAD names the code at
 * [code_addr, code_addr + code_size) from its timestamp on; CODE_MOVE moves it. A pc in JIT code
 * is named by the latest load at or before the sample's time (JIT code space is reused after
 * garbage collection), when the recording's clock is the dump's (perf record -k 1, CLOCK_MONOTONIC);
 * otherwise by the latest load. Each load is a module of its own, "jitted-PID-N.so" as perf
 * inject names them.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>

#include "symbolize/symbolize.h"

#define JD_MAGIC 0x4A695444u      /* "JiTD" */
#define JD_MAGIC_SWAPPED 0x4454694Au
#define JD_CODE_LOAD 0
#define JD_CODE_MOVE 1
#define JD_FLAG_ARCH_TIMESTAMP 1ull

struct jd_entry {
	uint64_t start, end, time, index;
	const char *name;      /* interned */
	struct uw_module *mod; /* made on first use */
};

struct jitdump {
	struct jd_entry *e;    /* sorted by start */
	size_t n;
	char *dir;             /* the dump's directory, where perf inject --jit writes its files */
	bool arch_time;        /* timestamps from the TSC: not comparable with the recording's */
	int32_t pid;
	uint32_t next_mod;
};

static int cmp_entry(const void *a, const void *b)
{
	const struct jd_entry *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->time < y->time ? -1 : x->time > y->time;
}

int jit_dump_parse(struct uw_session *s, const uint8_t *p, size_t size, struct jitdump **out)
{
	*out = NULL;
	struct base_cursor c = base_cursor(p, size);
	uint32_t magic = base_cur_u32(&c);
	if (magic == JD_MAGIC_SWAPPED)
		return -UW_EUNSUPP; /* written on a machine of the other byte order */
	if (magic != JD_MAGIC)
		return -UW_EMAGIC;
	base_cur_u32(&c); /* version */
	uint32_t hsize = base_cur_u32(&c);
	base_cur_u32(&c); /* elf_mach */
	base_cur_u32(&c);
	int32_t pid = base_cur_s32(&c);
	base_cur_u64(&c); /* timestamp */
	uint64_t flags = base_cur_u64(&c);
	if (c.bad || hsize < 40 || hsize > size)
		return -UW_EFORMAT;
	struct jitdump *jd = calloc(1, sizeof(*jd));
	if (!jd)
		return -ENOMEM;
	jd->pid = pid;
	jd->arch_time = flags & JD_FLAG_ARCH_TIMESTAMP;
	struct base_vec v = BASE_VEC_INIT(struct jd_entry);
	size_t off = hsize;
	int err = 0;
	while (size - off >= 16 && !err) {
		struct base_cursor r = base_cursor(p + off, size - off);
		uint32_t id = base_cur_u32(&r), total = base_cur_u32(&r);
		uint64_t time = base_cur_u64(&r);
		if (total < 16 || total > size - off)
			break; /* a record cut short: the JIT was still writing */
		r = base_cursor(p + off + 16, total - 16);
		if (id == JD_CODE_LOAD || id == JD_CODE_MOVE) {
			base_cur_u32(&r); /* pid */
			base_cur_u32(&r); /* tid */
			base_cur_u64(&r); /* vma */
			uint64_t addr = base_cur_u64(&r);
			if (id == JD_CODE_MOVE)
				addr = base_cur_u64(&r); /* the new address (old one first) */
			uint64_t csize = base_cur_u64(&r), index = base_cur_u64(&r);
			const char *name = NULL;
			if (id == JD_CODE_LOAD) {
				name = base_cur_str(&r);
			} else {
				/* a move keeps the name of the code it moves */
				for (size_t i = v.len; i-- > 0;) {
					struct jd_entry *e = base_vec_at(&v, i);
					if (e->index == index) {
						name = e->name;
						break;
					}
				}
			}
			if (!r.bad && name && csize && addr + csize > addr) {
				if (v.len >= session_side_cap(s) / 512) {
					err = -UW_ELIMIT;
					break;
				}
				struct jd_entry *e = base_vec_push(&v);
				const char *nm = id == JD_CODE_LOAD ? session_intern(s, name, strlen(name)) : name;
				if (!e || !nm) {
					err = -ENOMEM;
					break;
				}
				*e = (struct jd_entry){ addr, addr + csize, time, index, nm, NULL };
			}
		}
		off += total;
	}
	if (err) {
		base_vec_free(&v);
		free(jd);
		return err;
	}
	if (v.len > 1)
		qsort(v.data, v.len, sizeof(struct jd_entry), cmp_entry);
	jd->e = v.data;
	jd->n = v.len;
	*out = jd;
	return 0;
}

void jit_dump_free(struct jitdump *jd)
{
	if (!jd)
		return;
	free(jd->e);
	free(jd->dir);
	free(jd);
}

/* The load naming pc at time (UINT64_MAX: the latest). */
static struct jd_entry *jd_find(struct jitdump *jd, uint64_t pc, uint64_t time, bool timed)
{
	size_t lo = base_upper_bound(jd->e, jd->n, sizeof(*jd->e), offsetof(struct jd_entry, start), pc);
	struct jd_entry *best = NULL;
	/* overlapping loads (code space reused) sit before lo: look back a bounded way */
	for (size_t i = lo, k = 0; i-- > 0 && k < 256; k++) {
		struct jd_entry *e = &jd->e[i];
		if (pc >= e->end)
			continue;
		if (timed && e->time > time)
			continue;
		if (!best || e->time > best->time)
			best = e;
	}
	return best;
}

bool jit_dump_is_path(const char *path, size_t len)
{
	const char *b = path;
	for (size_t i = 0; i < len; i++)
		if (path[i] == '/')
			b = path + i + 1;
	size_t bl = len - (size_t)(b - path);
	if (bl < 10 || memcmp(b, "jit-", 4) != 0 || memcmp(b + bl - 5, ".dump", 5) != 0)
		return false;
	for (size_t i = 4; i < bl - 5; i++)
		if (b[i] < '0' || b[i] > '9')
			return false;
	return true;
}

struct jitdump *jit_dump_read(struct uw_session *s, const char *path, size_t len)
{
	char full[PATH_MAX];
	snprintf(full, sizeof(full), "%s%.*s", s->sysroot ? s->sysroot : "", (int)len, path);
	/* the process's file (in its directory, any it likes): not through a link, never a FIFO or
	 * device, under the side-file cap */
	uint64_t size = 0;
	int fd = base_open_file(full, BASE_OPEN_NOFOLLOW, session_side_cap(s), &size);
	int err = fd < 0 ? (fd == -EFBIG ? -UW_ELIMIT : fd) : 0;
	/* read, not mapped: the process that writes it may cut it short meanwhile (SIGBUS) */
	char *buf = NULL;
	size_t got = 0;
	if (!err)
		err = base_read_fd(fd, size, &buf, &got);
	if (fd >= 0)
		close(fd);
	if (!err && got == 0)
		err = -UW_ETRUNC;
	if (err) {
		if (base_resource_error(err))
			session_resource_fail(s, err, full);
		else
			base_log(&s->log, UW_LOG_WARN, "%s: %s: JIT code in this process stays unnamed", full, uw_strerror(err));
		free(buf);
		return NULL;
	}
	struct jitdump *jd = NULL;
	err = jit_dump_parse(s, (const uint8_t *)buf, got, &jd);
	free(buf);
	if (!err) {
		const char *sl = memrchr(path, '/', len);
		jd->dir = strndup(path, sl ? (size_t)(sl - path) : 0);
	}
	if (err)
		base_log(&s->log, UW_LOG_WARN, "%s: not a usable jitdump: %s", full, uw_strerror(err));
	else
		base_log(&s->log, UW_LOG_INFO, "%s: %zu JIT code loads", full, jd->n);
	return jd;
}

struct uw_module *jit_dump_find(struct uw_session *s, struct jitdump *jd, int32_t pid, uint64_t pc, uint64_t time,
                                bool timed)
{
	if (!jd || !jd->n)
		return NULL;
	struct jd_entry *e = jd_find(jd, pc, time, timed && !jd->arch_time && time != UINT64_MAX);
	if (!e)
		return NULL;
	if (!e->mod) {
		char name[PATH_MAX];
		int n = snprintf(name, sizeof(name), "%s%sjitted-%d-%llu.so", jd->dir ? jd->dir : "",
				 jd->dir && *jd->dir ? "/" : "", (int)pid, (unsigned long long)e->index);
		if (n < 0 || (size_t)n >= sizeof(name))
			return NULL;
		/* one module per load: the key holds the load's ordinal, so reused code space gives
		 * distinct modules */
		struct uw_module *m = module_get(s, name, (size_t)n, "", 0xffffffffu, (uint32_t)pid,
						 (uint64_t)(e - jd->e) + 1);
		struct sym_module *sm = m ? sym_module(s, m) : NULL;
		if (!sm)
			return NULL;
		pthread_mutex_lock(&m->mu); /* (made once, by the first tracker to need it) */
		if (!m->jit) {
			m->jit = true;
			m->jitdump = true;
			m->special = true;
			__atomic_store_n(&m->cfi_done, true, __ATOMIC_RELEASE); /* JIT code: frame pointers */
			base_arena_init(&sm->syms.arena, 256);
			struct sym *sy = malloc(sizeof(*sy));
			if (sy) {
				memset(sy, 0, sizeof(*sy));
				sy->start = e->start;
				sy->end = e->end;
				sy->name = e->name;
				sm->syms.syms = sy;
				sm->syms.n = 1;
				sm->syms.source = "jitdump";
			}
			__atomic_store_n(&sm->syms_done, true, __ATOMIC_RELEASE);
			module_set_opened(m, UW_MODULE_OK);
		}
		pthread_mutex_unlock(&m->mu);
		e->mod = m;
	}
	return e->mod;
}
