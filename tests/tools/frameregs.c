/* SPDX-License-Identifier: MIT */
/*
 * The tracker API a live profiler needs (issue 25), from the public header alone:
 *  - uw_unwind_sample_walk: each frame's registers (uw_frame_reg), the same frames as
 *    uw_unwind_sample; frame 0 has the sample's registers, caller frames rip = pc and
 *    rsp = sp, caller-saved registers unknown;
 *  - UW_STOP_CALLBACK: a callback that stops the walk (each and walk forms) says so, with the
 *    frame it stopped at counted; its name;
 *  - uw_tracker_comm_of: threads' names through COMM, FORK, exec and EXIT;
 *  - UW_REGS_ABI_* and the one register-mask call.
 * The stacks are the program's own (registers and a stack copy, as the kernel takes them).
 *
 * usage: frameregs    (one line per check; exit 1 at the end when one was wrong)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <unwound/unwound.h>

static int failed;

static void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#include <stdarg.h>
static void check(int ok, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char msg[512];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	printf("%s: %s\n", ok ? "ok" : "WRONG", msg);
	if (!ok) {
		fprintf(stderr, "frameregs: wrong: %s\n", msg);
		failed = 1;
	}
}

/* perf's x86_64 register numbers */
enum { R_AX = 0, R_BX = 1, R_BP = 6, R_SP = 7, R_IP = 8, R_12 = 20, R_13 = 21, R_14 = 22, R_15 = 23 };
#define MASK                                                                                                     \
	((1ull << R_AX) | (1ull << R_BX) | (1ull << R_BP) | (1ull << R_SP) | (1ull << R_IP) | (1ull << R_12) |    \
	 (1ull << R_13) | (1ull << R_14) | (1ull << R_15))

struct snapshot {
	uint64_t regs[9]; /* AX BX BP SP IP R12 R13 R14 R15 */
	uint8_t stack[16384];
	uint64_t stack_size;
};
static struct snapshot snap;
static uint64_t stack_top;

#ifdef __clang__
#define FRAME __attribute__((noinline))
#else
#define FRAME __attribute__((noinline, noclone))
#endif

__attribute__((no_sanitize_address)) static void copy_stack(uint8_t *dst, uint64_t src, uint64_t n)
{
	const volatile uint8_t *p = (const volatile uint8_t *)(uintptr_t)src;
	for (uint64_t i = 0; i < n; i++)
		dst[i] = p[i];
}

FRAME static void capture(struct snapshot *s)
{
	uint64_t *r = s->regs;
	__asm__ volatile("mov %%rax, 0(%0)\n\t"
			 "mov %%rbx, 8(%0)\n\t"
			 "mov %%rbp, 16(%0)\n\t"
			 "mov %%rsp, 24(%0)\n\t"
			 "lea 0(%%rip), %%rax\n\t"
			 "mov %%rax, 32(%0)\n\t"
			 "mov %%r12, 40(%0)\n\t"
			 "mov %%r13, 48(%0)\n\t"
			 "mov %%r14, 56(%0)\n\t"
			 "mov %%r15, 64(%0)\n\t"
			 :
			 : "r"(r)
			 : "rax", "memory");
	uint64_t sp = r[3], n = stack_top - sp;
	s->stack_size = n < sizeof(s->stack) ? n : sizeof(s->stack);
	copy_stack(s->stack, sp, s->stack_size);
}

FRAME static void inner(struct snapshot *s)
{
	capture(s);
	__asm__ volatile("" ::: "memory");
}

FRAME static void middle(struct snapshot *s)
{
	inner(s);
	__asm__ volatile("" ::: "memory");
}

FRAME static void outer(struct snapshot *s)
{
	middle(s);
	__asm__ volatile("" ::: "memory");
}

