/* SPDX-License-Identifier: MIT OR GPL-2.0 */
/*
 * Off-CPU time timed in the kernel (record --off-cpu with kernel unwinding, docs/offcpu.md
 * "Waits timed in the kernel"): included at the end of kunw.bpf.c, whose walk it reuses.
 *
 * At the sched_switch tracepoint (tp_btf: a raw tracepoint with the task pointers), for every
 * thread followed:
 *  - at its switch-out, in its own context: the time, and the key of the wait: its user pc and
 *    stack pointer (from the registers it left at its kernel entry) and whether it was
 *    preempted. The stack is walked there (the walk of kunw.bpf.c, from the same registers) when
 *    the CPU's walk budget allows: a token bucket of kunw_wait_walk_ns of credit per walk, a
 *    key the thread has not been walked at first (a key it has, while at least 3/4 of the
 *    bucket is left, then one time in two while half is);
 *  - at its switch-in (in the context of the task switched from): the wait's length. A walked
 *    wait says so to user space (a KUNW_KIND_WAIT_IN record: the walk's switch-out and this
 *    switch-in are paired there exactly as a context-switches sample and a switch record);
 *    an unwalked one is added to its thread's total for its key (a slot of the thread's
 *    storage), written (KUNW_KIND_WAIT_SUM) when a wait of at least kunw_wait_min_ns ends or
 *    the total reaches it, when the slot is needed for another key, when the thread exits
 *    and at the end of the recording (the iterator kunw_wait_end). User space gives a key's
 *    time to the stack walked with that key.
 * No perf event fires per switch and no record is written for a wait not walked until its
 * key's total reaches kunw_wait_min_ns.
 *
 * Which tasks: a task storage entry per task seen (kw_tasks; negative too, so each task is
 * looked up in the maps once), made at its first switch or sample from kw_procs (processes
 * followed whole: a command, -p) and kw_tids (threads: -t), or at its fork when its parent is
 * followed (threads and processes it creates are followed, as perf's inherited events). With
 * kunw_wait_all every task but the recorder's and the idle tasks.
 *
 * Times: a wait's two ends are read from the runqueue's clock (sched_clock, the value
 * __schedule updated just before the tracepoint: no clock read), where the kernel has it
 * (CONFIG_FAIR_GROUP_SCHED: se.cfs_rq->rq); else, and for the records, CLOCK_MONOTONIC
 * (bpf_ktime_get_ns). Walked waits are timed on CLOCK_MONOTONIC at both ends (user space pairs
 * them with the walk's time).
 */

#include <bpf/bpf_tracing.h>

#define KW_PF_EXITING 0x00000004 /* PF_EXITING: its switch-outs are its death, not waits */
#define KW_KSKIP 2 /* kernel frames from bpf_get_stack skipped: the program and bpf_trace_run4 (the
                    * chain begins at __schedule) */

/* set before loading (kunw_open, kunw_opts.wait) */
const volatile __u32 kunw_wait_all = 0;       /* follow every task (-a) */
const volatile __u32 kunw_wait_self = 0;      /* ... but this process's (the recorder) */
const volatile __u64 kunw_wait_min_ns = 500000;
const volatile __u64 kunw_wait_walk_ns = 2000000; /* credit one walk costs: 500 walks/s per CPU */
const volatile __u64 kunw_wait_burst = 64;    /* walks the bucket holds */

/* set by user space while recording (the skeleton's .bss) */
__u32 kunw_wait_on;          /* 1 while the recording runs */
__u32 kunw_wait_nblocked;    /* entries of kw_blocked not yet consumed */
__s64 kunw_wait_live;        /* followed targets alive (user space sets the start's count) */
__u64 kunw_wait_end_mono;    /* the end (CLOCK_MONOTONIC), for kunw_wait_end */
__s64 kunw_wait_clock_off;   /* CLOCK_MONOTONIC - the runqueue clock, as last seen */

/* (struct kw_task, a thread's state: kunw_abi.h, user space makes the first of some) */

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct kw_task);
} kw_tasks SEC(".maps");

