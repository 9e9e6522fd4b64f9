/* SPDX-License-Identifier: MIT */
/*
 * An immutable, bounds-checked view of one ELF file, mapped read-only. Section and segment
 * tables are read through libelf (which checks them against the file size); section data
 * points into the mapping (zero copy) unless the section is compressed, in which case it is
 * inflated once into memory owned by the view. Prefix: elfv_ (libelf owns elf_).
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
	int fd;
	const uint8_t *map;
	size_t size;
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
	struct base_map inflated; /* section index -> inflated copy, owned by the view */
	void *owned;          /* a memory image the view frees (elfv_adopt_mem) */
	uint64_t max_inflate; /* cap on one decompressed section (default ELFV_MAX_INFLATE) */
};

/* Opens and maps path (never waiting on a FIFO or device: those are -UW_ENOTREG; flags:
 * BASE_OPEN_NOFOLLOW for a path a recording names, -ELOOP for a link). On failure returns a
 * negative error (-errno, -UW_ENOTREG or -UW_ENOELF). */
int elfv_open(const char *path, unsigned flags, struct elfv **out);
/* Same, from a memory image the caller keeps alive (fuzzing, tests). */
int elfv_open_mem(const void *data, size_t size, struct elfv **out);
/* Same, taking ownership of a malloc'd image (freed by elfv_close, also on failure). */
int elfv_adopt_mem(void *data, size_t size, struct elfv **out);
void elfv_close(struct elfv *v);

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
/* Decompresses z into dst (z->size bytes). Reads no view: safe on any thread. */
int elfv_zsec_decompress(const struct elfv_zsec *z, void *dst);
/* Section by index. */
int elfv_section_at(struct elfv *v, size_t idx, struct elfv_sec *out);
/* Name of a section index ("" if none). */
const char *elfv_section_name(struct elfv *v, size_t idx);

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
