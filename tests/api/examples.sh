#!/bin/sh
# The examples, built against an installed copy of unwound, as its users build them:
#  (a) examples/live_profiler.c with pkg-config: opens perf_event_open itself for a command
#      and pushes raw ring records into a reader, its stacks walked in the kernel
#      (uw_kernel_unwind); its stacks are the workload's known ones;
#  (e) the same on tests/deeprec (two threads recursing 200 levels through 1 KiB frames, no frame
#      pointers): >= 97% of its samples at the bottom reach main or start_thread through all 200
#      levels (a program's first milliseconds are finished in user space from a 16 KiB copy
#      until its mappings are loaded); with -c (stack copies of 16 KiB) none does; BPF refused
#      (capsh without CAP_BPF): one line says why, the stacks are copied and still right, and -k
#      fails with the reason;
#  (b) examples/self_unwind.c with the CMake package (shared library): feeds uw_tracker_mmap
#      events and unwinds a register set and stack copy it captured itself;
#  (d) examples/live_tracker.c with pkg-config: the same at the tracker level, on the public
#      record decoding (uw_record_decode) and ring merging (uw_order), no decoder of its own;
#  (c) examples/read_perfdata.cpp with the CMake package (static library): its folded stacks
#      equal `unwound report --folded` on the same recording, line for line.
# Also: the installed static library defines no global symbol but uw_*, and the header compiles
# as C++ (C++11 with uw_opts<>, C++20 with UW_OPTS) with -Wall -Wextra -pedantic -Werror.
set -eu
B=${UW_BUILD:?}
# a sanitizer build of the library: the programs are built with the sanitizer too
SAN=${UW_SAN_FLAGS:-}
S=${UW_SRC:?}
W=$B/tests/work/examples
rm -rf "$W"; mkdir -p "$W"
fail() { echo "FAIL: $*"; exit 1; }
P=$W/inst
cmake --install "$B" --prefix "$P" >"$W/install.log"
exe=$B/tests/e2e_nofp

# the static library: uw_* only
leaked=$(nm -g --defined-only "$P/lib/libunwound.a" | awk 'NF == 3 && $3 !~ /^uw_/ {print $3}' | sort -u)
[ -z "$leaked" ] || { echo "$leaked" | head; fail "libunwound.a exports internal symbols"; }
echo "static library: $(nm -g --defined-only "$P/lib/libunwound.a" | awk 'NF == 3' | wc -l) global symbols, all uw_*"

# (a) pkg-config
export PKG_CONFIG_PATH=$P/lib/pkgconfig
# shellcheck disable=SC2046,SC2086
cc -O2 -g -Wall -Wextra -Werror $SAN -o "$W/live_profiler" "$S/examples/live_profiler.c" $(pkg-config --cflags --libs unwound) \
    -Wl,-rpath,"$P/lib"
"$W/live_profiler" "$exe" calltree 1 >"$W/live.txt" 2>"$W/live.err" || { cat "$W/live.err"; fail "live_profiler"; }
cat "$W/live.txt"
total=$(awk '$2 ~ /^e2e_nofp;/ {s += $1} END {print s + 0}' "$W/live.txt")
a=$(awk '$2 ~ /^e2e_nofp;_start;.*;main;tree_a;tree_a2;spin$/ {s += $1} END {print s + 0}' "$W/live.txt")
b=$(awk '$2 ~ /^e2e_nofp;_start;.*;main;tree_b;spin$/ {s += $1} END {print s + 0}' "$W/live.txt")
echo "live_profiler: $total samples of e2e_nofp: tree_a $a, tree_b $b"
[ "$total" -ge 500 ] || fail "too few samples ($total)"
[ $((100 * (a + b))) -ge $((98 * total)) ] || fail "the known stacks are $((a + b)) of $total samples"
[ "$a" -gt "$b" ] || fail "tree_a (twice tree_b's work) has fewer samples than tree_b"
"$B/unwound" record --help | grep -q "Kernel unwinding is compiled in" ||
    fail "kernel unwinding is not compiled in (needs libbpf-dev, clang, bpftool: scripts/install-deps build)"
