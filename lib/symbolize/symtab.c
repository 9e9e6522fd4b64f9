/* SPDX-License-Identifier: MIT */
#include "symbolize/symtab.h"
#include "symbolize/demangle.h"

#include <elf.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

struct cand {
	uint64_t start, size;
	const char *name;
	const char *shown;   /* the demangled name while aliases are compared, else NULL */
	uint8_t bind, type;
	bool demangled;      /* shown is made (demangling only the aliases whose names decide) */
	uint32_t seq;
};

/* a label (STT_NOTYPE) inside a sized function names a place in it, not a function */
static bool inside(const struct sym *prev, const struct cand *c)
{
	return c->type == STT_NOTYPE && prev && prev->end > prev->start && c->start > prev->start &&
	       c->start < prev->end;
}

static unsigned leading_underscores(const char *s)
{
	unsigned n = 0;
	while (s[n] == '_')
		n++;
	return n;
}

/* Among symbols at one address, the one perf would show: with a size, not weak, global, fewer
 * leading underscores, longer name (both of the name as shown: perf demangles as it loads
 * symbols, so 22 folded template instances in node are told apart by demangled length); then
 * the first seen. Returns <0 if a is better. */
static const char *shown_of(struct cand *c, bool demangle)
{
	if (demangle && !c->demangled) {
		c->demangled = true;
		c->shown = sym_demangle_dup(c->name);
	}
	return c->shown ? c->shown : c->name;
}

