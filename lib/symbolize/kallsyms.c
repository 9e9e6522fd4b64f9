/* SPDX-License-Identifier: MIT */
/*
 * Kernel symbols, per recording. Each tracker has its recording's kernel (struct uw_kernel):
 * what the recording says of it (the build-id, the release, _text) and the symbols chosen for
 * it on first use: a file given for it (kallsyms or vmlinux), else perf's snapshot of that
 * kernel's kallsyms in the build-id cache, else the running kernel's /proc/kallsyms when it is
 * the recorded one, else none ([unknown], as perf shows them). The tables read from files are
 * shared on the session by the file's identity and kept until the session ends: names handed
 * out point into them, and a table is never replaced under a thread that reads it. A kallsyms
 * file is searched in place and relocated to the recorded kernel's _text. It is taken only
 * when a kernel frame is to be named (a recording without kernel samples, or a report without
 * kernel frames, never touches it), once per session: a file of this user's that no one else may
 * write (perf's snapshot in the build-id cache, written under another name and renamed) is
 * mapped, which costs microseconds and touches only the pages searched; any other file
 * (/proc/kallsyms above all, whose reading costs the kernel tens of milliseconds) is read whole,
 * on a helper thread started by the first sample with kernel frames (ksym_kernel_want) and
 * joined under the session's lock by the first thread that names one.
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
#include <sys/utsname.h>
#include <unistd.h>

#include "symbolize/symbolize.h"

/* A kernel symbol table read from one file: a kallsyms text, searched in place, or a vmlinux's
 * ELF symbols (kallsyms.c). */
struct ktab {
	struct ktab *next;
	const char *path;          /* interned */
	bool vmlinux;
	uint64_t dev, ino, size;   /* the file's identity (0 for /proc files) */
	int64_t mtime_ns;
	uint64_t side_cap;
	bool mappable;             /* ours, writable by no one else: mapped, not read (ktab_get) */
	/* under the kernel symbols' lock: read on a helper thread (running), joined once (ready) */
	bool started, running, ready;
	pthread_t th;
	/* what was read: written by the reader, read by others once it is joined */
	int err;
	uint64_t text;             /* _text in the file (0: not found) */
	struct ksym *ksyms;        /* kallsyms: what is not searched in place, sorted */
	size_t nksyms;
	char *buf;                 /* the file's text; ksym names point into it */
	size_t kcore_len;          /* its first kcore_len bytes: the image's symbols, sorted, searched in place */
	size_t map_len;            /* when non-zero, buf is a mapping of this size */
	struct elfv *elf;          /* vmlinux: the file, its symbols, its build-id */
	struct symtab syms;
	char build_id[2 * ELFV_MAX_BUILD_ID + 1];
};

/* One recording's kernel (public: struct uw_kernel): what the recording says of it and the
 * symbols chosen for it. Made with its tracker, on the session's list; kept after the tracker
 * when handed out (samples carry it), else freed with it. Fields under the kernel symbols' lock. */
struct uw_kernel {
	struct uw_kernel *next;
	struct ksym_state *ks;
	char build_id[2 * ELFV_MAX_BUILD_ID + 1]; /* "" unknown */
	char release[65];          /* uname -r of the recording's machine (HEADER_OSRELEASE), "" unknown */
	uint64_t text;             /* _text of the recorded kernel (its MMAP's pgoff), 0 unknown */
	bool running;              /* a live tracker's: the running kernel */
	const char *kallsyms, *vmlinux; /* files given for it (interned), or NULL */
	bool given_bad;            /* a file given could not be used: no symbols unless another is */
	bool kept;                 /* handed out: outlives its tracker */
	bool prefetch;             /* read its symbols ahead once it is known (uw_tracker_load_*) ... */
	bool wanted;               /* ... and a sample has kernel frames (ksym_kernel_want) */
	bool decided;              /* tab and delta chosen (gen: the session's kallsyms_gen then) */
	unsigned gen;
	struct ktab *tab;          /* NULL: no symbols ([unknown]) */
	uint64_t delta;            /* recorded kernel's _text minus the file's */
};

struct ksym {
	uint64_t addr;
	const char *name;   /* into the kallsyms text (not terminated) until first used */
	uint32_t len;
	bool interned;      /* name is a NUL-terminated interned copy */
};

