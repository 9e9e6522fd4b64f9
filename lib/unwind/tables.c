/* SPDX-License-Identifier: MIT */
/* A module's unwind tables from its ELF files (unwind.h: struct unw_tables). */
#include <errno.h>

#include "cfi/sframe.h"
#include "unwind/unwind.h"

/* Below this .eh_frame size the whole table is compiled at once (cheap, and denser). */
#define CFI_LAZY_MIN_BYTES (64u << 10)

static void add_plt(struct unw_tables *t, struct elfv *elf, const char *name)
{
	struct elfv_sec sec;
	if (t->code.nplt < UW_ARRAY_SIZE(t->code.plt) && elfv_section(elf, name, &sec) == 0 && sec.size) {
		t->code.plt[t->code.nplt].lo = sec.addr;
		t->code.plt[t->code.nplt].hi = sec.addr + sec.size;
		t->code.nplt++;
	}
}

/* The SFrame section (by name, or the PT_GNU_SFRAME segment of a file without section headers),
 * compiled into the second table: per frame, the unwinder takes CFI where it covers the pc,
 * else SFrame. @return its error (0 also when there is none). */
static int build_sframe(struct unw_tables *t, struct elfv *elf)
{
	const uint8_t *data;
	uint64_t size, addr;
	if (!elfv_sframe(elf, &data, &size, &addr))
		return 0;
	struct sframe_sec sf;
	int err = sframe_open(&sf, data, (size_t)size, addr);
	if (!err)
		err = cfi_table_build_sframe(&t->sframe, &cfi_arch_x86_64, &sf);
	t->code.sframe = !err && t->sframe.n ? &t->sframe : NULL;
	return err;
}

int unw_tables_build(struct unw_tables *t, struct elfv *elf, struct elfv *dbg, bool lazy, int *sframe_err)
{
	memset(t, 0, sizeof(*t));
	struct elfv_sec eh, df;
	struct cfi_section ehs = { 0 }, dfs = { 0 };
	if (elfv_section(elf, ".eh_frame", &eh) == 0 && eh.data)
		ehs = (struct cfi_section){ eh.data, eh.size, eh.addr, true };
	if ((elfv_section(elf, ".debug_frame", &df) == 0 && df.data) ||
	    (dbg && elfv_section(dbg, ".debug_frame", &df) == 0 && df.data))
		dfs = (struct cfi_section){ df.data, df.size, df.addr, false };
	/* Large .eh_frame with a search table and no .debug_frame: compile FDEs as they are hit
	 * (see cfi.h); otherwise compile the whole table now. */
	int err = -UW_EUNSUPP;
	struct elfv_sec hdr;
	if (lazy && !dfs.data && ehs.data && ehs.size >= CFI_LAZY_MIN_BYTES &&
	    elfv_section(elf, ".eh_frame_hdr", &hdr) == 0 && hdr.data) {
		struct cfi_section hs = { hdr.data, hdr.size, hdr.addr, false };
		err = cfi_table_build_lazy(&t->cfi, &cfi_arch_x86_64, &ehs, &hs);
	}
	if (err == -UW_EUNSUPP)
		err = cfi_table_build(&t->cfi, &cfi_arch_x86_64, &ehs, &dfs);
	t->code.cfi = (t->cfi.n || t->cfi.lazy) ? &t->cfi : NULL;
	*sframe_err = build_sframe(t, elf);
	add_plt(t, elf, ".plt");
	add_plt(t, elf, ".plt.sec");
	add_plt(t, elf, ".plt.got");
	return err;
}

void unw_tables_free(struct unw_tables *t)
{
	cfi_table_free(&t->cfi);
	cfi_table_free(&t->sframe);
	memset(t, 0, sizeof(*t));
}
