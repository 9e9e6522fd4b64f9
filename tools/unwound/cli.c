/* SPDX-License-Identifier: MIT */
/* The CLI's helpers every command shares: strict option values, resource limits, option errors,
 * text outputs, logging, kernel symbols and the summary of what ran out. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

int cli_verbose;

int cli_u64(const char *cmd, const char *opt, const char *arg, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	errno = 0;
	/* decimal, or hex with 0x; no sign, no blanks, nothing after the number */
	unsigned long long v = 0;
	bool ok = arg[0] >= '0' && arg[0] <= '9';
	if (ok) {
		v = strtoull(arg, &end, arg[0] == '0' && (arg[1] == 'x' || arg[1] == 'X') ? 16 : 10);
		ok = !errno && end != arg && !*end && v >= lo && v <= hi;
	}
	if (!ok) {
		fprintf(stderr, "unwound %s: %s takes a whole number from %" PRIu64 " to %" PRIu64 ", not '%s'\n", cmd, opt,
			lo, hi, arg);
		return -1;
	}
	*out = v;
	return 0;
}

int cli_unsigned(const char *cmd, const char *opt, const char *arg, unsigned lo, unsigned hi, unsigned *out)
{
	uint64_t v;
	if (cli_u64(cmd, opt, arg, lo, hi, &v))
		return -1;
	*out = (unsigned)v;
	return 0;
}

int cli_double(const char *cmd, const char *opt, const char *arg, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	double v = 0;
	bool ok = (arg[0] >= '0' && arg[0] <= '9') || arg[0] == '.';
	if (ok) {
		v = strtod(arg, &end);
		ok = !errno && end != arg && !*end && isfinite(v) && v >= lo && v <= hi;
	}
	if (!ok) {
		fprintf(stderr, "unwound %s: %s takes a number from %g to %g, not '%s'\n", cmd, opt, lo, hi, arg);
		return -1;
	}
	*out = v;
	return 0;
}

int cli_choice(const char *cmd, const char *opt, const char *arg, const char *const *choices, int *out)
{
	for (int i = 0; choices[i]; i++) {
		if (!strcmp(arg, choices[i])) {
			*out = i;
			return 0;
		}
	}
	fprintf(stderr, "unwound %s: %s takes ", cmd, opt);
	for (int i = 0; choices[i]; i++)
		fprintf(stderr, "%s%s", i ? (choices[i + 1] ? ", " : " or ") : "", choices[i]);
	fprintf(stderr, ", not '%s'\n", arg);
	return -1;
}

int cli_int_list(const char *cmd, const char *opt, const char *arg, int lo, int hi, int ranges, int **v, size_t *n)
{
	const char *p = arg;
	for (;;) {
		char *end;
		errno = 0;
		long a = (*p >= '0' && *p <= '9') ? strtol(p, &end, 10) : -1, b = a;
		bool ok = a >= lo && a <= hi && !errno;
		if (ok && ranges && *end == '-') {
			const char *q = end + 1;
			b = (*q >= '0' && *q <= '9') ? strtol(q, &end, 10) : -1;
			ok = !errno && b >= a && b <= hi;
		}
		ok = ok && (*end == ',' || !*end) && b - a < 65536 && *n + (size_t)(b - a) < 65536;
		if (!ok) {
			fprintf(stderr, "unwound %s: %s takes a comma-separated list of %s from %d to %d, not '%s'\n", cmd, opt,
				ranges ? "numbers or ranges (A-B)" : "numbers", lo, hi, arg);
			return -1;
		}
		for (long x = a; x <= b; x++) {
			int *nv = realloc(*v, (*n + 1) * sizeof(**v));
			if (!nv) {
				fprintf(stderr, "unwound %s: out of memory\n", cmd);
				return -1;
			}
			*v = nv;
			(*v)[(*n)++] = (int)x;
		}
		if (!*end)
			return 0;
		p = end + 1;
	}
}

