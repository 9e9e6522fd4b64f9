#!/bin/sh
# The DWARF cache poisoned as an untrusted recording could: a program compiled with other names
# (macros) and its lines 100 further down claims the genuine program's build-id (its note
# patched) and is reported through --symfs, so the cache gets entries for that build-id made
# from the forgery. A later report of the genuine program must show its own names and lines,
# exactly as without the cache: entries are made from one file and used for that file only.
# For zlib and zstd (objcopy permitting), and for uncompressed DWARF (line rows only).
set -eu
B=${UW_BUILD:?}
S=${UW_SRC:?}
W=$B/tests/work/cache-poison
rm -rf "$W"; mkdir -p "$W"
C=$W/cache
export UNWOUND_CACHE_DIR="$C"
fail() { echo "FAIL: $*"; exit 1; }
patch_bid() { # copy the build-id of $1 into $2's note
    python3 - "$1" "$2" <<'PY'
import struct, sys
def note(path):
    d = bytearray(open(path, 'rb').read())
    shoff, = struct.unpack_from('<Q', d, 0x28); shentsize, shnum, shstrndx = struct.unpack_from('<HHH', d, 0x3a)
    sh = lambda i: struct.unpack_from('<IIQQQQIIQQ', d, shoff + i * shentsize)
    stroff = sh(shstrndx)[4]
    for i in range(shnum):
        s = sh(i)
        if d[stroff + s[0]:d.index(0, stroff + s[0])] == b'.note.gnu.build-id':
            namesz, descsz = struct.unpack_from('<II', d, s[4])
            return d, s[4] + 12 + ((namesz + 3) & ~3), descsz
    sys.exit('no build-id note in ' + path)
g, gat, gn = note(sys.argv[1])
f, fat, fn = note(sys.argv[2])
assert gn == fn
f[fat:fat + fn] = g[gat:gat + gn]
open(sys.argv[2], 'wb').write(f)
PY
}
mkdir -p "$W/fsrc"
{ i=0; while [ $i -lt 100 ]; do echo; i=$((i + 1)); done; cat "$S/tests/programs/dwz_prog.c"; } >"$W/fsrc/forged.c"
for z in zlib zstd none; do
    rm -rf "$C"
    p=$W/prog-$z
    F=$W/forged-$z
    gcc -O2 -g -I"$S/tests/programs" -o "$p" "$S/tests/programs/dwz_prog.c"
    mkdir -p "$F$W"
    gcc -O2 -g -I"$S/tests/programs" -Dmix=forged_mix -Dinner_loop=forged_inner -Dwork_a=forged_work \
        -o "$F$p" "$W/fsrc/forged.c"
    if [ $z != none ]; then
        objcopy --compress-debug-sections=$z "$p" 2>/dev/null || { [ $z = zstd ] && { echo "(objcopy cannot write zstd: skipped)"; continue; }; exit 1; }
        objcopy --compress-debug-sections=$z "$F$p"
    fi
    patch_bid "$p" "$F$p"
    bid=$(readelf -n "$p" | awk '/Build ID/ { print $3 }')
    [ "$(readelf -n "$F$p" | awk '/Build ID/ { print $3 }')" = "$bid" ] || fail "$z: the forgery's build-id was not patched"
    perf record -q --no-buildid-cache -e cpu-clock -F 999 --call-graph dwarf -o "$W/$z.data" -- "$p" 1 >/dev/null 2>"$W/perf.err" ||
        { cat "$W/perf.err"; fail "perf record could not run"; }
    # (HOME without perf's build-id cache: the files are found at their paths)
    run() { HOME=$W "$B/unwound" report -i "$W/$z.data" --comm "prog-$z" --script --srcline "$@"; }
    run --no-dwarf-cache -o "$W/$z.ref"
    grep -q "dwz_common.h:11 (inlined)" "$W/$z.ref" || fail "$z: no inline frames in the genuine report"
    run --symfs "$F" -o "$W/$z.forged"
    grep -q "forged_inner" "$W/$z.forged" || { head "$W/$z.forged"; fail "$z: the forgery was not read through --symfs"; }
    [ -n "$(ls "$C" 2>/dev/null)" ] || fail "$z: the forgery's report left nothing in the cache"
    run -o "$W/$z.after"
    if grep -q "forged\|forged.c" "$W/$z.after"; then
        grep "forged" "$W/$z.after" | sort | uniq -c | head -5
        fail "$z: the genuine program's report shows the forgery's names and lines (the cache was poisoned)"
    fi
    cmp -s "$W/$z.ref" "$W/$z.after" || { diff "$W/$z.ref" "$W/$z.after" | head; fail "$z: the genuine program's report differs from the one without the cache"; }
    # and its own entries are used the next time, the forgery's still there
    run -o "$W/$z.again"
    cmp -s "$W/$z.ref" "$W/$z.again" || fail "$z: the genuine program's report from the cache differs"
    run --symfs "$F" -o "$W/$z.forged2"
    cmp -s "$W/$z.forged" "$W/$z.forged2" || fail "$z: the forgery's own report changed"
    echo "$z: the genuine program's report is its own after the forgery's ($(grep -c . "$W/$z.ref") lines)"
done
echo "cache poisoning: no entry made from one file is used for another"
