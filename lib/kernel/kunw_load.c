/* SPDX-License-Identifier: MIT */
/*
 * The program's user-space side (libbpf): loading it with the options baked into its read-only
 * data, attaching it to perf events, feeding its maps and reading its ring buffer.
 *
 * Each process's mappings and each module's table is a BPF array map of its own, inserted into
 * a map of maps (BPF_F_INNER_MAP lets each be sized to its content): an update builds the new
 * array whole and swaps it in with one map update, so a walk on another CPU sees the old array
 * or the new one, never half of each, and the kernel frees the old one after the walks that
 * hold it (RCU). Memory is counted per map from the kernel's own figure (fdinfo's memlock).
 *
 * Processes are keyed by pid (a hash of maps); tables by a slot (an array of maps, whose lookup
 * the program makes without hashing). The caller names modules by id; a table gets a free slot
 * when added and a tag, the slot's count of loads, and the value slot | tag << slot_bits is
 * what the mappings carry (kunw_proc_set writes it) and what the table's header repeats: a walk
 * with mappings older than a slot's reuse finds another tag there and hands the stack over. The
 * program's rule cache is keyed by that value, which is never the same for two loads (until a
 * slot's tag wraps: 2^(32 - slot_bits) loads of one slot).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <dlfcn.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "kernel/kunw.h"

/*
 * libbpf is loaded when kernel unwinding is first asked for (kunw_open), not with the library:
 * what never unwinds in the kernel (a report, an embedder's offline use) does not pay for
 * loading and relocating it at start (~300,000 cycles in the dynamic linker by LD_DEBUG=statistics,
 * ~0.1 ms of each `unwound report`), and the library runs where libbpf is not
 * installed: kernel unwinding then is not available, and says why. Every call below goes
 * through lb, filled from libbpf.so.1 (the soname of every libbpf 1.x, the ABI built against), or
 * from the file the environment's UNWOUND_LIBBPF names.
 */
#define LIBBPF_CALLS(X) \
	X(btf__find_by_name_kind) \
	X(btf__free) \
	X(btf__load_vmlinux_btf) \
	X(bpf_iter_create) \
	X(bpf_link__destroy) \
	X(bpf_link__fd) \
	X(bpf_map__fd) \
	X(bpf_map__set_max_entries) \
	X(bpf_map__value_size) \
	X(bpf_map_create) \
	X(bpf_map_delete_batch) \
	X(bpf_map_delete_elem) \
	X(bpf_map_freeze) \
	X(bpf_map_lookup_elem) \
	X(bpf_map_update_batch) \
	X(bpf_map_update_elem) \
	X(bpf_obj_get_info_by_fd) \
	X(bpf_object__attach_skeleton) \
	X(bpf_object__destroy_skeleton) \
	X(bpf_object__detach_skeleton) \
	X(bpf_object__load_skeleton) \
	X(bpf_object__open_skeleton) \
	X(bpf_program__attach) \
	X(bpf_program__attach_iter) \
	X(bpf_program__attach_perf_event) \
	X(bpf_program__fd) \
	X(bpf_program__set_autoload) \
	X(bpf_program__set_log_buf) \
	X(bpf_program__set_log_level) \
	X(libbpf_num_possible_cpus) \
	X(libbpf_set_print) \
	X(ring_buffer__consume) \
	X(ring_buffer__epoll_fd) \
	X(ring_buffer__free) \
	X(ring_buffer__new) \
	X(ring_buffer__poll)

static struct {
#define LB_MEMBER(f) __typeof__(f) *f;
	LIBBPF_CALLS(LB_MEMBER)
#undef LB_MEMBER
} lb;
static pthread_once_t lb_once = PTHREAD_ONCE_INIT;
static bool lb_ok;
static char lb_why[256];

static void lb_load(void)
{
	/* (UNWOUND_LIBBPF: another file, such as a libbpf built elsewhere; not for setuid programs) */
	const char *path = secure_getenv("UNWOUND_LIBBPF");
	if (!path || !*path)
		path = "libbpf.so.1";
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		snprintf(lb_why, sizeof(lb_why), "%s", e ? e : path);
		return;
	}
