#!/bin/sh
# Kernel frames are named with the symbols of the kernel their recording ran on, never with
# another's. A recording of this machine (every system call sampled, each with the same three
# kernel frames) is rewritten as if made on another machine (tests/e2e/perfdata.py kernel): no
# build-id for its kernel and another release gives [unknown] (as perf does for such a file),
# the same release at the same _text this machine's names; a foreign build-id finds its kallsyms
# in perf's build-id cache ($HOME/.debug/[kernel.kallsyms]/BUILDID/kallsyms, made here from
# /proc/kallsyms with every name prefixed and every address moved: relocated by _text);
# --kallsyms and --vmlinux (an ELF symbol table, tests/e2e/kernel-files.py) name them as given,
# a vmlinux of another build-id is refused; and `unwound diff` of two recordings from different
# kernels names each side with its own kernel.
set -eu
B=${UW_BUILD:?}
S=${UW_SRC:?}
W=$B/tests/work/kernel
rm -rf "$W"; mkdir -p "$W/home"
U=$B/unwound
PD="python3 $S/tests/e2e/perfdata.py"
KF="python3 $S/tests/e2e/kernel-files.py"
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" = 0 ] || { echo "FAIL: needs root (kernel addresses in /proc/kallsyms)"; exit 1; }

# every system call of a short run, sampled in the kernel (no perf build-id cache written)
perf record -q -N -e raw_syscalls:sys_enter -c 1 --call-graph dwarf,4096 -o "$W/this.data" -- \
    "$B/tests/e2e_nofp" calltree 0.05 >/dev/null 2>"$W/perf.err" || { cat "$W/perf.err"; fail "perf record"; }
export HOME="$W/home"

# kernel frames of a --script output: "name" per frame ("[unknown]" when unnamed)
kframes() { awk '/\(\[kernel\.kallsyms\]\)$/ { n = $2; sub(/\+0x[0-9a-f]+$/, "", n); print n }' "$1"; }
# the distinct names and their counts, "COUNT PREFIXNAME ..." (PREFIX: $2)
counts() { kframes "$1" | sed "s/^/${2:-}/" | sort | uniq -c | awk '{print $1, $2}' | tr '\n' ' '; }

# ---- this machine's recording: named as perf names it
"$U" report -i "$W/this.data" --script -o "$W/this.txt" 2>"$W/this.err"
perf script -i "$W/this.data" -F ip,sym,dso 2>/dev/null | awk '/kernel\.kallsyms/ {print "x", $2, "([kernel.kallsyms])"}' >"$W/perf.txt"
want=$(counts "$W/perf.txt")
got=$(counts "$W/this.txt")
echo "this kernel: $got"
nk=$(kframes "$W/this.txt" | wc -l)
[ "$nk" -ge 3 ] || fail "no kernel frames in the recording ($nk)"
[ "$got" = "$want" ] || fail "kernel names differ from perf script's: $want"
case "$got" in *unknown*) fail "a kernel frame of this machine's recording unnamed";; esac
names=$(kframes "$W/this.txt" | sort -u | tr '\n' ' ')

# ---- another machine's, without a build-id for its kernel: [unknown], as perf
$PD kernel "$W/this.data" "$W/nobid.data" - 4.19.0-other
"$U" report -i "$W/nobid.data" --script -o "$W/nobid.txt" 2>"$W/nobid.err"
got=$(counts "$W/nobid.txt")
echo "no build-id, Linux 4.19.0-other: $got"
[ "$got" = "$nk [unknown] " ] || fail "another kernel's frames named from this machine's kallsyms (want $nk [unknown])"
grep -q "not the running one" "$W/nobid.err" || { cat "$W/nobid.err"; fail "no word of why kernel frames are unnamed"; }

# the same release, loaded at the same _text: this machine's kernel (perf's pipe mode, old perf)
$PD kernel "$W/this.data" "$W/samerel.data" - "$(uname -r)"
"$U" report -i "$W/samerel.data" --script -o "$W/samerel.txt" 2>/dev/null
[ "$(counts "$W/samerel.txt")" = "$want" ] || fail "no build-id, same release and _text: not named as this kernel"
# ... at another _text: another boot, or another kernel: [unknown]
text=$(awk '$3 == "_text" {print $1; exit}' /proc/kallsyms)
moved=$(printf '%x' $((0x$text + 0x1000000)))
$PD kernel "$W/this.data" "$W/moved.data" - "$(uname -r)" "$moved"
"$U" report -i "$W/moved.data" --script -o "$W/moved.txt" 2>/dev/null
[ "$(counts "$W/moved.txt")" = "$nk [unknown] " ] || fail "the same release at another _text named as this kernel"

# ---- another machine's with a build-id: its kallsyms from perf's build-id cache, relocated
bid=abababababababababababababababababababab
$PD kernel "$W/this.data" "$W/other.data" $bid 4.19.0-other
mkdir -p "$HOME/.debug/[kernel.kallsyms]/$bid"
$KF kallsyms /proc/kallsyms "$HOME/.debug/[kernel.kallsyms]/$bid/kallsyms" other_ 200000
"$U" report -i "$W/other.data" --script -o "$W/other.txt" 2>/dev/null
wantother=$(counts "$W/perf.txt" other_)
got=$(counts "$W/other.txt")
echo "build-id $bid: $got"
[ "$got" = "$wantother" ] || fail "not named from the recorded kernel's kallsyms in the build-id cache (want $wantother)"
# the snapshot is taken only when a kernel frame is to be named, and mapped, not read (reading
# perf's 5 MiB snapshot whole on every report made a CPython report 1.26x slower): a report
# without kernel frames never opens it; one with them reads none of it with read(2)
if command -v strace >/dev/null; then
    snap="$HOME/.debug/[kernel.kallsyms]/$bid/kallsyms"
    # (LeakSanitizer does not work under ptrace: leaks are checked in the runs without strace)
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
    strace -f -qq -y -e trace=openat,read -o "$W/nok.trace" "$U" report -i "$W/other.data" --no-kernel --folded -o /dev/null
    ! grep -F "$snap" "$W/nok.trace" | head -n 3 | grep . ||
        fail "report --no-kernel opened the kallsyms snapshot (no kernel frame needs a name)"
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
    strace -f -qq -y -e trace=openat,read,mmap -o "$W/k.trace" "$U" report -i "$W/other.data" --folded -o "$W/k.folded"
    grep -q "other_" "$W/k.folded" || fail "report --folded: kernel frames not named from the snapshot"
    ! grep -F "read(" "$W/k.trace" | grep -F "$snap>" | head -n 3 | grep . ||
        fail "the kallsyms snapshot (this user's, no one else may write it) was read whole, not mapped"
    grep -F "mmap(" "$W/k.trace" | grep -qF "$snap>" || fail "the kallsyms snapshot was not mapped"
