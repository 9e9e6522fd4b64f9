/* SPDX-License-Identifier: MIT */
/*
 * JIT symbol maps (/tmp/perf-PID.map, written by V8, the JVM's agents, CPython 3.12): parsed
 * from memory, merge-sorted, and used only when they can belong to the process.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolize/symbolize.h"

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
int jit_map_parse(const char *text, size_t len, struct symtab *t, size_t max_entries)
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

/* perf-PID.map (tools/perf/Documentation/jit-interface.txt): "START SIZE name" per line, hex
 * START and SIZE, written by JITs (V8 --perf-basic-prof, the JVM's agents, CPython 3.12). The
 * file is in a directory anyone may write: it is opened without following a link, only as a
 * regular file under the side-file cap, and used only when it can belong to the process. */
static int jit_load(struct uw_session *s, struct uw_module *m, struct symtab *syms, const struct jit_proc *p,
                    const char **why)
{
	uint64_t size;
	int fd = base_open_file(m->path, BASE_OPEN_NOFOLLOW, session_side_cap(s), &size);
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
	if (p->start_wall_known && p->start_wall > INT64_MIN + slack && mtime < p->start_wall - slack) {
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
	err = jit_map_parse(text, len, syms, (size_t)(session_side_cap(s) / 128));
	free(text);
	/*
	 * A process that ran before the recording (its start unknown, the map's age proves
	 * nothing) is not judged by the map as a whole: its entries are, one at a time, where a
	 * frame falls in one (tracker_find_pc). An entry names only code outside the process's file
	 * mappings, in anonymous memory or memory the recording saw no mapping of: a map that
	 * claims a program's or a library's code never renames it, and a map of another address
	 * space (a process that had this pid) names nothing its entries do not cover. The map was
	 * once refused when most of its entries lay outside the anonymous mappings the recording
	 * knew: attached to a running Node.js, most of them do (V8 lists interpreted functions at
	 * their bytecode in its heap, and made its code pages executable before the recording
	 * began, with no mapping event), and every JS frame went unnamed where perf names them.
	 */
	return err;
}

struct uw_module *jit_map_module(struct uw_session *s, const struct jit_proc *p)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/tmp/perf-%d.map", s->sysroot ? s->sysroot : "", (int)p->pid);
	if (access(path, F_OK))
		return NULL;
	struct uw_module *m = module_get(s, path, strlen(path), "", 0, 0, (uint64_t)p->pid);
	struct sym_module *sm = m ? sym_module(s, m) : NULL;
	if (!sm)
		return NULL;
	/* (read once, by the first tracker to need it) */
	pthread_mutex_lock(&m->mu);
	if (!m->jit) {
		m->jit = true;
		m->special = true;
		const char *why = NULL;
		int err = jit_load(s, m, &sm->syms, p, &why);
		__atomic_store_n(&sm->syms_done, true, __ATOMIC_RELEASE);
		__atomic_store_n(&m->cfi_done, true, __ATOMIC_RELEASE); /* JIT code: frame pointers */
		module_set_opened(m, err ? UW_MODULE_BAD : UW_MODULE_OK);
		if (err)
			base_log(&s->log, UW_LOG_WARN, "%s: not used: %s", path,
				 why ? why : err == -ELOOP ? "a symbolic link" : uw_strerror(err));
	}
	pthread_mutex_unlock(&m->mu);
	return uw_module_state(m) == UW_MODULE_OK ? m : NULL;
}

bool jit_symbol_at(const struct uw_module *jm, uint64_t pc, uint64_t *start)
{
	const struct sym_module *sm = (const struct sym_module *)module_ext(jm);
	if (!sm || !__atomic_load_n(&sm->syms_done, __ATOMIC_ACQUIRE))
		return false;
	const struct sym *sy = symtab_find(&sm->syms, pc);
	if (sy)
		*start = sy->start;
	return sy != NULL;
}
