#!/bin/sh
# A file is used for a mapping only when it is the one the recording says (issue 41,
# docs/security.md): two libraries at one address, one after the other (tests/programs/dlsame.c:
# libA.so mapped, run in, dlclosed; libB.so mapped at libA's range, run in). The recorder is held
# stopped (SIGSTOP) from before libA is mapped until libB is, so that it opens libA's file only
# once /proc/PID/map_files/START-END of libA's range names libB's file (what a busy recorder
# meets; before, libA's samples were named and unwound with libB's file, and libB's build-id was
# written for libA.so). Both unwinding modes (record --unwind kernel, copy):
#   same      every frame of libA's samples is named with libA's functions and their stacks reach
#             main; libB's with libB's; no frame in libA.so bears a libB name; `perf buildid-list`
#             gives each file its own build-id; perf script (perf's own symbols, from the files
#             kept in the build-id cache by build-id) agrees
#   overlay   `same` with the program and libraries on an overlayfs (a tmpfs below, the build's
#             filesystem above: two filesystems, no xino): there fstat gives a file another
#             device than MMAP2 and /proc/PID/maps do (the layer's, not the overlay's), and the
#             kernel's own view is asked (the file mapped for a moment): libA's file is found,
#             not refused
#   replaced  the same, and libA.so replaced on disk (unlinked, a new file written there) before
#             the recorder runs again: no file is libA's, so its frames are [unknown] (never
#             named from libB or from the new file), libA.so gets no build-id, and both record's
#             and report's summaries count it as a module not used
# Every count is over the samples taken (nothing depends on the CPU the machine gives).
# usage: ident.sh same|overlay|replaced kernel|copy
set -eu
case=$1 mode=$2
B=${UW_BUILD:?} S=${UW_SRC:?}
W=$B/tests/work/ident-$case-$mode
rm -rf "$W"; mkdir -p "$W"
cd "$W"
U=$B/unwound
export HOME=$W/home
mkdir -p "$HOME"
fail() { echo "FAIL: $*"; exit 1; }
MS=300

# of one layout (the same code, names of one length), each with a build-id of its own
lib() { # tag build-id output
    cc -O2 -g -shared -fPIC -DDLSAME_LIB=$1 -Wl,--build-id=0x$2 -o "$3" "$S/tests/programs/dlsame.c"
}
BIDA=aa0000000000000000000000000000000000a041
BIDB=bb0000000000000000000000000000000000b041
BIDC=cc0000000000000000000000000000000000c041
cc -O2 -g -o dlsame "$S/tests/programs/dlsame.c" -ldl

rec=""
mounted=""
end_rec() {
    [ -z "$rec" ] || { kill -CONT $rec 2>/dev/null || true; kill $rec 2>/dev/null || true; wait $rec 2>/dev/null || true; }
    for m in $mounted; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
}
trap end_rec EXIT
wait_line() { # file pattern what
    i=0
    until grep -q "$2" "$1" 2>/dev/null; do
        i=$((i + 1)); [ $i -lt 1200 ] || { cat "$1" rec.err 2>/dev/null; fail "$3: not seen after 60 s"; }
        kill -0 $rec 2>/dev/null || { cat "$1" rec.err 2>/dev/null; fail "$3: the recording ended first"; }
        sleep 0.05
    done
}

# counts over perf-script-like text (a sample's header line, then one frame a line:
# "ADDR SYMBOL+OFF (DSO)", a blank line after): samples in libA.so (any frame there), those whose
# every libA.so frame is named and with no B_ name (libA's own: A_*, or _init while dlopen runs
# it), those with a libA.so frame named B_, with one unknown, those reaching main; the same for
# libB.so
count() {
    awk 'function done_sample() {
            if (ina) { a++; if (a_ok && !a_bad) aok++; if (a_b) ab++; if (a_unk) aunk++; if (m) amain++ }
            if (inb) { b++; if (b_ok && !b_bad) bok++; if (b_a) ba++; if (m) bmain++ }
            ina = inb = a_ok = a_bad = a_b = a_unk = b_ok = b_bad = b_a = m = 0
         }
         /^[ \t]*$/ { done_sample(); next }
         /^[^ \t]/ { done_sample(); next }
         {
            sym = $2; sub(/\+0x[0-9a-f]*$/, "", sym)
            if (sym == "main") m = 1
            if ($0 ~ /\/libA\.so\)/) {
                ina = 1
                a_ok = 1
                if (sym ~ /^B_/) a_b = a_bad = 1
                if (sym ~ /unknown/) a_unk = a_bad = 1
            } else if ($0 ~ /\/libB\.so\)/) {
                inb = 1
                b_ok = 1
                if (sym ~ /^A_/ || sym ~ /unknown/) b_bad = 1
                if (sym ~ /^A_/) b_a = 1
            }
         }
         END { done_sample(); printf "%d %d %d %d %d %d %d %d %d\n", a, aok, ab, aunk, amain, b, bok, ba, bmain }' "$1"
}

