/* SPDX-License-Identifier: MIT */
/*
 * A recording's description of itself (reader_header.c): the file header, which gives the
 * event attributes (into the reader's table) and where the data lies, and the feature sections
 * (kept for writers; build-ids, the kernel's release and the clock told to the tracker; the
 * host's description; the stop reasons unwound writes). The stage is passed its own state and
 * what it fills; errors at an offset of the file are kept (err_off, err_what) for the reader to
 * say, never said here.
 */
#ifndef UW_PERF_READER_HEADER_H
#define UW_PERF_READER_HEADER_H

#include "perf/read/reader_input.h"

/* A run of samples (in file order) with one stop reason, from FEAT_UW_STOPS. */
struct stop_run {
	uint64_t first;          /* ordinal of its first sample */
	uint32_t count;
	uint8_t reason;
};

struct feat_sec {
	const uint8_t *p;
	size_t n;
	bool owned;
};

/* The feature sections kept. */
struct reader_features {
	struct feat_sec sec[FEAT_LAST]; /* as read (copies, or buffers the stage owns) */
	/* FEAT_UW_STOPS: the stop reason of each sample, in runs (file order) */
	struct stop_run *stops;
	size_t nstops;
};

struct reader_header {
	struct uw_session *s;    /* names interned; warnings logged (about path) */
	struct uw_tracker *t;    /* told the build-ids, the kernel's release, the wall clock */
	const char *path;
	uint64_t err_off;        /* the last error: where, and what (a static string; NULL: none to say) */
	const char *err_what;
	uint64_t data_off, data_end; /* file mode: the records' bytes */
	bool unfinished;         /* the writer stopped before its end: a record cut short ends the data */
	bool wall_exact;         /* the recording's clock data gave wall-clock time */
	uint64_t last_sample_time; /* from SAMPLE_TIME */
	const char *info[UW_INFO__COUNT]; /* interned */
	struct reader_features ft;
};

void reader_header_init(struct reader_header *h, struct uw_session *s, struct uw_tracker *t, const char *path);
void reader_header_free(struct reader_header *h);
/* A file-mode header read from in: the attributes added to at (each with its ids), the data's
 * place, the features read. @return 0; an error (err_off and err_what set when the file is at
 * fault). */
int reader_file_header(struct reader_header *h, struct reader_input *in, struct reader_attrs *at);
/* A feature section (pipe mode: from a HEADER_FEATURE record) read; at: the attributes it
 * names or checks. */
void reader_feature(struct reader_header *h, struct reader_attrs *at, unsigned feat, const uint8_t *p, uint64_t size);
/* A feature section kept for perf_reader_feature: copied (copy), else taken (owned, malloc'd). */
void reader_keep_feature(struct reader_features *ft, unsigned bit, const uint8_t *p, size_t n, bool copy);
/* Build-ids (a BUILD_ID section or HEADER_BUILD_ID record) to the tracker. */
void reader_build_ids(struct reader_header *h, const uint8_t *p, uint64_t size);
/* The stop reason the file states for the sample of ordinal ord; -1 when it states none. */
int reader_stated_stop(const struct reader_features *ft, uint64_t ord);

#endif
