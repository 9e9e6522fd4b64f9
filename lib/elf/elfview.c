/* SPDX-License-Identifier: MIT */
#include "elf/elfview.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <libdeflate.h>
#include <zstd.h>

struct elfv_inflated {
	void *buf;
	size_t size;
};

static int section_at(struct elfv *v, size_t idx, struct elfv_sec *out, bool inflate);
static int section_hdr(struct elfv *v, size_t idx, struct elfv_sec *out, Elf_Scn **scnp);

/* A file view's failed read: the file is shorter now than when it was opened (rebuilt or
 * copied over in place) or could not be read. Kept: the view says so (elfv_read_error). */
static int read_failed(struct elfv *v, uint64_t end)
{
	struct stat st;
	int err = fstat(v->fd, &st) == 0 && (uint64_t)st.st_size < end ? -UW_ETRUNC : -EIO;
	if (!v->read_err)
		v->read_err = err;
	return err;
}

int elfv_read(struct elfv *v, uint64_t off, void *dst, size_t n)
{
	if (off > v->size || n > v->size - off)
		return -UW_EFORMAT;
	if (v->map) {
		memcpy(dst, v->map + off, n);
		return 0;
	}
	for (size_t got = 0; got < n;) {
		ssize_t r = pread(v->fd, (uint8_t *)dst + got, n - got, (off_t)(off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == ENOMEM || errno == ENOBUFS))
			return -ENOMEM;
		if (r <= 0)
			return read_failed(v, off + n);
		got += (size_t)r;
	}
	return 0;
}

/* n bytes at off, in memory for as long as the view lives (a file view's are read once, by
 * libelf, and kept with it). NULL when they are past the end or cannot be read. */
static const uint8_t *read_range(struct elfv *v, uint64_t off, uint64_t n)
{
	if (off > v->size || n > v->size - off)
		return NULL;
	if (v->map)
		return v->map + off;
	Elf_Data *d = elf_getdata_rawchunk(v->elf, (int64_t)off, (size_t)n, ELF_T_BYTE);
	if (!d || (n && !d->d_buf)) {
		read_failed(v, off + n);
		return NULL;
	}
	return d->d_buf;
}

static void elfv_lib_init(void)
{
	/* elf_version() only records the version; calling it more than once is harmless. */
	elf_version(EV_CURRENT);
}

size_t elfv_notes_build_id(const uint8_t *p, size_t n, uint8_t *out)
{
	struct base_cursor c = base_cursor(p, n);
	while (base_cur_left(&c) >= 12) {
		uint32_t namesz = base_cur_u32(&c), descsz = base_cur_u32(&c), type = base_cur_u32(&c);
		size_t nameal = ((size_t)namesz + 3) & ~(size_t)3, descal = ((size_t)descsz + 3) & ~(size_t)3;
		if (nameal < namesz || descal < descsz || !base_cur_need(&c, nameal))
			return 0;
		const uint8_t *name = c.p;
		c.p += nameal;
		if (!base_cur_need(&c, descal))
			return 0;
		const uint8_t *desc = c.p;
		c.p += descal;
		if (type == NT_GNU_BUILD_ID && namesz == 4 && memcmp(name, "GNU", 4) == 0 && descsz > 0 &&
		    descsz <= ELFV_MAX_BUILD_ID) {
			memcpy(out, desc, descsz);
			return descsz;
		}
	}
	return 0;
}

/* (elf.h of glibc 2.36 lacks it) */
#define PT_GNU_SFRAME_TYPE 0x6474e554

static void parse_notes(struct elfv *v, const uint8_t *p, size_t n)
{
	if (!v->build_id_len)
		v->build_id_len = elfv_notes_build_id(p, n, v->build_id);
}

