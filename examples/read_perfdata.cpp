// SPDX-License-Identifier: MIT
//
// A C++ program reading a perf.data file through the unwound reader: every sample unwound (or
// its recorded callchain taken), its frames named in one batch, and the stacks folded as
// flame-graph tools read them:
//
//     comm;outer;...;inner COUNT
//
// Unnamed frames are "[module]" (or "[unknown]" outside any module); kernel frames "name_[k]",
// as `unwound report --folded` names them.
//
// usage: read_perfdata FILE
// Build: CMake, find_package(unwound) and target_link_libraries(x unwound::unwound_static).
#include <cstdio>
#include <map>
#include <string>

#include <unwound/unwound.h>

namespace {

struct folder {
	uw_session *s = nullptr;
	std::map<std::string, unsigned long> stacks;
	unsigned long samples = 0;
};

std::string frame_name(const uw_symbolized &y)
{
	if (y.name)
		return y.name;
	if (y.module)
		return std::string("[") + uw_module_name(y.module) + "]";
	return "[unknown]";
}

int on_sample(void *ctx, const uw_sample *smp)
{
	auto *f = static_cast<folder *>(ctx);
	std::string line = smp->comm ? smp->comm : "[unknown]";
	// user frames, outermost first, named in one call
	auto so = uw_opts<uw_symbolize_opts>();
	uw_symbols *syms = nullptr;
	if (uw_symbolize_frames(f->s, smp->user, smp->nr_user, &so, &syms) != 0)
		return 1;
	for (size_t i = syms->count; i-- > 0;)
		line += ";" + frame_name(syms->syms[i]);
	uw_symbols_free(syms);
	// then the kernel's, outermost first, named with the recording's kernel
	for (uint32_t i = smp->nr_kernel; i-- > 0;) {
		uw_symbol ks;
		uw_kernel_symbolize(smp->recorded_kernel, smp->kernel[i], &ks);
		line += std::string(";") + (ks.name ? ks.name : "[unknown]") + "_[k]";
	}
	f->stacks[line]++;
	f->samples++;
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 2) {
		std::fprintf(stderr, "usage: %s FILE\n", argv[0]);
		return 2;
	}
	folder f;
	f.s = uw_session_new(nullptr);
	if (!f.s)
		return 1;
	auto ro = uw_opts<uw_reader_opts>();
	ro.on_sample = on_sample;
	ro.ctx = &f;
	uw_reader *r = uw_reader_open(f.s, argv[1], &ro);
	if (!r) {
		std::fprintf(stderr, "%s\n", uw_session_errmsg(f.s));
		return 1;
	}
	// the recorded kernel's names, when they can be had, read while the records are
	uw_tracker_load_kallsyms(uw_reader_tracker(r), nullptr);
	int err = uw_reader_run(r);
	if (err)
		std::fprintf(stderr, "%s: %s\n", argv[1], uw_session_errmsg(f.s));
	for (const auto &kv : f.stacks)
		std::printf("%s %lu\n", kv.first.c_str(), kv.second);
	std::fprintf(stderr, "%lu samples, %zu stacks (unwound %s)\n", f.samples, f.stacks.size(), uw_version_string());
	uw_reader_free(r);
	uw_session_free(f.s);
	return err ? 1 : 0;
}
