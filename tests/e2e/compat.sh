#!/bin/sh
# What a perf user relies on, recorded with perf at test time and checked against perf itself:
#   compressed  perf record -z (file and pipe mode): the same samples as the records it holds
#               written uncompressed, and as perf script
#   v1          the first file format (PERFFILE, 72-byte header): read as perf reads it
#   skipped     records of types unwound does not use are counted by type
#   events      two events: a table section per event with perf report's counts, --event for
#               every output, folded stacks refuse to add two events up
#   weights     a frequency-mode recording whose periods vary: shares by period as perf report
#   sort        --sort keys, --percent-limit, [k]/[.], code without symbols: rows as perf report
#   honest      callchains read from a file are judged, or stated by the file that unwound wrote
#   headers     record and inject write the features perf writes; perf report --time works
#   pipeout     -o - writes a pipe-mode stream perf reads
#   dir         perf record --threads writes a directory (its header in data, each recording
#               thread's records in data.N): the samples of every part, in perf script's order;
#               -z too; inject and diff read it; a directory that is not one says so
set -eu
case=$1
B=${UW_BUILD:?}
S=${UW_SRC:?}
W=$B/tests/work/compat-$case
rm -rf "$W"; mkdir -p "$W"
cd "$W"
U=$B/unwound
P="python3 $S/tests/e2e/perfdata.py"
E=$B/tests/e2e_nofp
fail() { echo "FAIL: $*"; exit 1; }
# The samples of one event as perf counts them. (perf report's "# Samples:" line abbreviates
# a count of 1,000 or more, "1K", so it is not the oracle: on a machine whose sample rate has not
# been throttled yet, kernel.perf_event_max_sample_rate 100,000, a program gets over 1,000.
# perf script names each sample's event, with its modifiers: "cpu-clock:ppp:".)
perf_samples() {
    perf script -i "$1" -F event 2>/dev/null |
        awk -v ev="$2" '{ e = $1; sub(/:$/, "", e); sub(/:[ukhpPGHIS]+$/, "", e); if (e == ev) n++ } END { print n + 0 }'
}
rec() { perf record -q "$@" >program.out 2>perf.err || { cat perf.err; fail "perf record could not run"; }; }
# perf report's share of a row (its first '%' line matching a pattern)
perf_share() { grep -E "$1" "$2" | head -n 1 | awk '{ sub("%", "", $1); print $1 }'; }

case $case in
compressed)
    rec -z -e cpu-clock -F 999 --call-graph dwarf -o z.data -- "$E" calltree 0.5
    $P types z.data | grep -q '^81 ' || fail "perf record -z wrote no COMPRESSED records"
    $P decompress z.data plain.data
    $P types plain.data | grep -q '^81 ' && fail "the uncompressed twin still has COMPRESSED records"
    "$U" report -i z.data --script -o z.txt
    "$U" report -i plain.data --script -o plain.txt
    n=$(grep -c 'cpu-clock: $' z.txt || true)
    [ "$n" -ge 300 ] || fail "only $n samples read from the compressed recording"
    cmp z.txt plain.txt || fail "compressed and uncompressed records give different samples"
    perf script -i z.data --no-inline >perf.txt 2>/dev/null
    "$U" report -i z.data --script --no-inline -o unwound.txt
    python3 "$S/tests/e2e/compare-script.py" perf.txt unwound.txt --roots _start
    "$U" report -i z.data | grep -q "^# compressed records: " || fail "the summary does not say the records were compressed"
    # pipe mode
    perf record -q -z -e cpu-clock -F 999 --call-graph dwarf -o - -- "$E" calltree 0.5 >zpipe.data 2>perf.err
    "$U" report -i - --script --no-inline <zpipe.data >unwound-pipe.txt
    perf script -i - --no-inline <zpipe.data >perf-pipe.txt 2>/dev/null
    python3 "$S/tests/e2e/compare-script.py" perf-pipe.txt unwound-pipe.txt --roots _start
    echo "compressed: $n samples, identical to the uncompressed records and to perf script (file and pipe)"
    ;;