static int elfv_setup(struct elfv *v)
{
	Elf *e = v->elf;
	if (elf_kind(e) != ELF_K_ELF)
		return -UW_ENOELF;
	GElf_Ehdr eh;
	if (!gelf_getehdr(e, &eh))
		return -UW_ENOELF;
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return -UW_EUNSUPP;
	v->type = eh.e_type;
	v->machine = eh.e_machine;

	size_t nph = 0;
	if (elf_getphdrnum(e, &nph))
		nph = 0;
	if (nph > 65536)
		return -UW_ENOELF;
	v->loads = calloc(nph ? nph : 1, sizeof(*v->loads));
	if (!v->loads)
		return -ENOMEM;
	v->min_vaddr = UINT64_MAX;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(e, (int)i, &ph))
			continue;
		if (ph.p_type == PT_LOAD) {
			struct elfv_seg *s = &v->loads[v->nloads++];
			s->vaddr = ph.p_vaddr;
			s->memsz = ph.p_memsz;
			s->offset = ph.p_offset;
			s->filesz = ph.p_filesz;
			s->flags = ph.p_flags;
			uint64_t al = ph.p_align > 1 && !(ph.p_align & (ph.p_align - 1)) ? ph.p_align : 4096;
			if ((ph.p_vaddr & ~(al - 1)) < v->min_vaddr)
				v->min_vaddr = ph.p_vaddr & ~(al - 1);
		} else if (ph.p_type == PT_GNU_SFRAME_TYPE && ph.p_offset < v->size && ph.p_filesz &&
			   ph.p_filesz <= v->size - ph.p_offset) {
			v->sframe = (struct elfv_seg){ ph.p_vaddr, ph.p_memsz, ph.p_offset, ph.p_filesz, ph.p_flags };
		} else if (ph.p_type == PT_NOTE && ph.p_offset < v->size &&
			   ph.p_filesz <= v->size - ph.p_offset && !v->build_id_len) {
			const uint8_t *notes = read_range(v, ph.p_offset, ph.p_filesz);
			if (notes)
				parse_notes(v, notes, ph.p_filesz);
		}
	}
	if (v->min_vaddr == UINT64_MAX)
		v->min_vaddr = 0;

	size_t nsec = 0;
	if (elf_getshdrnum(e, &nsec))
		nsec = 0;
	for (size_t i = 1; i < nsec; i++) {
		struct elfv_sec s;
		if (section_hdr(v, i, &s, NULL) || (s.flags & SHF_COMPRESSED) || s.type == SHT_NOBITS)
			continue;
		/* only these are read now: a file's other sections when first asked for */
		bool note = s.type == SHT_NOTE && !v->build_id_len;
		bool link = !v->debuglink && s.size >= 8 && strcmp(elfv_section_name(v, i), ".gnu_debuglink") == 0;
		if ((!note && !link) || section_at(v, i, &s, false))
			continue;
		if (note && s.data)
			parse_notes(v, s.data, s.size);
		if (link && s.data) {
			const char *nm = (const char *)s.data;
			size_t l = strnlen(nm, s.size);
			size_t crcoff = (l + 4) & ~(size_t)3;
			if (l < s.size && l > 0 && crcoff + 4 <= s.size) {
				v->debuglink = nm;
				memcpy(&v->debuglink_crc, s.data + crcoff, 4);
			}
		}
	}
	return 0;
}

/* A view over bytes in memory (map) or over a file read through libelf (fd, map NULL). */
static int elfv_new(const void *map, size_t size, int fd, struct elfv **out)
{
	elfv_lib_init();
	struct elfv *v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->fd = fd;
	v->map = map;
	v->size = size;
	v->max_inflate = ELFV_MAX_INFLATE;
	base_map_init(&v->inflated);
	/* A file is read, never mapped: a mapping of a file that shrinks (a binary rebuilt or
	 * copied over in place) kills the process with SIGBUS at the first page past the new end.
	 * libelf's ELF_C_READ reads the headers when asked for, and a section whole with pread
	 * when its data is first asked for (kept until the view is closed); a read that comes up
	 * short is an error of that file. */
	v->elf = map ? elf_memory((char *)map, size) : elf_begin(fd, ELF_C_READ, NULL);
	if (!v->elf) {
		free(v);
		return -UW_ENOELF;
	}
	int err = elfv_setup(v);
	if (err) {
		elf_end(v->elf);
		free(v->loads);
		free(v);
		return err;
	}
	*out = v;
	return 0;
}

int elfv_open_fd(int fd, struct elfv **out)
{
	struct stat st;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -UW_ENOTREG;
	}
	if (st.st_size < 64 || (uint64_t)st.st_size > SIZE_MAX) {
		close(fd);
		return -UW_ENOELF;
	}
	int err = elfv_new(NULL, (size_t)st.st_size, fd, out);
	if (err) {
		close(fd);
		return err;
	}
	(*out)->dev = st.st_dev;
	(*out)->ino = st.st_ino;
	(*out)->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	(*out)->ctime_ns = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
	return 0;
}

