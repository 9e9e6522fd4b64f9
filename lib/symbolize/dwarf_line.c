/* SPDX-License-Identifier: MIT */
/*
 * Line tables read directly from .debug_line (DWARF 2-5).
 *
 * Why not libdw's dwarf_getsrclines: it allocates a record per row in a linked list, copies them
 * into an array and sorts it with qsort; for a CPython recording (144 units) that was 70 ms of a
 * 175 ms `report --script`. Here a unit's program is decoded once into a flat array of 16-byte
 * rows; its sequences are already in address order inside, so only the sequences are ordered
 * (most units need nothing). File names are joined with their directory only when asked for.
 * Anything not handled (VLIW op_index, string forms needing .debug_str_offsets) returns NULL and
 * the caller falls back to libdw. test_dwarf compares every row's lookup with libdw's.
 */
#include "symbolize/dwarf_line.h"
#include "symbolize/dwarf_form.h"

#include <dwarf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct dwl_row {
	uint64_t addr;
	uint32_t file;  /* bit 31: end of a sequence */
	uint32_t line;
};

#define END_SEQ 0x80000000u

struct dwl_file {
	const char *name;    /* into the section data */
	uint32_t dir;
};

struct dwl_table {
	struct dwl_row *rows;
	size_t nrows;
	bool borrowed;       /* rows are the store's (mapped), not the table's */
	struct dwl_store *store; /* decoded here, to be saved in the store (fresh[fresh_idx]) */
	size_t fresh_idx;
	struct dwl_file *files;
	uint32_t nfiles;
	const char **dirs;   /* into the section data (dirs[0] may be comp_dir) */
	uint32_t ndirs;
};

/* A little-endian value of n bytes (1-8) at the cursor. */
static uint64_t cur_n(struct base_cursor *c, unsigned n)
{
	uint64_t v = 0;
	if (!base_cur_need(c, n))
		return 0;
	memcpy(&v, c->p, n);
	c->p += n;
	return v;
}

/* A string from an offset into .debug_str or .debug_line_str. */
static const char *sec_str(const uint8_t *sec, size_t n, uint64_t off)
{
	if (!sec || off >= n || !memchr(sec + off, 0, n - off))
		return NULL;
	return (const char *)sec + off;
}

/* One entry field of a DWARF 5 directory or file table. @return false when not handled. */
static bool entry_field(struct base_cursor *r, const struct dwl_sections *sec, unsigned offsz, uint64_t form, const char **str,
                        uint64_t *val)
{
	*str = NULL;
	*val = 0;
	switch (form) {
	case DW_FORM_string:
		*str = base_cur_str(r);
		return *str != NULL;
	case DW_FORM_line_strp:
		*str = sec_str(sec->line_str, sec->nline_str, cur_n(r, offsz));
		return *str != NULL && !r->bad;
	case DW_FORM_strp:
		*str = sec_str(sec->str, sec->nstr, cur_n(r, offsz));
		return *str != NULL && !r->bad;
	case DW_FORM_data1: case DW_FORM_data2: case DW_FORM_data4: case DW_FORM_data8: case DW_FORM_data16: {
		unsigned n = (unsigned)dwf_fixed_size(form, offsz, 8, 5);
		*val = cur_n(r, n > 8 ? 8 : n); /* (a 16-byte value: only skipped) */
		if (n > 8)
			base_cur_skip(r, n - 8);
		return !r->bad;
	}
	case DW_FORM_udata:
		*val = base_cur_uleb(r);
		return !r->bad;
	case DW_FORM_block: {
		uint64_t n = base_cur_uleb(r);
		if (r->bad || (uint64_t)(r->end - r->p) < n)
			return false;
		r->p += n;
		return true;
	}
	default:
		return false; /* strx forms need the unit's string offsets base: libdw */
	}
}

