#!/bin/sh
# speedscope and the HTML flame graph, loaded into their real consumers: speedscope (npm) and
# our page, both in headless Chromium (tests/viewers/check.mjs). A C++ program with inline
# chains and a program with three threads are recorded with perf; what the viewers show (the
# functions' self and total time, the totals, the threads, a zoom, a search, a time range) is
# checked against perf script and unwound's folded stacks. Screenshots stay in the work dir.
set -eu
B=${UW_BUILD:?}
S=${UW_SRC:?}
W=$B/tests/work/viewers
rm -rf "$W"; mkdir -p "$W"
export UW_TEST_NODE="${UW_TEST_NODE:-${XDG_CACHE_HOME:-$HOME/.cache}/unwound/test-node}"
[ -d "$UW_TEST_NODE/node_modules/puppeteer-core" ] && [ -d "$UW_TEST_NODE/node_modules/speedscope" ] ||
    { echo "FAIL: the viewer test packages are not in $UW_TEST_NODE (scripts/install-deps check installs them)"; exit 1; }
command -v chromium >/dev/null || { echo "FAIL: chromium is not installed (scripts/install-deps check)"; exit 1; }
g++ -O2 -g -o "$W/cxxwork" "$S/tests/programs/cxxwork.cpp"
perf record -q -e cpu-clock -F 999 --call-graph dwarf -o "$W/cxx.data" -- "$W/cxxwork" 1 >/dev/null 2>"$W/perf.err" ||
    { echo "FAIL: perf record"; cat "$W/perf.err"; exit 1; }
perf record -q -e cpu-clock -F 999 --call-graph dwarf -o "$W/threads.data" -- "$B/tests/e2e_nofp" threads 0.6 >/dev/null 2>"$W/perf.err" ||
    { echo "FAIL: perf record"; cat "$W/perf.err"; exit 1; }
# a file of unwound record (callchains, no stack copies) gives the same views
"$B/unwound" record -q -e cpu-clock -F 999 -g -o "$W/rec.data" -- "$B/tests/e2e_nofp" calltree 0.5 >/dev/null 2>"$W/rec.err" ||
    { echo "FAIL: unwound record"; cat "$W/rec.err"; exit 1; }
for r in cxx threads rec; do
    "$B/unwound" report -i "$W/$r.data" --format speedscope -o "$W/$r.speedscope.json"
    "$B/unwound" report -i "$W/$r.data" --format speedscope -o "$W/$r.again.json"
    cmp "$W/$r.speedscope.json" "$W/$r.again.json" || { echo "FAIL: two runs wrote different speedscope files"; exit 1; }
    "$B/unwound" report -i "$W/$r.data" --format html -o "$W/$r.html"
    "$B/unwound" report -i "$W/$r.data" --format html -o "$W/$r.again.html"
    cmp "$W/$r.html" "$W/$r.again.html" || { echo "FAIL: two runs wrote different pages"; exit 1; }
    "$B/unwound" report -i "$W/$r.data" --folded --inline --weight period -o "$W/$r.folded"
    perf script -i "$W/$r.data" -F tid,time,period >"$W/$r.perf" 2>/dev/null
    # speedscope opens on the heaviest thread's profile
    tid=$(awk '{ w[$1] += $3 } END { for (t in w) print w[t], t }' "$W/$r.perf" | sort -k1,1nr -k2,2n | head -1 | cut -d' ' -f2)
    echo "$tid" >"$W/$r.tid"
    "$B/unwound" report -i "$W/$r.data" --folded --inline --weight period --tid "$tid" -o "$W/$r.tid.folded"
done
# a thread whose name would end the page's script element and start another, with a quote and
# a backslash: the JSON and the page must carry it as text
perf record -q -e cpu-clock -F 999 -g -o "$W/names.data" -- /usr/bin/python3 -c '
import ctypes, time
ctypes.CDLL(None).prctl(15, b"</script><b>\"\\", 0, 0, 0)
t = time.process_time()
while time.process_time() - t < 0.3: pass
' >/dev/null 2>&1
"$B/unwound" report -i "$W/names.data" --format html -o "$W/names.html"
"$B/unwound" report -i "$W/names.data" --format speedscope -o "$W/names.json"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert any("</script>" in p["name"] for p in d["profiles"]), [p["name"] for p in d["profiles"]]' "$W/names.json" ||
    { echo "FAIL: the speedscope file does not carry the thread's name"; exit 1; }
# stacks deeper than the window (150 calls of recurse): the page opens on the flame's base
perf record -q -e cpu-clock -F 999 --call-graph dwarf,65528 -o "$W/deep.data" -- "$B/tests/e2e_nofp" recursion 0.3 150 \
    >/dev/null 2>"$W/perf.err" || { echo "FAIL: perf record"; cat "$W/perf.err"; exit 1; }
"$B/unwound" report -i "$W/deep.data" --format html -o "$W/deep.html"
python3 "$S/tests/e2e/viewers-expect.py" "$W" >"$W/expect.json"
python3 - "$W" <<'PY'
import json, sys
W = sys.argv[1]
e = json.load(open(f"{W}/expect.json"))
e["pages"] = [{"name": "names", "file": f"{W}/names.html", "thread_text": '</script><b>"\\'}]
e["deep"] = [{"name": "recursion", "file": f"{W}/deep.html", "min_depth": 100}]
json.dump(e, open(f"{W}/expect.json", "w"))
PY
node "$S/tests/viewers/check.mjs" "$W"