/* Kernel symbols on the session (part SESSION_KERNEL_SYMBOLS; kallsyms.c): tables read from
 * files, shared by every recording's kernel and kept until the session ends; each tracker's
 * kernel (struct uw_kernel). */
struct ksym_state {
	struct uw_session *s;
	pthread_mutex_t mu;        /* all of it, and the kernels' fields */
	struct ktab *ktabs;
	struct uw_kernel *kernels;
	struct uw_kernel *first_kernel; /* uw_symbolize_kernel's: the first tracker's */
	const char *kallsyms_default; /* uw_session_load_kallsyms's file (interned), or NULL */
	unsigned kallsyms_gen;     /* changes of it (kernels without a file of their own choose again) */
	uint64_t run_text;         /* the running kernel's _text (0: hidden), read once */
	bool run_text_tried;
};

/* ---- kernel symbols */
static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* names point into the file's text: their order is the file's */
	return x->name < y->name ? -1 : x->name > y->name;
}

/* Whether a file may be mapped rather than read: this user's, writable by no one else, with a
 * size (not a /proc file). A file cut short while mapped kills the reader with SIGBUS at the
 * first page past its new end; perf's build-id cache (and bidcache_store) write a snapshot under
 * another name and rename it, never in place, so only its owner could cut it, as with the DWARF
 * cache's files (dwarf_cache.c) and elfv_open_mapped. */
static bool may_map(const struct stat *st)
{
	return S_ISREG(st->st_mode) && st->st_uid == geteuid() && !(st->st_mode & (S_IWGRP | S_IWOTH)) &&
	       st->st_size > 0;
}

/* The file's text: mapped when allow_map and may_map (*mapped: true; it ends where the file
 * does, not NUL-terminated), else read whole into memory and NUL-terminated (*mapped: false:
 * /proc/kallsyms cannot be mapped anyway). Reading a 5 MiB snapshot and faulting in the buffer
 * made a whole report of a 34 MB recording 1.3x slower than mapping it. */
static int read_all(const char *path, uint64_t max, bool allow_map, char **out, size_t *len, bool *mapped)
{
	uint64_t fsize;
	int fd = base_open_file(path, 0, max, &fsize); /* never a FIFO or device */
	if (fd < 0)
		return fd == -EFBIG ? -UW_ELIMIT : fd;
	*mapped = false;
	/* a snapshot file has a size; /proc/kallsyms says 0 and is a few MiB */
	struct stat st;
	if (allow_map && fstat(fd, &st) == 0 && may_map(&st) && (uint64_t)st.st_size < max &&
	    (uint64_t)st.st_size < SIZE_MAX) {
		void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m != MAP_FAILED) {
			close(fd);
			*out = m;
			*len = (size_t)st.st_size;
			*mapped = true;
			return 0;
		}
	}
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

int ksym_keep_in_cache(struct uw_session *s, const char *hex)
{
	if (!s->buildid_dir || bidcache_has(s->buildid_dir, hex, "kallsyms"))
		return 0;
	char *buf;
	size_t len;
	bool mapped;
	int e = read_all("/proc/kallsyms", session_side_cap(s), false, &buf, &len, &mapped);
	if (e)
		return e == -ENOENT ? 0 : e;
	/* (kptr_restrict: every address 0) */
	if (len > 16 && strspn(buf, "0") < 16)
		e = bidcache_store(s->buildid_dir, "[kernel.kallsyms]", hex, "kallsyms", -1, buf, len);
	free(buf);
	return e;
}

