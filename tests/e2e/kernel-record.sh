#!/bin/sh
# unwound record with kernel unwinding (issue 26, docs/kernel-unwind.md):
#  1. deep stacks: tests/programs/deeprec.c, two threads recursing 200 levels through 1 KiB frames
#     (no frame pointers, no SFrame), recorded with -p once it is ready: >= 99% of its samples
#     reach main or start_thread through all 200 levels (a 16 KiB copy reaches neither);
#  2. the copy unwinder's stacks: in verify mode (UW_KUNW_VERIFY) every record also carries frame
#     0's registers and 32 KiB of stack, and the recorder compares the program's frames with
#     lib/unwind's over that copy: on the e2e programs (C with and without frame pointers, SFrame
#     only, shared libraries, signals, threads, tail calls, recursion), C++ and Node.js's JIT code
#     named through its perf map, equal frame for frame on >= 99.9% of the samples where the copy
#     reached a root;
#  3. a module first mapped mid-run (tests/programs/midload.c dlopens one): its table loaded then,
#     its samples' stacks exact and equal to the copy's;
#  4. the hand-over path: BPF maps capped below any table, every stack is finished in user space
#     from the copy the program hands over, and the stacks are still exact;
#  5. --unwind copy, --help and the summary say how stacks were unwound;
#  6. samples taken in the kernel: their ip and kernel frames addresses, no context marker.
# Counts are ratios over the samples taken: nothing depends on the CPU time received.
set -eu
B=${UW_BUILD:?} S=${UW_SRC:?}
W=$B/tests/work/kernel-record
rm -rf "$W"; mkdir -p "$W"
cd "$W"
uw=$B/unwound
"$uw" record --help | grep -q "Kernel unwinding is compiled in" ||
    { echo "FAIL: record --help does not say kernel unwinding is compiled in (needs libbpf-dev, clang, bpftool: scripts/install-deps build)"; exit 1; }

# ---- 1. deep stacks
"$B/tests/deeprec" 200 >deep.out &
dp=$!
trap 'kill $dp 2>/dev/null || true' EXIT
i=0
until grep -q ready deep.out; do
    i=$((i + 1)); [ $i -lt 600 ] || { echo "FAIL: deeprec never got ready"; exit 1; }; sleep 0.1
done
# recordings of 2 s until 1,000 samples (a busy machine gives fewer per recording); --unwind
# kernel: every sample walked there (by default the first ones, before the program is
# verified, are copies: tests/e2e/record-start.sh)
total=0 rooted=0 main=0 thr=0 n=0
while [ $total -lt 1000 ] && [ $n -lt 20 ]; do
    n=$((n + 1))
    "$uw" record --unwind kernel -o deep$n.data --duration 2 -p $dp 2>deep$n.err || { cat deep$n.err; exit 1; }
    grep -q "stacks walked in the kernel" deep$n.err || { echo "FAIL: not unwound in the kernel"; cat deep$n.err; exit 1; }
    "$uw" report -i deep$n.data --folded --no-kernel -o deep$n.folded
    set -- $(awk '{ c = $NF; t += c; n = gsub(/;recurse/, "&"); if (n >= 200 && $0 ~ /^deeprec;_start;__libc_start_main[^;]*;(__libc_start_call_main;)?main;/) m += c;
                    else if (n >= 200 && $0 ~ /^deeprec;(clone3;)?start_thread;worker;/) w += c }
                  END { print t + 0, m + 0, w + 0 }' deep$n.folded)
    total=$((total + $1)) main=$((main + $2)) thr=$((thr + $3))
done
kill $dp; wait $dp 2>/dev/null || true
trap - EXIT
rooted=$((main + thr))
echo "deep: $rooted of $total samples reach main ($main) or start_thread ($thr) through 200 levels ($n recordings)"
[ $total -ge 100 ] || { echo "FAIL: too few samples"; exit 1; }
[ $((rooted * 100)) -ge $((total * 99)) ] || { echo "FAIL: fewer than 99% of the deep stacks reach their root"; head -3 deep1.folded | cut -c1-300; exit 1; }
[ $((main * 10)) -ge $total ] && [ $((thr * 10)) -ge $total ] || { echo "FAIL: both threads must be sampled"; exit 1; }

