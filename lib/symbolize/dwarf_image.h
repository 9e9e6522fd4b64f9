/* SPDX-License-Identifier: MIT */
/*
 * The DWARF a Dwarf handle reads: the file itself; or, when it has compressed sections, a
 * decompressed image of it (the sections the index needs, inflated in parallel), which is also
 * written to the DWARF cache for later runs; or the cache's copy.
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
};

struct dwi_file {
	void *image;          /* a decompressed copy of the file handed to libdw, or NULL */
	Elf *image_elf;
	struct elfv *cached;  /* the cache's decompressed copy libdw reads, or NULL */
	struct cache_write *cw;
};


/* A Dwarf handle for v (cache: the DWARF cache's directory or NULL, cap its size); what it
 * needs besides v is kept in f. NULL when libdw cannot read it; *why -UW_ELIMIT when a
 * compressed section claims more than the caps allow. */
Dwarf *dwi_image_begin(struct elfv *v, const char *cache, uint64_t cap, struct dwi_file *f, int *why);
/* Frees f (after dwarf_end of its handle): waits for its cache write. */
void dwi_image_end(struct dwi_file *f);

#endif