/* A DWARF 5 directory or file table. */
static bool v5_table(struct base_cursor *r, const struct dwl_sections *sec, unsigned offsz, bool files, struct dwl_table *t)
{
	uint8_t nfmt = (uint8_t)cur_n(r, 1);
	uint64_t fmt[32][2];
	if (r->bad || nfmt > 32)
		return false;
	for (unsigned i = 0; i < nfmt; i++) {
		fmt[i][0] = base_cur_uleb(r);
		fmt[i][1] = base_cur_uleb(r);
	}
	uint64_t count = base_cur_uleb(r);
	if (r->bad || count > (uint64_t)(r->end - r->p) || count > (1u << 24))
		return false;
	if (files) {
		t->files = calloc(count ? count : 1, sizeof(*t->files));
		if (!t->files)
			return false;
	} else {
		t->dirs = calloc(count ? count : 1, sizeof(*t->dirs));
		if (!t->dirs)
			return false;
	}
	for (uint64_t k = 0; k < count; k++) {
		const char *path = NULL;
		uint64_t dir = 0;
		for (unsigned i = 0; i < nfmt; i++) {
			const char *s;
			uint64_t v;
			if (!entry_field(r, sec, offsz, fmt[i][1], &s, &v))
				return false;
			if (fmt[i][0] == DW_LNCT_path)
				path = s;
			else if (fmt[i][0] == DW_LNCT_directory_index)
				dir = v;
		}
		if (!path)
			return false;
		if (files)
			t->files[t->nfiles++] = (struct dwl_file){ path, (uint32_t)UW_MIN(dir, (uint64_t)UINT32_MAX) };
		else
			t->dirs[t->ndirs++] = path;
	}
	return true;
}

static void store_forget(struct dwl_store *st, size_t idx);

void dwl_free(struct dwl_table *t)
{
	if (!t)
		return;
	if (t->store)
		store_forget(t->store, t->fresh_idx);
	if (!t->borrowed)
		free(t->rows);
	free(t->files);
	free(t->dirs);
	free(t);
}

struct seq {
	size_t first, n;
	uint64_t start;
};

static int cmp_seq(const void *a, const void *b)
{
	const struct seq *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->first < y->first ? -1 : x->first > y->first;
}

/* Orders the sequences by start address (each is in address order inside). */
static bool order_sequences(struct dwl_table *t, struct seq *seqs, size_t nseq)
{
	bool sorted = true;
	for (size_t i = 1; i < nseq && sorted; i++)
		sorted = seqs[i].start >= seqs[i - 1].start;
	if (sorted)
		return true;
	qsort(seqs, nseq, sizeof(*seqs), cmp_seq);
	struct dwl_row *nr = malloc(t->nrows * sizeof(*nr));
	if (!nr)
		return false;
	size_t at = 0;
	for (size_t i = 0; i < nseq; i++) {
		memcpy(nr + at, t->rows + seqs[i].first, seqs[i].n * sizeof(*nr));
		at += seqs[i].n;
	}
	free(t->rows);
	t->rows = nr;
	return true;
}

static bool store_rows(struct dwl_store *st, uint64_t off, const uint8_t *unit, size_t len, struct dwl_table *t);
static void store_add(struct dwl_store *st, uint64_t off, const uint8_t *unit, size_t len, struct dwl_table *t);

struct dwl_table *dwl_build(const struct dwl_sections *sec, uint64_t off, const char *comp_dir)
{
	return dwl_build_stored(sec, off, comp_dir, NULL);
}

