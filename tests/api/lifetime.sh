#!/bin/sh
# Module handles live as long as the session (tests/tools/lifetime.c): 100 short processes,
# each loading a library of its own (built here), their frames kept raw by a live profiler and
# named at the end, after the session unloaded the libraries no process maps any more.
set -eu
B=${UW_BUILD:?}
S=${UW_SRC:?}
W=$B/tests/work/lifetime
rm -rf "$W"
sh "$S/tests/api/ltlibs.sh" "$W/lib" 100
"$B/tests/lifetime" "$W/lib" 100
