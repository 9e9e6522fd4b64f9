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
#include "module/files.h"


/* ---- the cache on the session */

static void module_cache_free(void *p)
{
	struct module_cache *c = p;
	size_t it = 0;
	void *val;
	while (base_map_next(&c->modules, &it, NULL, &val)) {
		for (struct uw_module *m = val, *next; m; m = next) {
			next = m->next_same_key;
			proc_module_free(m);
		}
	}
	base_map_free(&c->modules);
	base_vec_free(&c->idle_mods);
	proc_debuginfod_end(c);
	proc_search_free(c);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

struct module_cache *module_cache(struct uw_session *s)
{
	struct module_cache *c = session_part(s, SESSION_MODULES);
	if (UW_LIKELY(c))
		return c;
	if (!(c = calloc(1, sizeof(*c))))
		return NULL;
	c->s = s;
	base_map_init(&c->modules);
	c->idle_mods = BASE_VEC_INIT(struct uw_module *);
	/* one lock for the shared state: modules, lazily built tables (it is taken again by the
	 * functions it calls, hence recursive) */
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&c->mu, &ma);
	pthread_mutexattr_destroy(&ma);
	return session_part_attach(s, SESSION_MODULES, c, module_cache_free);
}

void proc_lock(struct uw_session *s)
{
	pthread_mutex_lock(&module_cache(s)->mu);
}

void proc_unlock(struct uw_session *s)
{
	pthread_mutex_unlock(&module_cache(s)->mu);
}

void proc_session_live(struct uw_session *s)
{
	struct module_cache *c = module_cache(s);
	if (c)
		__atomic_store_n(&c->evict_idle, true, __ATOMIC_RELEASE);
}

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
	if (strlen(hex) > 2 * ELFV_MAX_BUILD_ID || !module_cache(s))
		return NULL;
	const char *ipath = session_intern(s, path, pathlen);
	if (!ipath)
		return NULL;
	uint64_t key;
	if (hex[0])
		key = base_hash_bytes(hex, strlen(hex)) ^ 0x1; /* build-id identity */
	else
		key = base_hash_bytes(ipath, pathlen) ^ base_hash64(((uint64_t)maj << 32 | min) ^ base_hash64(ino));
	proc_lock(s);
	struct uw_module *head = base_map_get(&module_cache(s)->modules, key), *m;
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
	if (base_map_put(&module_cache(s)->modules, key, m)) {
		proc_unlock(s);
		free(m);
		return NULL;
	}
	proc_unlock(s);
	return m;
}

/* References count mappings; only a live session (evict_idle) acts when they reach 0, under the
 * lock. Otherwise they are counted atomically: every FORK copies its parent's mappings, and a
 * recording of many short processes would take the lock for each. */
void proc_module_ref(struct uw_session *s, struct uw_module *m)
{
	if (!__atomic_load_n(&module_cache(s)->evict_idle, __ATOMIC_ACQUIRE)) {
		__atomic_fetch_add(&m->refs, 1, __ATOMIC_RELAXED);
		return;
	}
	proc_lock(s);
	if (__atomic_fetch_add(&m->refs, 1, __ATOMIC_RELAXED) == 0 && m->idle)
		proc_module_busy(s, m);
	proc_unlock(s);
}

