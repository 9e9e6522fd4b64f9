#!/bin/sh
# The cache directory is used only when it can be trusted (issue 41; docs/security.md "The cache
# directory"): anyone who can write an entry can make it say anything, since the checks an entry
# passes (its header names the file it was made from, a hash of its words) are no secret. A
# forged kernel unwinding table (tests/e2e/kunw-forge.py: the program's entry given another
# program's rows) turns the program's stacks into [unknown] frames when it is read. It must not
# be read when:
#  1. the directory is another user's (nobody's): one line says why, the table is built;
#  2. the directory is ours but others may write it (0777), the entry another user's: the same;
#  3. the directory is ours (0700) but the entry is another user's, or others may write it: the
#     entry alone is not read;
#  4. the directory is a symbolic link (to a directory of ours): refused with one line, not
#     followed; and the DWARF cache (unwound report), which shares the directory, refuses it
#     too and writes nothing through it.
# In every case the recording goes on without the cache, and its stacks reach main.
set -eu
B=${UW_BUILD:?} S=${UW_SRC:?}
W=$B/tests/work/cache-trust
rm -rf "$W"; mkdir -p "$W"
cd "$W"
uw=$B/unwound
fail() { echo "FAIL: $*"; exit 1; }
id nobody >/dev/null 2>&1 || { echo "(no user nobody: skipped)"; exit 0; }
[ "$(id -u)" = 0 ] || { echo "(not root: cannot give files to another user: skipped)"; exit 0; }
C=$W/cache
export UNWOUND_CACHE_DIR="$C"
cc -O2 -g -fomit-frame-pointer -o work "$S/tests/programs/e2e.c" -L"$B/tests" -ltw_nofp -Wl,-rpath,"$B/tests" -pthread
cc -O0 -g -o donor "$S/tests/programs/e2e.c" -L"$B/tests" -ltw_nofp -Wl,-rpath,"$B/tests" -pthread
bid() { readelf -n "$1" | sed -n 's/.*Build ID: //p'; }

# how the program's table was had (built, read from the cache), the warnings about the cache
# directory, and the share of the samples in spin whose stack reaches main
rec() { # name
    "$uw" record -v --unwind kernel -o $1.data -- ./work calltree 0.4 >/dev/null 2>$1.err || { tail $1.err; fail "$1: record failed"; }
    grep -q "stacks walked in the kernel" $1.err || { grep -v "info:" $1.err; fail "$1: not unwound in the kernel"; }
    how=$(sed -n "s|.*kernel unwinding: table of $W/work loaded (.*, \([a-z ]*\) in [0-9.]* ms)|\1|p" $1.err)
    said=$(grep -c "cache directory .* not used" $1.err || true)
    "$uw" report -i $1.data --folded --no-kernel -o $1.folded 2>/dev/null
    set -- $1 $(awk '/;spin [0-9]+$/ { t += $NF; if ($0 ~ /^work;_start;__libc_start_main;(__libc_start_call_main;)?main;tree_(a;tree_a2|b);spin /) r += $NF }
                     END { print t + 0, r + 0 }' $1.folded)
    total=$2 rooted=$3
    echo "$1: the program's table $how; $rooted of $total samples in spin reach main; $said line(s) about the cache directory"
    [ "$total" -ge 100 ] || fail "$1: only $total samples in spin"
}
good() { # name: the table built, the stacks right, one line said why (or none: $2)
    [ "$how" = built ] || fail "$1: the program's table was '$how', not built: the entry was trusted"
    [ $((rooted * 100)) -ge $((total * 95)) ] || { sort -t' ' -k2 -rn $1.folded | head -3; fail "$1: $rooted of $total stacks reach main"; }
    [ "$said" = "${2:-1}" ] || { grep "cache" $1.err; fail "$1: $said lines about the cache directory, not ${2:-1}"; }
}

# a genuine entry of the program, then the forgery in its place (made by this user here)
rec genuine
"$uw" record -q --unwind kernel -o donor.data -- ./donor calltree 0.2 >/dev/null 2>&1
E=$(ls "$C"/"$(bid work)"-*.kunw1) D=$(ls "$C"/"$(bid donor)"-*.kunw1)
python3 "$S/tests/e2e/kunw-forge.py" "$E" "$D"
cp -p "$E" forged.kunw1
# (the forgery works: read from a cache of this user's, it is believed)
rec believed
[ "$how" = "read from the cache" ] || fail "believed: the forged entry was '$how' (the test's forgery does not pass the entry's checks)"
[ $((rooted * 2)) -lt "$total" ] || fail "believed: the forged table did not change the stacks ($rooted of $total reach main)"

# 1. the directory and its entries another user's
chown -R nobody "$C"
rec other-user
good other-user
grep -q "cache directory $C not used: owned by uid $(id -u nobody), not by this user" other-user.err || { grep cache other-user.err; fail "other-user: the line does not say why"; }
cmp -s "$E" forged.kunw1 || fail "other-user: the entry in another user's directory was written"
chown -R root "$C"

# 2. the directory writable by others, the entry another user's (as one would leave it there)
chmod 0777 "$C"; chown nobody "$E"
rec world-writable
good world-writable
grep -q "cache directory $C not used: writable by its group or by others (mode 0777)" world-writable.err || { grep cache world-writable.err; fail "world-writable: the line does not say why"; }
chmod 0700 "$C"

# 3. the directory ours, the entry another user's; then ours but writable by others
rec entry-other-user
good entry-other-user 0
cp -p forged.kunw1 "$E"; chmod 0666 "$E"
rec entry-writable
good entry-writable 0
cp -p forged.kunw1 "$E"

# 4. a link in the directory's place (to a directory of ours holding the forgery)
mv "$C" "$W/real"; ln -s real "$C"
before=$(ls "$W/real" | wc -l)
rec link
good link
grep -q "cache directory $C not used: a symbolic link" link.err || { grep cache link.err; fail "link: the line does not say why"; }
# the DWARF cache (report: libc's compressed debug file's image, the line rows) the same
"$uw" report -i link.data --script --srcline -o link.txt 2>report.err || { cat report.err; fail "report failed"; }
[ "$(grep -c "cache directory $C not used: a symbolic link" report.err)" = 1 ] || { cat report.err; fail "report: not one line about the linked cache directory"; }
[ "$(ls "$W/real" | wc -l)" = "$before" ] || { ls -l "$W/real"; fail "something was written through the link"; }
grep -q "tree_a2" link.txt || fail "report: no stacks"
echo "the cache directory refused when another user's, writable by others or a link (one line each), an entry when another user's or writable by others; the stacks right"