int elfv_open(const char *path, unsigned flags, struct elfv **out)
{
	uint64_t size;
	int fd = base_open_file(path, flags, 0, &size);
	return fd < 0 ? fd : elfv_open_fd(fd, out);
}

int elfv_open_mapped(const char *path, unsigned flags, struct elfv **out)
{
	uint64_t size;
	int fd = base_open_file(path, flags, 0, &size);
	if (fd < 0)
		return fd;
	struct stat st;
	/* only a file of ours that no one else may write (see elfview.h) */
	if (fstat(fd, &st) || st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) || size < 64 ||
	    size > SIZE_MAX) {
		close(fd);
		return -UW_ENOELF;
	}
	void *map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		int e = -errno;
		close(fd);
		return e;
	}
	int err = elfv_new(map, (size_t)size, -1, out);
	if (err) {
		munmap(map, (size_t)size);
		close(fd);
		return err;
	}
	(*out)->mapped = true;
	(*out)->dev = st.st_dev;
	(*out)->ino = st.st_ino;
	base_cache_touch(fd); /* used: the last to go when the cache is full */
	close(fd);
	return 0;
}

int elfv_open_mem(const void *data, size_t size, struct elfv **out)
{
	if (size < 64)
		return -UW_ENOELF;
	return elfv_new(data, size, -1, out);
}

int elfv_adopt_mem(void *data, size_t size, struct elfv **out)
{
	int err = elfv_open_mem(data, size, out);
	if (err) {
		free(data);
		return err;
	}
	(*out)->owned = data;
	return 0;
}

void elfv_close(struct elfv *v)
{
	if (!v)
		return;
	free(v->owned);
	elf_end(v->elf);
	size_t it = 0;
	void *val;
	while (base_map_next(&v->inflated, &it, NULL, &val)) {
		free(((struct elfv_inflated *)val)->buf);
		free(val);
	}
	base_map_free(&v->inflated);
	free(v->loads);
	if (v->mapped)
		munmap((void *)v->map, v->size);
	if (v->fd >= 0)
		close(v->fd);
	free(v);
}

void elfv_detach(struct elfv *v)
{
	if (!v || v->fd < 0)
		return;
	elf_cntl(v->elf, ELF_C_FDDONE);
	close(v->fd);
	v->fd = -1;
}

const char *elfv_section_name(struct elfv *v, size_t idx)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(v->elf, &shstrndx))
		return "";
	Elf_Scn *scn = elf_getscn(v->elf, idx);
	GElf_Shdr sh;
	if (!scn || !gelf_getshdr(scn, &sh))
		return "";
	const char *n = elf_strptr(v->elf, shstrndx, sh.sh_name);
	return n ? n : "";
}

/* SHF_COMPRESSED sections: an Elf64_Chdr, then a zlib or zstd stream (ELF gABI). zstd is
 * ours to handle: libelf 0.188 only knows zlib. Every size is checked against the view's cap
 * and the stream must produce exactly the size the header announces. */
static int chdr(const struct elfv *v, const struct elfv_sec *raw, uint32_t *type, uint64_t *size,
                const uint8_t **payload, size_t *plen)
{
	struct base_cursor c = base_cursor(raw->data, raw->size);
	*type = base_cur_u32(&c);
	base_cur_u32(&c); /* reserved */
	*size = base_cur_u64(&c);
	base_cur_u64(&c); /* alignment */
	if (c.bad)
		return -UW_EFORMAT;
	if (*type != ELFCOMPRESS_ZLIB && *type != ELFCOMPRESS_ZSTD)
		return -UW_EUNSUPP;
	*payload = c.p;
	*plen = base_cur_left(&c);
	/* A size the stream could not hold: DWARF compresses at most 34:1 in sections over 1 MiB
	 * (every debug file of a Debian system; 84:1 in small ones), so a claim past
	 * ELFV_MAX_RATIO:1 beyond the first ELFV_RATIO_FREE bytes is a lie that would cost memory
	 * (and cache space) before the stream proved it. */
	if (*size > v->max_inflate || *size > ELFV_RATIO_FREE + (uint64_t)ELFV_MAX_RATIO * *plen)
		return -UW_ELIMIT;
	return 0;
}

