/* SPDX-License-Identifier: MIT */
/* The session: options, logging, the module cache, the tracker and kernel symbols. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "process/process.h"
#include "symbolize/demangle.h"

void proc_free_all(struct uw_session *s);
int kallsyms_join(struct uw_session *s);
static void kallsyms_free_text(struct uw_session *s);

UW_API struct uw_session *uw_session_new(const struct uw_session_opts *opts)
{
	struct uw_session *s = calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	if (base_opts_copy(&s->opts, sizeof(s->opts), opts)) {
		free(s);
		errno = EINVAL;
		return NULL;
	}
	if (!s->opts.max_frames)
		s->opts.max_frames = 256;
	if (s->opts.max_frames > 4096) {
		free(s);
		errno = EINVAL;
		return NULL;
	}
	s->log.fn = s->opts.log;
	s->log.ctx = s->opts.log_ctx;
	s->log.level = s->opts.log_level;
	base_intern_init(&s->strings);
	base_arena_init(&s->inl_arena, 64 * 1024);
	base_map_init(&s->modules);
	base_map_init(&s->procs);
	base_map_init(&s->threads);
	base_map_init(&s->buildids);
	s->exit_grace_ns = 1000000000ull; /* late samples within 1 s of EXIT still resolve */
	const char *dd = s->opts.debug_dirs ? s->opts.debug_dirs : getenv("UNWOUND_DEBUG_PATH");
	s->debug_dirs = dd ? strdup(dd) : NULL;
	if (s->opts.buildid_dir) {
		s->buildid_dir = strdup(s->opts.buildid_dir);
	} else {
		const char *home = getenv("HOME");
		if (home && *home && asprintf(&s->buildid_dir, "%s/.debug", home) < 0)
			s->buildid_dir = NULL;
	}
	s->sysroot = s->opts.sysroot ? strdup(s->opts.sysroot) : NULL;
	s->opts.debug_dirs = s->opts.buildid_dir = s->opts.sysroot = NULL; /* not owned */
	return s;
}

UW_API void uw_session_free(struct uw_session *s)
{
	if (!s)
		return;
	kallsyms_join(s);
	proc_free_all(s);
	size_t it = 0;
	void *val;
	while (base_map_next(&s->modules, &it, NULL, &val))
		proc_module_free(val);
	base_map_free(&s->modules);
	base_map_free(&s->buildids);
	base_intern_free(&s->strings);
	base_arena_free(&s->inl_arena);
	free(s->ksyms);
	kallsyms_free_text(s);
	free(s->kallsyms_path);
	free(s->debug_dirs);
	free(s->buildid_dir);
	free(s->sysroot);
	free(s);
}

UW_API const char *uw_session_errmsg(const struct uw_session *s)
{
	return s ? s->log.errmsg : "";
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
	return m->build_id;
}

UW_API enum uw_module_state uw_module_state(const struct uw_module *m)
{
	return (enum uw_module_state)m->state;
}

UW_API void uw_session_foreach_module(struct uw_session *s, uw_module_fn fn, void *ctx)
{
	size_t it = 0;
	void *val;
	while (base_map_next(&s->modules, &it, NULL, &val))
		if (fn(ctx, val))
			return;
}

UW_API int uw_symbolize(struct uw_session *s, struct uw_module *m, uint64_t rel_pc, struct uw_symbol *out)
{
	memset(out, 0, sizeof(*out));
	if (!s || !m)
		return 0;
	struct sym *sym = (struct sym *)proc_module_symbol(s, m, rel_pc);
	if (sym) {
		if (!s->opts.no_demangle && !sym->dname)
			sym->dname = sym_demangle(&s->strings, sym->name);
		out->name = s->opts.no_demangle ? sym->name : sym->dname;
		out->start = sym->start;
		out->size = sym->end - sym->start;
		out->offset = rel_pc - sym->start;
	}
	return 0;
}

/* ---- inline chains */
struct inline_ent {
	unsigned n;
	struct uw_source_frame f[];
};

