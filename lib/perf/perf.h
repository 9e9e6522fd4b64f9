/* SPDX-License-Identifier: MIT */
#ifndef UW_PERF_H
#define UW_PERF_H

#include "base/base.h"
#include "perf/perf_format.h"
#include "process/tracker.h"

#define PERF_ATTR_MAX 256

/* One entry of a build-id table (HEADER_BUILD_ID, or a pipe's HEADER_BUILD_ID record): a
 * path, its build-id, and whether it is the kernel's or a module's. */
struct perf_bid_entry {
	const char *path;       /* NUL-terminated inside the table */
	const uint8_t *id;
	size_t len;             /* old files pad short build-ids with zeros: trimmed */
	bool kernel;
};
/* The entry at *off of the table p[0..size) (advancing *off past it). @return false at its end
 * (or at a malformed entry: what follows is not read). Entries without a path are skipped. */
bool perf_bid_next(const uint8_t *p, size_t size, size_t *off, struct perf_bid_entry *e);

/* The parts of perf_event_attr we use, decoded from whatever size the file has. */
struct perf_attr {
	uint8_t raw[PERF_ATTR_MAX]; /* the attribute as read (for writers), raw_size bytes */
	uint32_t raw_size;
	uint64_t *ids;              /* its event ids (reader-owned) */
	size_t nids;
	uint32_t type, size;
	uint64_t config, sample_type, read_format, flags;
	uint64_t branch_sample_type, sample_regs_user, sample_regs_intr;
	uint32_t sample_stack_user;
	int32_t clockid;          /* valid with PA_USE_CLOCKID */
	const char *name;
	unsigned nregs_user, nregs_intr;
	unsigned id_trailer_size; /* bytes of sample_id at the end of other records */
};

/* A record handed on: header and body, len bytes (valid during the call). */
typedef int (*perf_record_fn)(void *ctx, const uint8_t *rec, uint32_t len);

/* ---- compressed records (perf_decomp.c) */
struct perf_decomp;
int perf_decomp_new(struct perf_decomp **out);
void perf_decomp_free(struct perf_decomp *d);
/* Decompresses one piece of the recording's zstd stream (a COMPRESSED record's payload) and
 * calls fn for every record that is whole by its end, in order; a record split across pieces
 * waits for the next. Fails past max_out bytes decompressed in all. @return 0, fn's error,
 * -UW_EFORMAT (*what says why), -UW_ELIMIT or -ENOMEM. */
int perf_decomp_feed(struct perf_decomp *d, const uint8_t *p, size_t n, uint64_t max_out, perf_record_fn fn,
                     void *ctx, const char **what);
uint64_t perf_decomp_bytes_out(const struct perf_decomp *d);
size_t perf_decomp_pending(const struct perf_decomp *d);

/* The name of a record type ("SAMPLE", "MMAP2", ...; "unknown" past those perf knows). */
const char *perf_record_type_name(uint32_t type);

/* Decodes a raw perf_event_attr of `size` bytes (>= PERF_ATTR_SIZE_VER0). */
int perf_attr_decode(const uint8_t *p, size_t size, struct perf_attr *a);
/* A name for an attribute without an event description ("cpu-clock", "cycles", ...). */
const char *perf_attr_default_name(const struct perf_attr *a);

struct perf_sample {
	uint64_t id, ip, time, addr, period, cpu, stream_id;
	uint32_t pid, tid;
	uint64_t nr_callchain;
	const uint8_t *callchain;  /* nr_callchain u64s, unaligned */
	uint64_t regs_abi;
	const uint8_t *regs;       /* nregs u64s */
	unsigned nregs;
	uint64_t stack_size, stack_dyn;
	const uint8_t *stack;
};

/* Decodes a SAMPLE record body (after the 8-byte header). */
int perf_sample_decode(const struct perf_attr *a, const uint8_t *p, size_t n, struct perf_sample *s);

/* Offset in a SAMPLE body of the user stack's u64 size field, from the first n bytes of the body.
 * @return 0; -ENOENT when the event records no stack; -UW_ETRUNC when n bytes do not reach it
 * (or the fields before it are malformed). */
