/* SPDX-License-Identifier: MIT */
/*
 * Live recording's parts (uw_record):
 *   live_events.c  which events, how their perf_event_attr is filled, opened per CPU or task
 *   live_ring.c    ring buffers: mapped, drained with the data_head/data_tail protocol
 *   live_synth.c   records for what existed before recording (processes, their mappings, the
 *                  kernel), and for mappings found on demand
 *   perf_live.c    the phases of a recording
 */
#ifndef UW_PERF_LIVE_H
#define UW_PERF_LIVE_H

#include <sys/types.h>

#include "perf/perf.h"

/* perf_event_attr, as the kernel reads it (size 128); defined here, the installed UAPI headers
 * may be older than the kernel */
struct kattr {
	uint32_t type, size;
	uint64_t config, sample_period_or_freq, sample_type, read_format, flags;
	uint32_t wakeup, bp_type;
	uint64_t config1, config2, branch_sample_type, sample_regs_user;
	uint32_t sample_stack_user;
	int32_t clockid;
	uint64_t sample_regs_intr;
	uint32_t aux_watermark;
	uint16_t sample_max_stack, reserved2;
	uint32_t aux_sample_size, reserved3;
	uint64_t sig_data, config3;
};
_Static_assert(sizeof(struct kattr) == 136, "perf_event_attr VER8");

enum {
	A_DISABLED = 0, A_INHERIT = 1, A_MMAP = 8, A_COMM = 9, A_FREQ = 10, A_ENABLE_ON_EXEC = 12, A_TASK = 13,
	A_WATERMARK = 14, A_SAMPLE_ID_ALL = 18, A_EXCL_CALLCHAIN_USER = 22, A_MMAP2 = 23, A_COMM_EXEC = 24,
	A_USE_CLOCKID = 25, A_BUILD_ID = 34, A_DEFER_CALLCHAIN = 38, A_DEFER_OUTPUT = 39,
};
#define BIT(n) (1ull << (n))

/* the first page of a ring buffer (struct perf_event_mmap_page): data_head at 1024, data_tail
 * at 1032, data_offset 1040, data_size 1048 */
#define MP_DATA_HEAD 1024
#define MP_DATA_TAIL 1032

#define PERF_EVENT_IOC_ENABLE 0x2400
#define PERF_EVENT_IOC_DISABLE 0x2401
#define PERF_EVENT_IOC_ID 0x80082407
#define PERF_EVENT_IOC_SET_OUTPUT 0x2405

/* sampling events per recording (perf record -e A -e B) */
#define LIVE_MAX_EVENTS 8

struct ring {
	int fd;              /* -1 once closed */
	uint8_t *base;       /* control page, then data; NULL once closed */
	size_t data_size;
	uint64_t id;
	pid_t pid;           /* what it was opened for: a task (-1: all), a CPU (-1: any) */
	int cpu;
	/* a task's events write into the buffer of the first task's on the same CPU (out: that
	 * entry's index; -1: this entry's own buffer, base), as perf record's do: one buffer per
	 * CPU, not one per task and CPU (-p of 200 threads: 2 × 200 buffers of -m pages each, and
	 * every one polled and read). users: the entries with an event open writing into this
	 * entry's buffer (itself included); it is unmapped when none is left. */
	ssize_t out;
	unsigned users;
	/* the recording's other sampling events for the same task and CPU, writing into this
	 * ring (PERF_EVENT_IOC_SET_OUTPUT): event k + 1's fd and id (xfd -1 once closed) */
	unsigned nx;
	int xfd[LIVE_MAX_EVENTS - 1];
	uint64_t xid[LIVE_MAX_EVENTS - 1];
};

struct live_kunw;