v1)
    rec -e cpu-clock -F 999 --call-graph dwarf -o v2.data -- "$E" calltree 0.4
    $P v1 v2.data v1.data
    [ "$(head -c 8 v1.data)" = PERFFILE ] || fail "not a PERFFILE header"
    perf script -i v1.data --no-inline >perf.txt 2>/dev/null
    # (a file of the first format says nothing of its kernel, neither build-id nor release: its
    # kernel frames are named from a file given, this machine's)
    "$U" report -i v1.data --script --no-inline --kallsyms /proc/kallsyms -o v1.txt
    "$U" report -i v2.data --script --no-inline -o v2.txt
    cmp v1.txt v2.txt || fail "the first format reads differently"
    python3 "$S/tests/e2e/compare-script.py" perf.txt v1.txt --roots _start
    echo "v1: $(grep -c 'cpu-clock: $' v1.txt) samples, as perf reads them"
    ;;
skipped)
    rec -e cpu-clock -F 999 --switch-events --call-graph dwarf -o sw.data -- "$E" threads 0.4
    n=$($P types sw.data | awk '$1 == 14 || $1 == 15 { s += $2 } END { print s + 0 }')
    [ "$n" -gt 0 ] || fail "no SWITCH records in the recording"
    "$U" report -i sw.data >report.txt
    grep "^# records not used:" report.txt
    got=$(sed -n 's/^# records not used:.* \([0-9]*\) SWITCH\(_CPU_WIDE\)\{0,1\}\b.*/\1/p' report.txt)
    [ "$got" = "$n" ] || fail "SWITCH records: $n in the file, the summary says '$got'"
    echo "skipped: $n SWITCH records counted by type"
    ;;
events)
    rec -e cpu-clock,page-faults -F 999 --call-graph dwarf -o ev.data -- "$E" calltree 0.5
    perf report -i ev.data --stdio --no-children 2>/dev/null >perf-report.txt
    "$U" report -i ev.data >report.txt
    for ev in cpu-clock page-faults; do
        want=$(perf_samples ev.data "$ev")
        got=$(sed -n "s/^# Samples: \([0-9]*\) of event '$ev'$/\1/p" report.txt)
        [ -n "$want" ] && [ "$want" = "$got" ] || fail "$ev: perf script counts '$want' samples, unwound '$got'"
        grep -q "^# unwinding of '$ev': $got samples" report.txt || fail "no summary of $ev"
        "$U" report -i ev.data --event "$ev" --script -o "$ev.txt"
        n=$(grep -c ": $" "$ev.txt"); m=$(grep -c " $ev: $" "$ev.txt")
        [ "$n" = "$got" ] && [ "$m" = "$got" ] || fail "--event $ev --script: $n samples, $m of the event, $got expected"
        "$U" report -i ev.data --event "$ev" --folded -o "$ev.folded"
        sum=$(awk '{ s += $NF } END { print s }' "$ev.folded")
        [ "$sum" = "$got" ] || fail "--event $ev --folded adds up to $sum, not $got"
        echo "$ev: $got samples, as perf report"
    done
    rc=0; "$U" report -i ev.data --folded >/dev/null 2>err.txt || rc=$?
    [ $rc = 2 ] && grep -q "choose it with --event" err.txt || fail "folded stacks of two events were not refused (exit $rc)"
    rc=0; "$U" report -i ev.data --event nosuch >/dev/null 2>err.txt || rc=$?
    [ $rc = 2 ] || fail "an unknown --event was accepted (exit $rc)"
    ;;
weights)
    cc -O2 -g -o faults "$S/tests/programs/faults.c"
    rec -e page-faults -F 2000 --call-graph dwarf -o pf.data -- ./faults 1.2
    perf report -i pf.data --stdio --no-children --sort sym 2>/dev/null >perf-report.txt
    "$U" report -i pf.data --no-children --sort sym >period.txt
    "$U" report -i pf.data --no-children --sort sym --weight samples >samples.txt
    for fn in fast_faults slow_faults; do
        p=$(perf_share "\] $fn\$" perf-report.txt)
        u=$(perf_share "\] $fn\$" period.txt)
        c=$(perf_share "\] $fn\$" samples.txt)
        echo "$fn: perf report $p%, unwound $u% (by sample count: $c%)"
        awk -v a="$p" -v b="$u" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && d <= 0.1) }' ||
            fail "$fn: $u% is not perf report's $p%"
    done
    # the test can fail: by sample count the shares differ
    p=$(perf_share "\] fast_faults\$" period.txt); c=$(perf_share "\] fast_faults\$" samples.txt)
    awk -v a="$p" -v b="$c" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d > 5) }' ||
        fail "periods and sample counts agree here ($p% and $c%): the recording does not test weights"
    ;;
