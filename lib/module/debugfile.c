/* SPDX-License-Identifier: MIT */
/*
 * A module's files besides itself: the ELF file opened and checked against the recorded
 * build-id, its separate debug file (build-id roots, .gnu_debuglink), its dwz supplementary
 * file, and where the .dwo files and the DWARF package of its split units are.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "module/files.h"

bool module_try_open_at(struct uw_session *s, int dirfd, const char *path, unsigned flags, const char *want_bid,
                     struct elfv **out, bool *mismatch, int *why)
{
	struct elfv *v;
	uint64_t size;
	int fd = base_open_file_at(dirfd, path, flags, 0, &size);
	int err = fd < 0 ? fd : elfv_open_fd(fd, &v);
	if (why)
		*why = err;
	if (err) {
		if (err == -ELOOP)
			base_log(&s->log, UW_LOG_WARN, "%s: a symbolic link where a recorded file was: not followed", path);
		if (base_resource_error(err))
			session_resource_fail(s, err, path);
		return false;
	}
	v->max_inflate = session_view_cap(s);
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

bool module_try_open(struct uw_session *s, const char *path, unsigned flags, const char *want_bid, struct elfv **out,
                  bool *mismatch, int *why)
{
	return module_try_open_at(s, AT_FDCWD, path, flags & ~BASE_OPEN_IN_ROOT, want_bid, out, mismatch, why);
}

bool module_try_open_trusted(struct uw_session *s, const char *path, const char *want_bid, struct elfv **out,
                          bool *mismatch)
{
	return module_try_open(s, path, 0, want_bid, out, mismatch, NULL);
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
void module_find_debug(struct uw_session *s, struct uw_module *m)
{
	char p[PATH_MAX];
	const char *bid = m->build_id;
	if (bid[0] && strlen(bid) > 2) {
		char roots[PATH_MAX * 2];
		snprintf(roots, sizeof(roots), "%s%s/usr/lib/debug", s->debug_dirs ? s->debug_dirs : "",
			 s->debug_dirs && *s->debug_dirs ? ":" : "");
		for (char *save = NULL, *dir = strtok_r(roots, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
			snprintf(p, sizeof(p), "%s/.build-id/%.2s/%s.debug", dir, bid, bid + 2);
			if (module_try_open_trusted(s, p, bid, &m->dbg, NULL))
				goto found;
		}
		if (s->buildid_dir) {
			snprintf(p, sizeof(p), "%s/.build-id/%.2s/%s/debug", s->buildid_dir, bid, bid + 2);
			if (module_try_open_trusted(s, p, bid, &m->dbg, NULL))
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
			unsigned fl = i < 2 ? MODULE_UNTRUSTED : 0; /* beside the file, or under /usr/lib/debug */
			if (access(p, R_OK) || !file_crc_matches(p, fl, m->elf->debuglink_crc))
				continue;
			if (module_try_open(s, p, fl, bid[0] ? bid : NULL, &v, NULL, NULL)) {
				m->dbg = v;
				goto found;
			}
		}
		/* the debug file of that name in the search directories */
		for (const char *f = module_search_next(s, link, NULL); f; f = module_search_next(s, link, f)) {
			struct elfv *v;
			if (strcmp(f, m->opened_path) == 0 || !file_crc_matches(f, 0, m->elf->debuglink_crc))
				continue;
			if (module_try_open_trusted(s, f, bid[0] ? bid : NULL, &v, NULL)) {
				m->dbg = v;
				snprintf(p, sizeof(p), "%s", f);
				goto found;
			}
		}
	}
	return;
found:
	m->dbg_path = session_intern(s, p, strlen(p));
}