static const struct inline_ent no_inline;

UW_API int uw_symbolize_inline(struct uw_session *s, struct uw_module *m, uint64_t rel_pc,
                               const struct uw_source_frame **frames, unsigned *n)
{
	*frames = NULL;
	*n = 0;
	if (!s || !m)
		return 0;
	const struct inline_ent *e = base_map_get(&m->inlcache, rel_pc);
	if (!e) {
		if (!m->dwi_tried) {
			m->dwi_tried = true;
			/* the debug file first: a module with a debug file has no DWARF of its own */
			if (proc_module_open(s, m)) {
				m->dwi = dwi_open(m->dbg);
				if (!m->dwi)
					m->dwi = dwi_open(m->elf);
			}
		}
		struct dwi_frame tmp[DWI_MAX_DEPTH];
		unsigned k = m->dwi ? dwi_lookup(m->dwi, &s->strings, rel_pc, tmp, DWI_MAX_DEPTH) : 0;
		struct inline_ent *ne = k ? base_arena_alloc(&s->inl_arena, sizeof(*ne) + k * sizeof(ne->f[0])) : NULL;
		if (ne) {
			ne->n = k;
			for (unsigned i = 0; i < k; i++) {
				const char *fn = tmp[i].name;
				if (fn && !s->opts.no_demangle)
					fn = sym_demangle(&s->strings, fn);
				ne->f[i] = (struct uw_source_frame){ fn, tmp[i].file, tmp[i].line };
			}
			e = ne;
		} else {
			if (k)
				return -ENOMEM;
			e = &no_inline;
		}
		if (base_map_put(&m->inlcache, rel_pc, (void *)e))
			return -ENOMEM;
	}
	if (e->n) {
		*frames = e->f;
		*n = e->n;
	}
	return 0;
}

/* ---- kernel symbols */
static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* A regular file is mapped (nothing copied, only the lines read are touched); /proc/kallsyms
 * must be read. *mapped tells which. */
