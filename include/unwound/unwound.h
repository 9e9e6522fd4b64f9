/* SPDX-License-Identifier: MIT */
/*
 * unwound — turn Linux perf_events samples into complete, symbolized user-space stacks.
 *
 * This header is the whole public API. Handles are opaque; calls that will grow take an
 * options struct whose first field is its size (use UW_OPTS to declare one).
 *
 * Conventions (see docs/naming.md):
 *  - functions are uw_<object>_<verb>;
 *  - int-returning calls return 0 or a negative error (-errno, or -UW_E* above 4000),
 *    described by uw_strerror(); constructors return NULL and set errno;
 *  - the library never prints, exits or aborts; diagnostics go to the session's log callback;
 *  - no global state: everything hangs off a struct uw_session.
 *
 * Threads (docs/threads.md has the table):
 *  - a session may be shared: several threads, each with its own tracker (and reader), may
 *    unwind and symbolize at once against one session; and a tracker may be shared: one
 *    thread feeds it events while several unwind against it (see struct uw_tracker). What the session builds lazily (opened
 *    modules, unwind tables, symbol tables, DWARF indexes) is built once, by the first thread
 *    that needs it, and then read by all. Unwinding runs in parallel; symbolization calls are
 *    serialized on the session (their results are cached, so repeated addresses are cheap).
 *  - a reader, a profile, a script writer: one thread at a time each.
 *  - uw_session_free after every other object of the session is freed, by one thread.
 *  - the log callback may be called from any thread using the session; uw_session_errmsg
 *    gives the calling thread's last error.
 */
#ifndef UNWOUND_UNWOUND_H
#define UNWOUND_UNWOUND_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(UW_BUILDING_LIB)
#define UW_API __attribute__((visibility("default")))
#else
#define UW_API
#endif

/* Experimental calls (and the types only they use) are declared with UW_EXPERIMENTAL and say
 * "Experimental" in their comment (and in libunwound(3)): they are exported and versioned like
 * every call (lib/libunwound.map), but their arguments or behaviour may still change in a minor
 * release. A program that wants none of them defines UW_NO_EXPERIMENTAL before including this
 * header: a call to one is then an error at compile time. */
#if defined(UW_NO_EXPERIMENTAL) && !defined(UW_BUILDING_LIB)
#define UW_EXPERIMENTAL __attribute__((__error__("an experimental call of libunwound (UW_NO_EXPERIMENTAL is defined)")))
#else
#define UW_EXPERIMENTAL
#endif

/* A call kept for compatibility (say which to use instead): a warning where it is used. */
#if defined(UW_BUILDING_LIB)
#define UW_DEPRECATED(msg)
#else
#define UW_DEPRECATED(msg) __attribute__((__deprecated__(msg)))
#endif

#define UW_VERSION_MAJOR 0
#define UW_VERSION_MINOR 2
#define UW_VERSION_PATCH 0
#define UW_VERSION_NUMBER (UW_VERSION_MAJOR * 10000 + UW_VERSION_MINOR * 100 + UW_VERSION_PATCH)

/* Declare and zero an options struct with its size set: UW_OPTS(uw_session_opts, o, .max_frames = 64);
 * Options (and every struct whose first field is its size, given to the library) are read as
 * far as their sz says: an older caller's shorter struct gets defaults for the rest; a newer
 * caller's larger one is refused with -E2BIG (errno E2BIG for constructors) when any byte
 * past the end of the last field this library knows is non-zero, the padding after that field
 * included (as libbpf's OPTS_VALID). None of them ends in padding: where one would, a reserved
 * field says so, which an initializer zeroes (UW_OPTS, or = { .sz = sizeof(...), ... }); the
 * next field added there takes its place, and a library that does not know it refuses it. */
#if !defined(__cplusplus) && !(defined(__GNUC__) && !defined(__STRICT_ANSI__))
/* Strict ISO C11 (-std=c11 -pedantic): a designated initializer. The members not named are
 * zeroed, their padding included (C11 6.7.9p10, p21); the inner macro gives the variadic part
 * an argument (possibly empty) even when no field is named. */
#define UW_OPTS(...) UW_OPTS_C11_(__VA_ARGS__, )
#define UW_OPTS_C11_(TYPE, NAME, ...) struct TYPE NAME = { .sz = sizeof(struct TYPE), __VA_ARGS__ }
#elif !defined(__cplusplus)
/* GNU C: the whole struct zeroed, padding included, before the fields are set */
#define UW_OPTS(TYPE, NAME, ...)                                          \
	struct TYPE NAME = ({                                             \
		struct TYPE ___##NAME;                                    \
		__builtin_memset(&___##NAME, 0, sizeof(struct TYPE));     \
		___##NAME = (struct TYPE){ .sz = sizeof(struct TYPE), __VA_ARGS__ }; \
		___##NAME;                                                \
	})
#else
/* C++20: designated initializers, in the order the fields are declared (the others are zero).
 * Any C++: auto o = uw_opts<uw_session_opts>(); o.max_frames = 64; */
#define UW_OPTS(TYPE, NAME, ...)                                                  \
	TYPE NAME = [&]() -> TYPE {                                               \
		_Pragma("GCC diagnostic push")                                    \
		_Pragma("GCC diagnostic ignored \"-Wmissing-field-initializers\"") \
		TYPE o_{ .sz = sizeof(TYPE), __VA_ARGS__ };                       \
		_Pragma("GCC diagnostic pop")                                     \
		return o_;                                                        \
	}()
#endif

/* ---------------------------------------------------------------- errors */

/* Project error codes, above 4000 so they never collide with errno values. */
#define UW_ERRORS(X)                                                                 \
	X(UW_EFORMAT, 4001, "malformed input")                                     \
	X(UW_ETRUNC, 4002, "input truncated")                                      \
	X(UW_EMAGIC, 4003, "not a perf.data file (bad magic)")                      \
	X(UW_ENOATTR, 4004, "record refers to an unknown event attribute")          \
	X(UW_ELIMIT, 4005, "a configured size limit was exceeded")                  \
	X(UW_ENOELF, 4006, "not a usable ELF file")                                 \
	X(UW_ENOCFI, 4007, "no unwind information")                                 \
	X(UW_EBUILDID, 4008, "build-id mismatch")                                   \
	X(UW_EUNSUPP, 4009, "unsupported feature")                                  \
	X(UW_ECANCELED, 4010, "stopped by the callback")                           \
	X(UW_ENOTREG, 4011, "not a regular file (a FIFO, device or directory)")

enum uw_error {
#define UW_ERR_ENUM(name, val, msg) name = val,
	UW_ERRORS(UW_ERR_ENUM)
#undef UW_ERR_ENUM
};

/* Describes an error code (negative or positive). The string is static. */
UW_API const char *uw_strerror(int err);

/* The library's version at run time (UW_VERSION_NUMBER of its build: a program can tell the
 * library it runs with from the header it was built against), and as "MAJOR.MINOR.PATCH". */
UW_API unsigned uw_version(void);
UW_API const char *uw_version_string(void);

/*
 * Output files, created the one way unwound creates every output (recordings, text, pages):
 * never through a symbolic link (a link at the path is moved aside as PATH.old, not followed),
 * mode less the umask (recordings 0600, text 0644); a regular file already there is kept as
 * PATH.old. A character device or FIFO (or a link to one), and the path of an open descriptor
 * (/dev/stdout, /dev/fd/N, /proc/self/fd/N: the file it is open on, at its offset) are written
 * as they are; "-" is standard output.
 *
 * uw_output_open gives a file written without a name (O_TMPFILE) in the path's directory:
 * nothing at the path changes until uw_output_commit puts it there, complete; a writer that
 * fails (uw_output_discard) or is killed leaves the path as it was, and no temporary file. (On
 * a file system without O_TMPFILE the file is written as PATH.PID.new: a writer killed there
 * leaves it.) Committing renames the previous file PATH.old, then links the new one at PATH; a
 * kill between the two leaves PATH.old and no PATH.
 * Threads: an output is used by one thread at a time.
 */
struct uw_output;
/* @return the output, or NULL with errno set (EISDIR, EACCES, UW_ENOTREG, ...). */
UW_API struct uw_output *uw_output_open(const char *path, unsigned mode);
/* The descriptor to write to (owned by the output: not to be closed). */
UW_API int uw_output_fd(const struct uw_output *o);
/* Puts the file written at its path and closes it; o is freed, whatever the result.
 * @return 0, or -errno (the file is then gone and the path as it was, but for a failed close
 * on a file system that reports write errors there). */
UW_API int uw_output_commit(struct uw_output *o);
/* Closes the output and frees it: what was written is gone, the path as it was. NULL is
 * ignored. */
UW_API void uw_output_discard(struct uw_output *o);
/* The file at its path at once (empty): for a writer that wants it there while it writes.
 * @return a descriptor (the caller closes it) or a negative error. */
UW_API int uw_output_create(const char *path, unsigned mode);
/* Removes the temporary files the library has under a name at this moment: cache entries
 * being written on a file system without O_TMPFILE (elsewhere they have no name until complete,
 * and a process killed leaves nothing). Async-signal-safe: for the handler of a signal that ends
 * the process (SIGPIPE, SIGINT, SIGTERM), which then raises it again, and for atexit (a thread
 * may be writing one when the process exits). (UNWOUND_0.2) */
UW_API void uw_remove_temporaries(void);

/* ---------------------------------------------------------------- session */

enum uw_log_level { UW_LOG_ERROR, UW_LOG_WARN, UW_LOG_INFO, UW_LOG_DEBUG };
typedef void (*uw_log_fn)(void *ctx, enum uw_log_level level, const char *msg);

struct uw_session_opts {
	size_t sz;
	uw_log_fn log;           /* NULL: no messages */
	void *log_ctx;
	enum uw_log_level log_level; /* most verbose level passed to log (default UW_LOG_ERROR=0 means errors only) */
	unsigned max_frames;     /* user frames per stack; 0: 256; at most 4096 */
	const char *debug_dirs;  /* ':'-separated extra roots for separate debug files; may be NULL */
	const char *buildid_dir; /* perf's build-id cache; NULL: $HOME/.debug */
	const char *sysroot;     /* prefix for module paths of the recording; NULL: "" */
	int no_fp_fallback;      /* 1: never use frame pointers when CFI is missing */
	int no_demangle;         /* 1: C++ and Rust names as they are in the symbol table */
	/* debuginfod: when $DEBUGINFOD_URLS is set, files missing here (an object file not found,
	 * a debug file for a stripped one) are fetched by build-id through libdebuginfod, into its
	 * cache ($DEBUGINFOD_CACHE_PATH, else ~/.cache/debuginfod_client), when first needed. */
	int offline;             /* 1: never ask debuginfod servers */
	unsigned debuginfod_timeout_ms; /* cap on one fetch's time; 0: 30 s (said as "timed out") */
	uint64_t max_inflate_bytes; /* cap on one decompressed debug section; 0: 1 GiB */
	/* cap on a side file read whole (jitdump, perf-PID.map, kallsyms); 0: 2 GiB. It also caps
	 * the entries kept from one: a jitdump's code loads at 1 per 512 bytes of the cap (4 M by
	 * default), a perf map's lines at 1 per 128 bytes (16 M). */
	uint64_t max_side_file_bytes;
	/* The DWARF of a compressed debug file, once decompressed, is kept by build-id in this
	 * directory and mapped from it on later runs (perf keeps binaries in ~/.debug likewise), and
	 * so are the line tables decoded, for any module with a build-id.
	 * NULL: $UNWOUND_CACHE_DIR, else $XDG_CACHE_HOME/unwound, else $HOME/.cache/unwound. */
	const char *dwarf_cache_dir;
	int no_dwarf_cache;      /* 1: neither read nor write it */
	/* 1: inline chains asked for ahead (uw_symbolize_inline_ahead) are looked up when asked
	 * for, on the calling thread; else by a helper thread, when more than one CPU is online */
	int sync_symbols;
	/* ':'-separated directories searched (with their subdirectories) for the files a recording
	 * names that are not at their path (a recording from another machine): a file of the same
	 * name is used only when its build-id is the recorded one. NULL: none. */
	const char *search_path;
	/* cap on the DWARF cache directory's size: before a file is written there, the least
	 * recently used are removed until it fits (a file larger than the cap is not kept);
	 * 0: 4 GiB */
	uint64_t max_dwarf_cache_bytes;
	/* cap on one file fetched from debuginfod (as announced, and as received: a server that
	 * sends no length or an endless body is stopped there and the partial file removed);
	 * 0: 1 GiB */
	uint64_t max_debuginfod_bytes;
};

struct uw_session;

/* Creates a session. opts may be NULL. Returns NULL with errno set (EINVAL for bad opts). */
UW_API struct uw_session *uw_session_new(const struct uw_session_opts *opts);
/* Frees the session and everything created from it that is still alive. NULL is ignored. */
UW_API void uw_session_free(struct uw_session *s);
/* The message of the last error on this session; valid until the next call on it. */
UW_API const char *uw_session_errmsg(const struct uw_session *s);

/* What ran out or changed under a session, over its life. Each is work given up without an
 * error returned to the call that needed it (that call's result is only less complete: a
 * module not opened, a frame without inline frames or a name), and each is also logged as a
 * warning (the first of a kind) or an error. Counted with relaxed atomics, any thread. */
struct uw_session_stats {
	size_t sz;
	uint64_t files_no_descriptor; /* files not opened: the process (EMFILE: ulimit -n) or the
	                               * system (ENFILE) had no descriptor left */
	uint64_t out_of_memory;       /* work given up for want of memory: an allocation failed,
	                               * or libdw's (its DWARF is then not read further) */
	uint64_t files_shrunk;        /* files shorter when read than when opened (a binary rebuilt
	                               * or copied over in place during the run): what could not be
	                               * read is missing */
	uint64_t debuginfod_too_big;  /* downloads stopped at the size cap (max_debuginfod_bytes) */
	uint64_t debuginfod_timeouts; /* downloads stopped by the timeout (debuginfod_timeout_ms) */
	/* (new fields go here) */
};
/* @return 0, or -EINVAL (no session, st->sz not set). Fields past st->sz are not written. */
UW_API int uw_session_stats(const struct uw_session *s, struct uw_session_stats *st);

/* ---------------------------------------------------------------- stacks */

/* How a frame's caller was found. */
enum uw_frame_method {
	UW_METHOD_REGS = 0,     /* first frame: the sampled registers */
	UW_METHOD_CFI,          /* DWARF call frame information */
	UW_METHOD_FP,           /* frame-pointer chain */
	UW_METHOD_PLT,          /* PLT stub heuristic (nothing pushed yet) */
	UW_METHOD_SIGNAL,       /* through a signal frame */
	UW_METHOD_CALLCHAIN,    /* taken from the kernel-provided callchain */
	UW_METHOD_SFRAME,       /* SFrame (.sframe): where no CFI covers the pc */
	UW_METHOD_STITCHED,     /* appended from another sample of the thread (a truncated stack
	                         * completed: same activation, same callers) */
	UW_METHOD_BPF_ROWS,     /* walked in the kernel (kernel unwinding: uw_record's, or a
	                         * reader's uw_kernel_unwind) with the module's CFI or SFrame rows
	                         * (also its PLT and signal-frame rules) */
	UW_METHOD_BPF_FP,       /* walked in the kernel with the frame-pointer rule */
	UW_METHOD__COUNT
};
#define UW_METHOD_MAX 16 /* room for methods in the arrays of stats structs */
/* "CFI", "SFrame", "frame pointer", ... ("unknown" past the last). */
UW_API const char *uw_frame_method_str(enum uw_frame_method m);

/* Why a stack ends. Only UW_STOP_END_OF_STACK is success: the outermost frame is a root (its
 * CFI marks the return address undefined, as _start's and clone's do, or the frame-pointer
 * chain ends with a zero frame pointer).
 * A callchain read from a file (perf record -g, or a file unwound's inject or record wrote) is
 * judged by what it holds: END_OF_STACK when its outermost frame is a root by its module's CFI,
 * CHAIN_CUT when that CFI says the frame has a caller, NO_MODULE when the outermost address is
 * in no mapping, UNKNOWN when nothing tells; unwound's own files state each sample's reason
 * exactly (see uw_reader_stats.stops_stated). The values are stored in files: append only. */
#define UW_STOP_REASONS(X)                                                         \
	X(UW_STOP_END_OF_STACK, "end of stack")                                       \
	X(UW_STOP_NO_UNWIND_INFO, "no unwind info for pc")                            \
	X(UW_STOP_NO_MODULE, "pc outside any known mapping")                          \
	X(UW_STOP_STACK_EXHAUSTED, "stack copy exhausted")                            \
	X(UW_STOP_BAD_MEMORY, "read outside the stack copy")                          \
	X(UW_STOP_NO_PROGRESS, "stack pointer did not move up")                       \
	X(UW_STOP_MAX_FRAMES, "frame limit reached")                                  \
	X(UW_STOP_BAD_CFI, "unsupported or invalid CFI rule")                         \
	X(UW_STOP_NO_REGS, "sample has no user registers")                            \
	X(UW_STOP_NONE, "no callchain recorded")                                      \
	X(UW_STOP_CHAIN_CUT, "recorded callchain ends before a root frame")           \
	X(UW_STOP_UNKNOWN, "recorded callchain, completeness unknown")                \
	X(UW_STOP_SFRAME_RULE, "an SFrame rule the unwinder cannot follow")              \
	X(UW_STOP_DEFERRED_MISSING, "deferred user callchain never arrived")        \
	X(UW_STOP_CALLBACK, "stopped by the callback")                                \
	X(UW_STOP_LOST, "samples lost before they were unwound")

enum uw_stop_reason {
#define UW_STOP_ENUM(name, msg) name,
	UW_STOP_REASONS(UW_STOP_ENUM)
#undef UW_STOP_ENUM
	UW_STOP__COUNT
};
#define UW_STOP_MAX 32 /* room for stop reasons in the arrays of stats structs (fixed: their layout
                        * does not change as reasons are added) */