int perf_sample_stack_field(const struct perf_attr *a, const uint8_t *p, size_t n, size_t *off);

struct perf_sample_id {
	uint32_t pid, tid;
	uint64_t time, id, cpu;
	bool has_time;
};
/* Decodes the sample_id trailer of a non-sample record (body without header). */
int perf_sample_id_decode(const struct perf_attr *a, const uint8_t *p, size_t n, struct perf_sample_id *sid);

/* A side-band record's body (perf_record.c): MMAP, MMAP2, COMM, FORK, EXIT, LOST, LOST_SAMPLES. */
struct perf_sideband {
	int32_t pid, tid, ppid, ptid;
	uint64_t time;                 /* FORK, EXIT */
	uint64_t addr, len, pgoff;     /* MMAP, MMAP2 */
	uint32_t maj, min, prot, flags;
	uint64_t ino, ino_gen;
	const uint8_t *bid;            /* MMAP2 with a build-id */
	size_t blen;
	const char *str;               /* MMAP's path, COMM's name: str_len bytes, ... */
	size_t str_len;
	bool str_terminated;           /* ... NUL-terminated within the record */
	bool exec;                     /* COMM */
	uint64_t lost_id, lost;        /* LOST, LOST_SAMPLES */
};
/* Decodes the body of a side-band record of len bytes (rec: header and body) of attribute a
 * (its sample_id trailer left out; a NULL: none). bid_ok: an MMAP2 with
 * PERF_RECORD_MISC_MMAP_BUILD_ID carries a build-id (the event asked for them). @return 0;
 * -ENOENT for other types; -UW_ETRUNC, *what saying which, when the body is short. */
int perf_sideband_decode(const struct perf_attr *a, const uint8_t *rec, uint32_t len, bool bid_ok,
                         struct perf_sideband *out, const char **what);

/* ---- perf.data writer (perf_writer.c) */
struct perf_writer;
struct perf_writer_buildid {
	const char *path;
	uint8_t id[20];
	size_t len;
	bool kernel;
};
/* Creates path (mode 0600; an existing file is kept as path.old; a symbolic link is not
 * followed), or writes a pipe-mode stream to standard output for "-". The file is written
 * without a name and put at its path by perf_writer_finish, or earlier by perf_writer_publish;
 * one closed before either is gone. */
int perf_writer_open(const char *path, struct perf_writer **out);
/* The file at its path now, as far as written (a recording readable if its writer dies; call
 * perf_writer_sync first). No-op for a pipe. @return 0 or the writer's error. */
int perf_writer_publish(struct perf_writer *w);
bool perf_writer_is_pipe(const struct perf_writer *w);
/* Attributes come before any record. raw: a perf_event_attr of size bytes. */
int perf_writer_add_attr(struct perf_writer *w, const uint8_t *raw, uint32_t size, const char *name,
                         const uint64_t *ids, size_t nids);
/* A feature section's body, built by the caller with perf_feat_* (replacing any before). In pipe
 * mode features must be set before the first record. NULL for the features the writer makes
 * (EVENT_DESC, BUILD_ID, FEAT_UW_STOPS) or when it is too late. */
struct perf_feat;
struct perf_feat *perf_writer_feature(struct perf_writer *w, unsigned bit);
void perf_feat_u32(struct perf_feat *f, uint32_t v);
void perf_feat_u64(struct perf_feat *f, uint64_t v);
void perf_feat_str(struct perf_feat *f, const char *s); /* perf's string: u32 padded length, bytes */
void perf_feat_bytes(struct perf_feat *f, const void *p, size_t n);
/* A feature's bytes as they are (a copy). @return 0, -EINVAL (see perf_writer_feature), -ENOMEM. */
int perf_writer_set_feature(struct perf_writer *w, unsigned bit, const void *p, size_t n);
/* Writes the header and attributes (done by the first record if not before). */
int perf_writer_begin(struct perf_writer *w);
/* Appends a record (header included) to the data section. */
int perf_writer_record(struct perf_writer *w, const void *rec, size_t len);
/* Samples may come late (a reader holding them): oldest gives the time of the oldest one
 * still to come (UINT64_MAX: none) and *newest the newest time of anything written so far; a
 * round marker is written only when perf, reading it, would not already have delivered past
 * the oldest (perf delivers, at a marker, what is no newer than the newest event before the
 * previous marker). */
