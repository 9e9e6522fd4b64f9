/* SPDX-License-Identifier: MIT */
/*
 * perf's build-id cache, written as perf record keeps it: DIR/NAME/HEX/LEAF holds the file's
 * bytes (LEAF: elf, vdso for [vdso], kallsyms for [kernel.kallsyms]) and DIR/.build-id/HE/X...
 * is a link to ../../NAME/HEX. So a recording stays readable, by perf report and by unwound
 * report, after the file at its path changed (a rebuild, an upgrade): both look files up there
 * by the build-id the recording names.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "module/files.h"

/* mkdir -p of path's first len bytes (0755). */
static int mkdirs(char *path)
{
	for (char *p = path + 1;; p++) {
		if (*p != '/' && *p)
			continue;
		char c = *p;
		*p = 0;
		int e = mkdir(path, 0755) && errno != EEXIST ? -errno : 0;
		*p = c;
		if (e)
			return e;
		if (!c)
			return 0;
	}
}

/* A name the cache can hold: an absolute path without . or .. components, or [special]. */
static bool cacheable_name(const char *name)
{
	if (name[0] == '[')
		return !strchr(name, '/');
	if (name[0] != '/')
		return false;
	for (const char *p = name; *p; p++) {
		if (*p != '/')
			continue;
		const char *c = p + 1;
		size_t n = strcspn(c, "/");
		if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
	}
	return true;
}

bool bidcache_has(const char *dir, const char *hex, const char *leaf)
{
	char p[PATH_MAX];
	struct stat st;
	return strlen(hex) > 2 &&
	       (size_t)snprintf(p, sizeof(p), "%s/.build-id/%.2s/%s/%s", dir, hex, hex + 2, leaf) < sizeof(p) &&
	       stat(p, &st) == 0;
}

int bidcache_store(const char *dir, const char *name, const char *hex, const char *leaf, int src_fd, const void *mem,
                   uint64_t size)
{
	size_t hl = strlen(hex);
	if (hl < 4 || hl > 2 * ELFV_MAX_BUILD_ID || strspn(hex, "0123456789abcdef") != hl || !cacheable_name(name))
		return -EINVAL;
	char link[PATH_MAX], at[PATH_MAX], tmp[PATH_MAX], target[PATH_MAX];
	if ((size_t)snprintf(link, sizeof(link), "%s/.build-id/%.2s/%s", dir, hex, hex + 2) >= sizeof(link) ||
	    (size_t)snprintf(at, sizeof(at), "%s%s%s/%s", dir, name[0] == '/' ? "" : "/", name, hex) >= sizeof(at) ||
	    (size_t)snprintf(target, sizeof(target), "../..%s%s/%s", name[0] == '/' ? "" : "/", name, hex) >=
		    sizeof(target) ||
	    (size_t)snprintf(tmp, sizeof(tmp), "%s/%s", link, leaf) >= sizeof(tmp))
		return -ENAMETOOLONG;
	struct stat st;
	if (stat(tmp, &st) == 0)
		return 0; /* there already */
	int err = mkdirs(at);
	if (err)
		return err;
	char file[PATH_MAX];
	if ((size_t)snprintf(file, sizeof(file), "%s/%s", at, leaf) >= sizeof(file) ||
	    (size_t)snprintf(tmp, sizeof(tmp), "%s/.%s.%d.%d.tmp", at, leaf, (int)getpid(), (int)gettid()) >=
		    sizeof(tmp))
		return -ENAMETOOLONG;
	char *buf = src_fd >= 0 ? malloc(1u << 16) : NULL;
	if (src_fd >= 0 && !buf)
		return -ENOMEM;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		free(buf);
		return -errno;
	}
	for (uint64_t off = 0; off < size && !err;) {
		size_t n = (size_t)UW_MIN(size - off, (uint64_t)(1u << 16));
		const void *p = (const uint8_t *)mem + off;
		if (src_fd >= 0) {
			ssize_t r = pread(src_fd, buf, n, (off_t)off);
			if (r <= 0) {
				err = r < 0 ? -errno : -UW_ETRUNC;
				break;
			}
			n = (size_t)r;
			p = buf;
		}
		for (size_t w = 0; w < n && !err;) {
			ssize_t r = write(fd, (const uint8_t *)p + w, n - w);
			if (r < 0 && errno != EINTR)
				err = -errno;
			else if (r > 0)
				w += (size_t)r;
		}
		off += n;
	}
	free(buf);
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, file))
		err = -errno;
	if (err) {
		unlink(tmp);
		return err;
	}
	/* the link, made last: it says the entry is whole */
	char *sl = strrchr(link, '/');
	*sl = 0;
	err = mkdirs(link);
	*sl = '/';
	if (err)
		return err;
	if (symlink(target, link) && errno != EEXIST)
		return -errno;
	return 0;
}

int module_keep_in_cache(struct uw_session *s, struct uw_module *m)
{
	if (!s->buildid_dir || !m->build_id[0] || m->jit || m->jitdump || !cacheable_name(m->path))
		return 0;
	bool vdso = strcmp(m->path, "[vdso]") == 0;
	if (m->special && !vdso)
		return 0;
	const char *leaf = vdso ? "vdso" : "elf";
	int err = -ENOENT;
	/* the file its frames were read from, while it is open (checked against the build-id then:
	 * the file at the path may have changed since), else the one at the path if it is still it */
	module_use(m);
	struct elfv *v = module_is_opened(m) ? m->elf : NULL;
	char hex[2 * ELFV_MAX_BUILD_ID + 1];
	if (v && elfv_build_id_hex(v, hex) && strcmp(hex, m->build_id) == 0 && (v->fd >= 0 || v->map))
		err = bidcache_store(s->buildid_dir, m->path, m->build_id, leaf, v->fd, v->map, v->size);
	module_unuse(m);
	if (err == -ENOENT && !vdso) {
		struct elfv *own;
		if (module_try_open(s, m->path, MODULE_UNTRUSTED, m->build_id, &own, NULL, NULL)) {
			err = bidcache_store(s->buildid_dir, m->path, m->build_id, leaf, own->fd, own->map, own->size);
			elfv_close(own);
		}
	}
	return err == -ENOENT ? 0 : err;
}