UW_API const char *uw_stop_reason_str(enum uw_stop_reason r);

/*
 * A module: an object file, shared by every process (of every tracker of the session) that maps
 * it, one per distinct file (its build-id, else path, device and inode). A handle lives as long
 * as the session: its path, name, build-id and state stay valid after every process that mapped
 * it is gone, so a profiler may keep raw frames (module, rel_pc) and name them at the end. What
 * it holds beyond that (its files, unwind tables, symbols, DWARF) is let go when a live tracker's
 * session has more than 64 loaded modules no mapping refers to (the oldest first), and opened
 * again when a frame of it is named (by path, checked against the build-id, or device and inode,
 * its first opening saw; a file gone since leaves it unnamed, with its reason). A handle costs
 * about 1.3 KiB and its path, once per distinct file: programs that come and go for hours reuse
 * theirs, and 10,000 distinct files cost 13 MiB.
 */
struct uw_module;

/* One user frame. pc is the absolute address; for frames other than the first (and frames
 * interrupted by a signal) it is the return address. */
struct uw_frame {
	uint64_t pc;
	struct uw_module *module; /* NULL when the pc is in no file-backed mapping */
	uint64_t map_addr;        /* pc - mapping start + file offset (perf script's address) */
	uint64_t rel_pc;          /* pc in the module's ELF virtual address space */
	uint8_t method;           /* enum uw_frame_method */
	uint8_t is_call;          /* 1: pc is a return address (caller frame) */
	uint8_t reserved[6];      /* zero (room for more: frames are arrays the caller sizes) */
	uint64_t sp;              /* the stack pointer in this frame (for a caller frame: the CFA
	                           * of the frame it called); 0 when not known (callchains) */
};

/* ---------------------------------------------------------------- modules and symbols */

/* Path as recorded (never NULL). Valid while the session lives (as are the two below). Any thread. */
UW_API const char *uw_module_path(const struct uw_module *m);
/* Short name (basename). */
UW_API const char *uw_module_name(const struct uw_module *m);
/* Build-id as lowercase hex, "" when unknown (a module known by path gets its file's when first
 * opened). */
UW_API const char *uw_module_build_id(const struct uw_module *m);

enum uw_module_state {
	UW_MODULE_UNOPENED = 0, /* no pc has hit it yet */
	UW_MODULE_OK,           /* opened, build-id agrees (or none recorded) */
	UW_MODULE_MISSING,      /* the file could not be found */
	UW_MODULE_MISMATCH,     /* the file found is not the recorded one: another build-id, or
	                         * (none recorded; uw_module_build_id is "") another device, inode
	                         * or inode generation: not used */
	UW_MODULE_BAD,          /* the file is not a usable ELF file */
	UW_MODULE_NO_RESOURCE,  /* not opened because a resource ran out (file descriptors,
	                         * memory): see uw_session_stats */
};
/* The outcome of its last opening (it stays while the module's files are let go). Any thread. */
UW_API enum uw_module_state uw_module_state(const struct uw_module *m);

/* How the callers of a module's frames were found, over every unwinding the session did: a step
 * from a pc in the module by CFI, by SFrame, by the frame-pointer chain (neither covered the pc),
 * by the PLT rule (a PLT entry, or a function's first instruction). Counted with relaxed atomics. */
struct uw_module_stats {
	size_t sz;
	uint64_t steps_cfi;
	uint64_t steps_sframe;
	uint64_t steps_fp;
	uint64_t steps_plt;
	/* (new fields go here) */
};
/* @return 0, or -EINVAL (no module, st->sz not set). */
UW_API int uw_module_stats(const struct uw_module *m, struct uw_module_stats *st);

struct uw_symbol {
	const char *name;     /* NULL when unknown; valid while the session lives */
	uint64_t offset;      /* rel address - symbol start */
	uint64_t start;       /* symbol start (module ELF address) */
	uint64_t size;
	uint64_t reserved[2]; /* zero (room for more without another layout) */
};

/* Symbolizes a module-relative address (uw_frame.rel_pc, already adjusted by the caller for
 * return addresses if wanted). Results are cached per (module, address).
 * @return 0 and *out filled (name NULL when no symbol covers the address), or a negative error. */
UW_API int uw_symbolize(struct uw_session *s, struct uw_module *m, uint64_t rel_pc, struct uw_symbol *out);

/* One level of an inline chain: a function and the source position of the code in it. */
struct uw_source_frame {
	const char *function; /* DWARF name (DW_AT_name); NULL when DWARF has none */
	const char *file;     /* source file path as DWARF gives it, or NULL */
	uint32_t line;        /* 0 when unknown */
	uint32_t reserved[3]; /* zero (these come in arrays: room for more without another stride) */
};

/* The inline chain at a module-relative address, from DWARF (the module's debug file or the
 * module itself), innermost first: the inlined functions, then the function that contains them.
 * frames[0].file:line is the line-table position of the address; frames[i].file:line for i > 0
 * is the call site of frames[i-1] inside frames[i]. Cached per (module, address); the array lives
 * as long as the session. *n is 0 (and *frames NULL) when there is no DWARF for the address.
 * @return 0 or -ENOMEM. */
UW_API int uw_symbolize_inline(struct uw_session *s, struct uw_module *m, uint64_t rel_pc,
                               const struct uw_source_frame **frames, unsigned *n);

/* Starts looking up the inline chain at rel_pc on the session's helper thread, so that a later
 * uw_symbolize_inline for it finds it ready (or waits for it); without a helper (sync_symbols,
 * one CPU) it does nothing. Only the helper reads a module's DWARF while lookups are pending;
 * uw_symbolize_inline for an address not asked for ahead first waits for them. Call both from
 * one thread. @return 0 or -ENOMEM. */
UW_API int uw_symbolize_inline_ahead(struct uw_session *s, struct uw_module *m, uint64_t rel_pc);

/* ---- many frames at once, with a reason for each that cannot be named */

enum uw_sym_reason {
	UW_SYM_OK = 0,           /* named */
	UW_SYM_NO_MODULE,        /* the address lies in no mapping the tracker knew */
	UW_SYM_ANONYMOUS,        /* in an anonymous or special mapping ([heap], //anon, [stack]) with no
	                          * JIT symbols for it */
	UW_SYM_MODULE_MISSING,   /* the module's file was not found (nor a debug file, nor on the
	                          * debuginfod servers) */
	UW_SYM_BUILD_ID_MISMATCH,/* a file was found, of another build than the recording's */
	UW_SYM_MODULE_BAD,       /* a file was found, not usable: not ELF, not a regular file, refused */
	UW_SYM_NO_SYMBOLS,       /* the module has no symbol table (stripped, no debug file) */
	UW_SYM_NO_SYMBOL,        /* the module's symbols do not cover the address */
	UW_SYM_NO_DEBUG_INFO,    /* named, but no DWARF gives its source line (name is set) */
	UW_SYM__COUNT
};
/* A short English phrase for a reason ("no module", "build-id mismatch", ...). */
UW_API const char *uw_sym_reason_str(enum uw_sym_reason r);

struct uw_symbolize_opts {
	size_t sz;
	int lines;               /* 1: source file and line, and inline chains (DWARF) */
	uint32_t reserved;       /* zero (where the next field goes: a library that does not know
	                          * it refuses it, -E2BIG) */
};

/* One frame's names. Strings and arrays live as long as the session. */
struct uw_symbolized {
	const char *name;        /* symbol (demangled unless the session says not); NULL unless
	                          * reason is UW_SYM_OK or UW_SYM_NO_DEBUG_INFO */
	uint64_t offset;         /* the frame's address - the symbol's start */
	uint64_t sym_start, sym_size;
	const char *file;        /* source position of the address (opts.lines), or NULL */
	uint32_t line;
	uint32_t nr_inlined;     /* inline chain at the address, innermost first (see
	                          * uw_symbolize_inline); 0 when none */
	const struct uw_source_frame *inlined;
	struct uw_module *module;
	uint64_t rel_pc;         /* the address looked up (a return address less one) */
	enum uw_sym_reason reason;
	uint32_t reserved[7];    /* zero (room for more without another layout) */
};

/* The result of one batch: one block, freed at once. */
struct uw_symbols {
	size_t count;
	struct uw_symbolized *syms; /* count entries, in the order of the frames given */
};

/* Symbolizes frames[0..n) (unwound frames: a return address is looked up one byte back, inside
 * its call). Distinct addresses are looked up once. @return 0 and *out (free it with
 * uw_symbols_free), or -EINVAL / -ENOMEM. A frame that cannot be named is not an error: its
 * reason says why. */
UW_API int uw_symbolize_frames(struct uw_session *s, const struct uw_frame *frames, size_t n,
                               const struct uw_symbolize_opts *opts, struct uw_symbols **out);
UW_API void uw_symbols_free(struct uw_symbols *syms);

/* ---- kernel frames: each recording's kernel */

/*
 * The kernel a recording ran on (struct uw_kernel, one per tracker: uw_tracker_kernel, and in
 * each sample a reader delivers, uw_sample.recorded_kernel): what the recording says of it (the
 * build-id, the release, the address of _text) and the symbols chosen for it when a kernel
 * frame is first named:
 *   1. a file given for it (uw_tracker_load_vmlinux, uw_tracker_load_kallsyms), else the
 *      session's (uw_session_load_kallsyms);
 *   2. with a build-id: perf's snapshot of that kernel's kallsyms in the build-id cache
 *      (BUILDID_DIR/[kernel.kallsyms]/BUILD-ID/kallsyms), else /proc/kallsyms when the running
 *      kernel has that build-id;
 *   3. without one: /proc/kallsyms when the running kernel is the same release loaded at the
 *      same _text (or the tracker is live);
 *   4. else none: kernel frames have no names ([unknown], as perf shows them), and the session
 *      log says why.
 * Symbols are relocated by the difference of _text (KASLR). Tables read from files are shared
 * by every kernel of the session that uses the same file, and kept until the session ends.
 * A uw_kernel lives as long as the session once handed out (a tracker's that was not is freed
 * with its tracker, and costs ~200 bytes until then). Any thread.
 */
