#!/bin/sh
# The cache of decompressed DWARF: a program whose debug sections are compressed (zlib, and
# zstd) is reported three times: the first run writes BUILD-ID-KEY.dwarf2 (and the decoded line
# rows, BUILD-ID-KEY.lines2) into the cache, the second maps them, inflates and decodes nothing,
# and writes nothing; --no-dwarf-cache neither reads nor writes them; damaged or foreign copies
# are ignored. The output is the same every time.
# (cache-poison.sh: entries made from a file that forged the build-id are not used.)
set -eu
B=${UW_BUILD:?}
S=${UW_SRC:?}
W=$B/tests/work/dwarf-cache
rm -rf "$W"; mkdir -p "$W"
command -v strace >/dev/null || { echo "FAIL: strace is not installed (scripts/install-deps installs it)"; exit 1; }
C=$W/cache
export UNWOUND_CACHE_DIR="$C"
for z in zlib zstd; do
    p=$W/prog-$z
    rm -rf "$C" # both programs have the same build-id: the sections differ only in compression
    gcc -O2 -g -I"$S/tests/programs" -o "$p" "$S/tests/programs/dwz_prog.c"
    objcopy --compress-debug-sections=$z "$p" 2>/dev/null || { [ $z = zstd ] && { echo "(objcopy cannot write zstd: skipped)"; continue; }; exit 1; }
    readelf -SW "$p" | grep -q ' \.debug_info .* C ' || { echo "FAIL: $z: .debug_info is not compressed"; exit 1; }
    bid=$(readelf -n "$p" | awk '/Build ID/ { print $3 }')
    perf record -q -e cpu-clock -F 999 --call-graph dwarf -o "$W/$z.data" -- "$p" 1 >/dev/null 2>"$W/perf.err" ||
        { echo "FAIL: perf record could not run"; cat "$W/perf.err"; exit 1; }
    run() { "$B/unwound" report -i "$W/$z.data" --comm "prog-$z" --script --srcline "$@"; }
    run --no-dwarf-cache -o "$W/$z.ref"
    [ -z "$(ls "$C" 2>/dev/null)" ] || { echo "FAIL: $z: --no-dwarf-cache wrote the cache"; exit 1; }
    grep -q "dwz_common.h:11 (inlined)" "$W/$z.ref" || { echo "FAIL: $z: no inline frames"; exit 1; }
    # (LeakSanitizer cannot run under ptrace: off for the traced runs of the ASan build; one
    # file per thread, -ff, so calls two threads make at once are not split across lines)
    trace() { rm -f "$W/$1.trace".*; ASAN_OPTIONS=detect_leaks=0 strace -ff -qq -e trace=openat,rename,linkat -o "$W/$1.trace" "$B/unwound" report -i "$W/$z.data" --comm "prog-$z" --script --srcline -o "$W/$1"; cat "$W/$1.trace".* >"$W/$1.trace"; }
    trace "$z.cold"
    ent=$(cd "$C" && ls "$bid"-*.dwarf2 2>/dev/null | sed 's/\.dwarf2$//')
    [ -n "$ent" ] && [ -s "$C/$ent.dwarf2" ] || { echo "FAIL: $z: no $bid-KEY.dwarf2 in the cache"; ls -la "$C"; exit 1; }
    # (written without a name, O_TMPFILE, and linked once complete: a reader sees all or nothing)
    grep -q "openat(AT_FDCWD, \"$C\", .*O_TMPFILE" "$W/$z.cold.trace" || { echo "FAIL: $z: not written without a name"; exit 1; }
    grep -q "linkat(.*\"$C/$ent.dwarf2\"" "$W/$z.cold.trace" || { echo "FAIL: $z: not linked once written"; exit 1; }
    grep -q "linkat(.*\"$C/$ent.lines2\"" "$W/$z.cold.trace" || { echo "FAIL: $z: no line rows linked once written"; exit 1; }
    readelf -SW "$C/$ent.dwarf2" | grep -q ' \.debug_info .* C ' && { echo "FAIL: $z: the copy is compressed"; exit 1; }
    trace "$z.warm"
    grep -q "openat(.*$ent.dwarf2\", O_RDONLY" "$W/$z.warm.trace" || { echo "FAIL: $z: the copy was not read"; exit 1; }
    grep -q "openat(.*$ent.lines2\", O_RDONLY" "$W/$z.warm.trace" || { echo "FAIL: $z: the line rows were not read"; exit 1; }
    if grep -q "\(rename\|linkat\)(.*\"$C/" "$W/$z.warm.trace"; then echo "FAIL: $z: written again"; exit 1; fi
    for o in cold warm; do cmp "$W/$z.ref" "$W/$z.$o" || { echo "FAIL: $z: $o output differs"; exit 1; }; done
    # damaged copies: cut short, another file's under this name, rows changed: ignored, rewritten
    good=$W/$z.good; cp "$C/$ent.dwarf2" "$good"; cp "$C/$ent.lines2" "$good.lines"
    head -c 3000 "$good" >"$C/$ent.dwarf2"
    head -c 100 "$good.lines" >"$C/$ent.lines2"
    run -o "$W/$z.cut"
    cp /usr/bin/true "$C/$ent.dwarf2"
    cp /usr/bin/true "$C/$ent.lines2"
    run -o "$W/$z.foreign"
    # every row's line number 1 higher: caught by the rows' hash
    python3 - "$good.lines" "$C/$ent.lines2" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], 'rb').read())
nunits, nrows = struct.unpack_from('<QQ', b, 16)
at = 72 + 48 * nunits  # the header: 32 bytes, then the identity of the file (40)
for i in range(nrows):
    struct.pack_into('<I', b, at + 16 * i + 12, struct.unpack_from('<I', b, at + 16 * i + 12)[0] + 1)
open(sys.argv[2], 'wb').write(b)
PY
    run -o "$W/$z.rows"
    for o in cut foreign rows; do cmp "$W/$z.ref" "$W/$z.$o" || { echo "FAIL: $z: output with a $o copy differs"; exit 1; }; done
    echo "$z: cold, warm, without the cache, and over damaged copies: the same $(grep -c . "$W/$z.ref") lines"
done
echo "dwarf cache ok"