#define LB_SYM(f)                                                                              \
	if (!(lb.f = (__typeof__(f) *)dlsym(h, #f))) {                                          \
		snprintf(lb_why, sizeof(lb_why), "%s has no %s (libbpf 1.0 or later needed)", path, #f); \
		dlclose(h);                                                                      \
		return;                                                                          \
	}
	LIBBPF_CALLS(LB_SYM)
#undef LB_SYM
	lb_ok = true; /* (the handle stays open for the process's life) */
}

/* libbpf loaded, once per process. @return 0, or -ELIBACC with why in err. */
static int lb_need(char *err, size_t errlen)
{
	pthread_once(&lb_once, lb_load);
	if (lb_ok)
		return 0;
	if (err && errlen)
		snprintf(err, errlen, "%s", lb_why);
	return -ELIBACC;
}

#define btf__find_by_name_kind lb.btf__find_by_name_kind
#define btf__free lb.btf__free
#define btf__load_vmlinux_btf lb.btf__load_vmlinux_btf
#define bpf_iter_create lb.bpf_iter_create
#define bpf_link__destroy lb.bpf_link__destroy
#define bpf_link__fd lb.bpf_link__fd
#define bpf_map__fd lb.bpf_map__fd
#define bpf_map__set_max_entries lb.bpf_map__set_max_entries
#define bpf_map__value_size lb.bpf_map__value_size
#define bpf_map_create lb.bpf_map_create
#define bpf_map_delete_batch lb.bpf_map_delete_batch
#define bpf_map_delete_elem lb.bpf_map_delete_elem
#define bpf_map_freeze lb.bpf_map_freeze
#define bpf_map_lookup_elem lb.bpf_map_lookup_elem
#define bpf_map_update_batch lb.bpf_map_update_batch
#define bpf_map_update_elem lb.bpf_map_update_elem
#define bpf_obj_get_info_by_fd lb.bpf_obj_get_info_by_fd
#define bpf_object__attach_skeleton lb.bpf_object__attach_skeleton
#define bpf_object__destroy_skeleton lb.bpf_object__destroy_skeleton
#define bpf_object__detach_skeleton lb.bpf_object__detach_skeleton
#define bpf_object__load_skeleton lb.bpf_object__load_skeleton
#define bpf_object__open_skeleton lb.bpf_object__open_skeleton
#define bpf_program__attach lb.bpf_program__attach
#define bpf_program__attach_iter lb.bpf_program__attach_iter
#define bpf_program__attach_perf_event lb.bpf_program__attach_perf_event
#define bpf_program__fd lb.bpf_program__fd
#define bpf_program__set_autoload lb.bpf_program__set_autoload
#define bpf_program__set_log_buf lb.bpf_program__set_log_buf
#define bpf_program__set_log_level lb.bpf_program__set_log_level
#define libbpf_num_possible_cpus lb.libbpf_num_possible_cpus
#define libbpf_set_print lb.libbpf_set_print
#define ring_buffer__consume lb.ring_buffer__consume
#define ring_buffer__epoll_fd lb.ring_buffer__epoll_fd
#define ring_buffer__free lb.ring_buffer__free
#define ring_buffer__new lb.ring_buffer__new
#define ring_buffer__poll lb.ring_buffer__poll

#include "kunw.skel.h"

#define DEFAULT_MAX_FRAMES 1024u
#define DEFAULT_COPY 16384u
#define DEFAULT_MAX_BYTES (64ull << 20)
#define DEFAULT_MAX_ENTRIES 4096u
#define DEFAULT_RING (32u << 20)

/* A swap queued in a hash of maps: the inner map's fd, or -1 to delete the key. */
struct kop {
	uint32_t key;
	int fd;
	uint32_t gen;   /* (a process's) the generation of its mappings; for a delete, the newest
	                 * generation it ends (kunw_gens keeps a newer one) */
	bool young_del; /* (a process's) once swapped in, its kunw_young slot, if older, cleared */
};
struct kops {
	struct kop *v;
	size_t n, cap;
};

/* The committer: the queued swaps made on a thread of its own (kunw_commit). */
struct committer {
	pthread_t th;
	bool started, stop, busy;
	pthread_mutex_t mu;
	pthread_cond_t cv, idle;
	struct kops procs, modules; /* handed to the thread */
	uint64_t failed;
};

struct kunw {
	struct kunw_bpf *skel;
	bool deferred;
	struct kops qprocs, qmods;  /* queued since the last kunw_commit (deferred) */
	struct committer c;
	struct ring_buffer *rb;
	struct base_vec links;     /* struct bpf_link * */
	struct base_map procs;     /* pid -> bytes held in kunw_procs */
	struct base_map young;     /* pid -> 1: its mappings are in its kunw_young slot */
	pthread_mutex_t ymu;       /* kunw_young's writes (the loop's, and the committer's clearing
	                            * of a slot it made stale) */
	struct kunw_young *yslots; /* kunw_young mapped: KUNW_YOUNG_SLOTS */
	struct base_map modules;   /* id -> bytes held */
	struct base_map modval;    /* id -> its module value (kunw_map.module) */
	uint32_t *slot_tag;        /* per slot: its loads so far */
	uint32_t *free_slots, nfree;
	unsigned slot_bits;
	uint64_t bytes, max_bytes;
	unsigned max_procs, max_modules;
	uint32_t gen;
	int ncpus;
	bool switches;             /* kunw_switch loaded */
	bool timing;               /* stage timing on */
	char *timing_file;         /* (UW_KUNW_TIMING) where kunw_close writes the stages */
	const uint8_t *scratch;    /* kunw_scratch mapped (read only): each CPU's counters first */
	uint64_t *gens;            /* kunw_gens mapped: KUNW_GENS slots */
	size_t scratch_len, scratch_elem;
	bool wait;                 /* the wait programs loaded (kunw_opts.wait) */
	bool event_ids;            /* the records say their event (the kernel has
	                            * bpf_cast_to_kern_ctx: Linux 6.2) */
	kunw_sample_fn fn;
	void *fn_ctx;
	int fn_ret;
	uint64_t bad_records;
};

static int on_record(void *ctx, void *data, size_t size);
static void *committer_main(void *arg);
static void kops_clear(struct kops *q);

static int set_err(char *err, size_t len, int e, const char *what)
{
	if (err && len)
		snprintf(err, len, "%s: %s", what, strerror(-e));
	return e;
}

/* The end of the verifier's log for a program that did not load: loaded again, logging. */
static void verifier_tail(const struct kunw_opts *o, int ncpus, char *err, size_t len)
{
	struct kunw_bpf *skel = kunw_bpf__open();
	size_t size = 1u << 20;
	char *log = calloc(1, size);
	if (!skel || !log)
		goto out;
	bpf_map__set_max_entries(skel->maps.kunw_scratch, (uint32_t)ncpus);
	skel->rodata->kunw_max_frames = o->max_frames;
	bpf_program__set_autoload(skel->progs.kunw_switch, false); /* (the same body) */
	bpf_program__set_autoload(skel->progs.kunw_sample_followed, false);
	bpf_program__set_autoload(skel->progs.kunw_wait_switch, false);
	bpf_program__set_autoload(skel->progs.kunw_wait_fork, false);
	bpf_program__set_autoload(skel->progs.kunw_wait_exit, false);
	bpf_program__set_autoload(skel->progs.kunw_wait_exec, false);
	bpf_program__set_autoload(skel->progs.kunw_wait_end, false);
	/* (with the waits, the program most likely refused is theirs: the sched_switch one alone) */
	struct bpf_program *p = o->wait ? skel->progs.kunw_wait_switch : skel->progs.kunw_sample;
	if (o->wait)
		bpf_program__set_autoload(skel->progs.kunw_sample, false);
	bpf_program__set_autoload(p, true);
	bpf_program__set_log_buf(p, log, size);
	bpf_program__set_log_level(p, 1);
	if (kunw_bpf__load(skel) == 0)
		goto out;
	/* the last lines say why */
	size_t n = strlen(log), keep = len > 1 ? len - 1 : 0, at = n > keep ? n - keep : 0;
	while (n > keep && at < n && log[at] != '\n')
		at++;
	if (at < n && log[at] == '\n')
		at++;
	snprintf(err, len, "%s", log + at);
out:
	free(log);
	kunw_bpf__destroy(skel);
}

/* libbpf writes its messages to stderr unless told otherwise; the library never prints (its
 * errors are values: err says why). The printer is libbpf's only, process-wide setting: ours is
 * in place only while we call libbpf to load or attach, the caller's put back after. */
static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

static int kunw_open_quiet(const struct kunw_opts *opts, struct kunw **out, char *err, size_t errlen);

int kunw_open(const struct kunw_opts *opts, struct kunw **out, char *err, size_t errlen)
{
	int le = lb_need(err, errlen);
	if (le)
		return le;
	libbpf_print_fn_t old = libbpf_set_print(libbpf_quiet);
	int e = kunw_open_quiet(opts, out, err, errlen);
	libbpf_set_print(old);
	return e;
}

int kunw_probe(char *err, size_t errlen)
{
	int e = lb_need(err, errlen);
	if (e)
		return e;
	/* (the map a program's load makes first: the same capability check) */
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, NULL, 4, 4, 1, NULL);
	if (fd < 0)
		return set_err(err, errlen, -errno, "creating a BPF map");
	close(fd);
	return 0;
}

static int kunw_open_quiet(const struct kunw_opts *opts, struct kunw **out, char *err, size_t errlen)
{
	struct kunw_opts o = opts ? *opts : (struct kunw_opts){ 0 };
	*out = NULL;
	if (err && errlen)
		err[0] = 0;
	o.max_frames = o.max_frames ? o.max_frames : DEFAULT_MAX_FRAMES;
	o.copy_bytes = o.copy_bytes ? o.copy_bytes : DEFAULT_COPY;
	o.max_bytes = o.max_bytes ? o.max_bytes : DEFAULT_MAX_BYTES;
	o.max_procs = o.max_procs ? o.max_procs : DEFAULT_MAX_ENTRIES;
	o.max_modules = o.max_modules ? o.max_modules : DEFAULT_MAX_ENTRIES;
	o.ring_bytes = o.ring_bytes ? o.ring_bytes : DEFAULT_RING;
	if (o.max_frames > KUNW_MAX_FRAMES || o.copy_bytes > KUNW_COPY_MAX || o.ring_bytes < 4096 ||
	    (o.ring_bytes & (o.ring_bytes - 1)))
		return set_err(err, errlen, -EINVAL, "kernel unwinding options");
	int ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0)
		return set_err(err, errlen, ncpus ? ncpus : -EINVAL, "possible CPUs");
	struct kunw *k = calloc(1, sizeof(*k));
	if (!k)
		return set_err(err, errlen, -ENOMEM, "kernel unwinding");
	k->links = BASE_VEC_INIT(struct bpf_link *);
	base_map_init(&k->procs);
	base_map_init(&k->young);
	pthread_mutex_init(&k->ymu, NULL);
	base_map_init(&k->modules);
	base_map_init(&k->modval);
	pthread_mutex_init(&k->c.mu, NULL);
	pthread_cond_init(&k->c.cv, NULL);
	pthread_cond_init(&k->c.idle, NULL);
	k->max_bytes = o.max_bytes;
	k->max_procs = o.max_procs;
	k->max_modules = o.max_modules;
	k->ncpus = ncpus;
	int e = 0;
	while ((1u << k->slot_bits) < o.max_modules)
		k->slot_bits++;
	k->slot_tag = calloc(o.max_modules, sizeof(*k->slot_tag));
	k->free_slots = malloc(o.max_modules * sizeof(*k->free_slots));
	if (!k->slot_tag || !k->free_slots || k->slot_bits > 20) {
		e = set_err(err, errlen, k->slot_bits > 20 ? -EINVAL : -ENOMEM, "kernel unwinding");
		goto fail;
	}
	for (unsigned i = 0; i < o.max_modules; i++)
		k->free_slots[k->nfree++] = o.max_modules - 1 - i;
	/* (without the kfunc the program's weak reference is 0: the records' event_id too) */
	struct btf *vb = btf__load_vmlinux_btf();
	if (vb) {
		k->event_ids = btf__find_by_name_kind(vb, "bpf_cast_to_kern_ctx", BTF_KIND_FUNC) > 0;
		btf__free(vb);
	}
	k->skel = kunw_bpf__open();
	if (!k->skel) {
		e = set_err(err, errlen, -errno, "opening the BPF object");
		goto fail;
	}
	struct kunw_bpf *s = k->skel;
	s->rodata->kunw_max_frames = o.max_frames;
	s->rodata->kunw_copy_bytes = o.copy_bytes;
	s->rodata->kunw_verify = o.verify;
	const char *tf = getenv("UW_KUNW_TIMING");
	if (tf && *tf && !(k->timing_file = strdup(tf))) {
		e = set_err(err, errlen, -ENOMEM, "kernel unwinding");
		goto fail;
	}
	k->timing = o.timing || k->timing_file;
	s->rodata->kunw_timing = k->timing;
	s->rodata->kunw_slot_mask = (1u << k->slot_bits) - 1;
	s->rodata->kunw_event_ids = !o.one_event;
	bpf_program__set_autoload(s->progs.kunw_switch, o.switches);
	k->switches = o.switches;
	/* waits timed in the kernel: the CPU samples' program is the followed tasks' one */
	bpf_program__set_autoload(s->progs.kunw_sample, !o.wait);
	bpf_program__set_autoload(s->progs.kunw_sample_followed, o.wait);
	bpf_program__set_autoload(s->progs.kunw_wait_switch, o.wait);
	bpf_program__set_autoload(s->progs.kunw_wait_fork, o.wait);
	bpf_program__set_autoload(s->progs.kunw_wait_exit, o.wait);
	bpf_program__set_autoload(s->progs.kunw_wait_exec, o.wait);
	bpf_program__set_autoload(s->progs.kunw_wait_end, o.wait);
	k->wait = o.wait;
	if (o.wait) {
		s->rodata->kunw_wait_all = o.wait_all;
		s->rodata->kunw_wait_self = o.wait_self;
		s->rodata->kunw_wait_min_ns = o.wait_min_ns ? o.wait_min_ns : 500000;
		s->rodata->kunw_wait_walk_ns = 1000000000ull / (o.wait_walks ? o.wait_walks : 500);
	}
	s->rodata->kunw_wakeup_bytes = o.ring_bytes / 8 / (unsigned)ncpus;
	if ((e = bpf_map__set_max_entries(s->maps.kunw_scratch, (uint32_t)ncpus)) ||
	    (e = bpf_map__set_max_entries(s->maps.kunw_ring, o.ring_bytes)) ||
	    (e = bpf_map__set_max_entries(s->maps.kunw_procs, o.max_procs)) ||
	    (e = bpf_map__set_max_entries(s->maps.kunw_modules, o.max_modules))) {
		set_err(err, errlen, e, "sizing the BPF maps");
		goto fail;
	}
	e = kunw_bpf__load(s);
	if (e) {
		e = e < 0 ? e : -EINVAL;
		set_err(err, errlen, e, "loading the BPF program");
		if (e != -EPERM && err && errlen)
			verifier_tail(&o, ncpus, err, errlen);
		goto fail;
	}
	/* (an array map's values, mapped, lie value size rounded to 8 apart) */
	k->scratch_elem = ((size_t)bpf_map__value_size(s->maps.kunw_scratch) + 7) & ~(size_t)7;
	k->scratch_len = k->scratch_elem * (size_t)ncpus;
	void *sm = mmap(NULL, k->scratch_len, PROT_READ, MAP_SHARED, bpf_map__fd(s->maps.kunw_scratch), 0);
	if (sm == MAP_FAILED) {
		e = set_err(err, errlen, -errno, "mapping the scratch map");
		goto fail;
	}
	k->scratch = sm;
	void *gm = mmap(NULL, KUNW_GENS * sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED,
			bpf_map__fd(s->maps.kunw_gens), 0);
	if (gm == MAP_FAILED) {
		e = set_err(err, errlen, -errno, "mapping the generations map");
		goto fail;
	}
	k->gens = gm;
	size_t ysize = (size_t)KUNW_YOUNG_SLOTS * sizeof(struct kunw_young);
	void *ym = mmap(NULL, ysize, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(s->maps.kunw_young), 0);
	if (ym == MAP_FAILED) {
		e = set_err(err, errlen, -errno, "mapping the young processes' map");
		goto fail;
	}
	k->yslots = ym;
	k->rb = ring_buffer__new(bpf_map__fd(s->maps.kunw_ring), on_record, k, NULL);
	if (!k->rb) {
		e = set_err(err, errlen, -errno, "the ring buffer");
		goto fail;
	}
	if (o.deferred) {
		if ((e = -pthread_create(&k->c.th, NULL, committer_main, k))) {
			set_err(err, errlen, e, "the committer thread");
			goto fail;
		}
		k->c.started = k->deferred = true;
	}
	*out = k;
	return 0;
fail:
	kunw_close(k);
	return e ? e : -EINVAL;
}