struct uw_kernel;
struct uw_tracker;

/* The kernel of the tracker's recording (marked as handed out: it outlives the tracker). */
UW_API struct uw_kernel *uw_tracker_kernel(struct uw_tracker *t);

/* Kernel symbols for the tracker's recording from a kallsyms file (perf's snapshot, or a copy of
 * /proc/kallsyms from the machine it ran on), read ahead on a helper thread from the first sample
 * with kernel frames a profile is given (a file of this user's that no one else may write is
 * mapped when first needed instead; a recording without kernel frames never reads it). NULL:
 * the default choice above, once the recording says which kernel it is (call it after
 * uw_reader_open, before uw_reader_run, to overlap the reading with the records').
 * @return 0, or -errno / -UW_ENOTREG when the file cannot be read. */
UW_API int uw_tracker_load_kallsyms(struct uw_tracker *t, const char *path);

/* Kernel symbols for the tracker's recording from a vmlinux (its ELF symbol table, as perf
 * reads one; relocated by _text, where .text starts), read now. A vmlinux whose build-id is not
 * the recording's kernel's is refused (also when the recording says it later).
 * @return 0, -UW_EBUILDID, -ENODATA (no function symbols), or another error reading it. */
UW_API int uw_tracker_load_vmlinux(struct uw_tracker *t, const char *path);

/* The kernel symbol at an address of kernel k. Strings live as long as the session.
 * @return 0 with name NULL when unknown. */
UW_API int uw_kernel_symbolize(struct uw_kernel *k, uint64_t addr, struct uw_symbol *out);

/* Kernel symbol for an address, named with the kernel of the session's first tracker (called
 * before any tracker was made: the running kernel's, from then on); with several recordings,
 * name each sample's kernel frames with uw_kernel_symbolize(sample->recorded_kernel, ...).
 * @return 0 with name NULL when unknown. */
UW_API int uw_symbolize_kernel(struct uw_session *s, uint64_t addr, struct uw_symbol *out);

/* Names the kallsyms file the kernel frames of every recording of the session are named from
 * when no file was given for it (uw_tracker_load_*); a later call replaces it (NULL: none, the
 * default choice). The file is read on a helper thread from now; a file whose addresses are all
 * zero (kptr_restrict) yields no names, and the session log says why. Any thread.
 * @return 0, or -errno / -UW_ENOTREG when the file cannot be read. */
UW_API int uw_session_load_kallsyms(struct uw_session *s, const char *path);

/* ---------------------------------------------------------------- samples */

struct uw_sample {
	size_t sz;                  /* sizeof(struct uw_sample) of whoever filled it: a sample
	                             * given to the library (uw_profile_add) is read only that far */
	uint32_t pid, tid, cpu;
	uint32_t attr_index;        /* which event (index into the recording's attributes) */
	uint64_t time;              /* ns; 0 when the recording has no timestamps */
	uint64_t period;
	uint64_t ip;
	uint8_t cpumode;            /* PERF_RECORD_MISC_CPUMODE of the sample */
	uint8_t stop_reason;        /* enum uw_stop_reason of the user part */
	uint8_t has_callchain;      /* 0: the event records no callchain or stack: the only frame
	                             * is the sample's ip (in kernel[] or user[], by cpumode) */
	uint8_t has_cpu;            /* the event records the CPU (perf script then shows it) */
	const char *comm;           /* thread's name at sample time */
	const char *event_name;
	uint32_t nr_kernel;         /* kernel frames (addresses), innermost first */
	uint32_t nr_user;           /* user frames, innermost first */
	const uint64_t *kernel;
	const struct uw_frame *user;
	/* the raw user state the stack was unwound from (0/NULL when the sample has none) */
	uint64_t user_ip, user_sp, user_fp;
	const uint8_t *stack;       /* copy of the user stack starting at user_sp */
	uint64_t stack_size;
	/* the kernel the recording ran on: name kernel[] with uw_kernel_symbolize (lives as long
	 * as the session; NULL: the session's, uw_symbolize_kernel) */
	struct uw_kernel *recorded_kernel;
	/* stop_reason UW_STOP_LOST: why they were lost (enum uw_lost_cause), which names their
	 * frame in a profile; 0: not said */
	uint32_t lost_cause;
};

/* Why samples were lost (uw_sample.lost_cause): a profile's frame of lost samples is named
 * "[lost samples]" (UW_LOST_UNSTATED) or "[lost samples: " the cause's text "]". */
enum uw_lost_cause {
	UW_LOST_UNSTATED = 0,
	UW_LOST_RING_FULL,       /* "ring full": the profiler's buffer had no room (it fell behind) */
	UW_LOST_SIGNALS_BLOCKED, /* "signals blocked": the thread blocked the profiler's signal */
	UW_LOST_THREAD_ENDED,    /* "thread ended": it ran periods after its last signal (or before
	                          * its first: no tick found it running), then ended */
	UW_LOST_PROFILER_STOPPED,/* "profiler stopped": the same, until the profiler stopped */
	UW_LOST__COUNT
};

/* Called for each sample in time order (with opts.stitch, a stack its copy cut short may come
 * later: see there). The sample and its arrays are valid only during
 * the call. Return 0 to go on, non-zero to stop reading (uw_reader_run returns -UW_ECANCELED). */
typedef int (*uw_sample_fn)(void *ctx, const struct uw_sample *sample);

/* ---------------------------------------------------------------- tracker and unwinding */

/*
 * A tracker: one recording's (or one live session's) processes, threads and their mappings,
 * fed event by event (the uw_tracker_* calls below, or the raw records of a uw_reader), with
 * the modules shared by every tracker of the session. Events are applied in the order given:
 * give them in time order (a uw_reader puts raw records in that order). EXIT only marks a
 * process: it is forgotten exit_grace_ns later (or when its pid is reused by FORK), so that
 * late samples still resolve.
 * Threads: one thread at a time feeds a tracker its events (the uw_tracker_mmap, _comm, _fork,
 * _exit, _note_build_id, _sweep calls, or a uw_reader given it or owning it), in time order;
 * meanwhile any number of threads may unwind against it at once (uw_unwind_sample,
 * uw_unwind_sample_each, uw_unwind_sample_walk) and ask it (uw_tracker_lookup,
 * uw_tracker_comm_of, uw_tracker_stats), the feeding thread too. An event waits for the
 * unwindings under way and unwinding waits for an event being applied (a read-write lock that
 * lets events go first); a sample unwound just after an event sees it, so give a sample to
 * the workers after the events before it (in time) were given, and give the tracker no event
 * after it (in time) before its unwinding has returned: an unwinding reads the tracker as it
 * is when it runs, so a later MMAP over its range, a munmap or an EXIT applied first makes the
 * sample unwind against an address space it never ran in (the feeding thread waits for the
 * samples it handed out, or hands out only samples older than every event it applies, as a
 * uw_reader's ordering window does). A live tracker's mapping asked
 * of the kernel during an unwinding (see live) is added as an event would be. Unwinding on two
 * threads sharing a tracker goes at about twice the rate of one (docs/threads.md has the
 * figures). uw_tracker_free by one thread, after every other call on it has returned.
 */
struct uw_tracker;

struct uw_tracker_opts {
	size_t sz;
	uint64_t exit_grace_ns;   /* 0: 1 s */
	/* 1: the processes run now (a live profiler): a pc in no known mapping is asked of the
	 * kernel (PROCMAP_QUERY, or /proc/PID/maps), for processes no event told of too (one is
	 * made on its first sample or lookup; told nothing of its exit, it is kept until the
	 * tracker is freed), files are opened through /proc/PID, and modules no mapping refers to
	 * any more let go of their files and tables after a while (memory follows what runs; their
	 * handles stay: see struct uw_module) */
	int live;
	uint32_t reserved;       /* zero (where the next field goes: a library that does not know
	                          * it refuses it, -E2BIG) */
};

/* @return NULL with errno set (EINVAL for bad opts). Free before the session. */
UW_API struct uw_tracker *uw_tracker_new(struct uw_session *s, const struct uw_tracker_opts *opts);
UW_API void uw_tracker_free(struct uw_tracker *t);

/* perf's MMAP2 in plain fields: addr/len/pgoff, not start/end. */
struct uw_mmap_event {
	size_t sz;
	uint32_t pid, tid;
	uint64_t time;
	uint64_t addr, len, pgoff;
	uint32_t prot, flags;          /* PROT_*, MAP_* */
	uint32_t maj, min;
	uint64_t ino, ino_generation;
	const uint8_t *build_id;       /* NULL when unknown */
	uint32_t build_id_size;
	const char *path;              /* "[kernel.kallsyms]..." with pid (uint32_t)-1: the kernel */
};
/* Each returns 0, -EINVAL for an event that cannot be (a mapping of length 0 or past the end
 * of the address space, counted in uw_tracker_stats), or -ENOMEM. Paths and names are copied. */
UW_API int uw_tracker_mmap(struct uw_tracker *t, const struct uw_mmap_event *ev);
/* comm: the thread's name; exec: it comes with an exec (a new program: its mappings go). */
UW_API int uw_tracker_comm(struct uw_tracker *t, uint32_t pid, uint32_t tid, const char *comm, int exec,
                           uint64_t time);
UW_API int uw_tracker_fork(struct uw_tracker *t, uint32_t ppid, uint32_t ptid, uint32_t pid, uint32_t tid,
                           uint64_t time);
UW_API int uw_tracker_exit(struct uw_tracker *t, uint32_t pid, uint32_t tid, uint64_t time);
/* A build-id the recording gives for a path (perf's build-id table): modules mapped from that
 * path without one in their MMAP2 get it. */
UW_API int uw_tracker_note_build_id(struct uw_tracker *t, const char *path, const uint8_t *build_id, size_t size);
/* Forgets processes that exited more than the grace period before now (the uw_tracker_* calls
 * and uw_reader do it as time passes). */
UW_API void uw_tracker_sweep(struct uw_tracker *t, uint64_t now);

struct uw_tracker_stats {
	size_t sz;
	uint64_t processes, threads;  /* known now */
	uint64_t processes_freed;     /* exited and forgotten */
	uint64_t malformed_mmap, malformed_comm, malformed_fork, malformed_exit; /* records that could not be */
	uint64_t procmap_queries;     /* live: mappings found on demand with PROCMAP_QUERY */
	uint64_t maps_scans;          /* ... with a /proc/PID/maps scan (kernels before 6.11) */
};
UW_API int uw_tracker_stats(const struct uw_tracker *t, struct uw_tracker_stats *st);

/* Experimental. The name of thread tid of process pid as the tracker knows it now (its last
 * COMM; a thread no event named goes by its process's name, as perf shows it): NULL when the
 * tracker knows neither. The string is the session's (interned): valid while the session lives,
 * not to be freed, unchanged by later events (a later COMM gives another string). Any thread
 * (see the tracker's threads above). */
UW_API UW_EXPERIMENTAL const char *uw_tracker_comm_of(struct uw_tracker *t, uint32_t pid, uint32_t tid);

/* Maps an address of process pid to its module and module-relative address as the tracker
 * knows the process now. @return 0, or -ENOENT when no mapping holds addr (*m may be NULL for
 * anonymous mappings). Any thread (see the tracker's threads above). */
UW_API int uw_tracker_lookup(struct uw_tracker *t, uint32_t pid, uint64_t addr, struct uw_module **m, uint64_t *rel);

/* Architectures, for register masks and ABIs */
enum uw_arch { UW_ARCH_NONE = 0, UW_ARCH_X86_64 = 1 };
/* The perf registers (PERF_SAMPLE_REGS_USER bits) the unwinder reads for an architecture: ask
 * the kernel for these (perf_event_attr.sample_regs_user). 0 for an architecture not supported.
 * (The one register-mask call: uw_perf_regs_user_mask, of 0.1, is the same for x86_64.) */
UW_API uint64_t uw_regs_mask(enum uw_arch arch);

/* The ABI of a sample's user registers (uw_sample_regs.abi), as the kernel records it in a
 * sample's regs_user block: perf_event.h's PERF_SAMPLE_REGS_ABI_NONE, _32 and _64, by value. */
#define UW_REGS_ABI_NONE 0u /* no user registers (a kernel thread): the stack is not unwound */
#define UW_REGS_ABI_32 1u   /* a 32-bit process: not unwound (UW_STOP_NO_REGS) */
#define UW_REGS_ABI_64 2u   /* a 64-bit process */

/* One sample's user state, as the kernel records it. */
struct uw_sample_regs {
	size_t sz;
	uint32_t pid, tid;
	uint64_t time;                 /* for JIT code named as it was then; UINT64_MAX: now */
	uint32_t abi;                  /* UW_REGS_ABI_* (PERF_SAMPLE_REGS_ABI_*): UW_REGS_ABI_64 to
	                                * unwind; UW_REGS_ABI_NONE (0): no registers, not unwound */
	const uint64_t *regs;          /* one value per bit of regs_mask, in bit order (perf's layout) */
	uint64_t regs_mask;            /* PERF_REG_X86_* bits */
	const void *stack;             /* the copy of the user stack, starting at the sampled sp */
	uint64_t stack_size;
	/* The record's PERF_RECORD_MISC_CPUMODE: a sample taken in the kernel (1) in a system call
	 * has its user pc after the syscall instruction. 0: unknown. */
	uint32_t cpumode;
	uint32_t reserved;             /* zero (where the next field goes: a library that does not know
	                                * it refuses it, -E2BIG) */
};