struct elfv *module_altfile(struct uw_session *s, struct uw_module *m, struct elfv *v, const char *vpath)
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
		if (module_try_open_trusted(s, p, bid, &m->alt, NULL))
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
	if (p[0] && module_try_open(s, p, MODULE_UNTRUSTED, bid, &m->alt, NULL, NULL))
		goto found;
	/* the servers */
	{
		char *fetched = module_fetch(s, m->path, bid, true);
		bool ok = fetched && module_try_open_trusted(s, fetched, bid, &m->alt, NULL);
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

void module_fetch_debug(struct uw_session *s, struct uw_module *m)
{
	if (m->fetch_tried || m->dbg || !m->elf || m->special || m->jit || !m->build_id[0])
		return;
	m->fetch_tried = true;
	if (elfv_has_section(m->elf, ".debug_info"))
		return; /* not stripped */
	char *path = module_fetch(s, m->path, m->build_id, true);
	if (!path)
		return;
	if (module_try_open_trusted(s, path, m->build_id, &m->dbg, NULL))
		m->dbg_path = session_intern(s, path, strlen(path));
	else
		base_log(&s->log, UW_LOG_WARN, "%s: debuginfod's debug file %s is not usable", m->path, path);
	free(path);
}
struct elfv *module_open_named(struct uw_session *s, const char *path, const char *want_bid)
{
	struct elfv *v;
	return module_try_open(s, path, MODULE_UNTRUSTED, want_bid, &v, NULL, NULL) ? v : NULL;
}

/* A split unit's .dwo, where libdw looked: the name as it is when absolute (under --symfs),
 * else beside the file the skeleton is in (where it was opened, and its debug file), then in
 * the unit's compilation directory. Opened as any file a file names: never waiting on a FIFO
 * or opening a device, not through a link at the name. */
struct elfv *module_dwo_open(struct uw_session *s, const struct uw_module *m, const char *name, const char *comp_dir)
{
	const char *root = s->sysroot ? s->sysroot : "";
	char p[PATH_MAX];
	struct elfv *v;
	if (!name || !*name)
		return NULL;
	if (name[0] == '/') {
		snprintf(p, sizeof(p), "%s%s", root, name);
		return module_open_named(s, p, NULL);
	}
	const char *beside[] = { m->opened_path, m->dbg_path };
	for (size_t i = 0; i < UW_ARRAY_SIZE(beside); i++) {
		const char *f = beside[i], *sl = f ? strrchr(f, '/') : NULL;
		if (sl && snprintf(p, sizeof(p), "%.*s/%s", (int)(sl - f), f, name) < (int)sizeof(p) &&
		    (v = module_open_named(s, p, NULL)))
			return v;
	}
	if (comp_dir && comp_dir[0] == '/' &&
	    snprintf(p, sizeof(p), "%s%s/%s", root, comp_dir, name) < (int)sizeof(p))
		return module_open_named(s, p, NULL);
	return NULL;
}

/* Next to the file (as gdb and lldb look) where it was recorded and where it was opened (perf's
 * build-id cache), and next to its debug file, with or without the debug file's .debug suffix;
 * then under the debug roots, by the module's path and by its name. */
bool module_package_path(struct uw_session *s, const struct uw_module *m, unsigned *i, char *p, size_t cap)
{
	const char *root = s->sysroot ? s->sysroot : "";
	const char *dp = m->dbg_path && m->dbg_path[0] == '/' ? m->dbg_path : NULL;
	size_t dn = dp ? strlen(dp) : 0;
	for (;; (*i)++) {
		unsigned k = *i;
		int n = -1;
		if (k == 0 && m->path[0] == '/')
			n = snprintf(p, cap, "%s%s.dwp", root, m->path);
		else if (k == 1 && m->opened_path && m->opened_path[0] == '/')
			n = snprintf(p, cap, "%s.dwp", m->opened_path);
		else if (k == 2 && dp)
			n = snprintf(p, cap, "%s.dwp", dp);
		else if (k == 3 && dn > 6 && !strcmp(dp + dn - 6, ".debug"))
			n = snprintf(p, cap, "%.*s.dwp", (int)(dn - 6), dp);
		if (k >= 4) {
			/* under the debug roots (the session's, then /usr/lib/debug), two places in each */
			char roots[PATH_MAX * 2];
			snprintf(roots, sizeof(roots), "%s%s/usr/lib/debug", s->debug_dirs ? s->debug_dirs : "",
				 s->debug_dirs && *s->debug_dirs ? ":" : "");
			char *save = NULL, *dir = strtok_r(roots, ":", &save);
			for (unsigned r = 0; dir && r < (k - 4) / 2; r++)
				dir = strtok_r(NULL, ":", &save);
			if (!dir)
				return false;
			if ((k - 4) % 2 == 0 && m->path[0] == '/')
				n = snprintf(p, cap, "%s%s.dwp", dir, m->path);
			else if ((k - 4) % 2 == 1)
				n = snprintf(p, cap, "%s/%s.dwp", dir, m->name);
		}
		if (n >= 0 && (size_t)n < cap) {
			(*i)++;
			return true;
		}
	}
}
