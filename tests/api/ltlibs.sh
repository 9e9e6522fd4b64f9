#!/bin/sh
# DIR N: builds DIR/libltI.so for I < N, each defining int uw_lt_fn_I(int) (a library of its
# own for each short process of tests/tools/lifetime.c and hammer.c).
set -eu
dir=$1 n=$2
mkdir -p "$dir"
i=0
while [ $i -lt "$n" ]; do
    printf 'int uw_lt_fn_%d(int x)\n{\n\treturn x * %d + 1;\n}\n' $i $i >"$dir/lt$i.c"
    i=$((i + 1))
done
# (two compilers at a time)
i=0
while [ $i -lt "$n" ]; do echo $i; i=$((i + 1)); done |
    xargs -P 2 -I N cc -shared -fPIC -O1 -Wl,--build-id -o "$dir/libltN.so" "$dir/ltN.c" ||
    { echo "FAIL: building the libraries"; exit 1; }
