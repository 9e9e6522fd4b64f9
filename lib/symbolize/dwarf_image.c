/* SPDX-License-Identifier: MIT */
/* The DWARF a Dwarf handle reads: images of a file's DWARF and the cache of them (dwarf_image.h). */
#include "symbolize/dwarf_inline.h"
#include "symbolize/dwarf_walk.h"
#include "symbolize/dwarf_line.h"
#include "symbolize/dwp.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolize/dwarf_image.h"

/* The cache's files, for its size cap (the "1" files are an older layout, removed first as they
 * are no longer read) */
static const char *const cache_suffixes[] = { ".dwarf1", ".lines1", ".dwarf2", ".lines2", NULL };

static bool unneeded(const char *name)
{
	static const char *const skip[] = { ".debug_loc", ".debug_loclists", ".debug_macro", ".debug_macinfo",
					    ".debug_pubnames", ".debug_pubtypes", ".debug_gnu_pubnames",
					    ".debug_gnu_pubtypes", ".debug_frame" };
	for (size_t i = 0; i < UW_ARRAY_SIZE(skip); i++)
		if (!strcmp(name, skip[i]))
			return true;
	return false;
}

/* The sections libdw is given: its DWARF (GNU's .zdebug_ ones it inflates itself), the notes
 * (the build-id, checked on the cache's copies) and the section names. Nothing else: not
 * .gnu_debugaltlink, so libdw never looks for a dwz file by a name the file gives (that is
 * ours to find, through base_open_file, and to give it with dwarf_setalt). */
static bool kept(const char *name, uint32_t type, bool names)
{
	if (names || type == SHT_NOTE)
		return true;
	return (!strncmp(name, ".debug_", 7) || !strncmp(name, ".zdebug_", 8)) && !unneeded(name);
}

/* One section of the image, and the group of them one thread inflates. */
struct isec {
	size_t idx;
	uint64_t at, size;    /* in the image; size 0: emptied */
	bool inflate;
	struct elfv_zsec z;   /* when inflated: its payload, in buf */
	void *buf;
	int group;            /* the thread that inflates it (1, 2) */
	int err;
};

struct zgroup {
	struct isec *secs;    /* the group's are those with secs[i].group == id */
	size_t n;
	uint8_t *img;
	int id;
};

static void *inflate_group(void *arg)
{
	struct zgroup *g = arg;
	for (size_t i = 0; i < g->n; i++)
		if (g->secs[i].inflate && g->secs[i].group == g->id)
			g->secs[i].err = elfv_zsec_decompress(&g->secs[i].z, g->img + g->secs[i].at) ? -UW_EFORMAT : 0;
	return NULL;
}

/* the helper thread's start (the caller inflates the other group itself: only the helper is
 * named, never the embedding program's thread) */
static void *inflate_thread(void *arg)
{
	pthread_setname_np(pthread_self(), "uw-inflate");
	return inflate_group(arg);
}

static int cmp_sec_size(const void *x, const void *y)
{
	const struct isec *a = *(struct isec *const *)x, *b = *(struct isec *const *)y;
	return a->z.size > b->z.size ? -1 : a->z.size < b->z.size;
}

/* Inflates the compressed sections by two threads, the largest first to the less loaded one:
 * libc's debug file holds 11 MiB of them, .debug_info 8 of those (about 17 ms of one CPU here). */
static int inflate_all(struct isec *secs, size_t n, uint8_t *img)
{
	size_t nz = 0;
	for (size_t i = 0; i < n; i++)
		nz += secs[i].inflate;
	if (!nz)
		return 0;
	struct isec **order = malloc(nz * sizeof(*order));
	if (!order)
		return -ENOMEM;
	nz = 0;
	for (size_t i = 0; i < n; i++)
		if (secs[i].inflate)
			order[nz++] = &secs[i];
	qsort(order, nz, sizeof(*order), cmp_sec_size);
	uint64_t load[2] = { 0, 0 };
	for (size_t i = 0; i < nz; i++) {
		int g = load[1] < load[0];
		order[i]->group = 1 + g;
		load[g] += order[i]->z.size;
	}
	free(order);
	struct zgroup g1 = { secs, n, img, 1 }, g2 = { secs, n, img, 2 };
	pthread_t th;
	bool threaded = load[1] >= ((uint64_t)1 << 20) && pthread_create(&th, NULL, inflate_thread, &g2) == 0;
	inflate_group(&g1);
	if (threaded)
		pthread_join(th, NULL);
	else
		inflate_group(&g2);
	for (size_t i = 0; i < n; i++)
		if (secs[i].err)
			return secs[i].err;
	return 0;
}