static int feed_mappings(struct uw_tracker *t, uint32_t pid)
{
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return -1;
	char line[4096 + 256], perms[8], path[4096];
	unsigned long long start, end, off, ino;
	unsigned maj, min;
	while (fgets(line, sizeof(line), f)) {
		path[0] = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %4095[^\n]", &start, &end, perms, &off, &maj, &min, &ino,
			   path) < 7)
			continue;
		if (!strcmp(path, "[stack]"))
			stack_top = end;
		if (perms[2] != 'x')
			continue;
		UW_OPTS(uw_mmap_event, ev, .pid = pid, .tid = pid, .addr = start, .len = end - start, .pgoff = off,
			.prot = PROT_READ | PROT_EXEC, .flags = MAP_PRIVATE, .maj = maj, .min = min, .ino = ino,
			.path = path[0] ? path : "//anon");
		if (uw_tracker_mmap(t, &ev))
			return -1;
	}
	fclose(f);
	return 0;
}

#define MAXF 64
struct seen {
	unsigned n, stop_at;
	struct uw_frame f[MAXF];
	int known[MAXF][17];
	uint64_t val[MAXF][17];
};

static int on_walk(void *ctx, const struct uw_frame *f, const struct uw_frame_regs *regs)
{
	struct seen *s = ctx;
	if (s->n < MAXF) {
		s->f[s->n] = *f;
		for (unsigned r = 0; r < 17; r++)
			s->known[s->n][r] = uw_frame_reg(regs, r, &s->val[s->n][r]) == 0;
	}
	s->n++;
	return s->stop_at && s->n == s->stop_at;
}

static int on_each(void *ctx, const struct uw_frame *f)
{
	struct seen *s = ctx;
	(void)f;
	s->n++;
	return s->stop_at && s->n == s->stop_at;
}

