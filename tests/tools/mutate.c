/* SPDX-License-Identifier: MIT */
/*
 * A seeded mutation campaign: the test programs' ELF files and their recordings, damaged the ways
 * hostile files are damaged, through the whole pipeline (reader, tracker, unwinding, symbols,
 * inline frames, every writer), one case per seed, in this process. A case that crashes, hangs
 * (a case has 20 seconds) or trips a sanitizer fails the run; the line before names its seed,
 * and `mutate DIR --seed N --cases 1` runs it again.
 *
 *   mutate DIR [--seed FIRST] [--cases N]
 *
 * DIR holds rec.data (a --call-graph dwarf recording), rec-z.data (the same with perf record -z)
 * and files.txt: the ELF files the recordings name, one path per line.
 *
 * ELF mutations: random bytes; a section header's offset, size, type, link or flags; a DWARF
 * unit header's length, version, abbreviation offset or address size; .eh_frame's CIE and FDE
 * lengths and pointers; notes' name and descriptor sizes; a debug section marked compressed
 * with an absurd size. The damaged file is put in place of the recorded one in a system root
 * (--symfs) of the case's own. Recording mutations: records swapped, repeated, or dropped;
 * MMAP2 records overlapping others; absurd sizes in headers, samples and stacks; mapped paths
 * turned into a FIFO, a directory, a link to /dev/urandom, /dev/zero itself.
 */
#include <elf.h>
#ifndef ELFCOMPRESS_ZSTD
#define ELFCOMPRESS_ZSTD 2
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unwound/unwound.h>

struct buf {
	uint8_t *p;
	size_t n;
};

static uint64_t rng;

static uint64_t next(void)
{
	/* splitmix64: one seed gives one case, on every machine */
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t below(uint64_t n)
{
	return n ? next() % n : 0;
}

/* An interesting value for a size or offset field. */
static uint64_t absurd(uint64_t old)
{
	static const uint64_t v[] = { 0, 1, 7, 0xff, 0xffff, 0x7fffffff, 0xffffffff, 0xfffffff0, 0x100000000ull,
				      UINT64_MAX, UINT64_MAX - 7, 1ull << 62 };
	switch (below(4)) {
	case 0: return v[below(sizeof(v) / sizeof(v[0]))];
	case 1: return old + 1 + below(64);
	case 2: return old - 1 - below(64);
	default: return old ^ (1ull << below(64));
	}
}

static bool read_file(const char *path, struct buf *b)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return false;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	b->p = malloc(n > 0 ? (size_t)n : 1);
	b->n = n > 0 ? (size_t)n : 0;
	bool ok = b->p && fread(b->p, 1, b->n, f) == b->n;
	fclose(f);
	return ok;
}

static bool write_file(const char *path, const uint8_t *p, size_t n, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0)
		return false;
	bool ok = write(fd, p, n) == (ssize_t)n;
	close(fd);
	return ok;
}

/* mkdir -p of path's directory */
static void make_parent(char *path)
{
	for (char *s = path + 1; (s = strchr(s, '/')); s++) {
		*s = 0;
		mkdir(path, 0755);
		*s = '/';
	}
}

/* ---- ELF */

static Elf64_Shdr *shdr(struct buf *b, size_t i)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)b->p;
	if (b->n < sizeof(*eh) || eh->e_shoff > b->n || (eh->e_shoff & 7) || i >= eh->e_shnum ||
	    eh->e_shoff + (i + 1) * sizeof(Elf64_Shdr) > b->n)
		return NULL;
	return (Elf64_Shdr *)(b->p + eh->e_shoff) + i;
}

static const char *sec_name(struct buf *b, Elf64_Shdr *s)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)b->p;
	Elf64_Shdr *str = shdr(b, eh->e_shstrndx);
	if (!str || str->sh_offset >= b->n || s->sh_name >= b->n - str->sh_offset)
		return "";
	const char *n = (const char *)b->p + str->sh_offset + s->sh_name;
	return memchr(n, 0, b->n - str->sh_offset - s->sh_name) ? n : "";
}

static Elf64_Shdr *find_sec(struct buf *b, const char *name)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)b->p;
	for (size_t i = 0; i < eh->e_shnum; i++) {
		Elf64_Shdr *s = shdr(b, i);
		if (s && !strcmp(sec_name(b, s), name) && s->sh_type != SHT_NOBITS && s->sh_offset < b->n &&
		    s->sh_size <= b->n - s->sh_offset && s->sh_size >= 16)
			return s;
	}
	return NULL;
}

/* Writes a random field of `width` bytes at p (inside the file). */
static void smash(uint8_t *p, unsigned width)
{
	uint64_t v = 0;
	memcpy(&v, p, width);
	v = absurd(v);
	memcpy(p, &v, width);
}