struct uw_unwind_result {
	size_t sz;
	unsigned nr_frames;
	enum uw_stop_reason stop;
	/* bytes from the start of the stack copy that the unwinding read; more than stack_size
	 * when it wanted bytes past the copy's end (a caller that passed part of a stack learns
	 * that the rest would have taken it further) */
	uint64_t stack_used;
	unsigned nr_fp;                /* steps taken by frame pointers (no CFI for the pc) */
	unsigned nr_complex;           /* steps through DWARF expressions or register rules */
	uint64_t ip, sp, fp;           /* the sample's pc, stack pointer and frame pointer (from the
	                                * registers given; 0 when absent) */
	unsigned nr_sframe;            /* steps by SFrame rules (no CFI for the pc) */
};

/* Unwinds the user stack of a sample: frames[0..cap) from the registers (frame 0) outward,
 * without allocating. cap is capped by the session's max_frames. res (sz set) is filled.
 * @return 0 (res->stop says why the stack ends), or -EINVAL. */
UW_API int uw_unwind_sample(struct uw_tracker *t, const struct uw_sample_regs *in, struct uw_frame *frames,
                            unsigned cap, struct uw_unwind_result *res);
/* The same, each frame handed to fn as soon as it is found, innermost first (as elfutils'
 * dwflst_perf_sample_getframes hands Dwfl_Frames), up to the session's max_frames; the frame
 * lives during the call. fn returns non-zero to stop: res->stop is then UW_STOP_CALLBACK and
 * res->nr_frames counts the frame it stopped at. fn runs with the tracker held for reading: it
 * may symbolize, but must not call the tracker's event calls (uw_tracker_mmap, ...: they would
 * wait for ever), nor uw_tracker_lookup or uw_tracker_comm_of on the same tracker. */
typedef int (*uw_frame_fn)(void *ctx, const struct uw_frame *frame);
UW_API int uw_unwind_sample_each(struct uw_tracker *t, const struct uw_sample_regs *in, uw_frame_fn fn, void *ctx,
                                 struct uw_unwind_result *res);

/* x86_64 registers by DWARF number (System V psABI, figure 3.36): uw_frame_reg's regno. */
enum uw_reg_x86_64 {
	UW_REG_X86_64_RAX = 0, UW_REG_X86_64_RDX, UW_REG_X86_64_RCX, UW_REG_X86_64_RBX,
	UW_REG_X86_64_RSI, UW_REG_X86_64_RDI, UW_REG_X86_64_RBP, UW_REG_X86_64_RSP,
	UW_REG_X86_64_R8, UW_REG_X86_64_R9, UW_REG_X86_64_R10, UW_REG_X86_64_R11,
	UW_REG_X86_64_R12, UW_REG_X86_64_R13, UW_REG_X86_64_R14, UW_REG_X86_64_R15,
	UW_REG_X86_64_RIP = 16,   /* the frame's pc */
};

/* One frame's registers as the unwinder recovered them (as Dwflst's frames have
 * dwfl_frame_reg); valid during the callback only. */
struct uw_frame_regs;
/*
 * Experimental. The value of register regno (enum uw_reg_x86_64) in the frame.
 * Known, by frame (uw_frame.method):
 *  - frame 0 (UW_METHOD_REGS), and a frame a signal interrupted (the frame after a
 *    UW_METHOD_SIGNAL step: its registers come from the signal frame): every register the
 *    sample gives (uw_regs_mask) or the signal frame restores;
 *  - any other frame: rip (its pc: the return address) and rsp (its stack pointer, which is
 *    the CFA of the frame below); rbp when the step restored it or left it alone (CFI and SFrame
 *    rules say; by the frame-pointer chain it is the saved one); rbx and r12-r15 (callee-saved)
 *    as CFI or SFrame restored them or left them, until a step by frame pointer or the PLT rule
 *    (the function below had no CFI and may have changed them unsaid): unknown from there on.
 *    Caller-saved registers (rax, rcx, rdx, rsi, rdi, r8-r11) are unknown.
 * A frame's CFA is the sp of the frame after it.
 * @return 0 and *val, -ENOENT when the register is not known in this frame, -EINVAL.
 */
UW_API UW_EXPERIMENTAL int uw_frame_reg(const struct uw_frame_regs *regs, unsigned regno, uint64_t *val);
typedef int (*uw_frame_regs_fn)(void *ctx, const struct uw_frame *frame, const struct uw_frame_regs *regs);
/* Experimental. uw_unwind_sample_each with each frame's registers (uw_frame_reg). The same
 * rules for fn; res->stop is UW_STOP_CALLBACK when fn stopped the walk. */
UW_API UW_EXPERIMENTAL int uw_unwind_sample_walk(struct uw_tracker *t, const struct uw_sample_regs *in,
                                                 uw_frame_regs_fn fn, void *ctx, struct uw_unwind_result *res);

/* ---------------------------------------------------------------- raw perf records */
/*
 * For a profiler that owns its perf_event_open rings and feeds a tracker itself (as sysprof or
 * eu-stackprof do): the records of a ring decoded for their event (the same decoders the
 * perf.data reader uses), and the rings' records merged in time order.
 *
 * Threads: a struct uw_event is read-only once made (any number of threads may decode with it);
 * a struct uw_order is used by one thread at a time. Neither needs a session.
 *
 * Experimental: every call of this section (and its types: struct uw_record, uw_order_opts,
 * uw_order_stats, uw_order_fn).
 */

/* An event's perf_event_attr, decoded once for the records of its rings. */
struct uw_event;
/* Experimental. attr: a perf_event_attr of size bytes (PERF_ATTR_SIZE_VER0, 64, or more), copied. @return
 * NULL with errno set: EINVAL for a size below 64 or past 4096, ENOMEM. */
UW_API UW_EXPERIMENTAL struct uw_event *uw_event_new(const void *attr, size_t size);
UW_API UW_EXPERIMENTAL void uw_event_free(struct uw_event *ev);

/* A record decoded: the fields its type has; the others are zero. Pointers point into the
 * record given (valid as long as it is). */
struct uw_record {
	size_t sz;
	uint32_t type;              /* PERF_RECORD_* (uw_record_type_name) */
	uint16_t misc;              /* PERF_RECORD_MISC_*: the cpumode is misc & 7 */
	/* The event's sample_type fields: of a SAMPLE, or of the sample_id trailer other records
	 * carry with attr.sample_id_all (has_sample_id) */
	int has_sample_id;
	int has_time;               /* time is the record's (PERF_SAMPLE_TIME) */
	uint64_t time;              /* ... or, without it, FORK's and EXIT's own time */
	uint32_t pid, tid;          /* the record's own (MMAP, COMM, FORK, EXIT), else the sample's.
	                             * (uint32_t)-1: the kernel (MMAP of [kernel.kallsyms]) */
	uint64_t id, stream_id;     /* PERF_SAMPLE_IDENTIFIER or _ID; _STREAM_ID */
	uint32_t cpu;               /* PERF_SAMPLE_CPU */
	/* SAMPLE */
	uint64_t ip, addr, period;
	uint64_t nr_callchain;
	const uint64_t *callchain;  /* nr_callchain entries, PERF_CONTEXT_* markers included */
	uint64_t regs_abi;          /* PERF_SAMPLE_REGS_ABI_* (0: no registers: a kernel thread) */
	const uint64_t *regs;       /* one per bit of regs_mask, in bit order */
	uint64_t regs_mask;         /* the event's sample_regs_user */
	const void *stack;          /* the user stack copy from the sampled sp ... */
	uint64_t stack_size;        /* ... its bytes the kernel filled (dyn_size) */
	/* MMAP, MMAP2 (as struct uw_mmap_event takes them) */
	uint64_t map_addr, map_len, pgoff;
	uint32_t prot, flags;       /* MMAP: PROT_READ|PROT_EXEC, or PROT_READ for a data mapping */
	uint32_t maj, min;
	uint64_t ino, ino_generation;
	const uint8_t *build_id;    /* MMAP2 with PERF_RECORD_MISC_MMAP_BUILD_ID (and the event's
	                             * attr.build_id); else NULL */
	uint32_t build_id_size;
	const char *path;           /* NUL-terminated */
	/* COMM */
	const char *comm;           /* NUL-terminated */
	int exec;                   /* PERF_RECORD_MISC_COMM_EXEC: the thread exec'd */
	/* FORK, EXIT (pid, tid above: the child's, the exiting thread's) */
	uint32_t ppid, ptid;
	/* LOST: events lost; LOST_SAMPLES: samples lost */
	uint64_t lost;
	/* When the decoding fails: what was wrong (a static string); NULL else */
	const char *error;
};

/* Experimental. Decodes a raw record (perf_event_header and body, len bytes, 8-byte aligned as in a ring:
 * copy a record that wraps around the ring's end into a buffer of uint64_t) of event ev.
 * SAMPLE, MMAP, MMAP2, COMM, FORK, EXIT, LOST and LOST_SAMPLES are decoded; any other type
 * gets its header and sample_id trailer. out->sz set by the caller (fields past it are not
 * written). @return 0; -EINVAL (NULL arguments, an unaligned record, out->sz too small);
 * -UW_ETRUNC (len shorter than the header says, or than the fields the type has);
 * -UW_EFORMAT (sizes that do not add up: a callchain, registers or stack past the record's end,
 * a path or name not terminated); out->error says which. */
UW_API UW_EXPERIMENTAL int uw_record_decode(const struct uw_event *ev, const void *rec, size_t len, struct uw_record *out);

/*
 * Experimental. Records of several rings merged in time order. Each ring's records come in its own order
 * (a per-CPU ring is in time order); the merge holds them and hands them to fn oldest first
 * (equal times in the order pushed).
 *
 * How far it may release: a record can be handed on only when no ring can still deliver an
 * older one. uw_order_round follows perf's FINISHED_ROUND rule: call it after each pass that
 * read every ring to its head; it releases the records no newer than the newest record pushed
 * before the previous round (a record written after a pass began may be older than records
 * seen in that pass, never older than those of the pass before). uw_order_release_to releases
 * to a time the caller knows no ring will go below (say, the minimum over rings of the time
 * each ring was last drained at, taken with the events' clock). uw_order_flush releases
 * everything (the end). A record pushed older than one already released is late: it is
 * handed on at the next release, in push order, and counted.
 */
struct uw_order;
struct uw_order_opts {
	size_t sz;
	size_t max_bytes;           /* bytes of records held (copied): past it a release hands on
	                             * the oldest before their turn (late ones may follow); 0: 64 MiB */
};
/* Experimental. @return NULL with errno set (EINVAL, E2BIG: a larger opts with a field this
 * library does not know set, ENOMEM). */
UW_API UW_EXPERIMENTAL struct uw_order *uw_order_new(const struct uw_order_opts *opts);
UW_API UW_EXPERIMENTAL void uw_order_free(struct uw_order *o);
/* A record handed on: its ring, time and bytes (valid during the call); non-zero stops the
 * release (returned by it; the records not handed on stay held). */
typedef int (*uw_order_fn)(void *ctx, unsigned ring, uint64_t time, const void *rec, size_t len);
/* Experimental. Holds a record (copied) of ring `ring` with its time (uw_record_decode's; a record without
 * one: the time of its ring's record before). @return 0, -EINVAL, -ENOMEM. */
UW_API UW_EXPERIMENTAL int uw_order_push(struct uw_order *o, unsigned ring, uint64_t time, const void *rec,
                                         size_t len);
/* Experimental. The releases (see above). */
UW_API UW_EXPERIMENTAL int uw_order_round(struct uw_order *o, uw_order_fn fn, void *ctx);
UW_API UW_EXPERIMENTAL int uw_order_release_to(struct uw_order *o, uint64_t time, uw_order_fn fn, void *ctx);
UW_API UW_EXPERIMENTAL int uw_order_flush(struct uw_order *o, uw_order_fn fn, void *ctx);
struct uw_order_stats {
	size_t sz;
	uint64_t pushed, released;
	uint64_t held, held_bytes;  /* now */
	uint64_t late;              /* pushed older than a record already released */
	uint64_t early;             /* released before their turn to keep to max_bytes */
};
/* Experimental. */
UW_API UW_EXPERIMENTAL int uw_order_stats(const struct uw_order *o, struct uw_order_stats *st);

/* ---------------------------------------------------------------- perf.data reader */

struct uw_reader_opts {
	size_t sz;
	int pid;                /* only samples of this pid (0: all) */
	int tid;                /* only samples of this tid (0: all) */
	const char *comm;       /* only samples whose thread name is this */
	uw_sample_fn on_sample;
	void *ctx;
	/* progress: called about every 64 KiB of input with bytes done and total (0 when unknown) */
	void (*on_progress)(void *ctx, uint64_t done, uint64_t total);
	size_t max_queue_bytes; /* ordering queue cap; 0: 512 MiB */
	/* Files are read record by record, keeping of each sample's user stack only the part
	 * unwinding used on recent samples (the rest is read back when a stack needs more).
	 * Set this to get every sample's whole stack copy in uw_sample.stack. */
	int full_stacks;
	unsigned max_kernel_frames; /* kernel frames kept per sample; 0: 512; at most 65536 */
	/* Further filters, each a list (perf report's --pid, --tid, --comm take lists): a sample
	 * passes when it matches every non-empty list (and pid, tid, comm above). */
	const int *pids;
	size_t npids;
	const int *tids;
	size_t ntids;
	const char *const *comms;
	size_t ncomms;
	/* Only samples of this event (its name as uw_reader_event_name gives it); NULL: all */
	const char *event;
	/* The tracker to feed (kept by the caller, who frees it after the reader); NULL: the
	 * reader makes its own (live when created by uw_reader_new for pushed records) */
	struct uw_tracker *tracker;
	/* 1: a stack whose copy ended before its root is completed from its thread's other
	 * complete stacks: a frame with the outermost frame's return address and stack pointer is
	 * taken for the same activation when the callers of that frame are the same in a stack
	 * before the sample and in the first one after it (seen on both sides: the activation
	 * outlived the sample). The frames added are marked UW_METHOD_STITCHED. Such a sample is
	 * held (copied) until its thread's next 64 samples decide, so it is delivered after
	 * samples of other threads, and of its own, that came later. Off by default. */
	int stitch;
	/* Use at most this many bytes of each sample's user stack copy (as if recorded with
	 * --call-graph dwarf,N: to measure what a smaller copy loses); 0: all */
	uint64_t stack_limit;
};

