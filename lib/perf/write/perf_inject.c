/* SPDX-License-Identifier: MIT */
/*
 * Callchains into a perf.data file: every sample of a `--call-graph dwarf` recording is unwound
 * and written back without its register and stack copies, with a callchain instead (kernel
 * frames, PERF_CONTEXT_USER, the unwound user frames). Caller frames are written at their return
 * address - 1, inside the call instruction, as perf script shows DWARF callchains: tools then name
 * the caller even when the call is a function's last instruction (a noreturn call), where the
 * return address already belongs to the next function. Other records are copied as they are, in time order; the header keeps
 * the events (with the new sample layout), their ids, and the features perf and hotspot read,
 * with the build-ids of every module a frame landed in.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "perf/perf.h"

/* sample fields kept, in their record order, then the callchain */
#define KEEP (PS_IDENTIFIER | PS_IP | PS_TID | PS_TIME | PS_ADDR | PS_ID | PS_STREAM_ID | PS_CPU | PS_PERIOD)

struct inject {
	struct uw_session *s;
	struct uw_reader *r;
	struct perf_writer *w;
	bool attrs_done;
	uint64_t *out_type;    /* per attribute */
	uint8_t *rec;          /* the sample being written */
	size_t cap;
	struct uw_inject_stats st;
	int err;               /* the first error of writing, said in the session's message */
	char *path;
	struct offcpu *oc;     /* record --off-cpu: samples of attribute oc_attr held there */
	uint32_t oc_attr;
	uint64_t *oc_chain;    /* a switch-out's chain, as written */
	bool oc_keyed;         /* waits timed in the kernel: walks carry their key as period */
	uint32_t oc_cap;
};

/* The first error of writing: kept, and said with the output's name and the real reason (disk
 * full, not "stopped by the callback"). */
static int sink_failed(struct inject *in, int err)
{
	if (err && !in->err) {
		in->err = err;
		if (err == -ENOTEMPTY) /* (the only way publishing a recording gives it: output.c) */
			base_err(&in->s->log, err, "%s: writing: %s.old is a directory with more than a recording's "
				 "data files in it (where the previous %s goes): move it away", in->path, in->path, in->path);
		else
			base_err(&in->s->log, err, "%s: writing: %s", in->path, uw_strerror(err));
	}
	return err;
}

/* Features of the input that no longer hold for the output: its samples lose branch stacks, AUX
 * data is not copied, the output is not compressed nor a directory; the writer makes the
 * others that depend on what changed (events, build-ids, sample times, stop reasons). */
static bool feature_carried(unsigned bit)
{
	switch (bit) {
	case FEAT_BUILD_ID: case FEAT_EVENT_DESC: case FEAT_SAMPLE_TIME: case FEAT_UW_STOPS:
	case FEAT_COMPRESSED: case FEAT_DIR_FORMAT: case FEAT_AUXTRACE: case FEAT_BRANCH_STACK:
		return false;
	default:
		return true;
	}
}

/* The input's build-id table, kept in the output's (modules hit are added at the end). */
static int carry_build_ids(struct inject *in, const uint8_t *p, size_t size)
{
	size_t off = 0;
	struct perf_bid_entry e;
	while (perf_bid_next(p, size, &off, &e)) {
		int err = perf_writer_add_buildid(in->w, e.path, e.id, e.len, e.kernel);
		if (err)
			return err;
	}
	return 0;
}

static int carry_features(struct inject *in)
{
	for (unsigned bit = 1; bit < FEAT_LAST; bit++) {
		size_t n;
		const uint8_t *p = perf_reader_feature(in->r, bit, &n);
		if (!p)
			continue;
		int err = 0;
		if (bit == FEAT_BUILD_ID)
			err = carry_build_ids(in, p, n);
		else if (feature_carried(bit))
			err = perf_writer_set_feature(in->w, bit, p, n);
		if (err)
			return err;
	}
	return 0;
}

/* The switch-out event as perf record --off-cpu names its samples: offcpu-time, a software
 * event (PERF_COUNT_SW_BPF_OUTPUT, as perf's), sample_period the sampling of switches (1: every
 * one; N: one in N, the periods scaled by N), no frequency, no switch records. */
static void offcpu_attr(uint8_t *raw)
{
	uint32_t type = 1;
	uint64_t config = 10, flags;
	memcpy(raw, &type, 4);
	memcpy(raw + 8, &config, 8);
	memcpy(&flags, raw + 40, 8);
	flags &= ~((1ull << 10) | (1ull << 26)); /* freq, context_switch */
	memcpy(raw + 40, &flags, 8);
}