static const char *mutate_elf(struct buf *b)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)b->p;
	if (b->n < sizeof(*eh))
		return "short";
	switch (below(7)) {
	case 0: {
		unsigned k = 1 + (unsigned)below(16);
		for (unsigned i = 0; i < k; i++)
			b->p[below(b->n)] ^= (uint8_t)(1 + below(255));
		return "bytes";
	}
	case 1: {
		Elf64_Shdr *s = shdr(b, below(eh->e_shnum));
		if (!s)
			return "shdr (none)";
		switch (below(5)) {
		case 0: smash((uint8_t *)&s->sh_offset, 8); return "shdr offset";
		case 1: smash((uint8_t *)&s->sh_size, 8); return "shdr size";
		case 2: s->sh_type = (uint32_t)below(20); return "shdr type";
		case 3: s->sh_link = (uint32_t)absurd(s->sh_link); return "shdr link";
		default: s->sh_flags ^= 1ull << below(12); return "shdr flags";
		}
	}
	case 2: {
		Elf64_Shdr *s = find_sec(b, ".debug_info");
		if (!s)
			return "debug_info (none)";
		uint8_t *u = b->p + s->sh_offset;
		/* the first unit's header, or one at a random place */
		if (below(2))
			u += below(s->sh_size - 12);
		switch (below(4)) {
		case 0: smash(u, 4); return "unit length";
		case 1: smash(u + 4, 2); return "unit version";
		case 2: smash(u + 6, 4); return "unit abbrev offset";
		default: u[below(12)] ^= (uint8_t)(1 + below(255)); return "unit header byte";
		}
	}
	case 3: {
		Elf64_Shdr *s = find_sec(b, ".eh_frame");
		if (!s)
			return "eh_frame (none)";
		/* walk to a random entry; smash its length, CIE pointer or pc fields */
		size_t off = 0, want = below(64);
		for (size_t k = 0; k < want && off + 8 < s->sh_size; k++) {
			uint32_t len;
			memcpy(&len, b->p + s->sh_offset + off, 4);
			if (!len || len >= s->sh_size - off - 4)
				break;
			off += 4 + len;
		}
		if (off + 16 > s->sh_size)
			off = 0;
		uint8_t *e = b->p + s->sh_offset + off;
		smash(e + 4 * below(4), 4);
		return "eh_frame entry";
	}
	case 4: {
		Elf64_Shdr *s = find_sec(b, ".note.gnu.property");
		if (!s)
			s = find_sec(b, ".note.ABI-tag");
		if (!s)
			return "note (none)";
		smash(b->p + s->sh_offset + 4 * below(3), 4);
		return "note sizes";
	}
	case 5: {
		/* a debug section marked compressed, with a header of absurd sizes */
		static const char *const names[] = { ".debug_info", ".debug_line", ".debug_abbrev", ".debug_str" };
		Elf64_Shdr *s = find_sec(b, names[below(4)]);
		if (!s || s->sh_size < sizeof(Elf64_Chdr))
			return "compressed (none)";
		s->sh_flags |= SHF_COMPRESSED;
		Elf64_Chdr c = { .ch_type = below(2) ? ELFCOMPRESS_ZLIB : (below(2) ? ELFCOMPRESS_ZSTD : (uint32_t)below(8)),
				 .ch_size = absurd(s->sh_size * 8), .ch_addralign = 1 };
		memcpy(b->p + s->sh_offset, &c, sizeof(c)); /* (the section may not be aligned) */
		return "compressed section";
	}
	default:
		switch (below(5)) {
		case 0: smash((uint8_t *)&eh->e_shoff, 8); break;
		case 1: smash((uint8_t *)&eh->e_phoff, 8); break;
		case 2: eh->e_shnum = (uint16_t)absurd(eh->e_shnum); break;
		case 3: eh->e_phnum = (uint16_t)absurd(eh->e_phnum); break;
		default: eh->e_shstrndx = (uint16_t)absurd(eh->e_shstrndx); break;
		}
		return "ELF header";
	}
}

/* ---- recordings */

struct rec {
	size_t off, len;
};

/* The data section's records (at most cap). */
static size_t records(struct buf *b, struct rec *v, size_t cap, uint64_t *doff, uint64_t *dsize)
{
	if (b->n < 104)
		return 0;
	memcpy(doff, b->p + 40, 8);
	memcpy(dsize, b->p + 48, 8);
	if (*doff > b->n || *dsize > b->n - *doff)
		return 0;
	size_t n = 0;
	for (uint64_t pos = *doff; pos + 8 <= *doff + *dsize && n < cap;) {
		uint16_t size;
		memcpy(&size, b->p + pos + 6, 2);
		if (size < 8 || pos + size > *doff + *dsize)
			break;
		v[n++] = (struct rec){ (size_t)pos, size };
		pos += size;
	}
	return n;
}

