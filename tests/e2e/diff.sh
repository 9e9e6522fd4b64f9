#!/bin/sh
# unwound diff: two recordings of a program whose time moves from one function to another
# (the e2e program's calltree and shlib modes). The function table equals perf diff's on the
# same files (rows compared as sets: ties may be ordered differently); the folded differential
# lines carry each recording's own folded weights; the stacks table's shares are those of the
# folded stacks; the differential flame graph loads in headless Chromium with the grown
# function red and the shrunk one blue.
set -eu
B=${UW_BUILD:?}
S=${UW_SRC:?}
W=$B/tests/work/diff
rm -rf "$W"; mkdir -p "$W"
E=$B/tests/e2e_nofp
perf record -q -e cpu-clock -F 999 --call-graph dwarf -o "$W/a.data" -- "$E" calltree 0.5 >/dev/null 2>&1
perf record -q -e cpu-clock -F 999 --call-graph dwarf -o "$W/b.data" -- "$E" shlib 0.5 >/dev/null 2>&1
U="$B/unwound"
fail() { echo "FAIL: $*"; exit 1; }
# perf diff's table
# (perf's names from a symbol table carry their version, unwound's do not: README; a PLT entry's
# name keeps its @plt, which is not a version: lib_inner@plt on both sides)
perf diff "$W/a.data" "$W/b.data" 2>/dev/null | grep -v '^#' | grep -v '^$' | awk '{$1=$1; print}' |
    sed '/@plt$/!s/@@\{0,1\}[A-Za-z_][A-Za-z0-9_.]*$//' | sort >"$W/perf.txt"
"$U" diff "$W/a.data" "$W/b.data" -o "$W/functions.txt"
grep -v '^#' "$W/functions.txt" | grep -v '^$' | awk '{$1=$1; print}' | sort >"$W/uw.txt"
[ -s "$W/perf.txt" ] || fail "perf diff printed nothing"
diff -u "$W/perf.txt" "$W/uw.txt" || fail "the function table differs from perf diff's"
# perf diff's default file names
(cd "$W" && cp a.data perf.data.old && cp b.data perf.data && "$U" diff >default.txt && cmp default.txt functions.txt) ||
    fail "diff without arguments does not compare perf.data.old with perf.data"
# folded: each side's weights are that recording's folded stacks
"$U" diff "$W/a.data" "$W/b.data" --format folded -o "$W/diff.folded"
"$U" report -i "$W/a.data" --folded -o "$W/a.folded"
"$U" report -i "$W/b.data" --folded -o "$W/b.folded"
# stacks: each change is that of the stacks' shares of the samples
"$U" diff "$W/a.data" "$W/b.data" --format stacks --weight samples -o "$W/stacks.txt"
python3 - "$W" <<'PY' || fail "folded differential stacks or the stacks table"
import sys
W = sys.argv[1]
def load(p):
    d = {}
    for line in open(p):
        st, w = line.rstrip("\n").rsplit(" ", 1)
        d[st] = d.get(st, 0) + int(w)
    return d
a, b = load(f"{W}/a.folded"), load(f"{W}/b.folded")
da, db = {}, {}
for line in open(f"{W}/diff.folded"):
    st, x, y = line.rstrip("\n").rsplit(" ", 2)
    da[st], db[st] = int(x), int(y)
assert {k: v for k, v in da.items() if v} == a, "baseline weights"
assert {k: v for k, v in db.items() if v} == b, "new weights"
assert set(da) == set(a) | set(b)
print(f"folded: {len(da)} stacks, weights equal to each recording's folded stacks")
sa = {k: 100.0 * v / sum(a.values()) for k, v in a.items()}
sb = {k: 100.0 * v / sum(b.values()) for k, v in b.items()}
n = 0
for line in open(f"{W}/stacks.txt"):
    if line.startswith("#") or not line.strip():
        continue
    f = line.split()
    st = f[-1]
    want = sb.get(st, 0) - sa.get(st, 0)
    # (no change column for a stack whose share did not change)
    got = float(f[-2].rstrip("%")) if f[-2][0] in "+-" else 0.0
    assert abs(got - want) < 0.006, (st, got, want)
    n += 1
assert n == len(set(a) | set(b)), (n, len(set(a) | set(b)))
print(f"stacks: {n} rows, changes equal to the folded stacks' shares")
PY
# the same program twice, once without perf's build-id table (-B): its modules are other copies
# in the second recording, and a stack of both is still one row
perf record -q -B -e cpu-clock -F 999 --call-graph dwarf -o "$W/nb.data" -- "$E" calltree 0.3 >/dev/null 2>&1
perf record -q -e cpu-clock -F 999 --call-graph dwarf -o "$W/wb.data" -- "$E" calltree 0.3 >/dev/null 2>&1
"$U" diff "$W/nb.data" "$W/wb.data" --format folded -o "$W/same.folded"
dups=$(awk '{ $NF = ""; $(NF - 1) = ""; print }' "$W/same.folded" | sort | uniq -d | wc -l)
[ "$dups" = 0 ] || fail "diff --format folded: $dups stacks on two lines each (one per recording's copy of a module)"
grep -q "main;tree_a;tree_a2;spin [1-9][0-9]* [1-9][0-9]*$" "$W/same.folded" || fail "the stack main;tree_a;tree_a2;spin is not of both recordings"
# argument errors are usage errors
for bad in "--format nope" "--weight x" "--rows 0" "a b c"; do
    rc=0; "$U" diff $bad >/dev/null 2>&1 || rc=$?
    [ $rc = 2 ] || fail "diff $bad: exit $rc, not 2"
done
rc=0; "$U" diff "$W/a.data" "$W/nosuch.data" >/dev/null 2>"$W/err.txt" || rc=$?
[ $rc = 1 ] && grep -q nosuch "$W/err.txt" || fail "a missing recording: exit $rc: $(cat "$W/err.txt")"
# the differential flame graph, in Chromium
"$U" diff "$W/a.data" "$W/b.data" --format html -o "$W/diff.html"
# the same program recorded twice: its shares differ by sampling alone
"$U" diff "$W/nb.data" "$W/wb.data" --format html -o "$W/same.html"
export UW_TEST_NODE="${UW_TEST_NODE:-${XDG_CACHE_HOME:-$HOME/.cache}/unwound/test-node}"
ta=$(perf script -i "$W/a.data" -F period 2>/dev/null | awk '{ s += $1 } END { print s }')
tb=$(perf script -i "$W/b.data" -F period 2>/dev/null | awk '{ s += $1 } END { print s }')
cat >"$W/expect.json" <<J
{"diffs": [{"name": "calltree-shlib", "file": "$W/diff.html", "total": $tb, "base": $ta,
  "grew": ["_start", "__libc_start_main", "__libc_start_call_main", "main", "lib_entry"],
  "shrank": ["_start", "__libc_start_main", "__libc_start_call_main", "main", "tree_b"],
  "same": {"file": "$W/same.html", "stack": ["_start", "__libc_start_main", "__libc_start_call_main", "main", "tree_a"]}}]}
J
node "$S/tests/viewers/check.mjs" "$W"
echo "diff: ok"