struct live {
	struct cc_sink *sink;
	uint64_t id0;        /* the first ring's event id, for synthesized records' sample_id */
	struct uw_session *s;
	struct uw_tracker *t; /* live: mappings the events missed are asked of the kernel */
	struct uw_reader *r;
	struct ring *rings;
	size_t nrings;
	uint8_t *tmp;        /* a record that wraps around the ring's end */
	uint64_t lost, throttled;
	struct live_kunw *kunw; /* kernel unwinding (live_kunw.c), or NULL: stack copies */
	int *sw_fds;         /* --off-cpu: the switch events, writing into the rings */
	uint64_t *sw_ids;
	size_t nsw;
	uint64_t sw_copied;  /* switch-out samples read from the rings: the kernel copied their stack */
	uint64_t sw_blocked; /* threads found blocked at the start, their stacks read */
	/* --off-cpu: the reader's off-CPU attribute (oc_attr: after the sampling events') is
	 * there, one of its ids, its sample_type (the trailer of records made for it) */
	bool oc_on;
	unsigned oc_attr;
	uint64_t oc_id;
	uint64_t oc_sample_type;
	/* waits timed in the kernel (live_offcpu.c): the events are per CPU; with oc_filter (a
	 * command, -p, -t) the side-band of processes not followed is dropped as read */
	bool kwait;
	bool oc_filter;
	struct base_map oc_procs; /* pid -> OC_PROC_* */
	uint64_t oc_dropped;      /* side-band records dropped */
	unsigned failed_ev;       /* the event live_open_events could not open */
};

/* --off-cpu: the off-CPU attribute's id when waits are timed in the kernel (no event has it:
 * the records that name it are the recorder's) */
#define LIVE_WAIT_ID UINT64_C(0xfffffffffff0c001)


struct evspec {
	uint32_t type;
	uint64_t config;
	const char *name;
	/* perf's modifiers (-e cycles:u, cpu-clock:kpp): any of u, k, h given excludes the
	 * others; p counts precise_ip, P is its maximum */
	bool mods, excl_user, excl_kernel, excl_hv;
	uint8_t precise;
	char full[64];          /* the name as written in the file: as given, modifiers included */
};

struct evconf {
	struct evspec ev[LIVE_MAX_EVENTS]; /* the sampling events (the reader's attributes 0..nev-1) */
	unsigned nev;
	const struct uw_record_opts *o;
	bool user_only;         /* the kernel may not be sampled (perf_event_paranoid 2) */
	bool percpu;            /* a command's events opened per CPU (waits timed in the kernel):
	                         * enabled by the recorder, not at its exec */
};


/* ---- events (live_events.c) */
int live_ncpus(void);
/* perf_event_open refused: the reason, and what would allow it. */
int live_permission_error(struct uw_session *s, int err);
/* Does this kernel write deferred user callchains (attr.defer_callchain)? 0, or -EOPNOTSUPP
 * said in the session's message. */
int live_probe_defer(struct uw_session *s);
bool live_parse_event(const char *name, struct evspec *e);
/* Event k's attribute (sideband: it carries the side-band records). */
void live_attr_init(struct kattr *a, const struct evconf *ec, unsigned k, bool sideband, bool task);
/* Is CPU c one the recording uses (-C)? */
bool live_cpu_wanted(const struct uw_record_opts *o, int c);
/* The threads of a process, from /proc/PID/task. */
int live_task_ids(int pid, int **out, size_t *n);
/* Events for a task on every CPU: the first of each task carries the side-band. */
int live_open_task(struct live *lv, const struct evconf *ec, pid_t tid, int ncpu, size_t pages);

/* ---- rings (live_ring.c) */
int live_open_ring(struct live *lv, struct kattr *a, pid_t pid, int cpu, size_t pages);
/* The recording's events for a task (-1: all) on a CPU (-1: any): the first with a ring and the
 * side-band, the others writing into its ring. */
int live_open_events(struct live *lv, const struct evconf *ec, pid_t pid, int cpu, size_t pages, bool task);
/* PERF_EVENT_IOC_ENABLE or _DISABLE on every event of every ring (the switch events too). */
void live_enable_events(struct live *lv, unsigned long req);
/* Is id one of the ring's sampling events'? */
bool live_ring_has_id(const struct ring *rg, uint64_t id);
/* perf_event_open (close-on-exec, no group): the fd, or -errno. */
int live_event_open(struct kattr *a, pid_t pid, int cpu);
/* One entry's events closed (an exited task's: it reports POLLHUP for ever), and the buffer it
 * wrote into unmapped once no other entry's event writes there; the entry stays, with fd -1
 * (base NULL once unmapped), so indices and ids keep their places. */
void live_close_ring(struct live *lv, size_t i);
void live_close_rings(struct live *lv);
/* Every ring's records into the reader, then the end of a round. */
int live_drain_all(struct live *lv);

