#!/bin/sh
# report -g caller|callee: the call graph under each function, compared block by block with
# perf report --stdio -g (perf --no-inline: the table's functions are symbols) on the same
# recordings: a program with known call trees, a C++ program with deep recursion, and a stripped
# executable that is not PIE (code without symbols: perf's graph shows its addresses, which are
# the file's, objdump's and gdb's; perf's table shows file offsets there, unwound's the same
# addresses as its graph, docs/design.md). Also --time START,END against perf script --time.
set -eu
B=${UW_BUILD:?}
S=${UW_SRC:?}
W=$B/tests/work/callgraph
rm -rf "$W"; mkdir -p "$W"
g++ -O2 -g -o "$W/cxxwork" "$S/tests/programs/cxxwork.cpp"
perf record -q -e cpu-clock -F 999 --call-graph dwarf -o "$W/calltree.data" -- "$B/tests/e2e_nofp" calltree 0.5 >/dev/null 2>&1
perf record -q -e cpu-clock -F 999 --call-graph dwarf -o "$W/cxx.data" -- "$W/cxxwork" 1 >/dev/null 2>&1
# (--sort sym: perf leaves out the first node of a graph whose ways all start there, "the
# same as the symbol"; with any other sort it prints it, _start in caller order, the function
# itself in callee order: SORT=dso,sym compares those)
SORT=sym
compare() { # recording, modes...
    d=$1; shift
    for m in "$@"; do
        # shellcheck disable=SC2086
        perf report -i "$W/$d.data" --stdio --no-inline $(echo "$m" | sed 's/-g \([a-z]*\)/-g \1,0.5/') --sort $SORT \
            2>/dev/null | grep -v "^#" >"$W/perf.txt"
        # shellcheck disable=SC2086
        "$B/unwound" report -i "$W/$d.data" $m --sort $SORT --rows 100000 | grep -v "^#" >"$W/uw.txt"
        python3 "$S/tests/e2e/callgraph-compare.py" "$W/perf.txt" "$W/uw.txt" "$d: $m" ${SHIFT:+"$SHIFT"}
    done
}
compare calltree "--no-children -g callee" "--no-children -g caller" "--children -g callee" "--children -g caller"
compare cxx "--no-children -g callee" "--no-children -g caller"
SORT=dso,sym
compare calltree "--no-children -g callee" "--no-children -g caller" "--children -g callee" "--children -g caller"
SORT=sym
# unwound's own layout (no --sort): the first node shown, as perf's default sort shows it
"$B/unwound" report -i "$W/calltree.data" --no-children -g caller >"$W/own.txt"
grep -q -- "---_start$" "$W/own.txt" || { grep -m3 -- "---" "$W/own.txt"; echo "FAIL: -g caller: the chains do not start at _start"; exit 1; }
! grep -q "total%" "$W/own.txt" || { echo "FAIL: --no-children prints a total% column"; exit 1; }
cat >"$W/nopie.c" <<'C'
static volatile unsigned long sink;
__attribute__((noinline)) static void callgraph_nopie_leaf(unsigned long n) { for (unsigned long i = 0; i < n; i++) sink += i; }
__attribute__((noinline)) static void callgraph_nopie_mid(unsigned long n) { callgraph_nopie_leaf(n); sink++; }
int main(void) { for (int k = 0; k < 40; k++) callgraph_nopie_mid(5000000); return 0; }
C
# linked at 0xb00000: its code's addresses are not its file offsets + 0x400000 (perf's table
# shows the offsets, 0x1117; its graph, objdump and gdb the addresses, 0xb01117)
cc -O1 -no-pie -fno-pie -Wl,-Ttext-segment=0xb00000 -o "$W/nopie" "$W/nopie.c" && strip "$W/nopie"
# the code segment's address less its file offset: what perf's table rows lack
set -- $(readelf -lW "$W/nopie" | grep -E '^ +LOAD .* R E ')
[ "$#" -ge 3 ] || { readelf -lW "$W/nopie"; echo "FAIL: no code segment in the test program"; exit 1; }
SHIFT=$(($3 - $2))
[ "$SHIFT" -ne $((0x400000)) ] || { echo "FAIL: the code segment lies where a usual link puts it"; exit 1; }
perf record -q -e cpu-clock -F 999 --call-graph dwarf --no-buildid-cache -o "$W/nopie.data" -- "$W/nopie" >/dev/null 2>&1
compare nopie "--no-children -g caller" "--no-children -g callee"
SHIFT=
grep -q "^ *0xb0[0-9a-f]\{4\}$" "$W/uw.txt" ||
    { echo "FAIL: the stripped executable's code is not shown at its addresses (0xb0....) in the graph"; exit 1; }
# one address per unnamed frame: each table row's address is one the graph shows
"$B/unwound" report -i "$W/nopie.data" --no-children -g caller --sort sym >"$W/one.txt"
rows=$(grep -E '^ +[0-9.]+% +\[\.\] 0x' "$W/one.txt" | sed 's/.*\[\.\] 0x0*/0x/' | sort -u)
[ -n "$rows" ] || { echo "FAIL: no rows of unnamed code"; exit 1; }
for a in $rows; do
    grep -q "^[ |-]*$a\$" "$W/one.txt" ||
        { grep '%' "$W/one.txt" | head -5; echo "FAIL: the table's address $a is not one the graph shows"; exit 1; }
done
# --percent-limit prunes branches as perf's graph threshold does
"$B/unwound" report -i "$W/cxx.data" --no-children -g callee --sort sym --percent-limit 5 >"$W/limit.txt"
! grep -q -- "--[0-4]\.[0-9][0-9]%--" "$W/limit.txt" || { echo "FAIL: --percent-limit 5 left a smaller branch"; exit 1; }
# --time: the middle of the recording, perf script's samples in the same range
set -- $(perf script -i "$W/cxx.data" -F time 2>/dev/null | tr -d ' :' | sort -n | awk '{ t[NR] = $1 } END { print t[int(NR/3)], t[int(2*NR/3)] }')
want=$(perf script -i "$W/cxx.data" --time "$1,$2" -F period 2>/dev/null | awk '{ s += $1 } END { print s }')
got=$("$B/unwound" report -i "$W/cxx.data" --time "$1,$2" --folded --weight period | awk '{ s += $NF } END { print s }')
[ "$want" = "$got" ] || { echo "FAIL: --time $1,$2: weight $got, perf script $want"; exit 1; }
echo "callgraph: ok (--time $1,$2: $got)"