/* The image of a file's DWARF that libdw reads: its ELF header, then each kept section (read
 * with pread, or inflated when compressed: zstd too, which libelf 0.188 cannot read), then the
 * section header table, every other section emptied. It is a valid ELF file of the kept
 * sections alone: libdw reads plain sections from memory of ours and inflates nothing, and no
 * byte of the file is mapped (a file rebuilt in place while it is read is an error, never a
 * SIGBUS). Unneeded DWARF (location lists, macros, .debug_frame) is not read at all.
 * @return the image (malloc'd) and its size, or NULL with *err: -UW_ELIMIT (a compressed
 * section claims more than the caps allow), -ENOMEM, -UW_ETRUNC (the file shrank), another. */
static void *dwarf_image(struct elfv *v, size_t *out_size, int *err)
{
	Elf *e = (Elf *)v->elf;
	size_t nsec = 0, shstrndx = 0;
	GElf_Ehdr eh;
	*err = -UW_ENOELF;
	if (elf_getshdrnum(e, &nsec) || nsec == 0 || nsec > ((size_t)1 << 24) || elf_getshdrstrndx(e, &shstrndx) ||
	    !gelf_getehdr(e, &eh))
		return NULL;
	struct isec *secs = calloc(nsec, sizeof(*secs));
	if (!secs) {
		*err = -ENOMEM;
		return NULL;
	}
	uint8_t *img = NULL;
	uint64_t total = sizeof(Elf64_Ehdr), inflated = 0;
	int e2 = 0;
	for (size_t i = 1; i < nsec && !e2; i++) {
		struct elfv_sec s;
		struct isec *c = &secs[i];
		c->idx = i;
		if (elfv_section_info(v, i, &s) || s.type == SHT_NOBITS || !s.size ||
		    !kept(elfv_section_name(v, i), s.type, i == shstrndx))
			continue;
		if (s.flags & SHF_COMPRESSED) {
			e2 = elfv_compressed_read(v, i, &c->z, &c->buf);
			if (e2 == -UW_ELIMIT)
				break; /* over the cap: libdw must not inflate it either */
			if (e2) {
				/* a section libdw cannot use either: emptied */
				e2 = e2 == -ENOMEM || e2 == -UW_ETRUNC ? e2 : 0;
				continue;
			}
			c->inflate = true;
			c->size = c->z.size;
			inflated += c->z.size;
		} else {
			c->size = s.size;
		}
		c->at = total;
		total += (c->size + 15) & ~(uint64_t)15;
	}
	uint64_t shoff = total;
	total += nsec * sizeof(Elf64_Shdr);
	if (!e2 && inflated > 4 * v->max_inflate)
		e2 = -UW_ELIMIT;
	if (!e2 && (total > SIZE_MAX || !(img = malloc((size_t)total))))
		e2 = -ENOMEM;
	/* the plain sections, read into place */
	for (size_t i = 1; i < nsec && !e2; i++) {
		struct elfv_sec s;
		if (secs[i].size && !secs[i].inflate && !(e2 = elfv_section_info(v, i, &s)))
			e2 = elfv_read(v, s.offset, img + secs[i].at, (size_t)secs[i].size);
	}
	if (!e2)
		e2 = inflate_all(secs, nsec, img);
	/* the headers: kept sections where they now are, the others emptied */
	for (size_t i = 0; i < nsec && !e2; i++) {
		GElf_Shdr sh;
		if (!gelf_getshdr(elf_getscn(e, i), &sh)) {
			e2 = -UW_ENOELF;
			break;
		}
		if (i == 0) {
			sh.sh_info = 0; /* no program headers (PN_XNUM's count) */
		} else if (secs[i].size) {
			sh.sh_offset = secs[i].at;
			sh.sh_size = secs[i].size;
			sh.sh_addralign = UW_MIN(sh.sh_addralign, (uint64_t)16);
			if (secs[i].inflate)
				sh.sh_flags &= ~(uint64_t)SHF_COMPRESSED;
		} else {
			sh.sh_offset = 0;
			sh.sh_flags &= ~(uint64_t)SHF_COMPRESSED;
			if (sh.sh_type != SHT_NOBITS)
				sh.sh_size = 0;
		}
		memcpy(img + shoff + i * sizeof(Elf64_Shdr), &sh, sizeof(sh));
	}
	if (!e2) {
		eh.e_phoff = 0;
		eh.e_phnum = 0;
		eh.e_phentsize = 0;
		eh.e_shoff = shoff;
		eh.e_shentsize = sizeof(Elf64_Shdr);
		memcpy(img, &eh, sizeof(Elf64_Ehdr));
	}
	for (size_t i = 0; i < nsec; i++)
		free(secs[i].buf);
	free(secs);
	if (e2) {
		free(img);
		*err = e2;
		return NULL;
	}
	*err = 0;
	*out_size = (size_t)total;
	return img;
}

