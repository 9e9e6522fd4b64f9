/* SPDX-License-Identifier: MIT */
/* The DWARF a Dwarf handle reads: decompressed images and the cache of them (dwarf_image.h). */
#include "symbolize/dwarf_inline.h"
#include "symbolize/dwarf_walk.h"
#include "symbolize/dwarf_line.h"
#include "symbolize/dwp.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
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

/* The cache's files, for its size cap */
static const char *const cache_suffixes[] = { ".dwarf1", ".lines1", NULL };

static bool unneeded(const char *name)
{
	static const char *const skip[] = { ".debug_loc", ".debug_loclists", ".debug_macro", ".debug_macinfo",
					    ".debug_pubnames", ".debug_pubtypes", ".debug_gnu_pubnames",
					    ".debug_gnu_pubtypes", ".debug_frame", ".gnu_debugdata" };
	for (size_t i = 0; i < UW_ARRAY_SIZE(skip); i++)
		if (!strcmp(name, skip[i]))
			return true;
	return false;
}

/* One compressed section of the image, and the group of them one thread inflates. */
struct zjob {
	size_t idx;
	struct elfv_zsec z;
	uint64_t at;          /* offset of its copy in the image; 0: not needed, emptied */
	int group;            /* the thread that inflates it (1, 2; 0: none) */
	int err;
};

struct zgroup {
	struct zjob *jobs;    /* the group's are those with jobs[i].group == id */
	size_t n;
	uint8_t *img;
	int id;
};

static void *inflate_group(void *arg)
{
	struct zgroup *g = arg;
	for (size_t i = 0; i < g->n; i++)
		if (g->jobs[i].group == g->id)
			g->jobs[i].err = elfv_zsec_decompress(&g->jobs[i].z, g->img + g->jobs[i].at) ? -UW_EFORMAT : 0;
	return NULL;
}

/* the helper thread's start (the caller inflates the other group itself: only the helper is
 * named, never the embedding program's thread) */
static void *inflate_thread(void *arg)
{
	pthread_setname_np(pthread_self(), "uw-inflate");
	return inflate_group(arg);
}

static int cmp_job_size(const void *x, const void *y)
{
	const struct zjob *a = *(struct zjob *const *)x, *b = *(struct zjob *const *)y;
	return a->z.size > b->z.size ? -1 : a->z.size < b->z.size;
}

/* Compressed debug sections (zlib, and zstd that libelf 0.188 cannot read): a copy of the file
 * with each needed section decompressed into place after the original bytes and its header
 * patched, and unneeded ones emptied, so libdw reads plain sections and inflates nothing.
 * The sections are inflated by two threads, the largest first to the less loaded one: libc's
 * debug file holds 11 MiB of them, .debug_info 8 of those (about 17 ms of one CPU here). */
static void *decompressed_image(struct elfv *v, size_t *out_size, bool *refuse)
{
	size_t nsec = 0;
	*refuse = false;
	if (elf_getshdrnum((Elf *)v->elf, &nsec) || nsec == 0)
		return NULL;
	GElf_Ehdr eh;
	if (!gelf_getehdr((Elf *)v->elf, &eh) || eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > v->size ||
	    nsec > (v->size - eh.e_shoff) / sizeof(Elf64_Shdr))
		return NULL;
	uint64_t total = (v->size + 15) & ~(uint64_t)15;
	/* every compressed section, in section order */
	struct base_vec jobs = BASE_VEC_INIT(struct zjob);
	size_t needed = 0;
	for (size_t i = 1; i < nsec; i++) {
		struct elfv_zsec z;
		int e = elfv_compressed_payload(v, i, &z);
		bool skip = unneeded(elfv_section_name(v, i));
		if (e == -UW_ELIMIT && !skip) {
			*refuse = true; /* over the cap: libdw must not inflate it either */
			base_vec_free(&jobs);
			return NULL;
		}
		if (e)
			continue;
		struct zjob *j = base_vec_push(&jobs);
		if (!j) {
			base_vec_free(&jobs);
			return NULL;
		}
		*j = (struct zjob){ i, z, skip ? 0 : total, 0, 0 };
		if (!skip) {
			total += (z.size + 15) & ~(uint64_t)15;
			needed++;
		}
	}
	if (jobs.len && total > 4 * v->max_inflate)
		*refuse = true;
	uint8_t *img = !jobs.len || *refuse ? NULL : malloc(total);
	struct zjob **order = img ? malloc((needed ? needed : 1) * sizeof(*order)) : NULL;
	if (!order) {
		free(img);
		base_vec_free(&jobs);
		return NULL;
	}
	memcpy(img, v->map, v->size);
	/* two groups, the largest sections first to the less loaded one */
	struct zjob *js = jobs.data;
	size_t n = 0;
	for (size_t i = 0; i < jobs.len; i++)
		if (js[i].at)
			order[n++] = &js[i];
	if (n > 1)
		qsort(order, n, sizeof(*order), cmp_job_size);
	uint64_t load[2] = { 0, 0 };
	for (size_t i = 0; i < n; i++) {
		int g = load[1] < load[0];
		order[i]->group = 1 + g;
		load[g] += order[i]->z.size;
	}
	free(order);
	struct zgroup g1 = { js, jobs.len, img, 1 }, g2 = { js, jobs.len, img, 2 };
	pthread_t th;
	bool threaded = load[1] >= ((uint64_t)1 << 20) && pthread_create(&th, NULL, inflate_thread, &g2) == 0;
	inflate_group(&g1);
	if (threaded)
		pthread_join(th, NULL);
	else
		inflate_group(&g2);
	/* headers: inflated sections point at their copy, unneeded ones are emptied */
	for (size_t i = 0; i < jobs.len; i++) {
		if (js[i].err) {
			free(img);
			base_vec_free(&jobs);
			return NULL;
		}
		Elf64_Shdr sh;
		uint8_t *shp = img + eh.e_shoff + js[i].idx * sizeof(Elf64_Shdr);
		memcpy(&sh, shp, sizeof(sh));
		sh.sh_flags &= ~(uint64_t)SHF_COMPRESSED;
		if (js[i].at) {
			sh.sh_offset = js[i].at;
			sh.sh_size = js[i].z.size;
			sh.sh_addralign = UW_MIN(sh.sh_addralign, (uint64_t)16);
		} else {
			sh.sh_size = 0;
		}
		memcpy(shp, &sh, sizeof(sh));
	}
	base_vec_free(&jobs);
	*out_size = total;
	return img;
}