/* ---- kernel unwinding (live_kunw.c): uw_record's, and a reader's embedder's (uw_kernel_unwind,
 * live_kunw_api.c). Every call takes NULL (kernel unwinding not in use) and then does nothing. */
struct live_kunw_conf {
	struct uw_session *s;
	unsigned max_frames;    /* user frames per walk (0: the program's default) */
	unsigned copy_bytes;    /* stack bytes handed over (0: the program's default) */
	unsigned ring_bytes;    /* the program's ring buffer (0: its default) */
	uint64_t max_bytes;     /* cap on bytes in BPF maps (0: 64 MiB) */
	bool switches;          /* --off-cpu: the walk at each switch-out too */
	/* --off-cpu, waits timed in the kernel (lib/kernel/kunw_wait.bpf.h, live_offcpu.c): the
	 * sampling events are then per CPU, attached for the followed tasks only; wait_all: every
	 * task followed (-a), but wait_self (the recorder's pid); waits shorter than wait_min_ns
	 * summed per key, wait_walks the stacks walked at switch-outs (kunw_opts) */
	bool wait, wait_all;
	uint32_t wait_self;
	uint64_t wait_min_ns;
	unsigned wait_walks;
	/* ... the program's records of waits that are no samples (KUNW_KIND_WAIT_IN,
	 * KUNW_KIND_WAIT_SUM; rec: a struct kunw_sample) go to wait_fn */
	int (*wait_fn)(void *ctx, const void *rec);
	void *wait_ctx;
	bool verify;            /* (tests) every record also carries frame 0's registers and stack,
	                         * for the reader to compare the program's frames with lib/unwind's */
	bool one_event;         /* one sampling attribute: the records need not say their event */
};
/* Loads the program (the verifier runs): 0 and *out, or a negative error and why (one line). */
int live_kunw_open(const struct live_kunw_conf *c, struct live_kunw **out, char *why, size_t len);
/* The same, the verifier run on a thread of its own (a recording begins meanwhile, copying
 * stacks): what fails at once (no libbpf, BPF or privilege) fails here, with why; else 0 and
 * *out, whose fd (live_kunw_loading_fd) is readable once the load is through. */
struct live_kunw_loading;
int live_kunw_load(const struct live_kunw_conf *c, struct live_kunw_loading **out, char *why, size_t len);
int live_kunw_loading_fd(const struct live_kunw_loading *ld);
/* -EINPROGRESS (still verifying), else ld freed and 0 with *out (ns: how long the load took), or
 * a negative error and why. */
int live_kunw_loading_take(struct live_kunw_loading *ld, struct live_kunw **out, uint64_t *ns, char *why, size_t len);
/* Not wanted any more: freed now, or by its thread once the verifier returns. */
void live_kunw_loading_cancel(struct live_kunw_loading *ld);
/* Started (live_kunw_start) while the recording runs: the processes the reader's tracker knows
 * already are loaded at the next update, as their records went by before. */
void live_kunw_late_start(struct live_kunw *lk);
/* Attaches it to a sampling event's fd, or (sw) to a switch event of --off-cpu. */
int live_kunw_attach(struct live_kunw *lk, int fd, bool sw);
/* The reader the program's records go into (its tracker's mappings are loaded): its side-band
 * records and samples are followed from now on (its record function, a writer's, still gets
 * every record). Once only. */
void live_kunw_start(struct live_kunw *lk, struct uw_reader *r);
/* The event id the program's records carry (a switch-out's: sw_id, a sample of attribute
 * sw_attr; sw_id 0: none). */
void live_kunw_ids(struct live_kunw *lk, uint64_t id, uint64_t sw_id, unsigned sw_attr);
/* Processes that exist before the recording: their records pushed so far delivered, their
 * tables and mappings loaded before the events are enabled (waiting timeout_ns at most for the
 * tables to be built). */
int live_kunw_prime(struct live_kunw *lk, uint64_t timeout_ns);
/* An fd for poll: the program's ring has records, or a table was built (-1: none). */
int live_kunw_fd(const struct live_kunw *lk);
/* Do the program's records say their event (of several attributes)? (kunw_event_ids) */
bool live_kunw_event_ids(const struct live_kunw *lk);
/* lib/kernel's handle of the loaded program (NULL: none), for live_offcpu.c. */
struct kunw *live_kunw_handle(struct live_kunw *lk);
/* A record as it is read from a ring, before the reader orders it: a process's mapping changes
 * (MMAP, MMAP2, COMM with exec, FORK, EXIT) loaded at the next update, not once delivered. */
