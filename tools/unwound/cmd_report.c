/* SPDX-License-Identifier: MIT */
/* unwound report: read a perf.data file, unwind, and write a table of shares per event, script
 * lines, folded stacks or a profile for a viewer. Its options are parsed in report_options.c, the
 * text around the table is written by report_summary.c. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "report.h"

/* One run: where the samples go and what was seen of them */
struct report {
	struct uw_session *s;
	struct uw_profile *prof;
	FILE *out;
	enum mode mode;
	int err;
	int tty;
	struct uw_script_opts script;
	struct uw_script_writer *sw;
	uint64_t first_time, last_time; /* of the samples (pprof's time and duration) */
	uint64_t time_start, time_end;  /* --time: samples kept (ns; end 0: no end) */
	uint64_t progress_from;         /* monotonic ns after which progress is shown */
	bool progress_shown;
	bool wall;                      /* --wall: clock and offcpu-time samples as one event */
	uint64_t wall_dropped;          /* ... samples of other events left out */
	uint64_t wall_kept;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int on_sample(void *ctx, const struct uw_sample *smp)
{
	struct report *r = ctx;
	int e;
	if ((r->time_start && smp->time < r->time_start) || (r->time_end && smp->time > r->time_end))
		return 0;
	if (smp->time && (!r->first_time || smp->time < r->first_time))
		r->first_time = smp->time;
	if (smp->time > r->last_time)
		r->last_time = smp->time;
	struct uw_sample wall;
	if (r->wall) {
		/* one profile of time: CPU samples of a clock event (periods in ns) and off-CPU time */
		const char *ev = smp->event_name ? smp->event_name : "";
		if (strncmp(ev, "cpu-clock", 9) && strncmp(ev, "task-clock", 10) && strcmp(ev, "offcpu-time")) {
			r->wall_dropped++;
			return 0;
		}
		if (r->mode != MODE_SCRIPT) {
			size_t n = smp->sz < sizeof(wall) ? smp->sz : sizeof(wall);
			memset(&wall, 0, sizeof(wall));
			memcpy(&wall, smp, n);
			wall.sz = n;
			wall.event_name = "wall";
			r->wall_kept++;
			wall.attr_index = UINT32_MAX;
			smp = &wall;
		}
	}
	if (r->mode == MODE_SCRIPT)
		e = uw_script_writer_add(r->sw, smp);
	else
		e = uw_profile_add(r->prof, smp);
	if (e) {
		r->err = e;
		return 1;
	}
	return 0;
}

static void on_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct report *r = ctx;
	if (!r->tty || !total)
		return;
	/* only for reports that take a while: a quick one prints nothing */
	if (!r->progress_shown && (done >= total || now_ns() < r->progress_from))
		return;
	r->progress_shown = true;
	fprintf(stderr, "\rreading: %3u%% (%" PRIu64 " MiB)", (unsigned)(100 * done / total), done >> 20);
	if (done >= total)
		fprintf(stderr, "\r%40s\r", "");
}

/* -q: the table's lines but those beginning with '#' (perf's headers) and unwound's column
 * header. */
static void write_rows(const char *buf, size_t len, FILE *out)
{
	static const char head[] = "   self%   total%  function";
	for (const char *p = buf, *end = buf + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
		if (*p != '#' && !(n >= sizeof(head) - 1 && !memcmp(p, head, sizeof(head) - 1)))
			fwrite(p, 1, n, out);
		p += n;
	}
}

/* More than one event with samples and no --event: folded stacks would add their weights. */
static int check_one_event(struct report *rep, struct uw_reader *rd)
{
	unsigned n = uw_profile_nr_events(rep->prof);
	if (n <= 1)
		return 0;
	fprintf(stderr, "unwound report: the recording has samples of %u events (", n);
	for (unsigned i = 0; i < n; i++)
		fprintf(stderr, "%s%s", i ? ", " : "", uw_profile_event_name(rep->prof, i));
	fprintf(stderr, "): this output is of one event; choose it with --event NAME\n");
	(void)rd;
	return -1;
}

