/* SPDX-License-Identifier: MIT */
/*
 * The module cache: one struct uw_module per object file, keyed by build-id (else path, device
 * and inode), shared by every process. Files are opened on the first pc that hits them and
 * used only if their build-id agrees with the recording's.
 */
#include <dlfcn.h>
#include <elf.h>
#include <elfutils/debuginfod.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <lzma.h>
#include <sys/auxv.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "process/process.h"
#include "symbolize/dwp.h"

static bool is_special_path(const char *p, size_t n)
{
	if (n == 0 || p[0] == '[')
		return true; /* [vdso], [heap], [stack], [anon:...], [kernel.kallsyms] */
	static const char *const prefixes[] = { "//anon", "/dev/zero", "anon_inode:", "/memfd:",
						"/SYSV", "/dev/shm/", "/anon_hugepage" };
	for (size_t i = 0; i < UW_ARRAY_SIZE(prefixes); i++) {
		size_t l = strlen(prefixes[i]);
		if (n >= l && memcmp(p, prefixes[i], l) == 0)
			return true;
	}
	return p[0] != '/';
}

/* Modules by identity: a build-id, else path, device and inode. The map holds chains of the
 * modules whose keys hash alike; a module is the one asked for only when its whole identity is. */
static bool same_module(const struct uw_module *m, const char *path, size_t pathlen, const char *hex, uint32_t maj,
                        uint32_t min, uint64_t ino)
{
	/* (a module known by path keeps that identity when its file tells its build-id later) */
	if (!m->key_by_path)
		return hex[0] && strcmp(m->build_id, hex) == 0;
	return !hex[0] && strlen(m->path) == pathlen && memcmp(m->path, path, pathlen) == 0 && m->maj == maj &&
	       m->min == min && m->ino == ino;
}

struct uw_module *proc_module_get(struct uw_session *s, const char *path, size_t pathlen, const char *hex,
                                  uint32_t maj, uint32_t min, uint64_t ino)
{
	if (strlen(hex) > 2 * ELFV_MAX_BUILD_ID)
		return NULL;
	const char *ipath = proc_intern(s, path, pathlen);
	if (!ipath)
		return NULL;
	uint64_t key;
	if (hex[0])
		key = base_hash_bytes(hex, strlen(hex)) ^ 0x1; /* build-id identity */
	else
		key = base_hash_bytes(ipath, pathlen) ^ base_hash64(((uint64_t)maj << 32 | min) ^ base_hash64(ino));
	proc_lock(s);
	struct uw_module *head = base_map_get(&s->modules, key), *m;
	for (m = head; m; m = m->next_same_key)
		if (same_module(m, ipath, pathlen, hex, maj, min, ino))
			break;
	if (m || !(m = calloc(1, sizeof(*m)))) {
		proc_unlock(s);
		return m;
	}
	m->path = ipath;
	const char *slash = strrchr(ipath, '/');
	m->name = slash && slash[1] ? slash + 1 : ipath;
	snprintf(m->build_id, sizeof(m->build_id), "%s", hex);
	m->key = key;
	m->key_by_path = !hex[0];
	m->maj = maj;
	m->min = min;
	m->ino = ino;
	m->special = is_special_path(ipath, pathlen);
	base_map_init(&m->symcache);
	base_map_init(&m->inlcache);
	m->next_same_key = head;
	if (base_map_put(&s->modules, key, m)) {
		proc_unlock(s);
		free(m);
		return NULL;
	}
	proc_unlock(s);
	return m;
}

/* The module's chain (by key) without it. Under the session's lock. */
static void module_unchain(struct uw_session *s, struct uw_module *m)
{
	struct uw_module *head = base_map_get(&s->modules, m->key);
	if (head == m) {
		if (m->next_same_key)
			base_map_put(&s->modules, m->key, m->next_same_key);
		else
			base_map_del(&s->modules, m->key);
		return;
	}
	for (struct uw_module *x = head; x; x = x->next_same_key) {
		if (x->next_same_key == m) {
			x->next_same_key = m->next_same_key;
			return;
		}
	}
}

void proc_module_ref(struct uw_session *s, struct uw_module *m)
{
	proc_lock(s);
	if (m->refs++ == 0 && m->idle)
		proc_module_busy(s, m);
	proc_unlock(s);
}

void proc_module_unref(struct uw_session *s, struct uw_module *m)
{
	proc_lock(s);
	if (m->refs && --m->refs == 0 && s->evict_idle)
		proc_module_idle(s, m);
	proc_unlock(s);
}

void proc_module_hit(struct uw_module *m)
{
	/* (any thread: the first frame in it marks it; its build-id goes in what is written) */
	if (!__atomic_load_n(&m->hit, __ATOMIC_RELAXED))
		__atomic_store_n(&m->hit, true, __ATOMIC_RELAXED);
}

/* The session whose limits views get (set by the functions that open files) */
uint64_t proc_side_cap(const struct uw_session *s)
{
	return s && s->opts.max_side_file_bytes ? s->opts.max_side_file_bytes : SIDE_FILE_MAX;
}

static uint64_t view_cap(const struct uw_session *s)
{
	return s && s->opts.max_inflate_bytes ? s->opts.max_inflate_bytes : ELFV_MAX_INFLATE;
}

/* Files at paths a recording or a process names (the mapped path, a file next to it) may have
 * been replaced by a link since: those are opened without following one (UNTRUSTED); the debug
 * roots, perf's build-id cache (links by design) and /proc's magic links are followed. */
#define UNTRUSTED BASE_OPEN_NOFOLLOW

static bool try_open_w(struct uw_session *s, const char *path, unsigned flags, const char *want_bid,
                       struct elfv **out, bool *mismatch, int *why)
{
	struct elfv *v;
	int err = elfv_open(path, flags, &v);
	if (why)
		*why = err;
	if (err) {
		if (err == -ELOOP)
			base_log(&s->log, UW_LOG_WARN, "%s: a symbolic link where a recorded file was: not followed", path);
		return false;
	}
	v->max_inflate = view_cap(s);
	if (want_bid && want_bid[0]) {
		char hex[2 * ELFV_MAX_BUILD_ID + 1];
		elfv_build_id_hex(v, hex);
		if (strcmp(hex, want_bid) != 0) {
			if (mismatch)
				*mismatch = true;
			elfv_close(v);
			return false;
		}
	}
	*out = v;
	return true;
}