/* ---- the cache of decompressed DWARF
 *
 * Inflating a compressed debug file is most of the cost of inline frames on a first look at a
 * recording (CPython's and libc's debug files: 34 MiB of DWARF out of 13 MiB). Its image is
 * written, by a thread while the report goes on, to DIR/BUILD-ID-KEY.dwarf2, through a
 * temporary file and a rename, so a reader sees a whole file or none. Later runs map it: libdw
 * then faults in only the pages of the units asked for. (Mapping is safe there as it is not for
 * the files a recording names: no one but this user writes in the cache, and nothing there is
 * ever written in place, see elfv_open_mapped.)
 *
 * An entry is made from one file and used for that file only: the build-id alone is no key, as
 * any file can claim any build-id (one report of an untrusted recording whose --symfs held a
 * file with a forged build-id would otherwise give every later report of the genuine binary the
 * forged names and lines). So an entry carries, after the image, the identity of the file it
 * was made from (device, inode, size, modification and change times: no other file has them,
 * and a file written since has another change time, which no unprivileged user can set) and a
 * hash of that file's ELF and section headers; KEY (a hash of the identity) lets the entries of
 * two files with one build-id live side by side. An entry whose identity is not the file's now
 * is not read. The "2" names the layout (the image of dwarf_image, then struct cache_ident). */

#define CACHE_MAGIC "UWDWARF2"

struct cache_ident {
	char magic[8];
	struct elfv_ident id;
	uint64_t headers;     /* hash of the file's ELF and section headers */
	uint64_t image_size;  /* the image's bytes before this */
};
_Static_assert(sizeof(struct cache_ident) == sizeof(((struct cache_write *)0)->ident), "cache_write.ident");

static bool has_compressed(struct elfv *v)
{
	Elf *e = (Elf *)v->elf;
	for (Elf_Scn *scn = elf_nextscn(e, NULL); scn; scn = elf_nextscn(e, scn)) {
		GElf_Shdr sh;
		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_COMPRESSED) && sh.sh_type != SHT_NOBITS)
			return true;
	}
	return false;
}

static uint64_t headers_hash(struct elfv *v)
{
	Elf *e = (Elf *)v->elf;
	GElf_Ehdr eh;
	uint64_t h = gelf_getehdr(e, &eh) ? base_hash_bytes(&eh, sizeof(eh)) : 0;
	size_t n = 0;
	if (elf_getshdrnum(e, &n))
		return h;
	for (size_t i = 0; i < n; i++) {
		GElf_Shdr sh;
		if (gelf_getshdr(elf_getscn(e, i), &sh))
			h = base_hash64(h ^ base_hash_bytes(&sh, sizeof(sh)));
	}
	return h;
}

bool dwi_file_key(struct elfv *v, char *out, size_t cap)
{
	char bid[2 * ELFV_MAX_BUILD_ID + 1];
	struct elfv_ident id;
	if (!elfv_ident(v, &id) || elfv_build_id_hex(v, bid) < 8)
		return false;
	int n = snprintf(out, cap, "%s-%016" PRIx64, bid, base_hash_bytes(&id, sizeof(id)));
	return n > 0 && (size_t)n < cap;
}

static char *cache_path(const char *dir, struct elfv *v)
{
	char key[2 * ELFV_MAX_BUILD_ID + 20], *p;
	if (!dir || !*dir || !dwi_file_key(v, key, sizeof(key)) || asprintf(&p, "%s/%s.dwarf2", dir, key) < 0)
		return NULL;
	return p;
}