struct uw_reader;

/* Opens a perf.data file ("-" reads standard input) in file or pipe mode.
 * Returns NULL with errno set; uw_session_errmsg() says why (file, offset, what was expected).
 * errno is a system error (ENOENT, EACCES, ENOMEM, ...) or a project code (uw_strerror names
 * it): UW_EMAGIC not a perf.data file (another file, or a directory without perf's DIR/data),
 * UW_ETRUNC shorter than its header says, UW_EFORMAT a header or record perf would refuse,
 * UW_EUNSUPP a layout it does not read. */
UW_API struct uw_reader *uw_reader_open(struct uw_session *s, const char *path,
                                        const struct uw_reader_opts *opts);
/* A reader of records pushed one at a time (a live profiler's ring buffers, or any other
 * source), in any order: records are put in time order as a file's are (FINISHED_ROUND
 * semantics: uw_reader_round after each pass over the rings), the tracker is fed, and samples
 * are unwound and delivered to opts->on_sample. NULL with errno set. */
UW_API struct uw_reader *uw_reader_new(struct uw_session *s, const struct uw_reader_opts *opts);
/* An event (perf_event_attr of size bytes) and the ids of its ring buffers; name NULL: perf's
 * default name for it. Events come before the records that refer to them. @return 0, -EINVAL,
 * -ENOMEM. */
UW_API int uw_reader_add_event(struct uw_reader *r, const void *attr, size_t size, const uint64_t *ids,
                               size_t nids, const char *name);
/* A raw record (perf_event_header and body, len bytes; copied if it must wait for its turn).
 * @return 0, or the first error (malformed input, the callback's -UW_ECANCELED), after which
 * every push fails with it. */
UW_API int uw_reader_push(struct uw_reader *r, const void *rec, size_t len);
/* The end of a pass over every ring: records older than the previous round may go. */
UW_API int uw_reader_round(struct uw_reader *r);
/* Delivers every record held (the end of the input). */
UW_API int uw_reader_flush(struct uw_reader *r);
/* The tracker the reader feeds (opts->tracker, or its own); valid while the reader lives. */
UW_API struct uw_tracker *uw_reader_tracker(struct uw_reader *r);

/* Reads every record, tracks processes, unwinds samples and calls opts->on_sample in time order.
 * @return 0 at the end of the data; a negative error for malformed input (what was read up to
 * there has been delivered); -UW_ECANCELED when the callback asked to stop. */
UW_API int uw_reader_run(struct uw_reader *r);
UW_API void uw_reader_free(struct uw_reader *r);

/* Number of events (attributes) in the recording, and each one's name ("cpu-clock", ...). */
UW_API unsigned uw_reader_nr_events(const struct uw_reader *r);
UW_API const char *uw_reader_event_name(const struct uw_reader *r, unsigned idx);

/* What the recording says about where it was made (perf.data header features). */
enum uw_info {
	UW_INFO_HOSTNAME,
	UW_INFO_OSRELEASE,
	UW_INFO_PERF_VERSION,
	UW_INFO_ARCH,
	UW_INFO_NRCPUS,     /* "online/available" */
	UW_INFO_CMDLINE,    /* the recording command, arguments joined by spaces */
	UW_INFO__COUNT
};
/* @return the value, or NULL when the recording does not say. Valid while the reader lives.
 * In pipe mode the values arrive with the records: ask after uw_reader_run. */
UW_API const char *uw_reader_info(const struct uw_reader *r, enum uw_info key);
/* A sample time of the recording (ns, its clock) in wall-clock ns since the epoch, when the
 * recording says how (perf record -k with clock data, or a file's time). @return 0 or -ENOENT. */
UW_API int uw_reader_wall_clock(const struct uw_reader *r, uint64_t time, uint64_t *wall);

struct uw_reader_stats {
	size_t sz;
	uint64_t records;          /* all records read */
	uint64_t samples;          /* SAMPLE records */
	uint64_t samples_delivered;/* after filters */
	uint64_t unknown_records;  /* skipped by size */
	uint64_t late_records;     /* arrived after their ordering window had been flushed */
	uint64_t lost_events;      /* events lost, as perf report's "Total Lost Samples": the sum of
	                            * LOST_SAMPLES records when there are any (perf record writes
	                            * them from each event's lost count: the losses its LOST records
	                            * report too), else of LOST records */
	uint64_t lost_records;     /* number of LOST records */
	uint64_t user_frames;
	uint64_t samples_no_user;  /* kernel-only samples: no user stack expected */
	uint64_t exit_before_sample; /* samples of a process that had already exited */
	uint64_t bytes;            /* input size */
	uint64_t malformed_samples;/* SAMPLE records that could not be decoded (dropped) */
	uint64_t stack_rereads;    /* samples whose stack had to be read whole after a cut one */
	uint64_t stack_bytes_read; /* bytes of user stack read from the file (all, without cuts) */
	uint64_t skipped_records;  /* records of types the reader does not use (by type:
	                            * uw_reader_nr_records) */
	uint64_t compressed_bytes; /* payload of COMPRESSED records (perf record -z) */
	uint64_t decompressed_bytes; /* the records they held */
	uint64_t stops_stated;     /* samples whose stop reason the file states (written by unwound) */
	uint64_t stops_judged;     /* samples whose callchain was judged by its outermost frame */
	uint64_t unfinished;       /* 1: the file was not finished (its writer stopped before its end):
	                            * all its data was read */
	uint64_t records_cut;      /* 1: ... and its last record was cut short (not read) */
	uint64_t stop_reasons[UW_STOP_MAX]; /* samples by enum uw_stop_reason of their user part */
	uint64_t frames_by_method[UW_METHOD_MAX]; /* user frames by how each was found
	                            * (enum uw_frame_method), of the stacks unwound here */
	/* deferred user callchains (Linux 6.19+: PERF_RECORD_CALLCHAIN_DEFERRED) */
	uint64_t deferred_samples;  /* samples whose user part was deferred */
	uint64_t deferred_stitched; /* ... completed by their thread's record */
	uint64_t deferred_missing;  /* ... whose record never came (kernel part only) */
	uint64_t deferred_records;  /* CALLCHAIN_DEFERRED records read */
	uint64_t deferred_unmatched;/* ... that no waiting sample carried the cookie of */
	uint64_t deferred_malformed;/* ... that could not be decoded */
	/* truncated stacks completed (uw_reader_opts.stitch) */
	uint64_t stitched_samples;  /* stacks cut short by their copy, completed */
	uint64_t stitched_frames;   /* frames added to them */
	uint64_t stitch_failed;     /* stacks cut short that no reference completed */
	uint64_t stitch_given_up;   /* times the held samples and references passed 64 MiB:
	                             * the held ones went as they were, the references were dropped */
	/* (new fields go here, after every older one) */
};
/* Fills st (st->sz must be set) with counts so far. */
UW_API int uw_reader_stats(const struct uw_reader *r, struct uw_reader_stats *st);

/* Records of one type read so far (PERF_RECORD_* numbers; compressed records count as
 * COMPRESSED and again as what they held), and a type's name ("SAMPLE", "SWITCH_CPU_WIDE", ...;
 * "unknown" for a type perf does not define). */
UW_API uint64_t uw_reader_nr_records(const struct uw_reader *r, uint32_t type);
/* Of those, the records skipped: of a type the reader does not use (SWITCH, KSYMBOL, ...). */
UW_API uint64_t uw_reader_nr_skipped(const struct uw_reader *r, uint32_t type);
UW_API const char *uw_record_type_name(uint32_t type);

/* Per event (attribute): what uw_reader_stats counts for all of them. */
struct uw_event_stats {
	size_t sz;
	uint64_t samples;          /* SAMPLE records of this event */
	uint64_t samples_delivered;/* after filters */
	uint64_t period;           /* sum of the delivered samples' periods */
	uint64_t samples_no_user;  /* kernel-only samples */
	uint64_t user_frames;
	uint64_t stop_reasons[UW_STOP_MAX]; /* by enum uw_stop_reason */
};
/* @return 0, or -EINVAL when idx is not an event of the recording or st->sz is not set. */
UW_API int uw_reader_event_stats(const struct uw_reader *r, unsigned idx, struct uw_event_stats *st);

/* ---------------------------------------------------------------- kernel unwinding for a reader */
/*
 * Experimental: every call of this section and its types.
 *
 * For a live profiler that owns its perf_event_open events and rings and pushes their records
 * into a reader (uw_reader_new, uw_reader_push, uw_reader_round: examples/live_profiler.c), the
 * eBPF program uw_record unwinds with (docs/kernel-unwind.md): attached to the profiler's
 * sampling events, it walks each sampled thread's user stack in the kernel, where it lives,
 * with the unwind rows (CFI, SFrame, PLT and signal-frame rules; frame pointers where a module
 * has none) of the modules under it, loaded into BPF maps as the records pushed tell of
 * processes and their mappings. No stack is copied: a stack deeper than any copy (perf's at
 * most 64 KiB) is whole, up to max_frames. Samples come out of the reader's on_sample as a
 * stack copy's do, frames the kernel walked marked UW_METHOD_BPF_ROWS or UW_METHOD_BPF_FP.
 * Where the walk cannot go on (a process or module whose mappings or table are not loaded yet:
 * a program's first milliseconds; a rule the program does not follow) the program hands over
 * the registers there and up to copy_bytes of stack, and the reader finishes the stack in user
 * space (methods UW_METHOD_CFI, ...), as it unwinds a stack copy. A frame the walk found with
 * mappings the process has changed since is cut off (never a wrong stack; counted as stale).
 *
 * Needs: a library built with it (uw_kernel_unwind_built), x86_64, Linux 5.17 with BTF
 * (/sys/kernel/btf/vmlinux), root or CAP_BPF and CAP_PERFMON, no kernel lockdown
 * (confidentiality). uw_kernel_unwind_load says which is missing; the profiler then goes on
 * with stack copies (its events' PERF_SAMPLE_REGS_USER and PERF_SAMPLE_STACK_USER).
 *
 * The events, checked by uw_kernel_unwind_attach (-EINVAL and the reason in the session's
 * message otherwise):
 *  - sampling events (sample_period or sample_freq), added to the reader with all their ids
 *    (uw_reader_add_event) before they are attached, of any number of attributes: each of the
 *    program's records says the id of the event it is a sample of (an inherited copy's is its
 *    parent's, as in the kernel's samples). On a kernel before Linux 6.2 (no
 *    bpf_cast_to_kern_ctx) the records cannot say: the events attached must be of one
 *    attribute, their samples are the first attached one's;
 *  - use_clockid with clockid CLOCK_MONOTONIC: the program's times are CLOCK_MONOTONIC
 *    (bpf_ktime_get_ns), put in order with the side-band records' times;
 *  - sample_id_all, and PERF_SAMPLE_TIME in sample_type: the side-band records carry their
 *    time (MMAP2, COMM, FORK, EXIT: ask for them with mmap, mmap2, comm, comm_exec and task,
 *    as for stack copies);
 *  - sample_type within PERF_SAMPLE_IDENTIFIER, IP, TID, TIME, ID, CPU, PERIOD, CALLCHAIN,
 *    REGS_USER and STACK_USER: what a sample walked in the kernel has (the kernel callchain
 *    where the event samples the kernel). REGS_USER and STACK_USER cost nothing once attached:
 *    the kernel writes no sample of its own to the event's ring then, only the side-band.
 * Attach before the sampled task creates threads (a command not yet exec'd, as in the example): a
 * thread created between an event's opening and its attach inherits the event without the
 * program, and the kernel's context switches can then leave the task's other threads with such
 * a copy on that CPU too (seen on 6.18). Their samples are written to the event's ring as
 * without kernel unwinding (unwound from a stack copy with REGS_USER and STACK_USER) and counted
 * as copied. For a process that runs already, load first and attach right after opening.
 *
 * A profiler's loop (the program's ring wakes its fd only once an eighth full, so drain it at
 * every pass whatever the poll says; a timeout of about 20 ms keeps the maps up to date):
 *
 *     poll(the rings' fds and uw_kernel_unwind_fd(ku))
 *     uw_kernel_unwind_drain(ku);     the program's records into the reader, first
 *     uw_reader_push(r, ...);         every ring's records
 *     uw_reader_round(r);
 *     uw_kernel_unwind_update(ku);    the maps brought up to date
 *
 * and at the end uw_kernel_unwind_drain, the rings, uw_reader_flush. Every record pushed into
 * the reader is looked at as it is pushed (a process's mappings are loaded from its records as
 * they are read, before the reader has put them in order).
 *
 * Threads: a uw_kernel_unwind is used by the thread that pushes into its reader, one call at a
 * time (the reader's rule); it runs two threads of its own (tables are built on one, the swaps
 * into the program's maps made on the other). Owned by the caller; freed before its reader.
 * The event fds stay the caller's: the program holds a reference to each event it is attached
 * to until uw_kernel_unwind_free.
 */
struct uw_kernel_unwind;

struct uw_kernel_unwind_opts {
	size_t sz;
	uint64_t max_bytes;        /* cap on the bytes of module tables and mappings in BPF maps
	                            * (0: 64 MiB): at the cap, tables no process maps are dropped, and
	                            * stacks through what does not fit are finished in user space */
	unsigned max_frames;       /* user frames walked per sample (0: the session's max_frames;
	                            * at most 2048) */
	unsigned copy_bytes;       /* stack bytes handed over where a walk stops (0: 16384; at
	                            * most 32768) */
	unsigned ring_bytes;       /* the program's ring buffer (0: 32 MiB; a power of two, at least
	                            * 4096) */
	uint32_t reserved;         /* zero (where the next field goes: a library that does not know
	                            * it refuses it, -E2BIG) */
};

