/* SPDX-License-Identifier: MIT */
/* The helpers the CLI's commands share (cli.c) and its exit statuses. */
#ifndef UW_CLI_H
#define UW_CLI_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <unwound/unwound.h>

#define CLI_EXIT_OK 0
#define CLI_EXIT_ERROR 1
#define CLI_EXIT_USAGE 2
/* the run completed but its output is incomplete: a resource ran out (file descriptors,
 * memory) or a file shrank while it was read (said on standard error and in the summary) */
#define CLI_EXIT_INCOMPLETE 3

void cli_log(void *ctx, enum uw_log_level lvl, const char *msg);

/* Strict argument parsing: the whole string, in range, else a message naming the option and
 * the value, and -1 (the caller exits with CLI_EXIT_USAGE). */
int cli_u64(const char *cmd, const char *opt, const char *arg, uint64_t lo, uint64_t hi, uint64_t *out);
int cli_unsigned(const char *cmd, const char *opt, const char *arg, unsigned lo, unsigned hi, unsigned *out);
int cli_double(const char *cmd, const char *opt, const char *arg, double lo, double hi, double *out);
/* One of choices (NULL-terminated): its index. */
int cli_choice(const char *cmd, const char *opt, const char *arg, const char *const *choices, int *out);
/* A comma-separated list of numbers in [lo, hi], each a number or (ranges) a range A-B, appended
 * to *v. */
int cli_int_list(const char *cmd, const char *opt, const char *arg, int lo, int hi, int ranges, int **v, size_t *n);
/* A comma-separated list of names, appended to *v (the strings point into arg). */
int cli_str_list(const char *cmd, const char *opt, char *arg, const char ***v, size_t *n);
/* Appends dir to a ':'-separated list kept in *list (malloc'd). */
/* DIR of option OPT is a directory; else one line saying why. @return 0, -1. */
int cli_dir_option(const char *cmd, const char *opt, const char *dir);
int cli_append_path(const char *cmd, const char *opt, const char *dir, char **list);

/* The resource limits report and inject share (docs/security.md lists them all). */
struct cli_limits {
	unsigned max_frames, max_kernel_frames;
	uint64_t max_inflate, max_side_file, max_dwarf_cache, max_debuginfod;
	size_t max_queue;
};
enum { CLI_O_MAXFR = 1000, CLI_O_MAXKFR, CLI_O_MAXINFLATE, CLI_O_MAXSIDE, CLI_O_MAXQUEUE, CLI_O_MAXCACHE,
       CLI_O_MAXDBGD };
#define CLI_LIMIT_OPTIONS                                                                              \
	{ "max-frames", required_argument, 0, CLI_O_MAXFR },                                           \
	{ "max-kernel-frames", required_argument, 0, CLI_O_MAXKFR },                                   \
	{ "max-inflate", required_argument, 0, CLI_O_MAXINFLATE },                                     \
	{ "max-side-file", required_argument, 0, CLI_O_MAXSIDE },                                      \
	{ "max-queue", required_argument, 0, CLI_O_MAXQUEUE },                                         \
	{ "max-dwarf-cache", required_argument, 0, CLI_O_MAXCACHE },                                 \
	{ "max-debuginfod", required_argument, 0, CLI_O_MAXDBGD }
#define CLI_LIMITS_HELP                                                                                \
	"limits (docs/security.md):\n"                                                                  \
	"  --max-frames N      user frames per stack (default 256, at most 4096)\n"                     \
	"  --max-kernel-frames N  kernel frames kept per sample (default 512, at most 65536)\n"         \
	"  --max-inflate MIB   one decompressed debug section (default 1024; MiniDebugInfo: a quarter)\n" \
	"  --max-side-file MIB a jitdump, perf map or kallsyms file (default 2048)\n"                   \
	"  --max-queue MIB     records held for time order before the oldest are delivered (default 512)\n" \
	"  --max-dwarf-cache MIB  the DWARF cache directory, least recently used files removed (default 4096)\n" \
	"  --max-debuginfod MIB  one file fetched from debuginfod (default 1024)\n"
/* Handles a limit option; @return 1 when c was one, 0 when not, -1 on a bad value (said). */
int cli_limit_option(const char *cmd, int c, const char *arg, struct cli_limits *l);
extern int cli_verbose;

/* What ran out or changed under the session (uw_session_stats), as "# ..." summary lines. */
void cli_summary_resources(struct uw_session *s, FILE *f);
/* One line to standard error when the output is incomplete for that reason. @return true when
 * it is (the command then exits with CLI_EXIT_INCOMPLETE). */
bool cli_incomplete(const char *cmd, struct uw_session *s);
/* Option errors. Subcommands parse with opterr 0 and an optstring that begins with ':' (after
 * '+'); when getopt_long returns '?' or ':', this says what was wrong in one line (the option,
 * by its name) and where the options are listed. */
struct option;
void cli_option_error(const char *cmd, int c, char *const *argv, const struct option *lo);
/* "unwound CMD: see 'unwound CMD --help' for the options" */
void cli_see_help(const char *cmd);

/* A text output's stream: writes go through here, so the reason a write failed (disk full) is
 * the one reported (stdio keeps only an error flag, and errno by the time it is looked at may
 * be any later call's). */
struct cli_out {
	int fd;
	int err;                /* the first write's errno, or 0 */
	struct uw_output *out;  /* NULL: standard output */
};
/* path (0644 less the umask, created the way every output is: uw_output_open), or standard
 * output when NULL. NULL and a message on failure. */
FILE *cli_open_output(const char *cmd, const char *path, struct cli_out *o);
/* The kernel symbols of a recording's tracker: the files given (a message when one cannot be
 * used: its kernel frames are then unnamed), else those found for its kernel, read ahead. */
void cli_kernel_symbols(const char *cmd, struct uw_session *s, struct uw_tracker *t, const char *kallsyms,
                        const char *vmlinux);
/* Closes the stream; a file is put at its path when complete and written without error, else
 * discarded (the path as it was). @return 0, or the errno of the write, close or commit that
 * failed (not said). */
int cli_close_output(FILE *f, struct cli_out *o, bool complete);
#endif
