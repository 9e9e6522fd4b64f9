/* SPDX-License-Identifier: MIT */
/*
 * The kernel unwinder's tables kept between recordings (kunw.h: kunw_cache_*), in the session's
 * cache directory under its one cap (the DWARF cache's, base_cache_files).
 *
 * Building a module's table is most of a recording's start-up work and of its first samples
 * handed over to user space: cc1's 480,000 rows take 130-380 ms on the builder thread, during
 * which every walk reaching cc1 is finished in user space from a stack copy. A table depends
 * only on the module's file, its debug file and the code that builds it, so it is written to
 * DIR/BUILD-ID-KEY.kunw1 once built and read back by later recordings.
 *
 * An entry is used for the files it was made from only, by the code that made it:
 *  - its header holds the identity (device, inode, size, modification and change times) and a
 *    hash of the ELF and section headers of the module's file and of its debug file (none: all
 *    zero), as the DWARF cache's entries do: any file can claim any build-id, and a debug file
 *    installed since changes the table (its .debug_frame);
 *  - and the hash of the sources that build tables (kunw_table_sources_key, made by the build
 *    from lib/base, lib/elf, lib/cfi, lib/unwind and the table's own code): a build whose tables
 *    could differ (a fix in the CFI compiler) never reads another's;
 *  - the words are checked against their hash before use (a damaged file is built again and
 *    replaced), and the file is read, not mapped: its bytes go into the program's map.
 * Written without a name and linked once complete (base_replace_file: a reader sees a whole file
 * or none, a writer killed leaves nothing), 0600 in a 0700 directory; read only when it is a
 * regular file of this user's that no one else may write (base_cache_entry_ok), in a directory
 * that is too (session_cache_dir), opened without following a link. A cache: any failure costs
 * only the build.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cache.h"
#include "base/file.h"
#include "base/hash.h"
#include "kernel/kunw.h"

extern const char kunw_table_sources_key[]; /* gen/kunw_table_key.c */

#define KC_MAGIC "UWKUNW01"

struct kc_hdr {
	char magic[8];
	char sources[72];        /* kunw_table_sources_key, NUL-padded */
	struct elfv_ident elf_id, dbg_id;
	uint64_t elf_headers, dbg_headers;
	uint32_t nwords, nrows, nrules, nblocks;
	uint32_t nfallback, nplt, nsignal, nsframe;
	uint64_t words_hash;
};

static void kc_header(struct kc_hdr *h, struct elfv *elf, struct elfv *dbg)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, KC_MAGIC, 8);
	snprintf(h->sources, sizeof(h->sources), "%s", kunw_table_sources_key);
	elfv_ident(elf, &h->elf_id);
	h->elf_headers = elfv_headers_hash(elf);
	if (dbg) {
		elfv_ident(dbg, &h->dbg_id);
		h->dbg_headers = elfv_headers_hash(dbg);
	}
}

char *kunw_cache_path(const char *dir, struct elfv *elf, struct elfv *dbg)
{
	char bid[2 * ELFV_MAX_BUILD_ID + 1];
	struct elfv_ident id[2];
	memset(id, 0, sizeof(id));
	if (!dir || !*dir || !elf || !elfv_ident(elf, &id[0]) || elfv_build_id_hex(elf, bid) < 8 ||
	    (dbg && !elfv_ident(dbg, &id[1])))
		return NULL;
	char *p;
	if (asprintf(&p, "%s/%s-%016" PRIx64 ".kunw1", dir, bid, base_hash_bytes(id, sizeof(id))) < 0)
		return NULL;
	return p;
}

int kunw_cache_read(const char *path, struct elfv *elf, struct elfv *dbg, uint64_t max, struct kunw_table *t)
{
	memset(t, 0, sizeof(*t));
	uint64_t size = 0;
	/* (a file larger than any table that could be loaded is not read: -EFBIG) */
	int fd = base_open_file(path, BASE_OPEN_NOFOLLOW, max + sizeof(struct kc_hdr), &size);
	if (fd < 0)
		return fd;
	/* (only this user's, no one else's to write: its hashes are no secret, anyone who can
	 * write it could make it say anything) */
	if (!base_cache_entry_ok(fd)) {
		close(fd);
		return -EPERM;
	}
	char *buf = NULL;
	size_t len = 0;
	int e = base_read_fd(fd, size, &buf, &len);
	struct kc_hdr want, got;
	kc_header(&want, elf, dbg);
	memset(&got, 0, sizeof(got));
	if (!e && len >= sizeof(got))
		memcpy(&got, buf, sizeof(got));
	/* (everything but the table's own counts and hash must be what these files and this build
	 * make) */
	if (!e && (len < sizeof(got) || memcmp(&want, &got, offsetof(struct kc_hdr, nwords)) || !got.nwords ||
		   got.nwords % KUNW_LINE_WORDS || len != sizeof(got) + (uint64_t)got.nwords * 8 ||
		   base_hash_bytes(buf + sizeof(got), (size_t)got.nwords * 8) != got.words_hash))
		e = -UW_EFORMAT;
	if (e) {
		free(buf);
		close(fd);
		return e;
	}
	base_cache_touch(fd); /* (used now: the cap removes the least recently used first) */
	close(fd);
	/* the words moved to the buffer's start (malloc's alignment): the table owns it */
	memmove(buf, buf + sizeof(got), (size_t)got.nwords * 8);
	t->words = (uint64_t *)(void *)buf;
	t->nwords = got.nwords;
	t->nrows = got.nrows;
	t->nrules = got.nrules;
	t->nblocks = got.nblocks;
	t->nfallback = got.nfallback;
	t->nplt = got.nplt;
	t->nsignal = got.nsignal;
	t->nsframe = got.nsframe;
	return 0;
}

int kunw_cache_write(const char *path, struct elfv *elf, struct elfv *dbg, const struct kunw_table *t, uint64_t cap)
{
	if (!t->nwords)
		return -EINVAL;
	struct kc_hdr h;
	kc_header(&h, elf, dbg);
	h.nwords = t->nwords;
	h.nrows = t->nrows;
	h.nrules = t->nrules;
	h.nblocks = t->nblocks;
	h.nfallback = t->nfallback;
	h.nplt = t->nplt;
	h.nsignal = t->nsignal;
	h.nsframe = t->nsframe;
	h.words_hash = base_hash_bytes(t->words, (size_t)t->nwords * 8);
	struct base_piece pieces[2] = { { &h, sizeof(h) }, { t->words, (size_t)t->nwords * 8 } };
	uint64_t bytes = sizeof(h) + (uint64_t)t->nwords * 8;
	if (!base_cache_admit(path, bytes, cap, base_cache_files))
		return -ENOSPC;
	return base_replace_file(path, pieces, 2);
}