/* Experimental. Kernel unwinding for the records pushed into r (a reader of pushed records,
 * uw_reader_new; one per reader), not loaded yet. opts may be NULL.
 * @return NULL with errno set, and the session's message saying why: EINVAL (no reader, a
 * reader of a file, an option out of range), E2BIG (opts from a newer header with a field this
 * library does not know set), EBUSY (r has one already), ENOMEM. */
UW_API UW_EXPERIMENTAL struct uw_kernel_unwind *uw_kernel_unwind_new(struct uw_reader *r,
                                                                     const struct uw_kernel_unwind_opts *opts);

/* Experimental. Loads the program and follows the reader's records from now on. It returns once
 * the kernel's verifier has checked the program, which is the whole of the setup's time:
 * measured 2026-12-07 (Linux 6.18, 2 CPUs shared with other builds), 1.9 s of CPU (system time;
 * issue 41's probe found ~1.25 s on a quiet machine of the kind) and 8.6 to 13 s of wall time at a load average of
 * 210; examples/live_profiler -k of `true` against -c, 5 alternated runs. uw_kernel_unwind_new,
 * _attach (per event) and _prime of a new command take milliseconds beside it (_prime of running
 * processes: their tables built, up to its timeout). uw_record does not wait for it (it verifies
 * on a thread of its own while it records with stack copies: docs/kernel-unwind.md,
 * "Start-up"); here, load before the events are enabled, or accept that samples wait. A refusal
 * leaves the reader as it was, for stack copies.
 * @return 0, or with the reason in one line in the session's message (uw_session_errmsg):
 * -EOPNOTSUPP (not compiled in, the kernel has no BTF, kernel lockdown), -EPERM (not
 * privileged), -ENOSYS (a kernel without BPF), another error of the kernel's (the verifier
 * refused the program: the end of its log), -EALREADY (loaded already). */
UW_API UW_EXPERIMENTAL int uw_kernel_unwind_load(struct uw_kernel_unwind *ku);

/* Experimental. Attaches the loaded program to a sampling event (its perf_event_open fd, which
 * stays the caller's; see above for what the event must be). The event is left disabled
 * (libbpf's attaching enables it): enable it when sampling should begin (PERF_EVENT_IOC_ENABLE,
 * or enable_on_exec). @return 0, or, said in the session's message: -EINVAL (not loaded, not a
 * perf event, an event not as required, before Linux 6.2 an event of a second attribute),
 * -ENOENT (its id was not added to the reader), or the kernel's error. */
UW_API UW_EXPERIMENTAL int uw_kernel_unwind_attach(struct uw_kernel_unwind *ku, int perf_fd);

/* Experimental. A descriptor (ku's) to poll with the rings: readable when the program's ring has
 * records to drain (an eighth full), a table was built, or every 2 ms for 150 ms after a
 * program started (its mappings are read as they come). @return it, or -EINVAL (not loaded). */
UW_API UW_EXPERIMENTAL int uw_kernel_unwind_fd(const struct uw_kernel_unwind *ku);

/* Experimental. The program's records (one per sample) pushed into the reader: at every pass,
 * before the rings' records (the side-band before each sample is in the rings by then).
 * @return 0, -EINVAL (not loaded), or the reader's error (as uw_reader_push's). */
UW_API UW_EXPERIMENTAL int uw_kernel_unwind_drain(struct uw_kernel_unwind *ku);

/* Experimental. After uw_reader_round: the program's maps brought up to date with what the
 * records read and delivered say (processes' mappings, tables built since, processes exited);
 * the swaps are made on ku's thread. @return 0, -EINVAL (not loaded), -ENOMEM. */
UW_API UW_EXPERIMENTAL int uw_kernel_unwind_update(struct uw_kernel_unwind *ku);

/* Experimental. Optional, before the events are enabled, for processes that run already: the
 * records pushed so far delivered (uw_reader_flush: a profiler's MMAP2 and COMM records of
 * those processes, read from /proc), their mappings and their modules' tables loaded, waiting
 * up to timeout_ms (0: 60 s) for the tables to be built: their stacks are then walked in the
 * kernel from their first sample. @return 0, -EINVAL (not loaded), or the reader's error. */
UW_API UW_EXPERIMENTAL int uw_kernel_unwind_prime(struct uw_kernel_unwind *ku, unsigned timeout_ms);

struct uw_kernel_unwind_stats {
	size_t sz;
	uint64_t samples;          /* samples the program walked (or began to) */
	uint64_t frames;           /* user frames it walked */
	uint64_t lost;             /* samples it could not hand over (its ring was full): lost */
	uint64_t copied;           /* samples of the attached events' attribute pushed from the
	                            * rings: the kernel wrote them itself, the program did not run
	                            * for them (see "Attach before ..." above) */
	uint64_t finished;         /* samples delivered whose stack was finished in user space from
	                            * the program's stack copy */
	uint64_t finished_missing; /* ... of those, for want of the process's mappings or a
	                            * module's table (not loaded yet, or refused at the cap) */
	uint64_t late_samples;     /* samples of each program after its first 200 */
	uint64_t late_missing;     /* ... of those, finished in user space for want of mappings
	                            * or a table */
	uint64_t stale;            /* stacks cut where the walk used mappings the process had
	                            * changed since */
	/* walks handed over to user space, by reason */
	uint64_t handover_no_process;  /* no mappings loaded for the process */
	uint64_t handover_no_mapping;  /* a pc in none of its mappings loaded */
	uint64_t handover_no_table;    /* a module whose table is not loaded */
	uint64_t handover_rule;        /* a rule the program does not follow (DWARF expressions) */
	uint64_t handover_frame0;      /* frame 0 with no row and no usable frame pointer */
	uint64_t handover_bad_table;   /* a table that does not hold together */
	uint64_t tables;           /* module tables loaded into BPF maps */
	uint64_t tables_built;     /* ... built (on ku's thread) */
	uint64_t tables_evicted;   /* ... dropped to make room under max_bytes */
	uint64_t map_bytes;        /* bytes in BPF maps now (tables and mappings) */
	uint64_t map_bytes_peak;   /* ... at most */
	uint64_t run_count;        /* the program's runs and their time, counted by the kernel while */
	uint64_t run_time_ns;      /* kernel.bpf_stats_enabled is 1 (else 0) */
	/* (new fields go here) */
};
/* Experimental. Counts so far (zero before uw_kernel_unwind_load). @return 0, or -EINVAL (st->sz
 * not set). */
UW_API UW_EXPERIMENTAL int uw_kernel_unwind_stats(struct uw_kernel_unwind *ku, struct uw_kernel_unwind_stats *st);

/* Experimental. Detaches the program from every event, unloads it, ends its threads and frees
 * ku; the reader is as before uw_kernel_unwind_load (records pushed later are not looked at).
 * Call it after uw_reader_flush (a sample still held would be delivered without the check of
 * changed mappings) and before uw_reader_free. NULL is ignored. */
UW_API UW_EXPERIMENTAL void uw_kernel_unwind_free(struct uw_kernel_unwind *ku);

/* ---------------------------------------------------------------- record */

/* Deprecated: uw_regs_mask(UW_ARCH_X86_64) returns the same mask (the general registers and
 * the instruction pointer), for any architecture supported. Kept (same symbol, same result) for
 * programs built against 0.1. */
UW_API uint64_t uw_perf_regs_user_mask(void) UW_DEPRECATED("use uw_regs_mask(UW_ARCH_X86_64)");

struct uw_record_status {
	size_t sz;
	uint64_t samples;          /* samples unwound */
	uint64_t samples_root;     /* of those, reaching a root frame */
	uint64_t lost;             /* events the kernel lost (ring buffers full; with kernel unwinding,
	                            * kernel_lost included) */
	uint64_t throttled;        /* THROTTLE records */
	uint64_t bytes_out;        /* written so far */
	uint64_t procmap_query;    /* mappings found on demand with PROCMAP_QUERY */
	uint64_t maps_scan;        /* ... with a /proc/PID/maps scan (older kernels) */
	double elapsed;            /* seconds since the events were enabled */
	double cpu_self;           /* the recorder's own CPU time (seconds) since the events were
	                            * enabled (over elapsed: its share of a CPU); cpu_setup, before */
	/* the command (opts.argv), in uw_record's final status: */
	int workload_wstatus;      /* its wait status (waitpid); -1: no command, or not reaped */
	int workload_errno;        /* non-zero: it could not be executed, for this reason */
	int workload_stopped;      /* 1: it outlived the recording and the recorder ended it (SIGTERM) */
	uint64_t samples_no_user;  /* of samples: in kernel threads, with no user stack to unwind
	                            * (samples_root counts among the others, as report's summary) */
	uint64_t stitched;         /* (opts.stitch) stacks cut short by their copy, completed */
	uint64_t stitch_failed;    /* ... not completed */
	/* (opts.off_cpu; the final status only) */
	uint64_t offcpu_switches;  /* switch-out samples of the threads followed */
	uint64_t offcpu_samples;   /* offcpu-time samples written */
	uint64_t offcpu_ns;        /* off-CPU time in all, ns */
	uint64_t offcpu_open_at_end; /* threads still off the CPU when the recording ended */
	/* kernel unwinding (opts.unwind): */
	int kernel_unwind;         /* 1: user stacks were walked in the kernel (eBPF), 0: copied */
	char unwind_why[160];      /* kernel_unwind 0: why not ("" when copies were asked for) */
	uint64_t kernel_samples;   /* samples the program walked (or began to) */
	uint64_t kernel_finished;  /* of those, finished in user space from a stack copy the program
	                            * handed over (a module whose table was not loaded yet, a rule
	                            * it does not follow) */
	uint64_t kernel_stale;     /* of those, stacks cut where the walk used mappings the process
	                            * had changed since (generation check) */
	uint64_t kernel_lost;      /* samples the program could not hand over (its ring was full) */
	uint64_t kernel_map_bytes; /* the most bytes held in BPF maps (tables and mappings) */
	uint64_t kernel_tables;    /* module tables loaded into BPF maps */
	/* (opts.off_cpu) where the switch-out stacks came from: */
	uint64_t offcpu_kernel;    /* walked in the kernel at the switch (kernel unwinding: no stack
	                            * copied; included in kernel_samples) */
	uint64_t offcpu_kernel_finished; /* of those, finished in user space from the program's stack
	                            * copy (included in kernel_finished) */
	uint64_t offcpu_copied;    /* copied by the kernel at the switch (stack copies: --unwind
	                            * copy, or kernel unwinding unavailable) */
	uint64_t offcpu_blocked;   /* threads of -p/-t found blocked at the start, their stacks read
	                            * with process_vm_readv */
	/* (opts.off_cpu) waits timed in the kernel (UW_OFFCPU_KERNEL): */
	int offcpu_kernel_timed;   /* 1: every wait was timed by the eBPF program at the sched_switch
	                            * tracepoint (no context-switches event, no switch records) */
	uint32_t reserved;
	uint64_t offcpu_waits;     /* waits of the followed threads (their switch-outs), each timed */
	uint64_t offcpu_walked;    /* of those, their stack walked at the switch-out (included in
	                            * offcpu_kernel) */
	uint64_t offcpu_keyed;     /* waits not walked, given the stack walked at the same user pc and
	                            * stack pointer of their thread (their key) */
	uint64_t offcpu_keyed_ns;  /* ... their time, ns */
	uint64_t offcpu_unkeyed;   /* waits not walked whose key never was: written with their user pc
	                            * alone */
	uint64_t offcpu_unkeyed_ns;
	uint64_t offcpu_untimed;   /* switches of followed threads the program could not time: no
	                            * state for the thread could be made there (the kernel makes no
	                            * task storage in a tracing program while its per-CPU task
	                            * storage lock is taken, or without memory at hand; the threads
	                            * followed at the start have theirs made by the recorder). Their
	                            * waits are missing or joined to the next */
	double cpu_setup;          /* the recorder's CPU time (seconds) before the events were
	                            * enabled: the BPF program loaded (the kernel's verifier), the
	                            * tables, the processes' mappings read */
	uint64_t max_stack;        /* (final status) the most frames one written callchain holds
	                            * (uw_inject_stats.max_stack) */
};