int cmd_report(int argc, char **argv)
{
	struct ropts o = { .rows = 30 };
	int pr = report_parse_args(argc, argv, &o);
	if (pr) {
		if (pr > 0)
			report_usage(stdout);
		report_opts_free(&o);
		return pr > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	}
	struct report rep = { .mode = o.mode, .time_start = o.time_start, .time_end = o.time_end, .wall = o.wall,
			      .progress_from = now_ns() + 1000000000u };
	struct cli_out outfd = { .fd = -1 };
	/* as perf: standard input when it is a pipe, else ./perf.data (a terminal, /dev/null, a
	 * file or socket given by cron or CI is not a recording) */
	struct stat st0;
	if (!o.in)
		o.in = !fstat(0, &st0) && S_ISFIFO(st0.st_mode) ? "-" : "perf.data";
	UW_OPTS(uw_session_opts, so, .log = cli_log, .log_level = (enum uw_log_level)(cli_verbose + 1),
		.max_frames = o.lim.max_frames, .debug_dirs = o.debugdirs, .sysroot = o.symfs, .no_fp_fallback = o.nofp,
		.no_demangle = o.nodemangle, .offline = o.offline, .debuginfod_timeout_ms = o.dbgd_ms,
		.max_inflate_bytes = o.lim.max_inflate, .max_side_file_bytes = o.lim.max_side_file, .max_dwarf_cache_bytes = o.lim.max_dwarf_cache,
		.max_debuginfod_bytes = o.lim.max_debuginfod,
		.no_dwarf_cache = o.nocache, .sync_symbols = o.syncsym, .search_path = o.search);
	int ret = CLI_EXIT_ERROR;
	struct uw_reader *rd = NULL;
	rep.s = uw_session_new(&so);
	if (!rep.s) {
		fprintf(stderr, "unwound report: %s\n", strerror(errno));
		goto out;
	}
	rep.tty = isatty(2);
	UW_OPTS(uw_reader_opts, ro, .on_sample = on_sample, .ctx = &rep, .on_progress = on_progress,
		.max_queue_bytes = o.lim.max_queue, .max_kernel_frames = o.lim.max_kernel_frames, .pids = o.pids,
		.npids = o.npids, .tids = o.tids, .ntids = o.ntids, .comms = o.comms, .ncomms = o.ncomms,
		.event = o.event, .stitch = o.stitch, .stack_limit = o.stack_limit);
	rd = uw_reader_open(rep.s, o.in, &ro);
	if (!rd) {
		fprintf(stderr, "unwound report: %s\n", uw_session_errmsg(rep.s));
		goto out;
	}
	if (o.event) {
		bool known = false;
		for (unsigned i = 0; i < uw_reader_nr_events(rd); i++)
			known |= !strcmp(uw_reader_event_name(rd, i), o.event);
		/* pipe mode names its events as they come: checked after reading */
		if (!known && uw_reader_nr_events(rd)) {
			fprintf(stderr, "unwound report: --event %s: the recording's events are", o.event);
			for (unsigned i = 0; i < uw_reader_nr_events(rd); i++)
				fprintf(stderr, "%s '%s'", i ? "," : "", uw_reader_event_name(rd, i));
			fprintf(stderr, "\n");
			ret = CLI_EXIT_USAGE;
			goto out;
		}
	}
	if (o.header_only) {
		/* what the recording says of itself, nothing read beyond its header */
		if (!(rep.out = cli_open_output("report", o.outp, &outfd)))
			goto out;
		report_print_header(rd, rep.out);
		for (unsigned i = 0; i < uw_reader_nr_events(rd); i++)
			fprintf(rep.out, "# event: %s\n", uw_reader_event_name(rd, i));
		ret = CLI_EXIT_OK;
		goto out;
	}
	rep.script.sz = sizeof(rep.script);
	rep.script.no_inline = o.noinline;
	rep.script.srcline = o.srcline;
	for (unsigned i = 0; i < uw_reader_nr_events(rd); i++) {
		size_t l = strlen(uw_reader_event_name(rd, i));
		if (l > rep.script.event_width)
			rep.script.event_width = (unsigned)l;
	}
	/* kernel symbols: the named files, else those found for the recording's kernel (read ahead) */
	cli_kernel_symbols("report", rep.s, uw_reader_tracker(rd), o.kallsyms, o.vmlinux);
	if (rep.mode == MODE_PPROF && (!o.outp || !strcmp(o.outp, "-")) && isatty(1)) {
		fprintf(stderr, "unwound report: --format pprof writes a gzipped binary profile: give -o FILE\n");
		ret = CLI_EXIT_USAGE;
		goto out;
	}
	if (!(rep.out = cli_open_output("report", o.outp, &outfd)))
		goto out;
	if (rep.mode == MODE_SCRIPT) {
		rep.sw = uw_script_writer_new(rep.s, rep.out, &rep.script);
		if (!rep.sw) {
			fprintf(stderr, "unwound report: %s\n", strerror(errno));
			goto out;
		}
	} else {
		/* the viewers show inline functions unless told not to (as perf script) */
		bool viewer = rep.mode == MODE_SPEEDSCOPE || rep.mode == MODE_HTML;
		UW_OPTS(uw_profile_opts, po, .no_kernel = o.nokernel, .addresses = o.addrs,
			.inline_frames = o.inl || o.byline || (viewer && !o.noinline), .by_line = o.byline, .weight = o.weight,
			.by_thread = rep.mode == MODE_PPROF || viewer || (o.sort && (strstr(o.sort, "pid") || strstr(o.sort, "tid"))),
			.keep_order = viewer);
		rep.prof = uw_profile_new(rep.s, &po);
		if (!rep.prof) {
			fprintf(stderr, "unwound report: %s\n", strerror(errno));
			goto out;
		}
	}
	int err = uw_reader_run(rd);
	if (rep.sw) {
		int e = uw_script_writer_close(rep.sw);
		rep.sw = NULL;
		if (e && !rep.err)
			rep.err = e;
	}
	if (rep.err == -EOVERFLOW) {
		fprintf(stderr, "unwound report: %s: the periods of one event's samples add up past 2^64 (a damaged or "
			"crafted recording)\n", o.in);
		goto out;
	}
	if (rep.err) {
		fprintf(stderr, "unwound report: writing %s: %s\n", o.outp ? o.outp : "standard output",
			outfd.err ? strerror(outfd.err) : uw_strerror(rep.err));
		goto out;
	}
	struct uw_reader_stats st = { .sz = sizeof(st) };
	uw_reader_stats(rd, &st);
	if (rep.mode == MODE_FOLDED || rep.mode == MODE_PPROF || rep.mode == MODE_SPEEDSCOPE || rep.mode == MODE_HTML) {
		/* (pprof: a value column per event) */
		if (!o.event && rep.mode != MODE_PPROF && check_one_event(&rep, rd)) {
			ret = CLI_EXIT_USAGE;
			goto out;
		}
		const char *base = strrchr(o.in, '/') ? strrchr(o.in, '/') + 1 : o.in;
		int pe = 0;
		if (rep.mode == MODE_FOLDED) {
			pe = uw_profile_write_folded(rep.prof, rep.out);
		} else if (rep.mode == MODE_SPEEDSCOPE) {
			UW_OPTS(uw_speedscope_opts, so2, .name = base);
			pe = uw_profile_write_speedscope(rep.prof, rep.out, &so2);
		} else if (rep.mode == MODE_HTML) {
			UW_OPTS(uw_html_opts, ho, .title = base);
			pe = uw_profile_write_html(rep.prof, rep.out, &ho);
		} else {
			UW_OPTS(uw_pprof_opts, pp, .duration_nanos = rep.last_time - rep.first_time);
			uint64_t wall;
			if (rep.first_time && uw_reader_wall_clock(rd, rep.first_time, &wall) == 0)
				pp.time_nanos = wall;
			pe = uw_profile_write_pprof(rep.prof, rep.out, &pp);
		}
		/* (a write error is the output stream's: said below with its reason) */
		if (pe && pe != -EIO && !outfd.err) {
			fprintf(stderr, "unwound report: %s\n", uw_strerror(pe));
			goto out;
		}
	} else if (rep.mode == MODE_TOP) {
		/* -q: the rows alone, as perf report -q (the table is written aside and its '#' lines
		 * and column header left out) */
		char *qbuf = NULL;
		size_t qlen = 0;
		FILE *tf = o.quiet ? open_memstream(&qbuf, &qlen) : rep.out;
		if (!tf) {
			fprintf(stderr, "unwound report: %s\n", strerror(errno));
			goto out;
		}
		if (!o.quiet) {
			report_print_header(rd, rep.out);
			fprintf(rep.out, "# %" PRIu64 " samples, %" PRIu64 " distinct stacks\n#\n",
				uw_profile_nr_samples(rep.prof), uw_profile_nr_stacks(rep.prof));
		}
		UW_OPTS(uw_table_opts, to, .sort = o.sort, .order = (enum uw_top_sort)o.order,
			.columns = (enum uw_table_columns)o.columns, .percent_limit = o.percent_limit, .max_rows = o.rows,
			.call_graph = o.graph);
		int te = uw_profile_write_table(rep.prof, tf, &to);
		if (o.quiet) {
			if (fclose(tf) && !te)
				te = -ENOMEM;
			if (!te)
				write_rows(qbuf, qlen, rep.out);
			free(qbuf);
		}
		if (te && te != -EIO) {
			fprintf(stderr, "unwound report: %s\n", uw_strerror(te));
			goto out;
		}
		if (!o.quiet)
			report_summary(rep.s, rd, &st, o.event, rep.out);
	}
	if (cli_verbose && rep.mode != MODE_TOP)
		report_summary(rep.s, rd, &st, o.event, stderr);
	else if (rep.mode != MODE_TOP && st.malformed_samples && !o.quiet)
		fprintf(stderr, "unwound report: warning: %" PRIu64 " malformed samples dropped\n", st.malformed_samples);
	if (fflush(rep.out) || ferror(rep.out)) {
		fprintf(stderr, "unwound report: writing %s: %s\n", o.outp ? o.outp : "standard output",
			strerror(outfd.err ? outfd.err : EIO));
		goto out;
	}
	if (err) { /* (the session's message, or what the code says when none was left) */
		const char *m = uw_session_errmsg(rep.s);
		fprintf(stderr, "unwound report: %s\n", *m ? m : uw_strerror(err));
		goto out;
	}
	if (o.wall && rep.wall_dropped && !o.quiet)
		fprintf(stderr, "unwound report: --wall: %" PRIu64 " samples of events whose periods are not time left out "
				"(--wall adds cpu-clock and task-clock samples, ns, to offcpu-time)\n", rep.wall_dropped);
	if (o.wall && !rep.wall_kept && rep.mode != MODE_SCRIPT && st.samples_delivered) {
		fprintf(stderr, "unwound report: --wall: no samples of cpu-clock, task-clock or offcpu-time (record with "
				"-e cpu-clock --off-cpu)\n");
		ret = CLI_EXIT_USAGE;
		goto out;
	}
	if (o.event && !st.samples_delivered) {
		bool known = false;
		for (unsigned i = 0; i < uw_reader_nr_events(rd); i++)
			known |= !strcmp(uw_reader_event_name(rd, i), o.event);
		if (!known) {
			fprintf(stderr, "unwound report: --event %s: no such event in the recording\n", o.event);
			ret = CLI_EXIT_USAGE;
			goto out;
		}
	}
	ret = cli_incomplete("report", rep.s) ? CLI_EXIT_INCOMPLETE : CLI_EXIT_OK;
out:
	uw_script_writer_close(rep.sw);
	/* the file at its path only when the report was written to its end (whole, or incomplete
	 * and said: exit status 3): a failed one leaves the path as it was */
	int ce = rep.out ? cli_close_output(rep.out, &outfd, ret == CLI_EXIT_OK || ret == CLI_EXIT_INCOMPLETE) : 0;
	if (ce && (ret == CLI_EXIT_OK || ret == CLI_EXIT_INCOMPLETE)) {
		fprintf(stderr, "unwound report: writing %s: %s\n", o.outp ? o.outp : "standard output", uw_strerror(ce));
		ret = CLI_EXIT_ERROR;
	}
	uw_profile_free(rep.prof);
	uw_reader_free(rd);
	uw_session_free(rep.s);
	report_opts_free(&o);
	return ret;
}
