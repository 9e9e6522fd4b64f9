/* SPDX-License-Identifier: MIT */
/*
 * Kernel symbols: a kallsyms file (the build-id cache's snapshot of the recording's kernel, or
 * /proc/kallsyms of the running one when it is the recorded kernel), read on a helper thread
 * while records are read, searched in place, relocated to the recorded kernel's _text.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "process/process.h"

/* ---- kernel symbols */
static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* names point into the file's text: their order is the file's */
	return x->name < y->name ? -1 : x->name > y->name;
}

/* The file read whole into memory (never mapped: a snapshot file cut short while mapped would
 * kill the process with SIGBUS; /proc/kallsyms cannot be mapped anyway). *mapped: false. */
static int read_all(const char *path, uint64_t max, char **out, size_t *len, bool *mapped)
{
	uint64_t fsize;
	int fd = base_open_file(path, 0, max, &fsize); /* never a FIFO or device */
	if (fd < 0)
		return fd == -EFBIG ? -UW_ELIMIT : fd;
	*mapped = false;
	/* a snapshot file has a size; /proc/kallsyms says 0 and is a few MiB */
	struct stat st;
	size_t cap = fstat(fd, &st) == 0 && st.st_size > 0 && (uint64_t)st.st_size < max ? (size_t)st.st_size + 1 : 8u << 20;
	size_t n = 0;
	char *buf = malloc(cap + 1);
	for (;;) {
		if (!buf) {
			close(fd);
			return -ENOMEM;
		}
		if (n == cap) {
			if (cap >= max) { /* the side-file cap (2 GiB): no kallsyms file is that big */
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

static const unsigned char hexdig[256] = {
	['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7, ['7'] = 8, ['8'] = 9, ['9'] = 10,
	['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
	['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

/* Parses "ADDR TYPE NAME[\t[module]]" lines in place: names are cut out of the buffer.
 * Runs on the helper thread: touches only s->ksyms, s->nksyms and s->kallsyms_buf, which the
 * session's thread reads only after joining. */
/* One kallsyms line at p: "ADDR T name[\tmodule]\n". @return the next line; *ok when it names a
 * text symbol, with *addr, *name and *nlen. */
static const char *ksym_line(const char *p, const char *end, uint64_t *addr, const char **name, uint32_t *nlen,
                             bool *ok)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));
	const char *eol = nl ? nl : end, *q = p;
	/* hex digits: hexdig[] holds value + 1, 0 for anything else */
	uint64_t a = 0;
	unsigned good = 1;
	if (eol - p > 19 && p[16] == ' ') { /* the usual 16 digits, without a branch per digit */
		for (int i = 0; i < 16; i++) {
			unsigned d = hexdig[(unsigned char)p[i]];
			good &= d != 0;
			a = a << 4 | (uint64_t)((d - 1) & 15);
		}
		q = p + 16;
	} else {
		while (q < eol && q - p < 17 && hexdig[(unsigned char)*q]) {
			a = a << 4 | (uint64_t)(hexdig[(unsigned char)*q] - 1);
			q++;
		}
		good = q > p && q - p <= 16;
	}
	*addr = a;
	*ok = false;
	const char *next = nl ? nl + 1 : end;
	if (!good || eol - q < 4 || q[0] != ' ' || q[2] != ' ')
		return next;
	char type = q[1];
	if (type != 't' && type != 'T' && type != 'w' && type != 'W')
		return next;
	/* a module's symbol ends in "\t[module]"; names have no blanks */
	const char *nm = q + 3, *ne = eol;
	if (ne[-1] == ']') {
		const char *tab = memchr(nm, '\t', (size_t)(eol - nm));
		if (tab)
			ne = tab;
	}
	if (ne == nm || ne - nm >= 4096)
		return next;
	*name = nm;
	*nlen = (uint32_t)(ne - nm);
	*ok = true;
	return next;
}

/* The address at the start of a line (0 when it has none). */
static uint64_t ksym_addr_at(const char *p, const char *end)
{
	uint64_t a;
	const char *nm;
	uint32_t nl;
	bool ok;
	ksym_line(p, end, &a, &nm, &nl, &ok);
	return a;
}

/* Offset of the first line that starts at or after off. */
static size_t ksym_line_from(const char *t, size_t n, size_t off)
{
	if (off == 0 || off >= n)
		return off >= n ? n : 0;
	const char *nl = memchr(t + off - 1, '\n', n - off + 1);
	return nl ? (size_t)(nl - t) + 1 : n;
}

/* The text symbols of [p, end) into an array sorted by address (file order among equals). */
static int ksym_parse(struct uw_session *s, const char *p, const char *end, struct ksym **out, size_t *nout)
{
	size_t cap = (size_t)(end - p) / 40 + 64, n = 0;
	struct ksym *ks = malloc(cap * sizeof(*ks));
	if (!ks)
		return -ENOMEM;
	bool sorted = true;
	uint64_t prev = 0;
	while (p < end) {
		uint64_t addr;
		const char *name;
		uint32_t len;
		bool ok;
		p = ksym_line(p, end, &addr, &name, &len, &ok);
		if (!ok)
			continue;
		if (n == cap) {
			struct ksym *nk = realloc(ks, cap * 2 * sizeof(*ks));
			if (!nk) {
				free(ks);
				return -ENOMEM;
			}
			ks = nk;
			cap *= 2;
		}
		if (len == 5 && memcmp(name, "_text", 5) == 0)
			s->kallsyms_text = addr;
		ks[n++] = (struct ksym){ addr, name, len, false };
		sorted &= addr >= prev;
		prev = addr;
	}
	if (!sorted)
		qsort(ks, n, sizeof(*ks), cmp_ksym);
	*out = ks;
	*nout = n;
	return 0;
}

/*
 * /proc/kallsyms (and perf's copy of it) lists the kernel image's symbols sorted by address (the
 * kernel binary-searches that table itself), then modules, BPF and trampolines, whose lines end
 * in "\t[owner]". Parsing 120,000 lines costs milliseconds, so the image's part is searched in
 * place: its end is found by binary search for the first line with a tab, its order is checked at
 * 64 points, and only the rest is parsed into an array. A file that fails the checks is parsed
 * whole.
 */
static int load_kallsyms_now(struct uw_session *s)
{
	char *buf = NULL;
	size_t len = 0;
	bool mapped = false;
	int err = read_all(s->kallsyms_path, proc_side_cap(s), &buf, &len, &mapped);
	if (err)
		return err;
	size_t core = 0;
	{
		/* the first line holding a tab */
		size_t lo = 0, hi = len;
		while (lo < hi) {
			size_t mid = ksym_line_from(buf, len, lo + (hi - lo) / 2);
			if (mid >= hi)
				mid = ksym_line_from(buf, len, lo + 1);
			if (mid >= hi)
				break;
			const char *nl = memchr(buf + mid, '\n', len - mid);
			if (memchr(buf + mid, '\t', (size_t)((nl ? nl : buf + len) - (buf + mid))))
				hi = mid;
			else
				lo = mid;
		}
		const char *nl = memchr(buf + lo, '\n', len - lo);
		bool tab = memchr(buf + lo, '\t', (size_t)((nl ? nl : buf + len) - (buf + lo))) != NULL;
		core = tab ? lo : hi;
		/* the image's part: sorted at 64 points, with real addresses */
		uint64_t prev = 0;
		for (unsigned i = 0; i <= 64 && core; i++) {
			size_t at = ksym_line_from(buf, core, (size_t)((double)core * i / 64.0));
			if (at >= core)
				break;
			uint64_t a = ksym_addr_at(buf + at, buf + core);
			if (a < prev) {
				core = 0;
				break;
			}
			prev = a;
		}
		if (prev == 0)
			core = 0;
	}
	if (core) {
		const char *t = memmem(buf, core, " T _text\n", 9);
		if (t) {
			const char *ls = t;
			while (ls > buf && ls[-1] != '\n')
				ls--;
			s->kallsyms_text = ksym_addr_at(ls, buf + core);
		}
	}
	struct ksym *ks = NULL;
	size_t n = 0;
	err = ksym_parse(s, buf + core, buf + len, &ks, &n);
	bool nonzero = core != 0;
	for (size_t i = 0; i < n && !nonzero; i++)
		nonzero = ks[i].addr != 0;
	if (err || !nonzero) {
		if (mapped)
			munmap(buf, len);
		else
			free(buf);
		free(ks);
		return err ? err : -EPERM;
	}
	s->ksyms = ks;
	s->nksyms = n;
	s->kcore_len = core;
	s->kallsyms_buf = buf;
	s->kallsyms_map = mapped ? len : 0;
	return 0;
}

/* The last text symbol at or below addr in the sorted image part, and the next text symbol's address
 * above addr (0: none). */
static bool kcore_find(const struct uw_session *s, uint64_t addr, uint64_t *sym, const char **name, uint32_t *nlen,
                       uint64_t *next)
{
	const char *t = s->kallsyms_buf, *end = t + s->kcore_len;
	size_t n = s->kcore_len, lo = 0, hi = n;
	*next = 0;
	if (!n || ksym_addr_at(t, end) > addr)
		return false;
	while (true) {
		size_t mid = ksym_line_from(t, n, lo + (hi - lo) / 2);
		if (mid >= hi)
			mid = ksym_line_from(t, n, lo + 1);
		if (mid >= hi)
			break;
		if (ksym_addr_at(t + mid, end) <= addr)
			lo = mid;
		else
			hi = mid;
	}
	/* the next text symbol after lo, for the size */
	for (const char *p = t + hi; p < end;) {
		uint64_t a;
		const char *nm;
		uint32_t nl;
		bool ok;
		p = ksym_line(p, end, &a, &nm, &nl, &ok);
		if (ok && a > addr) {
			*next = a;
			break;
		}
	}
	/* back from lo to a text symbol (data symbols sit between text only at section ends) */
	const char *p = t + lo;
	for (unsigned i = 0; i < 4096; i++) {
		bool ok;
		ksym_line(p, end, sym, name, nlen, &ok);
		if (ok)
			return true;
		if (p == t)
			return false;
		p--;
		while (p > t && p[-1] != '\n')
			p--;
	}
	return false;
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
	pthread_setname_np(pthread_self(), "uw-kallsyms");
	s->kallsyms_err = load_kallsyms_now(s);
	return NULL;
}

static int kallsyms_join(struct uw_session *s)
{
	if (!s->kallsyms_running)
		return 0;
	pthread_join(s->kallsyms_thread, NULL);
	s->kallsyms_running = false;
	return s->kallsyms_err;
}

/* The running kernel's build-id, from /sys/kernel/notes. */
bool running_kernel_build_id(char *hex)
{
	FILE *f = fopen("/sys/kernel/notes", "re");
	if (!f)
		return false;
	uint8_t buf[4096];
	size_t n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	uint8_t bid[ELFV_MAX_BUILD_ID];
	size_t len = elfv_notes_build_id(buf, n, bid);
	if (len)
		base_hex(bid, len, hex);
	return len != 0;
}

UW_API int uw_session_load_kallsyms(struct uw_session *s, const char *path)
{
	char snap[PATH_MAX];
	if (!path) {
		/* The recording's kernel only: perf record keeps a snapshot of its kallsyms in the
		 * build-id cache (the modules as they were then, and cheap to read); else the running
		 * kernel's, when it is the recorded one. */
		const char *want = s->kernel_build_id[0] ? s->kernel_build_id : NULL;
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

static int symbolize_kernel(struct uw_session *s, uint64_t addr, struct uw_symbol *out)
{
	if (!s->kallsyms_tried && s->kallsyms_path) {
		s->kallsyms_tried = true;
		int err = s->kallsyms_running ? kallsyms_join(s) : load_kallsyms_now(s);
		if (base_resource_error(err))
			proc_resource_fail(s, err, s->kallsyms_path);
		else if (err)
			base_log(&s->log, UW_LOG_WARN, "%s: kernel symbols not loaded: %s", s->kallsyms_path,
				 err == -EPERM ? "addresses are hidden (kernel.kptr_restrict)" : uw_strerror(err));
		/* the same kernel at another load address (KASLR, another boot): shift by the
		 * difference of _text, as perf does with its reference symbol */
		if (!err && s->kernel_text && s->kallsyms_text && s->kernel_text != s->kallsyms_text) {
			uint64_t delta = s->kernel_text - s->kallsyms_text;
			s->ksym_delta = delta;
			base_log(&s->log, UW_LOG_INFO, "kernel symbols relocated by %#llx (_text)",
				 (unsigned long long)delta);
		}
	}
	/* the loaded file's addresses, shifted to the recorded kernel's (KASLR) */
	uint64_t x = addr - s->ksym_delta, start = 0, next = 0, cnext;
	const char *name = NULL;
	uint32_t nlen = 0;
	bool interned = false;
	struct ksym *k = NULL;
	size_t lo = base_upper_bound(s->ksyms, s->nksyms, sizeof(*s->ksyms), offsetof(struct ksym, addr), x);
	if (lo) {
		k = &s->ksyms[lo - 1];
		start = k->addr;
		name = k->name;
		nlen = k->len;
		interned = k->interned;
	}
	if (lo < s->nksyms)
		next = s->ksyms[lo].addr;
	uint64_t csym;
	const char *cname;
	uint32_t clen;
	if (s->kcore_len && kcore_find(s, x, &csym, &cname, &clen, &cnext)) {
		if (!name || csym > start) {
			start = csym;
			name = cname;
			nlen = clen;
			interned = false;
			k = NULL;
		}
		if (cnext && (!next || cnext < next))
			next = cnext;
	} else if (s->kcore_len && cnext && (!next || cnext < next)) {
		next = cnext;
	}
	if (!name)
		return 0;
	/* beyond the last symbol we cannot know the end: do not guess across a large gap */
	if (!next && x - start > (1u << 20))
		return 0;
	if (!interned) {
		const char *nm = proc_intern(s, name, nlen);
		if (!nm)
			return -ENOMEM;
		name = nm;
		if (k) {
			k->name = nm;
			k->interned = true;
		}
	}
	out->name = name;
	out->start = start + s->ksym_delta;
	out->offset = x - start;
	out->size = next ? next - start : 0;
	return 0;
}

UW_API int uw_symbolize_kernel(struct uw_session *s, uint64_t addr, struct uw_symbol *out)
{
	memset(out, 0, sizeof(*out));
	if (!s)
		return 0;
	proc_lock(s); /* (serialized, as symbolization is) */
	int err = symbolize_kernel(s, addr, out);
	proc_unlock(s);
	return err;
}

void proc_kallsyms_end(struct uw_session *s)
{
	kallsyms_join(s);
	free(s->ksyms);
	s->ksyms = NULL;
	kallsyms_free_text(s);
	free(s->kallsyms_path);
	s->kallsyms_path = NULL;
}
