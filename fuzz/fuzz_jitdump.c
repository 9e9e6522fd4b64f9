/* SPDX-License-Identifier: MIT */
/* libFuzzer target: jitdump files (jit-PID.dump) into the parser and the time-aware lookup. */
#include <stdint.h>

#include "symbolize/symbolize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct uw_session *s;
	if (!s)
		s = uw_session_new(NULL);
	struct jitdump *jd = NULL;
	if (jit_dump_parse(s, data, size, &jd))
		return 0;
	for (uint64_t pc = 0; pc < 64; pc++)
		jit_dump_find(s, jd, 1, 0x10000 + pc * 64, pc * 1000, size & 1);
	jit_dump_free(jd);
	return 0;
}
