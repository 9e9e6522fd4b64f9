/* SPDX-License-Identifier: MIT */
/*
 * stackcheck: asserts properties of the stacks unwound from a perf.data file, using only the
 * public API. Exits 1 on any failed assertion, printing the offending stacks.
 *
 *   --comm NAME          only samples of this command
 *   --roots a,b          a stack is complete when one of these functions is on it
 *   --root-outermost     ... and is the outermost frame, the unwinder saying "end of stack"
 *   --min-root PCT       required share of complete stacks (default 99.9)
 *   --expect CHAIN       "f1;f2;...;leaf" from a root to the leaf, or "*;f;...;leaf" for any prefix;
 *                        every sample whose leaf is a listed leaf must match one chain, and
 *                        every chain must be seen
 *   --fp-modules a,b     oracle: for samples whose pc is in these (frame-pointer built) modules,
 *                        the frame-pointer chain walked in the sample's stack copy must appear,
 *                        in order, among the unwound frames
 *   --min-samples N      fail when fewer samples are checked
 *   --callchains         the samples carry callchains (unwound record's output), not stack copies
 *   --sparse-equal       read the file a second time the default way (stacks cut to a prefix and
 *                        read back whole when unwinding needs more): every sample's frames and
 *                        stop reason must equal those from the whole stack copies
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unwound/unwound.h>

#define MAXL 64
static const char *roots[MAXL], *fpmods[MAXL], *chains[MAXL][64], *leaves[MAXL];
static bool root_outermost;
static int nroots, nfpmods, nchains, chainlen[MAXL], nleaves, chainseen[MAXL];
static struct uw_session *S;
static struct uw_tracker *T; /* the reader's (its address spaces as the sample sees them) */
static const char *comm;
static uint64_t nsamples, ncomplete, nexcluded, nfp_checked, nfp_failed, nexpect_checked, nexpect_failed;
static int printed;
static bool sparse_equal, callchains;
static uint64_t *digests, ndigests, capdigests, nsparse, nsparse_bad;

static uint64_t digest(const struct uw_sample *smp)
{
	uint64_t h = 1469598103934665603ull ^ smp->time ^ ((uint64_t)smp->tid << 32);
	for (uint32_t i = 0; i < smp->nr_user; i++)
		h = (h ^ smp->user[i].pc) * 1099511628211ull;
	return (h ^ smp->nr_user ^ ((uint64_t)smp->stop_reason << 40)) * 1099511628211ull;
}

static int on_sparse(void *ctx, const struct uw_sample *smp)
{
	(void)ctx;
	if (nsparse < ndigests && digests[nsparse] != digest(smp))
		nsparse_bad++;
	nsparse++;
	return 0;
}

static int split(char *s, const char **out, int max)
{
	int n = 0;
	for (char *save = NULL, *t = strtok_r(s, ",;", &save); t && n < max; t = strtok_r(NULL, ",;", &save))
		out[n++] = t;
	return n;
}

static const char *name_of(const struct uw_frame *f)
{
	struct uw_symbol sym;
	if (!f->module)
		return "[unknown]";
	uw_symbolize(S, f->module, f->rel_pc - f->is_call, &sym);
	if (!sym.name)
		return "[unknown]";
	/* versioned names from debug files ("__libc_start_main@@GLIBC_2.34"): compare the base */
	const char *at = strchr(sym.name, '@');
	if (!at)
		return sym.name;
	static char buf[8][256];
	static unsigned k;
	char *b = buf[k++ % 8];
	snprintf(b, 256, "%.*s", (int)(at - sym.name), sym.name);
	return b;
}

static bool in_list(const char *n, const char **l, int k)
{
	for (int i = 0; i < k; i++)
		if (!strcmp(n, l[i]))
			return true;
	return false;
}

