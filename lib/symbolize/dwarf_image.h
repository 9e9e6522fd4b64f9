/* SPDX-License-Identifier: MIT */
/*
 * The DWARF a Dwarf handle reads: an image of the file's DWARF in memory (the sections the
 * index needs, read, or inflated in parallel when compressed; the file is never mapped), which
 * for a file with compressed sections is also written to the DWARF cache for later runs; or the
 * cache's copy, made from that same file (see dwarf_image.c).
 */
#ifndef UW_DWARF_IMAGE_H
#define UW_DWARF_IMAGE_H

#include <elfutils/libdw.h>
#include <pthread.h>

#include "elf/elfview.h"

/* What a Dwarf handle reads besides the view: a decompressed image, or the cache's copy, and
 * the thread writing the image to the cache. */
struct cache_write {
	pthread_t th;
	const uint8_t *img;
	size_t size;
	char *path;
	uint64_t cap;
	uint64_t ident[8];    /* written after the image: struct cache_ident (dwarf_image.c) */
};

struct dwi_file {
	void *image;          /* a decompressed copy of the file handed to libdw, or NULL */
	Elf *image_elf;
	struct elfv *cached;  /* the cache's decompressed copy libdw reads, or NULL */
	struct cache_write *cw;
};


/* A Dwarf handle for v (cache: the DWARF cache's directory or NULL, cap its size); what it
 * needs besides v is kept in f. NULL when libdw cannot read it; *why then -UW_ELIMIT when a
 * compressed section claims more than the caps allow, -ENOMEM, -UW_ETRUNC when the file shrank
 * while it was read, else 0 or another error. */
Dwarf *dwi_image_begin(struct elfv *v, const char *cache, uint64_t cap, struct dwi_file *f, int *why);
/* The name of v's entries in the cache: "BUILD-ID-KEY", KEY a hash of the file's identity
 * (elfv_ident). false when v is no file (memory) or has no build-id. */
bool dwi_file_key(struct elfv *v, char *out, size_t cap);
/* Frees f (after dwarf_end of its handle): waits for its cache write. */
void dwi_image_end(struct dwi_file *f);

#endif