/* The sections the fast walk reads, as libdw sees them (uncompressed ones only). */
/* ---- the cache of decompressed DWARF
 *
 * Inflating a compressed debug file is most of the cost of inline frames on a first look at a
 * recording (CPython's and libc's debug files: 34 MiB of DWARF out of 13 MiB). The image built
 * for libdw (decompressed needed sections, emptied unneeded ones: a valid ELF file) is written,
 * by a thread while the report goes on, to DIR/BUILD-ID.dwarf1, through a temporary file and a
 * rename, so a reader sees a whole file or none. Later runs map it: libdw then faults in only
 * the pages of the units asked for. A copy is used only when its build-id is the file's and
 * it has no compressed section. The "1" names the image's layout (which sections it keeps). */

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

static char *cache_path(const char *dir, struct elfv *v)
{
	char bid[2 * ELFV_MAX_BUILD_ID + 1], *p;
	if (!dir || !*dir || elfv_build_id_hex(v, bid) < 8 || asprintf(&p, "%s/%s.dwarf1", dir, bid) < 0)
		return NULL;
	return p;
}

static struct elfv *cache_open(const char *path, struct elfv *v)
{
	struct elfv *c;
	if (elfv_open(path, BASE_OPEN_NOFOLLOW, &c))
		return NULL;
	char a[2 * ELFV_MAX_BUILD_ID + 1], b[2 * ELFV_MAX_BUILD_ID + 1];
	elfv_build_id_hex(v, a);
	elfv_build_id_hex(c, b);
	if (strcmp(a, b) || has_compressed(c) || !elfv_has_section(c, ".debug_info")) {
		elfv_close(c);
		return NULL;
	}
	base_cache_touch(c->fd); /* used: the last to go when the cache is full */
	return c;
}

static void *cache_write_main(void *arg)
{
	struct cache_write *w = arg;
	pthread_setname_np(pthread_self(), "uw-cachewrite");
	/* within the cache's cap (older entries go first); a cache: failing costs only time */
	if (base_cache_admit(w->path, w->size, w->cap, cache_suffixes))
		base_replace_file(w->path, &(struct base_piece){ w->img, w->size }, 1);
	return NULL;
}

static void cache_write_start(struct dwi_file *f, char *path, size_t size, uint64_t cap)
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

/* A Dwarf handle for v: over the cache's decompressed copy when there is one, else over a
 * decompressed image when it has compressed sections (which also covers zstd; the image then
 * goes to the cache), else over the file. */
Dwarf *dwi_image_begin(struct elfv *v, const char *cache, uint64_t cap, struct dwi_file *f, int *why)
{
	size_t isize = 0;
	bool refuse;
	memset(f, 0, sizeof(*f));
	char *path = cache && has_compressed(v) ? cache_path(cache, v) : NULL;
	if (path && (f->cached = cache_open(path, v))) {
		free(path);
		Dwarf *dw = dwarf_begin_elf((Elf *)f->cached->elf, DWARF_C_READ, NULL);
		if (dw)
			return dw;
		elfv_close(f->cached);
		f->cached = NULL;
		path = NULL;
	}
	f->image = decompressed_image(v, &isize, &refuse);
	if (refuse) {
		free(path);
		if (why)
			*why = -UW_ELIMIT;
		return NULL;
	}
	if (f->image) {
		f->image_elf = elf_memory(f->image, isize);
		Dwarf *dw = f->image_elf ? dwarf_begin_elf(f->image_elf, DWARF_C_READ, NULL) : NULL;
		if (!dw) {
			free(path);
			dwi_image_end(f);
			return NULL;
		}
		if (path)
			cache_write_start(f, path, isize, cap);
		return dw;
	}
	free(path);
	/* plain sections: libdw reads them from its own mapping of the file (memory images such
	 * as the vdso copy are already in memory) */
	return v->fd >= 0 ? dwarf_begin(v->fd, DWARF_C_READ) : dwarf_begin_elf((Elf *)v->elf, DWARF_C_READ, NULL);
}