static void dump(const char *why, const struct uw_sample *smp)
{
	if (printed++ > 10)
		return;
	fprintf(stderr, "FAIL (%s): %s/%u t=%" PRIu64 " stop=%s\n", why, smp->comm, smp->tid, smp->time,
		uw_stop_reason_str(smp->stop_reason));
	for (uint32_t i = 0; i < smp->nr_user; i++)
		fprintf(stderr, "    %#" PRIx64 " %s (%s)\n", smp->user[i].pc, name_of(&smp->user[i]),
			smp->user[i].module ? uw_module_name(smp->user[i].module) : "?");
}

static bool fp_module(struct uw_module *m)
{
	return m && in_list(uw_module_name(m), fpmods, nfpmods);
}

static void fp_oracle(const struct uw_sample *smp)
{
	struct uw_module *m;
	if (!smp->stack || !smp->nr_user || uw_tracker_lookup(T, smp->pid, smp->user_ip, &m, NULL) || !fp_module(m))
		return;
	nfp_checked++;
	uint64_t chain[256];
	unsigned n = 0;
	uint64_t bp = smp->user_fp, lo = smp->user_sp, hi = smp->user_sp + smp->stack_size;
	while (n < 256 && bp >= lo && bp + 16 <= hi && !(bp & 7)) {
		uint64_t ra, nbp;
		memcpy(&nbp, smp->stack + (bp - lo), 8);
		memcpy(&ra, smp->stack + (bp - lo) + 8, 8);
		chain[n++] = ra;
		/* a return address outside the frame-pointer modules ends the trustworthy chain */
		if (uw_tracker_lookup(T, smp->pid, ra, &m, NULL) || !fp_module(m))
			break;
		if (nbp <= bp)
			break;
		bp = nbp;
	}
	/* the chain must be a subsequence of frames 1.. (return addresses) */
	unsigned j = 1;
	for (unsigned i = 0; i < n; i++) {
		while (j < smp->nr_user && smp->user[j].pc != chain[i])
			j++;
		if (j >= smp->nr_user) {
			nfp_failed++;
			fprintf(stderr, "fp chain entry %u (%#" PRIx64 ") not in the unwound stack\n", i, chain[i]);
			dump("frame-pointer oracle", smp);
			return;
		}
		j++;
	}
}

static void check_expect(const struct uw_sample *smp)
{
	if (!nchains || !smp->nr_user)
		return;
	const char *leaf = name_of(&smp->user[0]);
	if (!in_list(leaf, leaves, nleaves))
		return;
	nexpect_checked++;
	const char *names[512];
	unsigned n = smp->nr_user < 512 ? smp->nr_user : 512;
	for (unsigned i = 0; i < n; i++)
		names[i] = name_of(&smp->user[i]); /* innermost first */
	for (int c = 0; c < nchains; c++) {
		int len = chainlen[c];
		bool any = !strcmp(chains[c][0], "*");
		int k = any ? len - 1 : len;
		const char **want = any ? &chains[c][1] : chains[c];
		if ((unsigned)k > n)
			continue;
		bool ok = true;
		for (int i = 0; i < k && ok; i++)
			ok = !strcmp(names[i], want[k - 1 - i]);
		/* anchored chains start at the root: the next frame out must not be one of ours */
		if (ok && !any && (unsigned)k < n && !in_list(want[0], roots, nroots))
			ok = false;
		if (ok) {
			chainseen[c]++;
			return;
		}
	}
	nexpect_failed++;
	dump("stack matches no expected chain", smp);
}

