/* SPDX-License-Identifier: MIT */
/*
 * Symbolization: a module address's symbol, source line and inline chain (symbolize.c, batches
 * in symbolize_batch.c), kernel addresses per recording (kallsyms.c), JIT code (jitmap.c,
 * jitdump.c), over the ELF symbol and DWARF readers of this folder. Prefixes: sym_ (what the
 * symbolizer keeps), ksym_ (kernel), jit_ (JIT code), and each reader's own (symtab_, dwi_,
 * dwl_, dww_, dwp_, dwarf_image's).
 *
 * Threads: any thread may symbolize at once. What is made of a module (symbols, DWARF) is made
 * once under the module's lock (it reads the module's files), then read without it; the cache
 * of inline chains already looked up has a lock per shard of a module's addresses, held for one
 * lookup; names are interned in the session's strings (alive with the session, any thread).
 */
#ifndef UW_SYMBOLIZE_H
#define UW_SYMBOLIZE_H

#include <pthread.h>

#include "module/module.h"
#include "symbolize/dwarf_inline.h"
#include "symbolize/symtab.h"

/* ---- what the symbolizer keeps of a module (symbolize.c): the module's ext */
#define SYM_SHARD_BITS 6
#define SYM_SHARDS (1u << SYM_SHARD_BITS)
struct sym_module {
	struct module_ext ext;
	struct uw_module *m;
	struct uw_session *s;
	/* its symbol table: built once under syms_mu, published by syms_done, then read only */
	pthread_mutex_t syms_mu;
	bool syms_done;
	struct symtab syms;
	/* its DWARF: opened once under m->mu, published by dwi_done */
	bool dwi_done;
	struct dwi *dwi;
	struct elfv *dwp_elf;       /* its split DWARF's package (.dwp), or NULL (dwi's finder's) */
	struct dwp *dwp;
	/* the inline chains looked up so far, in shards by address: threads naming different
	 * addresses seldom take the same lock (one lock for the module's caches made 2 threads
	 * slower than one on a batch of distinct addresses) */
	struct sym_shard {
		pthread_mutex_t mu;
		pthread_cond_t cv;          /* a pending lookup of the shard is done */
		struct base_map inl;        /* rel pc -> struct sym_inline *, or pending on the helper */
	} __attribute__((aligned(64))) shard[SYM_SHARDS];
	pthread_mutex_t arena_mu;
	struct base_arena inl_arena; /* the chains handed out: kept until the session ends */
};
/* The module's (made on first use); NULL without memory. The caller holds module_use(m). */
struct sym_module *sym_module(struct uw_session *s, struct uw_module *m);

/* One address named (uw_symbolize), and when it has no name, why (batches: the reason is the
 * lookup's, not a later state of the module). */
int sym_lookup(struct uw_session *s, struct uw_module *m, uint64_t rel_pc, struct uw_symbol *out,
               enum uw_sym_reason *why);
/* The same, and uw_symbolize_inline's, for a caller that holds module_use(m) (batches hold it
 * over a run of frames of one module: taking it for each frame made two threads naming one
 * module's addresses bounce its lock between them). */
int sym_lookup_used(struct uw_session *s, struct uw_module *m, uint64_t rel_pc, struct uw_symbol *out,
                    enum uw_sym_reason *why);
/* Whether the module's symbol table is built, building it now when no other thread is (a batch
 * looks up the inline chains of a module whose table another thread builds meanwhile, and names
 * their symbols after). The caller holds module_use(sm->m). */
bool sym_symbols_ready(struct uw_session *s, struct sym_module *sm);
int sym_inline_used(struct uw_session *s, struct uw_module *m, uint64_t rel_pc, const struct uw_source_frame **frames,
                    unsigned *n);
/* The same without waiting for what another thread makes once (the module's DWARF opened, its
 * units by address, a unit's index, a chain the helper looks up): -EAGAIN then, nothing kept;
 * ask again (batches name other frames meanwhile). */
int sym_inline_try(struct uw_session *s, struct uw_module *m, uint64_t rel_pc, const struct uw_source_frame **frames,
                   unsigned *n);
/* The symbol at rel_pc: its name in the symbol table (system) and as shown (demangled unless the
 * session says not), both interned; NULLs without one. */
void sym_names(struct uw_session *s, struct uw_module *m, uint64_t rel_pc, const char **sys, const char **shown);
/* The source file addr2line names for rel_pc when no line table covers it (symtab_file_of), interned;
 * NULL: none. */
