/* SPDX-License-Identifier: MIT */
/* libFuzzer target: perf.data files (file and pipe mode) through the whole pipeline. */
#include <stdint.h>
#include <unistd.h>
#include <unwound/unwound.h>

#include "fuzz_file.h"

static int on_sample(void *ctx, const struct uw_sample *smp)
{
	struct uw_profile *p = ctx;
	return uw_profile_add(p, smp) ? 1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	int fd = fuzz_file(data, size, path);
	if (fd < 0)
		return 0;
	UW_OPTS(uw_session_opts, so, .max_frames = 64, .buildid_dir = "/nonexistent");
	struct uw_session *s = uw_session_new(&so);
	struct uw_profile *p = uw_profile_new(s, NULL);
	/* (half the inputs with stitching, and a cut copy so that stacks are left truncated) */
	UW_OPTS(uw_reader_opts, ro, .on_sample = on_sample, .ctx = p, .max_queue_bytes = 1 << 20, .stitch = size & 1,
		.stack_limit = (size & 1) ? 256 : 0);
	struct uw_reader *r = uw_reader_open(s, path, &ro);
	if (r) {
		uw_reader_run(r);
		FILE *null = fopen("/dev/null", "w");
		if (null) {
			uw_profile_write_folded(p, null);
			UW_OPTS(uw_table_opts, to, .sort = "comm,dso,sym,srcline", .max_rows = 10);
			uw_profile_write_table(p, null, &to);
			fclose(null);
		}
		uw_reader_free(r);
	}
	uw_profile_free(p);
	uw_session_free(s);
	close(fd);
	return 0;
}
