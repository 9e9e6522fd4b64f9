/* SPDX-License-Identifier: MIT */
/*
 * The DWARF cache (the session's cache directory, dwarf_cache.h): what later runs take instead of
 * doing the work again, in two kinds of entries made from one file each and named by its
 * build-id and identity (dwi_file_key): the decompressed DWARF image a Dwarf handle reads
 * (BUILD-ID-KEY.dwarf2, from dwarf_image.c) and the decoded rows of line tables
 * (BUILD-ID-KEY.lines2, the line store, from dwarf_line.c). Both are written through a
 * temporary file and a rename, within the cache's cap (base_cache_admit), and mapped when read.
 */
#include "symbolize/dwarf_cache.h"
#include "symbolize/dwarf_image.h"
#include "symbolize/dwarf_line_int.h"

#include <elfutils/libdw.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>


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

bool dwc_has_compressed(struct elfv *v)
{
	Elf *e = (Elf *)v->elf;
	for (Elf_Scn *scn = elf_nextscn(e, NULL); scn; scn = elf_nextscn(e, scn)) {
		GElf_Shdr sh;
		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_COMPRESSED) && sh.sh_type != SHT_NOBITS)
			return true;
	}
	return false;
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

char *dwc_image_path(const char *dir, struct elfv *v)
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
	ci->headers = elfv_headers_hash(v);
	ci->image_size = image_size;
}

struct elfv *dwc_image_open(const char *path, struct elfv *v)
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
	if (memcmp(&want, &got, sizeof(got)) || strcmp(a, b) || dwc_has_compressed(c) || !elfv_has_section(c, ".debug_info")) {
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
	if (base_cache_admit(w->path, w->size + sizeof(w->ident), w->cap, base_cache_files))
		base_replace_file(w->path, pieces, 2);
	return NULL;
}

void dwc_image_write(struct dwi_file *f, struct elfv *v, char *path, size_t size, uint64_t cap)
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

/*
 * ---- decoded rows kept between runs
 *
 * Decoding the line programs is most of the work of source lines once the DWARF is mapped
 * (CPython's units touched by the bench recording: 2.1 MB of programs, about a quarter of the
 * helper thread's time). So with a cache directory the decoded rows are kept in
 * DIR/BUILD-ID-KEY.lines2: a header, one record per unit sorted by the program's offset, then the
 * rows of every unit. The file is made from one file and used for that one only: its header
 * holds the identity of the file the rows were decoded from (device, inode, size, times; KEY is
 * a hash of it), and rows are not taken for any other file (a unit's hash below is no
 * cryptographic hash: a file forged to claim a genuine build-id could otherwise bring rows of its
 * own to the genuine file's reports). A unit's rows are taken (mapped, not copied) only when its
 * program's offset, length and hash are those of the bytes read now, and when the rows' own
 * hash, checked on first use, says they are as written. The file is mapped: it is the cache's
 * own (see elfv_open_mapped), never a file a recording names.
 */
#define STORE_MAGIC "UWLINES2"
#define STORE_MAX_ROWS ((size_t)1 << 26) /* 1 GiB of rows: more are not kept */

struct store_hdr {
	char magic[8];
	uint32_t row_size, unit_size;
	uint64_t nunits, nrows;
	struct elfv_ident ident; /* the file the rows were decoded from */
};

struct store_unit {
	uint64_t off, len, hash; /* the unit's bytes in .debug_line */
	uint64_t rows_hash, first, nrows;
};

struct fresh {
	uint64_t off, len, hash;
	struct dwl_table *t;     /* NULL once freed */
};

struct dwl_store {
	char *path;
	struct elfv_ident ident;
	uint64_t cap;            /* the cache directory's size cap (0: none) */
	void *map;
	size_t map_size;
	const struct store_unit *units;
	size_t nunits;
	const struct dwl_row *rows;
	size_t nrows;
	uint8_t *state;          /* per stored unit: 0 not checked, 1 good, 2 bad or decoded again
	                          * (each written only by the thread that builds that unit's table) */
	pthread_mutex_t mu;      /* fresh, fresh_rows: tables of different units are built at once */
	struct base_vec fresh;   /* struct fresh: decoded this run */
	size_t fresh_rows, taken; /* (taken: atomic) */
};

