/* SPDX-License-Identifier: MIT */
/*
 * The DWARF cache's decompressed images (dwarf_cache.c; the line store's calls are in
 * dwarf_line.h, beside the tables they fill).
 */
#ifndef UW_DWARF_CACHE_H
#define UW_DWARF_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elf/elfview.h"

struct dwi_file;

/* Whether v has a compressed section (only those images are cached). */
bool dwc_has_compressed(struct elfv *v);
/* DIR/BUILD-ID-KEY.dwarf2 for v (malloc'd), NULL when v has no key or dir is none. */
char *dwc_image_path(const char *dir, struct elfv *v);
/* The cache's image at path when it was made from v (its identity and headers), else NULL. */
struct elfv *dwc_image_open(const char *path, struct elfv *v);
/* f->image (size bytes, made from v) written to path (taken) by a thread of f (joined by
 * dwi_image_end), within cap. */
void dwc_image_write(struct dwi_file *f, struct elfv *v, char *path, size_t size, uint64_t cap);

#endif