static int on_sample(void *ctx, const struct uw_sample *smp)
{
	(void)ctx;
	if (sparse_equal) {
		if (ndigests == capdigests) {
			capdigests = capdigests ? 2 * capdigests : 4096;
			digests = realloc(digests, capdigests * sizeof(*digests));
			if (!digests)
				abort();
		}
		digests[ndigests++] = digest(smp);
	}
	if (comm && strcmp(smp->comm, comm))
		return 0;
	if (!smp->stack && !(callchains && smp->nr_user))
		return 0; /* no user state (kernel thread) */
	nsamples++;
	bool complete = false, startup = false;
	for (uint32_t i = 0; i < smp->nr_user; i++) {
		const char *nm = name_of(&smp->user[i]);
		if (in_list(nm, roots, nroots) &&
		    (!root_outermost || (i + 1 == smp->nr_user && smp->stop_reason == UW_STOP_END_OF_STACK)))
			complete = true;
		static const char *const life[] = { "_dl_start", "_dl_start_user", "_dl_init", "_dl_fini", "exit",
						    "__libc_start_main", "_dl_relocate_object", "__libc_early_init",
						    "_dl_runtime_resolve_xsavec", "_dl_fixup",
						    /* a library's own constructors' and destructors' entry points,
						     * run by the loader (CI under load once: a frame-pointer
						     * callchain of _init alone, which sets up no frame pointer) */
						    "_init", "_fini" };
		for (size_t k = 0; k < sizeof(life) / sizeof(life[0]); k++)
			if (!strcmp(nm, life[k]))
				startup = true;
	}
	/* the process before main: the outermost frame is the dynamic loader's entry point; a
	 * thread before its start routine: clone3 alone */
	if (smp->nr_user) {
		const struct uw_frame *last = &smp->user[smp->nr_user - 1];
		const char *ln = name_of(last);
		if (last->module && !strncmp(uw_module_name(last->module), "ld-linux", 8) && !strcmp(ln, "_start"))
			startup = true;
		if (smp->nr_user == 1 && (!strcmp(ln, "clone3") || !strcmp(ln, "__clone3")))
			startup = true;
		/* the program's _start in its own instructions, before it calls __libc_start_main (CI
		 * once: a sample at _start+0, its stack _start alone, complete) */
		if (smp->nr_user == 1 && !strcmp(ln, "_start"))
			startup = true;
		/* a thread after its start routine returned: start_thread's own code and the thread's
		 * cleanup (__libc_thread_freeres, TLS destructors), below clone3 */
		if (smp->nr_user >= 2 && (!strcmp(ln, "clone3") || !strcmp(ln, "__clone3")) &&
		    !strcmp(name_of(&smp->user[smp->nr_user - 2]), "start_thread"))
			startup = true;
	}
	if (complete)
		ncomplete++;
	else if (startup)
		nexcluded++;
	else
		dump("no root frame", smp);
	fp_oracle(smp);
	check_expect(smp);
	return 0;
}