struct dwl_table *dwl_build_stored(const struct dwl_sections *sec, uint64_t off, const char *comp_dir,
                                   struct dwl_store *st)
{
	if (!sec->line || off >= sec->nline)
		return NULL;
	struct base_cursor r = base_cursor(sec->line + off, sec->nline - off);
	unsigned offsz;
	uint64_t len = base_cur_initial_length(&r, &offsz);
	if (r.bad || len > (uint64_t)(r.end - r.p))
		return NULL;
	r.end = r.p + len;
	const uint8_t *unit = sec->line + off;
	size_t unit_len = (size_t)(r.end - unit);
	unsigned version = (unsigned)cur_n(&r, 2);
	if (version < 2 || version > 5)
		return NULL;
	if (version == 5) {
		unsigned asz = (unsigned)cur_n(&r, 1);
		cur_n(&r, 1); /* segment selector size */
		if (asz != 8 && asz != 4)
			return NULL;
	}
	uint64_t hlen = cur_n(&r, offsz);
	if (r.bad || hlen > (uint64_t)(r.end - r.p))
		return NULL;
	const uint8_t *prog = r.p + hlen;
	unsigned min_inst = (unsigned)cur_n(&r, 1);
	unsigned max_ops = version >= 4 ? (unsigned)cur_n(&r, 1) : 1;
	bool default_stmt = cur_n(&r, 1) != 0;
	int line_base = (int8_t)cur_n(&r, 1);
	unsigned line_range = (unsigned)cur_n(&r, 1);
	unsigned opcode_base = (unsigned)cur_n(&r, 1);
	(void)default_stmt;
	if (r.bad || max_ops != 1 || line_range == 0 || opcode_base == 0)
		return NULL;
	uint8_t std_len[256] = { 0 };
	for (unsigned i = 1; i < opcode_base; i++)
		std_len[i] = (uint8_t)cur_n(&r, 1);
	struct dwl_table *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	if (version == 5) {
		if (!v5_table(&r, sec, offsz, false, t) || !v5_table(&r, sec, offsz, true, t))
			goto fail;
	} else {
		/* directory 0 is the unit's directory; file 0 does not exist (index from 1) */
		size_t cap = 16;
		t->dirs = malloc(cap * sizeof(*t->dirs));
		if (!t->dirs)
			goto fail;
		t->dirs[t->ndirs++] = comp_dir;
		for (;;) {
			const char *d = base_cur_str(&r);
			if (!d)
				goto fail;
			if (!*d)
				break;
			if (t->ndirs == cap) {
				const char **nd = realloc(t->dirs, 2 * cap * sizeof(*nd));
				if (!nd)
					goto fail;
				t->dirs = nd;
				cap *= 2;
			}
			t->dirs[t->ndirs++] = d;
		}
		cap = 16;
		t->files = malloc(cap * sizeof(*t->files));
		if (!t->files)
			goto fail;
		t->files[t->nfiles++] = (struct dwl_file){ "???", 0 };
		for (;;) {
			const char *f = base_cur_str(&r);
			if (!f)
				goto fail;
			if (!*f)
				break;
			uint64_t dir = base_cur_uleb(&r);
			base_cur_uleb(&r);
			base_cur_uleb(&r);
			if (r.bad)
				goto fail;
			if (t->nfiles == cap) {
				struct dwl_file *nf = realloc(t->files, 2 * cap * sizeof(*nf));
				if (!nf)
					goto fail;
				t->files = nf;
				cap *= 2;
			}
			t->files[t->nfiles++] = (struct dwl_file){ f, (uint32_t)UW_MIN(dir, (uint64_t)UINT32_MAX) };
		}
	}
	if (r.bad || prog > r.end)
		goto fail;
	/* rows decoded by an earlier run, for these very bytes */
	if (st && store_rows(st, off, unit, unit_len, t))
		return t;
	/* the program */
	r.p = prog;
	size_t cap = 256, nseq = 0, seqcap = 16, seq_first = 0;
	t->rows = malloc(cap * sizeof(*t->rows));
	struct seq *seqs = malloc(seqcap * sizeof(*seqs));
	if (!t->rows || !seqs) {
		free(seqs);
		goto fail;
	}
	uint64_t addr = 0;
	uint32_t file = 1, line = 1;
	bool ok = true;
	while (r.p < r.end && ok) {
		uint8_t op = *r.p++;
		bool emit = false, end = false;
		if (op >= opcode_base) {
			unsigned adj = op - opcode_base;
			addr += (uint64_t)(adj / line_range) * min_inst;
			line += (uint32_t)(line_base + (int)(adj % line_range));
			emit = true;
		} else if (op == 0) {
			uint64_t n = base_cur_uleb(&r);
			if (r.bad || n == 0 || n > (uint64_t)(r.end - r.p)) {
				ok = false;
				break;
			}
			const uint8_t *next = r.p + n;
			uint8_t sub = *r.p++;
			if (sub == DW_LNE_end_sequence) {
				emit = end = true;
			} else if (sub == DW_LNE_set_address) {
				unsigned asz = (unsigned)(n - 1);
				if (asz != 8 && asz != 4) {
					ok = false;
					break;
				}
				addr = cur_n(&r, asz);
			} else if (sub == DW_LNE_define_file) {
				ok = false; /* DWARF 2-4 only, and never emitted by current compilers: libdw */
				break;
			}
			r.p = next;
		} else {
			switch (op) {
			case DW_LNS_copy:
				emit = true;
				break;
			case DW_LNS_advance_pc:
				addr += base_cur_uleb(&r) * min_inst;
				break;
			case DW_LNS_advance_line:
				line += (uint32_t)base_cur_sleb(&r);
				break;
			case DW_LNS_set_file:
				file = (uint32_t)base_cur_uleb(&r);
				break;
			case DW_LNS_const_add_pc:
				addr += (uint64_t)((255 - opcode_base) / line_range) * min_inst;
				break;
			case DW_LNS_fixed_advance_pc:
				addr += cur_n(&r, 2);
				break;
			default:
				/* set_column, negate_stmt, basic_block, prologue_end, epilogue_begin,
				 * set_isa and unknown ones: skip their operands */
				for (unsigned i = 0; i < std_len[op]; i++)
					base_cur_uleb(&r);
				break;
			}
			if (r.bad)
				ok = false;
		}
		if (!emit)
			continue;
		if (t->nrows == cap) {
			struct dwl_row *nr = realloc(t->rows, 2 * cap * sizeof(*nr));
			if (!nr) {
				ok = false;
				break;
			}
			t->rows = nr;
			cap *= 2;
		}
		/* within a sequence addresses do not decrease; a row that would is dropped */
		struct dwl_row *prev = t->nrows > seq_first ? &t->rows[t->nrows - 1] : NULL;
		if (prev && addr < prev->addr) {
			ok = false;
			break;
		}
		/* Rows a lookup can never return are not kept (a third to a half of GCC's): one at the
		 * address of the next (the last row at an address answers for it), and one that says
		 * what the row before it said (that row answers up to the next change). */
		struct dwl_row row = { addr, (file & ~END_SEQ) | (end ? END_SEQ : 0), line };
		if (prev && prev->addr == addr) {
			*prev = row;
		} else if (!end && prev && !(prev->file & END_SEQ) && prev->file == row.file && prev->line == line) {
			continue;
		} else {
			t->rows[t->nrows++] = row;
		}
		if (end) {
			if (nseq == seqcap) {
				struct seq *ns = realloc(seqs, 2 * seqcap * sizeof(*ns));
				if (!ns) {
					ok = false;
					break;
				}
				seqs = ns;
				seqcap *= 2;
			}
			/* an empty sequence (it ends where it starts) covers nothing: dropped, so the
			 * sequences do not overlap */
			if (t->rows[seq_first].addr == addr)
				t->nrows = seq_first;
			else
				seqs[nseq++] = (struct seq){ seq_first, t->nrows - seq_first, t->rows[seq_first].addr };
			seq_first = t->nrows;
			addr = 0;
			file = 1;
			line = 1;
		}
	}
	/* rows after the last end_sequence belong to no sequence: dropped, as libdw does */
	t->nrows = seq_first;
	ok = ok && order_sequences(t, seqs, nseq);
	free(seqs);
	if (!ok)
		goto fail;
	if (st)
		store_add(st, off, unit, unit_len, t);
	return t;
fail:
	dwl_free(t);
	return NULL;
}

