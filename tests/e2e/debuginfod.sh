#!/bin/sh
# debuginfod: a stripped program is recorded; its debug file is served by a real debuginfod
# started here on loopback. unwound must fetch it (names from its .symtab, lines and inline frames
# from its DWARF), keep it in the cache, not ask with --offline, and say why when the server
# cannot be reached.
set -eu
B=${UW_BUILD:?} S=${UW_SRC:?}
W=$B/tests/work/debuginfod
rm -rf "$W"
mkdir -p "$W/srv" "$W/home" "$W/bin"
command -v debuginfod >/dev/null || { echo "FAIL: debuginfod is not installed (scripts/install-deps)"; exit 1; }

# the program: built with DWARF, its debug file split off, then stripped of everything
gcc -O2 -g -fno-inline-functions -o "$W/bin/dbgd" "$S/tests/programs/e2e.c" -L"$B/tests" -ltw_nofp \
    -Wl,-rpath,"$B/tests" -Wl,--build-id -pthread
objcopy --only-keep-debug "$W/bin/dbgd" "$W/srv/dbgd.debug"
strip --strip-all "$W/bin/dbgd"
bid=$(readelf -n "$W/bin/dbgd" | awk '/Build ID/ { print $3 }')
[ -n "$bid" ] || { echo "FAIL: no build-id"; exit 1; }

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
debuginfod -F -p "$port" -d "$W/db.sqlite" -t0 -g0 "$W/srv" >"$W/debuginfod.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
# wait until the server has scanned the directory and serves the file
ok=0
for i in $(seq 1 100); do
    if python3 -c "import urllib.request, sys; urllib.request.urlopen('http://127.0.0.1:$port/buildid/$bid/debuginfo', timeout=2)" 2>/dev/null; then
        ok=1
        break
    fi
    sleep 0.2
done
[ "$ok" = 1 ] || { echo "FAIL: debuginfod did not serve the debug file"; cat "$W/debuginfod.log"; exit 1; }

HOME=$W/home perf record -q -e cpu-clock -F 999 --call-graph dwarf -o "$W/perf.data" -- "$W/bin/dbgd" calltree 1 >/dev/null 2>"$W/perf.err"

run() { HOME=$W/home DEBUGINFOD_CACHE_PATH=$W/cache "$B/unwound" report -i "$W/perf.data" --comm dbgd "$@"; }

# 1. offline: the stripped program has no names for its own functions
DEBUGINFOD_URLS=http://127.0.0.1:$port run --offline --folded --no-kernel -o "$W/offline.txt"
if grep -q "tree_a2" "$W/offline.txt"; then echo "FAIL: names without debuginfod (--offline)"; exit 1; fi
[ ! -e "$W/cache/$bid" ] || { echo "FAIL: --offline fetched"; exit 1; }

# 2. fetched: names, and source lines with inline frames from the DWARF
DEBUGINFOD_URLS=http://127.0.0.1:$port run --folded --no-kernel -v -o "$W/online.txt" 2>"$W/online.err"
grep -q "main;tree_a;tree_a2;spin " "$W/online.txt" || { echo "FAIL: names not fetched"; cat "$W/online.err"; exit 1; }
grep -q "debug file from debuginfod" "$W/online.err" || { echo "FAIL: no fetch message"; exit 1; }
[ -e "$W/cache/$bid/debuginfo" ] || { echo "FAIL: not cached"; ls -R "$W/cache"; exit 1; }
DEBUGINFOD_URLS=http://127.0.0.1:$port run --script --srcline -o "$W/srcline.txt"
grep -q "e2e.c:[0-9]" "$W/srcline.txt" || { echo "FAIL: no source lines from the fetched DWARF"; exit 1; }

# 3. from the cache, with the server gone
kill $server
wait $server 2>/dev/null || true
DEBUGINFOD_URLS=http://127.0.0.1:$port run --folded --no-kernel -o "$W/cached.txt"
cmp -s "$W/online.txt" "$W/cached.txt" || { echo "FAIL: the cached file gives other stacks"; exit 1; }

# 4. an unreachable server: a message naming the module, and the report still made
rm -rf "$W/cache"
DEBUGINFOD_URLS=http://127.0.0.1:$port run --folded --no-kernel -o "$W/down.txt" 2>"$W/down.err"
grep -q "dbgd (build-id $bid): debuginfod: no debug file" "$W/down.err" || { echo "FAIL: no message"; cat "$W/down.err"; exit 1; }
[ -s "$W/down.txt" ] || { echo "FAIL: no report without the server"; exit 1; }
echo "debuginfod: fetched, cached, offline and unreachable cases pass"