# ---- 2. the copy unwinder's frames
verify() { # name command...
    name=$1; shift
    UW_KUNW_VERIFY=1 "$uw" record -o $name.data -- "$@" >/dev/null 2>$name.err || { cat $name.err; exit 1; }
    line=$(grep "kernel unwinding verify:" $name.err | tail -1)
    set -- $(echo "$line" | sed 's/.*verify: \([0-9]*\) samples compared.*, \([0-9]*\) differ.*/\1 \2/')
    [ $# -eq 2 ] || { echo "FAIL: $name: no verify line"; cat $name.err; exit 1; }
    echo "$name: $1 samples compared where the copy reached a root, $2 differ"
    [ "$1" -gt 0 ] || { echo "FAIL: $name: nothing compared"; cat $name.err; exit 1; }
    [ $(($2 * 1000)) -le "$1" ] || { echo "FAIL: $name: more than 0.1% of the stacks differ from the copy's"; grep "first difference" $name.err | head -3; exit 1; }
}
for v in nofp fp sframe_nofp; do
    for mode in calltree shlib threads signal tailcall recursion; do
        [ $v = nofp ] || [ $mode = signal ] || [ $mode = threads ] || continue
        verify $mode.$v "$B/tests/e2e_$v" $mode 1
    done
done
g++ -O2 -g -o cxxwork "$S/tests/programs/cxxwork.cpp"
verify cxx ./cxxwork 1
command -v node >/dev/null || { echo "FAIL: node is not installed (scripts/install-deps installs nodejs)"; exit 1; }
verify node node --perf-basic-prof "$S/tests/programs/jitwork.js"

# ---- 3. a module first mapped mid-run
cc -O2 -g -fomit-frame-pointer -o midload "$S/tests/programs/midload.c" -ldl
cc -O2 -g -fomit-frame-pointer -shared -fPIC -DMIDLOAD_LIB -o libmid.so "$S/tests/programs/midload.c"
UW_KUNW_VERIFY=1 "$uw" record -v -o mid.data -- ./midload "$W/libmid.so" 800 >/dev/null 2>mid.err || { cat mid.err; exit 1; }
grep -q "table of .*libmid.so loaded" mid.err || { echo "FAIL: libmid.so's table was not loaded"; grep "table of" mid.err; exit 1; }
grep "verify:" mid.err | grep -q ", 0 differ" || { echo "FAIL: mid-run module: stacks differ from the copy's"; grep verify mid.err; exit 1; }
"$uw" report -i mid.data --folded --no-kernel --comm midload -o mid.folded
mid=$(grep -E "mid_work [0-9]+$" mid.folded | awk '{s += $NF} END {print s + 0}')
midok=$(grep -E ";main;call_mid;mid_work [0-9]+$" mid.folded | awk '{s += $NF} END {print s + 0}')
echo "mid-run module: $midok of $mid samples in mid_work are main;call_mid;mid_work"
[ "$mid" -gt 0 ] && [ $((midok * 100)) -ge $((mid * 99)) ] || { echo "FAIL: mid-run module's stacks"; grep mid_work mid.folded | head; exit 1; }

# 3b. a young process's mappings (31 executable ones at most) go to a store the walk sees without
# an RCU grace period; one that outgrows it mid-run (40 more libraries dlopened, each one
# executable mapping) moves to the hash of maps: its stacks exact before and after
more=""
for i in $(seq 1 40); do cp libmid.so libmore$i.so; more="$more $W/libmore$i.so"; done
# shellcheck disable=SC2086
UW_KUNW_VERIFY=1 "$uw" record -v -o grow.data -- ./midload "$W/libmid.so" 800 $more >/dev/null 2>grow.err || { cat grow.err; exit 1; }
young=$(sed -n "s/.*; \([0-9]*\) lookups found a process's mappings in the young processes' store.*/\1/p" grow.err)
[ "${young:-0}" -gt 0 ] || { echo "FAIL: the young processes' store was not used"; grep "handed over" grow.err; exit 1; }
grep "verify:" grow.err | grep -q ", 0 differ" || { echo "FAIL: a process outgrowing the young store: stacks differ from the copy's"; grep verify grow.err; exit 1; }
"$uw" report -i grow.data --folded --no-kernel --comm midload -o grow.folded
mid=$(grep -E "mid_work [0-9]+$" grow.folded | awk '{s += $NF} END {print s + 0}')
midok=$(grep -E ";main;call_mid;mid_work [0-9]+$" grow.folded | awk '{s += $NF} END {print s + 0}')
own=$(grep -E ";main;own_work [0-9]+$" grow.folded | awk '{s += $NF} END {print s + 0}')
echo "outgrowing the young store: $young lookups there; $midok of $mid samples in mid_work are main;call_mid;mid_work, $own in own_work"
[ "$mid" -gt 0 ] && [ "$own" -gt 0 ] && [ $((midok * 100)) -ge $((mid * 99)) ] || { echo "FAIL: stacks of a process outgrowing the young store"; grep -E "mid_work|own_work" grow.folded | head; exit 1; }

# ---- 4. the hand-over path: no table fits (--unwind kernel: the program there from the first
# sample, as in part 1)
"$uw" record --unwind kernel --bpf-map-bytes 4096 -o fb.data -- "$B/tests/e2e_nofp" calltree 1 >/dev/null 2>fb.err || { cat fb.err; exit 1; }
set -- $(sed -n 's/.*(eBPF): \([0-9]*\) samples, \([0-9]*\) (.*finished in user space.*/\1 \2/p' fb.err)
[ $# -eq 2 ] && [ "$1" -gt 0 ] && [ $(($2 * 100)) -ge $(($1 * 95)) ] ||
    { echo "FAIL: with no table loaded, stacks must be finished in user space"; cat fb.err; exit 1; }
"$B/tests/stackcheck" fb.data --callchains --comm e2e_nofp --roots main --min-root 99.5 --min-samples 50 \
    --expect "main;tree_a;tree_a2;spin" --expect "main;tree_b;spin"
echo "hand-over: $2 of $1 samples finished in user space, stacks exact"

# ---- 5. --unwind copy
"$uw" record --unwind copy -o copy.data -- "$B/tests/e2e_nofp" calltree 1 >/dev/null 2>copy.err || { cat copy.err; exit 1; }
grep -q "stacks copied (16384 bytes) and unwound in user space" copy.err || { echo "FAIL: --unwind copy's summary"; cat copy.err; exit 1; }
"$B/tests/stackcheck" copy.data --callchains --comm e2e_nofp --roots main --min-root 99.5 --min-samples 50 \
    --expect "main;tree_a;tree_a2;spin" --expect "main;tree_b;spin"

# ---- 6. samples taken in the kernel: their ip and kernel frames are addresses (bpf_get_stack
# gives the event's callchain with its PERF_CONTEXT_KERNEL marker first: it was each such
# sample's ip, and written twice into its callchain; perf report charged 73% of a syscall loop
# to "[k] 0xffffffffffffff80"). dd's write(2) of 64 bytes at a time: most samples in the kernel
for mode in kernel copy; do
    "$uw" record -q --unwind $mode -o sys-$mode.data -- dd if=/dev/zero of=/dev/null bs=64 count=2000000 2>/dev/null
    perf script -i sys-$mode.data -G -F ip 2>/dev/null | awk '{ print $1 }' >sys-$mode.ips
    n=$(wc -l <sys-$mode.ips)
    k=$(grep -c '^ffffffff' sys-$mode.ips || true)
    bad=$(grep -c '^fffffffffffff[0-9a-f][0-9a-f][0-9a-f]$' sys-$mode.ips || true)
    # each kernel-mode sample's raw callchain: one PERF_CONTEXT_KERNEL, then addresses
    twice=$(perf report -D -i sys-$mode.data 2>/dev/null | awk '/PERF_RECORD_SAMPLE/ { if (m > 1) t++; m = 0 }
        /^\.\.\.\.\. +[0-9]+: ffffffffffffff80$/ { m++ } END { if (m > 1) t++; print t + 0 }')
    echo "kernel-mode samples ($mode): $k of $n samples in the kernel, $bad with a context marker as ip, $twice with two markers"
    [ "$k" -ge $((n / 2)) ] || { echo "FAIL: dd's samples are not mostly in the kernel"; exit 1; }
    [ "$bad" = 0 ] && [ "$twice" = 0 ] || { echo "FAIL: --unwind $mode: a context marker as a sample's ip or frame"; exit 1; }
done
perf report -i sys-kernel.data --stdio --no-children -g none --sort sym 2>/dev/null | grep -q "0xffffffffffffff80" &&
    { echo "FAIL: perf report names 0xffffffffffffff80"; exit 1; }

"$uw" record --unwind bogus -- true 2>bad.err && { echo "FAIL: --unwind bogus accepted"; exit 1; }
grep -q "takes kernel or copy" bad.err || { echo "FAIL: --unwind's error"; cat bad.err; exit 1; }
echo "PASS"
