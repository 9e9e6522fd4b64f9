/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the public calls a live profiler makes with what its rings hand it: an
 * event attribute of any size and ids (uw_reader_add_event), then raw records of any kind and
 * order pushed one by one (uw_reader_push, a round every few), then flushed; and the tracker's
 * own calls with the same bytes as mapping events. Input: u16 attribute size, the attribute,
 * u8 id count, the ids, then records (each: u16 length, bytes).
 */
#include <stdint.h>
#include <string.h>
#include <unwound/unwound.h>

static int on_sample(void *ctx, const struct uw_sample *smp)
{
	UW_OPTS(uw_symbolize_opts, so, .lines = 1);
	struct uw_symbols *syms;
	if (uw_symbolize_frames(ctx, smp->user, smp->nr_user, &so, &syms) == 0)
		uw_symbols_free(syms);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 3)
		return 0;
	UW_OPTS(uw_session_opts, so, .max_frames = 64, .buildid_dir = "/nonexistent", .offline = 1);
	struct uw_session *s = uw_session_new(&so);
	UW_OPTS(uw_reader_opts, ro, .on_sample = on_sample, .ctx = s, .max_queue_bytes = 1 << 20);
	struct uw_reader *r = s ? uw_reader_new(s, &ro) : NULL;
	if (!r) {
		uw_session_free(s);
		return 0;
	}
	size_t pos = 0, asz = (size_t)(data[0] | data[1] << 8) % 512;
	pos = 2;
	if (asz > size - pos)
		asz = size - pos;
	uw_reader_add_event(r, data + pos, asz, NULL, 0, NULL);
	pos += asz;
	if (pos < size) {
		size_t nids = data[pos++] % 8;
		uint64_t ids[8];
		if (nids * 8 > size - pos)
			nids = (size - pos) / 8;
		memcpy(ids, data + pos, nids * 8);
		pos += nids * 8;
		uw_reader_add_event(r, data, asz < 136 ? asz : 136, ids, nids, "fuzz");
	}
	struct uw_tracker *t = uw_reader_tracker(r);
	for (unsigned n = 0; pos + 2 <= size; n++) {
		size_t len = (size_t)(data[pos] | data[pos + 1] << 8);
		pos += 2;
		if (len > size - pos)
			len = size - pos;
		uw_reader_push(r, data + pos, len);
		/* the same bytes as a mapping the tracker is told of */
		if (len >= 48) {
			uint64_t f[5];
			memcpy(f, data + pos, sizeof(f));
			char path[17];
			memcpy(path, data + pos + 40, 8);
			memcpy(path + 8, "/lib.so", 8);
			path[16] = 0;
			UW_OPTS(uw_mmap_event, ev, .pid = (uint32_t)f[0], .tid = (uint32_t)(f[0] >> 32), .addr = f[1], .len = f[2],
				.pgoff = f[3], .prot = (uint32_t)f[4], .path = path);
			uw_tracker_mmap(t, &ev);
		}
		pos += len;
		if (n % 4 == 3)
			uw_reader_round(r);
	}
	uw_reader_flush(r);
	uw_reader_free(r);
	uw_session_free(s);
	return 0;
}