static int decompress(uint32_t type, const uint8_t *src, size_t srclen, void *dst, uint64_t size)
{
	if (type == ELFCOMPRESS_ZSTD) {
		size_t got = ZSTD_decompress(dst, size, src, srclen);
		return ZSTD_isError(got) || got != size ? -UW_EFORMAT : 0;
	}
	/* libdeflate, not zlib: the whole output size is known, and its whole-buffer inflate is about
	 * twice as fast (libc's debug sections: 7 MiB inflated per run with inline frames) */
	struct libdeflate_decompressor *dc = libdeflate_alloc_decompressor();
	if (!dc)
		return -ENOMEM;
	size_t got = 0;
	enum libdeflate_result r = libdeflate_zlib_decompress(dc, src, srclen, dst, (size_t)size, &got);
	libdeflate_free_decompressor(dc);
	return r == LIBDEFLATE_SUCCESS && got == size ? 0 : -UW_EFORMAT;
}

int elfv_compressed_payload(struct elfv *v, size_t idx, struct elfv_zsec *z)
{
	struct elfv_sec raw;
	int err = section_at(v, idx, &raw, false);
	if (err)
		return err;
	if (!(raw.flags & SHF_COMPRESSED) || !raw.data)
		return -ENOENT;
	return chdr(v, &raw, &z->type, &z->size, &z->src, &z->srclen);
}

int elfv_compressed_read(struct elfv *v, size_t idx, struct elfv_zsec *z, void **buf)
{
	*buf = NULL;
	if (v->map)
		return elfv_compressed_payload(v, idx, z);
	struct elfv_sec raw;
	int err = section_hdr(v, idx, &raw, NULL);
	if (err)
		return err;
	if (!(raw.flags & SHF_COMPRESSED) || raw.type == SHT_NOBITS)
		return -ENOENT;
	if (raw.size > SIZE_MAX || !(*buf = malloc(raw.size ? (size_t)raw.size : 1)))
		return -ENOMEM;
	if ((err = elfv_read(v, raw.offset, *buf, (size_t)raw.size)) ||
	    (raw.data = *buf, err = chdr(v, &raw, &z->type, &z->size, &z->src, &z->srclen))) {
		free(*buf);
		*buf = NULL;
	}
	return err;
}

int elfv_zsec_decompress(const struct elfv_zsec *z, void *dst)
{
	return decompress(z->type, z->src, z->srclen, dst, z->size);
}

static int inflate_section(struct elfv *v, struct elfv_sec *s)
{
	uint32_t type;
	uint64_t size;
	const uint8_t *p;
	size_t n;
	int err = chdr(v, s, &type, &size, &p, &n);
	if (err)
		return err;
	uint8_t *buf = malloc(size ? size : 1);
	if (!buf)
		return -ENOMEM;
	if ((err = decompress(type, p, n, buf, size))) {
		free(buf);
		return err;
	}
	struct elfv_inflated *inf = malloc(sizeof(*inf));
	if (!inf || base_map_put(&v->inflated, s->index, inf)) {
		free(inf);
		free(buf);
		return -ENOMEM;
	}
	inf->buf = buf;
	inf->size = size;
	s->data = buf;
	s->size = size;
	s->flags &= ~(uint64_t)SHF_COMPRESSED;
	return 0;
}

/* A section's header (data NULL): nothing of its contents is read. */
static int section_hdr(struct elfv *v, size_t idx, struct elfv_sec *out, Elf_Scn **scnp)
{
	Elf_Scn *scn = elf_getscn(v->elf, idx);
	GElf_Shdr sh;
	if (!scn || !gelf_getshdr(scn, &sh))
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	out->size = sh.sh_size;
	out->addr = sh.sh_addr;
	out->offset = sh.sh_offset;
	out->type = sh.sh_type;
	out->flags = sh.sh_flags;
	out->link = sh.sh_link;
	out->entsize = sh.sh_entsize;
	out->index = idx;
	if (scnp)
		*scnp = scn;
	/* bounds against the file ourselves */
	if (sh.sh_type != SHT_NOBITS && (sh.sh_offset > v->size || sh.sh_size > v->size - sh.sh_offset))
		return -UW_EFORMAT;
	return 0;
}