static int read_all(const char *path, char **out, size_t *len, bool *mapped)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat rst;
	*mapped = false;
	if (fstat(fd, &rst) == 0 && S_ISREG(rst.st_mode) && rst.st_size > 0) {
		void *m = mmap(NULL, (size_t)rst.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m != MAP_FAILED) {
			close(fd);
			*out = m;
			*len = (size_t)rst.st_size;
			*mapped = true;
			return 0;
		}
	}
	/* a snapshot file has a size; /proc/kallsyms says 0 and is a few MiB */
	struct stat st;
	size_t cap = fstat(fd, &st) == 0 && st.st_size > 0 && st.st_size < (1 << 30) ? (size_t)st.st_size + 1 : 8u << 20;
	size_t n = 0;
	char *buf = malloc(cap + 1);
	for (;;) {
		if (!buf) {
			close(fd);
			return -ENOMEM;
		}
		if (n == cap) {
			if (cap >= ((size_t)1 << 30)) { /* 1 GiB of symbols is not a kallsyms file */
				free(buf);
				close(fd);
				return -UW_ELIMIT;
			}
			cap *= 2;
			char *nb = realloc(buf, cap + 1);
			if (!nb)
				free(buf);
			buf = nb;
			continue;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = -errno;
			free(buf);
			close(fd);
			return e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = 0;
	*out = buf;
	*len = n;
	return 0;
}

static inline int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Parses "ADDR TYPE NAME[\t[module]]" lines in place: names are cut out of the buffer.
 * Runs on the helper thread: touches only s->ksyms, s->nksyms and s->kallsyms_buf, which the
 * session's thread reads only after joining. */
static int load_kallsyms_now(struct uw_session *s)
{
	char *buf = NULL;
	size_t len = 0;
	bool mapped = false;
	int err = read_all(s->kallsyms_path, &buf, &len, &mapped);
	if (err)
		return err;
	/* a line is at least "0000000000000000 t x\n" (21 bytes): size the array once */
	size_t cap = len / 21 + 1, n = 0;
	struct ksym *ks = malloc(cap * sizeof(*ks));
	if (!ks) {
		if (mapped)
			munmap(buf, len);
		else
			free(buf);
		return -ENOMEM;
	}
	bool nonzero = false, sorted = true;
	uint64_t prev = 0;
	for (const char *p = buf, *end = buf + len; p < end && n < cap;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		uint64_t addr = 0;
		int d, nd = 0;
		while (p < eol && (d = hexval(*p)) >= 0 && nd < 17) {
			addr = addr << 4 | (uint64_t)d;
			p++;
			nd++;
		}
		if (nd && nd <= 16 && eol - p >= 4 && p[0] == ' ' && p[2] == ' ') {
			char type = p[1];
			if (type == 't' || type == 'T' || type == 'w' || type == 'W') {
				const char *name = p + 3, *ne = name;
				while (ne < eol && *ne != ' ' && *ne != '\t')
					ne++;
				if (ne > name && ne - name < 4096) {
					if (ne - name == 5 && memcmp(name, "_text", 5) == 0)
						s->kallsyms_text = addr;
					ks[n].addr = addr;
					ks[n].name = name;
					ks[n].len = (uint32_t)(ne - name);
					ks[n].interned = false;
					n++;
					nonzero |= addr != 0;
					sorted &= addr >= prev;
					prev = addr;
				}
			}
		}
		p = eol + 1;
	}
	struct base_vec v = { ks, n, cap, sizeof(struct ksym) };
	if (!nonzero) {
		if (mapped)
			munmap(buf, len);
		else
			free(buf);
		base_vec_free(&v);
		return -EPERM;
	}
	if (!sorted)
		qsort(v.data, v.len, sizeof(struct ksym), cmp_ksym);
	s->ksyms = v.data;
	s->nksyms = v.len;
	s->kallsyms_buf = buf;
	s->kallsyms_map = mapped ? len : 0;
	return 0;
}

static void kallsyms_free_text(struct uw_session *s)
{
	if (s->kallsyms_map)
		munmap(s->kallsyms_buf, s->kallsyms_map);
	else
		free(s->kallsyms_buf);
	s->kallsyms_buf = NULL;
	s->kallsyms_map = 0;
}

static void *kallsyms_main(void *arg)
{
	struct uw_session *s = arg;
	s->kallsyms_err = load_kallsyms_now(s);
	return NULL;
}

int kallsyms_join(struct uw_session *s)
{
	if (!s->kallsyms_running)
		return 0;
	pthread_join(s->kallsyms_thread, NULL);
	s->kallsyms_running = false;
	return s->kallsyms_err;
}

/* The running kernel's build-id, from /sys/kernel/notes. */
static bool running_kernel_build_id(char *hex)
{
	FILE *f = fopen("/sys/kernel/notes", "re");
	if (!f)
		return false;
	uint8_t buf[4096];
	size_t n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	struct base_cursor c = base_cursor(buf, n);
	while (base_cur_left(&c) >= 12) {
		uint32_t namesz = base_cur_u32(&c), descsz = base_cur_u32(&c), type = base_cur_u32(&c);
		size_t na = ((size_t)namesz + 3) & ~(size_t)3, da = ((size_t)descsz + 3) & ~(size_t)3;
		if (!base_cur_need(&c, na))
			return false;
		bool gnu = namesz == 4 && memcmp(c.p, "GNU", 4) == 0;
		c.p += na;
		if (!base_cur_need(&c, da))
			return false;
		if (gnu && type == 3 && descsz && descsz <= ELFV_MAX_BUILD_ID) {
			base_hex(c.p, descsz, hex);
			return true;
		}
		c.p += da;
	}
	return false;
}

UW_API int uw_session_load_kallsyms(struct uw_session *s, const char *path)
{
	char snap[PATH_MAX];
	if (!path) {
		/* The recording's kernel only: perf record keeps a snapshot of its kallsyms in the
		 * build-id cache (the modules as they were then, and cheap to read); else the running
		 * kernel's, when it is the recorded one. */
		const char *want = base_map_get(&s->buildids, base_hash_bytes("[kernel.kallsyms]", 17));
		char have[2 * ELFV_MAX_BUILD_ID + 1];
		if (want && s->buildid_dir) {
			snprintf(snap, sizeof(snap), "%s/[kernel.kallsyms]/%s/kallsyms", s->buildid_dir, want);
			if (access(snap, R_OK) == 0)
				path = snap;
		}
		if (!path && want && running_kernel_build_id(have) && strcmp(want, have) != 0)
			return base_err(&s->log, -UW_EBUILDID,
					"the recording's kernel (build-id %s) is not the running one (%s): give --kallsyms",
					want, have);
		if (!path)
			path = "/proc/kallsyms";
	}
	/* check now that the file can be read; parse it when a kernel frame is first named */
	if (access(path, R_OK))
		return base_err(&s->log, -errno, "%s: %s", path, strerror(errno));
	kallsyms_join(s);
	free(s->kallsyms_path);
	s->kallsyms_path = strdup(path);
	if (!s->kallsyms_path)
		return -ENOMEM;
	free(s->ksyms);
	kallsyms_free_text(s);
	s->ksyms = NULL;
	s->nksyms = 0;
	s->kallsyms_tried = false;
	s->kallsyms_running = pthread_create(&s->kallsyms_thread, NULL, kallsyms_main, s) == 0;
	return 0;
}

UW_API int uw_symbolize_kernel(struct uw_session *s, uint64_t addr, struct uw_symbol *out)
{
	memset(out, 0, sizeof(*out));
	if (!s->kallsyms_tried && s->kallsyms_path) {
		s->kallsyms_tried = true;
		int err = s->kallsyms_running ? kallsyms_join(s) : load_kallsyms_now(s);
		if (err)
			base_log(&s->log, UW_LOG_WARN, "%s: kernel symbols not loaded: %s", s->kallsyms_path,
				 err == -EPERM ? "addresses are hidden (kernel.kptr_restrict)" : uw_strerror(err));
		/* the same kernel at another load address (KASLR, another boot): shift by the
		 * difference of _text, as perf does with its reference symbol */
		if (!err && s->kernel_text && s->kallsyms_text && s->kernel_text != s->kallsyms_text) {
			uint64_t delta = s->kernel_text - s->kallsyms_text;
			for (size_t i = 0; i < s->nksyms; i++)
				s->ksyms[i].addr += delta;
			base_log(&s->log, UW_LOG_INFO, "kernel symbols relocated by %#llx (_text)",
				 (unsigned long long)delta);
		}
	}
	size_t lo = base_upper_bound(s->ksyms, s->nksyms, sizeof(*s->ksyms), offsetof(struct ksym, addr), addr);
	if (!lo)
		return 0;
	struct ksym *k = &s->ksyms[lo - 1];
	/* beyond the last symbol we cannot know the end: do not guess across a large gap */
	if (lo == s->nksyms && addr - k->addr > (1u << 20))
		return 0;
	if (!k->interned) {
		const char *nm = base_intern(&s->strings, k->name, k->len);
		if (!nm)
			return -ENOMEM;
		k->name = nm;
		k->interned = true;
	}
	out->name = k->name;
	out->start = k->addr;
	out->offset = addr - k->addr;
	out->size = lo < s->nksyms ? s->ksyms[lo].addr - k->addr : 0;
	return 0;
}

UW_API int uw_session_lookup(struct uw_session *s, uint32_t pid, uint64_t addr, struct uw_module **m,
                             uint64_t *rel)
{
	struct proc_find_ctx fc = { s, proc_get(s, (int32_t)pid, false) };
	struct unw_pc_info info = { 0 };
	if (!fc.p || !proc_find_pc(&fc, addr, &info))
		return -ENOENT;
	if (m)
		*m = info.module;
	if (rel)
		*rel = addr - info.bias;
	return 0;
}