sort)
    rec -e cpu-clock -F 999 --call-graph dwarf -o s.data -- "$E" calltree 0.6
    for keys in comm,dso,sym sym pid dso,sym srcline; do
        # (perf's header may carry a random '# (Tip: ... 5% ...)': header lines are left out)
        # (perf names a symbol table's versions, clock_gettime@@GLIBC_2.17; unwound never does: README)
        perf report -i s.data --stdio --no-children --sort "$keys" -g none 2>/dev/null | grep '%' | grep -v '^#' |
            sed 's/ *$//; s/  */ /g; s/\(\[\.\] [^ @]*\)@@\{0,1\}[A-Z][A-Za-z0-9_.]*/\1/' >"perf-$keys.txt"
        "$U" report -i s.data --stdio --no-children --sort "$keys" --rows 1000 | grep '%' | grep -v '^#' |
            sed 's/ *$//; s/  */ /g' >"unwound-$keys.txt"
        # the same rows (rows of equal shares may come in another order)
        sort "perf-$keys.txt" >a.txt; sort "unwound-$keys.txt" >b.txt
        diff a.txt b.txt >/dev/null || { diff a.txt b.txt | head; fail "--sort $keys differs from perf report"; }
        head -n 1 "perf-$keys.txt" >a.txt; head -n 1 "unwound-$keys.txt" >b.txt
        cmp -s a.txt b.txt || fail "--sort $keys: another first row than perf report's"
        echo "--sort $keys: $(wc -l <"perf-$keys.txt") rows as perf report"
    done
    # --children: total, then self (perf --no-inline: its inline expansion made two rows of one
    # function, spin at 58.22% and 40.10% of 98.32%, once its build-id cache held the running
    # kernel's vdso; unwound's rows are perf's without it)
    perf report -i s.data --stdio --children --no-inline --sort sym -g none 2>/dev/null | grep '%' | grep -v '^#' | sed 's/ *$//; s/  */ /g' >perf-ch.txt
    "$U" report -i s.data --children --sort sym --rows 1000 | grep '%' | grep -v '^#' | sed 's/ *$//; s/  */ /g' >unwound-ch.txt
    # (rows of equal shares may come in another order; perf names glibc's __libc_start_main by
    # DWARF, "__libc_start_main_impl (inlined)", unwound by its symbol: see README)
    # the first rows, down to a share no lower row has (rows tied at the cut come in any order)
    cut=$(grep -v __libc_start_main perf-ch.txt | sed -n 6p | awk '{print $1}')
    keep() { grep -v __libc_start_main "$1" | awk -v c="${cut:-0%}" 'NR <= 5 && $1 + 0 > c + 0' | sort; }
    keep perf-ch.txt >a.txt
    keep unwound-ch.txt >b.txt
    cmp a.txt b.txt || { diff a.txt b.txt; fail "--children differs from perf report"; }
    # --percent-limit leaves out the rows under it
    "$U" report -i s.data --no-children --sort sym --percent-limit 5 | grep '%' | grep -v '^#' >limited.txt
    awk '{ sub("%", "", $1); if ($1 + 0 < 5) exit 1 }' limited.txt || fail "--percent-limit kept a row under it"
    [ "$(wc -l <limited.txt)" -ge 1 ] || fail "--percent-limit left nothing"
    # code without symbols: a row per address, as perf report shows it
    printf 'static volatile unsigned long x;\n__attribute__((noinline)) static void hot(void) { for (unsigned long i = 0; i < 200000000; i++) x += i; }\nint main(void) { hot(); return 0; }\n' >s.c
    cc -O1 -o stripped s.c && strip stripped
    rec -e cpu-clock -F 999 --call-graph dwarf -o st.data -- ./stripped
    perf report -i st.data --stdio --no-children --sort dso,sym -g none 2>/dev/null | grep '%' | grep -v '^#' | grep stripped |
        sed 's/ *$//; s/  */ /g' >perf-st.txt
    "$U" report -i st.data --no-children --sort dso,sym --rows 1000 | grep '%' | grep stripped |
        sed 's/ *$//; s/  */ /g' >unwound-st.txt
    grep -q '\[\.\] 0x0000' unwound-st.txt || fail "no address rows for the stripped program"
    sort perf-st.txt >a.txt; sort unwound-st.txt >b.txt
    diff a.txt b.txt || fail "unnamed code shown otherwise than perf report shows it"
    "$U" report -i st.data --rows 3 | grep -E '\[\.\] 0x0{8}' >/dev/null || fail "the default table does not show addresses"
    echo "unnamed code: rows by address as perf report"
    # code without a line table (crtstuff.c's __do_global_dtors_aux, at exit): perf names its
    # source line from the symbol table's file, FILE:0, as addr2line does (the sort above failed
    # once on a sample there); a uprobe puts a sample there every time, in a copy of the program
    # of its own (no other test's process meets the probe)
    cp "$E" ./dtors
    a=$(nm dtors | awk '$3 == "__do_global_dtors_aux" { print $1 }')
    [ -n "$a" ] || fail "no __do_global_dtors_aux in the test program"
    ev=uwdt$$
    perf probe -q -x "$W/dtors" -a "$ev=0x$(printf %x $((0x$a + 4)))" 2>perf.err || { cat perf.err; fail "perf probe"; }
    trap 'perf probe -q -d "probe_dtors:$ev" 2>/dev/null || true' EXIT
    rec -e "probe_dtors:$ev" --call-graph dwarf -o dt.data -- ./dtors calltree 0.05
    perf probe -q -d "probe_dtors:$ev" 2>/dev/null || true
    # (-w: perf sizes the column by the header alone when there is one row, "crtstuff.c:")
    perf report -i dt.data --stdio --no-children --sort srcline -g none -w 8,60 2>/dev/null | grep '%' | grep -v '^#' |
        sed 's/ *$//; s/  */ /g' >perf-dt.txt
    "$U" report -i dt.data --no-children --sort srcline | grep '%' | grep -v '^#' | sed 's/ *$//; s/  */ /g' >unwound-dt.txt
    [ "$(cat perf-dt.txt)" = " 100.00% crtstuff.c:0" ] || { cat perf-dt.txt; fail "perf report's row is not crtstuff.c:0"; }
    diff perf-dt.txt unwound-dt.txt || fail "code without a line table: another srcline than perf report's"
    perf script -i dt.data -F ip,sym,srcline 2>/dev/null | sed -n 3p >perf-dts.txt
    "$U" report -i dt.data --script --srcline | sed -n 3p >unwound-dts.txt
    diff perf-dts.txt unwound-dts.txt || fail "--script --srcline: another line than perf script's"
    echo "code without a line table: $(cat unwound-dt.txt) as perf report and perf script"
    ;;