struct uw_record_opts {
	size_t sz;
	const char *output;        /* NULL: "perf.data" */
	const char *event;         /* "cycles" (default; "cpu-clock" where the machine has no
				    * hardware counters, logged as a warning when asked for),
				    * "cpu-clock", "task-clock", "instructions", "page-faults"; or
				    * several, separated by commas ("cpu-clock,page-faults", at most
				    * 8, each once): attributes 0, 1, ... of the output in that order
				    * (with off_cpu, offcpu-time follows them), each sample unwound.
				    * Kernel unwinding of several events needs Linux 6.2 (else copies,
				    * with uw_record_status.unwind_why saying so) */
	unsigned freq;             /* samples per second and CPU (default 999) */
	uint64_t period;           /* instead of freq: one sample every period events */
	int system_wide;           /* -a: every CPU, every process (with argv: while it runs) */
	const int *pids;           /* -p: these processes (all their threads; a thread's id stands
	                            * for its process) */
	size_t npids;
	const int *tids;           /* -t: these threads */
	size_t ntids;
	char *const *argv;         /* a command to start and record (NULL-terminated); killed with
	                            * SIGKILL if the recorder dies first (PR_SET_PDEATHSIG) */
	unsigned stack_size;       /* user stack bytes per sample (default 16384, at most 65528) */
	double duration;           /* seconds; 0: until stopped */
	unsigned mmap_pages;       /* data pages per ring buffer (power of two; default 1024) */
	volatile int *stop;        /* set non-zero (a signal handler may) to stop */
	/* called as the recording begins (its events enabled: elapsed 0, the moment to say it has
	 * started), then about once a second with the status so far */
	void (*on_status)(void *ctx, const struct uw_record_status *st);
	void *ctx;
	int cmd_argc;              /* the recording command, for the header */
	const char *const *cmd_argv;
	int call_graph;            /* UW_CALL_GRAPH_DWARF (default): user stacks copied and unwound
	                            * here; UW_CALL_GRAPH_FP: the kernel's frame-pointer callchains */
	const int *cpus;           /* -C: only these CPUs (NULL: all) */
	size_t ncpus;
	int stitch;                /* as uw_reader_opts */
	/* 1: off-CPU time too. Every switch-out of a followed thread is sampled with its stack
	 * (the context-switches event; taken as the CPU samples' are) and, when the thread runs
	 * again, written as one sample of the event "offcpu-time" (PERF_TYPE_SOFTWARE,
	 * PERF_COUNT_SW_BPF_OUTPUT, as perf record --off-cpu) whose period is the time off the CPU
	 * in ns; threads of -p/-t blocked when the recording starts are counted from its start
	 * (their stack read at the sp of /proc/TID/syscall), threads off the CPU at its end up to
	 * it. Needs the kernel sampled (perf_event_paranoid 1 or less). */
	int off_cpu;
	unsigned off_cpu_every;    /* the stack taken at one switch-out in N (0: every one); every
	                            * wait is still timed (switch records), one without a stack of
	                            * its own given its thread's last; written as the offcpu-time
	                            * event's sample_period */
	uint32_t reserved;         /* zero (no padding inside the struct) */
	uint64_t off_cpu_min_ns;   /* waits shorter are added up per thread and stack and written
	                            * when their total reaches it, or at the end (0: 500 us;
	                            * UINT64_MAX: every wait aggregated, written at the end) */
	int unwind;                /* with UW_CALL_GRAPH_DWARF: UW_UNWIND_AUTO (default: the recording
	                            * begins at once with stack copies while the kernel walker's
	                            * program is verified on a thread, 0.2 to several seconds of
	                            * CPU, then walks in the kernel once it is attached to the open
	                            * events (tasks whose event was inherited before keep copies);
	                            * where it cannot be, stack copies, the reason logged as a
	                            * warning), UW_UNWIND_KERNEL (in the kernel from the first
	                            * sample: the recording begins once the program is verified;
	                            * or fail), or UW_UNWIND_COPY (stack copies) */
	uint32_t reserved2;        /* zero (no padding inside the struct) */
	uint64_t kernel_max_bytes; /* kernel unwinding: cap on BPF map bytes (0: 64 MiB) */
	/* (off_cpu) how waits are timed: UW_OFFCPU_AUTO (default: UW_OFFCPU_KERNEL with
	 * UW_UNWIND_KERNEL and off_cpu_every 0, else UW_OFFCPU_SWITCH: its samples copied until the
	 * program is verified, as the CPU samples'), UW_OFFCPU_KERNEL
	 * (every wait timed by the eBPF program at the sched_switch tracepoint, in the kernel; its
	 * stack walked at the switch-out within off_cpu_walks, else given the stack walked at the
	 * same user pc and stack pointer of its thread; the CPU samples' events opened per CPU, the
	 * followed threads' samples kept by the program; needs kernel unwinding, else fails), or
	 * UW_OFFCPU_SWITCH (the context-switches event with switch records: every switch-out
	 * sampled, off_cpu_every N one in N) */
	int off_cpu_mode;
	unsigned off_cpu_walks;    /* UW_OFFCPU_KERNEL: stacks walked per second and CPU at most
	                            * (0: 500) */
	int buildid_cache;         /* 1: at the end, the files samples landed in (and the kernel's
	                            * symbols, [vdso]) kept in perf's build-id cache, the session's
	                            * buildid_dir (default $HOME/.debug), as perf record keeps them,
	                            * so the recording reads after they change (a failure to keep
	                            * them is a warning); 0: not (perf record -N) */
};
#define UW_OFFCPU_AUTO 0
#define UW_OFFCPU_KERNEL 1
#define UW_OFFCPU_SWITCH 2
#define UW_UNWIND_AUTO 0
#define UW_UNWIND_KERNEL 1
#define UW_UNWIND_COPY 2
/* Was kernel unwinding (eBPF: uw_record_opts.unwind, uw_kernel_unwind) compiled into this
 * library? 1 or 0. */
UW_API int uw_kernel_unwind_built(void);
#define UW_CALL_GRAPH_DWARF 0
#define UW_CALL_GRAPH_FP 1
#define UW_CALL_GRAPH_FP_DEFER 2 /* frame-pointer callchains whose user part the kernel writes when
                                  * the task returns to user space (Linux 6.19+; -EOPNOTSUPP before) */

/* Records with perf_event_open and unwinds online: the output is a perf.data file whose samples
 * carry complete callchains (as uw_inject writes), or a pipe-mode stream on standard output for
 * "-". The file is made as uw_output_open makes it and put at its path (an existing file then
 * kept as FILE.old) once the events are open, the command started and the header written: a
 * run that cannot record leaves the output alone. The data size is kept up to date once a
 * second, so a recorder that is killed leaves a file readable to its last second (or, killed
 * before, the path as it was).
 * Returns when the command exits (with argv), every process or thread of pids/tids has exited,
 * *stop is set or the duration has passed, leaving a complete file. final (sz set) may be NULL;
 * it is filled on failure too (workload_errno says the command could not be executed). If the
 * command could not be started or recorded, nothing is left running. @return 0 or a negative
 * error. */
UW_API int uw_record(struct uw_session *s, const struct uw_record_opts *opts, struct uw_record_status *final);

/* ---------------------------------------------------------------- inject */

struct uw_inject_opts {
	size_t sz;
	size_t max_queue_bytes;     /* as uw_reader_opts */
	unsigned max_kernel_frames; /* as uw_reader_opts */
	int stitch;                 /* as uw_reader_opts */
};

struct uw_inject_stats {
	size_t sz;
	uint64_t samples;          /* samples read */
	uint64_t samples_written;  /* written with their callchain */
	uint64_t records_written;  /* other records copied */
	uint64_t bytes_in, bytes_out;
	uint64_t max_stack;        /* the most frames (kernel and user, context markers not counted)
	                            * one written callchain holds: perf report and perf script show
	                            * kernel.perf_event_max_stack (127) unless given --max-stack */
};

/* Rewrites a `perf record --call-graph dwarf` file (in, or "-" for a pipe) as out: every sample
 * unwound online, written without its register and stack copies and with a callchain (kernel
 * frames, then PERF_CONTEXT_USER and the user frames), other records as they are, in time
 * order, and the header with the build-ids of every module a frame landed in; perf report,
 * perf script and hotspot read it as a frame-pointer recording. out is put at its path only
 * when complete (as uw_output_commit: an existing out is kept as out.old; a failure leaves the
 * path as it was). stats (sz set) may be NULL. @return 0 or a negative error
 * (uw_session_errmsg). */
UW_API int uw_inject(struct uw_session *s, const char *in, const char *out, const struct uw_inject_opts *opts,
                     struct uw_inject_stats *stats);

/* Iterates the modules the session knows (opened or not). Return non-zero from fn to stop. */
typedef int (*uw_module_fn)(void *ctx, struct uw_module *m);
UW_API void uw_session_foreach_module(struct uw_session *s, uw_module_fn fn, void *ctx);

/* ---------------------------------------------------------------- profiles and output */

enum uw_weight {
	UW_WEIGHT_DEFAULT = 0,  /* each writer's own: the period for tables (as perf report), the
	                         * sample count for folded stacks (as FlameGraph's stackcollapse) */
	UW_WEIGHT_SAMPLES,      /* every sample counts 1 */
	UW_WEIGHT_PERIOD,       /* every sample counts its period (events, or ns of cpu-clock) */
};

struct uw_profile_opts {
	size_t sz;
	int no_kernel;          /* 1: leave kernel frames out */
	int addresses;          /* 1: unknown frames as module+0xoffset instead of [module] (folded) */
	int inline_frames;      /* 1: expand inline chains into frames of their own (DWARF) */
	int by_line;            /* 1: frames named "function file:line" (group by source line) */
	int weight;             /* enum uw_weight */
	int by_thread;          /* 1: keep each sample's pid and tid (tables sorted by pid or tid) */
	int keep_order;         /* 1: keep every sample's time and stack, in the order added (the
	                         * time order of speedscope and of the flame graph's time line;
	                         * 24 bytes a sample) */
	uint32_t reserved;       /* zero (where the next field goes: a library that does not know
	                          * it refuses it, -E2BIG) */
};

struct uw_profile;

/* A profile aggregates samples into distinct stacks with sample counts and periods, per event.
 * Frames are kept as (module, address); names are looked up only when the profile is written. */
UW_API struct uw_profile *uw_profile_new(struct uw_session *s, const struct uw_profile_opts *opts);
/* Adds a sample (its arrays are copied). A sample whose stop_reason is UW_STOP_LOST stands for
 * samples a profiler lost before unwinding them (a full buffer): its frames are not read, its
 * period is their time, and the profile shows it as one frame "[lost samples]" (as Go's
 * profiler counts its own losses), "[lost samples: CAUSE]" with its lost_cause, so that totals
 * do not shrink silently and say why. @return 0, -ENOMEM,
 * or -EOVERFLOW when its event's periods would add up past 2^64 (a damaged or crafted
 * recording: the sample is not added). */
UW_API int uw_profile_add(struct uw_profile *p, const struct uw_sample *smp);
UW_API void uw_profile_free(struct uw_profile *p);
/* Distinct stacks and samples so far. */
UW_API uint64_t uw_profile_nr_stacks(const struct uw_profile *p);
UW_API uint64_t uw_profile_nr_samples(const struct uw_profile *p);
/* Events with samples in the profile, and each one's name (in order of their first sample). */
UW_API unsigned uw_profile_nr_events(const struct uw_profile *p);
UW_API const char *uw_profile_event_name(const struct uw_profile *p, unsigned i);

/* Writes `comm;outermost;...;innermost weight` per distinct stack (kernel frames `_[k]`), the
 * input format of FlameGraph's flamegraph.pl and speedscope, weighted by sample count unless
 * opts.weight says UW_WEIGHT_PERIOD. Stacks of every event are summed: give a profile of one
 * event (see uw_reader_opts.event). @return 0 or -errno. */
UW_API int uw_profile_write_folded(struct uw_profile *p, FILE *out);

struct uw_pprof_opts {
	size_t sz;
	uint64_t time_nanos;     /* when the profile starts (wall clock, ns since the epoch); 0: unknown */
	uint64_t duration_nanos; /* how long it covers; 0: unknown */
	/* lines said of the whole profile (profile.proto's comments: go tool pprof -comments) */
	const char *const *comments;
	size_t nr_comments;
};
/* Writes the profile as pprof's gzipped profile.proto (go tool pprof, Pyroscope, Parca, ...):
 * sample types samples/count, then a period column per event of the profile (cpu/nanoseconds
 * for cpu-clock and task-clock, off-cpu/nanoseconds for offcpu-time, wall/nanoseconds for an
 * event named "wall" or wall-clock (libunwound-prof), else the event/count; a stack's value
 * is 0 in the other events' columns: pprof's -sample_index chooses), labels pid and tid (with opts.by_thread) and thread (comm),
 * locations with their inline chains as several lines (innermost first), functions with their
 * shown and system names and source files, mappings with path and build-id. The period type is
 * the first event's. opts may be NULL. @return 0 or -errno. */
UW_API int uw_profile_write_pprof(struct uw_profile *p, FILE *out, const struct uw_pprof_opts *opts);

struct uw_speedscope_opts {
	size_t sz;
	const char *name;        /* the profile group's name (speedscope's title); NULL: "unwound" */
};
/* Writes the speedscope file format (https://www.speedscope.app/file-format-schema.json): one
 * sampled profile per thread (give a profile made with by_thread), its samples in time order
 * when the profile kept them (keep_order; else one per distinct stack), weighted by period
 * (nanoseconds for cpu-clock and task-clock) unless the profile's weight is UW_WEIGHT_SAMPLES.
 * Frames are shared: a function (or a source line, with by_line) with its source file, else
 * its module, as file; inline functions are frames of their own with inline_frames. Give a
 * profile of one event. opts may be NULL. @return 0 or -errno. */
UW_API int uw_profile_write_speedscope(struct uw_profile *p, FILE *out, const struct uw_speedscope_opts *opts);

struct uw_html_opts {
	size_t sz;
	const char *title;       /* NULL: "unwound" */
	/* a profile to compare with (unwound diff): the graph is p's, each box coloured by the
	 * change of its share from baseline's (red grew, blue shrank); NULL: none */
	struct uw_profile *baseline;
};
/* Writes one self-contained HTML file (no network access) with an interactive flame graph of
 * the profile: zoom, search, callers view, colours by module or kind, a thread selector and
 * a time line of sample density to choose a time range (with keep_order; by_thread for the
 * selector). Give a profile of one event. opts may be NULL. @return 0 or -errno. */
UW_API int uw_profile_write_html(struct uw_profile *p, FILE *out, const struct uw_html_opts *opts);

enum uw_diff_format {
	UW_DIFF_FUNCTIONS = 0,  /* perf diff's table: per function and module, the baseline's share
	                         * and the change ("Baseline  Delta Abs  Shared Object  Symbol") */
	UW_DIFF_STACKS,         /* per folded stack: both shares and the change */
	UW_DIFF_FOLDED,         /* `stack weight_baseline weight_new` lines: FlameGraph's
	                         * difffolded.pl output, flamegraph.pl's differential input */
};
struct uw_diff_opts {
	size_t sz;
	int format;             /* enum uw_diff_format */
	unsigned max_rows;      /* tables; 0: all */
	double percent_limit;   /* table rows whose shares and change are all under this, left out */
};
/* Compares two profiles of one session (the same event in two recordings): shares are of each
 * profile's total (by period, or samples with UW_WEIGHT_SAMPLES), so runs of different
 * lengths compare; functions match by name and module name, stacks by their names. Rows are
 * sorted by the size of the change. @return 0, -EINVAL (profiles of two sessions) or -errno. */
