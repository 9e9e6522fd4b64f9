#!/bin/sh
# A program whose CFI is only in .debug_frame, stripped, with its DWARF and symbols in a separate
# file found through .gnu_debuglink (CRC checked), and the same found by build-id under a debug
# root (--debug-dir). Stacks must be complete and exact either way.
set -eu
B=${UW_BUILD:?}
S=${UW_SRC:?}
W=$B/tests/work/debugfile
rm -rf "$W"; mkdir -p "$W/bin" "$W/root"
cc -O2 -g -fomit-frame-pointer -fno-asynchronous-unwind-tables -fno-unwind-tables -fcf-protection=none \
    -Wl,--build-id -o "$W/bin/dbgframe" "$S/tests/programs/e2e.c" -L"$B/tests" -ltw_nofp -Wl,-rpath,"$B/tests" -lpthread
readelf -S "$W/bin/dbgframe" | grep -q '\.debug_frame' || { echo "FAIL: no .debug_frame was produced"; exit 1; }
# .eh_frame may remain for the C runtime's objects (_start), never for the program's functions
spin=$(nm "$W/bin/dbgframe" | awk '$3 == "spin" {print $1}')
if readelf --debug-dump=frames "$W/bin/dbgframe" 2>/dev/null | sed -n '/Contents of the .eh_frame/,/Contents of the .debug_frame/p' |
    grep -q "pc=0*$spin\.\."; then
    echo "FAIL: spin has an FDE in .eh_frame"; exit 1
fi
objcopy --only-keep-debug "$W/bin/dbgframe" "$W/bin/dbgframe.debug"
objcopy --strip-all --add-gnu-debuglink="$W/bin/dbgframe.debug" "$W/bin/dbgframe"
readelf -S "$W/bin/dbgframe" | grep -q -E '\.debug_frame|\.symtab' && { echo "FAIL: not stripped"; exit 1; }
perf record -q -e cpu-clock -F 999 --call-graph dwarf --no-buildid-cache -o "$W/perf.data" -- "$W/bin/dbgframe" calltree 0.8 \
    >/dev/null 2>"$W/perf.err" || { echo "FAIL: perf record could not run"; cat "$W/perf.err"; exit 1; }
check() {
    "$B/tests/stackcheck" "$W/perf.data" --comm dbgframe --roots main --min-samples 500 \
        --expect "main;tree_a;tree_a2;spin" --expect "main;tree_b;spin"
}
echo "== through .gnu_debuglink"
HOME=$W check
# by build-id: move the debug file under a debug root
bid=$(readelf -n "$W/bin/dbgframe" | awk '/Build ID/ {print $3}')
mkdir -p "$W/root/.build-id/$(echo "$bid" | cut -c1-2)"
mv "$W/bin/dbgframe.debug" "$W/root/.build-id/$(echo "$bid" | cut -c1-2)/$(echo "$bid" | cut -c3-).debug"
echo "== by build-id under \$UNWOUND_DEBUG_PATH"
HOME=$W UNWOUND_DEBUG_PATH=$W/root check
# the same debug file with zlib, then zstd, compressed sections (libelf 0.188 reads only zlib)
dbg=$W/root/.build-id/$(echo "$bid" | cut -c1-2)/$(echo "$bid" | cut -c3-).debug
HOME=$W UNWOUND_DEBUG_PATH=$W/root "$B/tests/symdump" "$W/perf.data" dbgframe >"$W/sym-plain.txt"
for z in zlib zstd; do
    echo "== by build-id, sections compressed with $z"
    objcopy --compress-debug-sections=$z "$dbg" "$dbg.tmp" && mv "$dbg.tmp" "$dbg"
    readelf -t "$dbg" | grep -qi "$z" || { echo "FAIL: objcopy did not compress with $z"; exit 1; }
    HOME=$W UNWOUND_DEBUG_PATH=$W/root check
    HOME=$W UNWOUND_DEBUG_PATH=$W/root "$B/tests/symdump" "$W/perf.data" dbgframe >"$W/sym-$z.txt"
    cmp "$W/sym-plain.txt" "$W/sym-$z.txt" || { echo "FAIL: lines differ with $z sections"; exit 1; }
done
grep -q 'tree_a2' "$W/sym-zstd.txt" || { echo "FAIL: no DWARF names from the zstd file"; exit 1; }
echo "== without the debug file: no CFI for the program, and that is what the report says"
rm -f "$dbg"
HOME=$W UNWOUND_DEBUG_PATH=$W/root "$B/unwound" report -i "$W/perf.data" --comm dbgframe --no-fp >"$W/report.txt"
grep -E "stopped early or unknown: .*no unwind info for pc" "$W/report.txt" >/dev/null || { echo "FAIL: missing CFI not reported"; cat "$W/report.txt"; exit 1; }
# MiniDebugInfo: a stripped program whose only symbols are an xz-compressed .symtab in
# .gnu_debugdata (names only: the stack must still come from .eh_frame)
M=$W/mini
mkdir -p "$M"
cp "$B/tests/e2e_nofp" "$M/mini"
objcopy --only-keep-debug "$M/mini" "$M/full.dbg"
objcopy --strip-debug "$M/full.dbg" "$M/mini.sym"
xz -f "$M/mini.sym"
objcopy --strip-all --add-section .gnu_debugdata="$M/mini.sym.xz" "$M/mini" "$M/mini.tmp" && mv "$M/mini.tmp" "$M/mini"
if nm "$M/mini" 2>/dev/null | grep -q ' spin$'; then echo "FAIL: not stripped"; exit 1; fi
perf record -q -e cpu-clock -F 999 --call-graph dwarf --no-buildid-cache -o "$M/perf.data" -- "$M/mini" calltree 0.6 \
    >/dev/null 2>"$M/perf.err" || { echo "FAIL: perf record could not run"; cat "$M/perf.err"; exit 1; }
echo "== names from MiniDebugInfo"
HOME=$M "$B/tests/stackcheck" "$M/perf.data" --comm mini --roots main --min-samples 400 \
    --expect "main;tree_a;tree_a2;spin" --expect "main;tree_b;spin"
echo "debug files ok"