bool dwl_find(const struct dwl_table *t, uint64_t addr, uint32_t *file, uint32_t *line)
{
	if (!t || !t->nrows || addr < t->rows[0].addr)
		return false;
	size_t lo = 0, hi = t->nrows; /* last row with addr <= target, in [lo, hi) */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->rows[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	const struct dwl_row *row = &t->rows[lo];
	if (row->file & END_SEQ)
		return false;
	*file = row->file;
	*line = row->line;
	return true;
}

const char *dwl_file(const struct dwl_table *t, uint32_t idx, char *buf, size_t cap)
{
	if (!t || idx >= t->nfiles || !cap)
		return NULL;
	const struct dwl_file *f = &t->files[idx];
	/* as libdw names it: the directory and the name joined, unless the name is absolute */
	const char *dir = f->dir < t->ndirs ? t->dirs[f->dir] : NULL;
	if (f->name[0] == '/' || !dir)
		return f->name;
	int n = snprintf(buf, cap, "%s/%s", dir, f->name);
	return n > 0 && (size_t)n < cap ? buf : f->name;
}

/*
 * ---- decoded rows kept between runs
 *
 * Decoding the line programs is most of the work of source lines once the DWARF is mapped
 * (CPython's units touched by the bench recording: 2.1 MB of programs, about a quarter of the
 * helper thread's time). So with a cache directory the decoded rows are kept in
 * DIR/BUILD-ID-KEY.lines2: a header, one record per unit sorted by the program's offset, then the
 * rows of every unit. The file is made from one file and used for that one only: its header
 * holds the identity of the file the rows were decoded from (device, inode, size, times; KEY is
 * a hash of it), and rows are not taken for any other file (a unit's hash below is no
 * cryptographic hash: a file forged to claim a genuine build-id could otherwise bring rows of its
 * own to the genuine file's reports). A unit's rows are taken (mapped, not copied) only when its
 * program's offset, length and hash are those of the bytes read now, and when the rows' own
 * hash, checked on first use, says they are as written. The file is mapped: it is the cache's
 * own (see elfv_open_mapped), never a file a recording names.
 */
#define STORE_MAGIC "UWLINES2"
#define STORE_MAX_ROWS ((size_t)1 << 26) /* 1 GiB of rows: more are not kept */

struct store_hdr {
	char magic[8];
	uint32_t row_size, unit_size;
	uint64_t nunits, nrows;
	struct elfv_ident ident; /* the file the rows were decoded from */
};

struct store_unit {
	uint64_t off, len, hash; /* the unit's bytes in .debug_line */
	uint64_t rows_hash, first, nrows;
};

struct fresh {
	uint64_t off, len, hash;
	struct dwl_table *t;     /* NULL once freed */
};

struct dwl_store {
	char *path;
	struct elfv_ident ident;
	uint64_t cap;            /* the cache directory's size cap (0: none) */
	void *map;
	size_t map_size;
	const struct store_unit *units;
	size_t nunits;
	const struct dwl_row *rows;
	size_t nrows;
	uint8_t *state;          /* per stored unit: 0 not checked, 1 good, 2 bad or decoded again
	                          * (each written only by the thread that builds that unit's table) */
	pthread_mutex_t mu;      /* fresh, fresh_rows: tables of different units are built at once */
	struct base_vec fresh;   /* struct fresh: decoded this run */
	size_t fresh_rows, taken; /* (taken: atomic) */
};

static bool store_valid(const uint8_t *p, size_t size, const struct elfv_ident *ident)
{
	struct store_hdr h;
	if (size < sizeof(h))
		return false;
	memcpy(&h, p, sizeof(h));
	if (memcmp(h.magic, STORE_MAGIC, 8) || h.row_size != sizeof(struct dwl_row) ||
	    h.unit_size != sizeof(struct store_unit) || memcmp(&h.ident, ident, sizeof(*ident)))
		return false;
	size_t rest = size - sizeof(h);
	if (h.nunits > rest / sizeof(struct store_unit))
		return false;
	rest -= (size_t)h.nunits * sizeof(struct store_unit);
	if (rest % sizeof(struct dwl_row) || h.nrows != rest / sizeof(struct dwl_row))
		return false;
	const struct store_unit *u = (const struct store_unit *)(p + sizeof(h));
	for (uint64_t i = 0; i < h.nunits; i++) {
		if (i && u[i].off <= u[i - 1].off)
			return false;
		if (u[i].first > h.nrows || u[i].nrows > h.nrows - u[i].first)
			return false;
	}
	return true;
}

struct dwl_store *dwl_store_open(const char *path, const struct elfv_ident *ident, uint64_t cap)
{
	struct dwl_store *st = calloc(1, sizeof(*st));
	if (!st || !(st->path = strdup(path))) {
		free(st);
		return NULL;
	}
	st->fresh = BASE_VEC_INIT(struct fresh);
	pthread_mutex_init(&st->mu, NULL);
	st->cap = cap;
	st->ident = *ident;
	uint64_t fsize;
	int fd = base_open_file(path, BASE_OPEN_NOFOLLOW, 0, &fsize);
	if (fd < 0)
		return st;
	base_cache_touch(fd); /* used: the last to go when the cache is full */
	struct stat sb;
	/* only a file of this user's that no one else may write (never written in place: mapped) */
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_uid == geteuid() && !(sb.st_mode & (S_IWGRP | S_IWOTH)) &&
	    sb.st_size >= (off_t)sizeof(struct store_hdr) &&
	    (uint64_t)sb.st_size <= (uint64_t)STORE_MAX_ROWS * 2 * sizeof(struct dwl_row)) {
		void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m != MAP_FAILED && store_valid(m, (size_t)sb.st_size, &st->ident)) {
			struct store_hdr h;
			memcpy(&h, m, sizeof(h));
			st->map = m;
			st->map_size = (size_t)sb.st_size;
			st->units = (const struct store_unit *)((const uint8_t *)m + sizeof(h));
			st->nunits = (size_t)h.nunits;
			st->rows = (const struct dwl_row *)(st->units + st->nunits);
			st->nrows = (size_t)h.nrows;
			if (!(st->state = calloc(st->nunits ? st->nunits : 1, 1))) {
				munmap(m, st->map_size);
				st->map = NULL;
				st->nunits = st->nrows = 0;
			}
		} else if (m != MAP_FAILED) {
			munmap(m, (size_t)sb.st_size);
		}
	}
	close(fd);
	return st;
}