honest)
    # a stack copy too small for the deep recursion: some samples stop early (copies, not the
    # kernel's walk, which reaches the root whatever the copy's size)
    "$U" record --unwind copy --call-graph dwarf,2048 -o rec.data -- "$E" recursion 0.8 >/dev/null 2>rec.err
    cat rec.err
    said=$(sed -n 's/.* with a user stack (\([0-9.]*\)% unwound to a root).*/\1/p' rec.err)
    "$U" report -i rec.data >report.txt
    file=$(sed -n 's/.*, \([0-9.]*\)% reach a root frame.*/\1/p' report.txt)
    [ -n "$said" ] && [ "$said" = "$file" ] || fail "the recorder said $said%, the report of its file $file%"
    awk -v a="$file" 'BEGIN { exit !(a < 99.9) }' || fail "no sample stopped early ($file%): the test proves nothing"
    grep -q "callchains read from the file: [1-9][0-9]* with the stop reason the file states, 0 judged" report.txt ||
        fail "the file's stop reasons were not used"
    # the same from inject, and from a pipe-mode stream (no section there: judged by the frames)
    rec -e cpu-clock -F 999 --call-graph dwarf,2048 -o dwarf.data -- "$E" recursion 0.8
    "$U" report -i dwarf.data >direct.txt
    want=$(sed -n 's/.*, \([0-9.]*\)% reach a root frame.*/\1/p' direct.txt)
    "$U" inject -i dwarf.data -o inj.data 2>/dev/null
    "$U" inject -i dwarf.data -o - 2>/dev/null >pipe.data
    # (judged by its frames, a callchain that ends in ld.so's _start or _dl_start_user, a sample
    # taken while ld.so starts the program, is "completeness unknown": that code has no CFI, and
    # unwinding ends there on the zero frame pointer, a register the callchain does not carry.
    # CI saw 1 such sample of 799: it counts as a root in the original, unknown in the pipe.)
    nall=$(sed -n 's/^# unwinding: \([0-9]*\) samples,.*/\1/p' direct.txt)
    count() { awk -v p="$1" -v n="$nall" 'BEGIN { printf "%d", p * n / 100 + 0.5 }'; }
    for f in inj pipe; do
        "$U" report -i $f.data >$f.txt
        got=$(sed -n 's/.*, \([0-9.]*\)% reach a root frame.*/\1/p' $f.txt)
        unknown=0
        [ $f = inj ] || unknown=$(sed -n 's/.*recorded callchain, completeness unknown: \([0-9]*\).*/\1/p' $f.txt)
        [ "$(( $(count "$got") + ${unknown:-0} ))" = "$(count "$want")" ] && [ "${unknown:-0}" -le 3 ] ||
            fail "$f: $got% reach a root (${unknown:-0} unknown), unwinding the original: $want% of $nall"
    done
    grep -q "0 with the stop reason the file states, [1-9][0-9]* judged" pipe.txt || fail "the pipe's callchains were not judged"
    # perf's own frame-pointer callchains: judged by their outermost frame, not counted complete
    rec -e cpu-clock -F 999 -g -o fp.data -- "$B/tests/e2e_fp" calltree 0.5
    "$U" report -i fp.data >fp.txt
    grep "reach a root" fp.txt
    grep -q "judged by their outermost frame" fp.txt || fail "perf -g callchains were not judged"
    echo "honest: recorder $said%, its file $file%; inject and pipe $want%, as unwinding the original"
    ;;
