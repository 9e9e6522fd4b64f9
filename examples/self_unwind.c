/* SPDX-License-Identifier: MIT */
/*
 * A program that unwinds its own stack with the tracker API: it tells a tracker its executable
 * mappings (uw_tracker_mmap, from /proc/self/maps), captures its registers and a copy of its
 * stack the way the kernel would for a sample, and hands them to uw_unwind_sample. The frames
 * are then named with uw_symbolize_frames. No perf, no frame pointers needed.
 *
 * Output: one line per frame, innermost first (function name, or the reason it has none), then
 * "stop: REASON".
 *
 * Build: cmake with find_package(unwound) and target_link_libraries(self_unwind unwound::unwound)
 * (examples/CMakeLists.txt).
 */
#include <asm/perf_regs.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <unwound/unwound.h>

/* What a PERF_SAMPLE_REGS_USER / PERF_SAMPLE_STACK_USER sample holds */
struct snapshot {
	uint64_t regs[9];    /* in perf's bit order of MASK below */
	uint8_t stack[32768];
	uint64_t stack_size;
};

#define MASK                                                                                                    \
	((1ull << PERF_REG_X86_BX) | (1ull << PERF_REG_X86_BP) | (1ull << PERF_REG_X86_SP) |                      \
	 (1ull << PERF_REG_X86_IP) | (1ull << PERF_REG_X86_R12) | (1ull << PERF_REG_X86_R13) |                    \
	 (1ull << PERF_REG_X86_R14) | (1ull << PERF_REG_X86_R15))

static uint64_t stack_top; /* the end of the [stack] mapping */

/* frames of their own, under their own names */
#ifdef __clang__
#define FRAME __attribute__((noinline))
#else
#define FRAME __attribute__((noinline, noclone))
#endif

/* The stack as the kernel copies it for a sample: bytes, whatever they hold (a sanitizer's
 * poisoned red zones too: a profiler reads what is there) */
__attribute__((no_sanitize_address)) static void copy_stack(uint8_t *dst, uint64_t src, uint64_t n)
{
	const volatile uint8_t *p = (const volatile uint8_t *)(uintptr_t)src;
	for (uint64_t i = 0; i < n; i++)
		dst[i] = p[i];
}

/* The registers at a point of this function (bit order: BX BP SP IP R12 R13 R14 R15), then the
 * stack from the stack pointer up. */
FRAME static void capture(struct snapshot *s)
{
	uint64_t *r = s->regs;
	__asm__ volatile("mov %%rbx, 0(%0)\n\t"
			 "mov %%rbp, 8(%0)\n\t"
			 "mov %%rsp, 16(%0)\n\t"
			 "lea 0(%%rip), %%rax\n\t" /* the pc: this instruction's successor */
			 "mov %%rax, 24(%0)\n\t"
			 "mov %%r12, 32(%0)\n\t"
			 "mov %%r13, 40(%0)\n\t"
			 "mov %%r14, 48(%0)\n\t"
			 "mov %%r15, 56(%0)\n\t"
			 :
			 : "r"(r)
			 : "rax", "memory");
	uint64_t sp = r[2], n = stack_top - sp;
	s->stack_size = n < sizeof(s->stack) ? n : sizeof(s->stack);
	copy_stack(s->stack, sp, s->stack_size);
}

FRAME static void inner(struct snapshot *s)
{
	capture(s);
	__asm__ volatile("" ::: "memory"); /* (not a tail call) */
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

/* Every executable mapping of this process, into the tracker. */
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

int main(void)
{
	struct uw_session *s = uw_session_new(NULL);
	struct uw_tracker *t = s ? uw_tracker_new(s, NULL) : NULL;
	if (!t)
		return 1;
	uint32_t pid = (uint32_t)getpid();
	uw_tracker_comm(t, pid, pid, "self_unwind", 1, 0);
	if (feed_mappings(t, pid) || !stack_top)
		return 1;

	static struct snapshot snap;
	outer(&snap);

	UW_OPTS(uw_sample_regs, in, .pid = pid, .tid = pid, .time = UINT64_MAX, .abi = UW_REGS_ABI_64,
		.regs = snap.regs, .regs_mask = MASK, .stack = snap.stack, .stack_size = snap.stack_size);
	struct uw_frame frames[64];
	UW_OPTS(uw_unwind_result, res);
	if (uw_unwind_sample(t, &in, frames, 64, &res))
		return 1;

	UW_OPTS(uw_symbolize_opts, so);
	struct uw_symbols *syms;
	if (uw_symbolize_frames(s, frames, res.nr_frames, &so, &syms))
		return 1;
	for (size_t i = 0; i < syms->count; i++) {
		const struct uw_symbolized *y = &syms->syms[i];
		printf("%s\n", y->name ? y->name : uw_sym_reason_str(y->reason));
	}
	printf("stop: %s\n", uw_stop_reason_str(res.stop));
	uw_symbols_free(syms);
	uw_tracker_free(t);
	uw_session_free(s);
	return 0;
}
