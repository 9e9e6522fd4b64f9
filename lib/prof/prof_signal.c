/* SPDX-License-Identifier: MIT */
/*
 * The signal handler and the per-thread rings: the only code of the library that runs in
 * signal context. Everything the handler calls is async-signal-safe (POSIX.1-2008 §2.4.3:
 * clock_gettime, pthread_sigmask; and write, process_vm_readv and prctl, plain system calls);
 * it allocates nothing,
 * takes no lock, and reads memory only within a stack it knows to be mapped:
 *  - the thread's own stack, [lo, hi) from pthread_getattr_np when the thread registered
 *    itself (prof_threads.c), or the main thread's mapping;
 *  - the alternate signal stack the interrupted code ran on: the kernel saves the thread's
 *    sigaltstack settings in the signal's ucontext (uc_stack: include/linux/signal.h,
 *    unsafe_save_altstack; the flags are the settings', SS_ONSTACK is not set there), so an
 *    interrupted stack pointer inside it is on it (with SS_AUTODISARM the settings are cleared
 *    while a handler runs there: the kernel copies those);
 *  - anywhere else (a thread whose bounds are not known, a coroutine's stack), the kernel copies
 *    (process_vm_readv on the process itself, one page per iovec: the copy stops at the first
 *    page that is not mapped, where a load would fault).
 * The stack is copied with `rep movsb`, not memcpy: a sanitizer build must not check the
 * interrupted frames' stack memory (their redzones are poisoned) nor see these reads.
 *
 * A ring is single-producer (the thread's handler: a handler does not interrupt itself, the
 * signal being blocked while it runs) and single-consumer (the collector): head and tail count
 * bytes, a record never wraps (a PAD record fills the end of the space instead), a full ring
 * drops the sample and counts it.
 *
 * The slot a signal is for comes in its sigev_value (the timer's key: generation and index), so
 * the handler needs no thread-local storage and no lookup. A slot is freed (prof_threads.c)
 * only after live is cleared and busy seen at zero; the handler raises busy before it reads live:
 * both sides use sequentially consistent atomics (Dekker), so a handler either sees live cleared
 * or is waited for. busy is a count, not a flag: a signal of a deleted timer may run the handler
 * for a slot while its new owner's handler does too.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#include "prof/iprof.h"

struct iprof_global iprof_g = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.work_lock = PTHREAD_MUTEX_INITIALIZER,
	.sync_lock = PTHREAD_MUTEX_INITIALIZER,
	.sync_cond = PTHREAD_COND_INITIALIZER,
};

/* perf's register numbers to the ucontext's (glibc's REG_*); -1: not in a ucontext */
static const int perf_to_greg[IPROF_NREGS] = {
	REG_RAX, REG_RBX, REG_RCX, REG_RDX, REG_RSI, REG_RDI, REG_RBP, REG_RSP, REG_RIP, REG_EFL,
	-1, -1, -1, -1, -1, -1, /* CS SS DS ES FS GS */
	REG_R8, REG_R9, REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15,
};

static inline void copy_bytes(void *dst, const void *src, size_t n)
{
	__asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}

#define PAGE 4096u
#define VM_IOV 16u

/* The kernel copies [sp, sp + want) into dst up to the first page not mapped. @return bytes. */
IPROF_NO_TSAN static uint64_t copy_by_kernel(void *dst, uint64_t sp, uint64_t want)
{
	int pid = atomic_load_explicit(&iprof_g.pid, memory_order_relaxed);
	uint64_t done = 0;
	while (done < want) {
		struct iovec remote[VM_IOV];
		unsigned n = 0;
		uint64_t a = sp + done, end = sp + want, asked = 0;
		while (a < end && n < VM_IOV) {
			uint64_t next = (a / PAGE + 1) * PAGE;
			uint64_t len = (next < end ? next : end) - a;
			remote[n].iov_base = (void *)(uintptr_t)a;
			remote[n].iov_len = len;
			asked += len;
			a += len;
			n++;
		}
		struct iovec local = { (char *)dst + done, asked };
		/* (the system call itself: a sanitizer's interceptor of process_vm_readv is no place
		 * for a signal handler) */
		long got = syscall(SYS_process_vm_readv, pid, &local, 1ul, remote, (unsigned long)n, 0ul);
		if (got <= 0)
			break;
		done += (uint64_t)got;
		if ((uint64_t)got < asked)
			break;
	}
	return done;
}

