/* SPDX-License-Identifier: MIT */
/* symdump: every distinct user address of a recording (optionally of one command), with the
 * inline chain and source positions unwound gives it, one record per line:
 *   <module path>\t<hex address>\t<fn>\t<file>\t<line>[\t<fn>\t<file>\t<line>...]
 * innermost first. For comparison with addr2line -f -i (tests/e2e/addr2line-oracle.py). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unwound/unwound.h>

struct ent {
	struct uw_module *m;
	uint64_t addr;
};
static struct ent *ents;
static size_t nents, cap;
static const char *comm;

static int seen(struct uw_module *m, uint64_t addr)
{
	/* small recordings: a linear scan over a sorted-later array is fine for a test tool */
	for (size_t i = nents; i-- > 0;)
		if (ents[i].m == m && ents[i].addr == addr)
			return 1;
	return 0;
}

static int on_sample(void *ctx, const struct uw_sample *smp)
{
	(void)ctx;
	if (comm && strcmp(smp->comm, comm))
		return 0;
	for (uint32_t i = 0; i < smp->nr_user; i++) {
		const struct uw_frame *f = &smp->user[i];
		if (!f->module || uw_module_state(f->module) != UW_MODULE_OK)
			continue;
		uint64_t a = f->rel_pc - f->is_call;
		if (seen(f->module, a))
			continue;
		if (nents == cap) {
			cap = cap ? cap * 2 : 1024;
			ents = realloc(ents, cap * sizeof(*ents));
			if (!ents)
				return 1;
		}
		ents[nents++] = (struct ent){ f->module, a };
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: symdump FILE [COMM]\n");
		return 2;
	}
	comm = argc > 2 ? argv[2] : NULL;
	struct uw_session *s = uw_session_new(NULL);
	UW_OPTS(uw_reader_opts, ro, .on_sample = on_sample);
	struct uw_reader *r = uw_reader_open(s, argv[1], &ro);
	if (!r || uw_reader_run(r)) {
		fprintf(stderr, "symdump: %s\n", uw_session_errmsg(s));
		return 1;
	}
	for (size_t i = 0; i < nents; i++) {
		const struct uw_source_frame *fr;
		unsigned n;
		uw_symbolize_inline(s, ents[i].m, ents[i].addr, &fr, &n);
		printf("%s\t%" PRIx64, uw_module_path(ents[i].m), ents[i].addr);
		for (unsigned k = 0; k < n; k++)
			printf("\t%s\t%s\t%u", fr[k].function ? fr[k].function : "??", fr[k].file ? fr[k].file : "??",
			       fr[k].line);
		printf("\n");
	}
	uw_reader_free(r);
	uw_session_free(s);
	free(ents);
	return 0;
}