static int section_at(struct elfv *v, size_t idx, struct elfv_sec *out, bool inflate)
{
	Elf_Scn *scn;
	int err = section_hdr(v, idx, out, &scn);
	if (err || out->type == SHT_NOBITS)
		return err;
	if (v->map) {
		out->data = v->map + out->offset;
	} else if (out->size) {
		/* read whole on first use (libelf keeps it) */
		errno = 0;
		Elf_Data *d = elf_rawdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size != out->size)
			return errno == ENOMEM ? -ENOMEM : read_failed(v, out->offset + out->size);
		out->data = d->d_buf;
	} else {
		out->data = (const uint8_t *)"";
	}
	if ((out->flags & SHF_COMPRESSED) && inflate) {
		/* one inflated copy per section, made on first use */
		struct elfv_inflated *inf = base_map_get(&v->inflated, idx);
		if (inf) {
			out->data = inf->buf;
			out->size = inf->size;
			out->flags &= ~(uint64_t)SHF_COMPRESSED;
			return 0;
		}
		return inflate_section(v, out);
	}
	return 0;
}

int elfv_section_info(struct elfv *v, size_t idx, struct elfv_sec *out)
{
	return section_hdr(v, idx, out, NULL);
}

uint64_t elfv_headers_hash(struct elfv *v)
{
	Elf *e = (Elf *)v->elf;
	GElf_Ehdr eh;
	uint64_t h = e && gelf_getehdr(e, &eh) ? base_hash_bytes(&eh, sizeof(eh)) : 0;
	size_t n = 0;
	if (!e || elf_getshdrnum(e, &n))
		return h;
	for (size_t i = 0; i < n; i++) {
		GElf_Shdr sh;
		if (gelf_getshdr(elf_getscn(e, i), &sh))
			h = base_hash64(h ^ base_hash_bytes(&sh, sizeof(sh)));
	}
	return h;
}

bool elfv_ident(const struct elfv *v, struct elfv_ident *out)
{
	if (v->fd < 0 && !v->mapped)
		return false;
	*out = (struct elfv_ident){ (uint64_t)v->dev, (uint64_t)v->ino, v->size, v->mtime_ns, v->ctime_ns };
	return true;
}

int elfv_section_at(struct elfv *v, size_t idx, struct elfv_sec *out)
{
	return section_at(v, idx, out, true);
}

bool elfv_sframe(struct elfv *v, const uint8_t **data, uint64_t *size, uint64_t *addr)
{
	struct elfv_sec sec;
	if (elfv_section(v, ".sframe", &sec) == 0 && sec.data) {
		*data = sec.data;
		*size = sec.size;
		*addr = sec.addr;
		return true;
	}
	if (!v->sframe.filesz || !(*data = read_range(v, v->sframe.offset, v->sframe.filesz)))
		return false;
	*size = v->sframe.filesz;
	*addr = v->sframe.vaddr;
	return true;
}

int elfv_section(struct elfv *v, const char *name, struct elfv_sec *out)
{
	size_t n = 0;
	if (elf_getshdrnum(v->elf, &n))
		return -ENOENT;
	for (size_t i = 1; i < n; i++)
		if (strcmp(elfv_section_name(v, i), name) == 0)
			return elfv_section_at(v, i, out);
	return -ENOENT;
}

bool elfv_has_section(struct elfv *v, const char *name)
{
	size_t n = 0;
	if (elf_getshdrnum(v->elf, &n))
		return false;
	for (size_t i = 1; i < n; i++) {
		if (strcmp(elfv_section_name(v, i), name) != 0)
			continue;
		struct elfv_sec sec;
		return section_hdr(v, i, &sec, NULL) == 0 && sec.type != SHT_NOBITS && sec.size > 0;
	}
	return false;
}

bool elfv_offset_to_vaddr(const struct elfv *v, uint64_t off, uint64_t *vaddr)
{
	for (size_t i = 0; i < v->nloads; i++) {
		const struct elfv_seg *s = &v->loads[i];
		if (off >= s->offset && off - s->offset < UW_MAX(s->filesz, (uint64_t)1)) {
			*vaddr = off - s->offset + s->vaddr;
			return true;
		}
	}
	return false;
}

size_t elfv_build_id_hex(const struct elfv *v, char *out)
{
	base_hex(v->build_id, v->build_id_len, out);
	return v->build_id_len * 2;
}

uint32_t elfv_crc32(uint32_t crc, const void *buf, size_t len)
{
	/* the gzip CRC-32, which gdb uses for .gnu_debuglink */
	return libdeflate_crc32(crc, buf, len);
}