/*
 * A signal of the same number from elsewhere goes to the program's handler, with the mask it
 * asked for, less the signal itself: the profiler's timers may interrupt its handler (its time
 * is sampled there, not at the point it returns to), and a signal of its own arriving meanwhile
 * is held back and handed to it when it returns, as the kernel would with the signal blocked
 * (unless it asked for SA_NODEFER).
 *
 * A handler may never return: it leaves by siglongjmp (or longjmp, or an exception), and the
 * state set around its call is never cleared by the code after it. So the state is not trusted
 * as it stands: every signal, the profiler's own too, first checks it against where the signal
 * interrupted the thread (chain_left). While the program's handler runs, whatever it interrupts
 * runs below the chain's frame on the same stack (the handler is called on the stack the chain
 * runs on), so an interrupted stack pointer at or above that frame says the call was left: the
 * state is cleared, and a signal held back meanwhile is handed over then (as the kernel delivers
 * a blocked one when siglongjmp restores the mask). The frame the chain ran in is no proof (a
 * chain entered at the same depth has the same frame: comparing the two, a program that
 * siglongjmps out of its handler to a loop had its handler called once, then never again).
 * Not seen: a handler left for a point deeper on the stack than the chain's frame; its next
 * signals are held back until one interrupts the thread above it.
 */
static _Thread_local int tls_chaining __attribute__((tls_model("initial-exec")));
static _Thread_local uintptr_t tls_chain_frame __attribute__((tls_model("initial-exec")));
static _Thread_local unsigned tls_deferred __attribute__((tls_model("initial-exec")));
static _Thread_local siginfo_t tls_deferred_si __attribute__((tls_model("initial-exec")));

static const struct sigaction sig_default = { .sa_handler = SIG_DFL };

IPROF_NO_TSAN static bool callable(const struct sigaction *a)
{
	if (!a)
		return false;
	if (a->sa_flags & SA_SIGINFO)
		return a->sa_sigaction != NULL;
	return a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN;
}

/* The chain's state, cleared when the interrupted stack pointer says the program's handler was
 * left (see above). @return true when a signal held back for it is to be handed over now. */
IPROF_NO_TSAN static bool chain_left(const void *ucv)
{
	if (!tls_chaining || !ucv)
		return false;
	uintptr_t sp = (uintptr_t)((const ucontext_t *)ucv)->uc_mcontext.gregs[REG_RSP];
	if (sp < tls_chain_frame)
		return false;
	tls_chaining = 0;
	tls_chain_frame = 0;
	return tls_deferred != 0;
}

static void chain_call(int sig, siginfo_t *si, void *uc);

IPROF_NO_TSAN static void chain(int sig, siginfo_t *si, void *uc)
{
	atomic_fetch_add_explicit(&iprof_g.foreign, 1, memory_order_relaxed);
	chain_call(sig, si, uc);
}

/* The signals held back for a handler that was left, to it now (the first of them, then the
 * others as chain_call goes on with them) */
IPROF_NO_TSAN static void chain_deferred(int sig, void *uc)
{
	siginfo_t si = tls_deferred_si;
	tls_deferred--;
	chain_call(sig, &si, uc);
}

IPROF_NO_TSAN static void chain_call(int sig, siginfo_t *si, void *uc)
{
	if (sig <= 0 || sig > 64)
		return;
	const struct sigaction *prev = atomic_load_explicit(&iprof_g.prev[sig], memory_order_acquire);
	/* SIG_DFL and SIG_IGN: dropped (the default action of SIGPROF ends the process) */
	if (!callable(prev))
		return;
	uintptr_t frame = (uintptr_t)__builtin_frame_address(0);
	if (tls_chaining && !(prev->sa_flags & SA_NODEFER)) {
		if (si)
			tls_deferred_si = *si;
		tls_deferred++;
		return;
	}
	int outer = tls_chaining;
	uintptr_t outer_frame = tls_chain_frame;
	tls_chaining = 1;
	tls_chain_frame = frame;
	sigset_t held, run;
	pthread_sigmask(SIG_SETMASK, NULL, &held); /* (the signal is blocked: we are its handler) */
	siginfo_t again;
	for (;;) {
		run = held;
		sigorset(&run, &run, &prev->sa_mask);
		sigdelset(&run, sig);
		if (prev->sa_flags & SA_RESETHAND)
			atomic_store_explicit(&iprof_g.prev[sig], &sig_default, memory_order_release);
		pthread_sigmask(SIG_SETMASK, &run, NULL);
		if (prev->sa_flags & SA_SIGINFO)
			prev->sa_sigaction(sig, si, uc);
		else
			prev->sa_handler(sig);
		pthread_sigmask(SIG_SETMASK, &held, NULL);
		if (!tls_deferred)
			break;
		tls_deferred--;
		again = tls_deferred_si;
		si = &again;
		prev = atomic_load_explicit(&iprof_g.prev[sig], memory_order_acquire);
		if (!callable(prev))
			break;
	}
	tls_deferred = 0;
	tls_chaining = outer;
	tls_chain_frame = outer_frame;
}

