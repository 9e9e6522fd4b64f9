/* SPDX-License-Identifier: MIT */
/*
 * perf.data writer (file mode): the header, attributes with their ids, the data section, and the
 * feature sections perf and hotspot use (build-ids, host, OS release, perf version, arch, CPUs,
 * command line, event names). Layout as perf writes it (tools/perf/util/header.c): header at 0,
 * the id arrays, the attributes, the data, then a table of {offset, size} per feature bit set
 * followed by the features' bodies.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perf/perf.h"

struct wattr {
	uint8_t raw[PERF_ATTR_MAX];
	uint32_t size;
	const char *name;
	uint64_t *ids;
	size_t nids;
};

struct perf_writer {
	int fd;
	char *path;
	uint64_t data_off, data_size;
	struct wattr *attrs;
	size_t nattrs;
	uint8_t *buf;          /* data written through a buffer */
	size_t blen;
	int err;
	uint64_t since_round;
};

#define WBUF (1u << 20)
#define NAME_ALIGN 64

static void wflush(struct perf_writer *w)
{
	size_t done = 0;
	while (done < w->blen && !w->err) {
		ssize_t n = write(w->fd, w->buf + done, w->blen - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			w->err = n < 0 ? -errno : -EIO;
		else
			done += (size_t)n;
	}
	w->blen = 0;
}

static void wput(struct perf_writer *w, const void *p, size_t n)
{
	if (w->err)
		return;
	if (n > WBUF - w->blen)
		wflush(w);
	if (n > WBUF) {
		const uint8_t *q = p;
		while (n && !w->err) {
			ssize_t k = write(w->fd, q, n);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0) {
				w->err = k < 0 ? -errno : -EIO;
				break;
			}
			q += k;
			n -= (size_t)k;
		}
		return;
	}
	memcpy(w->buf + w->blen, p, n);
	w->blen += n;
}

/* perf's convention: an existing output is kept as FILE.old; the new file is private (0600). */
int perf_writer_open(const char *path, struct perf_writer **out)
{
	*out = NULL;
	struct perf_writer *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->buf = malloc(WBUF);
	w->path = strdup(path);
	if (!w->buf || !w->path) {
		free(w->buf);
		free(w->path);
		free(w);
		return -ENOMEM;
	}
	/* An existing file (or a symbolic link: never followed, it could point anywhere) is kept
	 * as path.old; the new file is then created, and must not exist by then (O_EXCL). A
	 * device such as /dev/null is written as it is. */
	struct stat st;
	int oflags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
	if (lstat(path, &st) == 0) {
		if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) {
			char old[PATH_MAX];
			snprintf(old, sizeof(old), "%s.old", path);
			if (rename(path, old) != 0) {
				int e = -errno;
				free(w->buf);
				free(w->path);
				free(w);
				return e;
			}
		} else if (S_ISCHR(st.st_mode)) {
			oflags = O_WRONLY | O_NOFOLLOW | O_CLOEXEC;
		} else {
			free(w->buf);
			free(w->path);
			free(w);
			return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		}
	}
	w->fd = open(path, oflags, 0600);
	if (w->fd < 0) {
		int e = -errno;
		free(w->buf);
		free(w->path);
		free(w);
		return e;
	}
	/* the header is written last; data starts after a gap for it, the ids and the attributes */
	*out = w;
	return 0;
}

int perf_writer_add_attr(struct perf_writer *w, const uint8_t *raw, uint32_t size, const char *name,
                         const uint64_t *ids, size_t nids)
{
	if (w->data_off)
		return -EINVAL; /* attributes first */
	if (size > PERF_ATTR_MAX || size < PERF_ATTR_SIZE_VER0)
		return -EINVAL;
	struct wattr *na = realloc(w->attrs, (w->nattrs + 1) * sizeof(*na));
	if (!na)
		return -ENOMEM;
	w->attrs = na;
	struct wattr *a = &w->attrs[w->nattrs];
	memset(a, 0, sizeof(*a));
	memcpy(a->raw, raw, size);
	memcpy(a->raw + 4, &size, 4);
	a->size = size;
	a->name = name;
	if (nids) {
		a->ids = malloc(nids * sizeof(*ids));
		if (!a->ids)
			return -ENOMEM;
		memcpy(a->ids, ids, nids * sizeof(*ids));
		a->nids = nids;
	}
	w->nattrs++;
	return 0;
}