static const struct store_unit *store_find(const struct dwl_store *st, uint64_t off, size_t *idx)
{
	size_t lo = 0, hi = st->nunits;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (st->units[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == st->nunits || st->units[lo].off != off)
		return NULL;
	*idx = lo;
	return &st->units[lo];
}

static bool store_rows(struct dwl_store *st, uint64_t off, const uint8_t *unit, size_t len, struct dwl_table *t)
{
	size_t i;
	const struct store_unit *u = store_find(st, off, &i);
	if (!u || u->len != len || st->state[i] == 2)
		return false;
	if (st->state[i] == 0) {
		bool good = u->hash == base_hash_block(unit, len) &&
			    u->rows_hash == base_hash_block(st->rows + u->first, (size_t)u->nrows * sizeof(struct dwl_row));
		st->state[i] = good ? 1 : 2;
		if (!good)
			return false;
	}
	t->rows = (struct dwl_row *)(st->rows + u->first); /* read only: borrowed */
	t->nrows = (size_t)u->nrows;
	t->borrowed = true;
	__atomic_add_fetch(&st->taken, 1, __ATOMIC_RELAXED);
	return true;
}

static void store_add(struct dwl_store *st, uint64_t off, const uint8_t *unit, size_t len, struct dwl_table *t)
{
	uint64_t hash = base_hash_block(unit, len);
	pthread_mutex_lock(&st->mu);
	struct fresh *f = st->fresh_rows + st->nrows + t->nrows <= STORE_MAX_ROWS ? base_vec_push(&st->fresh) : NULL;
	if (f) {
		size_t i;
		if (store_find(st, off, &i)) /* its stored rows were for other bytes, or bad */
			st->state[i] = 2;
		*f = (struct fresh){ off, len, hash, t };
		t->store = st;
		t->fresh_idx = st->fresh.len - 1;
		st->fresh_rows += t->nrows;
	}
	pthread_mutex_unlock(&st->mu);
}

static void store_forget(struct dwl_store *st, size_t idx)
{
	pthread_mutex_lock(&st->mu);
	struct fresh *f = base_vec_at(&st->fresh, idx);
	st->fresh_rows -= f->t->nrows;
	f->t = NULL;
	pthread_mutex_unlock(&st->mu);
}

/* A unit of the file being written, and where its rows are now. */
struct out_unit {
	struct store_unit u;
	const struct dwl_row *rows;
};

static int cmp_out_off(const void *a, const void *b)
{
	const struct out_unit *x = a, *y = b;
	return x->u.off < y->u.off ? -1 : x->u.off > y->u.off;
}

int dwl_store_save(struct dwl_store *st)
{
	if (!st)
		return 0;
	size_t nfresh = 0;
	for (size_t i = 0; i < st->fresh.len; i++)
		nfresh += ((struct fresh *)base_vec_at(&st->fresh, i))->t != NULL;
	if (!nfresh)
		return 0;
	/* the stored units still good or not checked, and the fresh ones, by offset */
	size_t n = 0, rows = 0, np = 0;
	struct out_unit *o = calloc(st->nunits + nfresh, sizeof(*o));
	struct store_unit *u = calloc(st->nunits + nfresh, sizeof(*u));
	struct base_piece *pieces = calloc(st->nunits + nfresh + 2, sizeof(*pieces));
	int err = o && u && pieces ? 0 : -ENOMEM;
	for (size_t i = 0; !err && i < st->nunits; i++)
		if (st->state[i] != 2)
			o[n++] = (struct out_unit){ st->units[i], st->rows + st->units[i].first };
	for (size_t k = 0; !err && k < st->fresh.len; k++) {
		const struct fresh *f = base_vec_at(&st->fresh, k);
		if (f->t)
			o[n++] = (struct out_unit){ { f->off, f->len, f->hash,
				base_hash_block(f->t->rows, f->t->nrows * sizeof(struct dwl_row)), 0, f->t->nrows }, f->t->rows };
	}
	if (!err)
		qsort(o, n, sizeof(*o), cmp_out_off);
	for (size_t i = 0; !err && i < n; i++) {
		if (i && o[i].u.off == o[i - 1].u.off) /* cannot happen: one table per unit per run */
			err = -EINVAL;
		u[i] = o[i].u;
		u[i].first = rows;
		rows += u[i].nrows;
		pieces[2 + np++] = (struct base_piece){ o[i].rows, (size_t)u[i].nrows * sizeof(struct dwl_row) };
	}
	struct store_hdr h = { .row_size = sizeof(struct dwl_row), .unit_size = sizeof(struct store_unit),
			       .nunits = n, .nrows = rows, .ident = st->ident };
	memcpy(h.magic, STORE_MAGIC, 8);
	if (!err) {
		static const char *const cache_suffixes[] = { ".dwarf1", ".lines1", ".dwarf2", ".lines2", NULL };
		pieces[0] = (struct base_piece){ &h, sizeof(h) };
		pieces[1] = (struct base_piece){ u, n * sizeof(*u) };
		uint64_t total = sizeof(h) + n * sizeof(*u) + rows * sizeof(struct dwl_row);
		err = base_cache_admit(st->path, total, st->cap, cache_suffixes) ? base_replace_file(st->path, pieces, 2 + np)
										    : -UW_ELIMIT;
	}
	free(pieces);
	free(u);
	free(o);
	return err ? err : 1;
}

bool dwl_same(const struct dwl_table *a, const struct dwl_table *b)
{
	return a && b && a->nrows == b->nrows && a->nfiles == b->nfiles &&
	       (!a->nrows || !memcmp(a->rows, b->rows, a->nrows * sizeof(*a->rows)));
}

void dwl_store_counts(const struct dwl_store *st, size_t *stored, size_t *taken, size_t *added)
{
	*stored = st ? st->nunits : 0;
	*taken = st ? st->taken : 0;
	*added = 0;
	for (size_t i = 0; st && i < st->fresh.len; i++)
		*added += ((struct fresh *)base_vec_at(&st->fresh, i))->t != NULL;
}

void dwl_store_free(struct dwl_store *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->fresh.len; i++) {
		struct fresh *f = base_vec_at(&st->fresh, i);
		if (f->t)
			f->t->store = NULL; /* outlives the store: keeps its own rows */
	}
	if (st->map)
		munmap(st->map, st->map_size);
	free(st->state);
	base_vec_free(&st->fresh);
	pthread_mutex_destroy(&st->mu);
	free(st->path);
	free(st);
}
