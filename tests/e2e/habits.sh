#!/bin/sh
# perf users' habits, against perf 6.1 where perf is the oracle: report reads ./perf.data unless
# standard input is a pipe; perf report's options work as perf's (-s, -G, -g/--call-graph forms,
# -q, -F, --header, --header-only) or are refused with one line naming what to use instead and
# the --help hint; a bad option in any subcommand prints one line and the hint; diff without
# recordings names the path once; no option of perf's is taken for another of unwound's whose
# name it begins (getopt's abbreviations: record --no-buildid was --no-buildid-cache).
set -eu
B=${UW_BUILD:?}
W=$B/tests/work/habits
rm -rf "$W"; mkdir -p "$W/empty"
cd "$W"
U=$B/unwound
fail() { echo "FAIL: $*"; exit 1; }
# (perf names a symbol table's versions, clock_gettime@@GLIBC_2.17; unwound never does: README)
norm() { grep '%' | grep -v '^#' | sed 's/ *$//; s/  */ /g; s/\(\[\.\] [^ @]*\)@@\{0,1\}[A-Z][A-Za-z0-9_.]*/\1/' | sort; }

perf record -q -e cpu-clock -F 999 --call-graph dwarf -o perf.data -- "$B/tests/e2e_nofp" calltree 0.3 \
    >/dev/null 2>perf.err || { cat perf.err; fail "perf record"; }
perf record -q -e cpu-clock -F 999 --call-graph dwarf -o - -- "$B/tests/e2e_nofp" calltree 0.2 \
    >pipe.data 2>perf.err || { cat perf.err; fail "perf record -o -"; }

# ---- the input without -i: ./perf.data unless standard input is a pipe (perf's rule)
"$U" report -i perf.data >want.txt
for stdin in /dev/null pipe.data; do
    rc=0; "$U" report <"$stdin" >got.txt 2>err.txt || rc=$?
    [ $rc = 0 ] || fail "report < $stdin: exit $rc ($(cat err.txt)), not ./perf.data read"
    cmp -s want.txt got.txt || fail "report < $stdin: not the report of ./perf.data"
done
# (perf does the same: it reads ./perf.data with /dev/null as standard input)
perf report --stdio </dev/null >perf-null.txt 2>&1 || fail "perf report < /dev/null: $(head -3 perf-null.txt)"
rc=0; cat pipe.data | "$U" report >got.txt 2>err.txt || rc=$?
[ $rc = 0 ] || fail "a pipe on standard input was not read: exit $rc ($(cat err.txt))"
"$U" report -i pipe.data >want-pipe.txt
# (the stack bytes a reader reads are not the same from a file and a pipe)
grep -v '^# input: .* of user stacks read' want-pipe.txt >a.txt; grep -v '^# input: .* of user stacks read' got.txt >b.txt
cmp -s a.txt b.txt || { diff a.txt b.txt | head -5; fail "report from a pipe: not the report of the stream"; }
# no perf.data and no pipe: the error names ./perf.data, once
rc=0; (cd empty && "$U" report </dev/null >/dev/null 2>../err.txt) || rc=$?
[ $rc = 1 ] && [ "$(grep -o 'perf\.data' err.txt | wc -l)" = 1 ] && [ "$(wc -l <err.txt)" = 1 ] ||
    fail "report without perf.data: exit $rc, '$(cat err.txt)' (one line naming perf.data once wanted)"
echo "input: ./perf.data with /dev/null or a file as standard input, the stream with a pipe"

# ---- diff without recordings: each path once
for args in "" "one.data"; do
    rc=0
    # shellcheck disable=SC2086
    (cd empty && "$U" diff $args >/dev/null 2>../err.txt) || rc=$?
    p=perf.data.old; [ -n "$args" ] && p=one.data
    [ $rc = 1 ] && [ "$(wc -l <err.txt)" = 1 ] && [ "$(grep -o "$p" err.txt | wc -l)" = 1 ] ||
        fail "diff $args without the files: exit $rc, '$(cat err.txt)' ($p once wanted)"
done
echo "diff: the missing recording named once: $(cat err.txt)"

# ---- perf report's options that work as in perf
"$U" report --no-children --sort dso >a.txt
"$U" report --no-children -s dso >b.txt
cmp -s a.txt b.txt || fail "-s is not --sort"
# -G (--inverted) is -g caller, the graph from the outermost caller in; as in perf
"$U" report --no-children --sort comm,dso,sym -g caller >caller.txt
grep -q -- '---' caller.txt || fail "-g caller drew no graph"
for g in "-G" "--inverted" "-g" "-gcaller" "-g caller" "--call-graph=caller" "--call-graph caller" \
    "-g graph,0.5,caller" "-g graph,0.5,caller,function,percent" "-g --stdio"; do
    # shellcheck disable=SC2086
    "$U" report --no-children --sort comm,dso,sym $g >got.txt 2>err.txt || fail "$g: $(cat err.txt)"
    cmp -s caller.txt got.txt || fail "report $g is not -g caller"
