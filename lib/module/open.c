/* SPDX-License-Identifier: MIT */
/*
 * Opening a module's files (checked against the recorded build-id, else device, inode and
 * inode generation) and building its unwind tables: each once, by the first thread that needs
 * it, under the module's own lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "module/files.h"
#include "module/module.h"

/* ---- is the file opened the one the recording says the module maps? */

/* The device and inode the kernel gives a mapping of the file open at fd: the ones MMAP2
 * records and /proc/PID/maps show (the superblock's device). stat(2) may give another device
 * for the same file: btrfs gives each subvolume a device of its own, overlayfs may give a file
 * its layer's. The file is mapped for a moment (one page, never touched: nothing is read
 * through the mapping, so a file cut short meanwhile cannot fault) and the mapping looked up in
 * /proc/self/maps. Only asked when fstat disagrees with a live recording (rare). */
static bool kernel_ident(int fd, uint32_t *maj, uint32_t *min, uint64_t *ino)
{
	long pg = sysconf(_SC_PAGESIZE);
	void *a = mmap(NULL, pg > 0 ? (size_t)pg : 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	if (a == MAP_FAILED)
		return false;
	bool found = false, at_start = true;
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	while (f && !found && fgets(line, sizeof(line), f)) {
		/* (a line longer than the buffer comes in pieces: only a line's start is parsed) */
		bool start = at_start;
		at_start = strchr(line, '\n') != NULL;
		unsigned long long lo, off, in;
		unsigned ma, mi;
		if (start && sscanf(line, "%llx-%*x %*s %llx %x:%x %llu", &lo, &off, &ma, &mi, &in) == 5 &&
		    lo == (uintptr_t)a) {
			*maj = ma;
			*min = mi;
			*ino = in;
			found = true;
		}
	}
	if (f)
		fclose(f);
	munmap(a, pg > 0 ? (size_t)pg : 4096);
	return found;
}

/* Whether v, just opened from where, is the file the recording says the module maps. With a
 * recorded build-id, that is (module_try_open compared it). Without one, the recorded device
 * and inode, compared with those of the descriptor opened (fstat when it was opened: what is
 * checked is what is read, whatever is renamed over the path meanwhile), and the inode's
 * generation where the recording (MMAP2) and the filesystem (FS_IOC_GETVERSION: ext4, btrfs,
 * xfs, ...) both give one: a new file that got a freed inode's number has another generation.
 * live: a file of this machine (/proc/PID/map_files, /proc/PID/root, or the path of a module a
 * live tracker saw mapped): another device is another file. Not live (a recording read later):
 * another device proves nothing (another machine, a container's filesystem), the same device
 * with another inode is another file. (Paths under a sysroot are not checked at all: the
 * caller's.) Says why when it is not. */
static bool same_file(struct uw_session *s, struct uw_module *m, const struct elfv *v, bool live, const char *where)
{
	if (m->build_id[0] || !m->ino || (!m->maj && !m->min))
		return true;
	uint32_t fmaj = major(v->dev), fmin = minor(v->dev);
	uint64_t fino = v->ino;
	bool same = fmaj == m->maj && fmin == m->min && fino == m->ino;
	uint32_t kmaj, kmin;
	uint64_t kino;
	if (!same && live && v->fd >= 0 && kernel_ident(v->fd, &kmaj, &kmin, &kino) && kmaj == m->maj &&
	    kmin == m->min && kino == m->ino) {
		same = true;
		fmaj = kmaj, fmin = kmin, fino = kino;
	}
	if (!same && !live && (fmaj != m->maj || fmin != m->min))
		return true;
	uint64_t want_gen = __atomic_load_n(&m->ino_gen, __ATOMIC_RELAXED);
	unsigned int gen = 0; /* (the kernel writes an int, whatever the ioctl's number says) */
	bool gen_known = same && want_gen && v->fd >= 0 && ioctl(v->fd, FS_IOC_GETVERSION, &gen) == 0;
	if (same && (!gen_known || gen == (uint32_t)want_gen))
		return true;
	if (same)
		base_log(&s->log, UW_LOG_WARN,
			 "%s: %s is another file than the one mapped (inode %llu's generation %u, recorded %llu): not used",
			 m->path, where, (unsigned long long)fino, gen, (unsigned long long)want_gen);
	else
		base_log(&s->log, UW_LOG_WARN,
			 "%s: %s is another file than the one mapped (device %u:%u inode %llu, recorded %u:%u inode %llu): "
			 "not used", m->path, where, fmaj, fmin, (unsigned long long)fino, m->maj, m->min,
			 (unsigned long long)m->ino);
	return false;
}

/* Live: the file a process maps, opened through the process, safe from paths it controls.
 * /proc/PID/map_files/START-END is the mapped file itself (even deleted or replaced since) while
 * the process maps it there: by the time a sample needs it, the process may have unmapped it
 * and mapped another file at the same range (dlclose, dlopen), so the link names that file: it
 * is used only when it is the module's (same_file). Else the path inside the process's root
 * (a container's), resolved with openat2's RESOLVE_IN_ROOT so that its symbolic links cannot
 * lead out of that root, checked the same way (the library dlclosed is still there, mostly).
 * Either is opened as every file a process names is (base_open_file): the process may have put
 * a FIFO or a device at the path since it unmapped the file (dlclose), and a FIFO must not stop
 * the recording. (It is opened when first needed, not at its MMAP record: that would narrow
 * the window, not close it, at a cost on the thread that drains the rings: docs/design.md.)
 * *other: a file was found and is not the module's. */
static bool open_live(struct uw_session *s, struct uw_module *m, const char *bid, char *p, size_t cap, bool *other)
{
	if (!m->live_pid)
		return false;
	snprintf(p, cap, "/proc/%d/map_files/%llx-%llx", (int)m->live_pid, (unsigned long long)m->live_start,
		 (unsigned long long)m->live_end);
	if (module_try_open_trusted(s, p, bid, &m->elf, other)) {
		if (same_file(s, m, m->elf, true, p)) {
			snprintf(p, cap, "%s", m->path); /* its name, for .gnu_debuglink lookups next to it */
			return true;
		}
		elfv_close(m->elf);
		m->elf = NULL;
		*other = true;
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
	bool ok = module_try_open_at(s, rfd, m->path, BASE_OPEN_IN_ROOT, bid, &m->elf, other, &why);
	close(rfd);
	if (ok) {
		snprintf(p, cap, "/proc/%d/root%s", (int)m->live_pid, m->path);
		if (!same_file(s, m, m->elf, true, p)) {
			elfv_close(m->elf);
			m->elf = NULL;
			*other = true;
			ok = false;
		}
	} else if (why == -UW_ENOTREG)
		base_log(&s->log, UW_LOG_INFO, "%s (pid %d): not a regular file now (a FIFO, device or directory): not opened",
			 m->path, (int)m->live_pid);
	return ok;
}

/* The outcome of opening a module, published for uw_module_state (read without the lock). */
static void set_state(struct uw_module *m, enum uw_module_state st)
{
	__atomic_store_n(&m->state, (uint8_t)st, __ATOMIC_RELEASE);
}

/* Opens a module's files: under its lock, when they are not open (the first time, or again
 * after they were let go while idle: module_unload). */
static bool open_files(struct uw_session *s, struct uw_module *m)
{
	/* the file's build-id is taken the first time only: a handle's identity does not change */
	bool first = m->state == UW_MODULE_UNOPENED;
	if (m->special) {
		/* without a recorded build-id (pipe mode writes them last) perf too assumes the
		 * running kernel's vdso */
		if (strcmp(m->path, "[vdso]") == 0 && module_open_vdso(s, m)) {
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
	if (m->live_pid && open_live(s, m, bid, p, sizeof(p), &mismatch))
		goto opened;
	/* perf's build-id cache first: it holds exactly the recorded file */
	if (bid && s->buildid_dir && strlen(bid) > 2) {
		snprintf(p, sizeof(p), "%s/.build-id/%.2s/%s/elf", s->buildid_dir, bid, bid + 2);
		if (module_try_open_trusted(s, p, bid, &m->elf, NULL))
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
			/* (a live process's mapping that is another file now is said so) */
			set_state(m, mismatch ? UW_MODULE_MISMATCH : UW_MODULE_MISSING);
			base_log(&s->log, UW_LOG_INFO, "%s: deleted while mapped, and no build-id to check a file against", m->path);
			return false;
		}
	}
	/* without a build-id, the file at the path only when it is the recorded one (same_file:
	 * a file of this machine when a live tracker saw it mapped; not checked under a sysroot,
	 * another machine's files) */
	bool live = __atomic_load_n(&m->live, __ATOMIC_RELAXED);
	int why = 0;
	if (module_try_open(s, p, MODULE_UNTRUSTED, bid, &m->elf, &mismatch, &why)) {
		if ((s->sysroot && !live) || same_file(s, m, m->elf, live, p))
			goto opened;
		elfv_close(m->elf);
		m->elf = NULL;
		mismatch = true;
	}
	/* a file of that name in the search directories, when it is this build */
	if (bid) {
		for (const char *f = module_search_next(s, m->path, NULL); f; f = module_search_next(s, m->path, f)) {
			if (module_try_open_trusted(s, f, bid, &m->elf, NULL)) {
				snprintf(p, sizeof(p), "%s", f);
				goto opened;
			}
		}
	}
	/* not here, or not this build: the servers may have it */
	if (bid) {
		char *fetched = module_fetch(s, m->path, m->build_id, false);
		bool ok = fetched && module_try_open_trusted(s, fetched, bid, &m->elf, NULL);
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
		/* (without a build-id, same_file said which file and why) */
		set_state(m, UW_MODULE_MISMATCH);
		if (bid)
			base_log(&s->log, UW_LOG_WARN, "%s: build-id differs from the recording's (%s); not used", m->path, bid);
		else
			base_log(&s->log, UW_LOG_INFO, "%s: no file found is the one mapped: its frames are not named", m->path);
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
	module_find_debug(s, m);
	base_log(&s->log, UW_LOG_INFO, "%s: opened %s%s%s", m->path, m->opened_path, m->dbg ? ", debug file " : "",
		 m->dbg ? m->dbg_path : "");
	return true;
}

bool module_open(struct uw_session *s, struct uw_module *m)
{
	/* opened once, by the first thread to need it; the others wait for it, then see all it
	 * did (the flag is published last) */
	if (!__atomic_load_n(&m->opened, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&m->mu);
		bool now = !m->opened;
		if (now) {
			open_files(s, m);
			__atomic_store_n(&m->opened, true, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&m->mu);
		/* opened again to name frames of processes gone (a live session): it goes back on the
		 * idle list, so the modules held open stay as many as MODULE_IDLE_MAX */
		struct module_cache *c = module_cache(s);
		if (now && __atomic_load_n(&c->evict_idle, __ATOMIC_RELAXED) && !__atomic_load_n(&m->refs, __ATOMIC_RELAXED) &&
		    uw_module_state(m) == UW_MODULE_OK)
			module_idle(s, m);
	}
	return __atomic_load_n(&m->state, __ATOMIC_ACQUIRE) == UW_MODULE_OK;
}

void module_set_opened(struct uw_module *m, enum uw_module_state state)
{
	set_state(m, state);
	__atomic_store_n(&m->opened, true, __ATOMIC_RELEASE);
}

void module_note_live(struct uw_module *m, int32_t pid, uint64_t start, uint64_t end)
{
	if (m->special)
		return;
	if (!__atomic_load_n(&m->live, __ATOMIC_RELAXED))
		__atomic_store_n(&m->live, true, __ATOMIC_RELAXED);
	if (module_is_opened(m))
		return;
	/* (under its lock: another live tracker's thread may be opening it) */
	pthread_mutex_lock(&m->mu);
	if (!m->live_pid && !m->opened) {
		m->live_pid = pid;
		m->live_start = start;
		m->live_end = end;
	}
	pthread_mutex_unlock(&m->mu);
}

/* Says (once per file) that a file of the module could not be read whole: it shrank since it
 * was opened (rebuilt or copied over in place), or memory ran out. What was made of it is
 * what could be read. */
void module_said_reads(struct uw_session *s, struct uw_module *m)
{
	session_file_shrunk(s, m->elf, m->opened_path ? m->opened_path : m->path);
	session_file_shrunk(s, m->dbg, m->dbg_path ? m->dbg_path : m->path);
	session_file_shrunk(s, m->alt, m->path);
	session_file_shrunk(s, m->mini, m->path);
}

/* Builds a module's unwind tables: under its lock, once. */
static void build_code(struct uw_session *s, struct uw_module *m)
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
	struct module_cache *c = module_cache(s);
	m->tabs.cfi.serial = __atomic_add_fetch(&c->cfi_serial, 1, __ATOMIC_RELAXED);
	m->tabs.sframe.serial = __atomic_add_fetch(&c->cfi_serial, 1, __ATOMIC_RELAXED);
	module_said_reads(s, m);
}

const struct unw_code *module_code(struct uw_session *s, struct uw_module *m)
{
	/* every frame asks: built once, by the first thread to need it, and published last */
	if (__atomic_load_n(&m->cfi_done, __ATOMIC_ACQUIRE))
		return &m->tabs.code;
	if (!module_open(s, m))
		return NULL;
	pthread_mutex_lock(&m->mu);
	if (!m->cfi_done) {
		build_code(s, m);
		__atomic_store_n(&m->cfi_done, true, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&m->mu);
	return &m->tabs.code;
}