void perf_writer_round_gate(struct perf_writer *w, uint64_t (*oldest)(void *ctx, uint64_t *newest), void *ctx);
/* Notes a SAMPLE just written: its time (SAMPLE_TIME) and its stop reason (FEAT_UW_STOPS). */
void perf_writer_sample(struct perf_writer *w, bool has_time, uint64_t time, uint8_t reason);
/* A build-id for the table (once per path). */
int perf_writer_add_buildid(struct perf_writer *w, const char *path, const uint8_t *id, size_t len, bool kernel);
/* File mode: writes what is buffered and brings the header's data size up to date, so the file
 * reads to here if the writer dies. */
int perf_writer_sync(struct perf_writer *w);
/* Writes the feature sections and the final header (file mode), the build-ids (pipe mode). */
int perf_writer_finish(struct perf_writer *w);
void perf_writer_close(struct perf_writer *w);

/* Feature sections describing this machine, as perf record writes them (perf_hostinfo.c):
 * HOSTNAME, OSRELEASE, VERSION, ARCH, NRCPUS, CPUDESC, CPUID, TOTAL_MEM, CMDLINE, CPU_TOPOLOGY,
 * NUMA_TOPOLOGY, PMU_MAPPINGS, CACHE, MEM_TOPOLOGY, BPF_PROG_INFO, BPF_BTF, PMU_CAPS, and with a
 * clock (clockid >= 0) CLOCKID and CLOCK_DATA. What cannot be read is left out. */
void perf_host_features(struct perf_writer *w, int argc, const char *const *argv, int clockid);

/* ---- callchain sink (perf_inject.c): unwound samples written with callchains */
struct cc_sink;
int cc_sink_new(struct uw_session *s, const char *out_path, struct cc_sink **out);
/* Takes the reader's attributes, feature sections and non-sample records; its on_sample must be
 * cc_sink_on_sample with the sink as ctx. */
void cc_sink_attach(struct cc_sink *k, struct uw_reader *r);
int cc_sink_on_sample(void *ctx, const struct uw_sample *smp);
/* A record of the recorder's own (a mapping found on demand), written as it is. */
int cc_sink_record(struct cc_sink *k, const uint8_t *rec, uint32_t len);
/* The writer, for features of the caller's (before the first record in pipe mode). */
struct perf_writer *cc_sink_writer(struct cc_sink *k);
/* File mode: data size brought up to date (see perf_writer_sync). */
int cc_sink_sync(struct cc_sink *k);
/* The header and attributes written and the file put at its path (see perf_writer_publish):
 * from here a recorder that dies leaves a file that reads to its last sync. */
int cc_sink_publish(struct cc_sink *k);
/* The build-ids of the modules hit, then the features and the header; the file at its path. */
int cc_sink_finish(struct cc_sink *k);
/* The first error of writing (said in the session's message), or 0. */
int cc_sink_error(const struct cc_sink *k);
void cc_sink_free(struct cc_sink *k, struct uw_inject_stats *stats);