int cli_str_list(const char *cmd, const char *opt, char *arg, const char ***v, size_t *n)
{
	for (char *save = NULL, *t = strtok_r(arg, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		const char **nv = realloc(*v, (*n + 1) * sizeof(**v));
		if (!nv) {
			fprintf(stderr, "unwound %s: out of memory\n", cmd);
			return -1;
		}
		*v = nv;
		(*v)[(*n)++] = t;
	}
	if (!*n) {
		fprintf(stderr, "unwound %s: %s takes a comma-separated list of names\n", cmd, opt);
		return -1;
	}
	return 0;
}

int cli_dir_option(const char *cmd, const char *opt, const char *dir)
{
	struct stat st;
	if (stat(dir, &st)) {
		fprintf(stderr, "unwound %s: %s %s: %s\n", cmd, opt, dir, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "unwound %s: %s %s: not a directory\n", cmd, opt, dir);
		return -1;
	}
	return 0;
}

int cli_append_path(const char *cmd, const char *opt, const char *dir, char **list)
{
	if (!dir[0] || strchr(dir, ':')) {
		fprintf(stderr, "unwound %s: %s takes a directory (without ':'), not '%s'\n", cmd, opt, dir);
		return -1;
	}
	if (cli_dir_option(cmd, opt, dir))
		return -1;
	char *nl = NULL;
	if (asprintf(&nl, "%s%s%s", *list ? *list : "", *list ? ":" : "", dir) < 0) {
		fprintf(stderr, "unwound %s: out of memory\n", cmd);
		return -1;
	}
	free(*list);
	*list = nl;
	return 0;
}

int cli_limit_option(const char *cmd, int c, const char *arg, struct cli_limits *l)
{
	uint64_t v;
	switch (c) {
	case CLI_O_MAXFR:
		if (cli_u64(cmd, "--max-frames", arg, 1, 4096, &v))
			return -1;
		l->max_frames = (unsigned)v;
		return 1;
	case CLI_O_MAXKFR:
		if (cli_u64(cmd, "--max-kernel-frames", arg, 1, 65536, &v))
			return -1;
		l->max_kernel_frames = (unsigned)v;
		return 1;
	case CLI_O_MAXINFLATE:
		if (cli_u64(cmd, "--max-inflate", arg, 1, 1 << 20, &v))
			return -1;
		l->max_inflate = v << 20;
		return 1;
	case CLI_O_MAXSIDE:
		if (cli_u64(cmd, "--max-side-file", arg, 1, 1 << 20, &v))
			return -1;
		l->max_side_file = v << 20;
		return 1;
	case CLI_O_MAXCACHE:
		if (cli_u64(cmd, "--max-dwarf-cache", arg, 1, 1 << 24, &v))
			return -1;
		l->max_dwarf_cache = v << 20;
		return 1;
	case CLI_O_MAXDBGD:
		if (cli_u64(cmd, "--max-debuginfod", arg, 1, 1 << 24, &v))
			return -1;
		l->max_debuginfod = v << 20;
		return 1;
	case CLI_O_MAXQUEUE:
		if (cli_u64(cmd, "--max-queue", arg, 1, 1 << 20, &v))
			return -1;
		l->max_queue = (size_t)(v << 20);
		return 1;
	default:
		return 0;
	}
}

static ssize_t out_write(void *cookie, const char *buf, size_t n)
{
	struct cli_out *o = cookie;
	size_t done = 0;
	while (done < n) {
		ssize_t w = write(o->fd, buf + done, n - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (!o->err)
				o->err = w < 0 ? errno : EIO;
			/* what was written; 0 is the error (fopencookie's write must not return a
			 * negative value: stdio took -1 for a count and wrote past its buffer) */
			errno = o->err;
			return (ssize_t)done;
		}
		done += (size_t)w;
	}
	return (ssize_t)n;
}

static int out_close(void *cookie)
{
	(void)cookie; /* (the descriptor is the output's: cli_close_output) */
	return 0;
}

/* Text outputs: 0644 less the umask, created the way every output is (uw_output_open): written
 * without a name and put at the path by cli_close_output only when complete; standard output
 * without one. */
FILE *cli_open_output(const char *cmd, const char *path, struct cli_out *o)
{
	o->fd = 1;
	o->out = NULL;
	if (path) {
		o->out = uw_output_open(path, 0644);
		if (!o->out) {
			fprintf(stderr, "unwound %s: %s: %s\n", cmd, path, uw_strerror(-errno));
			return NULL;
		}
		o->fd = uw_output_fd(o->out);
	}
	FILE *f = fopencookie(o, "w", (cookie_io_functions_t){ .write = out_write, .close = out_close });
	if (f)
		setvbuf(f, NULL, _IOFBF, 1 << 16);
	if (!f) {
		fprintf(stderr, "unwound %s: %s: %s\n", cmd, path ? path : "standard output", strerror(errno));
		uw_output_discard(o->out);
		o->out = NULL;
	}
	return f;
}

int cli_close_output(FILE *f, struct cli_out *o, bool complete)
{
	int err = 0;
	if (fclose(f))
		err = o->err ? o->err : EIO;
	else if (o->err)
		err = o->err;
	if (o->out) {
		if (complete && !err)
			err = -uw_output_commit(o->out);
		else
			uw_output_discard(o->out);
		o->out = NULL;
	}
	return err;
}

void cli_log(void *ctx, enum uw_log_level lvl, const char *msg)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	(void)ctx;
	fprintf(stderr, "unwound: %s: %s\n", names[lvl], msg);
}

void cli_kernel_symbols(const char *cmd, struct uw_session *s, struct uw_tracker *t, const char *kallsyms,
                        const char *vmlinux)
{
	if (vmlinux && uw_tracker_load_vmlinux(t, vmlinux))
		fprintf(stderr, "unwound %s: kernel symbols not loaded: %s\n", cmd, uw_session_errmsg(s));
	if ((kallsyms || !vmlinux) && uw_tracker_load_kallsyms(t, kallsyms))
		fprintf(stderr, "unwound %s: kernel symbols not loaded: %s\n", cmd, uw_session_errmsg(s));
}