void live_kunw_read(struct live_kunw *lk, const uint8_t *rec, uint32_t len);
/* The program's records into the reader (before the rings' side-band of the same round). */
int live_kunw_drain(struct live_kunw *lk);
/* The maps brought up to date with what the records delivered asked for (after a round). */
int live_kunw_update(struct live_kunw *lk);
void live_kunw_status(struct live_kunw *lk, struct uw_record_status *st);
/* Counts so far (st: this library's size). */
void live_kunw_stats(struct live_kunw *lk, struct uw_kernel_unwind_stats *st);
/* Unloads the program, stops its threads, leaves the reader as before live_kunw_start, frees. */
void live_kunw_close(struct live_kunw *lk);

/* ---- the followed processes' side-band (live_sideband.c) */
/* A side-band record read from a per-CPU ring: is it of a process followed (oc_filter)? */
bool live_sideband_wanted(struct live *lv, const uint8_t *rec, uint32_t len);
/* Process pid is followed: its side-band records are kept. */
void live_sideband_follow(struct live *lv, uint32_t pid);

/* ---- synthesized records (live_synth.c) */
/* The kernel's text as perf record describes it, with the running kernel's build-id. */
int live_push_kernel_map(struct live *lv);
/* Processes that exist (pids, or all for -a): their threads' names and executable mappings. */
int live_synthesize_all(struct live *lv, const int *pids, size_t npids, bool all);
int live_push_comm(struct live *lv, int32_t pid, int32_t tid, const char *comm);
int live_push_lost_samples(struct live *lv, uint64_t lost, uint64_t time);
/* A mapping the tracker found on demand, written to the output (tracker_map_fn). */
void live_on_new_map(void *ctx, int32_t pid, uint64_t start, uint64_t len, uint64_t pgoff, uint32_t maj, uint32_t min,
                     uint64_t ino, const char *path, const uint8_t *bid, size_t blen, uint64_t time);

/* ---- off-CPU (live_offcpu.c) */
/* The switch event's attribute: context-switches, one sample per switch-out (or per
 * off_cpu_every), with the stack as the CPU samples', and switch records. */
void live_offcpu_attr(struct kattr *a, const struct evconf *ec, bool task);
/* A switch event beside every ring's event (same task and CPU), writing into that ring. */
int live_open_offcpu(struct live *lv, const struct evconf *ec, bool task);
void live_enable_offcpu(struct live *lv, unsigned long req);
void live_close_offcpu(struct live *lv);
/* Threads of -p/-t found blocked now: a switch-out sample each at time (their stack read with
 * process_vm_readv from the sp of /proc/TID/syscall), so a wait that spans the whole recording
 * counts. */
int live_offcpu_blocked(struct live *lv, const struct uw_record_opts *o, uint64_t time);
uint64_t live_now_ns(void);
int32_t live_tgid_of(int32_t tid);

/* ---- off-CPU, waits timed in the kernel (live_offcpu.c, lib/kernel/kunw_wait.bpf.h) */
/* The followed targets into the program's maps, then its sched_switch, fork and exit programs
 * attached (timing nothing until live_offcpu_kwait_on). child: the command's pid (0: none). */
int live_offcpu_kwait_start(struct live *lv, const struct uw_record_opts *o, int32_t child);
void live_offcpu_kwait_on(struct live *lv, bool on);
/* Followed targets alive (-p, -t: the recording ends at 0). */
int64_t live_offcpu_kwait_live(struct live *lv);
/* The end at time end: the waits off, what they hold written into the program's ring. */
int live_offcpu_kwait_end(struct live *lv, uint64_t end);
/* A record of the program that is no sample (KUNW_KIND_WAIT_IN, KUNW_KIND_WAIT_SUM) made into the
 * reader's record: a switch-in (PR_SWITCH) or a total (PR_UW_OFFCPU) of the off-CPU attribute.
 * rec: a struct kunw_sample, decoded. */
int live_offcpu_kwait_record(struct live *lv, const void *rec);
void live_offcpu_kwait_status(struct live *lv, struct uw_record_status *st);

#endif
