/* SPDX-License-Identifier: MIT */
/* The DWARF a Dwarf handle reads: images of a file's DWARF (dwarf_image.h), taken from or given to
 * the DWARF cache (dwarf_cache.c). */
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
#include "symbolize/dwarf_cache.h"

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
	/* the image, read and inflated, within 4 caps: a plain section's size is what the file
	 * claims (a sparse file claims gigabytes in a few kilobytes) */
	if (!e2 && (inflated > 4 * v->max_inflate || total > 4 * v->max_inflate))
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
	char *path = cache && dwc_has_compressed(v) ? dwc_image_path(cache, v) : NULL;
	if (path && (f->cached = dwc_image_open(path, v))) {
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
		dwc_image_write(f, v, path, isize, cap);
	return dw;
}