void kunw_close(struct kunw *k)
{
	if (!k)
		return;
	struct kunw_timing t;
	if (k->timing_file && !kunw_timing_read(k, &t)) {
		FILE *f = fopen(k->timing_file, "ae");
		if (f) {
			kunw_timing_print(&t, f);
			fclose(f);
		}
	}
	free(k->timing_file);
	if (k->scratch)
		munmap((void *)k->scratch, k->scratch_len);
	if (k->c.started) {
		pthread_mutex_lock(&k->c.mu);
		k->c.stop = true;
		pthread_cond_signal(&k->c.cv);
		pthread_mutex_unlock(&k->c.mu);
		pthread_join(k->c.th, NULL);
	}
	kops_clear(&k->qprocs);
	kops_clear(&k->qmods);
	kops_clear(&k->c.procs);
	kops_clear(&k->c.modules);
	free(k->qprocs.v);
	free(k->qmods.v);
	free(k->c.procs.v);
	free(k->c.modules.v);
	pthread_mutex_destroy(&k->c.mu);
	pthread_cond_destroy(&k->c.cv);
	pthread_cond_destroy(&k->c.idle);
	/* (after the committer: it writes there) */
	if (k->gens)
		munmap(k->gens, KUNW_GENS * sizeof(uint64_t));
	if (k->yslots)
		munmap(k->yslots, (size_t)KUNW_YOUNG_SLOTS * sizeof(struct kunw_young));
	for (size_t i = 0; i < k->links.len; i++)
		bpf_link__destroy(*(struct bpf_link **)base_vec_at(&k->links, i));
	base_vec_free(&k->links);
	ring_buffer__free(k->rb);
	kunw_bpf__destroy(k->skel);
	base_map_free(&k->procs);
	base_map_free(&k->young);
	pthread_mutex_destroy(&k->ymu);
	base_map_free(&k->modules);
	base_map_free(&k->modval);
	free(k->slot_tag);
	free(k->free_slots);
	free(k);
}

