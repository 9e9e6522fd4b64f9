/* SPDX-License-Identifier: MIT */
/*
 * An immutable, bounds-checked view of one ELF file. A file is read, never mapped (a mapped
 * file that shrinks kills the reader with SIGBUS): headers through libelf's ELF_C_READ, each
 * section whole with pread when its data is first asked for, kept by the view. A file that
 * is shorter than when it was opened (rebuilt or copied over in place) makes those reads fail
 * with -UW_ETRUNC, and the view remembers it (elfv_read_error). Views over memory (a vdso
 * copy, MiniDebugInfo, fuzzing) and over the DWARF cache's own files (elfv_open_mapped) point
 * into their bytes. A compressed section is inflated once into memory owned by the view.
 * Prefix: elfv_ (libelf owns elf_).
 */
#ifndef UW_ELFVIEW_H
#define UW_ELFVIEW_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/base.h"

#define ELFV_MAX_BUILD_ID 64

/* ELF gABI ch_type for zstd; the installed <elf.h> may predate it */
#ifndef ELFCOMPRESS_ZSTD
#define ELFCOMPRESS_ZSTD 2
#endif

struct elfv_seg {
	uint64_t vaddr, memsz, offset, filesz;
	uint32_t flags; /* PF_X | PF_W | PF_R */
};

struct elfv_sec {
	const uint8_t *data; /* NULL for SHT_NOBITS */
	uint64_t size;
	uint64_t addr;       /* sh_addr */
	uint64_t offset;     /* sh_offset */
	uint32_t type;
	uint64_t flags;
	uint32_t link;
	uint64_t entsize;
	size_t index;
};

struct elfv {
	int fd;               /* a file view's descriptor (read through), else -1 */
	const uint8_t *map;   /* a memory or mapped view's bytes; NULL for a file view */
	size_t size;          /* the file's size when it was opened */
	void *elf;            /* Elf * */
	uint16_t type, machine;
	uint8_t build_id[ELFV_MAX_BUILD_ID];
	size_t build_id_len;
	const char *debuglink; /* points into the mapping, NUL-terminated; NULL if none */
	uint32_t debuglink_crc;
	struct elfv_seg *loads;
	size_t nloads;
	uint64_t min_vaddr;   /* lowest PT_LOAD vaddr (page aligned down) */
	struct elfv_seg sframe; /* PT_GNU_SFRAME (filesz 0: none) */
	dev_t dev;
	ino_t ino;
	int64_t mtime_ns, ctime_ns; /* the file's identity when opened, with dev and ino */
	bool mapped;          /* map is a mapping elfv_close unmaps */
	int read_err;         /* the first read of the file that failed (-UW_ETRUNC: it shrank) */
	bool read_err_said;   /* (for the layer that reports it, once) */
	struct base_map inflated; /* section index -> inflated copy, owned by the view */
	void *owned;          /* a memory image the view frees (elfv_adopt_mem) */
	uint64_t max_inflate; /* cap on one decompressed section (default ELFV_MAX_INFLATE) */
};

/* Opens path to read (never waiting on a FIFO or opening a device: those are -UW_ENOTREG;
 * flags: base_open_file's, BASE_OPEN_NOFOLLOW for a path a recording names, -ELOOP for a
 * link). On failure returns a negative error (-errno, -UW_ENOTREG or -UW_ENOELF). */
int elfv_open(const char *path, unsigned flags, struct elfv **out);
/* Same, over a descriptor opened with base_open_file (taken: closed by elfv_close, or now on
 * failure). */
int elfv_open_fd(int fd, struct elfv **out);
/* Maps path instead of reading it, for the DWARF cache's own files only: written by this user
 * under a temporary name and renamed into place, never written again, so no one truncates
 * what is mapped (the file must be owned by the caller's user and not writable by others,
 * else -UW_ENOELF). */
int elfv_open_mapped(const char *path, unsigned flags, struct elfv **out);
/* Same, from a memory image the caller keeps alive (fuzzing, tests). */
int elfv_open_mem(const void *data, size_t size, struct elfv **out);
/* Same, taking ownership of a malloc'd image (freed by elfv_close, also on failure). */
int elfv_adopt_mem(void *data, size_t size, struct elfv **out);
void elfv_close(struct elfv *v);
/* Closes a file view's descriptor: what was read stays; what was not can no longer be (a view
 * that will be asked for nothing more, kept without holding a descriptor). */
void elfv_detach(struct elfv *v);