static bool try_open_f(struct uw_session *s, const char *path, unsigned flags, const char *want_bid,
                       struct elfv **out, bool *mismatch)
{
	return try_open_w(s, path, flags, want_bid, out, mismatch, NULL);
}

static bool try_open_s(struct uw_session *s, const char *path, const char *want_bid, struct elfv **out,
                       bool *mismatch)
{
	return try_open_w(s, path, 0, want_bid, out, mismatch, NULL);
}

static bool file_crc_matches(const char *path, unsigned flags, uint32_t want)
{
	uint64_t size;
	int fd = base_open_file(path, flags, 0, &size);
	if (fd < 0)
		return false;
	uint32_t crc = 0;
	const size_t cap = 1 << 16;
	unsigned char *buf = malloc(cap);
	ssize_t n = -1;
	if (buf)
		while ((n = read(fd, buf, cap)) > 0)
			crc = elfv_crc32(crc, buf, (size_t)n);
	free(buf);
	close(fd);
	return n == 0 && crc == want;
}

/* Separate debug files: by build-id in the standard and configured roots, then by
 * .gnu_debuglink next to the file, in .debug/, and under /usr/lib/debug (gdb's order). */
static void find_debug(struct uw_session *s, struct uw_module *m)
{
	char p[PATH_MAX];
	const char *bid = m->build_id;
	if (bid[0] && strlen(bid) > 2) {
		char roots[PATH_MAX * 2];
		snprintf(roots, sizeof(roots), "%s%s/usr/lib/debug", s->debug_dirs ? s->debug_dirs : "",
			 s->debug_dirs && *s->debug_dirs ? ":" : "");
		for (char *save = NULL, *dir = strtok_r(roots, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
			snprintf(p, sizeof(p), "%s/.build-id/%.2s/%s.debug", dir, bid, bid + 2);
			if (try_open_s(s, p, bid, &m->dbg, NULL))
				goto found;
		}
		if (s->buildid_dir) {
			snprintf(p, sizeof(p), "%s/.build-id/%.2s/%s/debug", s->buildid_dir, bid, bid + 2);
			if (try_open_s(s, p, bid, &m->dbg, NULL))
				goto found;
		}
	}
	if (m->elf && m->elf->debuglink && m->opened_path) {
		const char *link = m->elf->debuglink;
		if (strchr(link, '/'))
			return;
		char dir[PATH_MAX];
		snprintf(dir, sizeof(dir), "%s", m->opened_path);
		char *sl = strrchr(dir, '/');
		if (!sl)
			return;
		*sl = 0;
		static const char *const mids[][2] = { { "", "/" }, { "", "/.debug/" }, { "/usr/lib/debug", "/" } };
		for (size_t i = 0; i < UW_ARRAY_SIZE(mids); i++) {
			snprintf(p, sizeof(p), "%s%s%s%s", mids[i][0], dir, mids[i][1], link);
			if (strcmp(p, m->opened_path) == 0)
				continue;
			struct elfv *v;
			unsigned fl = i < 2 ? UNTRUSTED : 0; /* beside the file, or under /usr/lib/debug */
			if (access(p, R_OK) || !file_crc_matches(p, fl, m->elf->debuglink_crc))
				continue;
			if (try_open_f(s, p, fl, bid[0] ? bid : NULL, &v, NULL)) {
				m->dbg = v;
				goto found;
			}
		}
		/* the debug file of that name in the search directories */
		for (const char *f = proc_search_next(s, link, NULL); f; f = proc_search_next(s, link, f)) {
			struct elfv *v;
			if (strcmp(f, m->opened_path) == 0 || !file_crc_matches(f, 0, m->elf->debuglink_crc))
				continue;
			if (try_open_s(s, f, bid[0] ? bid : NULL, &v, NULL)) {
				m->dbg = v;
				snprintf(p, sizeof(p), "%s", f);
				goto found;
			}
		}
	}
	return;
found:
	m->dbg_path = proc_intern(s, p, strlen(p));
}

/* A copy of this process's own vdso image: the running kernel's vdso. */
static int own_vdso(struct elfv **out)
{
	const uint8_t *img = (const uint8_t *)getauxval(AT_SYSINFO_EHDR);
	if (!img || memcmp(img, ELFMAG, SELFMAG) != 0 || img[EI_CLASS] != ELFCLASS64)
		return -ENOENT;
	Elf64_Ehdr eh;
	memcpy(&eh, img, sizeof(eh));
	/* the image spans its loaded segments and its section headers */
	uint64_t size = eh.e_shoff + (uint64_t)eh.e_shnum * eh.e_shentsize;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		memcpy(&ph, img + eh.e_phoff + (uint64_t)i * eh.e_phentsize, sizeof(ph));
		if (ph.p_type == PT_LOAD && ph.p_offset + ph.p_filesz > size)
			size = ph.p_offset + ph.p_filesz;
	}
	if (size < sizeof(eh) || size > (1u << 20))
		return -UW_EFORMAT;
	void *copy = malloc(size);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, img, size);
	return elfv_adopt_mem(copy, size, out);
}

/* [vdso]: from perf's build-id cache, else the running kernel's when the build-ids agree. */
static bool open_vdso(struct uw_session *s, struct uw_module *m)
{
	char p[PATH_MAX];
	const char *bid = m->build_id;
	if (bid[0] && s->buildid_dir && strlen(bid) > 2) {
		snprintf(p, sizeof(p), "%s/.build-id/%.2s/%s/elf", s->buildid_dir, bid, bid + 2);
		if (try_open_s(s, p, bid, &m->elf, NULL)) {
			m->opened_path = proc_intern(s, p, strlen(p));
			return true;
		}
	}
	struct elfv *v;
	if (own_vdso(&v))
		return false;
	char hex[2 * ELFV_MAX_BUILD_ID + 1];
	elfv_build_id_hex(v, hex);
	if (bid[0] && strcmp(hex, bid) != 0) {
		elfv_close(v);
		return false;
	}
	if (!bid[0])
		memcpy(m->build_id, hex, sizeof(hex));
	m->elf = v;
	m->opened_path = proc_intern(s, "[vdso] (running kernel)", 23);
	return true;
}