static bool store_valid(const uint8_t *p, size_t size, const struct elfv_ident *ident)
{
	struct store_hdr h;
	if (size < sizeof(h))
		return false;
	memcpy(&h, p, sizeof(h));
	if (memcmp(h.magic, STORE_MAGIC, 8) || h.row_size != sizeof(struct dwl_row) ||
	    h.unit_size != sizeof(struct store_unit) || memcmp(&h.ident, ident, sizeof(*ident)))
		return false;
	size_t rest = size - sizeof(h);
	if (h.nunits > rest / sizeof(struct store_unit))
		return false;
	rest -= (size_t)h.nunits * sizeof(struct store_unit);
	if (rest % sizeof(struct dwl_row) || h.nrows != rest / sizeof(struct dwl_row))
		return false;
	const struct store_unit *u = (const struct store_unit *)(p + sizeof(h));
	for (uint64_t i = 0; i < h.nunits; i++) {
		if (i && u[i].off <= u[i - 1].off)
			return false;
		if (u[i].first > h.nrows || u[i].nrows > h.nrows - u[i].first)
			return false;
	}
	return true;
}

struct dwl_store *dwl_store_open(const char *path, const struct elfv_ident *ident, uint64_t cap)
{
	struct dwl_store *st = calloc(1, sizeof(*st));
	if (!st || !(st->path = strdup(path))) {
		free(st);
		return NULL;
	}
	st->fresh = BASE_VEC_INIT(struct fresh);
	pthread_mutex_init(&st->mu, NULL);
	st->cap = cap;
	st->ident = *ident;
	uint64_t fsize;
	int fd = base_open_file(path, BASE_OPEN_NOFOLLOW, 0, &fsize);
	if (fd < 0)
		return st;
	struct stat sb;
	/* only a file of this user's that no one else may write (never written in place: mapped) */
	if (base_cache_entry_ok(fd) && fstat(fd, &sb) == 0 && sb.st_size >= (off_t)sizeof(struct store_hdr) &&
	    (uint64_t)sb.st_size <= (uint64_t)STORE_MAX_ROWS * 2 * sizeof(struct dwl_row)) {
		base_cache_touch(fd); /* used: the last to go when the cache is full (ours only) */
		void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m != MAP_FAILED && store_valid(m, (size_t)sb.st_size, &st->ident)) {
			struct store_hdr h;
			memcpy(&h, m, sizeof(h));
			st->map = m;
			st->map_size = (size_t)sb.st_size;
			st->units = (const struct store_unit *)((const uint8_t *)m + sizeof(h));
			st->nunits = (size_t)h.nunits;
			st->rows = (const struct dwl_row *)(st->units + st->nunits);
			st->nrows = (size_t)h.nrows;
			if (!(st->state = calloc(st->nunits ? st->nunits : 1, 1))) {
				munmap(m, st->map_size);
				st->map = NULL;
				st->nunits = st->nrows = 0;
			}
		} else if (m != MAP_FAILED) {
			munmap(m, (size_t)sb.st_size);
		}
	}
	close(fd);
	return st;
}