/* Finds a section by name. Compressed sections (SHF_COMPRESSED, zlib) come back inflated,
 * up to ELFV_MAX_INFLATE bytes. @return 0, -ENOENT, or another negative error. */
#define ELFV_MAX_INFLATE ((uint64_t)1 << 30)
/* A compressed section may claim at most ELFV_RATIO_FREE bytes more than ELFV_MAX_RATIO times
 * its compressed bytes (see chdr in elfview.c). */
#define ELFV_MAX_RATIO 64u
#define ELFV_RATIO_FREE ((uint64_t)4 << 20)
int elfv_section(struct elfv *v, const char *name, struct elfv_sec *out);
/* The SFrame data: the .sframe section, else (no section headers) the PT_GNU_SFRAME segment.
 * @return false when the file has neither. */
bool elfv_sframe(struct elfv *v, const uint8_t **data, uint64_t *size, uint64_t *addr);
/* Whether a section with contents exists, without reading (or inflating) them. */
bool elfv_has_section(struct elfv *v, const char *name);
/* For an SHF_COMPRESSED section: its compression (ELFCOMPRESS_ZLIB or ELFCOMPRESS_ZSTD), its
 * uncompressed size and its payload, to be decompressed away from the view (another thread).
 * @return 0, -ENOENT (not compressed), -UW_ELIMIT (over the cap), or a negative error. */
struct elfv_zsec {
	uint32_t type;
	const uint8_t *src;
	size_t srclen;
	uint64_t size;      /* uncompressed (checked against the view's cap) */
};
int elfv_compressed_payload(struct elfv *v, size_t idx, struct elfv_zsec *z);
/* The same, its compressed bytes read into *buf (malloc'd, the caller frees it; z->src points
 * into it) rather than kept by the view: for a file view whose section is inflated once. */
int elfv_compressed_read(struct elfv *v, size_t idx, struct elfv_zsec *z, void **buf);
/* Decompresses z into dst (z->size bytes). Reads no view: safe on any thread. */
int elfv_zsec_decompress(const struct elfv_zsec *z, void *dst);
/* Section by index. */
int elfv_section_at(struct elfv *v, size_t idx, struct elfv_sec *out);
/* Its header only (data NULL): nothing of its contents is read. */
int elfv_section_info(struct elfv *v, size_t idx, struct elfv_sec *out);
/* Name of a section index ("" if none). */
const char *elfv_section_name(struct elfv *v, size_t idx);

/* What a file is: device, inode, size and times when it was opened. No two files have the
 * same while they exist, and a file written since has another (its change time). */
struct elfv_ident {
	uint64_t dev, ino, size;
	int64_t mtime_ns, ctime_ns;
};
/* @return false for a view over memory (no file). */
bool elfv_ident(const struct elfv *v, struct elfv_ident *out);
/* A hash of the file's ELF header and section headers (a cache's check that an entry was made
 * from this file's layout). */
uint64_t elfv_headers_hash(struct elfv *v);

/* Reads n bytes of the file at off into dst (a memory view's are copied). @return 0,
 * -UW_EFORMAT past the size the file had when opened, -UW_ETRUNC when it is shorter now,
 * another negative error. */
int elfv_read(struct elfv *v, uint64_t off, void *dst, size_t n);
/* The first read of the file that failed (0: none): -UW_ETRUNC when it had shrunk since it was
 * opened. What the view could not read is missing from what was made of it. */
static inline int elfv_read_error(const struct elfv *v)
{
	return v->read_err;
}

/* Maps a file offset to an ELF virtual address through the PT_LOAD segments.
 * @return true and *vaddr on success. */
bool elfv_offset_to_vaddr(const struct elfv *v, uint64_t off, uint64_t *vaddr);

/* Reads the GNU build-id note from a memory ELF image (for perf's build-id checks). */
size_t elfv_build_id_hex(const struct elfv *v, char *out /* 2*ELFV_MAX_BUILD_ID+1 */);
/* The GNU build-id note among notes p[0..n) (a PT_NOTE segment, a note section, the kernel's
 * /sys/kernel/notes) into out (ELFV_MAX_BUILD_ID bytes). @return its length, 0 when none. */
size_t elfv_notes_build_id(const uint8_t *p, size_t n, uint8_t *out);

/* CRC-32 as used by .gnu_debuglink. */
uint32_t elfv_crc32(uint32_t crc, const void *buf, size_t len);

#endif
