#!/bin/sh
# Reader scenarios recorded with perf at test time:
#   multi-event   two events in one recording (PERF_SAMPLE_IDENTIFIER, per-event names)
#   buildid-mmap  MMAP2 records carrying build-ids (perf record --buildid-mmap)
#   multiproc     several processes: fork, exec, threads, processes exiting while others run
#   mismatch      a module replaced after recording: not used for symbols, listed in the summary
set -eu
case=$1
B=${UW_BUILD:?}
S=${UW_SRC:?}
W=$B/tests/work/reader-$case
rm -rf "$W"; mkdir -p "$W"
U=$B/unwound
roots="_start,clone3,__clone3,clone,__clone"
rec() { perf record -q -F 999 --call-graph dwarf "$@" >"$W/program.out" 2>"$W/perf.err" ||
    { echo "FAIL: perf record could not run"; cat "$W/perf.err"; exit 1; }; }
compare() {
    perf script -i "$W/perf.data" --no-inline >"$W/perf.txt" 2>/dev/null
    "$U" report -i "$W/perf.data" --script --no-inline -o "$W/unwound.txt"
    python3 "$S/tests/e2e/compare-script.py" "$W/perf.txt" "$W/unwound.txt" --roots "$roots"
}
case $case in
multi-event)
    rec -e cpu-clock,task-clock -o "$W/perf.data" -- "$B/tests/e2e_nofp" calltree 0.8
    "$B/tests/stackcheck" "$W/perf.data" --comm e2e_nofp --roots main --min-samples 500 \
        --expect "main;tree_a;tree_a2;spin" --expect "main;tree_b;spin"
    compare
    for ev in cpu-clock task-clock; do
        n=$(grep -c " $ev: $" "$W/unwound.txt" || true)
        echo "$ev: $n samples"
        [ "$n" -gt 200 ] || { echo "FAIL: too few $ev samples"; exit 1; }
    done
    ;;
buildid-mmap)
    rec -e cpu-clock --buildid-mmap -o "$W/perf.data" -- "$B/tests/e2e_nofp" shlib 0.8
    perf script -i "$W/perf.data" --show-mmap-events 2>/dev/null | grep -q 'PERF_RECORD_MMAP2.* <[0-9a-f]\{40\}>\]: r-xp .*e2e_nofp' ||
        { echo "FAIL: the recording has no build-id MMAP2 records"; exit 1; }
    "$B/tests/stackcheck" "$W/perf.data" --comm e2e_nofp --roots main --min-samples 500 \
        --expect "main;lib_entry;lib_inner;spin_lib" --expect "main;lib_entry;lib_inner;exe_callback;spin"
    compare
    ;;
multiproc)
    E=$B/tests/e2e_nofp
    rec -e cpu-clock -o "$W/perf.data" -- sh -c \
        "$E calltree 0.4 >/dev/null; $E tailcall 0.5 >/dev/null & $E threads 0.5 >/dev/null; for i in 1 2 3 4 5 6 7 8; do $E calltree 0.03 >/dev/null; done; wait"
    "$B/tests/stackcheck" "$W/perf.data" --comm e2e_nofp --roots main,thread_main --min-samples 1000 \
        --expect "main;tree_a;tree_a2;spin" --expect "main;tree_b;spin" --expect "main;tail_target;spin" \
        --expect "thread_main;thread_work;spin"
    compare
    pids=$(grep '^e2e_nofp ' "$W/unwound.txt" | awk '{print $2}' | sort -u | wc -l)
    echo "threads seen: $pids"
    [ "$pids" -ge 6 ] || { echo "FAIL: samples of only $pids threads"; exit 1; }
    ;;
mismatch)
    cc -O2 -g -o "$W/victim" "$S/tests/programs/e2e.c" -L"$B/tests" -ltw_nofp -Wl,-rpath,"$B/tests" -lpthread
    rec -e cpu-clock --no-buildid-cache -o "$W/perf.data" -- "$W/victim" calltree 0.5
    "$U" report -i "$W/perf.data" --script -o "$W/before.txt"
    grep -q 'tree_a2' "$W/before.txt" || { echo "FAIL: no symbols before the file changed"; exit 1; }
    # the same path, another build: its symbols would be wrong for this recording
    cc -O0 -g -DVARIANT -o "$W/victim" "$S/tests/programs/e2e.c" -L"$B/tests" -ltw_nofp -Wl,-rpath,"$B/tests" -lpthread
    "$U" report -i "$W/perf.data" >"$W/report.txt"
    cat "$W/report.txt" | tail -4
    grep -q "build-id mismatch (not used): $W/victim" "$W/report.txt" || { echo "FAIL: mismatch not reported"; exit 1; }
    "$U" report -i "$W/perf.data" --script -o "$W/after.txt"
    if grep "($W/victim)" "$W/after.txt" | grep -v '\[unknown\]' | head -3 | grep .; then
        echo "FAIL: names taken from a file whose build-id differs"; exit 1
    fi
    echo "mismatched module: no names used"
    ;;
fp-callchain)
    # perf record -g: the kernel walks frame pointers; user frames come from the callchain
    rec -e cpu-clock -g -o "$W/perf.data" -- "$B/tests/e2e_fp" calltree 0.5
    "$B/tests/stackcheck" "$W/perf.data" --comm e2e_fp --roots main --min-samples 300 \
        --expect "main;tree_a;tree_a2;spin" --expect "main;tree_b;spin"
    compare
    ;;
no-callchain)
    # no callchain, no stack: one frame per sample, perf script's one-line form
    perf record -q -e cpu-clock -F 999 -o "$W/perf.data" -- "$B/tests/e2e_nofp" calltree 0.5 >/dev/null 2>"$W/perf.err" ||
        { echo "FAIL: perf record could not run"; cat "$W/perf.err"; exit 1; }
    # (perf prints a symbol table's versions, clock_gettime@@GLIBC_2.17; unwound never does: README)
    perf script -i "$W/perf.data" 2>/dev/null | sed 's/@@\{0,1\}[A-Z][A-Za-z0-9_.]*+0x/+0x/' >"$W/perf.txt"
    "$U" report -i "$W/perf.data" --script -o "$W/unwound.txt"
    diff "$W/perf.txt" "$W/unwound.txt" >"$W/diff.txt" || { echo "FAIL: differs from perf script"; head "$W/diff.txt"; exit 1; }
    "$U" report -i "$W/perf.data" --rows 3 | grep -E '^ +[0-9.]+% .* spin ' >/dev/null || { echo "FAIL: no spin in the table"; exit 1; }
    echo "$(wc -l <"$W/perf.txt") samples, identical to perf script"
    ;;
*) echo "unknown case $case"; exit 2 ;;
esac