const char *sym_source_file(struct uw_session *s, struct uw_module *m, uint64_t rel_pc);
/* Lookups asked of the inline helper so far (uw_symbolize_inline_ahead); whether the first n of
 * them are done (no waiting). */
size_t sym_inline_asked(struct uw_session *s);
bool sym_inline_done(struct uw_session *s, size_t n);

/* ---- JIT code (jitmap.c, jitdump.c): modules of their own (special, m->jit), never opened as
 * files and never unloaded; addresses absolute */
/* perf-PID.map text into a symbol table (fuzzed), sorted by start (stable: of entries at one
 * address the last written wins); at most max_entries lines (-UW_ELIMIT). */
int jit_map_parse(const char *text, size_t len, struct symtab *t, size_t max_entries);
/* What the tracker knows of a process, for deciding whether a perf map can be its own. */
struct jit_proc {
	int32_t pid;
	bool start_known;           /* it started during the recording ... */
	bool start_wall_known;      /* ... at this wall-clock time (ns) */
	int64_t start_wall;
};
/* The JIT symbol map of the process (/tmp/perf-PID.map under the sysroot), read once per
 * session and process id, or NULL (none, or not the process's: said). */
struct uw_module *jit_map_module(struct uw_session *s, const struct jit_proc *p);
/* The JIT symbol of module jm (a perf map's, or a jitdump load's) at the absolute address pc:
 * its start. @return false when none. Any thread. */
bool jit_symbol_at(const struct uw_module *jm, uint64_t pc, uint64_t *start);

struct jitdump;
/* Is this the path of a jitdump file ("jit-PID.dump")? */
bool jit_dump_is_path(const char *path, size_t len);
/* Parses a jitdump image (bounds-checked; fuzzed). */
int jit_dump_parse(struct uw_session *s, const uint8_t *p, size_t size, struct jitdump **out);
void jit_dump_free(struct jitdump *jd);
/* The jitdump a recording shows a process mapping (path as recorded, under the sysroot), read;
 * NULL when it cannot be (said). */
struct jitdump *jit_dump_read(struct uw_session *s, const char *path, size_t len);
/* Where perf inject --jit puts a load's code in the ELF file it writes for it (after the ELF and
 * program headers, 16-aligned): frame addresses are shown relative to that file, as perf does. */
#define JITDUMP_TEXT_OFFSET 0x80
/* The module of the JIT code load of process pid naming pc at time (timed: the recording's clock
 * is the dump's, CLOCK_MONOTONIC; else the latest load), or NULL. */
struct uw_module *jit_dump_find(struct uw_session *s, struct jitdump *jd, int32_t pid, uint64_t pc, uint64_t time,
                                bool timed);

/* ---- kernel symbols per recording (kallsyms.c) */
/* The running kernel's build-id (hex), from /sys/kernel/notes. */
bool ksym_running_build_id(char *hex);
/* A tracker's kernel: made with it (running: a live tracker's), dropped with it unless handed
 * out; kept (handed out) by uw_tracker_kernel. NULL without memory. */
struct uw_kernel *ksym_kernel_new(struct uw_session *s, bool running);
void ksym_kernel_drop(struct uw_kernel *k);
struct uw_kernel *ksym_kernel_keep(struct uw_kernel *k);
/* What the recording says of its kernel: its build-id, _text (the kernel MMAP's pgoff), and the
 * release it ran (HEADER_OSRELEASE). The first of each is kept. */
void ksym_kernel_note_build_id(struct uw_kernel *k, const char *hex);
void ksym_kernel_note_text(struct uw_kernel *k, uint64_t text);
void ksym_kernel_note_release(struct uw_kernel *k, const char *release);
/* A sample of kernel k has kernel frames to name: the symbols asked for ahead
 * (uw_tracker_load_*) are read ahead from now (a kallsyms file that is read, not mapped, on a
 * helper thread). Cheap after the first call; any thread. */
void ksym_kernel_want(struct uw_kernel *k);
/* A file given for the kernel's symbols (uw_tracker_load_kallsyms, uw_tracker_load_vmlinux;
 * path NULL: none, the default choice). */
int ksym_kernel_load(struct uw_kernel *k, const char *path, bool vmlinux);
/* The running kernel's /proc/kallsyms (build-id hex) kept in the session's build-id cache as
 * perf record keeps it, [kernel.kallsyms]/HEX/kallsyms (nothing done when it is there, or when
 * the addresses are hidden). @return 0, -errno. */
int ksym_keep_in_cache(struct uw_session *s, const char *hex);

#endif
