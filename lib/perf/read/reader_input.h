/* SPDX-License-Identifier: MIT */
/*
 * Reading records (reader_input.c): a file in pread windows or a stream, the read-ahead thread.
 * The stage is passed its own state alone (and reads the attribute table the reader gives it).
 * Errors at an offset of the input: err_off and err_what set for the reader to say.
 */
#ifndef UW_PERF_READER_INPUT_H
#define UW_PERF_READER_INPUT_H

#include <pthread.h>
#include <stdatomic.h>

#include "perf/read/reader_attrs.h"

/* A sample whose user stack was cut to a prefix when read: where the whole record is. */
struct cut {
	uint64_t off;
	uint32_t len;
	bool cut;
};

/* The prefix chosen at an adaptation, and where the reading was then. */
struct prefix_step {
	uint64_t at;             /* the records before this offset had been processed */
	uint32_t prefix;
};

#define PREFIX_START 4096u       /* bytes of each stack read at first (sparse reading) */
#define PREFIX_LAG ((uint64_t)2 << 20) /* a prefix applies this far past where it was chosen */

struct ra;
struct ra_chunk;

struct reader_input {
	const struct reader_attrs *at; /* the recording's (read only: a sample's stack is cut by its attribute) */
	uint64_t err_off;        /* the last error: where, and what (a static string; NULL: none to say) */
	const char *err_what;
	int fd;
	bool close_fd;
	bool seekable;           /* a regular file: read with pread (never mapped) */
	uint64_t file_size;      /* when opened */
	uint64_t pos, end;       /* seekable: record cursor */
	/* Reading a seekable file's records in windows (see next_record_sparse) */
	bool sparse;
	bool cut_stacks;         /* samples' stacks cut to a prefix (not full_stacks) */
	uint8_t *win;            /* file bytes [win_off, win_off + win_len) */
	size_t wincap, win_len;
	uint64_t win_off;
	uint8_t *cbuf;           /* the record being returned, cut or whole (64 KiB) */
	uint8_t *fullbuf;        /* a cut sample read back whole (64 KiB) */
	struct cut cur_cut;      /* of the record next_record returned last */
	int32_t cur_aidx;        /* ... its attribute when the input found it (-1: not looked up) */
	/* Bytes of user stack kept per sample (sparse reading): the prefix of a record at offset o
	 * is the one chosen last before the records up to o - PREFIX_LAG were processed, so that
	 * which record is cut how never depends on how far the read-ahead thread had got. */
	pthread_mutex_t psteps_mu;
	struct prefix_step *psteps; /* adaptations in order; the first still needed at psteps_first */
	size_t npsteps, capsteps, psteps_first;
	atomic_uint_least64_t done_off; /* the records before it have been processed */
	uint32_t keep_cur;       /* the prefix of the record being read (by its reading thread) */
	struct ra *ra;           /* read-ahead thread (file mode) */
	struct ra_chunk *cur_chunk; /* holding the record next_record returned last */
	uint32_t reach_hist[17]; /* log2 buckets of the stack bytes unwinding used */
	uint32_t reach_n;
	uint64_t reach_stack_sum;
	/* stream input */
	uint8_t *buf;
	size_t bufcap, buflen, bufpos;
	uint64_t stream_off;
	bool eof;
};

/* An input with no file yet (fd -1), reading the attribute table at. */
void reader_input_init(struct reader_input *in, const struct reader_attrs *at);
/* The input opened: path, or standard input for "-". A regular file is read with pread (seekable),
 * never mapped: a recording cut short while it is read (its writer restarted, a disk full, a
 * user's truncate) ends in a clear error where a mapping would take SIGBUS on the pages past the
 * new end; anything else is a stream. @return 0, -errno. */
int reader_input_open(struct reader_input *in, const char *path);
/* The parts of a directory recording (perf record --threads): DIR/data.N for each N, paths in
 * the order of N (*names: an array of *n strings, the caller frees them and it). @return 0;
 * -E2BIG past max parts; -errno. */
int reader_dir_parts(const char *dir, size_t max, char ***names, size_t *n);
/* The input's first 16 bytes (a perf.data header's magic and size), a stream's kept for what
 * follows. @return 0; -UW_ETRUNC when the input is shorter; -errno. */
int reader_input_head(struct reader_input *in, uint8_t h[16]);
/* The records: bytes [pos, end) of a seekable input; a stream's from byte pos on (pos: the bytes
 * reader_input_head kept, at most). */
void reader_input_records(struct reader_input *in, uint64_t pos, uint64_t end);
/* A seekable input's records read in windows, samples' stacks cut to a prefix when cut_stacks. */
int reader_input_sparse(struct reader_input *in, bool cut_stacks);
void reader_input_free(struct reader_input *in);
/* n bytes at off of a seekable input into buf (-UW_ETRUNC when the file ends before). */
int reader_pread(struct reader_input *in, void *buf, size_t n, uint64_t off);
/* Stream input: at least need bytes buffered from bufpos (-UW_ETRUNC at the end). */
int reader_fill(struct reader_input *in, size_t need);
/* Next record: *rec points to header + body (valid until the next call). @return 1, 0 at end. */
int reader_next(struct reader_input *in, const uint8_t **rec, uint32_t *len, uint64_t *off);
/* Skips payload bytes that follow some records (AUXTRACE, TRACING_DATA). */
int reader_skip_payload(struct reader_input *in, uint64_t n, uint64_t off);
/* The read-ahead thread of a file-mode recording. */
int reader_ra_start(struct reader_input *in);
void reader_ra_stop(struct reader_input *in);
/* A queued record held in a read-ahead chunk, and its release once delivered. */
void reader_chunk_hold(struct ra_chunk *c);
void reader_chunk_release(struct reader_input *in, struct ra_chunk *c);
/* The whole record of a cut sample, read back (valid until the next call); NULL when it cannot. */
const uint8_t *reader_read_whole(struct reader_input *in, const struct cut *cut);
/* How much of its stack a sample's unwinding used (the prefix follows it: chosen from the
 * stacks' reach of the last 256 samples). */
void reader_note_reach(struct reader_input *in, uint64_t reach, uint64_t stack_size);

#endif
