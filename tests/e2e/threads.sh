#!/bin/sh
# One session shared by 4 threads, each reading the same recording with its own tracker (cold
# caches: modules opened, tables built while others want them): every sample's stack, names,
# lines and inline chains equal those of one thread alone (tests/tools/threads.c). The TSan
# build (make check-tsan) runs it under ThreadSanitizer.
set -eu
B=${UW_BUILD:?}
W=$B/tests/work/threads-shared
rm -rf "$W"; mkdir -p "$W"
exe=$B/tests/e2e_nofp
perf record -q -e cpu-clock -F 999 --call-graph dwarf,8192 -o "$W/perf.data" -- \
    sh -c "$exe calltree 0.6; $exe shlib 0.6; $exe threads 0.6; $exe signal 0.6" >/dev/null 2>"$W/perf.err" ||
    { cat "$W/perf.err"; echo "FAIL: perf record"; exit 1; }
"$B/tests/threads" "$W/perf.data" 4