void proc_module_unref(struct uw_session *s, struct uw_module *m)
{
	if (!__atomic_load_n(&module_cache(s)->evict_idle, __ATOMIC_ACQUIRE)) {
		uint32_t r = __atomic_load_n(&m->refs, __ATOMIC_RELAXED);
		while (r && !__atomic_compare_exchange_n(&m->refs, &r, r - 1, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			;
		return;
	}
	proc_lock(s);
	uint32_t r = __atomic_load_n(&m->refs, __ATOMIC_RELAXED);
	if (r && __atomic_sub_fetch(&m->refs, 1, __ATOMIC_RELAXED) == 0)
		proc_module_idle(s, m);
	proc_unlock(s);
}



/* Live: the file a process maps, opened through the process, safe from paths it controls.
 * /proc/PID/map_files/START-END is the mapped file itself (even deleted or replaced since);
 * else the path inside the process's root (a container's), resolved with openat2's
 * RESOLVE_IN_ROOT so that its symbolic links cannot lead out of that root. Either is opened as
 * every file a process names is (base_open_file): the process may have put a FIFO or a device
 * at the path since it unmapped the file (dlclose), and a FIFO must not stop the recording. */
static bool open_live(struct uw_session *s, struct uw_module *m, const char *bid, char *p, size_t cap)
{
	if (!m->live_pid)
		return false;
	snprintf(p, cap, "/proc/%d/map_files/%llx-%llx", (int)m->live_pid, (unsigned long long)m->live_start,
		 (unsigned long long)m->live_end);
	if (mod_try_open_trusted(s, p, bid, &m->elf, NULL)) {
		snprintf(p, cap, "%s", m->path); /* its name, for .gnu_debuglink lookups next to it */
		return true;
	}
	char root[64];
	snprintf(root, sizeof(root), "/proc/%d/root", (int)m->live_pid);
	int rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0) {
		if (base_resource_error(-errno))
			session_resource_fail(s, -errno, root);
		return false;
	}
	int why = 0;
	bool ok = mod_try_open_at(s, rfd, m->path, BASE_OPEN_IN_ROOT, bid, &m->elf, NULL, &why);
	close(rfd);
	if (ok)
		snprintf(p, cap, "/proc/%d/root%s", (int)m->live_pid, m->path);
	else if (why == -UW_ENOTREG)
		base_log(&s->log, UW_LOG_INFO, "%s (pid %d): not a regular file now (a FIFO, device or directory): not opened",
			 m->path, (int)m->live_pid);
	return ok;
}

/* The outcome of opening a module, published for uw_module_state (read without the lock). */
static void set_state(struct uw_module *m, enum uw_module_state st)
{
	__atomic_store_n(&m->state, (uint8_t)st, __ATOMIC_RELEASE);
}

/* Opens a module's files: under the session's lock, when they are not open (the first time, or
 * again after they were let go while idle: module_unload). */
static bool module_open(struct uw_session *s, struct uw_module *m)
{
	/* the file's build-id is taken the first time only: a handle's identity does not change */
	bool first = m->state == UW_MODULE_UNOPENED;
	if (m->special) {
		/* without a recorded build-id (pipe mode writes them last) perf too assumes the
		 * running kernel's vdso */
		if (strcmp(m->path, "[vdso]") == 0 && mod_open_vdso(s, m)) {
			set_state(m, UW_MODULE_OK);
			return true;
		}
		set_state(m, UW_MODULE_MISSING);
		return false;
	}
	char p[PATH_MAX];
	bool mismatch = false;
	const char *bid = m->build_id[0] ? m->build_id : NULL;
	/* a try that failed for want of a descriptor or memory is no proof that the file is not there */
	uint64_t res0 = __atomic_load_n(&s->res.no_fd, __ATOMIC_RELAXED) + __atomic_load_n(&s->res.nomem, __ATOMIC_RELAXED);
	/* recording: the file the process maps, through the process */
	if (m->live_pid && open_live(s, m, bid, p, sizeof(p)))
		goto opened;
	/* perf's build-id cache first: it holds exactly the recorded file */
	if (bid && s->buildid_dir && strlen(bid) > 2) {
		snprintf(p, sizeof(p), "%s/.build-id/%.2s/%s/elf", s->buildid_dir, bid, bid + 2);
		if (mod_try_open_trusted(s, p, bid, &m->elf, NULL))
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
			set_state(m, UW_MODULE_MISSING);
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
			set_state(m, UW_MODULE_MISMATCH);
			base_log(&s->log, UW_LOG_WARN, "%s: replaced since the recording (inode %llu, now %llu) and no build-id to check: not used",
				 m->path, (unsigned long long)m->ino, (unsigned long long)st.st_ino);
			return false;
		}
	}
	int why = 0;
	if (mod_try_open(s, p, MOD_UNTRUSTED, bid, &m->elf, &mismatch, &why))
		goto opened;
	/* a file of that name in the search directories, when it is this build */
	if (bid) {
		for (const char *f = proc_search_next(s, m->path, NULL); f; f = proc_search_next(s, m->path, f)) {
			if (mod_try_open_trusted(s, f, bid, &m->elf, NULL)) {
				snprintf(p, sizeof(p), "%s", f);
				goto opened;
			}
		}
	}
	/* not here, or not this build: the servers may have it */
	if (bid) {
		char *fetched = mod_fetch(s, m, false);
		bool ok = fetched && mod_try_open_trusted(s, fetched, bid, &m->elf, NULL);
		if (ok)
			snprintf(p, sizeof(p), "%s", fetched);
		free(fetched);
		if (ok)
			goto opened;
	}
	if (__atomic_load_n(&s->res.no_fd, __ATOMIC_RELAXED) + __atomic_load_n(&s->res.nomem, __ATOMIC_RELAXED) != res0) {
		m->state = UW_MODULE_NO_RESOURCE;
		base_log(&s->log, UW_LOG_INFO, "%s: not opened: a resource ran out (see above)", m->path);
		return false;
	}
	if (mismatch) {
		set_state(m, UW_MODULE_MISMATCH);
		base_log(&s->log, UW_LOG_WARN, "%s: build-id differs from the recording's (%s); not used",
			 m->path, bid);
		return false;
	}
	/* the real reason: not there, not allowed, not a file, a link, not ELF */
	set_state(m, why == -ENOENT || why == -ENOTDIR ? UW_MODULE_MISSING : UW_MODULE_BAD);
	base_log(&s->log, UW_LOG_INFO, "%s: %s", m->path,
		 why == -ENOENT || why == -ENOTDIR ? "not found"
		 : why == -ELOOP                    ? "a symbolic link now (not followed)"
		 : why == -UW_ENOTREG               ? "not a regular file (a FIFO, device or directory): not opened"
		 : why == -UW_ENOELF                ? "not a usable ELF file"
						    : uw_strerror(why));
	return false;
opened:
	m->opened_path = session_intern(s, p, strlen(p));
	/* (before the state is published: uw_module_build_id reads it after the state) */
	if (first && !m->build_id[0] && m->elf->build_id_len)
		elfv_build_id_hex(m->elf, m->build_id);
	set_state(m, UW_MODULE_OK);
	mod_find_debug(s, m);
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
			/* opened again to name frames of processes gone (a live session): it goes back
			 * on the idle list, so the modules held open stay as many as IDLE_MODULES_MAX */
			if (__atomic_load_n(&module_cache(s)->evict_idle, __ATOMIC_RELAXED) && !__atomic_load_n(&m->refs, __ATOMIC_RELAXED) && m->state == UW_MODULE_OK)
				proc_module_idle(s, m);
		}
		proc_unlock(s);
	}
	return m->state == UW_MODULE_OK;
}

