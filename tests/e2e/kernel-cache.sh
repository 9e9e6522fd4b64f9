#!/bin/sh
# unwound record's kernel unwinding tables kept between recordings (lib/kernel/kunw_cache.c):
#  1. a first recording builds the tables and keeps them in the cache directory; a second reads
#     them back (record -v says so) and its stacks, in verify mode (UW_KUNW_VERIFY: each record
#     also carries a stack copy the copy unwinder walks) equal the copy unwinder's (as
#     kernel.record asks: on >= 99.9% of the samples where the copy reached a root);
#  2. an entry whose words were damaged, one made by another build (its sources key), one made
#     from another file (a copy of the program: another inode, the same build-id), and a link in
#     an entry's place are not read: the table is built again, the entry written anew; nor is a
#     sparse file of 1 GiB there (larger than the maps' cap: the recorder's memory stays small);
#  3. --no-table-cache neither reads nor writes the cache.
# The program is built here (a new file each run: its entries are its own).
set -eu
B=${UW_BUILD:?} S=${UW_SRC:?}
W=$B/tests/work/kernel-cache
rm -rf "$W"; mkdir -p "$W"
cd "$W"
uw=$B/unwound
fail() { echo "FAIL: $*"; exit 1; }
export UNWOUND_CACHE_DIR="$W/cache"
cc -O2 -g -fomit-frame-pointer -o work "$S/tests/programs/e2e.c" -L"$B/tests" -ltw_nofp -Wl,-rpath,"$B/tests" -pthread

# the program's table: loaded from where (built, or read from the cache), and verify's counts
rec() { # name [record options...]
    name=$1; shift
    UW_KUNW_VERIFY=1 "$uw" record -v "$@" -o $name.data -- ./work calltree 0.4 >/dev/null 2>$name.err ||
        { cat $name.err; fail "$name: record failed"; }
    grep -q "stacks walked in the kernel" $name.err || { grep -v "info:" $name.err; fail "$name: not unwound in the kernel"; }
    how=$(sed -n "s|.*kernel unwinding: table of $W/work loaded (.*, \([a-z ]*\) in [0-9.]* ms)|\1|p" $name.err)
    line=$(grep "kernel unwinding verify:" $name.err | tail -1)
    set -- $(echo "$line" | sed 's/.*verify: \([0-9]*\) samples compared.*, \([0-9]*\) differ.*/\1 \2/')
    [ $# -eq 2 ] || { cat $name.err; fail "$name: no verify line"; }
    [ "$1" -gt 0 ] || { cat $name.err; fail "$name: nothing compared"; }
    [ $(($2 * 1000)) -le "$1" ] || { grep "first difference" $name.err | head -3; fail "$name: $2 of $1 stacks differ from the copy unwinder's (more than 0.1%)"; }
    echo "$name: the program's table $how; $1 stacks compared with the copy unwinder's, $2 differ"
}
entry() { ls cache/"$(readelf -n work | sed -n 's/.*Build ID: //p')"-*.kunw1 2>/dev/null; }

# ---- 1. built and kept, then read back
rec first
[ "$how" = built ] || fail "first: the program's table was '$how', not built"
e=$(entry)
[ -n "$e" ] && [ -f "$e" ] || { ls -l cache; fail "no cache entry for the program"; }
[ "$(stat -c %a "$e")" = 600 ] && [ "$(stat -c %a cache)" = 700 ] || { ls -la cache; fail "the cache's modes"; }
rec second
[ "$how" = "read from the cache" ] || fail "second: the program's table was '$how', not read from the cache"
grep -q "tables built (on the builder thread; [1-9][0-9]* of them read from the cache directory)" second.err ||
    { grep "tables built" second.err; fail "record -v does not count the tables read from the cache"; }

# ---- 2. entries that must not be read
# damaged: a byte of the words flipped (the header intact)
size=$(stat -c %s "$e")
printf '\377' | dd of="$e" bs=1 seek=$((size - 100)) conv=notrunc status=none
rec damaged
[ "$how" = built ] || fail "damaged entry: the program's table was '$how'"
rec rewritten
[ "$how" = "read from the cache" ] || fail "the damaged entry was not written anew ('$how')"
# another build's: the sources key in the header (bytes 8..79) changed
printf 'X' | dd of="$e" bs=1 seek=8 conv=notrunc status=none
rec otherbuild
[ "$how" = built ] || fail "another build's entry: the program's table was '$how'"
# a link in the entry's place (to a good entry of another file): not followed
cp work work2
# (--unwind kernel: a recording of 0.2 s may end before the program is verified by default)
"$uw" record -q --unwind kernel -o copy.data -- ./work2 calltree 0.2 >/dev/null 2>&1
n=$(ls cache/*.kunw1 | grep -c "$(basename "${e%-*}")-")
[ "$n" = 2 ] || { ls -l cache; fail "a copy of the program (its own inode, the same build-id) made $n entries under the build-id, not 2"; }
other=$(ls cache/"$(basename "${e%-*}")"-*.kunw1 | grep -v "$e")
rm -f "$e"; ln -s "$(basename "$other")" "$e"
rec link
[ "$how" = built ] || fail "a link in the entry's place: the program's table was '$how'"
[ -f "$e" ] && [ ! -L "$e" ] || { ls -l cache; fail "the link was not replaced by an entry"; }

# a sparse file of 1 GiB in the entry's place: not read (over the maps' cap), the recorder's
# memory unchanged by it
rm -f "$e"; truncate -s 1G "$e"
/usr/bin/time -f %M -o big.rss sh -c 'UW_KUNW_VERIFY=1 "$0" record -v -o big.data -- ./work calltree 0.2 >/dev/null 2>big.err' "$uw" ||
    { cat big.err; fail "a sparse entry: record failed"; }
grep -q "table of $W/work loaded (.*, built in" big.err || { grep "table of" big.err; fail "a sparse entry of 1 GiB: the table was not built"; }
[ "$(cat big.rss)" -lt 262144 ] || fail "a sparse entry of 1 GiB: the recorder's peak RSS was $(cat big.rss) KiB"
echo "a sparse 1 GiB entry: not read, table built, peak RSS $(cat big.rss) KiB"

# ---- 3. --no-table-cache
rm -rf cache
rec nocache --no-table-cache
[ "$how" = built ] || fail "--no-table-cache: the program's table was '$how'"
[ -z "$(ls cache/*.kunw1 2>/dev/null)" ] || { ls -l cache; fail "--no-table-cache wrote the cache"; }
echo "kept, read back, refused when damaged, another build's, another file's or a link; --no-table-cache"