static const struct store_unit *store_find(const struct dwl_store *st, uint64_t off, size_t *idx)
{
	size_t lo = 0, hi = st->nunits;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (st->units[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == st->nunits || st->units[lo].off != off)
		return NULL;
	*idx = lo;
	return &st->units[lo];
}

bool dwl_store_take(struct dwl_store *st, uint64_t off, const uint8_t *unit, size_t len, struct dwl_table *t)
{
	size_t i;
	const struct store_unit *u = store_find(st, off, &i);
	if (!u || u->len != len || st->state[i] == 2)
		return false;
	if (st->state[i] == 0) {
		bool good = u->hash == base_hash_block(unit, len) &&
			    u->rows_hash == base_hash_block(st->rows + u->first, (size_t)u->nrows * sizeof(struct dwl_row));
		st->state[i] = good ? 1 : 2;
		if (!good)
			return false;
	}
	t->rows = (struct dwl_row *)(st->rows + u->first); /* read only: borrowed */
	t->nrows = (size_t)u->nrows;
	t->borrowed = true;
	__atomic_add_fetch(&st->taken, 1, __ATOMIC_RELAXED);
	return true;
}

void dwl_store_add(struct dwl_store *st, uint64_t off, const uint8_t *unit, size_t len, struct dwl_table *t)
{
	uint64_t hash = base_hash_block(unit, len);
	pthread_mutex_lock(&st->mu);
	struct fresh *f = st->fresh_rows + st->nrows + t->nrows <= STORE_MAX_ROWS ? base_vec_push(&st->fresh) : NULL;
	if (f) {
		size_t i;
		if (store_find(st, off, &i)) /* its stored rows were for other bytes, or bad */
			st->state[i] = 2;
		*f = (struct fresh){ off, len, hash, t };
		t->store = st;
		t->fresh_idx = st->fresh.len - 1;
		st->fresh_rows += t->nrows;
	}
	pthread_mutex_unlock(&st->mu);
}

void dwl_store_forget(struct dwl_store *st, size_t idx)
{
	pthread_mutex_lock(&st->mu);
	struct fresh *f = base_vec_at(&st->fresh, idx);
	st->fresh_rows -= f->t->nrows;
	f->t = NULL;
	pthread_mutex_unlock(&st->mu);
}

/* A unit of the file being written, and where its rows are now. */
struct out_unit {
	struct store_unit u;
	const struct dwl_row *rows;
};

static int cmp_out_off(const void *a, const void *b)
{
	const struct out_unit *x = a, *y = b;
	return x->u.off < y->u.off ? -1 : x->u.off > y->u.off;
}

int dwl_store_save(struct dwl_store *st)
{
	if (!st)
		return 0;
	size_t nfresh = 0;
	for (size_t i = 0; i < st->fresh.len; i++)
		nfresh += ((struct fresh *)base_vec_at(&st->fresh, i))->t != NULL;
	if (!nfresh)
		return 0;
	/* the stored units still good or not checked, and the fresh ones, by offset */
	size_t n = 0, rows = 0, np = 0;
	struct out_unit *o = calloc(st->nunits + nfresh, sizeof(*o));
	struct store_unit *u = calloc(st->nunits + nfresh, sizeof(*u));
	struct base_piece *pieces = calloc(st->nunits + nfresh + 2, sizeof(*pieces));
	int err = o && u && pieces ? 0 : -ENOMEM;
	for (size_t i = 0; !err && i < st->nunits; i++)
		if (st->state[i] != 2)
			o[n++] = (struct out_unit){ st->units[i], st->rows + st->units[i].first };
	for (size_t k = 0; !err && k < st->fresh.len; k++) {
		const struct fresh *f = base_vec_at(&st->fresh, k);
		if (f->t)
			o[n++] = (struct out_unit){ { f->off, f->len, f->hash,
				base_hash_block(f->t->rows, f->t->nrows * sizeof(struct dwl_row)), 0, f->t->nrows }, f->t->rows };
	}
	if (!err)
		qsort(o, n, sizeof(*o), cmp_out_off);
	for (size_t i = 0; !err && i < n; i++) {
		if (i && o[i].u.off == o[i - 1].u.off) /* cannot happen: one table per unit per run */
			err = -EINVAL;
		u[i] = o[i].u;
		u[i].first = rows;
		rows += u[i].nrows;
		pieces[2 + np++] = (struct base_piece){ o[i].rows, (size_t)u[i].nrows * sizeof(struct dwl_row) };
	}
	struct store_hdr h = { .row_size = sizeof(struct dwl_row), .unit_size = sizeof(struct store_unit),
			       .nunits = n, .nrows = rows, .ident = st->ident };
	memcpy(h.magic, STORE_MAGIC, 8);
	if (!err) {
		pieces[0] = (struct base_piece){ &h, sizeof(h) };
		pieces[1] = (struct base_piece){ u, n * sizeof(*u) };
		uint64_t total = sizeof(h) + n * sizeof(*u) + rows * sizeof(struct dwl_row);
		err = base_cache_admit(st->path, total, st->cap, base_cache_files) ? base_replace_file(st->path, pieces, 2 + np)
										    : -UW_ELIMIT;
	}
	free(pieces);
	free(u);
	free(o);
	return err ? err : 1;
}

void dwl_store_counts(const struct dwl_store *st, size_t *stored, size_t *taken, size_t *added)
{
	*stored = st ? st->nunits : 0;
	*taken = st ? st->taken : 0;
	*added = 0;
	for (size_t i = 0; st && i < st->fresh.len; i++)
		*added += ((struct fresh *)base_vec_at(&st->fresh, i))->t != NULL;
}

void dwl_store_free(struct dwl_store *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->fresh.len; i++) {
		struct fresh *f = base_vec_at(&st->fresh, i);
		if (f->t)
			f->t->store = NULL; /* outlives the store: keeps its own rows */
	}
	if (st->map)
		munmap(st->map, st->map_size);
	free(st->state);
	base_vec_free(&st->fresh);
	pthread_mutex_destroy(&st->mu);
	free(st->path);
	free(st);
}