/* tgid -> KUNW_WAIT_PROC_* */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u32);
} kw_procs SEC(".maps");

/* tid -> 1: threads followed (-t, and the threads they create) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u32);
} kw_tids SEC(".maps");

/* tid -> CLOCK_MONOTONIC: threads user space found blocked at the start (their switch-out
 * sample pushed by it): their next switch-in closes that wait */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u64);
} kw_blocked SEC(".maps");

struct kw_cpu {
	__u64 last;              /* the clock at the last refill */
	__u64 credit;            /* ns of credit (a walk costs kunw_wait_walk_ns) */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct kw_cpu);
} kw_cpus SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct kunw_wait_counters);
} kw_stats SEC(".maps");

static __always_inline struct kunw_wait_counters *kw_counters(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&kw_stats, &zero);
}

/* Is the task followed, from the maps (a task seen for the first time)? */
static __always_inline bool kw_follow_of(struct task_struct *t)
{
	__u32 tgid = t->tgid, tid = t->pid;
	if (!tid)
		return false; /* the idle tasks */
	if (kunw_wait_all)
		return tgid != kunw_wait_self;
	__u32 *f = bpf_map_lookup_elem(&kw_procs, &tgid);
	if (f && (*f & KUNW_WAIT_PROC_ALL))
		return true;
	return bpf_map_lookup_elem(&kw_tids, &tid) != NULL;
}

/* The task's state, made at its first sight (create); NULL for the idle tasks and when
 * storage cannot be had. */