headers)
    feats() { $P features "$1" | tr '\n' ' '; }
    rec -k 1 -e cpu-clock -F 999 --call-graph dwarf -o perf.data -- "$E" calltree 0.4
    "$U" record -q -e cpu-clock -o unwound.data -- "$E" calltree 0.4 >/dev/null 2>&1
    p=$(feats perf.data); u=$(feats unwound.data)
    echo "perf record -k 1: $p"
    echo "unwound record:   $u"
    # BRANCH_STACK and friends are absent from both; unwound adds its stop reasons (250)
    [ "$u" = "${p}250 " ] || fail "record writes other features than perf record"
    "$U" inject -i perf.data -o inj.data 2>/dev/null
    i=$(feats inj.data)
    echo "inject:           $i"
    [ "$i" = "${p}250 " ] || fail "inject drops or adds features"
    perf report --header-only -I -i perf.data 2>/dev/null | grep -v "^# \(captured on\|data offset\|data size\|feat offset\|event :\)" >h-perf.txt
    perf report --header-only -I -i inj.data 2>/dev/null | grep -v "^# \(captured on\|data offset\|data size\|feat offset\|event :\)" >h-inj.txt
    diff h-perf.txt h-inj.txt || fail "inject's header reads otherwise in perf report"
    for f in perf unwound inj; do
        perf report -i $f.data --stdio --time 10%/1 >time-$f.txt 2>&1 || { head time-$f.txt; fail "perf report --time 10%/1 fails on $f.data"; }
        grep -q "time slices: 10%/1" time-$f.txt || fail "$f.data: no time slice"
    done
    echo "headers: record and inject write perf's features"
    ;;
pipeout)
    rec -e cpu-clock -F 999 --call-graph dwarf -o dwarf.data -- "$E" calltree 0.4
    "$U" inject -i dwarf.data -o - 2>/dev/null | perf report -i - --stdio --no-children --sort sym 2>/dev/null >perf-report.txt
    [ -e ./- ] && fail "inject -o - wrote a file named '-'"
    grep -q '\[\.\] spin' perf-report.txt || fail "perf report -i - does not read inject -o -"
    # (perf prints a symbol table's versions, unwound does not: README)
    "$U" inject -i dwarf.data -o - 2>/dev/null | perf script -i - --no-inline 2>/dev/null |
        sed 's/@@\{0,1\}[A-Z][A-Za-z0-9_.]*+0x/+0x/' >perf-pipe.txt
    "$U" report -i dwarf.data --script --no-inline -o unwound.txt
    cmp perf-pipe.txt unwound.txt || fail "perf script on inject -o - differs"
    "$U" record -q -o - -- "$E" calltree 0.4 2>/dev/null | perf script -i - --no-inline >rec-pipe.txt 2>/dev/null
    [ -e ./- ] && fail "record -o - wrote a file named '-'"
    grep -q "tree_a2" rec-pipe.txt || fail "perf script does not read record -o -"
    echo "pipeout: inject and record write pipe-mode streams perf reads"
    ;;