int main(int argc, char **argv)
{
	const char *file = NULL;
	double min_root = 99.9;
	uint64_t min_samples = 1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--comm") && i + 1 < argc)
			comm = argv[++i];
		else if (!strcmp(argv[i], "--root-outermost"))
			root_outermost = true;
		else if (!strcmp(argv[i], "--roots") && i + 1 < argc)
			nroots = split(argv[++i], roots, MAXL);
		else if (!strcmp(argv[i], "--fp-modules") && i + 1 < argc)
			nfpmods = split(argv[++i], fpmods, MAXL);
		else if (!strcmp(argv[i], "--min-root") && i + 1 < argc)
			min_root = atof(argv[++i]);
		else if (!strcmp(argv[i], "--callchains"))
			callchains = true;
		else if (!strcmp(argv[i], "--sparse-equal"))
			sparse_equal = true;
		else if (!strcmp(argv[i], "--min-samples") && i + 1 < argc)
			min_samples = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--expect") && i + 1 < argc && nchains < MAXL) {
			chainlen[nchains] = split(argv[++i], chains[nchains], 64);
			const char *leaf = chains[nchains][chainlen[nchains] - 1];
			if (!in_list(leaf, leaves, nleaves))
				leaves[nleaves++] = leaf;
			nchains++;
		} else if (argv[i][0] != '-')
			file = argv[i];
		else {
			fprintf(stderr, "stackcheck: bad argument %s\n", argv[i]);
			return 2;
		}
	}
	if (!file)
		return 2;
	S = uw_session_new(NULL);
	T = uw_tracker_new(S, NULL);
	UW_OPTS(uw_reader_opts, ro, .on_sample = on_sample, .full_stacks = 1, .tracker = T); /* the frame-pointer oracle walks whole stack copies */
	struct uw_reader *r = uw_reader_open(S, file, &ro);
	if (!r) {
		fprintf(stderr, "stackcheck: %s\n", uw_session_errmsg(S));
		return 1;
	}
	int err = uw_reader_run(r);
	int fail = 0;
	if (err) {
		fprintf(stderr, "stackcheck: read error: %s\n", uw_session_errmsg(S));
		fail = 1;
	}
	uint64_t judged = nsamples - nexcluded;
	double pct = judged ? 100.0 * (double)ncomplete / (double)judged : 0;
	printf("samples=%" PRIu64 " complete=%" PRIu64 " (%.3f%%) excluded(startup/exit)=%" PRIu64
	       " fp_checked=%" PRIu64 " fp_failed=%" PRIu64 " expect_checked=%" PRIu64 " expect_failed=%" PRIu64 "\n",
	       nsamples, ncomplete, pct, nexcluded, nfp_checked, nfp_failed, nexpect_checked, nexpect_failed);
	if (nsamples < min_samples) {
		fprintf(stderr, "FAIL: %" PRIu64 " samples, at least %" PRIu64 " needed\n", nsamples, min_samples);
		fail = 1;
	}
	if (nroots && pct < min_root) {
		fprintf(stderr, "FAIL: %.3f%% of stacks reach a root, %.3f%% required\n", pct, min_root);
		fail = 1;
	}
	if (nexcluded * 50 > nsamples) {
		fprintf(stderr, "FAIL: too many startup/exit samples excluded (%" PRIu64 ")\n", nexcluded);
		fail = 1;
	}
	if (nfpmods && (nfp_failed || !nfp_checked)) {
		fprintf(stderr, "FAIL: frame-pointer oracle: %" PRIu64 " of %" PRIu64 " failed\n", nfp_failed, nfp_checked);
		fail = 1;
	}
	if (nexpect_failed)
		fail = 1;
	if (sparse_equal) {
		struct uw_session *s2 = uw_session_new(NULL);
		UW_OPTS(uw_reader_opts, ro2, .on_sample = on_sparse);
		struct uw_reader *r2 = uw_reader_open(s2, file, &ro2);
		struct uw_reader_stats st2 = { .sz = sizeof(st2) };
		if (!r2 || uw_reader_run(r2) || uw_reader_stats(r2, &st2)) {
			fprintf(stderr, "FAIL: sparse read: %s\n", uw_session_errmsg(s2));
			fail = 1;
		}
		printf("sparse: %" PRIu64 " of %" PRIu64 " samples differ; %" PRIu64 " stacks read back whole\n",
		       nsparse_bad + (nsparse > ndigests ? nsparse - ndigests : ndigests - nsparse), ndigests,
		       st2.stack_rereads);
		if (nsparse_bad || nsparse != ndigests) {
			fprintf(stderr, "FAIL: stacks from cut stack copies differ from whole ones\n");
			fail = 1;
		}
		uw_reader_free(r2);
		uw_session_free(s2);
	}
	for (int c = 0; c < nchains; c++) {
		if (!chainseen[c]) {
			fprintf(stderr, "FAIL: expected chain %d (leaf %s) never seen\n", c, chains[c][chainlen[c] - 1]);
			fail = 1;
		}
	}
	uw_reader_free(r);
	uw_tracker_free(T);
	uw_session_free(S);
	printf("%s\n", fail ? "stackcheck: FAILED" : "stackcheck: ok");
	return fail;
}
