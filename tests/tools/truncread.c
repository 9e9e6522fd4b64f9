/* SPDX-License-Identifier: MIT */
/*
 * A recording cut short while it is read: reads FILE with the public reader and, when the
 * first sample is delivered, truncates FILE to CUT bytes (the header and the first records stay).
 * The reader must end with an error that says the file ended, never take a signal (a reader
 * that maps the file dies of SIGBUS on the pages past the new end).
 * usage: truncread FILE CUT full|cut   (full: full_stacks, every stack read whole)
 * Prints the samples delivered and the reader's error; exits 0 when the error came as a value.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <unwound/unwound.h>

static const char *path;
static long long cut_at;
static unsigned long samples;
static int truncated;

static int on_sample(void *ctx, const struct uw_sample *smp)
{
	(void)ctx;
	(void)smp;
	samples++;
	if (!truncated) {
		if (truncate(path, cut_at)) {
			perror("truncate");
			exit(2);
		}
		truncated = 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: truncread FILE CUT full|cut\n");
		return 2;
	}
	path = argv[1];
	cut_at = atoll(argv[2]);
	UW_OPTS(uw_session_opts, so);
	struct uw_session *s = uw_session_new(&so);
	if (!s)
		return 2;
	UW_OPTS(uw_reader_opts, ro, .on_sample = on_sample, .full_stacks = strcmp(argv[3], "full") == 0);
	struct uw_reader *r = uw_reader_open(s, path, &ro);
	if (!r) {
		fprintf(stderr, "open: %s\n", uw_session_errmsg(s));
		return 2;
	}
	int err = uw_reader_run(r);
	char msg[512];
	snprintf(msg, sizeof(msg), "%s", err ? uw_session_errmsg(s) : "no error");
	printf("%lu samples delivered, truncated %s; reader: %d (%s)\n", samples, truncated ? "yes" : "no", err, msg);
	uw_reader_free(r);
	uw_session_free(s);
	if (!truncated) {
		printf("FAIL: no sample was delivered, the file was never truncated\n");
		return 1;
	}
	if (!err) {
		printf("FAIL: the reader read a file cut short while read without an error\n");
		return 1;
	}
	if (!strstr(msg, "cut short while being read")) {
		printf("FAIL: the error does not say the file was cut short while read\n");
		return 1;
	}
	return 0;
}