static int add_attrs(struct inject *in)
{
	if (in->attrs_done)
		return 0;
	in->attrs_done = true;
	int ferr = carry_features(in);
	if (ferr)
		return ferr;
	size_t n;
	const struct perf_attr *a = perf_reader_attrs(in->r, &n);
	in->out_type = calloc(n ? n : 1, sizeof(*in->out_type));
	if (!in->out_type)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		uint8_t raw[PERF_ATTR_MAX] = { 0 };
		uint32_t size = 128; /* PERF_ATTR_SIZE_VER7: what perf 5.13 to 6.2 expect in a file (newer ones read it) */
		memcpy(raw, a[i].raw, a[i].raw_size);
		uint64_t st = (a[i].sample_type & KEEP) | PS_CALLCHAIN, flags, zero = 0;
		if (in->oc && i == in->oc_attr)
			st |= PS_PERIOD; /* the time off the CPU */
		in->out_type[i] = st;
		memcpy(raw + 24, &st, 8);
		/* no register or stack copies; the whole chain is in the callchain */
		memcpy(&flags, raw + 40, 8);
		/* exclude_callchain_user; defer_callchain, defer_output (the chains are whole here) */
		flags &= ~((1ull << 22) | (1ull << 38) | (1ull << 39));
		memcpy(raw + 40, &flags, 8);
		memcpy(raw + 80, &zero, 8);
		memcpy(raw + 88, &zero, 4);
		const char *name = a[i].name;
		if (in->oc && i == in->oc_attr) {
			offcpu_attr(raw);
			name = "offcpu-time";
		}
		int err = perf_writer_add_attr(in->w, raw, size, name, a[i].ids, a[i].nids);
		if (err)
			return err;
	}
	return perf_writer_begin(in->w);
}

/* SWITCH, SWITCH_CPU_WIDE, EXIT and FORK records for off-CPU time: @return true when the record
 * is not to be written (the switches: perf's --off-cpu file has none). */
static bool offcpu_record(struct inject *in, const uint8_t *rec, uint32_t len, int *err)
{
	uint32_t type;
	uint16_t misc;
	memcpy(&type, rec, 4);
	memcpy(&misc, rec + 4, 2);
	if ((type == PR_EXIT || type == PR_FORK) && len >= 32) {
		uint32_t tid;
		uint64_t time;
		memcpy(&tid, rec + 16, 4);
		memcpy(&time, rec + 24, 8);
		offcpu_task(in->oc, tid, type == PR_EXIT, time);
		return false;
	}
	if (type == PR_COMM && (misc & PM_COMM_EXEC) && len >= 16 && in->oc_keyed) {
		/* exec: another program, whose waits are not given the old one's stacks (keyed) */
		uint32_t tid;
		memcpy(&tid, rec + 12, 4);
		offcpu_task(in->oc, tid, false, 0);
		return false;
	}
	size_t na;
	const struct perf_attr *a = perf_reader_attrs(in->r, &na);
	if (type == PR_UW_OFFCPU) {
		/* waits timed in the kernel, not walked: given to their key's stack (never written) */
		struct perf_sample_id sid;
		uint64_t v[4];
		if (in->oc_attr < na && len >= 8 + sizeof(v) &&
		    !perf_sample_id_decode(&a[in->oc_attr], rec + 8 + sizeof(v), len - 8 - sizeof(v), &sid) && sid.has_time) {
			memcpy(v, rec + 8, sizeof(v));
			struct offcpu_sum s = { .id = sid.id, .time = sid.time, .cpu = sid.cpu,
						.pid = sid.pid, .tid = sid.tid, .key = v[0], .ip = v[1], .ns = v[2], .n = v[3] };
			*err = offcpu_add(in->oc, &s);
		}
		return true;
	}
	if (type != PR_SWITCH && type != PR_SWITCH_CPU_WIDE)
		return false;
	size_t skip = type == PR_SWITCH_CPU_WIDE ? 8 : 0;
	struct perf_sample_id sid;
	if (in->oc_attr < na && len >= 8 + skip &&
	    !perf_sample_id_decode(&a[in->oc_attr], rec + 8 + skip, len - 8 - skip, &sid) && sid.has_time) {
		if (misc & PM_SWITCH_OUT)
			offcpu_switch_out_record(in->oc, sid.pid, sid.tid, sid.time);
		else
			*err = offcpu_switch_in(in->oc, sid.pid, sid.tid, sid.time);
	}
	return true;
}

