#!/bin/sh
# Every dynamic symbol a library exports carries the public prefix and the version node of its
# version script, and every function declared UW_API in the header is exported by the library
# it belongs to: libunwound (uw_* but uw_prof_*, node UNWOUND_0.1) or libunwound-prof
# (uw_prof_*, node UNWOUND_PROF_0.1, and the symbols it interposes, unversioned: pthread_create,
# dlclose, sigaction, signal).
#   usage: check-exports.sh LIB
set -eu
lib=$1
hdr=$(dirname "$0")/../../include/unwound/unwound.h
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /[TDBRW]/ {print $3}' | sort)
declared_all=$(grep -oE 'UW_API [^(]*\b(uw_[a-z0-9_]+)\(' "$hdr" | grep -oE 'uw_[a-z0-9_]+\($' | tr -d '(' | sort -u)
case $(basename "$lib") in
libunwound-prof.so*)
    node=UNWOUND_PROF_0.1
    bad=$(echo "$exported" | grep -v "^uw_prof_.*@@$node\$" | grep -v "^$node\$" |
          grep -vxE 'pthread_create|dlclose|sigaction|signal' || true)
    declared=$(echo "$declared_all" | grep '^uw_prof_' || true)
    for f in pthread_create dlclose sigaction signal; do
        echo "$exported" | grep -qx "$f" || { echo "FAIL: $f is not interposed (not exported unversioned)"; exit 1; }
    done
    ;;
*)
    node=UNWOUND_0.1
    bad=$(echo "$exported" | grep -v "^uw_.*@@$node\$" | grep -v "^$node\$" || true)
    bad="$bad$(echo "$exported" | grep '^uw_prof_' || true)"
    declared=$(echo "$declared_all" | grep -v '^uw_prof_')
    ;;
esac
if [ -n "$bad" ]; then
    echo "FAIL: exported symbols outside the public API or version node $node:"; echo "$bad"; exit 1
fi
missing=0
for f in $declared; do
    echo "$exported" | grep -q "^$f@@" || { echo "FAIL: $f declared but not exported"; missing=1; }
done
[ $missing -eq 0 ] || exit 1
# libdebuginfod (and the libcurl stack behind it) is loaded only when a fetch is asked for:
# linking it costs every run milliseconds of start-up
if ldd "$lib" | grep -q "libdebuginfod\|libcurl"; then
    echo "FAIL: the library links libdebuginfod/libcurl; it must dlopen it"; exit 1
fi
echo "exports ok: $(echo "$declared" | wc -l) public functions ($node)"
