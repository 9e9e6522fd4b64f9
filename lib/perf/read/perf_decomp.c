/* SPDX-License-Identifier: MIT */
/*
 * Compressed records (perf record -z): PERF_RECORD_COMPRESSED (81) holds a piece of a zstd
 * stream after its 8-byte header, PERF_RECORD_COMPRESSED2 (83) the same after a u64 with the
 * piece's length (the record is padded to 8 bytes). One stream runs through all of a
 * recording's pieces, and a record of the ring buffer may be split across two pieces
 * (tools/perf/util/session.c keeps the tail of the previous buffer likewise). The stream is
 * decompressed into a fixed buffer: whole records are handed on as they appear, the tail of a
 * split one is moved to the front, so memory stays bounded whatever the stream's length.
 */
#include <errno.h>
#include <stdlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "perf/perf.h"

/* Room for two records of the maximum size (64 KiB each) and some slack. */
#define DECOMP_BUF (256u << 10)
/* The window a stream may ask for: perf compresses a ring buffer's worth at a time (level 1
 * uses a 512 KiB window); 2^24 leaves room for any level without letting a forged frame
 * header make the decompressor allocate gigabytes. */
#define DECOMP_WINDOW_LOG_MAX 24

struct perf_decomp {
	ZSTD_DStream *z;
	uint8_t *buf;
	size_t len;             /* bytes in buf: the start of a record not yet whole */
	uint64_t in, out;       /* totals */
};

int perf_decomp_new(struct perf_decomp **out)
{
	struct perf_decomp *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->z = ZSTD_createDStream();
	d->buf = malloc(DECOMP_BUF);
	if (!d->z || !d->buf || ZSTD_isError(ZSTD_initDStream(d->z)) ||
	    ZSTD_isError(ZSTD_DCtx_setParameter(d->z, ZSTD_d_windowLogMax, DECOMP_WINDOW_LOG_MAX))) {
		perf_decomp_free(d);
		return -ENOMEM;
	}
	*out = d;
	return 0;
}

void perf_decomp_free(struct perf_decomp *d)
{
	if (!d)
		return;
	ZSTD_freeDStream(d->z);
	free(d->buf);
	free(d);
}

uint64_t perf_decomp_bytes_out(const struct perf_decomp *d)
{
	return d ? d->out : 0;
}

/* Hands on the whole records at the front of the buffer and keeps the rest. */
static int drain_records(struct perf_decomp *d, perf_record_fn fn, void *ctx, const char **what)
{
	size_t pos = 0;
	int err = 0;
	while (d->len - pos >= 8) {
		uint16_t size;
		memcpy(&size, d->buf + pos + 6, 2);
		if (size < 8) {
			*what = "a decompressed record's size is smaller than its header";
			return -UW_EFORMAT;
		}
		if (size > d->len - pos)
			break;
		err = fn(ctx, d->buf + pos, size);
		if (err)
			return err;
		pos += size;
	}
	memmove(d->buf, d->buf + pos, d->len - pos);
	d->len -= pos;
	return 0;
}

int perf_decomp_feed(struct perf_decomp *d, const uint8_t *p, size_t n, uint64_t max_out, perf_record_fn fn,
                     void *ctx, const char **what)
{
	ZSTD_inBuffer in = { p, n, 0 };
	d->in += n;
	for (;;) {
		ZSTD_outBuffer out = { d->buf, DECOMP_BUF, d->len };
		size_t r = ZSTD_decompressStream(d->z, &out, &in);
		if (ZSTD_isError(r)) {
			*what = ZSTD_getErrorName(r);
			return ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation ? -ENOMEM : -UW_EFORMAT;
		}
		d->out += out.pos - d->len;
		d->len = out.pos;
		if (d->out > max_out) {
			*what = "compressed records expand past the limit (a decompression bomb?)";
			return -UW_ELIMIT;
		}
		int err = drain_records(d, fn, ctx, what);
		if (err)
			return err;
		/* all input taken and nothing more came out: the piece is done (the decoder may
		 * still hold output when the buffer was full, so only then) */
		if (in.pos == in.size && out.pos < out.size)
			return 0;
	}
}

/* Bytes of a record split across pieces that never got its end. */
size_t perf_decomp_pending(const struct perf_decomp *d)
{
	return d ? d->len : 0;
}