static int on_record(void *ctx, const uint8_t *rec, uint32_t len)
{
	struct inject *in = ctx;
	int err = add_attrs(in);
	if (!err && in->oc && offcpu_record(in, rec, len, &err))
		return sink_failed(in, err);
	if (!err)
		err = perf_writer_record(in->w, rec, len);
	in->st.records_written++;
	in->st.bytes_out += len;
	return sink_failed(in, err);
}

static void put64(uint8_t *b, size_t *at, uint64_t v)
{
	memcpy(b + *at, &v, 8);
	*at += 8;
}

/* One sample written: the kept fields of ps, then the callchain (kernel addresses, then the
 * user pcs: upc[] as they are, or uf[] each at its return address - 1 when it is a caller). */
static int write_sample(struct inject *in, uint32_t attr_index, const struct perf_sample *ps, uint16_t misc,
                        const uint64_t *kernel, uint32_t nk, const struct uw_frame *uf, const uint64_t *upc,
                        uint32_t nu, uint8_t reason)
{
	uint64_t st = in->out_type[attr_index];
	size_t need = 8 + 8 * 12 + 8 * (2 + (size_t)nk + (size_t)nu + 2);
	if (need > 65535)
		need = 65535; /* a record's size is 16 bits: the chain is cut (outermost frames) */
	if (need > in->cap) {
		uint8_t *nb = realloc(in->rec, need);
		if (!nb)
			return -ENOMEM;
		in->rec = nb;
		in->cap = need;
	}
	uint8_t *b = in->rec;
	size_t at = 8;
	if (st & PS_IDENTIFIER)
		put64(b, &at, ps->id);
	if (st & PS_IP)
		put64(b, &at, ps->ip);
	if (st & PS_TID)
		put64(b, &at, (uint64_t)ps->tid << 32 | ps->pid);
	if (st & PS_TIME)
		put64(b, &at, ps->time);
	if (st & PS_ADDR)
		put64(b, &at, ps->addr);
	if (st & PS_ID)
		put64(b, &at, ps->id);
	if (st & PS_STREAM_ID)
		put64(b, &at, ps->stream_id);
	if (st & PS_CPU)
		put64(b, &at, ps->cpu);
	if (st & PS_PERIOD)
		put64(b, &at, ps->period);
	size_t nr_at = at, nr = 0, markers = 0, room = (need - at - 8) / 8;
	at += 8;
	if (nk && nr + 1 < room) {
		put64(b, &at, PC_KERNEL);
		nr++;
		markers++;
		for (uint32_t i = 0; i < nk && nr < room; i++, nr++)
			put64(b, &at, kernel[i]);
	}
	if (nu && nr + 1 < room) {
		put64(b, &at, PC_USER);
		nr++;
		markers++;
		for (uint32_t i = 0; i < nu && nr < room; i++, nr++)
			put64(b, &at, upc ? upc[i] : uf[i].pc - uf[i].is_call);
	}
	memcpy(b + nr_at, &nr, 8);
	/* (perf's --max-stack counts frames, not the context markers) */
	if (nr - markers > in->st.max_stack)
		in->st.max_stack = nr - markers;
	uint32_t type = PR_SAMPLE;
	uint16_t size = (uint16_t)at;
	memcpy(b, &type, 4);
	memcpy(b + 4, &misc, 2);
	memcpy(b + 6, &size, 2);
	in->st.samples_written++;
	in->st.bytes_out += at;
	int err = perf_writer_record(in->w, b, at);
	perf_writer_sample(in->w, (st & PS_TIME) != 0, ps->time, reason);
	return err;
}

/* An offcpu-time sample from the pairing (offcpu.c). */
static int emit_offcpu(void *ctx, const struct offcpu_stack *s)
{
	struct inject *in = ctx;
	struct perf_sample ps = { .id = s->id, .ip = s->ip, .time = s->time, .period = s->period, .cpu = s->cpu,
				  .pid = s->pid, .tid = s->tid };
	return write_sample(in, in->oc_attr, &ps, s->misc, s->chain, s->nk, NULL, s->chain + s->nk, s->nu, s->reason);
}