dir)
    # a process pinned to each of the first and the last CPU: one part each (--threads=cpu)
    last=$(($(nproc) - 1))
    work="taskset -c 0 '$E' calltree 0.3 & taskset -c $last '$E' calltree 0.3; wait"
    roots="_start,clone3,__clone3,clone,__clone"
    for z in "" -z; do
        rec --threads=cpu $z -e cpu-clock -F 999 --call-graph dwarf -o "t$z.data" -- sh -c "$work"
        [ -d "t$z.data" ] && [ -f "t$z.data/data" ] || fail "perf record --threads $z wrote no directory"
        parts=$(find "t$z.data" -name 'data.*' -size +0 | wc -l)
        [ "$last" = 0 ] || [ "$parts" -ge 2 ] || fail "--threads=cpu $z: $parts part(s) with records, 2 expected (one per CPU)"
        perf script -i "t$z.data" --no-inline >"perf$z.txt" 2>/dev/null
        "$U" report -i "t$z.data" --script --no-inline -o "unwound$z.txt"
        # the programs' stacks frame for frame (sh's and taskset's own, in stripped binaries,
        # have no named root to judge them by)
        awk -v RS= -v ORS='\n\n' '/^e2e_nofp /' "perf$z.txt" >perf-prog.txt
        awk -v RS= -v ORS='\n\n' '/^e2e_nofp /' "unwound$z.txt" >unwound-prog.txt
        python3 "$S/tests/e2e/compare-script.py" perf-prog.txt unwound-prog.txt --roots "$roots"
        np=$(grep -c 'cpu-clock' "perf$z.txt" || true)
        nu=$(grep -c 'cpu-clock' "unwound$z.txt" || true)
        [ "$np" = "$nu" ] && [ "$nu" -gt 0 ] || fail "--threads $z: unwound read $nu samples, perf script $np"
        # the samples' times in order, as perf's ordered events put them
        grep 'cpu-clock' "unwound$z.txt" | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) print $i }' >times.txt
        sort -n -c times.txt || fail "--threads $z: samples not in time order"
        echo "dir $z: $nu samples from $parts parts, as perf script has them"
    done
    # the parts' records in one file, time-ordered by the same queue: the same report
    $P undir t.data one.data
    "$U" report -i one.data --script --no-inline -o one.txt
    cmp one.txt unwound.txt || fail "the directory reads differently from its records in one file"
    np=$(grep -c 'cpu-clock' perf.txt || true)
    # inject reads it and writes one file perf reads; diff reads it
    "$U" inject -i t.data -o inj.data
    ni=$(perf script -i inj.data 2>/dev/null | grep -c 'cpu-clock' || true)
    [ "$ni" = "$np" ] || fail "inject of the directory: perf script reads $ni samples, $np expected"
    "$U" diff t.data t-z.data -o diff.txt || fail "diff of two directories"
    # not a perf.data directory; a part that is no regular file (a FIFO: never opened, so no wait)
    mkdir -p plain
    if "$U" report -i plain >out.txt 2>err.txt; then fail "report -i of an empty directory succeeded"; fi
    grep -q "not a perf.data directory" err.txt || { cat err.txt; fail "an empty directory: no message saying why"; }
    cp -r t.data fifo.data && mkfifo fifo.data/data.7
    if timeout 20 "$U" report -i fifo.data >out.txt 2>err.txt; then fail "a FIFO part was read"; fi
    grep -q "data.7: not a regular file" err.txt || { cat err.txt; fail "a FIFO part: no message saying why"; }
    echo "dir: inject and diff read it; an empty directory and a FIFO part are refused, saying why"
    ;;
*) echo "unknown case $case"; exit 2 ;;
esac
