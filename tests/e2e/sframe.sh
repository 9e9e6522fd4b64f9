#!/bin/sh
# SFrame, read and unwound.
#   sframe.sh decode   the decoder against GNU objdump --sframe: the committed fixtures' dumps
#                      (v2: binutils 2.41, v3: 2.46), this machine's objdump on the --gsframe e2e
#                      builds (v1); hand-built AArch64, s390x and AMD64 v3 sections against the rows
#                      the specification gives (tests/fixtures/sframe/handmade.py); a file with no
#                      section headers read through its PT_GNU_SFRAME segment
#   sframe.sh v2|v3    the fixtures of that version (no .eh_frame) recorded with perf and unwound:
#                      every sample to _start, exact stacks, the frame-pointer chain as oracle,
#                      and the frames' methods as the format says (v3 covers the DRAP function
#                      with a flexible FDE: no frame-pointer step; v2 has no FDE for it)
set -eu
B=${UW_BUILD:?UW_BUILD must point at the build directory}
S=${UW_SRC:?UW_SRC must point at the source directory}
F=$S/tests/fixtures/sframe
mode=$1
W=$B/tests/work/sframe-$mode
rm -rf "$W"
mkdir -p "$W"

decode() {
    for v in 2 3; do
        for x in fp nofp; do
            "$B/tests/sframe_dump" "$F/sframe-v$v-$x" >"$W/v$v-$x.txt"
            echo "v$v $x: $(python3 "$S/tests/e2e/sframe-objdump.py" "$F/sframe-v$v-$x.objdump" "$W/v$v-$x.txt")"
        done
    done
    for f in e2e_sframe_fp e2e_sframe_nofp libtw_sframe_fp.so libtw_sframe_nofp.so; do
        objdump --sframe "$B/tests/$f" >"$W/$f.objdump"
        "$B/tests/sframe_dump" "$B/tests/$f" >"$W/$f.txt"
        grep -q "^version 1 " "$W/$f.txt" || { echo "FAIL: $f: not SFrame version 1"; exit 1; }
        echo "v1 $f: $(python3 "$S/tests/e2e/sframe-objdump.py" "$W/$f.objdump" "$W/$f.txt")"
    done
    python3 "$F/handmade.py" "$W/handmade" | while read -r name addr; do
        "$B/tests/sframe_dump" --raw "$W/handmade/$name.sframe" "$addr" >"$W/handmade/$name.txt" || true
        if ! diff -u "$W/handmade/$name.expect" "$W/handmade/$name.txt"; then
            echo "FAIL: hand-built $name"
            exit 1
        fi
        echo "hand-built $name: $(grep -c '^func' "$W/handmade/$name.txt") rows as specified"
    done
    # inputs that found defects (fuzz/regress/sframe): decoded and compiled without a crash
    for f in "$S"/fuzz/regress/sframe/*; do
        rc=0
        "$B/tests/sframe_dump" --raw "$f" 0x1000 >/dev/null 2>&1 || rc=$?
        [ $rc -le 1 ] || { echo "FAIL: $f: sframe_dump exited $rc"; exit 1; }
    done
    # the section headers gone (as a stripped-by-sstrip file): the PT_GNU_SFRAME segment
    python3 - "$F/sframe-v3-fp" "$W/noshdr" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
b[0x28:0x30] = struct.pack("<Q", 0)          # e_shoff
b[0x3c:0x40] = struct.pack("<HH", 0, 0)      # e_shnum, e_shstrndx
open(sys.argv[2], "wb").write(b)
PY
    "$B/tests/sframe_dump" "$W/noshdr" >"$W/noshdr.txt"
    diff -u "$W/v3-fp.txt" "$W/noshdr.txt" || { echo "FAIL: the segment reads otherwise than the section"; exit 1; }
    echo "PT_GNU_SFRAME: $(grep -c '^func' "$W/noshdr.txt") rows, as the section's"
}

run() {
    v=$1
    for x in fp nofp; do
        name=sframe-v$v-$x
        cp "$F/$name" "$W/$name"
        readelf -S "$W/$name" | grep -q eh_frame && { echo "FAIL: $name has CFI"; exit 1; }
        perf record -q -e cpu-clock -F 1999 --call-graph dwarf,4096 -o "$W/$name.data" -- "$W/$name" \
            >"$W/$name.out" 2>"$W/$name.err" || [ $? -eq 92 ] || { cat "$W/$name.err"; exit 1; }
        fp=""
        [ $x = fp ] && fp="--fp-modules $name"
        # shellcheck disable=SC2086
        "$B/tests/stackcheck" "$W/$name.data" --comm "$name" --roots _start --root-outermost --min-root 100 --min-samples 300 \
            --expect "_start;main;outer;middle;leaf" --expect "_start;main;outer;realigned;leaf" $fp
        "$B/unwound" report -i "$W/$name.data" --comm "$name" -o "$W/$name.report"
        grep -E "^# (unwinding|user frames by method|SFrame steps|frame-pointer)" "$W/$name.report"
        nsf=$(grep "^# SFrame steps by module:" "$W/$name.report" | grep -o " $name [0-9]*" | awk '{print $2}')
        nfp=$(grep "^# frame-pointer" "$W/$name.report" | grep -o " $name [0-9]*" | awk '{print $2}')
        [ "${nsf:-0}" -gt 1000 ] || { echo "FAIL: $name: its frames were not unwound by SFrame"; exit 1; }
        if [ "$v" = 3 ] && [ -n "$nfp" ]; then
            echo "FAIL: $name: frame pointers used where the flexible FDE covers outer"; exit 1
        fi
        if [ "$v" = 2 ] && [ "${nfp:-0}" -lt 100 ]; then
            echo "FAIL: $name: outer (no FDE in v2) should have been left by its frame pointer"; exit 1
        fi
        # perf reads no SFrame: for the record
        n=$(perf script -i "$W/$name.data" --comm "$name" 2>/dev/null | awk -v RS= '{n++; if (/ _start\+/) r++} END {printf "%d of %d", r, n}')
        echo "$name: perf without CFI reaches _start on $n samples"
    done
}

case $mode in
decode) decode ;;
v2 | v3) run "${mode#v}" ;;
*) echo "usage: sframe.sh decode|v2|v3"; exit 2 ;;
esac
echo "sframe $mode: ok"
