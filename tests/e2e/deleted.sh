#!/bin/sh
# A program deleted while it runs, another file put at its path afterwards: that file must never
# name its frames. With the build-id in the recording (perf record --buildid-mmap) the same
# program back at the path names them; without one (perf could not read the deleted file for its
# build-id table) the recorded inode is the identity, and a copy is another inode.
set -eu
B=${UW_BUILD:?} S=${UW_SRC:?}
W=$B/tests/work/deleted
rm -rf "$W"
mkdir -p "$W/home"
cd "$W"
gcc -O2 -g -I"$S/tests/programs" -o other "$S/tests/programs/dwz_prog.c"
for mode in buildid plain; do
    opt=""
    [ $mode = buildid ] && opt=--buildid-mmap
    rm -f prog
    cp "$B/tests/e2e_nofp" prog
    # the replacement exists before the program is deleted, so it cannot take over its inode
    # number (a reused inode defeats a check without a build-id; see docs/security.md)
    cp other other.$mode
    # shellcheck disable=SC2086
    HOME=$W/home perf record -q $opt -e cpu-clock -F 999 --call-graph dwarf -o $mode.data -- \
        sh -c './prog calltree 1.5 & p=$!
               # (deleted once it runs, however long the machine takes to start it)
               until case $(readlink /proc/$p/exe) in */prog) true ;; *) ! [ -e /proc/$p ] ;; esac; do sleep 0.01; done
               sleep 0.3; rm -f prog; wait' >/dev/null 2>perf.err
    # another program at the path: no names from it
    mv other.$mode prog
    HOME=$W/home "$B/unwound" report -i $mode.data --comm prog --folded --no-kernel -o other-$mode.txt
    if grep -q "work_a\|inner_loop\|mix" other-$mode.txt; then
        echo "FAIL ($mode): frames named from another file at the deleted file's path"; exit 1
    fi
    if grep -q "tree_a" other-$mode.txt; then echo "FAIL ($mode): names without the file"; exit 1; fi
    # the same program back at the path
    cp "$B/tests/e2e_nofp" prog
    HOME=$W/home "$B/unwound" report -i $mode.data --comm prog --folded --no-kernel -o same-$mode.txt
    # perf record may or may not have read the program's build-id before it was deleted (it
    # reads files as it goes): with one, the same program is used; without, a copy is not
    if [ $mode = buildid ] || perf buildid-list -i $mode.data 2>/dev/null | grep -q "/prog\$"; then
        grep -q "main;tree_a;tree_a2;spin " same-$mode.txt || { echo "FAIL: the same file (build-id checked) not used"; cat same-$mode.txt; exit 1; }
    elif grep -q "tree_a" same-$mode.txt; then
        echo "FAIL: a copy (another inode) used without a build-id"; exit 1
    fi
done
echo "deleted files: no names from another file; the same file used only when its build-id says so"
