#!/bin/sh
# `make install` (cmake --install) with DESTDIR and a prefix: the library, its header and
# pkg-config file, and a CLI that runs from there; and plain `make` only builds (it installs no
# packages: that is `make check`'s and `make demo`'s job).
set -eu
B=${UW_BUILD:?}
S=${UW_SRC:?}
W=$B/tests/work/install
rm -rf "$W"; mkdir -p "$W"
fail() { echo "FAIL: $*"; exit 1; }
DESTDIR=$W/stage cmake --install "$B" --prefix /opt/unwound-test >"$W/install.log"
R=$W/stage/opt/unwound-test
for f in lib/libunwound.so.0 lib/libunwound.a include/unwound/unwound.h lib/pkgconfig/unwound.pc bin/unwound \
    lib/cmake/unwound/unwoundConfig.cmake share/man/man1/unwound.1 share/man/man1/unwound-record.1 \
    share/man/man1/unwound-report.1 share/man/man1/unwound-inject.1 share/man/man1/unwound-diff.1 share/man/man3/libunwound.3 \
    lib/libunwound-prof.so.0 lib/libunwound-prof.so lib/pkgconfig/unwound-prof.pc share/man/man3/libunwound-prof.3; do
    [ -e "$R/$f" ] || fail "$f not installed"
done
# the documentation reaches an installed user: a man page per call (uw_reader_open's is its
# group's), the design notes and the examples the header names
for f in share/man/man3/uw_reader.3 share/man/man3/uw_reader_open.3 share/man/man3/uw_session_new.3 \
    share/man/man3/uw_prof_start.3 share/man/man3/uw_errors.3 share/doc/unwound/design.md \
    share/doc/unwound/kernel-unwind.md share/doc/unwound/threads.md share/doc/unwound/examples/live_profiler.c; do
    [ -e "$R/$f" ] || fail "$f not installed"
done
man -M "$R/share/man" 3 uw_reader_open 2>/dev/null | grep -q "UW_EMAGIC" || fail "man uw_reader_open: no page, or no errors in it"
for d in $(grep -o 'docs/[a-z-]*\.md\|examples/[a-z_]*\.c[p]*' "$S/include/unwound/unwound.h" | sort -u); do
    case $d in docs/*) f=share/doc/unwound/${d#docs/} ;; *) f=share/doc/unwound/$d ;; esac
    [ -e "$R/$f" ] || fail "the header points to $d, not installed ($f)"
done
# pkg-config finds the files where they were installed (relocatable .pc)
inc=$(PKG_CONFIG_PATH=$R/lib/pkgconfig pkg-config --cflags unwound | tr -d ' ')
[ "$(readlink -f "${inc#-I}")" = "$(readlink -f "$R/include")" ] || fail "pkg-config --cflags: $inc"
# the installed CLI finds the installed library (RUNPATH $ORIGIN/../lib), not the build tree's
lib=$(ldd "$R/bin/unwound" | sed -n 's/.*libunwound.so.0 => \([^ ]*\).*/\1/p')
[ "$(readlink -f "$lib")" = "$(readlink -f "$R/lib/libunwound.so.0")" ] ||
    { ldd "$R/bin/unwound" | grep unwound; fail "the installed CLI does not use the installed library"; }
"$R/bin/unwound" --version | grep -q '^unwound [0-9]' || fail "the installed CLI does not run"
# libunwound-prof finds the installed libunwound beside it (RUNPATH $ORIGIN), and a program
# linked through pkg-config unwound-prof profiles itself; preloaded, it profiles one that does not
lib=$(ldd "$R/lib/libunwound-prof.so.0" | sed -n 's/.*libunwound.so.0 => \([^ ]*\).*/\1/p')
[ "$(readlink -f "$lib")" = "$(readlink -f "$R/lib/libunwound.so.0")" ] ||
    { ldd "$R/lib/libunwound-prof.so.0" | grep unwound; fail "the installed libunwound-prof does not use the installed libunwound"; }
cat >"$W/selfprof.c" <<'EOC'
#include <stdio.h>
#include <unwound/unwound.h>
volatile unsigned long sink;
int main(int argc, char **argv)
{
	UW_OPTS(uw_prof_opts, o, .output = argv[1], .hz = 999);
	struct uw_prof *p = uw_prof_start(&o);
	if (!p)
		return 1;
	UW_OPTS(uw_prof_stats, st);
	while (!uw_prof_stats(p, &st) && st.samples < 5)
		for (int i = 0; i < 100000; i++)
			sink += (unsigned long)i * i;
	int e = uw_prof_stop(p);
	uw_prof_free(p);
	return e != 0;
}
EOC
# shellcheck disable=SC2046
# (a sanitizer build of the library: the program built with its runtime, the runtime preloaded first)
PRE=$R/lib/libunwound-prof.so
case "${UW_SAN_FLAGS:-}" in
*address*) PRE="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so):$PRE" ;;
*thread*) PRE="$(gcc -print-file-name=libtsan.so):$PRE" ;;
esac
# shellcheck disable=SC2086
cc ${UW_SAN_FLAGS:-} -o "$W/selfprof" "$W/selfprof.c" $(PKG_CONFIG_PATH=$R/lib/pkgconfig pkg-config --cflags --libs unwound-prof) \
    -Wl,-rpath,"$R/lib" || fail "a program does not build with pkg-config unwound-prof"
"$W/selfprof" "$W/self.pb.gz" && [ -s "$W/self.pb.gz" ] || fail "a program linked with the installed libunwound-prof"
# (ls is not ours: what it leaks at exit is not this test's business)
ASAN_OPTIONS=detect_leaks=0 UNWOUND_PROF="$W/preload.folded" LD_PRELOAD="$PRE" ls -R /usr/include >/dev/null &&
    [ -e "$W/preload.folded" ] || fail "the installed libunwound-prof, preloaded, wrote no profile"
# plain make: no package installation in what it runs
for t in all check demo; do make -C "$S" -n BUILD="$B" $t >"$W/make-$t.txt" 2>&1 || true; done
grep -q install-deps "$W/make-all.txt" && fail "plain make installs packages"
grep -q "install-deps check" "$W/make-check.txt" || fail "make check does not install what it needs"
grep -q "install-deps demo" "$W/make-demo.txt" || fail "make demo does not install what it needs"
echo "install: staged under DESTDIR, CLI and libunwound-prof run from the prefix; make only builds"
