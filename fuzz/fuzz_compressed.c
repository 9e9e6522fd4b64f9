/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the decompressor of PERF_RECORD_COMPRESSED pieces (perf record -z). The
 * input's first byte chooses how the rest is cut into pieces (one stream through all of them,
 * as a recording's records carry it); every record handed on must lie inside the buffer it
 * came in and have a size of at least its header.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "perf/perf.h"

static int on_record(void *ctx, const uint8_t *rec, uint32_t len)
{
	size_t *n = ctx;
	uint16_t size;
	memcpy(&size, rec + 6, 2);
	if (len < 8 || size != len)
		abort();
	(*n)++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	size_t piece = 1 + (size_t)data[0] * 61;
	data++;
	size--;
	struct perf_decomp *d;
	if (perf_decomp_new(&d))
		return 0;
	size_t nrec = 0;
	for (size_t off = 0; off < size;) {
		size_t n = size - off < piece ? size - off : piece;
		const char *what = NULL;
		if (perf_decomp_feed(d, data + off, n, (uint64_t)64 << 20, on_record, &nrec, &what))
			break;
		off += n;
	}
	perf_decomp_free(d);
	return 0;
}
