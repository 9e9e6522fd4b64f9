#!/bin/sh
# Module handles live as long as the session (tests/tools/lifetime.c): 100 short processes,
# each loading a library of its own (built here), their frames kept raw by a live profiler and
# named at the end, after the session unloaded the libraries no process maps any more.
set -eu
B=${UW_BUILD:?}
W=$B/tests/work/lifetime
rm -rf "$W"; mkdir -p "$W/lib"
n=100
i=0
while [ $i -lt $n ]; do
    printf 'int uw_lt_fn_%d(int x)\n{\n\treturn x * %d + 1;\n}\n' $i $i >"$W/lib/lt$i.c"
    i=$((i + 1))
done
# (two compilers at a time)
i=0
while [ $i -lt $n ]; do echo $i; i=$((i + 1)); done |
    xargs -P 2 -I N cc -shared -fPIC -O1 -Wl,--build-id -o "$W/lib/libltN.so" "$W/lib/ltN.c" ||
    { echo "FAIL: building the libraries"; exit 1; }
"$B/tests/lifetime" "$W/lib" $n