/* A switch-out sample: its chain (as it will be written) held until the thread runs again. */
static int hold_switch_out(struct inject *in, const struct uw_sample *smp, const struct perf_sample *ps, uint16_t misc)
{
	uint32_t n = smp->nr_kernel + smp->nr_user;
	if (n > in->oc_cap) {
		uint64_t *nc = realloc(in->oc_chain, (size_t)n * sizeof(*nc));
		if (!nc)
			return -ENOMEM;
		in->oc_chain = nc;
		in->oc_cap = n;
	}
	if (smp->nr_kernel)
		memcpy(in->oc_chain, smp->kernel, (size_t)smp->nr_kernel * sizeof(uint64_t));
	for (uint32_t i = 0; i < smp->nr_user; i++)
		in->oc_chain[smp->nr_kernel + i] = smp->user[i].pc - smp->user[i].is_call;
	struct offcpu_stack s = { .id = ps->id, .ip = ps->ip, .time = ps->time, .cpu = ps->cpu, .pid = ps->pid,
				  .tid = ps->tid, .misc = misc, .reason = smp->stop_reason, .nk = smp->nr_kernel,
				  .nu = smp->nr_user, .chain = in->oc_chain,
				  /* (waits timed in the kernel: a walk's period is its key) */
				  .key = in->oc_keyed && smp->period > 1 ? smp->period : 0 };
	return offcpu_switch_out(in->oc, &s);
}