/* A mapped path of the recording, turned into something hostile in the case's system root. */
static const char *special_path(struct buf *b, struct rec *v, size_t n, const char *root)
{
	for (size_t tries = 0; tries < 64; tries++) {
		struct rec *r = &v[below(n)];
		uint32_t type;
		memcpy(&type, b->p + r->off, 4);
		if (type != 10 || r->len < 8 + 64 + 2)
			continue;
		const char *path = (const char *)b->p + r->off + 8 + 64;
		if (path[0] != '/' || !memchr(path, 0, r->len - 72))
			continue;
		char p[4096];
		snprintf(p, sizeof(p), "%s%s", root, path);
		make_parent(p);
		unlink(p);
		rmdir(p);
		switch (below(4)) {
		case 0: mkfifo(p, 0600); return "mapped path: a FIFO";
		case 1: mkdir(p, 0755); return "mapped path: a directory";
		case 2: symlink("/dev/urandom", p); return "mapped path: a link to /dev/urandom";
		default: symlink("/dev/zero", p); return "mapped path: a link to /dev/zero";
		}
	}
	return "mapped path (none)";
}

static const char *mutate_rec(struct buf *b, const char *root)
{
	static struct rec v[1 << 16];
	uint64_t doff, dsize;
	size_t n = records(b, v, sizeof(v) / sizeof(v[0]), &doff, &dsize);
	if (n < 4) {
		b->p[below(b->n)] ^= 0xff;
		return "bytes (no records)";
	}
	switch (below(7)) {
	case 0: { /* two records of the same size swapped (their order, not their bytes) */
		for (int t = 0; t < 64; t++) {
			struct rec *a = &v[below(n)], *c = &v[below(n)];
			if (a->len == c->len && a != c) {
				uint8_t tmp[65536];
				memcpy(tmp, b->p + a->off, a->len);
				memmove(b->p + a->off, b->p + c->off, a->len);
				memcpy(b->p + c->off, tmp, a->len);
				return "records swapped";
			}
		}
		return "records swapped (none)";
	}
	case 1: { /* a record repeated over the next one of the same size */
		struct rec *a = &v[below(n - 1)], *c = a + 1;
		if (a->len == c->len)
			memcpy(b->p + c->off, b->p + a->off, a->len);
		return "record repeated";
	}
	case 2: { /* an MMAP2 made to overlap others */
		for (int t = 0; t < 64; t++) {
			struct rec *a = &v[below(n)];
			uint32_t type;
			memcpy(&type, b->p + a->off, 4);
			if (type == 10 && a->len >= 40) {
				smash(b->p + a->off + 16 + 8 * below(3), 8); /* addr, len or pgoff */
				return "MMAP2 overlapping";
			}
		}
		return "MMAP2 (none)";
	}
	case 3: { /* a record's size */
		struct rec *a = &v[below(n)];
		uint16_t s = (uint16_t)absurd(a->len);
		memcpy(b->p + a->off + 6, &s, 2);
		return "record size";
	}
	case 4: { /* a field inside a sample: sizes of stacks, callchains, registers */
		for (int t = 0; t < 64; t++) {
			struct rec *a = &v[below(n)];
			uint32_t type;
			memcpy(&type, b->p + a->off, 4);
			if (type == 9 && a->len > 64) {
				size_t at = a->off + 8 + 8 * below((a->len - 8) / 8 < 48 ? (a->len - 8) / 8 : 48);
				smash(b->p + at, 8);
				return "sample field";
			}
		}
		return "sample field (none)";
	}
	case 5: { /* the header's sections */
		smash(b->p + 8 + 8 * below(7), 8);
		return "file header";
	}
	default:
		return special_path(b, v, n, root);
	}
}

/* ---- the pipeline */

static int on_sample(void *ctx, const struct uw_sample *smp)
{
	void **w = ctx;
	if (w[0])
		uw_script_writer_add(w[0], smp);
	if (w[1])
		uw_profile_add(w[1], smp);
	return 0;
}