void proc_module_set_opened(struct uw_module *m, enum uw_module_state state)
{
	set_state(m, state);
	__atomic_store_n(&m->opened, true, __ATOMIC_RELEASE);
}

bool proc_module_is_opened(const struct uw_module *m)
{
	return __atomic_load_n(&m->opened, __ATOMIC_ACQUIRE);
}

/* Says (once per file) that a file of the module could not be read whole: it shrank since it
 * was opened (rebuilt or copied over in place), or memory ran out. What was made of it is
 * what could be read. */
void proc_module_said_reads(struct uw_session *s, struct uw_module *m)
{
	session_file_shrunk(s, m->elf, m->opened_path ? m->opened_path : m->path);
	session_file_shrunk(s, m->dbg, m->dbg_path ? m->dbg_path : m->path);
	session_file_shrunk(s, m->alt, m->path);
	session_file_shrunk(s, m->mini, m->path);
	session_file_shrunk(s, m->dwp_elf, m->path);
}

/* Builds a module's unwind tables: under the session's lock, once. */
static void module_code(struct uw_session *s, struct uw_module *m)
{
	int sframe_err;
	int err = unw_tables_build(&m->tabs, m->elf, m->dbg, true, &sframe_err);
	if (err)
		base_log(&s->log, UW_LOG_WARN, "%s: unwind table not built: %s", m->path, uw_strerror(err));
	else if (m->tabs.cfi.nbad_fde)
		base_log(&s->log, UW_LOG_INFO, "%s: %u malformed FDEs skipped", m->path, m->tabs.cfi.nbad_fde);
	if (sframe_err)
		base_log(&s->log, UW_LOG_WARN, "%s: SFrame section not used: %s", m->path, uw_strerror(sframe_err));
	else if (m->tabs.sframe.nbad_fde)
		base_log(&s->log, UW_LOG_INFO, "%s: %u malformed SFrame functions skipped", m->path, m->tabs.sframe.nbad_fde);
	/* their identity in the lookup caches of every thread (a freed table's memory may hold
	 * another's) */
	m->tabs.cfi.serial = ++module_cache(s)->cfi_serial;
	m->tabs.sframe.serial = ++module_cache(s)->cfi_serial;
	proc_module_said_reads(s, m);
}