static int better(struct cand *a, struct cand *b, bool demangle)
{
	if (!!a->size != !!b->size)
		return a->size ? -1 : 1;
	bool aw = a->bind == STB_WEAK, bw = b->bind == STB_WEAK;
	if (aw != bw)
		return aw ? 1 : -1;
	bool ag = a->bind == STB_GLOBAL, bg = b->bind == STB_GLOBAL;
	if (ag != bg)
		return ag ? -1 : 1;
	const char *na = shown_of(a, demangle), *nb = shown_of(b, demangle);
	unsigned ua = leading_underscores(na), ub = leading_underscores(nb);
	if (ua != ub)
		return ua < ub ? -1 : 1;
	size_t la = strlen(na), lb = strlen(nb);
	if (la != lb)
		return la > lb ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* LSD radix sort by start address, 8 bits a pass, passes whose digit never varies skipped.
 * Stable, so aliases stay in table order. A 29k-symbol .dynsym (cc1) sorts ~10x faster than
 * with qsort and a comparator. */
static int radix_sort(struct cand *c, size_t n)
{
	if (n < 2)
		return 0;
	struct cand *tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	uint64_t all_or = 0, all_and = ~(uint64_t)0;
	for (size_t i = 0; i < n; i++) {
		all_or |= c[i].start;
		all_and &= c[i].start;
	}
	struct cand *src = c, *dst = tmp;
	for (unsigned shift = 0; shift < 64; shift += 8) {
		if ((((all_or ^ all_and) >> shift) & 0xff) == 0)
			continue; /* every key has the same digit here */
		size_t count[257] = { 0 };
		for (size_t i = 0; i < n; i++)
			count[((src[i].start >> shift) & 0xff) + 1]++;
		for (unsigned d = 0; d < 256; d++)
			count[d + 1] += count[d];
		for (size_t i = 0; i < n; i++)
			dst[count[(src[i].start >> shift) & 0xff]++] = src[i];
		struct cand *t = src;
		src = dst;
		dst = t;
	}
	if (src != c)
		memcpy(c, src, n * sizeof(*c));
	free(tmp);
	return 0;
}

static int read_table(struct elfv *v, const char *secname, struct base_vec *out)
{
	struct elfv_sec s, strs;
	if (!v || elfv_section(v, secname, &s) || !s.data || s.type == SHT_NOBITS)
		return 0;
	if (elfv_section_at(v, s.link, &strs) || !strs.data || !strs.size)
		return 0;
	size_t n = s.size / sizeof(Elf64_Sym);
	const char *strtab = (const char *)strs.data;
	if (strtab[strs.size - 1] != 0)
		return 0; /* unterminated string table: names could run off the end */
	int added = 0;
	/* per section: 0 unknown, 1 a text section, 2 not */
	uint8_t textsec[4096] = { 0 };
	for (size_t i = 1; i < n; i++) {
		Elf64_Sym sym;
		memcpy(&sym, s.data + i * sizeof(Elf64_Sym), sizeof(sym));
		unsigned type = ELF64_ST_TYPE(sym.st_info);
		if (sym.st_shndx == SHN_UNDEF || sym.st_name == 0 || sym.st_name >= strs.size)
			continue;
		if (type == STT_NOTYPE) {
			/* assembly labels such as _start: perf keeps them when they are visible and in a
			 * section named like text */
			unsigned vis = ELF64_ST_VISIBILITY(sym.st_other);
			if (sym.st_shndx >= SHN_LORESERVE || sym.st_shndx >= sizeof(textsec) || vis == STV_HIDDEN ||
			    vis == STV_INTERNAL)
				continue;
			if (!textsec[sym.st_shndx])
				textsec[sym.st_shndx] = strstr(elfv_section_name(v, sym.st_shndx), "text") ? 1 : 2;
			if (textsec[sym.st_shndx] != 1)
				continue;
		} else if (type != STT_FUNC && type != STT_GNU_IFUNC) {
			continue;
		}
		struct cand *c = base_vec_push(out);
		if (!c)
			return -ENOMEM;
		c->start = sym.st_value;
		c->size = sym.st_size;
		c->name = strtab + sym.st_name;
		c->bind = ELF64_ST_BIND(sym.st_info);
		c->type = (uint8_t)type;
		c->seq = (uint32_t)out->len;
		c->shown = NULL;
		c->demangled = false;
		added++;
	}
	return added;
}

/* name@plt for each lazy-binding PLT slot: .rela.plt entry i is served by stub i of .plt.sec
 * (IBT layout) or stub i + 1 of .plt (after the 16-byte PLT0). */
static int add_plt(struct symtab *t, struct elfv *v, struct base_vec *out)
{
	struct elfv_sec rela, dynsym, dynstr, plt;
	if (!v || elfv_section(v, ".rela.plt", &rela) || !rela.data)
		return 0;
	if (elfv_section_at(v, rela.link, &dynsym) || !dynsym.data ||
	    elfv_section_at(v, dynsym.link, &dynstr) || !dynstr.data || !dynstr.size)
		return 0;
	uint64_t first, entsize = 16;
	if (elfv_section(v, ".plt.sec", &plt) == 0) {
		first = plt.addr;
	} else if (elfv_section(v, ".plt", &plt) == 0) {
		if (plt.entsize >= 8 && plt.entsize <= 64)
			entsize = plt.entsize;
		first = plt.addr + entsize;
	} else {
		return 0;
	}
	size_t n = rela.size / sizeof(Elf64_Rela);
	size_t nsyms = dynsym.size / sizeof(Elf64_Sym);
	for (size_t i = 0; i < n; i++) {
		Elf64_Rela r;
		memcpy(&r, rela.data + i * sizeof(r), sizeof(r));
		uint64_t symi = ELF64_R_SYM(r.r_info);
		uint64_t at = first + i * entsize;
		if (at + entsize > plt.addr + plt.size)
			break;
		const char *nm = NULL;
		if (symi && symi < nsyms) {
			Elf64_Sym sym;
			memcpy(&sym, dynsym.data + symi * sizeof(sym), sizeof(sym));
			if (sym.st_name < dynstr.size && dynstr.data[dynstr.size - 1] == 0)
				nm = (const char *)dynstr.data + sym.st_name;
		}
		if (!nm)
			nm = ""; /* IRELATIVE slots have no symbol: perf names them "@plt" */
		size_t l = strlen(nm);
		char *full = base_arena_alloc(&t->arena, l + 5);
		struct cand *c = base_vec_push(out);
		if (!full || !c)
			return -ENOMEM;
		memcpy(full, nm, l);
		memcpy(full + l, "@plt", 5);
		c->start = at;
		c->size = entsize;
		c->name = full;
		c->bind = STB_GLOBAL;
		c->type = STT_FUNC;
		c->seq = (uint32_t)out->len;
		c->shown = NULL;
		c->demangled = false;
	}
	return 0;
}

/* A symbol's name without its version: a .symtab (a debug file's, an unstripped library's)
 * names the versions a symbol is exported under, "__libc_start_main@@GLIBC_2.34" (the default)
 * or "memcpy@GLIBC_2.2.5"; stacks show the function, not the version (and a mangled name with a
 * version does not demangle). The alias is chosen first, by perf's rules on the names as they
 * are; "name@plt" entries (add_plt) are kept. NULL without memory. */
static const char *unversioned(struct symtab *t, const char *name, uint8_t type)
{
	const char *at = strchr(name, '@');
	if (!at || at == name || (type == STT_FUNC && !strcmp(at, "@plt")))
		return name;
	size_t l = (size_t)(at - name);
	char *s = base_arena_alloc(&t->arena, l + 1);
	if (s) {
		memcpy(s, name, l);
		s[l] = 0;
	}
	return s;
}

/* perf's end of the last symbol when it has no size: roundup(start, 4096) + 4096 */
static uint64_t last_end(uint64_t start)
{
	if (start > UINT64_MAX - 8192)
		return UINT64_MAX;
	return ((start + 4095) & ~(uint64_t)4095) + 4096;
}

int symtab_build(struct symtab *t, struct elfv *elf, struct elfv *dbg, bool demangled)
{
	memset(t, 0, sizeof(*t));
	base_arena_init(&t->arena, 16 * 1024);
	struct base_vec c = BASE_VEC_INIT(struct cand);
	int r = read_table(dbg, ".symtab", &c);
	t->source = ".symtab";
	if (r == 0)
		r = read_table(elf, ".symtab", &c);
	if (r == 0) {
		r = read_table(elf, ".dynsym", &c);
		t->source = ".dynsym";
	}
	if (r >= 0)
		r = add_plt(t, elf, &c);
	if (r < 0) {
		base_vec_free(&c);
		return r;
	}
	struct cand *cs = c.data;
	if (radix_sort(cs, c.len)) {
		base_vec_free(&c);
		return -ENOMEM;
	}
	t->syms = calloc(c.len ? c.len : 1, sizeof(*t->syms));
	if (!t->syms) {
		base_vec_free(&c);
		return -ENOMEM;
	}
	size_t n = 0;
	for (size_t i = 0; i < c.len;) {
		/* one entry per address: the best of its aliases */
		size_t best = i, j = i + 1;
		while (j < c.len && cs[j].start == cs[i].start)
			j++;
		for (size_t k = i + 1; k < j; k++)
			if (better(&cs[k], &cs[best], demangled) < 0)
				best = k;
		for (size_t k = i; k < j; k++)
			if (cs[k].demangled)
				free((char *)cs[k].shown);
		i = j;
		if (n && inside(&t->syms[n - 1], &cs[best]))
			continue;
		t->syms[n].start = cs[best].start;
		t->syms[n].end = cs[best].start + cs[best].size;
		t->syms[n].name = unversioned(t, cs[best].name, cs[best].type);
		if (!t->syms[n].name) {
			base_vec_free(&c);
			return -ENOMEM;
		}
		n++;
	}
	/* zero-sized symbols extend to the next symbol, the last one to the end of the page after
	 * its own (perf's symbols__fixup_end: a sample in _fini, the last function and without a
	 * size, is _fini+0x4 in perf) */
	for (size_t i = 0; i < n; i++)
		if (t->syms[i].end == t->syms[i].start)
			t->syms[i].end = i + 1 < n ? t->syms[i + 1].start : last_end(t->syms[i].start);
	t->n = n;
	base_vec_free(&c);
	return 0;
}

/* binutils' addr2line names the file of code without a line table from the symbol table: a
 * local function's file is the STT_FILE symbol before it (its object's), a global's none. perf
 * report shows that as FILE:0 (perf runs addr2line on the file it took symbols from, when that
 * file has a .debug_line). */
const char *symtab_file_of(struct elfv *elf, struct elfv *dbg, uint64_t start, const char *name)
{
	struct elfv *v = dbg;
	struct elfv_sec s, strs;
	if (!v || elfv_section(v, ".symtab", &s) || !s.data || s.type == SHT_NOBITS)
		v = elf;
	if (!v || elfv_section(v, ".symtab", &s) || !s.data || s.type == SHT_NOBITS)
		return NULL;
	/* (whether there is one: its contents are not read, which may be anything) */
	if (!elfv_has_section(v, ".debug_line") || elfv_section_at(v, s.link, &strs) || !strs.data ||
	    !strs.size || strs.data[strs.size - 1] != 0)
		return NULL;
	const char *strtab = (const char *)strs.data, *file = NULL;
	size_t n = s.size / sizeof(Elf64_Sym);
	for (size_t i = 1; i < n; i++) {
		Elf64_Sym sym;
		memcpy(&sym, s.data + i * sizeof(Elf64_Sym), sizeof(sym));
		if (ELF64_ST_BIND(sym.st_info) != STB_LOCAL)
			break; /* the locals come first */
		if (sym.st_name >= strs.size)
			continue;
		unsigned type = ELF64_ST_TYPE(sym.st_info);
		if (type == STT_FILE)
			file = sym.st_name ? strtab + sym.st_name : NULL;
		else if ((type == STT_FUNC || type == STT_NOTYPE) && sym.st_value == start &&
		         sym.st_shndx != SHN_UNDEF && !strcmp(strtab + sym.st_name, name))
			return file && *file ? file : NULL;
	}
	return NULL;
}

void symtab_free(struct symtab *t)
{
	free(t->syms);
	base_arena_free(&t->arena);
	memset(t, 0, sizeof(*t));
}

const struct sym *symtab_find(const struct symtab *t, uint64_t addr)
{
	size_t lo = base_upper_bound(t->syms, t->n, sizeof(*t->syms), offsetof(struct sym, start), addr);
	/* nested symbols: a later start may end before addr; look back a little for a cover */
	for (size_t i = lo, k = 0; i > 0 && k < 4; i--, k++) {
		const struct sym *s = &t->syms[i - 1];
		if (addr < s->end)
			return s;
	}
	return NULL;
}
