/* SPDX-License-Identifier: MIT */
/* [vdso]: the recorded image from perf's build-id cache ([vdso]/HEX/vdso), else the running kernel's own. */
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>

#include "module/files.h"

/* A copy of this process's own vdso image: the running kernel's vdso. */
static int own_vdso(struct elfv **out)
{
	const uint8_t *img = (const uint8_t *)getauxval(AT_SYSINFO_EHDR);
	if (!img || memcmp(img, ELFMAG, SELFMAG) != 0 || img[EI_CLASS] != ELFCLASS64)
		return -ENOENT;
	Elf64_Ehdr eh;
	memcpy(&eh, img, sizeof(eh));
	/* the image spans its loaded segments and its section headers */
	uint64_t size = eh.e_shoff + (uint64_t)eh.e_shnum * eh.e_shentsize;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		memcpy(&ph, img + eh.e_phoff + (uint64_t)i * eh.e_phentsize, sizeof(ph));
		if (ph.p_type == PT_LOAD && ph.p_offset + ph.p_filesz > size)
			size = ph.p_offset + ph.p_filesz;
	}
	if (size < sizeof(eh) || size > (1u << 20))
		return -UW_EFORMAT;
	void *copy = malloc(size);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, img, size);
	return elfv_adopt_mem(copy, size, out);
}

/* [vdso]: from perf's build-id cache, else the running kernel's when the build-ids agree. */
bool module_open_vdso(struct uw_session *s, struct uw_module *m)
{
	char p[PATH_MAX];
	const char *bid = m->build_id;
	if (bid[0] && s->buildid_dir && strlen(bid) > 2) {
		/* perf keeps a vdso as .../vdso (an entry of unwound's older builds: .../elf) */
		for (int i = 0; i < 2; i++) {
			snprintf(p, sizeof(p), "%s/.build-id/%.2s/%s/%s", s->buildid_dir, bid, bid + 2, i ? "elf" : "vdso");
			if (module_try_open_trusted(s, p, bid, &m->elf, NULL)) {
				m->opened_path = session_intern(s, p, strlen(p));
				return true;
			}
		}
	}
	struct elfv *v;
	if (own_vdso(&v))
		return false;
	char hex[2 * ELFV_MAX_BUILD_ID + 1];
	elfv_build_id_hex(v, hex);
	if (bid[0] && strcmp(hex, bid) != 0) {
		elfv_close(v);
		return false;
	}
	if (!bid[0])
		memcpy(m->build_id, hex, sizeof(hex));
	m->elf = v;
	m->opened_path = session_intern(s, "[vdso] (running kernel)", 23);
	return true;
}