const struct unw_code *proc_module_code(struct uw_session *s, struct uw_module *m)
{
	/* every frame asks: built once, by the first thread to need it, and published last */
	if (__atomic_load_n(&m->cfi_done, __ATOMIC_ACQUIRE))
		return &m->tabs.code;
	if (!proc_module_open(s, m))
		return NULL;
	proc_lock(s);
	if (!m->cfi_done) {
		module_code(s, m);
		__atomic_store_n(&m->cfi_done, true, __ATOMIC_RELEASE);
	}
	proc_unlock(s);
	return &m->tabs.code;
}

/* Stable merge sort of symbols by start, O(n log n) whatever the input's order (a map written
 * in reverse, or crafted, cost an insertion sort hours). */

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
				m->mini = mod_open_minidebug(s, m);
			int err = symtab_build(&m->syms, m->elf, m->dbg ? m->dbg : m->mini, !s->opts.no_demangle);
			if (err == -ENOMEM)
				session_resource_fail(s, err, m->path);
			else if (err)
				base_log(&s->log, UW_LOG_WARN, "%s: symbols not read: %s", m->path, uw_strerror(err));
			proc_module_said_reads(s, m);
		}
	}
	hit = symtab_find(&m->syms, rel);
	base_map_put(&m->symcache, rel, (void *)(hit ? hit : &no_sym));
	return hit;
}


void proc_module_free(struct uw_module *m)
{
	dwi_close(m->dwi);
	dwp_close(m->dwp);
	elfv_close(m->dwp_elf);
	base_map_free(&m->inlcache);
	unw_tables_free(&m->tabs);
	symtab_free(&m->syms);
	base_map_free(&m->symcache);
	elfv_close(m->dbg);
	elfv_close(m->alt);
	elfv_close(m->mini);
	elfv_close(m->elf);
	free(m);
}

/* What a module holds beyond its identity, let go while no mapping refers to it: its files,
 * unwind tables, symbols, DWARF and caches. The handle stays (path, name, build-id, state): a
 * profiler keeps frames of processes long gone and names them later; their files are opened
 * again then (by path, checked against the build-id or device and inode the first open saw).
 * Under the session's lock, with no mapping referring to it (so no tracker unwinds with its
 * tables: those are read without the lock). */
static void module_unload(struct uw_session *s, struct uw_module *m)
{
	proc_inline_idle(s); /* the helper may be reading its DWARF */
	dwi_close(m->dwi);
	dwp_close(m->dwp);
	elfv_close(m->dwp_elf);
	m->dwi = NULL;
	m->dwp = NULL;
	m->dwp_elf = NULL;
	base_map_free(&m->inlcache);
	base_map_init(&m->inlcache);
	unw_tables_free(&m->tabs);
	symtab_free(&m->syms);
	memset(&m->syms, 0, sizeof(m->syms));
	base_map_free(&m->symcache);
	base_map_init(&m->symcache);
	elfv_close(m->dbg);
	elfv_close(m->alt);
	elfv_close(m->mini);
	elfv_close(m->elf);
	m->dbg = m->alt = m->mini = m->elf = NULL;
	m->dbg_path = NULL;
	m->syms_done = m->dwi_tried = m->fetch_tried = false;
	m->live_pid = 0; /* the process that mapped it maps it no more */
	__atomic_store_n(&m->cfi_done, false, __ATOMIC_RELAXED);
	/* a file that could not be opened is not looked for again (its state stays) */
	if (__atomic_load_n(&m->state, __ATOMIC_RELAXED) == UW_MODULE_OK)
		__atomic_store_n(&m->opened, false, __ATOMIC_RELEASE);
}