UW_API int uw_profile_write_diff(struct uw_profile *baseline, struct uw_profile *p, FILE *out,
                                 const struct uw_diff_opts *opts);

enum uw_top_sort { UW_TOP_SELF = 0, UW_TOP_TOTAL };
/* Writes a table of functions with self and total shares, at most max_rows rows (0: 30). */
UW_API int uw_profile_write_top(struct uw_profile *p, FILE *out, unsigned max_rows, enum uw_top_sort sort);

enum uw_call_graph { UW_GRAPH_NONE = 0, UW_GRAPH_CALLER, UW_GRAPH_CALLEE };

enum uw_table_columns {
	UW_TABLE_BOTH = 0,      /* self% and total% */
	UW_TABLE_CHILDREN,      /* perf report --children: "Children" (total) and "Self" */
	UW_TABLE_SELF,          /* perf report --no-children: "Overhead" (self) */
};

struct uw_table_opts {
	size_t sz;
	/* Comma-separated keys a row is made of, as perf report's --sort: comm, pid (perf's: the
	 * thread, shown "tid:comm"), tid, dso, sym, srcline. NULL: unwound's layout, one row per
	 * function and module. pid and tid need a profile made with by_thread. */
	const char *sort;
	enum uw_top_sort order;  /* by self (default) or total share */
	enum uw_table_columns columns;
	double percent_limit;    /* rows under this share (of the order column) left out */
	unsigned max_rows;       /* per event; 0: 30; UINT32_MAX: all */
	/* each row's call graph below it (rows of functions: sort NULL or sym), as perf report -g:
	 * with UW_GRAPH_CALLER the functions it calls, with UW_GRAPH_CALLEE its callers; branches
	 * under percent_limit (of the event's total) left out */
	int call_graph;          /* enum uw_call_graph */
};
/* Writes one section per event of the profile: `# Samples: N of event 'NAME'`, `# Event count
 * (approx.): SUM`, then the rows, weighted by period unless the profile's opts say otherwise.
 * Kernel functions are marked `[k]`, user functions `[.]`; code without a symbol is shown by
 * its address in the module, as perf report shows it. @return 0, -EINVAL for an unknown sort
 * key, -ENOMEM or -EIO. */
UW_API int uw_profile_write_table(struct uw_profile *p, FILE *out, const struct uw_table_opts *opts);

struct uw_script_opts {
	size_t sz;
	unsigned event_width;   /* event names right-aligned to this width: perf script uses the
	                         * longest event name of the recording (0: no padding) */
	int no_inline;          /* 1: no inline frames (perf script --no-inline) */
	int srcline;            /* 1: a "  file:line" line under each frame (perf script -F +srcline) */
	uint32_t reserved;       /* zero (where the next field goes: a library that does not know
	                          * it refuses it, -E2BIG) */
};

/* Writes one sample the way `perf script` prints a sample with a callchain: a header line
 * `comm tid time: period event:`, one `\t<addr> <sym>+0x<off> (<dso>)` line per frame
 * (kernel frames first), then a blank line. User frame addresses are map-relative, and caller
 * frames are shown at return address - 1, as perf script does for DWARF callchains.
 * opts may be NULL. @return 0 or -EIO. */
UW_API int uw_script_write_sample(struct uw_session *s, FILE *out, const struct uw_sample *smp,
                                  const struct uw_script_opts *opts);

/* The same output through a writer that holds back a few windows of samples (a few thousand,
 * copied), asking for their frames' inline chains ahead (uw_symbolize_inline_ahead): the
 * session's helper thread looks them up while later samples are read and unwound. Samples are
 * written in the order added. new: NULL with errno set. */
struct uw_script_writer;
UW_API struct uw_script_writer *uw_script_writer_new(struct uw_session *s, FILE *out, const struct uw_script_opts *opts);
/* Copies the sample (it need live only during the call). @return 0, -ENOMEM or -EIO. */
UW_API int uw_script_writer_add(struct uw_script_writer *w, const struct uw_sample *smp);
/* Writes the samples held back and frees the writer (NULL is ignored). @return 0 or the first
 * error of writing. */
UW_API int uw_script_writer_close(struct uw_script_writer *w);

/* ---------------------------------------------------------------- in-process profiling */

/*
 * libunwound-prof.so: a program profiles its own threads, without perf_event_open, the way
 * gperftools' CPU profiler and pprof-rs do, and writes pprof or folded stacks. Link it
 * (-lunwound-prof; pkg-config unwound-prof) and call uw_prof_start / uw_prof_stop, or preload it
 * into a program that cannot be changed:
 *
 *     LD_PRELOAD=libunwound-prof.so UNWOUND_PROF=out.pb.gz program   # the whole run, at exit
 *
 * (the environment variables are in libunwound-prof(3)). How it samples:
 *  - each thread has a POSIX timer on its own CPU-time clock (timer_create, SIGEV_THREAD_ID; or
 *    on CLOCK_MONOTONIC in wall-clock mode) firing hz times per second of the thread's CPU time;
 *    the kernel checks CPU-time timers at its tick (CONFIG_HZ), so a thread is signalled at most
 *    that often: a sample then carries every expiry since the last (the timer's overrun) in its
 *    weight, and the CPU time is still counted exactly;
 *  - the signal handler is async-signal-safe and bounded: it copies the registers and at most
 *    stack_bytes of the stack from the interrupted stack pointer up, within the thread's stack
 *    (bounds from pthread_getattr_np when the thread registered itself, the main thread's from
 *    the auxiliary vector and its mapping; an alternate signal stack from the signal's context),
 *    into a ring of its own thread (no allocation, no lock; a full ring drops the sample and
 *    counts it). A thread whose bounds are not known (one that ran before the profiler, found
 *    in /proc/self/task) has its stack copied by the kernel (process_vm_readv, which stops at
 *    the first unmapped page instead of faulting);
 *  - a collector thread unwinds the copies (CFI, SFrame, frame pointers: uw_unwind_sample, with
 *    a live tracker that learns the mappings from PROCMAP_QUERY), and aggregates them into a
 *    uw_profile;
 *  - threads: those created with pthread_create after the library is loaded register
 *    themselves as they start (the library interposes pthread_create); the others (created
 *    before, or by raw clone) are found in /proc/self/task every scan_ms and sampled from then;
 *  - dlopen'ed code is found on demand; dlclose (interposed) first has the samples taken until
 *    then unwound, then the mappings are forgotten, so a library loaded later at the same
 *    address is never named after the old one;
 *  - fork: the child does not profile (POSIX timers are not inherited; the library stops its
 *    part in the child and writes nothing there; it may start a profiler of its own). A child
 *    that execs a program with the preloaded library profiles itself into UNWOUND_PROF's file
 *    with its pid before the extension;
 *  - the signal's handler, once installed, stays for the life of the process (a timer's signal
 *    may still be queued after its timer is deleted), and sigaction and signal are interposed
 *    for its number: signals of that number from other sources go to the program's handler
 *    (installed before the profiler started or since; the program reads back its own), with
 *    the mask it asked for less the signal itself, so that its handler is sampled too; without
 *    one (SIG_DFL, SIG_IGN) they are dropped; counted either way. errno is preserved;
 *  - the profiler's own frames (the trampoline a thread starts through) are left out of stacks.
 * One profiler runs in a process at a time (the signal and the timers are the process's).
 */
struct uw_prof;

enum uw_prof_clock {
	UW_PROF_CPU = 0,         /* each thread's CPU time (event "cpu-clock") */
	UW_PROF_WALL,            /* wall-clock time, running or not (event "wall-clock"): a blocked
	                          * thread is interrupted too, and system calls that are not
	                          * restarted (poll, epoll_wait, select, ...) return EINTR */
};

enum uw_prof_format {
	UW_PROF_AUTO = 0,        /* folded for a name ending ".folded" or ".collapsed", else pprof */
	UW_PROF_PPROF,           /* gzipped profile.proto (uw_profile_write_pprof) */
	UW_PROF_FOLDED,          /* folded stacks weighted by sample count (uw_profile_write_folded) */
};

struct uw_prof_opts {
	size_t sz;
	const char *output;      /* written by uw_prof_stop (copied); NULL: nothing written */
	int format;              /* enum uw_prof_format */
	unsigned hz;             /* samples per second of each thread's time; 0: 99; at most 10000 */
	int clock;               /* enum uw_prof_clock */
	int signal;              /* the timers' signal; 0: SIGPROF; not SIGKILL, SIGSTOP nor a fault's
	                          * (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS: -EINVAL) */
	unsigned stack_bytes;    /* stack copied per sample; 0: 16384; 512 to 262144 */
	unsigned ring_bytes;     /* each thread's ring; 0: 4 samples of stack_bytes (128 KiB by
	                          * default; its pages are touched as they are used); at least 2
	                          * samples and 64 KiB, at most 256 MiB, rounded up to a power of
	                          * two */
	unsigned max_threads;    /* threads sampled at once; 0: 4096; at most 65536 */
	unsigned max_frames;     /* frames per stack; 0: 1024; at most 4096 */
	unsigned scan_ms;        /* /proc/self/task read every scan_ms; 0: 250 */
	int by_thread;           /* 1: labels pid and tid too (one sample per stack and thread) */
	/* the session to unwind with (its modules and caches shared with the program's other
	 * uses); NULL: one of its own (offline, the DWARF cache by default, as many frames as
	 * max_frames). The caller frees it after uw_prof_free. */
	struct uw_session *session;
};

struct uw_prof_stats {
	size_t sz;
	uint64_t samples;        /* signals that took a sample */
	uint64_t samples_unwound;/* unwound and added to the profile */
	uint64_t samples_root;   /* ... of those, whose stack reached a root frame */
	uint64_t dropped;        /* samples lost to a full ring (their time is not in the profile) */
	uint64_t overruns;       /* timer expiries folded into a later sample's weight */
	uint64_t stack_copied_by_kernel; /* stacks copied with process_vm_readv (bounds not known) */
	uint64_t stack_not_copied;/* registers only: the stack could not be read safely */
	uint64_t on_altstack;    /* samples taken on an alternate signal stack */
	uint64_t foreign_signals;/* the signal from other sources (passed on or dropped) */
	uint64_t stale_signals;  /* signals of timers already deleted (dropped) */
	uint64_t threads;        /* threads sampled, all told */
	uint64_t threads_now;    /* ... at present */
	uint64_t threads_refused;/* not sampled: max_threads reached, or their timer was refused */
	uint64_t map_resets;     /* times the mappings were forgotten (dlclose, dlopen) */
	uint64_t handler_replaced; /* 1: the program replaced the handler (samples stopped) */
	uint64_t collector_cpu_ns; /* the collector thread's CPU time */
	uint64_t stop_reasons[UW_STOP_MAX]; /* unwound samples by enum uw_stop_reason */
	/* CPU-time mode: timer periods a thread ran after its last signal, until its timer was
	 * deleted (it ended, or the profiler stopped), folded into that last sample's weight. The
	 * kernel sends a CPU-time timer's signal from a tick that finds the thread running; on a
	 * loaded machine that may not happen for hundreds of milliseconds, the periods in between
	 * then come as overruns of the next signal, and after the last one as these. */
	uint64_t periods_after_last;
	/* the timer periods of the profile's lost samples, by cause (enum uw_lost_cause; the
	 * causes as a profile names them: "[lost samples: signals blocked]", ...). Those of a
	 * thread that had no sample are after-last periods too (folded into nothing). */
	uint64_t lost_periods[8];
	/* (new fields go here) */
};

/* Starts profiling every thread of the process. opts may be NULL (99 Hz of CPU time, nothing
 * written). @return the profiler, or NULL with errno: EBUSY (one runs already), EINVAL (bad
 * opts), ENOMEM, or timer_create's error. Not async-signal-safe; any thread. */
UW_API struct uw_prof *uw_prof_start(const struct uw_prof_opts *opts);

/* Stops sampling: every timer deleted, the samples taken until then unwound; then writes
 * opts.output when given. A second call does nothing. Called in a child of fork, it only marks
 * the profiler stopped. @return 0, or the error of writing the output (-errno). */
UW_API int uw_prof_stop(struct uw_prof *p);

/* Counts so far (any time, any thread). @return 0 or -EINVAL (st->sz not set). */
UW_API int uw_prof_stats(struct uw_prof *p, struct uw_prof_stats *st);

/* The profile (after uw_prof_stop; NULL before): any of the uw_profile_write_* writers may
 * write it. Owned by the profiler, valid until uw_prof_free. */
UW_API struct uw_profile *uw_prof_profile(struct uw_prof *p);

/* Writes the profile (after uw_prof_stop) to path in a format (enum uw_prof_format), as
 * uw_output_create makes files. @return 0, -EINVAL (still running), or -errno. */
UW_API int uw_prof_write(struct uw_prof *p, const char *path, int format);

/* Registers the calling thread now, with its exact stack bounds (pthread_getattr_np): for a
 * thread the library could not see start (created before it was loaded, or by clone), which is
 * otherwise found by the next scan and copied by the kernel. @return 0, -ESRCH (no profiler
 * runs), -EBUSY (max_threads reached) or timer_create's error. */
UW_API int uw_prof_register_thread(void);

/* Frees a profiler and its profile; NULL is ignored. A running one is stopped first, without
 * writing. In a child of fork, the parent's profiler is left as it is (its locks may be held by
 * threads that are not there). */
UW_API void uw_prof_free(struct uw_prof *p);

#ifdef __cplusplus
}

/* An options struct of any C++ version, zeroed, with its size set. */
template <typename T> static inline T uw_opts()
{
	T o;
	__builtin_memset((void *)&o, 0, sizeof(T)); /* (padding too: it is checked) */
	o.sz = sizeof(T);
	return o;
}
#endif
#endif
