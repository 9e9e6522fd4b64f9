#!/bin/sh
# The kernel unwinder's tables of 2,000 modules kept in a cache directory used for long (issue
# 41): a program loads 2,000 small shared libraries (copies of one, each with a build-id of its
# own: tests/e2e/manylib-copies.py) and runs CPU in each in turn, without frame pointers (the
# kernel walks a sample there only with that library's table loaded, else it hands the sample
# over to user space). The cache directory holds 20,000 entries of other files beforehand.
# Keeping a table must not cost a scan of that directory (it cost ~20-120 ms each, and the
# builder thread spent the recording scanning: 92 of 2,004 tables loaded, 98% of the samples
# handed over): with the cache, as without it (--no-table-cache), every table is loaded and
# after the program's first 200 samples at most 10% of them are handed over; a second
# recording reads the tables back from the cache.
# UW_MANYLIB_N: the number of libraries (default 2000).
set -eu
B=${UW_BUILD:?} S=${UW_SRC:?}
W=$B/tests/work/kernel-manylib
rm -rf "$W"; mkdir -p "$W"
cd "$W"
uw=$B/unwound
fail() { echo "FAIL: $*"; exit 1; }
N=${UW_MANYLIB_N:-2000}
cc -O2 -fomit-frame-pointer -shared -fPIC -Wl,--build-id -DMANYLIB_LIB -o lib.so "$S/tests/programs/manylib.c"
cc -O2 -g -fomit-frame-pointer -o manylib "$S/tests/programs/manylib.c" -ldl
python3 "$S/tests/e2e/manylib-copies.py" lib.so libs "$N"
[ "$(readelf -n libs/libmany0.so | grep 'Build ID')" != "$(readelf -n libs/libmany1.so | grep 'Build ID')" ] ||
    fail "the copies have one build-id"
# 20,000 entries of other files, used long ago (64 bytes each: well under the cap)
python3 - <<'PY'
import os
os.makedirs('cache', mode=0o700)
for i in range(20000):
    p = 'cache/%040x-%016x.kunw1' % (i * 2654435761, i)
    with open(p, 'wb') as f:
        f.write(b'x' * 64)
    os.utime(p, (1500000000 + i, 1500000000 + i))
PY
export UNWOUND_CACHE_DIR="$W/cache"

# tables loaded, read from the cache; samples handed over after the program's first 200
rec() { # name [record options...]
    name=$1; shift
    "$uw" record -v --unwind kernel "$@" -o $name.data -- ./manylib libs "$N" 4 >/dev/null 2>$name.err ||
        { tail -20 $name.err; fail "$name: record failed"; }
    sum=$(grep "stacks walked in the kernel" $name.err) || { grep -v "info:" $name.err; fail "$name: not unwound in the kernel"; }
    loaded=$(echo "$sum" | sed -n 's/.* \([0-9]*\) module tables loaded.*/\1/p')
    fromcache=$(sed -n 's/.*tables built (on the builder thread; \([0-9]*\) of them read from the cache directory).*/\1/p' $name.err)
    late=$(grep "after each program's first 200 samples" $name.err) ||
        { grep "kernel unwinding" $name.err; fail "$name: record -v does not say how many samples were handed over"; }
    set -- $(echo "$late" | sed 's/.*first 200 samples: \([0-9]*\) of \([0-9]*\) .*/\1 \2/')
    handed=$1 samples=$2
    echo "$name: $loaded module tables loaded ($fromcache read from the cache); after the first 200 samples, $handed of $samples handed over to user space"
    echo "    $(echo "$sum" | sed 's/.*(eBPF): //')"
    [ "$samples" -ge 500 ] || fail "$name: only $samples samples after the first 200"
}
check() { # name
    [ "$loaded" -ge "$N" ] || fail "$1: $loaded module tables loaded, fewer than the $N libraries"
    [ $((handed * 10)) -le "$samples" ] ||
        fail "$1: $handed of $samples samples handed over to user space (more than 10%): the tables were not loaded in time"
}
rec nocache --no-table-cache
check nocache
[ "$(find cache -newer lib.so -name '*.kunw1' | wc -l)" = 0 ] || fail "--no-table-cache wrote the cache"
rec kept
check kept
n=$(find cache -newer lib.so -name '*.kunw1' | wc -l)
[ "$n" -ge "$N" ] || fail "kept: $n tables in the cache, fewer than the $N libraries"
rec readback
check readback
[ "$fromcache" -ge "$N" ] || fail "readback: $fromcache tables read from the cache, fewer than the $N libraries"
[ -z "$(find cache -name '*.tmp')" ] || fail "temporaries left in the cache: $(find cache -name '*.tmp' | head -3)"
echo "$N libraries, a cache directory of 20,000 other entries: tables kept and read back as fast as without the cache"
