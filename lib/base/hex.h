/* SPDX-License-Identifier: MIT */
#ifndef UW_BASE_HEX_H
#define UW_BASE_HEX_H

#include <stddef.h>
#include <stdint.h>

/* hex encoding of a build-id into out (2*n+1 bytes) */
void base_hex(const uint8_t *p, size_t n, char *out);

#endif