/* ---- off-CPU time (write/offcpu.c): switch-out stacks closed by the switch back in */
struct offcpu_stack {           /* a sample of offcpu-time, as the sink writes it */
	uint64_t id, ip, time, cpu, period;
	uint32_t pid, tid;
	uint16_t misc;
	uint8_t reason;         /* the user stack's stop reason */
	uint32_t nk, nu;
	const uint64_t *chain;  /* nk kernel addresses, then nu user pcs as written */
	uint64_t key;           /* (waits timed in the kernel) the wait's key: its user pc and stack
	                         * pointer, hashed; 0: none */
};
typedef int (*offcpu_emit_fn)(void *ctx, const struct offcpu_stack *s);
struct offcpu_opts {
	uint64_t min_ns;        /* shorter waits are aggregated per thread and stack (0: none) */
	unsigned every;         /* one switch in every N sampled: periods scaled by N (0: 1) */
	int32_t self_pid;       /* the recorder's own waits are left out (0: none) */
	bool keyed;             /* waits timed in the kernel: switch-outs carry their key */
};
/* Waits timed in the kernel and not walked: their total for one thread and key. */
struct offcpu_sum {
	uint64_t id, time, cpu; /* the sample's (time: when written in the kernel) */
	uint32_t pid, tid;
	uint64_t key, ip;       /* the key and the user pc it was made of */
	uint64_t ns, n;         /* their time and number */
};
struct offcpu_stats {
	uint64_t switches_out;  /* switch-out samples of threads followed */
	uint64_t waits;         /* waits closed (by a switch-in or the end) */
	uint64_t samples;       /* offcpu-time samples written */
	uint64_t aggregated;    /* waits added to a stack's total */
	uint64_t open_at_end;   /* threads still off the CPU at the end */
	uint64_t ns;            /* off-CPU time in all */
	uint64_t unattributed;  /* (every > 1) waits of threads with no stack taken yet */
	uint64_t keyed, keyed_ns;     /* (keyed) waits given the stack walked with their key */
	uint64_t unkeyed, unkeyed_ns; /* ... whose key no walk had: written with their pc alone */
};
struct offcpu;
struct offcpu *offcpu_new(const struct offcpu_opts *o, offcpu_emit_fn emit, void *ctx);
/* A switch-out sample (s->time: when); its chain is copied. @return 0, emit's error, -ENOMEM. */
int offcpu_switch_out(struct offcpu *oc, const struct offcpu_stack *s);
/* A switch-out record (every > 1): a wait opened with the thread's last stack, unless it is the
 * record of the switch just sampled. */
void offcpu_switch_out_record(struct offcpu *oc, uint32_t pid, uint32_t tid, uint64_t time);
/* A thread back on a CPU: its wait written (emit) or aggregated. */
int offcpu_switch_in(struct offcpu *oc, uint32_t pid, uint32_t tid, uint64_t time);
/* Unwalked waits' total (keyed): given to the stacks walked with their thread's key, split by
 * how many walks found each; held until one is walked, else written with their pc alone when
 * the thread exits or at the end. */
int offcpu_add(struct offcpu *oc, const struct offcpu_sum *s);
/* EXIT at time (exit true): the thread's pending wait and its switch-outs from then on are
 * dropped (a later-delivered sample of an earlier wait still closed by its switch-in); FORK
 * or COMM exec of that number (exit false): a thread again. */
void offcpu_task(struct offcpu *oc, uint32_t tid, bool exit, uint64_t time);
/* Threads still off the CPU closed at end, then every aggregate not yet written. */
int offcpu_finish(struct offcpu *oc, uint64_t end);
void offcpu_stats(const struct offcpu *oc, struct offcpu_stats *st);
void offcpu_free(struct offcpu *oc);
/* The sink writes the samples of attribute attr_index (context-switches with a stack) as
 * offcpu-time: each is held until its thread runs again; SWITCH records close them and are
 * not written; EXIT and FORK records are written and seen. @return 0 or -ENOMEM. */
int cc_sink_offcpu(struct cc_sink *k, const struct offcpu_opts *o, uint32_t attr_index);
/* The end of the recording at time end: waits still open and aggregates written; *st (may be
 * NULL) filled. */
int cc_sink_offcpu_finish(struct cc_sink *k, uint64_t end, struct offcpu_stats *st);

/* ---- reader internals shared with writers (perf_reader.c) */
void perf_reader_set_record_fn(struct uw_reader *r, perf_record_fn fn, void *ctx);
/* A feature section of the recording (HEADER_* bit) as read, or NULL; valid while the reader
 * lives. */
const uint8_t *perf_reader_feature(const struct uw_reader *r, unsigned bit, size_t *n);
/* The attributes read so far. */
const struct perf_attr *perf_reader_attrs(const struct uw_reader *r, size_t *n);
/* The raw record of the sample being delivered (valid in the sample callback). */
/* The time of the oldest sample the reader holds (stitching, deferred callchains) to deliver
 * later; UINT64_MAX when none. *newest: the newest time of a record delivered so far. */
uint64_t perf_reader_held_oldest(const struct uw_reader *r, uint64_t *newest);
const uint8_t *perf_reader_current_sample(const struct uw_reader *r, uint32_t *len);

#endif