static void test_walk(struct uw_tracker *t, uint32_t pid)
{
	outer(&snap);
	UW_OPTS(uw_sample_regs, in, .pid = pid, .tid = pid, .time = UINT64_MAX, .abi = UW_REGS_ABI_64,
		.regs = snap.regs, .regs_mask = MASK, .stack = snap.stack, .stack_size = snap.stack_size);
	struct uw_frame frames[MAXF];
	UW_OPTS(uw_unwind_result, res);
	int e = uw_unwind_sample(t, &in, frames, MAXF, &res);
	check(!e && res.nr_frames >= 5 && res.stop == UW_STOP_END_OF_STACK,
	      "uw_unwind_sample: %d, %u frames, stop %s (at least capture, inner, middle, outer, main to the root)", e,
	      res.nr_frames, uw_stop_reason_str(res.stop));

	static struct seen s;
	memset(&s, 0, sizeof(s));
	UW_OPTS(uw_unwind_result, wr);
	e = uw_unwind_sample_walk(t, &in, on_walk, &s, &wr);
	check(!e && s.n == res.nr_frames && wr.nr_frames == res.nr_frames && wr.stop == res.stop,
	      "uw_unwind_sample_walk: %d, %u frames seen, %u counted, stop %s: as uw_unwind_sample", e, s.n,
	      wr.nr_frames, uw_stop_reason_str(wr.stop));
	unsigned same = 0;
	for (unsigned i = 0; i < s.n && i < res.nr_frames; i++)
		same += s.f[i].pc == frames[i].pc && s.f[i].sp == frames[i].sp && s.f[i].method == frames[i].method &&
			s.f[i].module == frames[i].module && s.f[i].rel_pc == frames[i].rel_pc;
	check(same == res.nr_frames, "walk frames equal uw_unwind_sample's: %u of %u", same, res.nr_frames);
	/* frame 0: the sample's registers, exactly */
	static const struct {
		unsigned dwarf, slot;
		const char *name;
	} f0[] = { { UW_REG_X86_64_RAX, 0, "rax" }, { UW_REG_X86_64_RBX, 1, "rbx" }, { UW_REG_X86_64_RBP, 2, "rbp" },
		   { UW_REG_X86_64_RSP, 3, "rsp" }, { UW_REG_X86_64_RIP, 4, "rip" }, { UW_REG_X86_64_R12, 5, "r12" },
		   { UW_REG_X86_64_R15, 8, "r15" } };
	for (size_t k = 0; k < sizeof(f0) / sizeof(f0[0]); k++)
		check(s.known[0][f0[k].dwarf] && s.val[0][f0[k].dwarf] == snap.regs[f0[k].slot],
		      "frame 0 %s: known %d, %#" PRIx64 " (sampled %#" PRIx64 ")", f0[k].name, s.known[0][f0[k].dwarf],
		      s.val[0][f0[k].dwarf], snap.regs[f0[k].slot]);
	check(!s.known[0][UW_REG_X86_64_RCX], "frame 0 rcx: not sampled, unknown (known %d)", s.known[0][UW_REG_X86_64_RCX]);
	/* caller frames: rip is the pc, rsp the sp, caller-saved registers unknown */
	for (unsigned i = 1; i < s.n && i < MAXF; i++) {
		check(s.known[i][UW_REG_X86_64_RIP] && s.val[i][UW_REG_X86_64_RIP] == s.f[i].pc &&
			      s.known[i][UW_REG_X86_64_RSP] && s.val[i][UW_REG_X86_64_RSP] == s.f[i].sp,
		      "frame %u (%s): rip %#" PRIx64 " = pc %#" PRIx64 ", rsp %#" PRIx64 " = sp %#" PRIx64, i,
		      uw_frame_method_str(s.f[i].method), s.val[i][UW_REG_X86_64_RIP], s.f[i].pc,
		      s.val[i][UW_REG_X86_64_RSP], s.f[i].sp);
		check(!s.known[i][UW_REG_X86_64_RAX] && !s.known[i][UW_REG_X86_64_RCX] && !s.known[i][UW_REG_X86_64_R11],
		      "frame %u: rax, rcx, r11 unknown (caller-saved)", i);
		/* the CFA of frame i-1 is frame i's sp: above it */
		check(s.f[i].sp > s.f[i - 1].sp, "frame %u: sp %#" PRIx64 " above frame %u's %#" PRIx64, i, s.f[i].sp,
		      i - 1, s.f[i - 1].sp);
	}
	/* frame 1 (inner, by CFI from capture): rbx and r12-r15 unchanged by capture (it saves
	 * none of them, or restores them): the sampled values */
	if (s.n > 1 && s.f[1].method == UW_METHOD_CFI)
		check(s.known[1][UW_REG_X86_64_RBX] && s.val[1][UW_REG_X86_64_RBX] == snap.regs[1],
		      "frame 1 rbx (callee-saved, by CFI): %#" PRIx64 " = sampled %#" PRIx64, s.val[1][UW_REG_X86_64_RBX],
		      snap.regs[1]);
	uint64_t v;
	check(uw_frame_reg(NULL, 0, &v) == -EINVAL, "uw_frame_reg(NULL): -EINVAL");

	/* stopping from the callback: its own reason, the frame counted */
	memset(&s, 0, sizeof(s));
	s.stop_at = 3;
	e = uw_unwind_sample_walk(t, &in, on_walk, &s, &wr);
	check(!e && s.n == 3 && wr.nr_frames == 3 && wr.stop == UW_STOP_CALLBACK,
	      "walk stopped at frame 3: %d, %u seen, nr_frames %u, stop \"%s\" (UW_STOP_CALLBACK)", e, s.n, wr.nr_frames,
	      uw_stop_reason_str(wr.stop));
	struct seen *es = calloc(1, sizeof(*es));
	es->stop_at = 2;
	UW_OPTS(uw_unwind_result, er);
	e = uw_unwind_sample_each(t, &in, on_each, es, &er);
	check(!e && es->n == 2 && er.nr_frames == 2 && er.stop == UW_STOP_CALLBACK,
	      "each stopped at frame 2: %d, nr_frames %u, stop \"%s\" (UW_STOP_CALLBACK, not the frame limit)", e,
	      er.nr_frames, uw_stop_reason_str(er.stop));
	check(!strcmp(uw_stop_reason_str(UW_STOP_CALLBACK), "stopped by the callback") &&
		      strcmp(uw_stop_reason_str(UW_STOP_MAX_FRAMES), uw_stop_reason_str(UW_STOP_CALLBACK)),
	      "UW_STOP_CALLBACK is \"%s\"", uw_stop_reason_str(UW_STOP_CALLBACK));
	/* the frame limit stays the frame limit */
	e = uw_unwind_sample(t, &in, frames, 2, &res);
	check(!e && res.nr_frames == 2 && res.stop == UW_STOP_MAX_FRAMES, "cap 2: %u frames, stop %s", res.nr_frames,
	      uw_stop_reason_str(res.stop));
	free(es);
}