static int attach(struct kunw *k, struct bpf_program *prog, int perf_fd);

bool kunw_event_ids(const struct kunw *k)
{
	return k->event_ids;
}

int kunw_attach(struct kunw *k, int perf_fd)
{
	return attach(k, k->skel->progs.kunw_sample, perf_fd);
}

int kunw_attach_switch(struct kunw *k, int perf_fd)
{
	if (!k->switches)
		return -EINVAL;
	return attach(k, k->skel->progs.kunw_switch, perf_fd);
}

static int attach(struct kunw *k, struct bpf_program *prog, int perf_fd)
{
	struct bpf_link **slot = base_vec_push(&k->links);
	if (!slot)
		return -ENOMEM;
	/* (the link owns the fd it is given and closes it: it gets a copy) */
	int fd = fcntl(perf_fd, F_DUPFD_CLOEXEC, 0);
	libbpf_print_fn_t old = libbpf_set_print(libbpf_quiet);
	struct bpf_link *l = fd >= 0 ? bpf_program__attach_perf_event(prog, fd) : NULL;
	libbpf_set_print(old);
	if (!l) {
		int e = -errno;
		if (fd >= 0)
			close(fd);
		k->links.len--;
		return e ? e : -EINVAL;
	}
	*slot = l;
	return 0;
}

/* ---------------------------------------------------------------- maps */

/* Queues key's swap (fd, or -1: delete), replacing one queued for the same key (its map
 * closed: never seen by a walk). */
static int kops_put(struct kops *q, uint32_t key, int fd, uint32_t gen, bool young_del)
{
	for (size_t i = 0; i < q->n; i++)
		if (q->v[i].key == key) {
			if (q->v[i].fd >= 0)
				close(q->v[i].fd);
			q->v[i].fd = fd;
			q->v[i].gen = gen;
			q->v[i].young_del = young_del;
			return 0;
		}
	if (q->n == q->cap) {
		size_t cap = q->cap ? 2 * q->cap : 64;
		struct kop *v = realloc(q->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		q->v = v;
		q->cap = cap;
	}
	q->v[q->n++] = (struct kop){ key, fd, gen, young_del };
	return 0;
}

/* Is generation a newer than b (generations wrap)? */
static bool gen_newer(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) > 0;
}

/* kunw_gens (mapped): process pid's mappings of generation gen are in kunw_procs or kunw_young.
 * Written once they are there: a walk that reads the generation finds those mappings (or newer
 * ones, and hands over). Never an older generation of the process over a newer one (the
 * committer's swap into kunw_procs may land after the loop put newer mappings in kunw_young). */
static void gens_put(struct kunw *k, uint32_t pid, uint32_t gen)
{
	uint64_t *slot = &k->gens[pid & (KUNW_GENS - 1)];
	uint64_t cur = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	do {
		if ((uint32_t)(cur >> 32) == pid && (uint32_t)cur && !gen_newer(gen, (uint32_t)cur))
			return;
	} while (!__atomic_compare_exchange_n(slot, &cur, (uint64_t)pid << 32 | gen, false, __ATOMIC_RELEASE,
					      __ATOMIC_ACQUIRE));
}

/* Process pid's mappings up to generation upto are gone: its slot cleared, unless another
 * process or a newer generation holds it. */
static void gens_clear(struct kunw *k, uint32_t pid, uint32_t upto)
{
	uint64_t *slot = &k->gens[pid & (KUNW_GENS - 1)];
	uint64_t cur = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	while ((uint32_t)(cur >> 32) == pid && !gen_newer((uint32_t)cur, upto))
		if (__atomic_compare_exchange_n(slot, &cur, 0, false, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE))
			return;
}

/* Writes process pid's kunw_young slot (ymu held): maps NULL clears it. Under the slot's
 * sequence count: odd while written, so that a walk reading it meanwhile hands over (its
 * stores are seen in order: x86's, and the compiler's kept by the atomics). */