static const unsigned char hexdig[256] = {
	['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7, ['7'] = 8, ['8'] = 9, ['9'] = 10,
	['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
	['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

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
static int ksym_parse(struct ktab *k, const char *p, const char *end, struct ksym **out, size_t *nout)
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
			k->text = addr;
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
 * whole. Runs on the helper thread: touches only the table, read by others after joining it.
 */
static int load_kallsyms_now(struct ktab *k)
{
	char *buf = NULL;
	size_t len = 0;
	bool mapped = false;
	int err = read_all(k->path, k->side_cap, k->mappable, &buf, &len, &mapped);
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
			k->text = ksym_addr_at(ls, buf + core);
		}
	}
	struct ksym *ks = NULL;
	size_t n = 0;
	err = ksym_parse(k, buf + core, buf + len, &ks, &n);
	bool nonzero = core != 0;
	for (size_t i = 0; i < n && !nonzero; i++)
		nonzero = ks[i].addr != 0;
	if (err || !nonzero) {
		if (mapped)
			munmap(buf, len);
		else
			free(buf);
		free(ks);
		/* no line of kallsyms at all: not such a file; lines with zero addresses: hidden */
		return err ? err : n || core ? -EPERM : -ENODATA;
	}
	k->ksyms = ks;
	k->nksyms = n;
	k->kcore_len = core;
	k->buf = buf;
	k->map_len = mapped ? len : 0;
	return 0;
}

/* A vmlinux: its ELF symbol table (functions, as perf reads a vmlinux), _text where .text
 * starts, and its build-id to check against the recording's. */
static int load_vmlinux_now(struct uw_session *s, struct ktab *k)
{
	int err = elfv_open(k->path, 0, &k->elf);
	if (err)
		return err;
	k->elf->max_inflate = session_view_cap(s);
	if (k->elf->build_id_len)
		elfv_build_id_hex(k->elf, k->build_id);
	struct elfv_sec text;
	if (elfv_section(k->elf, ".text", &text) == 0)
		k->text = text.addr;
	err = symtab_build(&k->syms, k->elf, NULL, false);
	if (!err && !k->syms.n)
		err = -ENODATA;
	return err;
}

/* The last text symbol at or below addr in the sorted image part, and the next text symbol's address
 * above addr (0: none). */
static bool kcore_find(const struct ktab *k, uint64_t addr, uint64_t *sym, const char **name, uint32_t *nlen,
                       uint64_t *next)
{
	const char *t = k->buf, *end = t + k->kcore_len;
	size_t n = k->kcore_len, lo = 0, hi = n;
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

/* ---- tables, shared by file */

static void *ktab_main(void *arg)
{
	struct ktab *k = arg;
	pthread_setname_np(pthread_self(), "uw-kallsyms");
	k->err = load_kallsyms_now(k);
	return NULL;
}

/* The table of a file (made when new, not read yet): found by path and, for a file, by device,
 * inode, size and modification time (a file rewritten at the path is another table). Under the
 * lock. NULL without memory. */
static struct ktab *ktab_get(struct ksym_state *ks, const char *path, bool vmlinux)
{
	struct uw_session *s = ks->s;
	struct stat st;
	bool proc = strncmp(path, "/proc/", 6) == 0;
	if (proc || stat(path, &st))
		memset(&st, 0, sizeof(st));
	for (struct ktab *k = ks->ktabs; k; k = k->next)
		if (k->vmlinux == vmlinux && !strcmp(k->path, path) && k->dev == (uint64_t)st.st_dev &&
		    k->ino == (uint64_t)st.st_ino && k->size == (uint64_t)st.st_size &&
		    k->mtime_ns == (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec)
			return k;
	struct ktab *k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	k->path = session_intern(s, path, strlen(path));
	if (!k->path) {
		free(k);
		return NULL;
	}
	k->vmlinux = vmlinux;
	k->dev = (uint64_t)st.st_dev;
	k->ino = (uint64_t)st.st_ino;
	k->size = (uint64_t)st.st_size;
	k->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	k->side_cap = session_side_cap(s);
	k->mappable = !proc && !vmlinux && may_map(&st);
	k->next = ks->ktabs;
	ks->ktabs = k;
	return k;
}

/* Starts reading a kallsyms table on a helper thread (once). Under the lock. A file mapped
 * costs microseconds: mapped on first use instead. */
static void ktab_start(struct ktab *k)
{
	if (k->started || k->vmlinux || k->mappable)
		return;
	k->started = true;
	k->running = pthread_create(&k->th, NULL, ktab_main, k) == 0;
	if (!k->running)
		k->started = false; /* read on first use instead */
}

/* The table read (joined once: whoever comes first under the lock). @return its error. */
static int ktab_ready(struct uw_session *s, struct ktab *k)
{
	if (k->ready)
		return k->err;
	if (k->running) {
		pthread_join(k->th, NULL);
		k->running = false;
	} else {
		k->err = k->vmlinux ? load_vmlinux_now(s, k) : load_kallsyms_now(k);
	}
	k->ready = true;
	return k->err;
}

/* The symbol at x (the file's address) in a read table. @return false when none. */
static bool ktab_find(struct uw_session *s, struct ktab *k, uint64_t x, struct uw_symbol *out)
{
	if (k->vmlinux) {
		const struct sym *sy = symtab_find(&k->syms, x);
		if (!sy)
			return false;
		out->name = sy->name; /* (into the file's string table, mapped until the session ends) */
		out->start = sy->start;
		out->offset = x - sy->start;
		out->size = sy->end - sy->start;
		return true;
	}
	uint64_t start = 0, next = 0, cnext;
	const char *name = NULL;
	uint32_t nlen = 0;
	bool interned = false;
	struct ksym *ks = NULL;
	size_t lo = base_upper_bound(k->ksyms, k->nksyms, sizeof(*k->ksyms), offsetof(struct ksym, addr), x);
	if (lo) {
		ks = &k->ksyms[lo - 1];
		start = ks->addr;
		name = ks->name;
		nlen = ks->len;
		interned = ks->interned;
	}
	if (lo < k->nksyms)
		next = k->ksyms[lo].addr;
	uint64_t csym;
	const char *cname;
	uint32_t clen;
	if (k->kcore_len && kcore_find(k, x, &csym, &cname, &clen, &cnext)) {
		if (!name || csym > start) {
			start = csym;
			name = cname;
			nlen = clen;
			interned = false;
			ks = NULL;
		}
		if (cnext && (!next || cnext < next))
			next = cnext;
	} else if (k->kcore_len && cnext && (!next || cnext < next)) {
		next = cnext;
	}
	if (!name)
		return false;
	/* beyond the last symbol we cannot know the end: do not guess across a large gap */
	if (!next && x - start > (1u << 20))
		return false;
	if (!interned) {
		const char *nm = session_intern(s, name, nlen);
		if (!nm)
			return false;
		name = nm;
		if (ks) {
			ks->name = nm;
			ks->interned = true;
		}
	}
	out->name = name;
	out->start = start;
	out->offset = x - start;
	out->size = next ? next - start : 0;
	return true;
}

static void ktab_free(struct ktab *k)
{
	if (k->running)
		pthread_join(k->th, NULL);
	free(k->ksyms);
	if (k->map_len)
		munmap(k->buf, k->map_len);
	else
		free(k->buf);
	symtab_free(&k->syms);
	elfv_close(k->elf);
	free(k);
}

/* ---- the running kernel */

/* The running kernel's build-id (hex), from /sys/kernel/notes. */
bool ksym_running_build_id(char *hex)
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

/* The running kernel's _text, from the first lines of /proc/kallsyms (the image's symbols come
 * first, _text among the first few); 0 when hidden or not found. Once per session, under the
 * lock. */
static uint64_t running_text(struct ksym_state *ks)
{
	if (ks->run_text_tried)
		return ks->run_text;
	ks->run_text_tried = true;
	FILE *f = fopen("/proc/kallsyms", "re");
	if (!f)
		return 0;
	char line[512];
	for (unsigned i = 0; i < 4096 && fgets(line, sizeof(line), f); i++) {
		unsigned long long a;
		char type, name[256];
		if (sscanf(line, "%llx %c %255s", &a, &type, name) == 3 && !strcmp(name, "_text")) {
			ks->run_text = a;
			break;
		}
	}
	fclose(f);
	return ks->run_text;
}

/* ---- the session's part */

static void ksym_state_free(void *p)
{
	struct ksym_state *ks = p;
	for (struct ktab *k = ks->ktabs, *next; k; k = next) {
		next = k->next;
		ktab_free(k);
	}
	for (struct uw_kernel *k = ks->kernels, *next; k; k = next) {
		next = k->next;
		free(k);
	}
	pthread_mutex_destroy(&ks->mu);
	free(ks);
}

/* The session's kernel symbols (made on first use); NULL without memory. */
static struct ksym_state *ksym_state(struct uw_session *s)
{
	struct ksym_state *ks = session_part(s, SESSION_KERNEL_SYMBOLS);
	if (UW_LIKELY(ks))
		return ks;
	if (!(ks = calloc(1, sizeof(*ks))))
		return NULL;
	ks->s = s;
	pthread_mutex_init(&ks->mu, NULL);
	return session_part_attach(s, SESSION_KERNEL_SYMBOLS, ks, ksym_state_free);
}

/* ---- a recording's kernel */

/* A kernel on the session's list (the caller holds the lock). */
static struct uw_kernel *kernel_add(struct ksym_state *ks, bool running)
{
	struct uw_kernel *k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	k->ks = ks;
	k->running = running;
	k->next = ks->kernels;
	ks->kernels = k;
	/* uw_symbolize_kernel names with the session's first recording's kernel */
	if (!ks->first_kernel) {
		ks->first_kernel = k;
		k->kept = true;
	}
	return k;
}

struct uw_kernel *ksym_kernel_new(struct uw_session *s, bool running)
{
	struct ksym_state *ks = ksym_state(s);
	if (!ks)
		return NULL;
	pthread_mutex_lock(&ks->mu);
	struct uw_kernel *k = kernel_add(ks, running);
	pthread_mutex_unlock(&ks->mu);
	return k;
}

void ksym_kernel_drop(struct uw_kernel *k)
{
	if (!k)
		return;
	struct ksym_state *ks = k->ks;
	pthread_mutex_lock(&ks->mu);
	if (!k->kept) {
		for (struct uw_kernel **pp = &ks->kernels; *pp; pp = &(*pp)->next) {
			if (*pp == k) {
				*pp = k->next;
				free(k);
				break;
			}
		}
	}
	pthread_mutex_unlock(&ks->mu);
}

struct uw_kernel *ksym_kernel_keep(struct uw_kernel *k)
{
	if (k && !__atomic_load_n(&k->kept, __ATOMIC_RELAXED)) {
		pthread_mutex_lock(&k->ks->mu);
		__atomic_store_n(&k->kept, true, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&k->ks->mu);
	}
	return k;
}

/* Where the recording's kernel symbols come from (a table not read yet, or NULL: none, with
 * why). Under the lock. */
static struct ktab *kernel_choose(struct ksym_state *ks, struct uw_kernel *k, char *why, size_t cap)
{
	struct uw_session *s = ks->s;
	/* a vmlinux over kallsyms, as perf */
	if (k->vmlinux || k->kallsyms)
		return ktab_get(ks, k->vmlinux ? k->vmlinux : k->kallsyms, k->vmlinux != NULL);
	if (k->given_bad)
		return NULL; /* (said when it was given) */
	if (ks->kallsyms_default)
		return ktab_get(ks, ks->kallsyms_default, false);
	char have[2 * ELFV_MAX_BUILD_ID + 1] = "";
	if (k->build_id[0]) {
		/* perf record keeps a snapshot of the recorded kernel's kallsyms in the build-id
		 * cache (its modules as they were then) */
		char snap[PATH_MAX];
		uint64_t size;
		if (s->buildid_dir) {
			snprintf(snap, sizeof(snap), "%s/[kernel.kallsyms]/%s/kallsyms", s->buildid_dir, k->build_id);
			int fd = base_open_file(snap, 0, 0, &size);
			if (fd >= 0) {
				close(fd);
				return ktab_get(ks, snap, false);
			}
		}
		if (ksym_running_build_id(have) && !strcmp(have, k->build_id))
			return ktab_get(ks, "/proc/kallsyms", false);
		snprintf(why, cap, "the recording's kernel (build-id %s) is not the running one (%s) and %s/[kernel.kallsyms] has no kallsyms of it",
			 k->build_id, have[0] ? have : "unknown", s->buildid_dir ? s->buildid_dir : "~/.debug");
		return NULL;
	}
	if (k->running)
		return ktab_get(ks, "/proc/kallsyms", false);
	/* no build-id: the same release loaded at the same place is the running kernel */
	struct utsname u;
	uint64_t rt = k->text && k->release[0] ? running_text(ks) : 0;
	if (k->release[0] && k->text && uname(&u) == 0 && !strcmp(u.release, k->release) && rt == k->text)
		return ktab_get(ks, "/proc/kallsyms", false);
	snprintf(why, cap, "the recording has no build-id for its kernel, and its kernel (Linux %s, _text %#" PRIx64 ") is not the running one (Linux %s, _text %#" PRIx64 ")",
		 k->release[0] ? k->release : "unknown", k->text, uname(&u) == 0 ? u.release : "?", running_text(ks));
	return NULL;
}

/* Reads ahead the symbols the recording's kernel will be named with, when it is known enough
 * to say (uw_tracker_load_kallsyms asked for it). Under the lock. */
static void kernel_prefetch(struct ksym_state *ks, struct uw_kernel *k)
{
	if (!k->prefetch || !k->wanted || k->decided)
		return;
	/* without a file given, the choice waits for the build-id or _text */
	if (!k->vmlinux && !k->kallsyms && !k->given_bad && !ks->kallsyms_default && !k->build_id[0] && !k->text &&
	    !k->running)
		return;
	char why[512];
	struct ktab *t = kernel_choose(ks, k, why, sizeof(why));
	if (t)
		ktab_start(t);
}

/* The symbols of the recording's kernel, chosen once (again when uw_session_load_kallsyms
 * changes the session's file), read, and relocated. Under the lock. */
static void kernel_decide(struct ksym_state *ks, struct uw_kernel *k)
{
	struct uw_session *s = ks->s;
	bool own = k->vmlinux || k->kallsyms || k->given_bad;
	if (k->decided && (own || k->gen == ks->kallsyms_gen))
		return;
	k->decided = true;
	k->gen = ks->kallsyms_gen;
	k->tab = NULL;
	k->delta = 0;
	char why[512] = "";
	struct ktab *t = kernel_choose(ks, k, why, sizeof(why));
	if (!t) {
		if (why[0])
			base_log(&s->log, UW_LOG_WARN, "kernel frames are not named: %s (give --kallsyms or --vmlinux)", why);
		return;
	}
	int err = ktab_ready(s, t);
	if (err && base_resource_error(err)) {
		session_resource_fail(s, err, t->path);
		return;
	}
	if (err) {
		base_log(&s->log, UW_LOG_WARN, "%s: kernel symbols not loaded: %s", t->path,
			 err == -EPERM     ? "addresses are hidden (kernel.kptr_restrict)"
			 : err == -ENODATA ? "no function symbols in it"
					   : uw_strerror(err));
		return;
	}
	if (t->vmlinux && k->build_id[0] && t->build_id[0] && strcmp(t->build_id, k->build_id)) {
		base_log(&s->log, UW_LOG_WARN, "%s: build-id %s is not the recorded kernel's (%s): not used", t->path,
			 t->build_id, k->build_id);
		return;
	}
	k->tab = t;
	/* the same kernel at another load address (KASLR, another boot): shift by the difference
	 * of _text, as perf does with its reference symbol */
	if (k->text && t->text && k->text != t->text) {
		k->delta = k->text - t->text;
		base_log(&s->log, UW_LOG_INFO, "%s: kernel symbols relocated by %#llx (_text)", t->path,
			 (unsigned long long)k->delta);
	} else {
		base_log(&s->log, UW_LOG_INFO, "kernel symbols from %s", t->path);
	}
}

/* Names addr of kernel k. Under the lock. */
static int kernel_symbolize(struct ksym_state *ks, struct uw_kernel *k, uint64_t addr, struct uw_symbol *out)
{
	kernel_decide(ks, k);
	if (!k->tab)
		return 0;
	uint64_t x = addr - k->delta; /* the file's address */
	if (ktab_find(ks->s, k->tab, x, out))
		out->start += k->delta;
	return 0;
}

void ksym_kernel_note_build_id(struct uw_kernel *k, const char *hex)
{
	if (!k || !hex[0])
		return;
	pthread_mutex_lock(&k->ks->mu);
	if (!k->build_id[0]) {
		snprintf(k->build_id, sizeof(k->build_id), "%s", hex);
		kernel_prefetch(k->ks, k);
	}
	pthread_mutex_unlock(&k->ks->mu);
}

void ksym_kernel_note_text(struct uw_kernel *k, uint64_t text)
{
	if (!k || !text)
		return;
	pthread_mutex_lock(&k->ks->mu);
	if (!k->text) {
		k->text = text;
		kernel_prefetch(k->ks, k);
	}
	pthread_mutex_unlock(&k->ks->mu);
}

void ksym_kernel_want(struct uw_kernel *k)
{
	if (!k || __atomic_load_n(&k->wanted, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&k->ks->mu);
	if (!k->wanted) {
		__atomic_store_n(&k->wanted, true, __ATOMIC_RELAXED);
		kernel_prefetch(k->ks, k);
	}
	pthread_mutex_unlock(&k->ks->mu);
}

void ksym_kernel_note_release(struct uw_kernel *k, const char *release)
{
	if (!k || !release)
		return;
	pthread_mutex_lock(&k->ks->mu);
	if (!k->release[0])
		snprintf(k->release, sizeof(k->release), "%s", release);
	pthread_mutex_unlock(&k->ks->mu);
}

/* A file given for the kernel's symbols: readable now, a regular file (not waited on). */
static int check_file(struct uw_session *s, const char *path)
{
	uint64_t size;
	int fd = base_open_file(path, 0, 0, &size);
	if (fd < 0)
		return base_err(&s->log, fd, "%s: %s", path, uw_strerror(fd));
	close(fd);
	return 0;
}

int ksym_kernel_load(struct uw_kernel *k, const char *path, bool vmlinux)
{
	if (!k || (vmlinux && !path))
		return -EINVAL;
	struct ksym_state *ks = k->ks;
	struct uw_session *s = ks->s;
	int err = path ? check_file(s, path) : 0;
	const char *ip = path && !err ? session_intern(s, path, strlen(path)) : NULL;
	if (path && !err && !ip)
		err = -ENOMEM;
	pthread_mutex_lock(&ks->mu);
	k->decided = false;
	k->prefetch = true;
	if (!path) {
		k->kallsyms = k->vmlinux = NULL;
		k->given_bad = false;
	} else if (err) {
		k->given_bad = true;
	} else if (vmlinux) {
		k->vmlinux = ip;
	} else {
		k->kallsyms = ip;
	}
	if (vmlinux && !err) {
		/* read now: its build-id says at once whether it is the recorded kernel */
		struct ktab *tab = ktab_get(ks, ip, true);
		err = !tab ? -ENOMEM : ktab_ready(s, tab);
		if (err)
			err = base_err(&s->log, err, "%s: no kernel symbols read: %s", path,
				       err == -ENODATA ? "no function symbols in it" : uw_strerror(err));
		else if (k->build_id[0] && tab->build_id[0] && strcmp(k->build_id, tab->build_id))
			err = base_err(&s->log, -UW_EBUILDID, "%s: build-id %s is not the recorded kernel's (%s)", path,
				       tab->build_id, k->build_id);
		if (err) {
			k->vmlinux = NULL;
			k->given_bad = true;
		}
	}
	kernel_prefetch(ks, k);
	pthread_mutex_unlock(&ks->mu);
	return err;
}

UW_API int uw_kernel_symbolize(struct uw_kernel *k, uint64_t addr, struct uw_symbol *out)
{
	memset(out, 0, sizeof(*out));
	if (!k)
		return 0;
	pthread_mutex_lock(&k->ks->mu);
	int err = kernel_symbolize(k->ks, k, addr, out);
	pthread_mutex_unlock(&k->ks->mu);
	return err;
}

UW_API int uw_session_load_kallsyms(struct uw_session *s, const char *path)
{
	int err = path ? check_file(s, path) : 0;
	if (err)
		return err;
	const char *ip = path ? session_intern(s, path, strlen(path)) : NULL;
	struct ksym_state *ks = ksym_state(s);
	if ((path && !ip) || !ks)
		return -ENOMEM;
	pthread_mutex_lock(&ks->mu);
	ks->kallsyms_default = ip;
	ks->kallsyms_gen++;
	struct ktab *t = ip ? ktab_get(ks, ip, false) : NULL;
	if (t)
		ktab_start(t); /* read while records are */
	pthread_mutex_unlock(&ks->mu);
	return 0;
}

UW_API int uw_symbolize_kernel(struct uw_session *s, uint64_t addr, struct uw_symbol *out)
{
	memset(out, 0, sizeof(*out));
	struct ksym_state *ks = s ? ksym_state(s) : NULL;
	if (!ks)
		return s ? -ENOMEM : 0;
	pthread_mutex_lock(&ks->mu);
	/* the first recording's kernel; without one, the running kernel */
	struct uw_kernel *k = ks->first_kernel ? ks->first_kernel : kernel_add(ks, true);
	int err = k ? kernel_symbolize(ks, k, addr, out) : -ENOMEM;
	pthread_mutex_unlock(&ks->mu);
	return err;
}