rm -f go1 go2 libA.so libB.so libA.other
lib A $BIDA libA.so
lib B $BIDB libB.so
lib B $BIDC libA.other # (replaced: libB's code, a build-id of its own)
rm -rf "$HOME/.debug"
D=$W # where the program and its libraries are
if [ $case = overlay ]; then
    mkdir -p lower upper ovlwork merged
    mount -t tmpfs tmpfs lower || fail "overlay: cannot mount a tmpfs (root needed)"
    mounted="$W/lower"
    cp dlsame libA.so libB.so lower/
    mount -t overlay overlay -o lowerdir=$W/lower,upperdir=$W/upper,workdir=$W/ovlwork merged ||
        fail "overlay: cannot mount an overlayfs"
    mounted="$W/merged $mounted"
    D=$W/merged
    set -- $(stat -c '%D %i' "$D/libA.so")
    echo "overlay: fstat gives libA.so device $1 (hex) inode $2; /proc/self/maps: $(python3 -c "
import mmap
f = open('$D/libA.so', 'rb'); m = mmap.mmap(f.fileno(), 4096, prot=mmap.PROT_READ)
print([l.split()[3] + ' ' + l.split()[4] for l in open('/proc/self/maps') if 'libA.so' in l][0])")"
fi
arg=""; [ $case = replaced ] && arg=replace
"$U" record -v --unwind $mode --stack-size 8192 -o $mode.data -- "$D/dlsame" "$D" $MS $arg gated >prog-$mode.out 2>rec.err &
rec=$!
wait_line prog-$mode.out ready "the program's start"
kill -STOP $rec
touch "$D/go1"
# libA mapped, run in, dlclosed, libB mapped at its range: the recorder has seen none of it
i=0
until grep -q "^B r-xp" prog-$mode.out; do
    i=$((i + 1))
    if [ $i -ge 1200 ] || grep -q "never landed\|dlsame:" prog-$mode.out; then
        kill -CONT $rec; cat prog-$mode.out
        fail "$mode: libB.so was not mapped at libA.so's range (the scenario could not be set up)"
    fi
    sleep 0.05
done
kill -CONT $rec
touch "$D/go2"
rc=0; wait $rec || rc=$?
rec=""
cp rec.err rec-$mode.err
[ $rc = 0 ] || { cat rec-$mode.err; fail "$mode: record exit $rc"; }
grep -q "^done" prog-$mode.out || { cat prog-$mode.out; fail "$mode: the program did not run through"; }
a=$(sed -n 's/^A r-xp //p' prog-$mode.out) b=$(sed -n 's/^B r-xp //p' prog-$mode.out)
[ "$a" = "$b" ] || fail "$mode: libA.so at $a, libB.so at $b: not the same range"
if [ $mode = kernel ]; then
    grep -q "stacks walked in the kernel" rec-$mode.err || { cat rec-$mode.err; fail "kernel: not unwound in the kernel"; }
else
    grep -q "stacks copied" rec-$mode.err || { cat rec-$mode.err; fail "copy: not unwound from stack copies"; }
fi
grep "^libA.so replaced" prog-$mode.out || true
sed -n 's/^unwound record: \([0-9]* samples, [0-9]* with a user stack ([^)]*)\).*/record: \1/p' rec-$mode.err