static void young_write(struct kunw *k, uint32_t pid, const struct kunw_map *maps, unsigned n)
{
	struct kunw_young *y = &k->yslots[pid & (KUNW_YOUNG_SLOTS - 1)];
	uint64_t q = __atomic_load_n(&y->seq, __ATOMIC_RELAXED);
	/* (an exchange, acquire: the writes below stay after it; no fence, which ThreadSanitizer
	 * does not model) */
	(void)__atomic_exchange_n(&y->seq, q + 1, __ATOMIC_ACQ_REL);
	if (maps)
		memcpy(y->m, maps, ((size_t)n + 1) * sizeof(*maps));
	else
		memset(&y->m[0], 0, sizeof(y->m[0]));
	__atomic_store_n(&y->seq, q + 2, __ATOMIC_RELEASE);
}

/* Does pid's kunw_young slot hold its mappings? */
static bool young_owns(const struct kunw *k, uint32_t pid)
{
	const struct kunw_young *y = &k->yslots[pid & (KUNW_YOUNG_SLOTS - 1)];
	return y->m[0].module == pid && y->m[0].end;
}

/* Process pid's kunw_young slot cleared if it holds a generation older than gen (its mappings
 * were swapped into kunw_procs since; newer ones written there after stay). */
static void young_drop_older(struct kunw *k, uint32_t pid, uint32_t gen)
{
	pthread_mutex_lock(&k->ymu);
	const struct kunw_young *y = &k->yslots[pid & (KUNW_YOUNG_SLOTS - 1)];
	if (young_owns(k, pid) && gen_newer(gen, (uint32_t)y->m[0].end))
		young_write(k, pid, NULL, 0);
	pthread_mutex_unlock(&k->ymu);
}

static void kops_clear(struct kops *q)
{
	for (size_t i = 0; i < q->n; i++)
		if (q->v[i].fd >= 0)
			close(q->v[i].fd);
	q->n = 0;
}

/* The swaps into the hash of maps mfd: the updates in one batch, then the deletes in one (each
 * batch waits for one RCU grace period, as each single update would); element by element when
 * a batch fails. @return the swaps that failed. */
static uint64_t kops_apply(struct kunw *k, int mfd, struct kops *q, bool procs)
{
	uint64_t failed = 0;
	uint32_t *keys = malloc((q->n + 1) * sizeof(*keys));
	int *fds = malloc((q->n + 1) * sizeof(*fds));
	for (int del = 0; del < 2; del++) {
		uint32_t n = 0;
		for (size_t i = 0; keys && fds && i < q->n; i++)
			if ((q->v[i].fd < 0) == del) {
				keys[n] = q->v[i].key;
				fds[n++] = q->v[i].fd;
			}
		uint32_t done = n;
		if (!keys || !fds) {
			done = 0;
		} else if (n && (del ? bpf_map_delete_batch(mfd, keys, &done, NULL) :
				 bpf_map_update_batch(mfd, keys, fds, &done, NULL))) {
			if (done > n)
				done = 0;
		}
		for (uint32_t i = done; i < n; i++)
			if ((del ? bpf_map_delete_elem(mfd, &keys[i]) : bpf_map_update_elem(mfd, &keys[i], &fds[i], BPF_ANY)) &&
			    !(del && errno == ENOENT))
				failed++;
		if (!keys || !fds)
			break;
	}
	if (!keys || !fds) {
		for (size_t i = 0; i < q->n; i++)
			if ((q->v[i].fd < 0 ? bpf_map_delete_elem(mfd, &q->v[i].key) :
			     bpf_map_update_elem(mfd, &q->v[i].key, &q->v[i].fd, BPF_ANY)) && errno != ENOENT)
				failed++;
	}
	free(keys);
	free(fds);
	for (size_t i = 0; procs && i < q->n; i++) {
		if (q->v[i].fd < 0) {
			gens_clear(k, q->v[i].key, q->v[i].gen);
			continue;
		}
		gens_put(k, q->v[i].key, q->v[i].gen);
		if (q->v[i].young_del)
			young_drop_older(k, q->v[i].key, q->v[i].gen);
	}
	kops_clear(q);
	return failed;
}

static void *committer_main(void *arg)
{
	struct kunw *k = arg;
	struct committer *c = &k->c;
	struct kops procs = { 0 }, modules = { 0 };
	pthread_mutex_lock(&c->mu);
	for (;;) {
		while (!c->stop && !c->procs.n && !c->modules.n) {
			c->busy = false;
			pthread_cond_broadcast(&c->idle);
			pthread_cond_wait(&c->cv, &c->mu);
		}
		if (c->stop)
			break;
		c->busy = true;
		struct kops t = procs;
		procs = c->procs;
		c->procs = t;
		t = modules;
		modules = c->modules;
		c->modules = t;
		pthread_mutex_unlock(&c->mu);
		/* tables before the mappings that name them (a table is dropped only once no loaded
		 * mappings name it; a walk that finds none hands the stack over) */
		uint64_t f = kops_apply(k, bpf_map__fd(k->skel->maps.kunw_modules), &modules, false);
		f += kops_apply(k, bpf_map__fd(k->skel->maps.kunw_procs), &procs, true);
		pthread_mutex_lock(&c->mu);
		c->failed += f;
	}
	c->busy = false;
	pthread_cond_broadcast(&c->idle);
	pthread_mutex_unlock(&c->mu);
	kops_clear(&procs);
	kops_clear(&modules);
	free(procs.v);
	free(modules.v);
	return NULL;
}

int kunw_commit(struct kunw *k, bool wait)
{
	if (!k->deferred)
		return 0;
	struct committer *c = &k->c;
	int e = 0;
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < k->qprocs.n && !e; i++)
		if (!(e = kops_put(&c->procs, k->qprocs.v[i].key, k->qprocs.v[i].fd, k->qprocs.v[i].gen,
				   k->qprocs.v[i].young_del)))
			k->qprocs.v[i].fd = -1;
	for (size_t i = 0; i < k->qmods.n && !e; i++)
		if (!(e = kops_put(&c->modules, k->qmods.v[i].key, k->qmods.v[i].fd, 0, false)))
			k->qmods.v[i].fd = -1;
	if (!e) {
		k->qprocs.n = k->qmods.n = 0;
		if (c->procs.n || c->modules.n) {
			c->busy = true;
			pthread_cond_signal(&c->cv);
		}
	}
	while (wait && c->busy)
		pthread_cond_wait(&c->idle, &c->mu);
	pthread_mutex_unlock(&c->mu);
	return e;
}

uint64_t kunw_commit_failed(struct kunw *k)
{
	if (!k->deferred)
		return 0;
	pthread_mutex_lock(&k->c.mu);
	uint64_t f = k->c.failed;
	pthread_mutex_unlock(&k->c.mu);
	return f;
}

/* A swap: queued (deferred), else made now. gen: a process's generation (of a delete: the
 * newest it ends); young_del: its kunw_young slot, if older, cleared once it is made. */