static void cache_ident(struct elfv *v, struct cache_ident *ci, size_t image_size)
{
	memset(ci, 0, sizeof(*ci));
	memcpy(ci->magic, CACHE_MAGIC, 8);
	elfv_ident(v, &ci->id);
	ci->headers = headers_hash(v);
	ci->image_size = image_size;
}

static struct elfv *cache_open(const char *path, struct elfv *v)
{
	struct elfv *c;
	if (elfv_open_mapped(path, BASE_OPEN_NOFOLLOW, &c))
		return NULL;
	struct cache_ident want, got;
	cache_ident(v, &want, c->size - UW_MIN(c->size, sizeof(got)));
	char a[2 * ELFV_MAX_BUILD_ID + 1], b[2 * ELFV_MAX_BUILD_ID + 1];
	elfv_build_id_hex(v, a);
	elfv_build_id_hex(c, b);
	memset(&got, 0, sizeof(got));
	if (c->size >= sizeof(got) + 64)
		memcpy(&got, c->map + c->size - sizeof(got), sizeof(got));
	if (memcmp(&want, &got, sizeof(got)) || strcmp(a, b) || has_compressed(c) || !elfv_has_section(c, ".debug_info")) {
		elfv_close(c);
		return NULL;
	}
	return c;
}

static void *cache_write_main(void *arg)
{
	struct cache_write *w = arg;
	pthread_setname_np(pthread_self(), "uw-cachewrite");
	/* within the cache's cap (older entries go first); a cache: failing costs only time */
	struct base_piece pieces[2] = { { w->img, w->size }, { &w->ident, sizeof(w->ident) } };
	if (base_cache_admit(w->path, w->size + sizeof(w->ident), w->cap, cache_suffixes))
		base_replace_file(w->path, pieces, 2);
	return NULL;
}

static void cache_write_start(struct dwi_file *f, struct elfv *v, char *path, size_t size, uint64_t cap)
{
	struct cache_write *w = calloc(1, sizeof(*w));
	if (!w) {
		free(path);
		return;
	}
	w->img = f->image;
	w->size = size;
	w->path = path;
	w->cap = cap;
	cache_ident(v, (struct cache_ident *)&w->ident, size);
	if (pthread_create(&w->th, NULL, cache_write_main, w)) {
		free(w->path);
		free(w);
		return;
	}
	f->cw = w;
}

void dwi_image_end(struct dwi_file *f)
{
	if (f->cw) {
		pthread_join(f->cw->th, NULL);
		free(f->cw->path);
		free(f->cw);
	}
	if (f->image_elf)
		elf_end(f->image_elf);
	free(f->image);
	elfv_close(f->cached);
	memset(f, 0, sizeof(*f));
}

/* A Dwarf handle for v: over the cache's copy of its image when there is one, else over its
 * image (which goes to the cache when the file had compressed sections). */
Dwarf *dwi_image_begin(struct elfv *v, const char *cache, uint64_t cap, struct dwi_file *f, int *why)
{
	size_t isize = 0;
	int err = 0;
	memset(f, 0, sizeof(*f));
	if (why)
		*why = 0;
	char *path = cache && has_compressed(v) ? cache_path(cache, v) : NULL;
	if (path && (f->cached = cache_open(path, v))) {
		free(path);
		errno = 0;
		Dwarf *dw = dwarf_begin_elf((Elf *)f->cached->elf, DWARF_C_READ, NULL);
		if (!dw && errno == ENOMEM) {
			if (why)
				*why = -ENOMEM;
			dwi_image_end(f);
			return NULL;
		}
		if (dw)
			return dw;
		elfv_close(f->cached);
		f->cached = NULL;
		path = NULL;
	}
	f->image = dwarf_image(v, &isize, &err);
	if (!f->image) {
		free(path);
		if (why)
			*why = err;
		return NULL;
	}
	errno = 0;
	f->image_elf = elf_memory(f->image, isize);
	Dwarf *dw = f->image_elf ? dwarf_begin_elf(f->image_elf, DWARF_C_READ, NULL) : NULL;
	if (!dw) {
		/* (libelf and libdw say no memory only through errno, left by malloc) */
		if (why && errno == ENOMEM)
			*why = -ENOMEM;
		free(path);
		dwi_image_end(f);
		return NULL;
	}
	if (path)
		cache_write_start(f, v, path, isize, cap);
	return dw;
}