# unwound's own report of the frames (the names the recorder's modules give)
"$U" report -i $mode.data --script --no-kernel -o $mode.uscript 2>/dev/null ||
    fail "$mode: report --script: exit $?"
"$U" report -i $mode.data --no-kernel -o $mode.report 2>/dev/null || fail "$mode: report: exit $?"
set -- $(count $mode.uscript)
echo "$mode (unwound report --script): libA.so: $1 samples, $2 named from libA only, $3 with a B_* name, $4 with [unknown], $5 reach main; libB.so: $6 samples, $7 named from libB only, $8 with an A_* name, $9 reach main"
na=$1 aok=$2 ab=$3 aunk=$4 amain=$5 nb=$6 bok=$7 ba=$8 bmain=$9
# perf's own reading: its symbols from the files kept in the build-id cache (by build-id); with
# libA's file replaced, perf reads whatever is at the path (no build-id to find libA's by): not
# judged then
perf script -i $mode.data -F comm,tid,time,ip,sym,dso 2>/dev/null | grep -v '\[kernel' >$mode.pscript ||
    fail "$mode: perf script failed"
set -- $(count $mode.pscript)
echo "$mode (perf script): libA.so: $1 samples, $2 named from libA only, $3 with a B_* name; libB.so: $6 samples, $7 named from libB only, $8 with an A_* name"
pa=$1 pok=$2 pb=$3 pnb=$6 pbok=$7 pba=$8
perf buildid-list -i $mode.data 2>/dev/null >$mode.bids || true
bida=$(awk '$2 ~ /\/libA\.so$/ { print $1 }' $mode.bids) bidb=$(awk '$2 ~ /\/libB\.so$/ { print $1 }' $mode.bids)
echo "$mode: build-id list: libA.so ${bida:-none}, libB.so ${bidb:-none}"
[ $ab = 0 ] || { grep -B2 -A6 "B_.*libA.so" $mode.uscript | head -20; fail "$mode: $ab samples of libA.so named with libB's functions"; }
[ $ba = 0 ] || fail "$mode: $ba samples of libB.so named with libA's functions"
[ $na -ge 20 ] && [ $nb -ge 20 ] || fail "$mode: too few samples in the libraries ($na in libA, $nb in libB) to judge"
[ $bok = $nb ] || fail "$mode: $((nb - bok)) of libB.so's $nb samples not named from libB only"
[ $((bmain * 100)) -ge $((nb * 95)) ] || fail "$mode: only $bmain of libB.so's $nb samples reach main"
[ "$bidb" = $BIDB ] || fail "$mode: libB.so's build-id in the list is '${bidb}', not $BIDB"
if [ $case != replaced ]; then
    [ $aok = $na ] || { grep -B2 -A6 "libA.so" $mode.uscript | grep -v "A_" | head -20; fail "$mode: $((na - aok)) of libA.so's $na samples not named from libA only"; }
    [ $((amain * 100)) -ge $((na * 95)) ] || fail "$mode: only $amain of libA.so's $na samples reach main (unwound with another file's tables?)"
    [ "$bida" = $BIDA ] || fail "$mode: libA.so's build-id in the list is '${bida}', not $BIDA"
    [ $pa -ge 20 ] && [ $pok = $pa ] && [ $pb = 0 ] && [ $pnb -ge 20 ] && [ $pbok = $pnb ] && [ $pba = 0 ] ||
        fail "$mode: perf script does not name each library's samples with its own functions"
else
    # no file is libA's: its frames unnamed, counted as such
    [ $aunk = $na ] || fail "$mode: $((na - aunk)) of libA.so's $na samples have a frame there named (no file is libA's)"
    [ -z "$bida" ] || fail "$mode: libA.so given build-id $bida (no file found is libA's)"
    grep -q "1 not used: not the file mapped" rec-$mode.err ||
        { grep "^unwound record" rec-$mode.err; fail "$mode: record's summary does not count libA.so as not the file mapped"; }
    grep -q "modules:.*1 not the file recorded" $mode.report ||
        { grep "modules" $mode.report; fail "$mode: report's summary does not count libA.so as not the file recorded"; }
    grep "not the file" rec-$mode.err $mode.report | sed 's/^/  /'
fi
echo "PASS"