else
    echo "(strace is not installed: when the snapshot is taken, not checked)"
fi

# ---- files given: --kallsyms (relocated by _text), --vmlinux (checked against the build-id)
"$U" report -i "$W/nobid.data" --script --kallsyms "$HOME/.debug/[kernel.kallsyms]/$bid/kallsyms" \
    -o "$W/given.txt" 2>/dev/null
[ "$(counts "$W/given.txt")" = "$wantother" ] || fail "--kallsyms FILE not used"
$KF vmlinux /proc/kallsyms "$W/vmlinux" vml_ $bid
"$U" report -i "$W/other.data" --script --vmlinux "$W/vmlinux" -o "$W/vml.txt" 2>"$W/vml.err"
wantvml=$(counts "$W/perf.txt" vml_)
got=$(counts "$W/vml.txt")
echo "--vmlinux: $got"
[ "$got" = "$wantvml" ] || { cat "$W/vml.err"; fail "--vmlinux FILE not used (want $wantvml)"; }
# both given: the vmlinux, as perf
"$U" report -i "$W/other.data" --script --vmlinux "$W/vmlinux" --kallsyms "$HOME/.debug/[kernel.kallsyms]/$bid/kallsyms" \
    -o "$W/both.txt" 2>/dev/null
[ "$(counts "$W/both.txt")" = "$wantvml" ] || fail "--vmlinux and --kallsyms: the vmlinux not used"
$KF vmlinux /proc/kallsyms "$W/vmlinux.cd" vml_ cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd
"$U" report -i "$W/other.data" --script -k "$W/vmlinux.cd" -o "$W/vmlcd.txt" 2>"$W/vmlcd.err"
grep -q "build-id cdcd.* is not the recorded kernel's ($bid)" "$W/vmlcd.err" || { cat "$W/vmlcd.err"; fail "a vmlinux of another build-id not refused"; }
[ "$(counts "$W/vmlcd.txt")" = "$nk [unknown] " ] || fail "a vmlinux of another build-id used"

# a file given that holds no kernel symbols says so (not a word of hidden addresses), one whose
# addresses are all zero (a user's copy of /proc/kallsyms under kptr_restrict) says that
echo "not a kallsyms file" >"$W/notk"
"$U" report -i "$W/nobid.data" --script --kallsyms "$W/notk" -o /dev/null 2>"$W/notk.err"
grep -q "notk: kernel symbols not loaded: no function symbols in it" "$W/notk.err" ||
    { cat "$W/notk.err"; fail "--kallsyms of a file that is none: not said so"; }
awk '{ print "0000000000000000", $2, $3 }' /proc/kallsyms | head -1000 >"$W/zeros"
"$U" report -i "$W/nobid.data" --script --kallsyms "$W/zeros" -o /dev/null 2>"$W/zeros.err"
grep -q "zeros: kernel symbols not loaded: addresses are hidden" "$W/zeros.err" ||
    { cat "$W/zeros.err"; fail "--kallsyms of zero addresses: not said they are hidden"; }

# ---- diff: each recording's kernel frames named with its own kernel's symbols
"$U" diff "$W/this.data" "$W/other.data" --format folded -o "$W/diff.txt" 2>"$W/diff.err" ||
    { cat "$W/diff.err"; fail "unwound diff"; }
# folded diff lines: "stack BASELINE NEW"
awk -v nk="$nk" '
    /_\[k\]/ { k = ($0 ~ /other_[^;]*_\[k\]/); if (k) { a_other += $(NF-1); b_other += $NF } else { a_this += $(NF-1); b_this += $NF } }
    END {
        printf "diff: this recording %d samples named this kernel'"'"'s way, %d the other'"'"'s; the other recording %d and %d\n", a_this, a_other, b_this, b_other
        if (a_other || b_this || !a_this || !b_other) exit 1
    }' "$W/diff.txt" || { head -5 "$W/diff.txt"; fail "diff names one recording's kernel frames with the other's kernel"; }
"$U" diff "$W/nobid.data" "$W/this.data" --format folded -o "$W/diff2.txt" 2>/dev/null
awk '
    /_\[k\]/ { u = ($0 ~ /\[unknown\]_\[k\]/); if (u) { a_u += $(NF-1); b_u += $NF } else { a_n += $(NF-1); b_n += $NF } }
    END {
        printf "diff: the other recording %d samples unnamed, %d named; this one %d and %d\n", a_u, a_n, b_u, b_n
        if (a_n || b_u || !a_u || !b_n) exit 1
    }' "$W/diff2.txt" || { head -5 "$W/diff2.txt"; fail "diff names the unnamed kernel's frames with the other recording's kernel"; }
echo "kernel identity ok: names of this kernel: $names"