void proc_module_idle(struct uw_session *s, struct uw_module *m)
{
	if (m->special || m->jit || m->idle)
		return;
	struct uw_module **slot = base_vec_push(&module_cache(s)->idle_mods);
	if (!slot)
		return; /* stays loaded */
	*slot = m;
	m->idle = true;
	while (module_cache(s)->idle_mods.len > IDLE_MODULES_MAX) {
		struct uw_module *old = ((struct uw_module **)module_cache(s)->idle_mods.data)[0];
		memmove(module_cache(s)->idle_mods.data, (struct uw_module **)module_cache(s)->idle_mods.data + 1,
			(module_cache(s)->idle_mods.len - 1) * sizeof(old));
		module_cache(s)->idle_mods.len--;
		old->idle = false;
		module_unload(s, old);
	}
}

void proc_module_busy(struct uw_session *s, struct uw_module *m)
{
	struct uw_module **v = module_cache(s)->idle_mods.data;
	for (size_t i = 0; i < module_cache(s)->idle_mods.len; i++) {
		if (v[i] == m) {
			memmove(v + i, v + i + 1, (module_cache(s)->idle_mods.len - i - 1) * sizeof(*v));
			module_cache(s)->idle_mods.len--;
			break;
		}
	}
	m->idle = false;
}


UW_API const char *uw_module_path(const struct uw_module *m)
{
	return m->path;
}

UW_API const char *uw_module_name(const struct uw_module *m)
{
	return m->name;
}

UW_API const char *uw_module_build_id(const struct uw_module *m)
{
	/* a module known by path gets its file's build-id when first opened, before its state
	 * is published (and never again) */
	if (m->key_by_path && __atomic_load_n(&m->state, __ATOMIC_ACQUIRE) == UW_MODULE_UNOPENED)
		return "";
	return m->build_id;
}

UW_API enum uw_module_state uw_module_state(const struct uw_module *m)
{
	/* the last opening's outcome: it stays when the files are let go while idle */
	return (enum uw_module_state)__atomic_load_n(&m->state, __ATOMIC_ACQUIRE);
}

UW_API int uw_module_stats(const struct uw_module *m, struct uw_module_stats *st)
{
	if (!m || !st || st->sz < sizeof(size_t))
		return -EINVAL;
	struct uw_module_stats v = { .sz = st->sz };
	struct uw_module *mm = (struct uw_module *)m;
	v.steps_cfi = __atomic_load_n(&mm->steps[UW_METHOD_CFI], __ATOMIC_RELAXED);
	v.steps_sframe = __atomic_load_n(&mm->steps[UW_METHOD_SFRAME], __ATOMIC_RELAXED);
	v.steps_fp = __atomic_load_n(&mm->steps[UW_METHOD_FP], __ATOMIC_RELAXED);
	v.steps_plt = __atomic_load_n(&mm->steps[UW_METHOD_PLT], __ATOMIC_RELAXED);
	memcpy(st, &v, UW_MIN(st->sz, sizeof(v)));
	return 0;
}

UW_API void uw_session_foreach_module(struct uw_session *s, uw_module_fn fn, void *ctx)
{
	size_t it = 0;
	void *val;
	struct module_cache *c = s ? module_cache(s) : NULL;
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	while (base_map_next(&c->modules, &it, NULL, &val))
		for (struct uw_module *m = val; m; m = m->next_same_key)
			if (fn(ctx, m))
				goto out;
out:
	pthread_mutex_unlock(&c->mu);
}