/* Places the data section after room for the header, the ids and the attributes. */
static void begin_data(struct perf_writer *w)
{
	if (w->data_off)
		return;
	uint64_t off = 104;
	for (size_t i = 0; i < w->nattrs; i++)
		off += 8 * w->attrs[i].nids;
	uint32_t asz = w->nattrs ? w->attrs[0].size : 0;
	for (size_t i = 0; i < w->nattrs; i++)
		asz = UW_MAX(asz, w->attrs[i].size);
	off += (uint64_t)w->nattrs * (asz + 16);
	w->data_off = (off + 7) & ~7ull;
	if (lseek(w->fd, (off_t)w->data_off, SEEK_SET) < 0)
		w->err = -errno;
}

int perf_writer_record(struct perf_writer *w, const void *rec, size_t len)
{
	begin_data(w);
	wput(w, rec, len);
	w->data_size += len;
	/* a round marker now and then, so readers can deliver in time order without holding
	 * the whole file (records come in time order) */
	if (++w->since_round >= 8192) {
		w->since_round = 0;
		uint8_t fr[8] = { 0 };
		uint32_t t = PR_FINISHED_ROUND;
		uint16_t sz = 8;
		memcpy(fr, &t, 4);
		memcpy(fr + 6, &sz, 2);
		wput(w, fr, 8);
		w->data_size += 8;
	}
	return w->err;
}

/* ---- feature sections */

struct fbuf {
	uint8_t *p;
	size_t n, cap;
	bool bad;
};

static void fput(struct fbuf *f, const void *p, size_t n)
{
	if (f->bad)
		return;
	if (n > f->cap - f->n) {
		size_t cap = f->cap ? f->cap : 4096;
		while (cap - f->n < n)
			cap *= 2;
		uint8_t *np = realloc(f->p, cap);
		if (!np) {
			f->bad = true;
			return;
		}
		f->p = np;
		f->cap = cap;
	}
	memcpy(f->p + f->n, p, n);
	f->n += n;
}

static void fput_u32(struct fbuf *f, uint32_t v)
{
	fput(f, &v, 4);
}

/* perf_header_string: u32 length (padded to 64), then the string, NUL-padded */
static void fput_str(struct fbuf *f, const char *s)
{
	size_t len = strlen(s) + 1, padded = (len + NAME_ALIGN - 1) / NAME_ALIGN * NAME_ALIGN;
	static const uint8_t zeros[NAME_ALIGN];
	fput_u32(f, (uint32_t)padded);
	fput(f, s, len);
	fput(f, zeros, padded - len);
}