static void run(const char *rec, const char *root, const char *cache)
{
	UW_OPTS(uw_session_opts, so, .max_frames = 128, .buildid_dir = "/nonexistent", .sysroot = root, .offline = 1,
		.dwarf_cache_dir = cache, .max_side_file_bytes = 64 << 20, .max_inflate_bytes = 256 << 20,
		.sync_symbols = (int)below(2));
	struct uw_session *s = uw_session_new(&so);
	if (!s)
		return;
	FILE *null = fopen("/dev/null", "w");
	UW_OPTS(uw_script_opts, sco, .srcline = (int)below(2));
	UW_OPTS(uw_profile_opts, po, .inline_frames = (int)below(2), .by_thread = 1);
	void *w[2] = { uw_script_writer_new(s, null, &sco), uw_profile_new(s, &po) };
	UW_OPTS(uw_reader_opts, ro, .on_sample = on_sample, .ctx = w, .max_queue_bytes = 16 << 20);
	struct uw_reader *r = uw_reader_open(s, rec, &ro);
	if (r) {
		uw_reader_run(r);
		uw_reader_free(r);
	}
	uw_script_writer_close(w[0]);
	if (w[1]) {
		uw_profile_write_folded(w[1], null);
		UW_OPTS(uw_table_opts, to, .sort = "pid,dso,sym,srcline");
		uw_profile_write_table(w[1], null, &to);
		uw_profile_free(w[1]);
	}
	/* and inject, into a pipe-mode stream thrown away */
	uw_inject(s, rec, "/dev/null", NULL, NULL);
	fclose(null);
	uw_session_free(s);
}

static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "mutate: HANG (a case took over 20 s)\n";
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(3);
	_exit(3);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: mutate DIR [--seed FIRST] [--cases N]\n");
		return 2;
	}
	const char *dir = argv[1];
	uint64_t first = 1, cases = 1000;
	for (int i = 2; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--seed"))
			first = strtoull(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--cases"))
			cases = strtoull(argv[i + 1], NULL, 10);
	}
	char path[8448]; /* a system root and a path in it */
	snprintf(path, sizeof(path), "%s/files.txt", dir);
	FILE *lf = fopen(path, "r");
	if (!lf) {
		fprintf(stderr, "mutate: %s: %s\n", path, strerror(errno));
		return 2;
	}
	char files[8][4096];
	struct buf orig[8];
	size_t nfiles = 0;
	while (nfiles < 8 && fgets(files[nfiles], sizeof(files[0]), lf)) {
		files[nfiles][strcspn(files[nfiles], "\n")] = 0;
		if (files[nfiles][0] && read_file(files[nfiles], &orig[nfiles]))
			nfiles++;
	}
	fclose(lf);
	const char *recs[] = { "rec.data", "rec-z.data" };
	struct buf rec[2];
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, recs[i]);
		if (!read_file(path, &rec[i])) {
			fprintf(stderr, "mutate: %s: %s\n", path, strerror(errno));
			return 2;
		}
	}
	signal(SIGALRM, on_alarm);
	signal(SIGPIPE, SIG_IGN);
	uint64_t counts[2] = { 0, 0 };
	for (uint64_t seed = first; seed < first + cases; seed++) {
		rng = seed * 0x2545f4914f6cdd1dull;
		char root[4096], cache[4200], recp[4200];
		snprintf(root, sizeof(root), "%s/case", dir);
		snprintf(cache, sizeof(cache), "%s/cache", root);
		snprintf(recp, sizeof(recp), "%s/rec.data", root);
		char cmd[4300];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
		if (system(cmd) != 0)
			return 2;
		mkdir(root, 0755);
		/* the pristine files in the system root, then the case's damage */
		for (size_t i = 0; i < nfiles; i++) {
			snprintf(path, sizeof(path), "%s%s", root, files[i]);
			make_parent(path);
			write_file(path, orig[i].p, orig[i].n, 0755);
		}
		int which = (int)below(2);
		struct buf r = { malloc(rec[which].n), rec[which].n };
		memcpy(r.p, rec[which].p, r.n);
		const char *what;
		bool elf = below(2) && nfiles;
		if (elf) {
			size_t k = below(nfiles);
			struct buf e = { malloc(orig[k].n), orig[k].n };
			memcpy(e.p, orig[k].p, e.n);
			what = mutate_elf(&e);
			if (below(3) == 0)
				mutate_elf(&e);
			snprintf(path, sizeof(path), "%s%s", root, files[k]);
			write_file(path, e.p, e.n, 0755);
			free(e.p);
		} else {
			what = mutate_rec(&r, root);
			if (below(3) == 0)
				mutate_rec(&r, root);
		}
		write_file(recp, r.p, r.n, 0600);
		free(r.p);
		counts[elf]++;
		fprintf(stderr, "mutate: seed %" PRIu64 ": %s, %s\n", seed, recs[which], what);
		alarm(20);
		run(recp, root, cache);
		alarm(0);
	}
	printf("mutate: %" PRIu64 " cases (seeds %" PRIu64 "-%" PRIu64 "): %" PRIu64 " of the ELF files, %" PRIu64
	       " of the recordings; no signal, no hang\n",
	       cases, first, first + cases - 1, counts[1], counts[0]);
	for (size_t i = 0; i < nfiles; i++)
		free(orig[i].p);
	free(rec[0].p);
	free(rec[1].p);
	return 0;
}