cat "$W/live.err"
grep -q "kernel unwinding: [1-9][0-9]* samples walked" "$W/live.err" || fail "live_profiler: the stacks were not walked in the kernel"
grep -q "BPF rows [1-9]" "$W/live.err" || fail "live_profiler: no frame found by the kernel's rows"

# (e) deep stacks, walked in the kernel (the default) and copied (-c)
deep() { # file: "rooted in-spin total" of deeprec's samples
    awk '$2 ~ /^deeprec;/ { c = $1; t += c; if ($2 ~ /;spin$/) { s += c; n = gsub(/;recurse/, "&", $2);
           if (n >= 200 && ($2 ~ /^deeprec;_start;__libc_start_main[^;]*;(__libc_start_call_main;)?main;/ ||
                            $2 ~ /^deeprec;(clone3;)?start_thread;worker;/)) r += c } }
         END { print r + 0, s + 0, t + 0 }' "$1"
}
"$W/live_profiler" -d 4 "$B/tests/deeprec" 200 >"$W/deep.txt" 2>"$W/deep.err" || { cat "$W/deep.err"; fail "live_profiler deeprec"; }
cat "$W/deep.err"
set -- $(deep "$W/deep.txt")
echo "live_profiler, kernel unwinding: $1 of $2 samples in spin reach main or start_thread through 200 levels ($3 samples of deeprec)"
[ "$2" -ge 200 ] || fail "too few samples of deeprec in spin ($2)"
# (every sample went through the program: none written by the kernel into the rings, which happens
# when the command creates threads before the attach, as ThreadSanitizer's runtime does in a child)
case $SAN in *thread*) ;; *) grep -q " 0 copied by the kernel instead" "$W/deep.err" || fail "samples escaped the program" ;; esac
[ $((100 * $1)) -ge $((97 * $2)) ] || { cut -c1-200 "$W/deep.txt" | head; fail "fewer than 97% of the deep stacks reach their root"; }
"$W/live_profiler" -c -d 2 "$B/tests/deeprec" 200 >"$W/deepc.txt" 2>"$W/deepc.err" || { cat "$W/deepc.err"; fail "live_profiler -c deeprec"; }
set -- $(deep "$W/deepc.txt")
echo "live_profiler -c (16 KiB copies): $1 of $2 samples in spin reach main or start_thread"
[ "$2" -ge 100 ] || fail "too few samples of deeprec in spin with copies ($2)"
[ $((100 * $1)) -lt "$2" ] || fail "with 16 KiB copies, $1 of $2 deep stacks reached their root: the check cannot tell"
! grep -q "kernel unwinding" "$W/deepc.err" || { cat "$W/deepc.err"; fail "-c used kernel unwinding"; }
# BPF refused: one line, stack copies, the same stacks; -k: the reason and a failure
command -v capsh >/dev/null || fail "capsh is not installed (libcap2-bin)"
nobpf() { capsh --drop=cap_bpf,cap_sys_admin -- -c '"$0" "$@"' "$@"; }
nobpf "$W/live_profiler" "$exe" calltree 1 >"$W/fb.txt" 2>"$W/fb.err" || { cat "$W/fb.err"; fail "live_profiler without CAP_BPF"; }
n=$(grep -c "^live_profiler: kernel unwinding: not privileged (loading BPF needs root, or CAP_BPF and CAP_PERFMON); copying 16384 bytes of stack per sample instead$" "$W/fb.err" || true)
[ "$n" = 1 ] || { cat "$W/fb.err"; fail "without CAP_BPF: expected the fallback line once, got $n"; }
total=$(awk '$2 ~ /^e2e_nofp;/ {s += $1} END {print s + 0}' "$W/fb.txt")
known=$(awk '$2 ~ /^e2e_nofp;_start;.*;main;(tree_a;tree_a2|tree_b);spin$/ {s += $1} END {print s + 0}' "$W/fb.txt")
echo "live_profiler without CAP_BPF: stacks copied, $known of $total samples in the known stacks"
[ "$total" -ge 500 ] && [ $((100 * known)) -ge $((98 * total)) ] || fail "without CAP_BPF: the known stacks are $known of $total samples"
if nobpf "$W/live_profiler" -k "$exe" calltree 0.1 >/dev/null 2>"$W/fbk.err"; then fail "-k without CAP_BPF succeeded"; fi
grep -q "^live_profiler: kernel unwinding: not privileged" "$W/fbk.err" || { cat "$W/fbk.err"; fail "-k without CAP_BPF: the reason"; }