done
perf report --stdio --no-children --sort comm,dso,sym -G 2>/dev/null | grep -v '^#' >perf-G.txt
perf report --stdio --no-children --sort comm,dso,sym -g caller 2>/dev/null | grep -v '^#' >perf-caller.txt
cmp -s perf-G.txt perf-caller.txt || fail "perf 6.1's -G is not its -g caller here: the oracle changed"
"$U" report --no-children --sort comm,dso,sym -g callee >callee.txt
"$U" report --no-children --sort comm,dso,sym --call-graph=callee >got.txt
cmp -s callee.txt got.txt || fail "--call-graph=callee is not -g callee"
cmp -s callee.txt caller.txt && fail "-g callee draws what -g caller draws"
"$U" report --no-children --sort comm,dso,sym -g none >none.txt
"$U" report --no-children --sort comm,dso,sym >plain.txt
cmp -s none.txt plain.txt || fail "-g none is not the table without a graph"
echo "-s, -G, -g and --call-graph forms: as perf reads them"

# -q: the rows alone, as perf report -q prints them (the same rows)
"$U" report -q --no-children --sort comm,dso,sym --rows 1000 >q.txt 2>qerr.txt
[ -s q.txt ] && ! grep -q '^#' q.txt && [ ! -s qerr.txt ] || fail "-q: '#' lines or messages: $(head -3 q.txt qerr.txt)"
"$U" report --no-children --sort comm,dso,sym --rows 1000 | grep -v '^#' | grep -v '^$' >rows.txt
cmp -s q.txt rows.txt || fail "-q changed the rows"
perf report -q --stdio --no-children --sort comm,dso,sym -g none 2>/dev/null >perf-q.txt
grep -q '^#' perf-q.txt && fail "perf report -q printed '#' lines: the oracle changed"
norm <perf-q.txt >a.txt; norm <q.txt >b.txt
cmp -s a.txt b.txt || { diff a.txt b.txt | head; fail "-q: other rows than perf report -q"; }
# the default table too
"$U" report -q | grep -q -e '^#' -e 'self%' -e 'unwinding' && fail "-q: the default table kept its headers"
# -F/--fields: the share columns, then sort keys
"$U" report -F overhead,comm,sym --rows 1000 >f.txt
"$U" report --no-children --sort comm,sym --rows 1000 >s.txt
cmp -s f.txt s.txt || fail "-F overhead,comm,sym is not --no-children --sort comm,sym"
# (perf lists the functions without samples of their own too, at 0.00%, unless --no-children)
perf report --stdio --no-children -F overhead,comm,sym -g none 2>/dev/null >perf-f.txt
norm <perf-f.txt >a.txt; norm <f.txt >b.txt
cmp -s a.txt b.txt || { diff a.txt b.txt | head; fail "-F overhead,comm,sym: other rows than perf's"; }
"$U" report --fields overhead_children,overhead,sym >f.txt
grep -q '^# Children  *Self  Symbol' f.txt || fail "-F overhead_children,overhead: no Children and Self columns"
# --header: accepted (the table starts with the header); --header-only: the header alone
"$U" report --header >h.txt
cmp -s h.txt want.txt || fail "--header changed the report"
"$U" report --header-only >ho.txt
grep -v -q '^#' ho.txt && fail "--header-only printed more than the header"
grep -q "^# recorded on $(hostname)" ho.txt && grep -q 'e2e_nofp calltree' ho.txt && grep -q "cpu-clock" ho.txt ||
    fail "--header-only: $(cat ho.txt)"
perf report --header-only 2>/dev/null | grep -q "hostname : $(hostname)" || fail "perf report --header-only: the oracle changed"
echo "-q, -F, --header, --header-only: as perf report"

