#!/bin/sh
# Every dynamic symbol a library exports carries the public prefix and a version node of its
# version script, and every function declared UW_API in the header is exported by the library
# it belongs to: libunwound (uw_* but uw_prof_*, nodes UNWOUND_x.y in lib/libunwound.map) or
# libunwound-prof (uw_prof_*, nodes UNWOUND_PROF_x.y in lib/libunwound-prof.map, and the symbols
# it interposes, unversioned: pthread_create, dlclose, sigaction, signal, mmap, mmap64). Each symbol is named
# in the node of the release that added it (no globs).
#   usage: check-exports.sh LIB
set -eu
lib=$1
top=$(dirname "$0")/../..
hdr=$top/include/unwound/unwound.h
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /[TDBRW]/ {print $3}' | sort)
declared_all=$(grep -oE 'UW_API [^(]*\b(uw_[a-z0-9_]+)\(' "$hdr" | grep -oE 'uw_[a-z0-9_]+\($' | tr -d '(' | sort -u)
case $(basename "$lib") in
libunwound-prof.so*)
    nodes='UNWOUND_PROF_[0-9]+\.[0-9]+'
    map=$top/lib/libunwound-prof.map
    bad=$(echo "$exported" | grep -Ev "^uw_prof_.*@@$nodes\$" | grep -Ev "^$nodes\$" |
          grep -vxE 'pthread_create|dlclose|sigaction|signal|mmap|mmap64' || true)
    declared=$(echo "$declared_all" | grep '^uw_prof_' || true)
    for f in pthread_create dlclose sigaction signal mmap mmap64; do
        echo "$exported" | grep -qx "$f" || { echo "FAIL: $f is not interposed (not exported unversioned)"; exit 1; }
    done
    ;;
*)
    nodes='UNWOUND_[0-9]+\.[0-9]+'
    map=$top/lib/libunwound.map
    bad=$(echo "$exported" | grep -Ev "^uw_.*@@$nodes\$" | grep -Ev "^$nodes\$" || true)
    bad="$bad$(echo "$exported" | grep '^uw_prof_' || true)"
    declared=$(echo "$declared_all" | grep -v '^uw_prof_')
    ;;
esac
if [ -n "$bad" ]; then
    echo "FAIL: exported symbols outside the public API or the version nodes of $(basename "$map"):"; echo "$bad"; exit 1
fi
missing=0
for f in $declared; do
    echo "$exported" | grep -q "^$f@@" || { echo "FAIL: $f declared but not exported"; missing=1; }
done
[ $missing -eq 0 ] || exit 1
if grep -v '^[[:space:]]*/\?\*' "$map" | grep -q 'uw_[a-z0-9_]*\*'; then
    echo "FAIL: $(basename "$map") exports by a glob: name each symbol in its release's node"; exit 1
fi
for f in $declared; do
    grep -Eq "^[[:space:]]+$f;" "$map" || { echo "FAIL: $f is in no version node of $(basename "$map")"; missing=1; }
done
[ $missing -eq 0 ] || exit 1
# libdebuginfod (and the libcurl stack behind it) is loaded only when a fetch is asked for:
# linking it costs every run milliseconds of start-up
if ldd "$lib" | grep -q "libdebuginfod\|libcurl"; then
    echo "FAIL: the library links libdebuginfod/libcurl; it must dlopen it"; exit 1
fi
echo "exports ok: $(echo "$declared" | wc -l) public functions"