# (d) the tracker-level live profiler, pkg-config
# shellcheck disable=SC2046,SC2086
cc -O2 -g -Wall -Wextra -Werror $SAN -o "$W/live_tracker" "$S/examples/live_tracker.c" $(pkg-config --cflags --libs unwound) \
    -Wl,-rpath,"$P/lib"
"$W/live_tracker" "$exe" calltree 1 >"$W/tracker.txt" 2>"$W/tracker.err" || { cat "$W/tracker.err"; fail "live_tracker"; }
cat "$W/tracker.txt"
total=$(awk '$2 ~ /^e2e_nofp;/ {s += $1} END {print s + 0}' "$W/tracker.txt")
a=$(awk '$2 ~ /^e2e_nofp;_start;.*;main;tree_a;tree_a2;spin$/ {s += $1} END {print s + 0}' "$W/tracker.txt")
b=$(awk '$2 ~ /^e2e_nofp;_start;.*;main;tree_b;spin$/ {s += $1} END {print s + 0}' "$W/tracker.txt")
echo "live_tracker: $total samples of e2e_nofp: tree_a $a, tree_b $b"
[ "$total" -ge 500 ] || fail "live_tracker: too few samples ($total)"
[ $((100 * (a + b))) -ge $((98 * total)) ] || fail "live_tracker: the known stacks are $((a + b)) of $total samples"
[ "$a" -gt "$b" ] || fail "live_tracker: tree_a (twice tree_b's work) has fewer samples than tree_b"
grep -q "record" "$W/tracker.err" && { cat "$W/tracker.err"; fail "live_tracker: records it could not decode"; }

# (b) and (c): the CMake package
cmake -S "$S/examples" -B "$W/ex" -DCMAKE_PREFIX_PATH="$P" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS="$SAN" -DCMAKE_CXX_FLAGS="$SAN" -DCMAKE_EXE_LINKER_FLAGS="$SAN" >"$W/cmake.log" 2>&1 ||
    { cat "$W/cmake.log"; fail "find_package(unwound)"; }
# The package's version rule: a release adds symbols within one soname, so a program asking for
# an older 0.x is served; another major version is refused.
mkdir -p "$W/ver"
for want in 0.1 0.2 1.0; do
    printf 'cmake_minimum_required(VERSION 3.18)\nproject(v C)\nfind_package(unwound %s REQUIRED)\n' "$want" >"$W/ver/CMakeLists.txt"
    rm -rf "$W/ver/b"
    if cmake -S "$W/ver" -B "$W/ver/b" -DCMAKE_PREFIX_PATH="$P" >"$W/ver.log" 2>&1; then got=ok; else got=refused; fi
    case $want in 1.0) exp=refused ;; *) exp=ok ;; esac
    [ "$got" = "$exp" ] || { cat "$W/ver.log"; fail "find_package(unwound $want): $got, expected $exp"; }
done
cmake --build "$W/ex" >"$W/build.log" 2>&1 || { cat "$W/build.log"; fail "building the examples"; }
ldd "$W/ex/read_perfdata" | grep -q libunwound && fail "read_perfdata is not linked statically"
ldd "$W/ex/self_unwind" | grep -q "libunwound.so.0 => $P/lib" || fail "self_unwind does not use the installed library"

