/* SPDX-License-Identifier: MIT */
/* Base layer: allocation, containers, hashing, interning, errors and logging, bounded reading
 * (one LEB128 decoder), files. Knows nothing else. Each concern has its own header and file
 * (alloc, arena, vec, map, hash, intern, log + error, cursor + leb, bound, hex, file, output,
 * cache, names); this one includes them all. */
#ifndef UW_BASE_H
#define UW_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "unwound/unwound.h"

#include "base/compiler.h"
#include "base/alloc.h"
#include "base/arena.h"
#include "base/vec.h"
#include "base/map.h"
#include "base/hash.h"
#include "base/intern.h"
#include "base/log.h"
#include "base/cursor.h"
#include "base/bound.h"
#include "base/hex.h"
#include "base/file.h"
#include "base/output.h"
#include "base/cache.h"

#endif
