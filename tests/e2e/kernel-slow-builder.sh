#!/bin/sh
# Kernel unwinding with a table builder that gets little CPU (a loaded machine, tables not in the
# cache): the builder builds tables in the order the program mapped their modules, and a whole
# run's walks were seen handed over to user space ("the pc in none of them": the process's
# mappings were loaded without the modules whose tables were still queued, and those came after
# the program's end). A table that handed-over samples need is now built next. Deterministic: each
# build begins 500 ms late (UW_KUNW_BUILD_DELAY_MS, a test hook); tests/programs/needlib.c
# dlopens libmid.so, where it works, then 8 libraries it never runs, mapped below it (first in
# the queue, when read in one go): libmid.so's table must be moved to the queue's head once its
# samples are handed over, and its stacks are exact.
set -eu
B=${UW_BUILD:?} S=${UW_SRC:?}
W=$B/tests/work/kernel-slow-builder
rm -rf "$W"; mkdir -p "$W"
cd "$W"
uw=$B/unwound
cc -O2 -g -fomit-frame-pointer -o needlib "$S/tests/programs/needlib.c" -ldl
cc -O2 -g -fomit-frame-pointer -shared -fPIC -DMIDLOAD_LIB -o libmid.so "$S/tests/programs/midload.c"
# 8 other libraries, each its own file (a table built once serves every copy of a file)
more=""
for i in 1 2 3 4 5 6 7 8; do
    cc -O2 -g -shared -fPIC -DMIDLOAD_LIB -Dmid_work=more_work$i -Dmid_sink=more_sink$i -o libmore$i.so "$S/tests/programs/midload.c"
    more="$more $W/libmore$i.so"
done
# (a table cache of its own, empty: every table is built, late; 4 s of work or more: every table
# is in by its end, 12 or so builds)
# shellcheck disable=SC2086
UNWOUND_CACHE_DIR=$W/cache UW_KUNW_BUILD_DELAY_MS=300 "$uw" record -v --unwind kernel -o slow.data -- ./needlib 4000 "$W/libmid.so" $more \
    >/dev/null 2>slow.err || { cat slow.err; exit 1; }
grep -q "stacks walked in the kernel" slow.err || { echo "FAIL: not unwound in the kernel"; grep -v "info:" slow.err; exit 1; }
grep "table of .* loaded" slow.err | sed 's/.*table of \([^ ]*\) loaded.*/\1/' >order
echo "tables loaded in this order: $(sed 's|.*/||' order | tr '\n' ' ')"
grep "built next" slow.err | sed 's/.*table of /built next: /; s/ built next: samples.*//'
grep "kernel unwinding: handed over" slow.err | sed 's/.*: handed over: /handed over: /; s/, [0-9]* at a rule.*//'
grep -q "/libmid.so$" order || { echo "FAIL: libmid.so's table was never loaded"; exit 1; }
# the queue's order depends on when the loop read the mappings; the move to its head does not
grep -q "table of .*/libmid.so built next" slow.err ||
    { echo "FAIL: libmid.so's table, which the samples handed over need, was not built next"; exit 1; }
mid=$(grep -n "/libmid.so$" order | cut -d: -f1)
after=$(grep -n "/libmore[0-9]*.so$" order | awk -F: -v m="$mid" '$1 > m' | wc -l)
echo "libmid.so's table loaded before $after of the 8 others"
"$uw" report -i slow.data --folded --no-kernel --comm needlib -o slow.folded
n=$(grep -E "mid_work [0-9]+$" slow.folded | awk '{s += $NF} END {print s + 0}')
ok=$(grep -E ";main;call_need;mid_work [0-9]+$" slow.folded | awk '{s += $NF} END {print s + 0}')
echo "$ok of $n samples in mid_work are main;call_need;mid_work"
[ "$n" -gt 0 ] && [ $((ok * 100)) -ge $((n * 99)) ] || { echo "FAIL: mid_work's stacks"; grep mid_work slow.folded | head -3; exit 1; }
echo "PASS"