void cli_summary_resources(struct uw_session *s, FILE *f)
{
	struct uw_session_stats st = { .sz = sizeof(st) };
	if (!s || uw_session_stats(s, &st))
		return;
	if (st.files_no_descriptor || st.out_of_memory)
		fprintf(f, "# resources ran out: %" PRIu64 " files not opened for want of a file descriptor (ulimit -n), "
			   "%" PRIu64 " times out of memory: the results are incomplete\n",
			st.files_no_descriptor, st.out_of_memory);
	if (st.files_shrunk)
		fprintf(f, "# files that shrank while they were read (rebuilt or copied over in place): %" PRIu64 "\n",
			st.files_shrunk);
	if (st.debuginfod_too_big || st.debuginfod_timeouts)
		fprintf(f, "# debuginfod: %" PRIu64 " downloads stopped at the size cap, %" PRIu64 " timed out\n",
			st.debuginfod_too_big, st.debuginfod_timeouts);
}

bool cli_incomplete(const char *cmd, struct uw_session *s)
{
	struct uw_session_stats st = { .sz = sizeof(st) };
	if (!s || uw_session_stats(s, &st))
		return false;
	if (!st.files_no_descriptor && !st.out_of_memory && !st.files_shrunk)
		return false;
	fprintf(stderr, "unwound %s: the output is incomplete:", cmd);
	const char *sep = "";
	if (st.files_no_descriptor)
		fprintf(stderr, " %" PRIu64 " files not opened for want of a file descriptor (ulimit -n)", st.files_no_descriptor), sep = ";";
	if (st.out_of_memory)
		fprintf(stderr, "%s %" PRIu64 " times out of memory", sep, st.out_of_memory), sep = ";";
	if (st.files_shrunk)
		fprintf(stderr, "%s %" PRIu64 " files shrank while they were read", sep, st.files_shrunk);
	fprintf(stderr, " (exit status %d)\n", CLI_EXIT_INCOMPLETE);
	return true;
}

void cli_see_help(const char *cmd)
{
	fprintf(stderr, "unwound %s: see 'unwound %s --help' for the options\n", cmd, cmd);
}

/* The option getopt_long stopped at (the long one, when that is what argv[optind - 1] holds
 * and what went wrong is about it), by its name. */
static const struct option *long_named(const char *arg, const struct option *lo, size_t *nmatch)
{
	const char *name = arg + 2;
	size_t len = strcspn(name, "=");
	const struct option *found = NULL;
	*nmatch = 0;
	for (const struct option *o = lo; o->name; o++) {
		if (strncmp(o->name, name, len))
			continue;
		if (strlen(o->name) == len) { /* exact: no other counts */
			*nmatch = 1;
			return o;
		}
		if (!found || found->has_arg != o->has_arg || found->flag != o->flag || found->val != o->val)
			(*nmatch)++;
		if (!found)
			found = o;
	}
	return found;
}

void cli_option_error(const char *cmd, int c, char *const *argv, const struct option *lo)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "";
	if (arg && !strncmp(arg, "--", 2) && arg[2]) {
		size_t n;
		const struct option *o = long_named(arg, lo, &n);
		int len = (int)strcspn(arg, "=");
		/* (a short option's error leaves optopt at its letter; a long one's at 0 or its value) */
		if (!optopt || (o && n == 1 && o->val == optopt)) {
			if (!o) {
				fprintf(stderr, "unwound %s: unknown option '%.*s'\n", cmd, len, arg);
			} else if (n > 1) {
				fprintf(stderr, "unwound %s: '%.*s' is ambiguous:", cmd, len, arg);
				const char *sep = "";
				for (const struct option *p = lo; p->name; p++)
					if (!strncmp(p->name, arg + 2, (size_t)len - 2)) {
						fprintf(stderr, "%s --%s", sep, p->name);
						sep = ",";
					}
				fprintf(stderr, "\n");
			} else if (c == ':') {
				fprintf(stderr, "unwound %s: --%s needs a value\n", cmd, o->name);
			} else {
				fprintf(stderr, "unwound %s: --%s takes no value, not '%s'\n", cmd, o->name, arg + len + 1);
			}
			cli_see_help(cmd);
			return;
		}
	}
	const char *lname = NULL;
	for (const struct option *o = lo; o->name && !lname; o++)
		if (o->val == optopt)
			lname = o->name;
	if (c == ':')
		fprintf(stderr, "unwound %s: -%c%s%s needs a value\n", cmd, optopt, lname ? "/--" : "", lname ? lname : "");
	else if (optopt > ' ' && optopt < 127)
		fprintf(stderr, "unwound %s: unknown option '-%c'\n", cmd, optopt);
	else
		fprintf(stderr, "unwound %s: unknown option '%s'\n", cmd, arg);
	cli_see_help(cmd);
}
