#!/bin/sh
# Records one mode of the e2e program with `perf record --call-graph dwarf` and checks:
#  - exact expected call chains for the known leaves, and the share of stacks reaching a root;
#  - on the frame-pointer build, the frame-pointer oracle;
#  - frame-for-frame agreement with `perf script --no-inline` where perf reaches a root.
set -eu
mode=$1
v=$2
B=${UW_BUILD:?UW_BUILD must point at the build directory}
S=${UW_SRC:?UW_SRC must point at the source directory}
W=$B/tests/work/$mode-$v
rm -rf "$W"
mkdir -p "$W"
exe=$B/tests/e2e_$v
command -v perf >/dev/null || { echo "FAIL: perf is not installed (scripts/install-deps installs linux-perf)"; exit 1; }

stack=16384
args="$mode 1.5"
roots=main
case $mode in
calltree) expect="--expect main;tree_a;tree_a2;spin --expect main;tree_b;spin" ;;
shlib) expect="--expect main;lib_entry;lib_inner;spin_lib --expect main;lib_entry;lib_inner;exe_callback;spin" ;;
threads) roots=thread_main; expect="--expect thread_main;thread_work;spin" ;;
signal) args="$mode 3"; expect="--expect *;on_signal;sig_work;spin --expect main;signal_loop;spin" ;;
tailcall) expect="--expect main;tail_target;spin" ;;
recursion) stack=65528; args="$mode 1.5 200"; expect="--expect *;recurse;recurse;recurse;spin" ;;
*) echo "unknown mode $mode"; exit 2 ;;
esac

if ! perf record -q -e cpu-clock -F 999 --call-graph dwarf,$stack -o "$W/perf.data" -- $exe $args \
    >"$W/program.out" 2>"$W/perf.err"; then
    cat "$W/perf.err"
    if grep -q "assertion failed at util/build-id.c" "$W/perf.err"; then
        echo "FAIL: perf record aborted on MMAP2 records the kernel marked with build-ids: a session recording with build-ids ran beside it (unwound record or perf record --buildid-mmap; see tests/machine-lock.sh)"
    else
        echo "FAIL: perf record could not run (needs perf_event_open: run as root or lower kernel.perf_event_paranoid)"
    fi
    exit 1
fi

fpmods=""
case $v in
fp | sframe_fp) fpmods="--fp-modules e2e_$v,libtw_$v.so" ;;
esac
# shellcheck disable=SC2086
"$B/tests/stackcheck" "$W/perf.data" --comm "e2e_$v" --roots "$roots" --min-root 99.9 --min-samples 500 --sparse-equal \
    $expect $fpmods

# The SFrame builds have no .eh_frame, which perf cannot unwind without: perf is given the same
# files as linked (their CFI kept, FILE.cfi) through --symfs, unwound only the files recorded.
symfs=""
case $v in
sframe_*)
    mkdir -p "$W/symfs$B/tests"
    cp "$exe.cfi" "$W/symfs$exe"
    cp "$B/tests/libtw_$v.so.cfi" "$W/symfs$B/tests/libtw_$v.so"
    for d in /lib /lib64 /usr; do [ -e "$d" ] && ln -s "$d" "$W/symfs$d"; done
    symfs="--symfs $W/symfs --kallsyms /proc/kallsyms"
    # what perf makes of the files as recorded, for the record
    perf script -i "$W/perf.data" --no-inline 2>/dev/null |
        awk -v RS= -v c="e2e_$v" '$1 == c {n++; if (/ _start\+/) r++} END {printf "perf without CFI: %d of %d samples reach _start\n", r, n}'
    "$B/unwound" report -i "$W/perf.data" --comm "e2e_$v" -o "$W/report.txt"
    grep -E "^# (user frames by method|SFrame steps|frame-pointer)" "$W/report.txt"
    n=$(grep "^# SFrame steps by module:" "$W/report.txt" | grep -o " e2e_$v [0-9]*" | awk "{print \$2}")
    [ "${n:-0}" -gt 500 ] || { echo "FAIL: the program's frames were not unwound by SFrame"; exit 1; }
    ;;
esac

# shellcheck disable=SC2086
perf script -i "$W/perf.data" --no-inline $symfs >"$W/perf-script.txt" 2>"$W/perf-script.err"
"$B/unwound" report -i "$W/perf.data" --script --no-inline -o "$W/unwound-script.txt"
python3 "$S/tests/e2e/compare-script.py" "$W/perf-script.txt" "$W/unwound-script.txt" --roots "_start,clone3,__clone3,clone,__clone"
# with inline frames (perf's default; perf resolves them with addr2line)
# shellcheck disable=SC2086
perf script -i "$W/perf.data" $symfs >"$W/perf-script-inline.txt" 2>/dev/null
"$B/unwound" report -i "$W/perf.data" --script -o "$W/unwound-script-inline.txt"
python3 "$S/tests/e2e/compare-script.py" "$W/perf-script-inline.txt" "$W/unwound-script-inline.txt" \
    --roots "_start,clone3,__clone3,clone,__clone"

# folded stacks: one line per distinct stack, counts adding up to the samples, known lines present
if [ "$mode" = calltree ]; then
    "$B/unwound" report -i "$W/perf.data" --folded --comm "e2e_$v" --no-kernel -o "$W/folded.txt"
    dups=$(sed 's/ [0-9]*$//' "$W/folded.txt" | sort | uniq -d | wc -l)
    total=$(awk '{s += $NF} END {print s}' "$W/folded.txt")
    nsamp=$(grep -c "^e2e_$v " "$W/unwound-script.txt")
    echo "folded: $(wc -l <"$W/folded.txt") lines, $total samples (script: $nsamp), $dups duplicates"
    [ "$dups" -eq 0 ] || { echo "FAIL: duplicate folded lines"; exit 1; }
    [ "$total" -eq "$nsamp" ] || { echo "FAIL: folded counts $total != samples $nsamp"; exit 1; }
    for want in "main;tree_a;tree_a2;spin " "main;tree_b;spin "; do
        n=$(grep -F "$want" "$W/folded.txt" | grep -c "^e2e_$v;_start;__libc_start_main[^;]*;__libc_start_call_main;main;" || true)
        [ "$n" -eq 1 ] || { echo "FAIL: folded line for $want: $n"; exit 1; }
    done
fi

# source lines and inline chains of every distinct sampled address, against addr2line
if [ "$mode" = calltree ] || [ "$mode" = shlib ]; then
    "$B/tests/symdump" "$W/perf.data" "e2e_$v" >"$W/symdump.txt"
    python3 "$S/tests/e2e/addr2line-oracle.py" "$W/symdump.txt" --min 5
fi