IPROF_NO_TSAN static void take_sample(struct iprof_slot *sl, const siginfo_t *si, ucontext_t *uc)
{
	struct iprof_ring *r = atomic_load_explicit(&sl->ring, memory_order_acquire);
	const greg_t *g = uc->uc_mcontext.gregs;
	uint64_t sp = (uint64_t)g[REG_RSP];
	uint64_t cap = atomic_load_explicit(&iprof_g.stack_bytes, memory_order_relaxed);
	uint8_t src;
	uint64_t want;
	uintptr_t ss = (uintptr_t)uc->uc_stack.ss_sp;
	uintptr_t lo = atomic_load_explicit(&sl->lo, memory_order_acquire);
	uintptr_t hi = atomic_load_explicit(&sl->hi, memory_order_acquire);
	if (!(uc->uc_stack.ss_flags & SS_DISABLE) && sp >= ss && sp < ss + uc->uc_stack.ss_size) {
		src = IPROF_STACK_ALT;
		want = ss + uc->uc_stack.ss_size - sp;
	} else if (hi && sp >= lo && sp < hi) {
		src = IPROF_STACK_THREAD;
		want = hi - sp;
	} else {
		src = IPROF_STACK_KERNEL;
		want = cap;
	}
	if (want > cap)
		want = cap;
	atomic_fetch_add_explicit(&sl->n_samples, 1, memory_order_relaxed);
	if (si->si_overrun > 0)
		atomic_fetch_add_explicit(&sl->n_overruns, (uint64_t)si->si_overrun, memory_order_relaxed);

	/* room: the record where it fits whole, after a PAD to the end of the space if need be */
	uint64_t need = sizeof(struct iprof_rec) + ((want + 7) & ~7ull);
	uint64_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
	uint64_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
	uint64_t off = h & (r->size - 1), contig = r->size - off;
	uint64_t pad = contig < need ? contig : 0;
	if (r->size - (h - t) < pad + need) {
		/* (the periods first: the collector reads n_dropped, then these) */
		atomic_fetch_add_explicit(&sl->n_dropped_periods, 1 + (si->si_overrun > 0 ? (uint64_t)si->si_overrun : 0),
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&sl->n_dropped, 1, memory_order_release);
		return;
	}
	if (pad) {
		struct iprof_rec *pr = (struct iprof_rec *)(void *)(r->data + off);
		pr->len = (uint32_t)pad;
		pr->kind = IPROF_REC_PAD;
		h += pad;
		off = 0;
	}
	struct iprof_rec *rec = (struct iprof_rec *)(void *)(r->data + off);
	rec->kind = IPROF_REC_SAMPLE;
	rec->gen = atomic_load_explicit(&iprof_g.gen, memory_order_acquire);
	rec->overrun = si->si_overrun > 0 ? (uint32_t)si->si_overrun : 0;
	struct timespec ts;
	rec->time = clock_gettime(CLOCK_MONOTONIC, &ts) ? 0 : (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	for (unsigned i = 0; i < IPROF_NREGS; i++)
		rec->regs[i] = perf_to_greg[i] >= 0 ? (uint64_t)g[perf_to_greg[i]] : 0;
	/* after `syscall` the kernel leaves the return pc in rcx too: the pc then follows the
	 * call's instruction (a restarted call has its pc moved back onto it, rcx unchanged) */
	rec->cpumode = g[REG_RCX] == g[REG_RIP] ? 1 : 2;
	rec->reserved = 0;
	/* the name now: a thread names itself after it starts, and may be gone when the collector
	 * gets to its samples */
	if (syscall(SYS_prctl, PR_GET_NAME, rec->comm, 0, 0, 0))
		rec->comm[0] = 0;
	rec->comm[15] = 0;
	uint64_t got = 0;
	if (src == IPROF_STACK_KERNEL) {
		got = copy_by_kernel(rec + 1, sp, want);
		if (!got)
			src = IPROF_STACK_NONE;
	} else {
		copy_bytes(rec + 1, (const void *)(uintptr_t)sp, want);
		got = want;
	}
	if (src == IPROF_STACK_KERNEL)
		atomic_fetch_add_explicit(&sl->n_kernel_copy, 1, memory_order_relaxed);
	else if (src == IPROF_STACK_NONE)
		atomic_fetch_add_explicit(&sl->n_no_copy, 1, memory_order_relaxed);
	else if (src == IPROF_STACK_ALT)
		atomic_fetch_add_explicit(&sl->n_altstack, 1, memory_order_relaxed);
	rec->src = src;
	rec->stack_size = (uint32_t)got;
	rec->len = (uint32_t)(sizeof(struct iprof_rec) + ((got + 7) & ~7ull));
	h += rec->len;
	atomic_store_explicit(&r->head, h, memory_order_release);
	/* half full: wake the collector (once until it drains) */
	if ((h - t) * 2 > r->size && !atomic_exchange_explicit(&r->wake, 1, memory_order_relaxed)) {
		/* (futex: a system call a signal handler may make; the collector wakes on its own
		 * within its period otherwise) */
		if (atomic_load_explicit(&iprof_g.waking, memory_order_acquire))
			iprof_wake();
	}
}

IPROF_NO_TSAN void iprof_handler(int sig, siginfo_t *si, void *ucv)
{
	int saved = errno;
	uint64_t key = si && si->si_code == SI_TIMER ? (uint64_t)(uintptr_t)si->si_value.sival_ptr : 0;
	bool held = chain_left(ucv);
	if (!IPROF_KEY_IS_OURS(key)) {
		/* (with a signal held back: this one first, chain_call hands that one over after it) */
		chain(sig, si, ucv);
		errno = saved;
		return;
	}
	struct iprof_slot *tab = atomic_load_explicit(&iprof_g.tab, memory_order_acquire);
	if (!tab || !ucv) {
		atomic_fetch_add_explicit(&iprof_g.stale, 1, memory_order_relaxed);
		errno = saved;
		return;
	}
	struct iprof_slot *sl = &tab[IPROF_KEY_INDEX(key)];
	atomic_fetch_add(&sl->busy, 1);
	if (atomic_load(&sl->key) == key && atomic_load(&sl->live))
		take_sample(sl, si, ucv);
	else
		atomic_fetch_add_explicit(&iprof_g.stale, 1, memory_order_relaxed);
	atomic_fetch_sub(&sl->busy, 1);
	/* (after the sample, out of the slot: the program's handler may not return) */
	if (held)
		chain_deferred(sig, ucv);
	errno = saved;
}

/* ---- outside signal context */

struct iprof_ring *iprof_ring_new(uint64_t size)
{
	uint64_t bytes = (offsetof(struct iprof_ring, data) + size + PAGE - 1) / PAGE * PAGE;
	void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	struct iprof_ring *r = m;
	r->size = size;
	r->map_bytes = bytes;
	return r;
}

void iprof_ring_free(struct iprof_ring *r)
{
	if (r)
		munmap(r, r->map_bytes);
}

unsigned iprof_ring_drain(struct iprof_ring *r, iprof_rec_fn fn, void *ctx)
{
	atomic_store_explicit(&r->wake, 0, memory_order_relaxed);
	uint64_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
	uint64_t h = atomic_load_explicit(&r->head, memory_order_acquire);
	unsigned n = 0;
	while (t < h) {
		const struct iprof_rec *rec = (const struct iprof_rec *)(const void *)(r->data + (t & (r->size - 1)));
		uint32_t len = rec->len;
		if (len < 8 || (len & 7) || len > h - t)
			break; /* (cannot be: the handler writes whole records) */
		if (rec->kind == IPROF_REC_SAMPLE) {
			if (!fn(ctx, rec))
				break;
			n++;
		}
		t += len;
		atomic_store_explicit(&r->tail, t, memory_order_release);
	}
	return n;
}

/* ---- the handler's installation, and the program's own handlers for the same signal
 *
 * Once installed, the handler stays: sigaction and signal are interposed for that signal, so
 * that a handler the program installs later (its own setitimer(ITIMER_PROF), say) is recorded
 * as the one signals from other sources go to, and what the program reads back is its own.
 * (Flags other than SA_SIGINFO of the program's handler, SA_RESETHAND for one, are not
 * honoured; its sa_mask neither: only the signal itself is blocked while it runs.) */

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

IPROF_NO_SANITIZE static sigaction_fn real_sigaction(void)
{
	static _Atomic(sigaction_fn) real;
	sigaction_fn f = atomic_load_explicit(&real, memory_order_acquire);
	if (!f) {
		f = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
		atomic_store_explicit(&real, f, memory_order_release);
	}
	return f;
}

IPROF_NO_SANITIZE static bool ours(const struct sigaction *sa)
{
	return (sa->sa_flags & SA_SIGINFO) && sa->sa_sigaction == iprof_handler;
}

/* The program's handler for signo is now *act: a copy, published for the handler, which may
 * be reading the one it replaces (those are kept, on a list: a program sets a handler a few
 * times, not millions). */
struct prev_copy {
	struct sigaction sa;
	struct prev_copy *next;
};
static struct prev_copy *_Atomic prev_copies;

IPROF_NO_SANITIZE static int set_prev(int signo, const struct sigaction *act)
{
	struct prev_copy *c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->sa = *act;
	c->next = atomic_load(&prev_copies);
	while (!atomic_compare_exchange_weak(&prev_copies, &c->next, c))
		;
	atomic_store_explicit(&iprof_g.prev[signo], &c->sa, memory_order_release);
	return 0;
}

int iprof_install_handler(int signo)
{
	sigaction_fn real = real_sigaction();
	struct sigaction cur;
	if (!real)
		return -ENOSYS;
	if (real(signo, NULL, &cur))
		return -errno;
	if (ours(&cur))
		return 0;
	/* the program's handler (or the one that replaced ours since): signals from other sources
	 * go there */
	int e = set_prev(signo, &cur);
	if (e)
		return e;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = iprof_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (real(signo, &sa, NULL))
		return -errno;
	atomic_store(&iprof_g.installed[signo], 1);
	return 0;
}

/* The interposers' C names are prof_sigaction and prof_signal; asm labels give them the
 * symbols sigaction and signal, which the program's references bind to (and so do the calls of
 * sigaction here and in prof.c, through the PLT, as before). A C function named sigaction would
 * read as the definition every sigaction call in lib/ reaches. */
IPROF_NO_SANITIZE __attribute__((visibility("default"))) int
prof_sigaction(int signo, const struct sigaction *act, struct sigaction *oact) __asm__("sigaction");

IPROF_NO_SANITIZE int prof_sigaction(int signo, const struct sigaction *act, struct sigaction *oact)
{
	sigaction_fn real = real_sigaction();
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	struct sigaction cur;
	if (signo > 0 && signo <= 64 && atomic_load(&iprof_g.installed[signo]) && !real(signo, NULL, &cur) &&
	    ours(&cur)) {
		const struct sigaction *prev = atomic_load(&iprof_g.prev[signo]);
		struct sigaction old;
		if (prev)
			old = *prev;
		else
			memset(&old, 0, sizeof(old));
		if (act && set_prev(signo, act)) {
			errno = ENOMEM;
			return -1;
		}
		if (oact)
			*oact = old;
		return 0;
	}
	return real(signo, act, oact);
}

typedef void (*sighandler_fn)(int);
typedef sighandler_fn (*signal_fn)(int, sighandler_fn);

IPROF_NO_SANITIZE __attribute__((visibility("default"))) sighandler_fn
prof_signal(int signo, sighandler_fn h) __asm__("signal");

IPROF_NO_SANITIZE sighandler_fn prof_signal(int signo, sighandler_fn h)
{
	if (signo > 0 && signo <= 64 && atomic_load(&iprof_g.installed[signo])) {
		/* glibc's signal(): BSD semantics, the handler stays and calls restart */
		struct sigaction sa, old;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = h;
		sa.sa_flags = SA_RESTART;
		sigemptyset(&sa.sa_mask);
		sigaddset(&sa.sa_mask, signo);
		if (sigaction(signo, &sa, &old))
			return SIG_ERR;
		return (old.sa_flags & SA_SIGINFO) ? (sighandler_fn)(void (*)(void))old.sa_sigaction : old.sa_handler;
	}
	static _Atomic(signal_fn) real;
	signal_fn f = atomic_load_explicit(&real, memory_order_acquire);
	if (!f) {
		f = (signal_fn)dlsym(RTLD_NEXT, "signal");
		atomic_store_explicit(&real, f, memory_order_release);
	}
	if (!f) {
		errno = ENOSYS;
		return SIG_ERR;
	}
	return f(signo, h);
}

void iprof_handler_check(struct uw_prof *p)
{
	struct sigaction cur;
	sigaction_fn real = real_sigaction();
	if (real && !real(p->signo, NULL, &cur) && !ours(&cur))
		atomic_store(&p->handler_replaced, 1);
}