# ---- perf report's options unwound has not: refused, one line naming what to use, and the hint
refused() { # args...: exit 2, two lines: what is not supported and what instead, the --help hint
    rc=0; "$U" report "$@" >out.txt 2>err.txt || rc=$?
    [ $rc = 2 ] || fail "report $*: exit $rc, not a usage error"
    [ ! -s out.txt ] && [ "$(wc -l <err.txt)" = 2 ] || fail "report $*: not one line and the hint: $(cat err.txt)"
    sed -n 1p err.txt | grep -q -e "is not supported: ." -e "takes " || fail "report $*: $(sed -n 1p err.txt)"
    sed -n 2p err.txt | grep -q "unwound report --help" || fail "report $*: no --help hint: $(cat err.txt)"
}
n=0
for a in -n --show-nr-samples "--dsos libc.so.6" "-d x" "--symbols main" "-S main" "--comms sh" "-c sh" -T \
    "--max-stack 3" --tui --gtk --stats --tasks --mmaps -D -I -U "-t ," --hierarchy "-C 0" "--percentage absolute" \
    "-g fractal" "-g flat" "-g folded" "-g caller,0.3" "-g address" "-g dwarf" "--call-graph=graph,0.5,caller,address" \
    "-F sym" "-F sym,overhead" "-F overhead,period" --ns --show-mmap-events; do
    # shellcheck disable=SC2086
    refused $a
    n=$((n + 1))
done
refused --script -F comm,tid
echo "$n of perf report's and perf script's options refused with what to use instead"

# ---- a bad option in every subcommand: one line and the hint, nothing on standard output
for cmd in report record inject diff; do
    for a in --no-such-option -Z "--output" "--stdio=1"; do
        [ "$a" = --stdio=1 ] && [ $cmd != report ] && continue
        rc=0; "$U" $cmd $a >out.txt 2>err.txt || rc=$?
        [ $rc = 2 ] || fail "$cmd $a: exit $rc"
        [ ! -s out.txt ] && [ "$(wc -l <err.txt)" = 2 ] ||
            fail "$cmd $a: $(wc -l <err.txt) lines, not one and the hint: $(head -5 err.txt)"
        case $a in
        --output) want="--output needs a value" ;;
        --stdio=1) want="--stdio takes no value" ;;
        *) want="unknown option '$a'" ;;
        esac
        grep -q -- "^unwound $cmd: .*$want" err.txt || fail "$cmd $a: $(sed -n 1p err.txt) ('$want' wanted)"
        grep -q "unwound $cmd --help" err.txt || fail "$cmd $a: no hint"
    done
done
rc=0; "$U" report --no >/dev/null 2>err.txt || rc=$?
[ $rc = 2 ] && grep -q "ambiguous: --no-fp" err.txt || fail "an ambiguous option: $(cat err.txt)"
rc=0; "$U" inject >/dev/null 2>err.txt || rc=$?
[ $rc = 2 ] && [ "$(wc -l <err.txt)" = 2 ] || fail "inject without files: $(cat err.txt)"
rc=0; "$U" nosuchcommand >/dev/null 2>err.txt || rc=$?
[ $rc = 2 ] && [ "$(wc -l <err.txt)" = 1 ] && grep -q "unknown command 'nosuchcommand'" err.txt ||
    fail "an unknown command: $(cat err.txt)"
echo "bad options: one line and the hint in report, record, inject and diff"
# perf's long options: each one unwound has not is refused, never taken as an abbreviation
for cmd in report record inject diff; do
    perf $cmd -h 2>&1 | grep -oE -- "--[a-z][a-z0-9-]*" | sort -u >perf-opts.txt
    "$U" $cmd --help 2>&1 | grep -oE -- "--[a-z][a-z0-9-]*" | sort -u >uw-opts.txt
    n=0
    while read -r o; do
        grep -qx -- "$o" uw-opts.txt && continue
        rc=0
        case $cmd in
        record) "$U" record "$o" -o opt.data -- true >/dev/null 2>err.txt || rc=$? ;;
        diff) "$U" diff "$o" perf.data perf.data -o opt.txt >/dev/null 2>err.txt || rc=$? ;;
        *) "$U" $cmd "$o" -i perf.data -o opt.data >/dev/null 2>err.txt || rc=$? ;;
        esac
        if [ $rc = 0 ]; then
            # (an option unwound has without listing it, as --demangle: fine; the beginning of
            # one it lists, taken for it: not)
            ! grep -q -- "^$o" uw-opts.txt || fail "$cmd $o: perf's option taken for $(grep -- "^$o" uw-opts.txt | head -1)"
        fi
        n=$((n + 1))
    done <perf-opts.txt
    echo "$cmd: $n options of perf's that unwound does not list: none taken for another"
done
for o in --no-buildid -B; do
    rc=0; "$U" record $o -o opt.data -- true >/dev/null 2>err.txt || rc=$?
    [ $rc = 2 ] && grep -q "B/--no-buildid .* is not supported" err.txt || fail "record $o: $(cat err.txt)"
done
"$U" report --no-chil -i perf.data >/dev/null || fail "an abbreviation (--no-chil) refused"