/* ---- debuginfod */

/* libdebuginfod is loaded only when a fetch is asked for: linking it would load libcurl and a
 * dozen more libraries into every run (4 ms of start-up, a third of a small report). libdw does
 * the same. */
struct dbgd_api {
	void *lib;
	debuginfod_client *(*begin)(void);
	void (*end)(debuginfod_client *);
	int (*find_debuginfo)(debuginfod_client *, const unsigned char *, int, char **);
	int (*find_executable)(debuginfod_client *, const unsigned char *, int, char **);
	void (*set_progressfn)(debuginfod_client *, debuginfod_progressfn_t);
	void (*set_user_data)(debuginfod_client *, void *);
	void *(*get_user_data)(debuginfod_client *);
};

static struct dbgd_api *dbgd_load(void)
{
	/* never unloaded: libcurl keeps global state that would dangle (and read as leaks) */
	void *lib = dlopen("libdebuginfod.so.1", RTLD_LAZY | RTLD_LOCAL | RTLD_NODELETE);
	if (!lib)
		return NULL;
	struct dbgd_api *a = calloc(1, sizeof(*a));
	if (!a) {
		dlclose(lib);
		return NULL;
	}
	a->lib = lib;
	*(void **)&a->begin = dlsym(lib, "debuginfod_begin");
	*(void **)&a->end = dlsym(lib, "debuginfod_end");
	*(void **)&a->find_debuginfo = dlsym(lib, "debuginfod_find_debuginfo");
	*(void **)&a->find_executable = dlsym(lib, "debuginfod_find_executable");
	*(void **)&a->set_progressfn = dlsym(lib, "debuginfod_set_progressfn");
	*(void **)&a->set_user_data = dlsym(lib, "debuginfod_set_user_data");
	*(void **)&a->get_user_data = dlsym(lib, "debuginfod_get_user_data");
	if (!a->begin || !a->end || !a->find_debuginfo || !a->find_executable || !a->set_progressfn ||
	    !a->set_user_data || !a->get_user_data) {
		dlclose(lib);
		free(a);
		return NULL;
	}
	return a;
}

struct fetch_deadline {
	struct timespec end;
};

/* The progress callback's only context is the client's user data (the deadline), read through
 * the library, which is loaded already. */
static int fetch_progress(debuginfod_client *c, long a, long b)
{
	(void)a;
	(void)b;
	void *lib = dlopen("libdebuginfod.so.1", RTLD_LAZY | RTLD_NOLOAD);
	void *(*get)(debuginfod_client *) = NULL;
	if (lib) {
		*(void **)&get = dlsym(lib, "debuginfod_get_user_data");
		dlclose(lib);
	}
	const struct fetch_deadline *d = get ? get(c) : NULL;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	/* non-zero stops the transfer */
	return d && (now.tv_sec > d->end.tv_sec || (now.tv_sec == d->end.tv_sec && now.tv_nsec >= d->end.tv_nsec));
}

/* Fetches the executable or the debug file of build-id `bid` (hex). @return the cached file's
 * path (malloc'd) or NULL, having said why. */
static char *fetch(struct uw_session *s, const struct uw_module *m, bool debuginfo)
{
	if (s->opts.offline || !getenv("DEBUGINFOD_URLS") || !*getenv("DEBUGINFOD_URLS"))
		return NULL;
	size_t hl = strlen(m->build_id);
	if (hl < 2 || hl % 2)
		return NULL;
	if (!s->dbgd_tried) {
		s->dbgd_tried = true;
		s->dbgd_api = dbgd_load();
		s->dbgd = s->dbgd_api ? s->dbgd_api->begin() : NULL;
		if (!s->dbgd)
			base_log(&s->log, UW_LOG_WARN, "debuginfod: %s",
				 s->dbgd_api ? "client not started" : "libdebuginfod.so.1 cannot be loaded");
		else
			s->dbgd_api->set_progressfn(s->dbgd, fetch_progress);
	}
	if (!s->dbgd)
		return NULL;
	unsigned ms = s->opts.debuginfod_timeout_ms ? s->opts.debuginfod_timeout_ms : 30000;
	struct fetch_deadline d;
	clock_gettime(CLOCK_MONOTONIC, &d.end);
	d.end.tv_sec += ms / 1000;
	d.end.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (d.end.tv_nsec >= 1000000000L) {
		d.end.tv_sec++;
		d.end.tv_nsec -= 1000000000L;
	}
	const struct dbgd_api *api = s->dbgd_api;
	api->set_user_data(s->dbgd, &d);
	char *path = NULL;
	/* a build-id length of 0: the id is given as a hex string */
	const unsigned char *id = (const unsigned char *)m->build_id;
	int fd = debuginfo ? api->find_debuginfo(s->dbgd, id, 0, &path) : api->find_executable(s->dbgd, id, 0, &path);
	api->set_user_data(s->dbgd, NULL);
	if (fd < 0) {
		const char *why = fd == -ENOENT ? "not on the servers"
				  : fd == -ECANCELED ? "timed out"
						      : strerror(-fd);
		base_log(&s->log, UW_LOG_WARN, "%s (build-id %s): debuginfod: no %s: %s", m->path, m->build_id,
			 debuginfo ? "debug file" : "executable", why);
		free(path);
		return NULL;
	}
	close(fd);
	base_log(&s->log, UW_LOG_INFO, "%s: %s from debuginfod: %s", m->path, debuginfo ? "debug file" : "executable",
		 path);
	return path;
}

void proc_debuginfod_end(struct uw_session *s)
{
	if (s->dbgd)
		s->dbgd_api->end(s->dbgd);
	s->dbgd = NULL;
	if (s->dbgd_api) {
		dlclose(s->dbgd_api->lib);
		free(s->dbgd_api);
		s->dbgd_api = NULL;
	}
}

