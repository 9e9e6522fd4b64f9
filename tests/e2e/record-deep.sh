#!/bin/sh
# unwound record keeps deep stacks: tests/programs/deepsmall.c recurses 400 levels through 16-byte
# frames (no frame pointers: CFI), which a 16 KiB copy holds. Stacks walked in the kernel and
# stacks copied (--unwind copy) reach main through all 400 levels: record kept 256 frames and had
# no --max-frames. perf 6.1 reads callchains past its default of 127 frames with --max-stack, and
# the summary says the N to give it. --max-frames N cuts stacks at N user frames, as report's.
# Counts are ratios over the samples taken: nothing depends on the CPU time received.
set -eu
B=${UW_BUILD:?} S=${UW_SRC:?}
W=$B/tests/work/record-deep
rm -rf "$W"; mkdir -p "$W"
cd "$W"
uw=$B/unwound
command -v perf >/dev/null || { echo "FAIL: perf is not installed"; exit 1; }
cc -O2 -g -fomit-frame-pointer -fno-inline-functions -fcf-protection=none -o deepsmall "$S/tests/programs/deepsmall.c"

# Per sample of perf script's callchains (-F ip,sym): its user frames, the down frames, whether the
# leaf is bottom and down x 400 is followed by main. Prints: samples, samples in bottom, of those
# reaching main through exactly DEPTH down frames, the most user frames, the most frames.
stacks() { # file depth
    perf script -i "$1" --max-stack 4000 -F ip,sym 2>/dev/null | awk -v depth="$2" '
        function done() { if (!n) return; t++; if (leaf == "bottom") { b++; if (downs == depth && main) ok++ }
                          if (u > mu) mu = u; if (n > mn) mn = n; n = u = downs = main = 0; leaf = "" }
        /^$/ { done(); next }
        { n++; if ($1 !~ /^ffffffff/) { u++; if (u == 1) leaf = $2 } if ($2 == "down") downs++
          if ($2 == "main" && prev == "down") main = 1; prev = $2 }
        END { done(); print t + 0, b + 0, ok + 0, mu + 0, mn + 0 }'
}

for mode in kernel copy; do
    "$uw" record --unwind $mode -o $mode.data -- ./deepsmall 400 1 2>$mode.err || { cat $mode.err; exit 1; }
    if [ $mode = kernel ]; then
        grep -q "stacks walked in the kernel" $mode.err || { echo "FAIL: not unwound in the kernel"; cat $mode.err; exit 1; }
    fi
    set -- $(stacks $mode.data 400)
    echo "$mode: $1 samples, $2 in bottom, $3 of them reach main through 400 levels; at most $4 user frames, $5 frames"
    [ "$2" -ge 50 ] || { echo "FAIL: $mode: too few samples in bottom"; exit 1; }
    [ $(($3 * 100)) -ge $(($2 * 99)) ] || { echo "FAIL: $mode: fewer than 99% of the deep stacks reach main"; cat $mode.err; exit 1; }
    # the summary's line: perf shows 127 frames unless told more, and the N the file needs
    n=$(sed -n 's/.*use perf report --max-stack \([0-9]*\) .*/\1/p' $mode.err)
    [ "$n" = "$5" ] || { echo "FAIL: $mode: the summary must say perf report --max-stack $5"; cat $mode.err; exit 1; }
    # ... which perf needs: by default its chains stop at 127 frames, before main
    perf script -i $mode.data -F ip,sym 2>/dev/null | grep -q " main$" &&
        { echo "FAIL: $mode: perf script reached main without --max-stack (its default changed?)"; exit 1; }

    # --max-frames: stacks cut at N user frames, and no line when perf shows them whole
    "$uw" record --unwind $mode --max-frames 100 -o cut-$mode.data -- ./deepsmall 400 0.3 2>cut-$mode.err ||
        { cat cut-$mode.err; exit 1; }
    set -- $(stacks cut-$mode.data 400)
    echo "$mode --max-frames 100: $1 samples, $2 in bottom, at most $4 user frames"
    [ "$2" -gt 0 ] && [ "$3" = 0 ] && [ "$4" = 100 ] || { echo "FAIL: $mode: --max-frames 100 must cut the stacks at 100 user frames"; exit 1; }
    grep -q "max-stack" cut-$mode.err && { echo "FAIL: $mode: a --max-stack line for stacks perf shows whole"; cat cut-$mode.err; exit 1; }
done

# perf reads the longest chains record writes (1,024 user frames by default)
"$uw" record --unwind copy --stack-size 65528 -o long.data -- ./deepsmall 1100 0.3 2>long.err || { cat long.err; exit 1; }
set -- $(stacks long.data 1100)
echo "1,100 levels: $2 samples in bottom, at most $4 user frames as perf script reads them"
[ "$4" = 1024 ] || { echo "FAIL: 1,024 user frames kept and read by perf"; cat long.err; exit 1; }

for bad in 0 4097 x; do
    "$uw" record --max-frames $bad -- true 2>bad.err && { echo "FAIL: --max-frames $bad accepted"; exit 1; }
    grep -q -- "--max-frames" bad.err || { echo "FAIL: --max-frames $bad: no message"; cat bad.err; exit 1; }
done
"$uw" record --help | grep -q -- "--max-frames N" || { echo "FAIL: record --help does not list --max-frames"; exit 1; }
echo "PASS"