"$W/ex/self_unwind" >"$W/self.txt" || fail "self_unwind"
cat "$W/self.txt"
[ "$(head -n 5 "$W/self.txt" | tr '\n' ' ')" = "capture inner middle outer main " ] || fail "self_unwind's frames"
[ "$(tail -n 1 "$W/self.txt")" = "stop: end of stack" ] || fail "self_unwind did not reach the root"

perf record -q -e cpu-clock -F 999 --call-graph dwarf,8192 -o "$W/perf.data" -- \
    sh -c "$exe calltree 0.5; $exe signal 0.5" >/dev/null 2>"$W/perf.err" || { cat "$W/perf.err"; fail "perf record"; }
"$W/ex/read_perfdata" "$W/perf.data" 2>"$W/read.err" | sort >"$W/read.folded" || { cat "$W/read.err"; fail "read_perfdata"; }
"$B/unwound" report -i "$W/perf.data" --folded -o - 2>/dev/null | sort >"$W/cli.folded"
cat "$W/read.err"
n=$(wc -l <"$W/cli.folded")
kernel=$(grep -c '_\[k\]' "$W/cli.folded" || true)
cmp -s "$W/read.folded" "$W/cli.folded" || { diff "$W/read.folded" "$W/cli.folded" | head; fail "read_perfdata's stacks differ from unwound report --folded"; }
echo "read_perfdata: $n folded stacks ($kernel with kernel frames), identical to unwound report --folded"
[ "$n" -ge 3 ] || fail "too few stacks"

# the header as C++
cat >"$W/h.cpp" <<'CXX'
#include <unwound/unwound.h>
int main()
{
	auto s = uw_opts<uw_session_opts>();
	s.max_frames = 64;
	return uw_version() == UW_VERSION_NUMBER ? 0 : (int)s.sz;
}
CXX
cat >"$W/h20.cpp" <<'CXX'
#include <unwound/unwound.h>
int main()
{
	UW_OPTS(uw_session_opts, so, .max_frames = 64);
	UW_OPTS(uw_tracker_opts, to);
	return (int)(so.sz + to.sz == 0);
}
CXX
for std in c++11 c++17; do
    # shellcheck disable=SC2086
    g++ -std=$std -Wall -Wextra -pedantic -Werror $SAN -I"$P/include" -o "$W/h-$std" "$W/h.cpp" -L"$P/lib" -lunwound \
        -Wl,-rpath,"$P/lib" || fail "the header as $std"
    "$W/h-$std" || fail "uw_version() is not the header's UW_VERSION_NUMBER"
done
g++ -std=c++20 -Wall -Wextra -pedantic -Werror -I"$P/include" -fsyntax-only "$W/h20.cpp" || fail "UW_OPTS in C++20"
clang++ -std=c++20 -Wall -Wextra -pedantic -Werror -I"$P/include" -fsyntax-only "$W/h20.cpp" || fail "UW_OPTS in C++20 (clang)"
# the header in strict ISO C11 (UW_OPTS without GNU statement expressions), fields named or not
cat >"$W/h11.c" <<'C11'
#include <unwound/unwound.h>
int main(void)
{
	UW_OPTS(uw_session_opts, so, .max_frames = 64);
	UW_OPTS(uw_tracker_opts, to);
	return (int)(so.sz + to.sz == 0) + (so.max_frames != 64);
}
C11
for c in gcc clang; do
    $c -std=c11 -Wall -Wextra -pedantic -Werror -I"$P/include" -fsyntax-only "$W/h11.c" ||
        fail "the header in strict C11 ($c -std=c11 -pedantic)"
done
# (run, built as the library was: a sanitizer build's runtime is gcc's)
# shellcheck disable=SC2086
gcc $SAN -std=c11 -Wall -Wextra -pedantic -Werror -I"$P/include" -o "$W/h11" "$W/h11.c" -L"$P/lib" -lunwound \
    -Wl,-rpath,"$P/lib" || fail "the header in strict C11 (gcc -std=c11 -pedantic), linked"
"$W/h11" || fail "UW_OPTS in strict C11: sizes or fields not set"
echo "examples: built against the installed copy (pkg-config, CMake package), outputs as expected"