struct elfv *proc_module_altfile(struct uw_session *s, struct uw_module *m, struct elfv *v, const char *vpath)
{
	struct elfv_sec sec;
	/* only a file with DWARF of its own needs it (stripped files keep the section) */
	if (m->alt || !v || !elfv_has_section(v, ".debug_info") || elfv_section(v, ".gnu_debugaltlink", &sec) ||
	    !sec.data || !sec.size)
		return m->alt;
	/* the file's path, NUL, then its build-id */
	const char *name = (const char *)sec.data;
	const char *nul = memchr(name, 0, sec.size);
	if (!nul)
		return NULL;
	size_t idlen = sec.size - (size_t)(nul + 1 - name);
	if (idlen < 2 || idlen > ELFV_MAX_BUILD_ID)
		return NULL;
	char bid[2 * ELFV_MAX_BUILD_ID + 1];
	base_hex((const uint8_t *)nul + 1, idlen, bid);
	char p[PATH_MAX];
	/* by build-id under the debug roots, as the debug files themselves */
	char roots[PATH_MAX * 2];
	snprintf(roots, sizeof(roots), "%s%s/usr/lib/debug", s->debug_dirs ? s->debug_dirs : "",
		 s->debug_dirs && *s->debug_dirs ? ":" : "");
	for (char *save = NULL, *dir = strtok_r(roots, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		snprintf(p, sizeof(p), "%s/.build-id/%.2s/%s.debug", dir, bid, bid + 2);
		if (try_open_s(s, p, bid, &m->alt, NULL))
			goto found;
	}
	/* by its path: absolute (under --symfs), or relative to the file that names it */
	if (name[0] == '/') {
		snprintf(p, sizeof(p), "%s%s", s->sysroot ? s->sysroot : "", name);
	} else if (vpath && strrchr(vpath, '/')) {
		int dl = (int)(strrchr(vpath, '/') - vpath);
		snprintf(p, sizeof(p), "%.*s/%s", dl, vpath, name);
	} else {
		p[0] = 0;
	}
	if (p[0] && try_open_f(s, p, UNTRUSTED, bid, &m->alt, NULL))
		goto found;
	/* the servers */
	{
		struct uw_module tmp = *m;
		memcpy(tmp.build_id, bid, sizeof(bid));
		char *fetched = fetch(s, &tmp, true);
		bool ok = fetched && try_open_s(s, fetched, bid, &m->alt, NULL);
		if (ok)
			snprintf(p, sizeof(p), "%s", fetched);
		free(fetched);
		if (ok)
			goto found;
	}
	base_log(&s->log, UW_LOG_WARN, "%s: dwz supplementary file %s (build-id %s) not found: names of inlined functions may be missing",
		 m->path, name, bid);
	return NULL;
found:
	base_log(&s->log, UW_LOG_INFO, "%s: dwz supplementary file %s", m->path, p);
	return m->alt;
}

void proc_module_fetch_debug(struct uw_session *s, struct uw_module *m)
{
	if (m->fetch_tried || m->dbg || !m->elf || m->special || m->jit || !m->build_id[0])
		return;
	m->fetch_tried = true;
	if (elfv_has_section(m->elf, ".debug_info"))
		return; /* not stripped */
	char *path = fetch(s, m, true);
	if (!path)
		return;
	if (try_open_s(s, path, m->build_id, &m->dbg, NULL))
		m->dbg_path = proc_intern(s, path, strlen(path));
	else
		base_log(&s->log, UW_LOG_WARN, "%s: debuginfod's debug file %s is not usable", m->path, path);
	free(path);
}

/* Live: the file a process maps, opened through the process, safe from paths it controls.
 * /proc/PID/map_files/START-END is the mapped file itself (even deleted or replaced since);
 * else the path inside the process's root (a container's), resolved with openat2's
 * RESOLVE_IN_ROOT so that its symbolic links cannot lead out of that root. */
#ifndef SYS_openat2
#define SYS_openat2 437
#endif
struct open_how_k {
	uint64_t flags, mode, resolve;
};
#define RESOLVE_NO_MAGICLINKS 0x02
#define RESOLVE_IN_ROOT 0x10

static bool open_live(struct uw_session *s, struct uw_module *m, const char *bid, char *p, size_t cap)
{
	if (!m->live_pid)
		return false;
	snprintf(p, cap, "/proc/%d/map_files/%llx-%llx", (int)m->live_pid, (unsigned long long)m->live_start,
		 (unsigned long long)m->live_end);
	if (try_open_s(s, p, bid, &m->elf, NULL)) {
		snprintf(p, cap, "%s", m->path); /* its name, for .gnu_debuglink lookups next to it */
		return true;
	}
	char root[64];
	snprintf(root, sizeof(root), "/proc/%d/root", (int)m->live_pid);
	int rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return false;
	struct open_how_k how = { O_RDONLY | O_CLOEXEC, 0, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	long fd = syscall(SYS_openat2, rfd, m->path[0] == '/' ? m->path + 1 : m->path, &how, sizeof(how));
	close(rfd);
	if (fd < 0)
		return false;
	/* the opened file through its descriptor: nothing is resolved again */
	snprintf(p, cap, "/proc/self/fd/%ld", fd);
	bool ok = try_open_s(s, p, bid, &m->elf, NULL);
	close((int)fd);
	if (ok)
		snprintf(p, cap, "/proc/%d/root%s", (int)m->live_pid, m->path);
	(void)s;
	return ok;
}

/* Opens a module's files: under the session's lock, once (proc_module_open). */
static bool module_open(struct uw_session *s, struct uw_module *m)
{
	if (m->state != UW_MODULE_UNOPENED)
		return m->state == UW_MODULE_OK;
	if (m->special) {
		/* without a recorded build-id (pipe mode writes them last) perf too assumes the
		 * running kernel's vdso */
		if (strcmp(m->path, "[vdso]") == 0 && open_vdso(s, m)) {
			m->state = UW_MODULE_OK;
			return true;
		}
		m->state = UW_MODULE_MISSING;
		return false;
	}
	char p[PATH_MAX];
	bool mismatch = false;
	const char *bid = m->build_id[0] ? m->build_id : NULL;
	/* recording: the file the process maps, through the process */
	if (m->live_pid && open_live(s, m, bid, p, sizeof(p)))
		goto opened;
	/* perf's build-id cache first: it holds exactly the recorded file */
	if (bid && s->buildid_dir && strlen(bid) > 2) {
		snprintf(p, sizeof(p), "%s/.build-id/%.2s/%s/elf", s->buildid_dir, bid, bid + 2);
		if (try_open_s(s, p, bid, &m->elf, NULL))
			goto opened;
	}
	snprintf(p, sizeof(p), "%s%s", s->sysroot ? s->sysroot : "", m->path);
	/* A file deleted while mapped ("path (deleted)"): whatever is at the path now is another
	 * file unless its build-id says otherwise, so without one it is not opened at all. */
	size_t pl = strlen(p);
	bool deleted = pl > 10 && strcmp(p + pl - 10, " (deleted)") == 0;
	if (deleted) {
		p[pl - 10] = 0;
		if (!bid) {
			m->state = UW_MODULE_MISSING;
			base_log(&s->log, UW_LOG_INFO, "%s: deleted while mapped, and no build-id to check a file against", m->path);
			return false;
		}
	}
	if (!bid && !s->sysroot && (m->maj || m->min) && m->ino) {
		/* No build-id to check: the recorded device and inode are the only identity. The
		 * same device with another inode is a file replaced since the recording (a rebuild,
		 * or deleted while mapped and another put there): not this one. (Another device
		 * proves nothing: another machine, an overlay filesystem.) */
		struct stat st;
		if (stat(p, &st) == 0 && major(st.st_dev) == m->maj && minor(st.st_dev) == m->min && st.st_ino != m->ino) {
			m->state = UW_MODULE_MISMATCH;
			base_log(&s->log, UW_LOG_WARN, "%s: replaced since the recording (inode %llu, now %llu) and no build-id to check: not used",
				 m->path, (unsigned long long)m->ino, (unsigned long long)st.st_ino);
			return false;
		}
	}
	int why = 0;
	if (try_open_w(s, p, UNTRUSTED, bid, &m->elf, &mismatch, &why))
		goto opened;
	/* a file of that name in the search directories, when it is this build */
	if (bid) {
		for (const char *f = proc_search_next(s, m->path, NULL); f; f = proc_search_next(s, m->path, f)) {
			if (try_open_s(s, f, bid, &m->elf, NULL)) {
				snprintf(p, sizeof(p), "%s", f);
				goto opened;
			}
		}
	}
	/* not here, or not this build: the servers may have it */
	if (bid) {
		char *fetched = fetch(s, m, false);
		bool ok = fetched && try_open_s(s, fetched, bid, &m->elf, NULL);
		if (ok)
			snprintf(p, sizeof(p), "%s", fetched);
		free(fetched);
		if (ok)
			goto opened;
	}
	if (mismatch) {
		m->state = UW_MODULE_MISMATCH;
		base_log(&s->log, UW_LOG_WARN, "%s: build-id differs from the recording's (%s); not used",
			 m->path, bid);
		return false;
	}
	/* the real reason: not there, not allowed, not a file, a link, not ELF */
	m->state = why == -ENOENT || why == -ENOTDIR ? UW_MODULE_MISSING : UW_MODULE_BAD;
	base_log(&s->log, UW_LOG_INFO, "%s: %s", m->path,
		 why == -ENOENT || why == -ENOTDIR ? "not found"
		 : why == -ELOOP                    ? "a symbolic link now (not followed)"
		 : why == -UW_ENOTREG               ? "not a regular file (a FIFO, device or directory): not opened"
		 : why == -UW_ENOELF                ? "not a usable ELF file"
						    : uw_strerror(why));
	return false;
opened:
	m->opened_path = proc_intern(s, p, strlen(p));
	if (!m->build_id[0] && m->elf->build_id_len)
		elfv_build_id_hex(m->elf, m->build_id);
	m->state = UW_MODULE_OK;
	find_debug(s, m);
	base_log(&s->log, UW_LOG_INFO, "%s: opened %s%s%s", m->path, m->opened_path, m->dbg ? ", debug file " : "",
		 m->dbg ? m->dbg_path : "");
	return true;
}

bool proc_module_open(struct uw_session *s, struct uw_module *m)
{
	/* opened once, by the first thread to need it; the others wait for it, then see all it
	 * did (the flag is published last) */
	if (!__atomic_load_n(&m->opened, __ATOMIC_ACQUIRE)) {
		proc_lock(s);
		if (!m->opened) {
			module_open(s, m);
			__atomic_store_n(&m->opened, true, __ATOMIC_RELEASE);
		}
		proc_unlock(s);
	}
	return m->state == UW_MODULE_OK;
}

void proc_module_set_opened(struct uw_module *m, enum uw_module_state state)
{
	m->state = (uint8_t)state;
	__atomic_store_n(&m->opened, true, __ATOMIC_RELEASE);
}

bool proc_module_is_opened(const struct uw_module *m)
{
	return __atomic_load_n(&m->opened, __ATOMIC_ACQUIRE);
}

/* Below this .eh_frame size the whole table is compiled at once (cheap, and denser). */
#define CFI_LAZY_MIN_BYTES (64u << 10)

static void add_plt_range(struct uw_module *m, const char *name)
{
	struct elfv_sec sec;
	if (m->code.nplt < UW_ARRAY_SIZE(m->code.plt) && elfv_section(m->elf, name, &sec) == 0 && sec.size) {
		m->code.plt[m->code.nplt].lo = sec.addr;
		m->code.plt[m->code.nplt].hi = sec.addr + sec.size;
		m->code.nplt++;
	}
}

/* Builds a module's unwind table: under the session's lock, once. */
static void module_code(struct uw_session *s, struct uw_module *m)
{
	struct elfv_sec eh, df;
	struct cfi_section ehs = { 0 }, dfs = { 0 };
	if (elfv_section(m->elf, ".eh_frame", &eh) == 0 && eh.data)
		ehs = (struct cfi_section){ eh.data, eh.size, eh.addr, true };
	if ((elfv_section(m->elf, ".debug_frame", &df) == 0 && df.data) ||
	    (m->dbg && elfv_section(m->dbg, ".debug_frame", &df) == 0 && df.data))
		dfs = (struct cfi_section){ df.data, df.size, df.addr, false };
	/* Large .eh_frame with a search table and no .debug_frame: compile FDEs as they are hit
	 * (see cfi.h); otherwise compile the whole table now. */
	int err = -UW_EUNSUPP;
	struct elfv_sec hdr;
	if (!dfs.data && ehs.data && ehs.size >= CFI_LAZY_MIN_BYTES && elfv_section(m->elf, ".eh_frame_hdr", &hdr) == 0 &&
	    hdr.data) {
		struct cfi_section hs = { hdr.data, hdr.size, hdr.addr, false };
		err = cfi_table_build_lazy(&m->cfi, &cfi_arch_x86_64, &ehs, &hs);
	}
	if (err == -UW_EUNSUPP)
		err = cfi_table_build(&m->cfi, &cfi_arch_x86_64, &ehs, &dfs);
	if (err)
		base_log(&s->log, UW_LOG_WARN, "%s: unwind table not built: %s", m->path, uw_strerror(err));
	else if (m->cfi.nbad_fde)
		base_log(&s->log, UW_LOG_INFO, "%s: %u malformed FDEs skipped", m->path, m->cfi.nbad_fde);
	m->code.cfi = (m->cfi.n || m->cfi.lazy) ? &m->cfi : NULL;
	add_plt_range(m, ".plt");
	add_plt_range(m, ".plt.sec");
	add_plt_range(m, ".plt.got");
	/* its identity in the lookup caches of every thread (a freed table's memory may hold
	 * another's) */
	m->cfi.serial = ++s->cfi_serial;
}

const struct unw_code *proc_module_code(struct uw_session *s, struct uw_module *m)
{
	/* every frame asks: built once, by the first thread to need it, and published last */
	if (__atomic_load_n(&m->cfi_done, __ATOMIC_ACQUIRE))
		return &m->code;
	if (!proc_module_open(s, m))
		return NULL;
	proc_lock(s);
	if (!m->cfi_done) {
		module_code(s, m);
		__atomic_store_n(&m->cfi_done, true, __ATOMIC_RELEASE);
	}
	proc_unlock(s);
	return &m->code;
}

/* Stable merge sort of symbols by start, O(n log n) whatever the input's order (a map written
 * in reverse, or crafted, cost an insertion sort hours). */
static int sort_syms(struct sym *a, size_t n)
{
	if (n < 2)
		return 0;
	struct sym *tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	for (size_t width = 1; width < n; width *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * width) {
			size_t mid = UW_MIN(lo + width, n), hi = UW_MIN(lo + 2 * width, n), i = lo, j = mid, k = lo;
			while (i < mid && j < hi)
				tmp[k++] = a[j].start < a[i].start ? a[j++] : a[i++];
			while (i < mid)
				tmp[k++] = a[i++];
			while (j < hi)
				tmp[k++] = a[j++];
		}
		memcpy(a, tmp, n * sizeof(*a));
	}
	free(tmp);
	return 0;
}

/* The text of a perf-PID.map: "START SIZE name" lines. */
int jitmap_parse(const char *text, size_t len, struct symtab *t, size_t max_entries)
{
	struct base_vec v = BASE_VEC_INIT(struct sym);
	base_arena_init(&t->arena, 64 * 1024);
	int err = 0;
	for (const char *line = text, *stop = text + len; line < stop;) {
		const char *eol = memchr(line, '\n', (size_t)(stop - line));
		size_t ll = eol ? (size_t)(eol - line) : (size_t)(stop - line);
		char buf[64];
		size_t hl = UW_MIN(ll, sizeof(buf) - 1);
		memcpy(buf, line, hl); /* the two numbers, terminated */
		buf[hl] = 0;
		const char *next = eol ? eol + 1 : stop;
		char *end;
		unsigned long long start = strtoull(buf, &end, 16), size;
		if (end == buf || *end != ' ') {
			line = next;
			continue;
		}
		char *p = end + 1;
		size = strtoull(p, &end, 16);
		if (end == p || *end != ' ' || !size || start + size < start) {
			line = next;
			continue;
		}
		const char *name = line + (end + 1 - buf);
		size_t nl = ll - (size_t)(name - line);
		if (v.len >= max_entries) {
			err = -UW_ELIMIT;
			break;
		}
		struct sym *sy = base_vec_push(&v);
		char *nm = base_arena_strndup(&t->arena, name, strnlen(name, nl));
		if (!sy || !nm) {
			err = -ENOMEM;
			break;
		}
		sy->start = start;
		sy->end = start + size;
		sy->name = nm;
		sy->dname = NULL;
		line = next;
	}
	/* later entries win over earlier ones for the same range (code can be re-jitted there):
	 * a stable sort keeps them after */
	if (!err)
		err = sort_syms(v.data, v.len);
	if (err) {
		base_vec_free(&v);
		return err;
	}
	t->syms = v.data;
	t->n = v.len;
	t->source = "perf-map";
	return 0;
}

/* Anonymous memory: no file (//anon, [anon:NAME], memfd), where JIT code lives; not [vdso]. */
static bool anonymous(const struct map *m)
{
	if (!m->mod)
		return true;
	const char *n = m->mod->path;
	return m->mod->special && (!strncmp(n, "//anon", 6) || !strncmp(n, "[anon", 5) || !strncmp(n, "/memfd:", 7));
}

/* Can the map belong to this process? Where the recording shows anonymous mappings of the
 * process (JIT code lives in anonymous memory; a recording that starts after the process found
 * its mappings as they were, code made executable included), most of the map's entries outside
 * its file mappings must lie in them: the JIT code of another process that had this pid (pids
 * are reused; maps outlive their processes in /tmp) lies elsewhere.
 * Entries inside the file mappings (V8 lists the builtins embedded in its executable) are never
 * looked up here and do not count. A sample of the entries is checked. */
static const char *jit_entries_misplaced(const struct symtab *t, const struct proc *p)
{
	const struct map *mv = p->maps.data;
	bool has_anon = false;
	for (size_t i = 0; i < p->maps.len && !has_anon; i++)
		has_anon = anonymous(&mv[i]);
	if (!has_anon)
		return NULL;
	size_t step = t->n > 1000 ? t->n / 1000 : 1, outside_files = 0, in_anon = 0;
	for (size_t k = 0; k < t->n; k += step) {
		const struct map *m = proc_find_map((struct proc *)p, t->syms[k].start);
		if (m && !anonymous(m))
			continue;
		outside_files++;
		in_anon += m != NULL;
	}
	if (outside_files && in_anon * 2 < outside_files)
		return "its JIT entries lie outside the process's anonymous mappings";
	return NULL;
}

/* perf-PID.map (tools/perf/Documentation/jit-interface.txt): "START SIZE name" per line, hex
 * START and SIZE, written by JITs (V8 --perf-basic-prof, the JVM's agents, CPython 3.12). The
 * file is in a directory anyone may write: it is opened without following a link, only as a
 * regular file under the side-file cap, and used only when it can belong to the process. */
static int jit_load(struct uw_tracker *t, struct uw_module *m, struct proc *p, const char **why)
{
	struct uw_session *s = t->s;
	uint64_t size;
	int fd = base_open_file(m->path, BASE_OPEN_NOFOLLOW, proc_side_cap(s), &size);
	if (fd < 0)
		return fd;
	struct stat st;
	if (fstat(fd, &st)) {
		int e = -errno;
		close(fd);
		return e;
	}
	/* written before the process existed: another process's, that had this pid */
	int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	const int64_t slack = 2000000000; /* clocks converted approximately */
	int64_t started; /* the process's start in wall-clock time (a recording's claims may overflow it) */
	if (p->start_known && t->wall_known && !__builtin_add_overflow((int64_t)p->start_time, t->wall_offset, &started) &&
	    started > INT64_MIN + slack && mtime < started - slack) {
		close(fd);
		*why = "it was written before the process started (another process's, with this pid)";
		return -ESTALE;
	}
	char *text;
	size_t len;
	int err = base_read_fd(fd, size, &text, &len);
	close(fd);
	if (err)
		return err;
	err = jitmap_parse(text, len, &m->syms, (size_t)(proc_side_cap(s) / 128));
	free(text);
	/* a process that ran before the recording (its start unknown, the map's age proves
	 * nothing): its mappings as the recording found them at its start hold its JIT code */
	if (!err && !p->start_known && (*why = jit_entries_misplaced(&m->syms, p))) {
		symtab_free(&m->syms);
		return -ESTALE;
	}
	return err;
}

struct uw_module *proc_jit_module(struct uw_tracker *t, struct proc *p)
{
	struct uw_session *s = t->s;
	if (p->jit_tried)
		return p->jit;
	p->jit_tried = true;
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/tmp/perf-%d.map", s->sysroot ? s->sysroot : "", (int)p->pid);
	if (access(path, F_OK))
		return NULL;
	struct uw_module *m = proc_module_get(s, path, strlen(path), "", 0, 0, (uint64_t)p->pid);
	if (!m)
		return NULL;
	/* (read once, by the first tracker to need it) */
	proc_lock(s);
	if (!m->jit) {
		m->jit = true;
		m->special = true;
		m->syms_done = true;
		const char *why = NULL;
		int err = jit_load(t, m, p, &why);
		__atomic_store_n(&m->cfi_done, true, __ATOMIC_RELEASE); /* JIT code: frame pointers */
		proc_module_set_opened(m, err ? UW_MODULE_BAD : UW_MODULE_OK);
		if (err)
			base_log(&s->log, UW_LOG_WARN, "%s: not used: %s", path,
				 why ? why : err == -ELOOP ? "a symbolic link" : uw_strerror(err));
	}
	bool ok = m->state == UW_MODULE_OK;
	proc_unlock(s);
	if (!ok)
		return NULL;
	p->jit = m;
	return m;
}

/* MiniDebugInfo: an xz-compressed ELF in .gnu_debugdata holding a .symtab of the functions
 * .dynsym lacks (Fedora and others ship it instead of full debug files). Its decompressed size
 * is capped at a quarter of the debug-section cap (256 MiB by default): it holds symbols only. */

static struct elfv *open_minidebug(struct uw_session *s, struct uw_module *m)
{
	struct elfv_sec sec;
	if (!m->elf || elfv_section(m->elf, ".gnu_debugdata", &sec) || !sec.data || !sec.size)
		return NULL;
	/* the uncompressed size is in the xz index; decode with a growing buffer and a cap */
	const uint64_t max = UW_MAX(view_cap(s) / 4, (uint64_t)1 << 16);
	size_t cap = (size_t)UW_MIN(UW_MAX(sec.size * 4, (uint64_t)1 << 16), max);
	for (;;) {
		uint8_t *out = malloc(cap);
		if (!out)
			return NULL;
		uint64_t memlimit = 64 << 20;
		size_t in_pos = 0, out_pos = 0;
		lzma_ret r = lzma_stream_buffer_decode(&memlimit, 0, NULL, sec.data, &in_pos, sec.size, out, &out_pos, cap);
		if (r == LZMA_OK) {
			struct elfv *v;
			if (elfv_adopt_mem(out, out_pos, &v))
				return NULL;
			return v;
		}
		free(out);
		if (r == LZMA_BUF_ERROR && cap >= max) {
			base_log(&s->log, UW_LOG_WARN, "%s: .gnu_debugdata decompresses to more than %" PRIu64
				 " MiB (a quarter of --max-inflate): not read", m->path, max >> 20);
			return NULL;
		}
		if (r != LZMA_BUF_ERROR) {
			base_log(&s->log, UW_LOG_WARN, "%s: .gnu_debugdata is not a usable xz stream (%d)", m->path, (int)r);
			return NULL;
		}
		cap = (size_t)UW_MIN((uint64_t)cap * 4, max);
	}
}

static const struct sym no_sym;

const struct sym *proc_module_symbol(struct uw_session *s, struct uw_module *m, uint64_t rel)
{
	const struct sym *hit = base_map_get(&m->symcache, rel);
	if (hit)
		return hit == &no_sym ? NULL : hit;
	if (!m->syms_done) {
		m->syms_done = true;
		if (!m->jit && proc_module_open(s, m)) {
			/* a separate debug file has the full .symtab (debuginfod's when none is
			 * here); without one, MiniDebugInfo */
			proc_module_fetch_debug(s, m);
			if (!m->dbg)
				m->mini = open_minidebug(s, m);
			int err = symtab_build(&m->syms, m->elf, m->dbg ? m->dbg : m->mini, !s->opts.no_demangle);
			if (err)
				base_log(&s->log, UW_LOG_WARN, "%s: symbols not read: %s", m->path, uw_strerror(err));
		}
	}
	hit = symtab_find(&m->syms, rel);
	base_map_put(&m->symcache, rel, (void *)(hit ? hit : &no_sym));
	return hit;
}

static bool try_package(struct uw_session *s, struct uw_module *m, const char *path)
{
	struct elfv *v;
	if (!try_open_f(s, path, UNTRUSTED, NULL, &v, NULL))
		return false;
	struct dwp *p = dwp_open(v);
	if (!p) {
		base_log(&s->log, UW_LOG_WARN, "%s: %s is not a DWARF package (no readable .debug_cu_index)", m->path, path);
		elfv_close(v);
		return false;
	}
	m->dwp_elf = v;
	m->dwp = p;
	base_log(&s->log, UW_LOG_INFO, "%s: DWARF package %s", m->path, path);
	return true;
}

struct dwp *proc_module_package(void *ctx)
{
	struct uw_module *m = ctx;
	struct uw_session *s = m->session;
	char p[PATH_MAX];
	if (!s || m->dwp)
		return m->dwp;
	/* next to the file (as gdb and lldb look) where it was recorded and where it was opened
	 * (perf's build-id cache), and next to its debug file, with or without the debug file's
	 * .debug suffix */
	if (m->path[0] == '/') {
		snprintf(p, sizeof(p), "%s%s.dwp", s->sysroot ? s->sysroot : "", m->path);
		if (try_package(s, m, p))
			return m->dwp;
	}
	if (m->opened_path && m->opened_path[0] == '/') {
		snprintf(p, sizeof(p), "%s.dwp", m->opened_path);
		if (try_package(s, m, p))
			return m->dwp;
	}
	if (m->dbg_path && m->dbg_path[0] == '/') {
		size_t n = strlen(m->dbg_path);
		snprintf(p, sizeof(p), "%s.dwp", m->dbg_path);
		if (try_package(s, m, p))
			return m->dwp;
		if (n > 6 && !strcmp(m->dbg_path + n - 6, ".debug")) {
			snprintf(p, sizeof(p), "%.*s.dwp", (int)(n - 6), m->dbg_path);
			if (try_package(s, m, p))
				return m->dwp;
		}
	}
	/* under the debug roots: by the module's path, and by its name */
	char roots[PATH_MAX * 2];
	snprintf(roots, sizeof(roots), "%s%s/usr/lib/debug", s->debug_dirs ? s->debug_dirs : "",
		 s->debug_dirs && *s->debug_dirs ? ":" : "");
	for (char *save = NULL, *dir = strtok_r(roots, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		if (m->path[0] == '/') {
			snprintf(p, sizeof(p), "%s%s.dwp", dir, m->path);
			if (try_package(s, m, p))
				return m->dwp;
		}
		snprintf(p, sizeof(p), "%s/%s.dwp", dir, m->name);
		if (try_package(s, m, p))
			return m->dwp;
	}
	base_log(&s->log, UW_LOG_WARN,
		 "%s: split DWARF without its .dwo files and no package (%s.dwp): no inline frames or call sites from it",
		 m->path, m->name);
	return NULL;
}

void proc_module_free(struct uw_module *m)
{
	dwi_close(m->dwi);
	dwp_close(m->dwp);
	elfv_close(m->dwp_elf);
	base_map_free(&m->inlcache);
	cfi_table_free(&m->cfi);
	symtab_free(&m->syms);
	base_map_free(&m->symcache);
	elfv_close(m->dbg);
	elfv_close(m->alt);
	elfv_close(m->mini);
	elfv_close(m->elf);
	free(m);
}

void proc_module_idle(struct uw_session *s, struct uw_module *m)
{
	if (m->special || m->jit || m->idle)
		return;
	struct uw_module **slot = base_vec_push(&s->idle_mods);
	if (!slot)
		return; /* stays cached */
	*slot = m;
	m->idle = true;
	while (s->idle_mods.len > IDLE_MODULES_MAX) {
		struct uw_module *old = ((struct uw_module **)s->idle_mods.data)[0];
		memmove(s->idle_mods.data, (struct uw_module **)s->idle_mods.data + 1,
			(s->idle_mods.len - 1) * sizeof(old));
		s->idle_mods.len--;
		if (old->hit && old->build_id[0]) {
			struct evicted_module *e = base_vec_push(&s->evicted);
			const char *bid = proc_intern(s, old->build_id, strlen(old->build_id));
			if (e && bid)
				*e = (struct evicted_module){ old->path, bid };
		}
		module_unchain(s, old);
		proc_inline_idle(s); /* the helper may be reading its DWARF */
		proc_module_free(old);
	}
}

void proc_module_busy(struct uw_session *s, struct uw_module *m)
{
	struct uw_module **v = s->idle_mods.data;
	for (size_t i = 0; i < s->idle_mods.len; i++) {
		if (v[i] == m) {
			memmove(v + i, v + i + 1, (s->idle_mods.len - i - 1) * sizeof(*v));
			s->idle_mods.len--;
			break;
		}
	}
	m->idle = false;
}