int perf_writer_finish(struct perf_writer *w, const struct perf_writer_info *info)
{
	begin_data(w);
	wflush(w);
	if (w->err)
		return w->err;
	/* features: the table after the data, then the bodies */
	struct fbuf body[FEAT_EVENT_DESC + 1];
	memset(body, 0, sizeof(body));
	bool has[FEAT_EVENT_DESC + 1] = { 0 };
	for (size_t i = 0; i < info->nbuildids; i++) {
		const struct perf_writer_buildid *b = &info->buildids[i];
		size_t nl = strlen(b->path) + 1, rec = (8 + 4 + 24 + nl + 7) & ~(size_t)7;
		uint8_t hdr[8 + 4 + 24] = { 0 };
		uint32_t type = PR_HEADER_BUILD_ID;
		uint16_t misc = (uint16_t)((b->kernel ? PM_KERNEL : PM_USER) | PM_BUILD_ID_SIZE), size = (uint16_t)rec;
		int32_t pid = b->kernel ? -1 : 0;
		memcpy(hdr, &type, 4);
		memcpy(hdr + 4, &misc, 2);
		memcpy(hdr + 6, &size, 2);
		memcpy(hdr + 8, &pid, 4);
		memcpy(hdr + 12, b->id, UW_MIN(b->len, (size_t)20));
		hdr[12 + 20] = (uint8_t)UW_MIN(b->len, (size_t)20); /* the id's size, with PM_BUILD_ID_SIZE */
		fput(&body[FEAT_BUILD_ID], hdr, sizeof(hdr));
		fput(&body[FEAT_BUILD_ID], b->path, nl);
		static const uint8_t zeros[8];
		fput(&body[FEAT_BUILD_ID], zeros, rec - sizeof(hdr) - nl);
		has[FEAT_BUILD_ID] = true;
	}
	const char *strs[][2] = { { info->hostname, NULL }, { info->osrelease, NULL }, { info->version, NULL },
				  { info->arch, NULL } };
	unsigned sfeat[] = { FEAT_HOSTNAME, FEAT_OSRELEASE, FEAT_VERSION, FEAT_ARCH };
	for (size_t i = 0; i < 4; i++) {
		if (!strs[i][0])
			continue;
		fput_str(&body[sfeat[i]], strs[i][0]);
		has[sfeat[i]] = true;
	}
	if (info->nr_cpus_avail) {
		fput_u32(&body[FEAT_NRCPUS], info->nr_cpus_avail);
		fput_u32(&body[FEAT_NRCPUS], info->nr_cpus_online);
		has[FEAT_NRCPUS] = true;
	}
	if (info->argc) {
		fput_u32(&body[FEAT_CMDLINE], (uint32_t)info->argc);
		for (int i = 0; i < info->argc; i++)
			fput_str(&body[FEAT_CMDLINE], info->argv[i]);
		has[FEAT_CMDLINE] = true;
	}
	if (w->nattrs) {
		struct fbuf *f = &body[FEAT_EVENT_DESC];
		uint32_t asz = 0;
		for (size_t i = 0; i < w->nattrs; i++)
			asz = UW_MAX(asz, w->attrs[i].size);
		fput_u32(f, (uint32_t)w->nattrs);
		fput_u32(f, asz);
		for (size_t i = 0; i < w->nattrs; i++) {
			uint8_t a[PERF_ATTR_MAX] = { 0 };
			memcpy(a, w->attrs[i].raw, w->attrs[i].size);
			fput(f, a, asz);
			fput_u32(f, (uint32_t)w->attrs[i].nids);
			fput_str(f, w->attrs[i].name ? w->attrs[i].name : "");
			fput(f, w->attrs[i].ids, 8 * w->attrs[i].nids);
		}
		has[FEAT_EVENT_DESC] = true;
	}
	uint64_t feat[4] = { 0 };
	size_t nfeat = 0;
	for (unsigned i = 0; i <= FEAT_EVENT_DESC; i++) {
		if (has[i] && !body[i].bad) {
			feat[i / 64] |= 1ull << (i % 64);
			nfeat++;
		}
	}
	uint64_t table = w->data_off + w->data_size, at = table + 16 * nfeat;
	for (unsigned i = 0; i <= FEAT_EVENT_DESC; i++) {
		if (!(feat[i / 64] & (1ull << (i % 64))))
			continue;
		uint64_t sec[2] = { at, body[i].n };
		wput(w, sec, 16);
		at += body[i].n;
	}
	for (unsigned i = 0; i <= FEAT_EVENT_DESC; i++)
		if (feat[i / 64] & (1ull << (i % 64)))
			wput(w, body[i].p, body[i].n);
	for (unsigned i = 0; i <= FEAT_EVENT_DESC; i++)
		free(body[i].p);
	wflush(w);
	/* the ids and the attributes after the header, then the header */
	if (lseek(w->fd, 104, SEEK_SET) < 0)
		w->err = -errno;
	uint64_t off = 104;
	uint64_t *ids_off = calloc(w->nattrs ? w->nattrs : 1, sizeof(*ids_off));
	if (!ids_off)
		return -ENOMEM;
	for (size_t i = 0; i < w->nattrs; i++) {
		ids_off[i] = off;
		wput(w, w->attrs[i].ids, 8 * w->attrs[i].nids);
		off += 8 * w->attrs[i].nids;
	}
	uint32_t asz = 0;
	for (size_t i = 0; i < w->nattrs; i++)
		asz = UW_MAX(asz, w->attrs[i].size);
	uint64_t attrs_off = off;
	for (size_t i = 0; i < w->nattrs; i++) {
		uint8_t a[PERF_ATTR_MAX] = { 0 };
		memcpy(a, w->attrs[i].raw, w->attrs[i].size);
		memcpy(a + 4, &asz, 4);
		wput(w, a, asz);
		uint64_t sec[2] = { ids_off[i], 8 * w->attrs[i].nids };
		wput(w, sec, 16);
	}
	free(ids_off);
	wflush(w);
	uint64_t hdr[13] = { PERF_MAGIC2, 104, asz + 16, attrs_off, (uint64_t)w->nattrs * (asz + 16),
			     w->data_off, w->data_size, 0, 0, feat[0], feat[1], feat[2], feat[3] };
	if (pwrite(w->fd, hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr) && !w->err)
		w->err = -EIO;
	return w->err;
}

void perf_writer_close(struct perf_writer *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	for (size_t i = 0; i < w->nattrs; i++)
		free(w->attrs[i].ids);
	free(w->attrs);
	free(w->buf);
	free(w->path);
	free(w);
}