static void test_comm(struct uw_tracker *t)
{
	uw_tracker_comm(t, 100, 100, "main", 1, 10);
	uw_tracker_fork(t, 100, 100, 100, 101, 11); /* a thread */
	uw_tracker_comm(t, 100, 101, "worker", 0, 12);
	uw_tracker_fork(t, 100, 100, 200, 200, 13); /* a process */
	const char *c200 = uw_tracker_comm_of(t, 200, 200);
	check(c200 && !strcmp(c200, "main"), "forked process before its exec: \"%s\" (its parent's)", c200 ? c200 : "(null)");
	uw_tracker_comm(t, 200, 200, "child", 1, 14);
	const char *m = uw_tracker_comm_of(t, 100, 100), *w = uw_tracker_comm_of(t, 100, 101),
		   *u = uw_tracker_comm_of(t, 100, 102), *c = uw_tracker_comm_of(t, 200, 200),
		   *none = uw_tracker_comm_of(t, 300, 300);
	check(m && !strcmp(m, "main"), "comm_of(100, 100) = \"%s\"", m ? m : "(null)");
	check(w && !strcmp(w, "worker"), "comm_of(100, 101) = \"%s\"", w ? w : "(null)");
	check(u && !strcmp(u, "main"), "comm_of(100, 102), a thread no event named: \"%s\" (its process's)",
	      u ? u : "(null)");
	check(c && !strcmp(c, "child"), "comm_of(200, 200) after exec = \"%s\"", c ? c : "(null)");
	check(!none, "comm_of(300, 300), unknown: NULL");
	uw_tracker_comm(t, 100, 101, "renamed", 0, 15);
	const char *w2 = uw_tracker_comm_of(t, 100, 101);
	check(w2 && !strcmp(w2, "renamed") && !strcmp(w, "worker"),
	      "after a later COMM: \"%s\", the string returned before still \"%s\"", w2 ? w2 : "(null)", w);
	uw_tracker_exit(t, 200, 200, 16);
	uw_tracker_sweep(t, 16 + 5000000000ull);
	const char *gone = uw_tracker_comm_of(t, 200, 200);
	check(!gone, "comm_of(200, 200) once exited and forgotten: %s", gone ? gone : "NULL");
	check(!uw_tracker_comm_of(NULL, 1, 1), "comm_of(NULL tracker): NULL");
}

int main(void)
{
	struct uw_session *s = uw_session_new(NULL);
	struct uw_tracker *t = s ? uw_tracker_new(s, NULL) : NULL;
	if (!t)
		return 1;
	uint32_t pid = (uint32_t)getpid();
	if (feed_mappings(t, pid) || !stack_top)
		return 1;
	check(UW_REGS_ABI_NONE == 0 && UW_REGS_ABI_32 == 1 && UW_REGS_ABI_64 == 2,
	      "UW_REGS_ABI_* are perf's PERF_SAMPLE_REGS_ABI_* values");
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	uint64_t old = uw_perf_regs_user_mask();
#pragma GCC diagnostic pop
	check(uw_regs_mask(UW_ARCH_X86_64) == old && old && uw_regs_mask(UW_ARCH_NONE) == 0,
	      "uw_regs_mask(UW_ARCH_X86_64) = %#" PRIx64 " = the deprecated uw_perf_regs_user_mask()",
	      uw_regs_mask(UW_ARCH_X86_64));
	test_walk(t, pid);
	struct uw_tracker *t2 = uw_tracker_new(s, NULL);
	test_comm(t2);
	uw_tracker_free(t2);
	uw_tracker_free(t);
	uw_session_free(s);
	return failed;
}