static int swap(struct kunw *k, bool modules, uint32_t key, int fd, uint64_t flags, uint32_t gen, bool young_del)
{
	if (k->deferred) {
		int e = kops_put(modules ? &k->qmods : &k->qprocs, key, fd, gen, young_del);
		if (e && fd >= 0)
			close(fd);
		return e;
	}
	int mfd = modules ? bpf_map__fd(k->skel->maps.kunw_modules) : bpf_map__fd(k->skel->maps.kunw_procs);
	int e = 0;
	if (fd >= 0 ? bpf_map_update_elem(mfd, &key, &fd, flags) : bpf_map_delete_elem(mfd, &key))
		e = -errno;
	if (!modules && fd < 0) {
		gens_clear(k, key, gen);
	} else if (!modules && !e) {
		gens_put(k, key, gen);
		if (young_del)
			young_drop_older(k, key, gen);
	}
	if (fd >= 0)
		close(fd);
	return e;
}

/* The kernel's count of a map's memory (/proc/self/fdinfo: "memlock:"); else its values'. */
static uint64_t map_bytes(int fd, uint64_t fallback)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	int f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return fallback;
	ssize_t n = read(f, buf, sizeof(buf) - 1);
	close(f);
	if (n <= 0)
		return fallback;
	buf[n] = 0;
	const char *m = strstr(buf, "memlock:");
	uint64_t v;
	return m && sscanf(m, "memlock: %" SCNu64, &v) == 1 && v ? v : fallback;
}

/* A frozen array map holding n values of size vsize, as the inner maps' template wants (first,
 * when not NULL, in place of the first value). */
static int inner_map(const char *name, uint32_t vsize, uint32_t n, const void *values, const void *first, int *out)
{
	LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_INNER_MAP);
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, name, sizeof(uint32_t), vsize, n, &mo);
	if (fd < 0)
		return -errno;
	uint32_t *keys = malloc((size_t)n * sizeof(*keys));
	int e = keys ? 0 : -ENOMEM;
	for (uint32_t i = 0; !e && i < n; i++)
		keys[i] = i;
	/* (batches of at most 64 Ki values: the kernel copies each batch in one piece) */
	for (uint32_t at = 0; !e && at < n;) {
		uint32_t count = UW_MIN(n - at, 65536u);
		if (bpf_map_update_batch(fd, keys + at, (const uint8_t *)values + (size_t)at * vsize, &count, NULL))
			e = -errno;
		at += count;
	}
	uint32_t zero = 0;
	if (!e && first && n && bpf_map_update_elem(fd, &zero, first, BPF_ANY))
		e = -errno;
	free(keys);
	if (!e && bpf_map_freeze(fd))
		e = -errno;
	if (e) {
		close(fd);
		return e;
	}
	*out = fd;
	return 0;
}

static int cmp_map(const void *x, const void *y)
{
	const struct kunw_map *a = x, *b = y;
	return a->start < b->start ? -1 : a->start > b->start;
}

