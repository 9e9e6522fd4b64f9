/* SPDX-License-Identifier: MIT */
/* MiniDebugInfo: the xz-compressed symbol table some distributions keep in .gnu_debugdata. */
#include <inttypes.h>
#include <lzma.h>
#include <stdlib.h>

#include "module/files.h"

struct elfv *module_open_minidebug(struct uw_session *s, struct uw_module *m)
{
	struct elfv_sec sec;
	if (!m->elf || elfv_section(m->elf, ".gnu_debugdata", &sec) || !sec.data || !sec.size)
		return NULL;
	/* the uncompressed size is in the xz index; decode with a growing buffer and a cap */
	const uint64_t max = UW_MAX(session_view_cap(s) / 4, (uint64_t)1 << 16);
	size_t cap = (size_t)UW_MIN(UW_MAX(sec.size * 4, (uint64_t)1 << 16), max);
	for (;;) {
		uint8_t *out = malloc(cap);
		if (!out)
			return NULL;
		uint64_t memlimit = 64 << 20;
		size_t in_pos = 0, out_pos = 0;
		lzma_ret r = lzma_stream_buffer_decode(&memlimit, 0, NULL, sec.data, &in_pos, sec.size, out, &out_pos, cap);
		if (r == LZMA_OK) {
			struct elfv *v;
			if (elfv_adopt_mem(out, out_pos, &v))
				return NULL;
			return v;
		}
		free(out);
		if (r == LZMA_BUF_ERROR && cap >= max) {
			base_log(&s->log, UW_LOG_WARN, "%s: .gnu_debugdata decompresses to more than %" PRIu64
				 " MiB (a quarter of --max-inflate): not read", m->path, max >> 20);
			return NULL;
		}
		if (r != LZMA_BUF_ERROR) {
			base_log(&s->log, UW_LOG_WARN, "%s: .gnu_debugdata is not a usable xz stream (%d)", m->path, (int)r);
			return NULL;
		}
		cap = (size_t)UW_MIN((uint64_t)cap * 4, max);
	}
}