static int on_sample(void *ctx, const struct uw_sample *smp)
{
	struct inject *in = ctx;
	int err = add_attrs(in);
	if (err)
		return sink_failed(in, err);
	in->st.samples++;
	uint32_t rlen;
	const uint8_t *raw = perf_reader_current_sample(in->r, &rlen);
	size_t na;
	const struct perf_attr *attrs = perf_reader_attrs(in->r, &na);
	if (!raw || smp->attr_index >= na)
		return 0;
	const struct perf_attr *a = &attrs[smp->attr_index];
	struct perf_sample ps;
	if (perf_sample_decode(a, raw + 8, rlen - 8, &ps))
		return 0;
	uint16_t misc;
	memcpy(&misc, raw + 4, 2);
	if (in->oc && smp->attr_index == in->oc_attr)
		return sink_failed(in, hold_switch_out(in, smp, &ps, misc));
	err = write_sample(in, smp->attr_index, &ps, misc, smp->kernel, smp->nr_kernel, smp->user, NULL, smp->nr_user,
			   smp->stop_reason);
	return sink_failed(in, err);
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* A build-id given in hex, into the writer's table. */
static int add_bid(struct perf_writer *w, const char *path, const char *hex, bool kernel)
{
	size_t hl = hex ? strlen(hex) : 0;
	uint8_t id[20];
	if (hl < 2 || hl % 2 || hl > 40)
		return 0;
	for (size_t i = 0; i < hl / 2; i++) {
		int h = hexval(hex[2 * i]), l = hexval(hex[2 * i + 1]);
		if (h < 0 || l < 0)
			return 0;
		id[i] = (uint8_t)(h << 4 | l);
	}
	return perf_writer_add_buildid(w, path, id, hl / 2, kernel);
}

/* A module a frame of the recording landed in, with a build-id: into the output's table. */
static int collect_module(void *ctx, struct uw_module *m)
{
	struct inject *in = ctx;
	if (uw_module_state(m) != UW_MODULE_MISSING || uw_module_build_id(m)[0])
		if (tracker_module_was_hit(uw_reader_tracker(in->r), m) && m->build_id[0] && !m->jit)
			add_bid(in->w, m->path, m->build_id, false);
	return 0;
}

int cc_sink_new(struct uw_session *s, const char *out_path, struct cc_sink **out)
{
	struct inject *in = calloc(1, sizeof(*in));
	if (!in)
		return -ENOMEM;
	in->s = s;
	in->path = strdup(out_path);
	int err = in->path ? perf_writer_open(out_path, &in->w) : -ENOMEM;
	if (err) {
		free(in->path);
		free(in);
		return base_err(&s->log, err, "%s: %s", out_path, uw_strerror(err));
	}
	*out = (struct cc_sink *)in;
	return 0;
}

static uint64_t held_oldest(void *ctx, uint64_t *newest)
{
	const struct inject *in = ctx;
	*newest = 0;
	return in->r ? perf_reader_held_oldest(in->r, newest) : UINT64_MAX;
}

void cc_sink_attach(struct cc_sink *k, struct uw_reader *r)
{
	struct inject *in = (struct inject *)k;
	in->r = r;
	perf_reader_set_record_fn(r, on_record, in);
	/* samples the reader holds (stitching, deferred callchains) are written late: round
	 * markers wait for them */
	perf_writer_round_gate(in->w, held_oldest, in);
}

int cc_sink_record(struct cc_sink *k, const uint8_t *rec, uint32_t len)
{
	return on_record(k, rec, len);
}

int cc_sink_on_sample(void *ctx, const struct uw_sample *smp)
{
	return on_sample(ctx, smp);
}

struct perf_writer *cc_sink_writer(struct cc_sink *k)
{
	return ((struct inject *)k)->w;
}

int cc_sink_sync(struct cc_sink *k)
{
	struct inject *in = (struct inject *)k;
	return sink_failed(in, perf_writer_sync(in->w));
}

int cc_sink_publish(struct cc_sink *k)
{
	struct inject *in = (struct inject *)k;
	int err = add_attrs(in);
	if (!err)
		err = perf_writer_sync(in->w);
	if (!err)
		err = perf_writer_publish(in->w);
	return sink_failed(in, err);
}

int cc_sink_error(const struct cc_sink *k)
{
	return k ? ((const struct inject *)k)->err : 0;
}

int cc_sink_finish(struct cc_sink *k)
{
	struct inject *in = (struct inject *)k;
	int err = add_attrs(in);
	if (err)
		return err;
	/* (modules a recording unloaded on its way, idle too long, are still listed) */
	if (in->r)
		uw_session_foreach_module(in->s, collect_module, in);
	/* the recording's kernel */
	const char *kb = in->r ? tracker_build_id(uw_reader_tracker(in->r), "[kernel.kallsyms]", 17) : NULL;
	add_bid(in->w, "[kernel.kallsyms]", kb, true);
	return sink_failed(in, perf_writer_finish(in->w));
}

void cc_sink_free(struct cc_sink *k, struct uw_inject_stats *stats)
{
	struct inject *in = (struct inject *)k;
	if (!in)
		return;
	if (stats && stats->sz >= sizeof(size_t)) {
		size_t sz = stats->sz;
		memcpy(stats, &in->st, UW_MIN(sz, sizeof(in->st)));
		stats->sz = sz;
	}
	perf_writer_close(in->w);
	free(in->path);
	free(in->out_type);
	free(in->rec);
	free(in->oc_chain);
	offcpu_free(in->oc);
	free(in);
}

int cc_sink_offcpu(struct cc_sink *k, const struct offcpu_opts *o, uint32_t attr_index)
{
	struct inject *in = (struct inject *)k;
	in->oc = offcpu_new(o, emit_offcpu, in);
	in->oc_attr = attr_index;
	in->oc_keyed = o->keyed;
	return in->oc ? 0 : -ENOMEM;
}

int cc_sink_offcpu_finish(struct cc_sink *k, uint64_t end, struct offcpu_stats *st)
{
	struct inject *in = (struct inject *)k;
	if (!in || !in->oc)
		return 0;
	int err = add_attrs(in);
	if (!err)
		err = offcpu_finish(in->oc, end);
	if (st)
		offcpu_stats(in->oc, st);
	return sink_failed(in, err);
}

UW_API int uw_inject(struct uw_session *s, const char *in_path, const char *out_path,
                     const struct uw_inject_opts *opts, struct uw_inject_stats *stats)
{
	struct uw_inject_opts o;
	int oe = BASE_OPTS_COPY(&o, uw_inject_opts, stitch, opts);
	if (oe)
		return oe;
	if (!s || !in_path || !out_path)
		return -EINVAL;
	struct cc_sink *k;
	int err = cc_sink_new(s, out_path, &k);
	if (err)
		return err;
	UW_OPTS(uw_reader_opts, ro, .on_sample = cc_sink_on_sample, .ctx = k, .max_queue_bytes = o.max_queue_bytes,
		.max_kernel_frames = o.max_kernel_frames, .stitch = o.stitch);
	struct uw_reader *r = uw_reader_open(s, in_path, &ro);
	if (!r) {
		err = -errno;
		cc_sink_free(k, NULL);
		return err;
	}
	cc_sink_attach(k, r);
	err = uw_reader_run(r);
	if (err == -UW_ECANCELED && cc_sink_error(k))
		err = cc_sink_error(k); /* the writing failed (said): not the reader's doing */
	if (!err)
		err = cc_sink_finish(k);
	struct uw_reader_stats rs = { .sz = sizeof(rs) };
	uw_reader_stats(r, &rs);
	((struct inject *)k)->st.bytes_in = rs.bytes;
	uw_reader_free(r);
	cc_sink_free(k, stats);
	return err;
}