static __always_inline struct kw_task *kw_task_of(struct task_struct *t, bool create)
{
	struct kw_task *k = bpf_task_storage_get(&kw_tasks, t, 0, 0);
	if (k || !create || !t->pid)
		return k;
	bool f = kw_follow_of(t);
	k = bpf_task_storage_get(&kw_tasks, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (k) {
		k->followed = f;
	} else if (f) {
		/* (the kernel makes no task storage in a tracing program while its per-CPU task
		 * storage lock is taken, or without memory at hand there: offcpu.kernel-all counted
		 * one such switch beside two busy loops. User space makes the storage of the threads
		 * followed at the start; the others' are made at their fork or next switch) */
		struct kunw_wait_counters *cnt = kw_counters();
		if (cnt)
			cnt->untimed++;
	}
	return k;
}

/* The runqueue's clock on this CPU (t runs or ran here), else CLOCK_MONOTONIC. */
static __always_inline __u64 kw_clock(struct task_struct *t)
{
	/* (loads through the task's pointers: a probe read costs ~100 ns each here) */
	if (bpf_core_field_exists(t->se.cfs_rq)) {
		__u64 c = t->se.cfs_rq->rq->clock;
		if (c)
			return c;
	}
	return bpf_ktime_get_ns();
}

static __always_inline __u64 kw_mono(__u64 rq_now)
{
	__u64 m = bpf_ktime_get_ns();
	if (rq_now)
		kunw_wait_clock_off = (__s64)(m - rq_now);
	return m;
}

static __always_inline __u64 kw_key(__u64 ip, __u64 sp, bool preempt)
{
	__u64 k = ip * 0x9e3779b97f4a7c15ull ^ (sp + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull;
	k ^= k >> 31;
	k = (k << 1) | preempt;
	return k ? k : 2;
}

/* The ids of a task as records have them: tgid << 32 | tid. */
static __always_inline __u64 kw_ids(struct task_struct *t)
{
	return (__u64)(__u32)t->tgid << 32 | (__u32)t->pid;
}

/* A record of kind KUNW_KIND_WAIT_IN (a walked wait's switch-in: the header alone) or
 * KUNW_KIND_WAIT_SUM (a key's unwalked time: period ns, then the key, the pc and how many waits). */
static __always_inline void kw_emit(__u64 ids, __u32 kind, __u64 time, __u64 key, __u64 ip, __u64 ns, __u64 n)
{
	struct kunw_wait_counters *cnt = kw_counters();
	__u32 size = sizeof(struct kunw_rec) + (kind == KUNW_KIND_WAIT_SUM ? KUNW_SUM_WORDS * 8 : 0);
	struct kunw_rec *r = bpf_ringbuf_reserve(&kunw_ring, sizeof(*r) + KUNW_SUM_WORDS * 8, 0);
	if (!r) {
		if (cnt)
			cnt->lost++;
		return;
	}
	__builtin_memset(r, 0, sizeof(*r));
	r->size = size;
	r->pid = (__u32)(ids >> 32);
	r->tid = (__u32)ids;
	r->cpu = bpf_get_smp_processor_id();
	r->kind = kind;
	r->time = time;
	r->period = ns;
	__u64 *sum = (__u64 *)(r + 1);
	sum[0] = key;
	sum[1] = ip;
	sum[2] = n;
	/* the reader woken as walk_output wakes it: each time this CPU wrote its share */
	__u64 flags = BPF_RB_NO_WAKEUP;
	__u32 cpu = bpf_get_smp_processor_id();
	struct kunw_scratch *s = bpf_map_lookup_elem(&kunw_scratch, &cpu);
	if (s) {
		s->unwoken += size;
		if (s->unwoken >= kunw_wakeup_bytes) {
			s->unwoken = 0;
			flags = BPF_RB_FORCE_WAKEUP;
		}
	}
	bpf_ringbuf_submit(r, flags);
	if (cnt)
		cnt->records++;
}

/* A slot's total written (time: CLOCK_MONOTONIC) and cleared. */
static __always_inline void kw_flush(__u64 ids, struct kw_slot *s, __u64 time)
{
	if (!s->ns && !s->n)
		return;
	kw_emit(ids, KUNW_KIND_WAIT_SUM, time, s->key, s->ip, s->ns, s->n);
	s->ns = 0;
	s->n = 0;
}

#define KW_KNOWN 0x10 /* kunw_wait_slot: the key was walked already */

/* The slot of key in k: found, or the next one round taken for it (its total written first,
 * now the runqueue clock). @return its index, | KW_KNOWN when the key was walked since the slot
 * took it; -1: none. A global function: checked once by the verifier (each path of the search
 * would otherwise go on through the walk). */
__noinline int kunw_wait_slot(struct kw_task *k, __u64 key, __u64 ip, __u64 ids, __u64 now)
{
	if (!k)
		return -1;
	/* (the last wait's slot first: a thread waits at the same place again and again) */
	__u32 last = k->slot;
	if (last < KW_SLOTS && k->s[last].key == key)
		return (int)last | (k->s[last].walks ? KW_KNOWN : 0);
	for (int j = 0; j < KW_SLOTS; j++)
		if (k->s[j].key == key)
			return j | (k->s[j].walks ? KW_KNOWN : 0);
	__u32 i = k->victim++ % KW_SLOTS;
	if (i >= KW_SLOTS)
		return -1;
	struct kw_slot *v = &k->s[i];
	if (v->n)
		kw_flush(ids, v, kw_mono(now));
	v->key = key;
	v->ip = ip;
	v->ns = 0;
	v->n = 0;
	v->walks = 0;
	return (int)i;
}

/* An unwalked wait of d ns of the open wait's slot ended (now: the runqueue clock): a long one
 * (kunw_wait_min_ns or more) written alone, a short one added to the slot's total, written once
 * that reaches kunw_wait_min_ns. A global function (checked once). @return 0. */
__noinline int kunw_wait_add(struct kw_task *k, __u64 ids, __u64 d, __u64 now)
{
	if (!k)
		return 0;
	__u32 i = k->slot;
	if (i >= KW_SLOTS)
		return 0;
	struct kw_slot *s = &k->s[i];
	if (d >= kunw_wait_min_ns) {
		kw_emit(ids, KUNW_KIND_WAIT_SUM, kw_mono(now), s->key, s->ip, d, 1);
		return 0;
	}
	s->ns += d;
	s->n++;
	if (s->ns >= kunw_wait_min_ns)
		kw_flush(ids, s, kw_mono(now));
	return 0;
}

/* The blocking stack of the task switching out (current), walked as kunw.bpf.c sample() walks
 * a sample's (walk_output), written as a record of kind KUNW_KIND_WAIT whose period is the wait's
 * key. */
static __always_inline void kw_walk(void *ctx, struct task_struct *task, __u64 key, __u64 time)
{
	__u64 t_all = t_start();
	__u32 cpu = bpf_get_smp_processor_id();
	struct kunw_scratch *s = bpf_map_lookup_elem(&kunw_scratch, &cpu);
	if (!s)
		return;
	struct kunw_counters *cnt = &s->cnt;
	cnt->samples++;
	struct kunw_rec *rec = &s->rec;
	__builtin_memset(rec, 0, sizeof(*rec));
	rec->pid = task->tgid;
	rec->tid = task->pid;
	rec->cpu = cpu;
	rec->time = time;
	rec->period = key;
	rec->kind = KUNW_KIND_WAIT;
	long kb = bpf_get_stack(ctx, s->data, KUNW_MAX_KFRAMES * 8, KW_KSKIP);
	__u32 nk = kb > 0 ? (__u32)kb / 8 : 0;
	if (nk > KUNW_MAX_KFRAMES)
		nk = KUNW_MAX_KFRAMES;
	rec->nkernel = (__u16)nk;
	s->w.in_syscall = 0;
	bool have_regs = task_user_regs(task, s);
	walk_output(s, cnt, nk, have_regs, t_all);
}

/* May this CPU walk now (now: the runqueue clock)? known: the thread has been walked with this
 * key already. */
static __always_inline bool kw_budget(__u64 now, bool known)
{
	__u32 zero = 0;
	struct kw_cpu *c = bpf_map_lookup_elem(&kw_cpus, &zero);
	if (!c)
		return false;
	__u64 cap = kunw_wait_walk_ns * kunw_wait_burst;
	if (!c->last) {
		c->credit = cap;
	} else if (now > c->last) {
		c->credit += now - c->last;
		if (c->credit > cap)
			c->credit = cap;
	}
	c->last = now;
	if (c->credit < kunw_wait_walk_ns)
		return false;
	/* a key walked already: while the budget is not spent (at least 3/4 left), again; while
	 * half is left, one time in two (not always the first switch-out after the credit came
	 * back); else only new keys */
	if (known && (c->credit < cap / 2 || (c->credit < cap / 4 * 3 && (bpf_get_prandom_u32() & 1))))
		return false;
	c->credit -= kunw_wait_walk_ns;
	return true;
}

/* The open wait of t closed at t's last arrival on a CPU, when t has run since it began:
 * sched_info.last_arrival, the runqueue clock the scheduler records at every switch-in. This
 * program does not run at every switch: under load on this 6.18 kernel a thread now and then
 * ran again with no switch-in seen (a second switch-out with the wait still open, 0 to 3 of
 * ~300 in offcpu.kernel-all beside two busy loops; a log of every switch the program saw had
 * a gap on one CPU, next=67 then prev=5590, with no recursion misses counted), and the wait,
 * its time and its walk were lost. Called where t runs (its switch-out, its exit) with its
 * wait open: counted as a switch-in not shown. @return whether it was closed. */
static __always_inline bool kw_close_at_arrival(struct task_struct *t, struct kw_task *k)
{
	struct kunw_wait_counters *cnt = kw_counters();
	if (cnt)
		cnt->missed_ins++;
	if (!bpf_core_field_exists(t->sched_info.last_arrival))
		return false;
	__u64 arr = t->sched_info.last_arrival, out = k->out;
	if (!arr || !out)
		return false;
	if (k->walked) {
		/* (a walked wait's out is CLOCK_MONOTONIC) */
		__u64 m = arr + kunw_wait_clock_off;
		if (m <= out)
			return false;
		k->out = 0;
		kw_emit(kw_ids(t), KUNW_KIND_WAIT_IN, m, 0, 0, 0, 0);
		return true;
	}
	if (arr <= out)
		return false;
	k->out = 0;
	kunw_wait_add(k, kw_ids(t), arr - out, kw_clock(t)); /* (now: the clock kw_mono pairs) */
	return true;
}

/* A wait begins: prev switches out. */
static __always_inline void kw_out(void *ctx, struct task_struct *prev, bool preempt, struct kunw_wait_counters *cnt)
{
	struct kw_task *k = kw_task_of(prev, true);
	if (!k || !k->followed || (prev->flags & KW_PF_EXITING))
		return;
	__u64 ip = 0, sp = 0;
	if (prev->mm) {
		struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(prev);
		ip = r->ip;
		sp = r->sp;
	}
	/* its last wait still open: the switch-in that ended it was not shown */
	if (k->out)
		kw_close_at_arrival(prev, k);
	__u64 key = kw_key(ip, sp, preempt);
	__u64 now = kw_clock(prev);
	int i = kunw_wait_slot(k, key, ip, kw_ids(prev), now);
	if (i < 0)
		return;
	k->slot = (__u8)(i & (KW_SLOTS - 1));
	cnt->waits++;
	if (kw_budget(now, (i & KW_KNOWN) != 0)) {
		__u64 m = kw_mono(now);
		kw_walk(ctx, prev, key, m);
		__u32 j = k->slot;
		if (j < KW_SLOTS)
			k->s[j].walks++;
		cnt->walked++;
		k->walked = 1;
		k->out = m;
	} else {
		k->walked = 0;
		k->out = now;
	}
}

/* A wait ends: next switches in. */
static __always_inline void kw_in(struct task_struct *next, struct kunw_wait_counters *cnt)
{
	struct kw_task *k = kw_task_of(next, true);
	if (!k || !k->followed)
		return;
	__u64 out = k->out;
	if (!out) {
		/* found blocked at the start by user space: this ends that wait */
		if (kunw_wait_nblocked) {
			__u32 tid = next->pid;
			if (bpf_map_lookup_elem(&kw_blocked, &tid) && !bpf_map_delete_elem(&kw_blocked, &tid)) {
				__sync_fetch_and_add(&kunw_wait_nblocked, -1);
				kw_emit(kw_ids(next), KUNW_KIND_WAIT_IN, bpf_ktime_get_ns(), 0, 0, 0, 0);
			}
		}
		return;
	}
	k->out = 0;
	if (k->walked) {
		kw_emit(kw_ids(next), KUNW_KIND_WAIT_IN, bpf_ktime_get_ns(), 0, 0, 0, 0);
		return;
	}
	__u64 now = kw_clock(next);
	__u64 d = now > out ? now - out : 0;
	cnt->ns += d;
	kunw_wait_add(k, kw_ids(next), d, now);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(kunw_wait_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	if (!kunw_wait_on)
		return 0;
	struct kunw_wait_counters *cnt = kw_counters();
	if (!cnt)
		return 0;
	if (prev->pid)
		kw_out(ctx, prev, preempt, cnt);
	if (next->pid)
		kw_in(next, cnt);
	return 0;
}

/* A task created by a followed one is followed (threads and processes, as inherited events). */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(kunw_wait_fork, struct task_struct *parent, struct task_struct *child)
{
	(void)ctx;
	struct kw_task *p = kw_task_of(parent, true);
	if (!p || !p->followed)
		return 0;
	struct kw_task *c = bpf_task_storage_get(&kw_tasks, child, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (c)
		c->followed = 1;
	__u32 tgid = child->tgid, tid = child->pid, ptid = parent->pid, one = 1;
	if (kunw_wait_all)
		return 0;
	if (tgid != (__u32)parent->tgid) {
		/* a new process: all its threads followed, its side-band wanted */
		__u32 f = KUNW_WAIT_PROC_ALL | KUNW_WAIT_PROC_SIDEBAND;
		if (!bpf_map_update_elem(&kw_procs, &tgid, &f, BPF_NOEXIST))
			__sync_fetch_and_add(&kunw_wait_live, 1);
	} else if (bpf_map_lookup_elem(&kw_tids, &ptid)) {
		/* a thread of a thread followed alone (-t) */
		if (!bpf_map_update_elem(&kw_tids, &tid, &one, BPF_NOEXIST))
			__sync_fetch_and_add(&kunw_wait_live, 1);
	}
	return 0;
}

/* A followed thread exits: its totals written, its last switch-out (its death) not a wait; a
 * process whose last thread exits is no longer followed (its number may come back). */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(kunw_wait_exit, struct task_struct *p)
{
	(void)ctx;
	struct kw_task *k = bpf_task_storage_get(&kw_tasks, p, 0, 0);
	if (k && k->followed) {
		/* (running to exit: a wait still open ended at a switch-in not shown) */
		if (k->out)
			kw_close_at_arrival(p, k);
		__u64 now = bpf_ktime_get_ns();
		for (int i = 0; i < KW_SLOTS; i++)
			kw_flush(kw_ids(p), &k->s[i], now);
		k->followed = 0;
		k->out = 0;
	}
	if (kunw_wait_all)
		return 0;
	__u32 tgid = p->tgid, tid = p->pid;
	if (!bpf_map_delete_elem(&kw_tids, &tid))
		__sync_fetch_and_add(&kunw_wait_live, -1);
	if (BPF_CORE_READ(p, signal, live.counter) == 0) {
		__u32 *f = bpf_map_lookup_elem(&kw_procs, &tgid);
		bool all = f && (*f & KUNW_WAIT_PROC_ALL);
		if (!bpf_map_delete_elem(&kw_procs, &tgid) && all)
			__sync_fetch_and_add(&kunw_wait_live, -1);
	}
	return 0;
}

/* A followed task execs: its keys (pcs and stack pointers of the old program) written and
 * forgotten, another program's waits are not given their stacks. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(kunw_wait_exec, struct task_struct *p)
{
	(void)ctx;
	struct kw_task *k = bpf_task_storage_get(&kw_tasks, p, 0, 0);
	if (!k || !k->followed)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	for (int i = 0; i < KW_SLOTS; i++) {
		kw_flush(kw_ids(p), &k->s[i], now);
		k->s[i].key = 0;
		k->s[i].walks = 0;
	}
	return 0;
}

/* CPU samples of the events opened per CPU: only the followed tasks' are walked. */
SEC("perf_event")
int kunw_sample_followed(struct bpf_perf_event_data *ctx)
{
	if (!kunw_wait_on)
		return 0;
	struct task_struct *t = bpf_get_current_task_btf();
	struct kw_task *k = bpf_task_storage_get(&kw_tasks, t, 0, 0);
	if (k ? !k->followed : !kw_follow_of(t))
		return 0;
	return sample(ctx, KUNW_KIND_SAMPLE);
}

/* The end of the recording (user space reads this iterator once the programs are off): every
 * followed thread's open unwalked wait up to kunw_wait_end_mono and its totals written. */
SEC("iter/task")
int kunw_wait_end(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	if (!t)
		return 0;
	struct kw_task *k = bpf_task_storage_get(&kw_tasks, t, 0, 0);
	if (!k || !k->followed)
		return 0;
	struct kunw_wait_counters *cnt = kw_counters();
	__u64 end = kunw_wait_end_mono;
	/* a thread that has run since its wait began (the switch-in not shown, and no switch-out
	 * since: a thread busy to the end): its wait ended at its last arrival, not at the end */
	if (k->out && bpf_core_field_exists(t->sched_info.last_arrival)) {
		__u64 arr = t->sched_info.last_arrival;
		if (arr && (k->walked ? arr + kunw_wait_clock_off > k->out : arr > k->out))
			kw_close_at_arrival(t, k);
	}
	if (k->out && !k->walked) {
		__u64 e = end - kunw_wait_clock_off;
		__u32 i = k->slot;
		if (i < KW_SLOTS && e > k->out) {
			k->s[i].ns += e - k->out;
			k->s[i].n++;
			if (cnt)
				cnt->ns += e - k->out;
		}
	}
	k->out = 0;
	for (int i = 0; i < KW_SLOTS; i++)
		kw_flush(kw_ids(t), &k->s[i], end);
	return 0;
}
