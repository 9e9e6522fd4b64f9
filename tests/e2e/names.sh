#!/bin/sh
# Hostile names in every output of `unwound report`: a program built here whose function names
# are overwritten in its symbol table (names.py: "<!--<script>", ';', line breaks, a surrogate,
# overlong forms, code points past U+10FFFF, U+2028) and a recording synthesized from it whose
# threads are named likewise. Folded stacks parse as flamegraph.pl parses them (one line per
# stack, ';' in a name as ':'); --script and the table keep one line per frame or row; speedscope
# and the flame graph page's data are valid JSON in valid UTF-8 (no '<' in the page's data); the
# page loads in headless Chromium and shows the names; go tool pprof reads the profile, and its
# strings are UTF-8. And threads without a COMM are named as perf script names them (the idle
# task swapper, others :TID).
set -eu
B=${UW_BUILD:?UW_BUILD must point at the build directory}
S=${UW_SRC:?UW_SRC must point at the source directory}
W=$B/tests/work/names
rm -rf "$W"; mkdir -p "$W"
command -v go >/dev/null || { echo "FAIL: go is not installed (scripts/install-deps installs golang-go)"; exit 1; }
export UW_TEST_NODE="${UW_TEST_NODE:-${XDG_CACHE_HOME:-$HOME/.cache}/unwound/test-node}"
[ -d "$UW_TEST_NODE/node_modules/puppeteer-core" ] ||
    { echo "FAIL: the viewer test packages are not in $UW_TEST_NODE (scripts/install-deps check installs them)"; exit 1; }
command -v chromium >/dev/null || { echo "FAIL: chromium is not installed (scripts/install-deps check)"; exit 1; }
export HOME="${HOME:-/root}" GOCACHE="$W/gocache"
cc -O1 -o "$W/names" "$S/tests/programs/names.c"
python3 "$S/tests/e2e/names.py" make "$W/names" "$W/hostile" "$W/names.data"
U="$B/unwound"
K="--kallsyms /dev/null"
"$U" report -i "$W/names.data" $K --folded -o "$W/folded.txt" 2>/dev/null
"$U" report -i "$W/names.data" $K --script -o "$W/script.txt" 2>/dev/null
"$U" report -i "$W/names.data" $K --stdio --no-children --sort comm,dso,sym -o "$W/table.txt" 2>/dev/null
"$U" report -i "$W/names.data" $K --format speedscope -o "$W/speedscope.json" 2>/dev/null
"$U" report -i "$W/names.data" $K --format html -o "$W/flame.html" 2>/dev/null
"$U" report -i "$W/names.data" $K --format pprof -o "$W/profile.pb.gz" 2>/dev/null
go tool pprof -top -sample_index=samples "$W/profile.pb.gz" >"$W/top.txt" 2>&1 || { cat "$W/top.txt"; exit 1; }
python3 "$S/tests/e2e/names.py" check "$W"
node "$S/tests/viewers/check.mjs" "$W"
# threads no COMM names
python3 "$S/tests/e2e/synth.py" idle "$W/idle.data"
perf script -i "$W/idle.data" -F comm,tid -G 2>/dev/null | awk '{$1=$1; print}' >"$W/idle.perf"
"$U" report -i "$W/idle.data" $K --script 2>/dev/null | awk '/cpu-clock/ {print $1, $2}' >"$W/idle.uw"
grep -q "^swapper 0$" "$W/idle.perf" || { echo "FAIL: perf script does not name the idle task swapper:"; cat "$W/idle.perf"; exit 1; }
diff "$W/idle.perf" "$W/idle.uw" || { echo "FAIL: threads without a COMM named otherwise than perf script names them"; exit 1; }
echo "threads without a COMM: $(tr '\n' ' ' <"$W/idle.uw")as perf script"
echo "names: ok"