int kunw_proc_set(struct kunw *k, uint32_t pid, const struct kunw_map *maps, unsigned n)
{
	if (n > KUNW_PROC_MAPS)
		return -E2BIG;
	struct kunw_map *v = malloc(((size_t)n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memcpy(v + 1, maps, (size_t)n * sizeof(*v));
	qsort(v + 1, n, sizeof(*v), cmp_map);
	int e = 0;
	for (unsigned i = 1; i <= n && !e; i++)
		if (v[i].start >= v[i].end || (i > 1 && v[i].start < v[i - 1].end))
			e = -EINVAL;
	for (unsigned i = 1; i <= n; i++)
		if (v[i].module != KUNW_MODULE_ANON)
			v[i].module = base_map_has(&k->modval, v[i].module) ? (uint32_t)(uintptr_t)base_map_get(&k->modval, v[i].module)
			                                                    : KUNW_MODULE_NONE;
	v[0] = (struct kunw_map){ .start = n, .end = ++k->gen };
	bool young = base_map_has(&k->young, pid);
	/* a young process (few mappings, never in kunw_procs, its slot free or its own): into its
	 * kunw_young slot, where the walk finds them as soon as they are written (no grace period;
	 * the slots are fixed memory, not counted against max_bytes) */
	if (!e && n <= KUNW_YOUNG_MAPS && !base_map_has(&k->procs, pid)) {
		v[0].module = pid;
		pthread_mutex_lock(&k->ymu);
		const struct kunw_young *y = &k->yslots[pid & (KUNW_YOUNG_SLOTS - 1)];
		bool free_slot = young || !y->m[0].end;
		if (free_slot)
			young_write(k, pid, v, n);
		pthread_mutex_unlock(&k->ymu);
		if (free_slot) {
			free(v);
			gens_put(k, pid, k->gen);
			if (!young && base_map_put(&k->young, pid, (void *)(uintptr_t)1)) {
				young_drop_older(k, pid, k->gen + 1); /* (not counted: not kept) */
				return -ENOMEM;
			}
			return 0;
		}
		v[0].module = 0; /* (the slot is another process's: the hash of maps) */
	}
	bool known = base_map_has(&k->procs, pid);
	uint64_t old = (uintptr_t)base_map_get(&k->procs, pid);
	uint64_t est = ((uint64_t)n + 1) * sizeof(*v);
	if (!e && (k->bytes - old + est > k->max_bytes || (!known && k->procs.len >= k->max_procs)))
		e = -ENOSPC;
	int fd = -1;
	if (!e)
		e = inner_map("kunw_proc", sizeof(*v), n + 1, v, NULL, &fd);
	free(v);
	if (e)
		return e;
	uint64_t bytes = map_bytes(fd, est);
	/* (a process that outgrew kunw_young moves to kunw_procs for good: its slot there is
	 * cleared once the swap is made, the walks until then taking it) */
	e = swap(k, false, pid, fd, BPF_ANY, k->gen, young);
	if (e)
		return e == -E2BIG ? -ENOSPC : e;
	if (young)
		base_map_del(&k->young, pid);
	if (base_map_put(&k->procs, pid, (void *)(uintptr_t)bytes))
		return -ENOMEM; /* (loaded; only its count is lost) */
	k->bytes = k->bytes - old + bytes;
	return 0;
}

int kunw_proc_drop(struct kunw *k, uint32_t pid)
{
	bool in_procs = base_map_has(&k->procs, pid), young = base_map_has(&k->young, pid);
	if (!in_procs && !young)
		return -ENOENT;
	/* its slot (or one a move to kunw_procs left, not cleared yet) */
	base_map_del(&k->young, pid);
	pthread_mutex_lock(&k->ymu);
	if (young_owns(k, pid))
		young_write(k, pid, NULL, 0);
	pthread_mutex_unlock(&k->ymu);
	if (!in_procs) {
		gens_clear(k, pid, k->gen);
		return 0;
	}
	k->bytes -= (uintptr_t)base_map_del(&k->procs, pid);
	return swap(k, false, pid, -1, 0, k->gen, false);
}

uint32_t kunw_gen(const struct kunw *k)
{
	return k->gen;
}

int kunw_ring_fd(const struct kunw *k)
{
	return ring_buffer__epoll_fd(k->rb);
}

int kunw_module_add(struct kunw *k, uint32_t id, const struct kunw_table *t)
{
	if (!id || !t->nwords || t->nwords % KUNW_LINE_WORDS)
		return -EINVAL;
	if (base_map_has(&k->modules, id))
		return -EEXIST;
	uint64_t est = kunw_table_bytes(t);
	if (k->bytes + est > k->max_bytes || k->modules.len >= k->max_modules || !k->nfree)
		return -ENOSPC;
	/* a slot and its next tag (never 0: the value is never KUNW_MODULE_ANON; never all ones:
	 * never KUNW_MODULE_NONE) */
	uint32_t slot = k->free_slots[k->nfree - 1];
	uint64_t tags = 1ull << (32 - k->slot_bits);
	uint32_t tag = (uint32_t)(k->slot_tag[slot] % (tags - 2) + 1);
	uint32_t value = slot | tag << k->slot_bits;
	struct kunw_line head;
	memcpy(&head, t->words, sizeof(head));
	head.w[3] = value;
	int fd, e = inner_map("kunw_table", sizeof(struct kunw_line), t->nwords / KUNW_LINE_WORDS, t->words, &head, &fd);
	if (e)
		return e;
	uint64_t bytes = map_bytes(fd, est);
	e = swap(k, true, slot, fd, BPF_ANY, 0, false);
	if (e)
		return e == -E2BIG ? -ENOSPC : e;
	if (base_map_put(&k->modules, id, (void *)(uintptr_t)bytes) ||
	    base_map_put(&k->modval, id, (void *)(uintptr_t)value)) {
		base_map_del(&k->modules, id);
		swap(k, true, slot, -1, 0, 0, false);
		return -ENOMEM;
	}
	k->nfree--;
	k->slot_tag[slot] = tag;
	k->bytes += bytes;
	return 0;
}

int kunw_module_drop(struct kunw *k, uint32_t id)
{
	if (!base_map_has(&k->modules, id))
		return -ENOENT;
	k->bytes -= (uintptr_t)base_map_del(&k->modules, id);
	uint32_t slot = (uint32_t)(uintptr_t)base_map_del(&k->modval, id) & ((1u << k->slot_bits) - 1);
	k->free_slots[k->nfree++] = slot;
	return swap(k, true, slot, -1, 0, 0, false);
}

uint64_t kunw_bytes(const struct kunw *k)
{
	return k->bytes;
}

/* ---------------------------------------------------------------- records */

static int on_record(void *ctx, void *data, size_t size)
{
	struct kunw *k = ctx;
	struct kunw_sample s;
	if (kunw_sample_decode(data, size, &s)) {
		k->bad_records++;
		return 0;
	}
	int r = k->fn(k->fn_ctx, &s);
	if (r) {
		k->fn_ret = r;
		return -ECANCELED; /* (ring_buffer__poll stops on a negative return) */
	}
	return 0;
}

int kunw_poll(struct kunw *k, int timeout_ms, kunw_sample_fn fn, void *ctx)
{
	k->fn = fn;
	k->fn_ctx = ctx;
	k->fn_ret = 0;
	/* (the program wakes the reader only when the ring fills up: what a wait did not bring is
	 * read without one) */
	int n = ring_buffer__poll(k->rb, timeout_ms);
	if (n == 0 && !k->fn_ret)
		n = ring_buffer__consume(k->rb);
	if (k->fn_ret)
		return k->fn_ret;
	return n == -EINTR ? 0 : n;
}

int kunw_counters(struct kunw *k, struct kunw_counters *out)
{
	/* each CPU's at the start of its scratch value (kunw.bpf.c: struct kunw_scratch), read in
	 * the mapped map (a lookup would copy each CPU's whole value, ~91 KiB) */
	memset(out, 0, sizeof(*out));
	if (!k->scratch)
		return -ENOENT;
	for (int c = 0; c < k->ncpus; c++) {
		struct kunw_counters one;
		memcpy(&one, k->scratch + (size_t)c * k->scratch_elem, sizeof(one));
		const uint64_t *src = (const uint64_t *)&one;
		uint64_t *dst = (uint64_t *)out;
		for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
			dst[i] += src[i];
	}
	return 0;
}

int kunw_prog_info(struct kunw *k, struct kunw_prog_info *out)
{
	struct bpf_prog_info info;
	uint32_t len = sizeof(info);
	memset(&info, 0, sizeof(info));
	struct bpf_program *sp = k->wait ? k->skel->progs.kunw_sample_followed : k->skel->progs.kunw_sample;
	if (bpf_obj_get_info_by_fd(bpf_program__fd(sp), &info, &len))
		return -errno;
	*out = (struct kunw_prog_info){ info.run_cnt, info.run_time_ns, info.verified_insns, info.xlated_prog_len,
		                        info.jited_prog_len, 0, 0, 0, 0 };
	if (k->wait) {
		memset(&info, 0, sizeof(info));
		len = sizeof(info);
		if (bpf_obj_get_info_by_fd(bpf_program__fd(k->skel->progs.kunw_wait_switch), &info, &len))
			return -errno;
		out->wait_run_cnt = info.run_cnt;
		out->wait_run_time_ns = info.run_time_ns;
	}
	if (k->switches) {
		memset(&info, 0, sizeof(info));
		len = sizeof(info);
		if (bpf_obj_get_info_by_fd(bpf_program__fd(k->skel->progs.kunw_switch), &info, &len))
			return -errno;
		out->switch_run_cnt = info.run_cnt;
		out->switch_run_time_ns = info.run_time_ns;
	}
	return 0;
}

int kunw_timing_read(struct kunw *k, struct kunw_timing *out)
{
	memset(out, 0, sizeof(*out));
	if (!k->timing)
		return -ENOENT;
	struct kunw_timing *v = calloc((size_t)k->ncpus, sizeof(*v));
	if (!v)
		return -ENOMEM;
	uint32_t zero = 0;
	int e = bpf_map_lookup_elem(bpf_map__fd(k->skel->maps.kunw_times), &zero, v) ? -errno : 0;
	for (int c = 0; !e && c < k->ncpus; c++) {
		const uint64_t *src = (const uint64_t *)&v[c];
		uint64_t *dst = (uint64_t *)out;
		for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
			dst[i] += src[i];
	}
	free(v);
	return e;
}

/* ---------------------------------------------------------------- waits timed in the kernel */

int kunw_attach_followed(struct kunw *k, int perf_fd)
{
	if (!k->wait)
		return -EINVAL;
	return attach(k, k->skel->progs.kunw_sample_followed, perf_fd);
}

static int wait_put(int fd, uint32_t key, uint32_t v, uint64_t flags)
{
	return bpf_map_update_elem(fd, &key, &v, flags) ? -errno : 0;
}

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL /* (Linux 6.9) */
#endif

/* Thread tid's state made here, followed (kw_tasks is keyed by a pidfd in user space): the
 * program then only looks it up. It makes the state of a thread it sees first, but not while
 * the kernel's per-CPU task storage lock is taken (until 6.19; a task preempted holding it,
 * a task's storage freed where its last reference is dropped): a followed thread's first
 * switches would go untimed. Best effort: a thread gone, or a kernel without thread pidfds
 * (before 6.9, for a thread not its process's leader), leaves it to the program. */
static void wait_store(struct kunw *k, uint32_t tid, uint32_t tgid)
{
	int fd = (int)syscall(SYS_pidfd_open, (pid_t)tid, tid == tgid ? 0 : PIDFD_THREAD);
	if (fd < 0)
		return;
	struct kw_task v = { .followed = 1 };
	if (bpf_map__value_size(k->skel->maps.kw_tasks) == sizeof(v))
		(void)bpf_map_update_elem(bpf_map__fd(k->skel->maps.kw_tasks), &fd, &v, BPF_NOEXIST);
	close(fd);
}

int kunw_wait_follow_proc(struct kunw *k, uint32_t pid)
{
	if (!k->wait)
		return -EINVAL;
	int e = wait_put(bpf_map__fd(k->skel->maps.kw_procs), pid, KUNW_WAIT_PROC_ALL | KUNW_WAIT_PROC_SIDEBAND,
			 BPF_NOEXIST);
	if (!e)
		__atomic_fetch_add(&k->skel->bss->kunw_wait_live, 1, __ATOMIC_RELAXED);
	if (e && e != -EEXIST)
		return e;
	/* its threads now (those it makes from here on: the fork program) */
	char path[64];
	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/task", pid);
	DIR *d = opendir(path);
	for (struct dirent *de; d && (de = readdir(d));) {
		char *end;
		unsigned long tid = strtoul(de->d_name, &end, 10);
		if (de->d_name[0] != '.' && !*end && tid && tid <= UINT32_MAX)
			wait_store(k, (uint32_t)tid, pid);
	}
	if (d)
		closedir(d);
	return 0;
}

int kunw_wait_follow_thread(struct kunw *k, uint32_t tid, uint32_t pid)
{
	if (!k->wait)
		return -EINVAL;
	int e = wait_put(bpf_map__fd(k->skel->maps.kw_tids), tid, 1, BPF_NOEXIST);
	if (!e)
		__atomic_fetch_add(&k->skel->bss->kunw_wait_live, 1, __ATOMIC_RELAXED);
	if (e && e != -EEXIST)
		return e;
	wait_store(k, tid, pid);
	/* (a process followed whole keeps its flags) */
	e = wait_put(bpf_map__fd(k->skel->maps.kw_procs), pid, KUNW_WAIT_PROC_SIDEBAND, BPF_NOEXIST);
	return e == -EEXIST ? 0 : e;
}

int kunw_wait_attach(struct kunw *k)
{
	if (!k->wait)
		return -EINVAL;
	struct bpf_program *progs[] = { k->skel->progs.kunw_wait_fork, k->skel->progs.kunw_wait_exit,
		                        k->skel->progs.kunw_wait_exec, k->skel->progs.kunw_wait_switch };
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		struct bpf_link **slot = base_vec_push(&k->links);
		if (!slot)
			return -ENOMEM;
		libbpf_print_fn_t old = libbpf_set_print(libbpf_quiet);
		struct bpf_link *l = bpf_program__attach(progs[i]);
		libbpf_set_print(old);
		if (!l) {
			int e = -errno;
			k->links.len--;
			return e ? e : -EINVAL;
		}
		*slot = l;
	}
	return 0;
}

void kunw_wait_on(struct kunw *k, bool on)
{
	if (k->wait)
		__atomic_store_n(&k->skel->bss->kunw_wait_on, on, __ATOMIC_SEQ_CST);
}

int kunw_wait_blocked(struct kunw *k, uint32_t tid, uint64_t t0, bool add)
{
	if (!k->wait)
		return -EINVAL;
	int fd = bpf_map__fd(k->skel->maps.kw_blocked);
	if (add) {
		if (bpf_map_update_elem(fd, &tid, &t0, BPF_NOEXIST))
			return -errno;
		__atomic_fetch_add(&k->skel->bss->kunw_wait_nblocked, 1, __ATOMIC_SEQ_CST);
		return 0;
	}
	/* (the program may have taken it since: then it is its count to lower) */
	if (bpf_map_delete_elem(fd, &tid))
		return errno == ENOENT ? 0 : -errno;
	__atomic_fetch_sub(&k->skel->bss->kunw_wait_nblocked, 1, __ATOMIC_SEQ_CST);
	return 0;
}

int kunw_wait_sideband(struct kunw *k, uint32_t pid)
{
	if (!k->wait)
		return -EINVAL;
	uint32_t v;
	if (bpf_map_lookup_elem(bpf_map__fd(k->skel->maps.kw_procs), &pid, &v))
		return errno == ENOENT ? 0 : -errno;
	return (v & KUNW_WAIT_PROC_SIDEBAND) != 0;
}

int64_t kunw_wait_live(struct kunw *k)
{
	return k->wait ? __atomic_load_n(&k->skel->bss->kunw_wait_live, __ATOMIC_RELAXED) : 0;
}

int kunw_wait_end(struct kunw *k, uint64_t mono)
{
	if (!k->wait)
		return -EINVAL;
	kunw_wait_on(k, false);
	k->skel->bss->kunw_wait_end_mono = mono;
	libbpf_print_fn_t old = libbpf_set_print(libbpf_quiet);
	struct bpf_link *l = bpf_program__attach_iter(k->skel->progs.kunw_wait_end, NULL);
	libbpf_set_print(old);
	if (!l)
		return errno ? -errno : -EINVAL;
	int e = 0, fd = bpf_iter_create(bpf_link__fd(l));
	if (fd < 0) {
		e = -errno;
	} else {
		char buf[256];
		ssize_t n;
		while ((n = read(fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
			;
		if (n < 0)
			e = -errno;
		close(fd);
	}
	bpf_link__destroy(l);
	return e;
}

int kunw_wait_counters(struct kunw *k, struct kunw_wait_counters *out)
{
	memset(out, 0, sizeof(*out));
	if (!k->wait)
		return 0;
	struct kunw_wait_counters *v = calloc((size_t)k->ncpus, sizeof(*v));
	if (!v)
		return -ENOMEM;
	uint32_t zero = 0;
	int e = bpf_map_lookup_elem(bpf_map__fd(k->skel->maps.kw_stats), &zero, v) ? -errno : 0;
	for (int c = 0; !e && c < k->ncpus; c++) {
		out->waits += v[c].waits;
		out->walked += v[c].walked;
		out->ns += v[c].ns;
		out->records += v[c].records;
		out->lost += v[c].lost;
		out->untimed += v[c].untimed;
		out->missed_ins += v[c].missed_ins;
	}
	free(v);
	return e;
}
