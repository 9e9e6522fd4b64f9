/* SPDX-License-Identifier: MIT */
/* libFuzzer target: jitdump files (jit-PID.dump) into the parser and the time-aware lookup. */
#include <stdint.h>

#include "process/process.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct uw_session *s;
	static struct uw_tracker *t;
	if (!s) {
		s = uw_session_new(NULL);
		t = uw_tracker_new(s, NULL);
	}
	struct proc *p = proc_get(t, 1, true);
	if (!p || jitdump_parse(s, data, size, &p->jd))
		return 0;
	t->clock_monotonic = size & 1;
	for (uint64_t pc = 0; pc < 64; pc++)
		proc_jitdump_find(t, p, 0x10000 + pc * 64, pc * 1000);
	jitdump_free(p->jd);
	p->jd = NULL;
	return 0;
}
