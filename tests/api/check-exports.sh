#!/bin/sh
# Every dynamic symbol the library exports carries the public prefix and the version node of
# the version script, and every function declared UW_API in the header is exported.
set -eu
lib=$1
hdr=$(dirname "$0")/../../include/unwound/unwound.h
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /[TDBR]/ {print $3}' | sort)
bad=$(echo "$exported" | grep -Ev '^uw_.*@@UNWOUND_[0-9]+\.[0-9]+$' | grep -Ev '^UNWOUND_[0-9]+\.[0-9]+$' || true)
if [ -n "$bad" ]; then
    echo "FAIL: exported symbols outside the public API or version node:"; echo "$bad"; exit 1
fi
declared=$(grep -oE 'UW_API [^(]*\b(uw_[a-z0-9_]+)\(' "$hdr" | grep -oE 'uw_[a-z0-9_]+\($' | tr -d '(' | sort -u)
missing=0
for f in $declared; do
    echo "$exported" | grep -q "^$f@@" || { echo "FAIL: $f declared but not exported"; missing=1; }
done
[ $missing -eq 0 ] || exit 1
# each symbol named in the version script, in the node of the release that added it (no globs)
map=$(dirname "$0")/../../lib/libunwound.map
if grep -v '^[[:space:]]*/\?\*' "$map" | grep -q 'uw_[a-z0-9_]*\*'; then
    echo "FAIL: lib/libunwound.map exports by a glob: name each symbol in its release's node"; exit 1
fi
for f in $declared; do
    grep -Eq "^[[:space:]]+$f;" "$map" || { echo "FAIL: $f is in no version node of lib/libunwound.map"; missing=1; }
done
[ $missing -eq 0 ] || exit 1
# libdebuginfod (and the libcurl stack behind it) is loaded only when a fetch is asked for:
# linking it costs every run milliseconds of start-up
if ldd "$lib" | grep -q "libdebuginfod\|libcurl"; then
    echo "FAIL: the library links libdebuginfod/libcurl; it must dlopen it"; exit 1
fi
echo "exports ok: $(echo "$declared" | wc -l) public functions"

