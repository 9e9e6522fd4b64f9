#!/bin/sh
# Kernel unwinding's fallback (issue 26, docs/kernel-unwind.md): where BPF cannot be used,
# `unwound record` copies stacks as before and says why in one line, with no other output from
# libbpf; `--unwind kernel` makes it an error instead; --help and the summary say which method
# was used. BPF is refused here by dropping CAP_BPF and CAP_SYS_ADMIN from a root shell (capsh),
# which keeps CAP_PERFMON: perf_event_open still works, bpf() does not (EPERM); libbpf missing,
# by UNWOUND_LIBBPF naming a file that is not there.
set -eu
B=${UW_BUILD:?}
W=$B/tests/work/kernel-fallback
rm -rf "$W"; mkdir -p "$W"
cd "$W"
uw=$B/unwound
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root"
command -v capsh >/dev/null || fail "capsh is not installed (libcap2-bin)"
"$uw" record --help >help.out
grep -q -- "--unwind MODE" help.out || fail "record --help has no --unwind"
grep -q "Kernel unwinding is compiled in" help.out || fail "record --help does not say kernel unwinding is compiled in"
nobpf() { capsh --drop=cap_bpf,cap_sys_admin -- -c '"$0" "$@"' "$@"; }

# 1. unprivileged for BPF: stack copies, one line saying why, nothing from libbpf
nobpf "$uw" record -o fb.data -- "$B/tests/e2e_nofp" calltree 0.5 >/dev/null 2>fb.err || { cat fb.err; fail "record without CAP_BPF"; }
n=$(grep -c "kernel unwinding unavailable: not privileged (loading BPF needs root, or CAP_BPF and CAP_PERFMON); copying 16384 bytes of stack per sample instead" fb.err || true)
[ "$n" = 1 ] || { cat fb.err; fail "expected the fallback line once, got $n"; }
grep -q "^unwound: warning: kernel unwinding unavailable" fb.err || { cat fb.err; fail "the fallback line is not a warning line of its own"; }
! grep -qi "libbpf" fb.err || { cat fb.err; fail "libbpf's own messages reached stderr"; }
grep -q "stacks copied (16384 bytes) and unwound in user space; kernel unwinding unavailable: not privileged" fb.err ||
    { cat fb.err; fail "the summary does not say stacks were copied and why"; }
"$B/tests/stackcheck" fb.data --callchains --comm e2e_nofp --roots main --min-root 99.5 --min-samples 10 \
    --expect "main;tree_a;tree_a2;spin" --expect "main;tree_b;spin"

# 2. --unwind kernel where it cannot be: an error, the same reason, no recording
if nobpf "$uw" record --unwind kernel -o forced.data -- "$B/tests/e2e_nofp" calltree 0.1 >/dev/null 2>forced.err; then
    fail "--unwind kernel without CAP_BPF succeeded"
fi
grep -q "^unwound record: kernel unwinding: not privileged" forced.err || { cat forced.err; fail "--unwind kernel's error"; }
! grep -qi "libbpf" forced.err || { cat forced.err; fail "libbpf's own messages reached stderr"; }
[ ! -s forced.data ] || fail "--unwind kernel that failed left a recording"

# 3. options that contradict kernel unwinding are refused, not ignored
"$uw" record --unwind kernel --call-graph fp -o x.data -- true 2>fp.err && fail "--unwind kernel --call-graph fp accepted"
grep -q "unwound record:" fp.err || { cat fp.err; fail "--unwind kernel --call-graph fp: no error line"; }
"$uw" record --unwind bogus -o x.data -- true 2>bad.err && fail "--unwind bogus accepted"
grep -q "takes kernel or copy, not 'bogus'" bad.err || { cat bad.err; fail "--unwind bogus's error"; }

# 4. with BPF: no fallback line, the summary says the stacks were walked in the kernel
# (--unwind kernel: by default a recording of 0.5 s may end before the program is verified;
# the default's hand-over is tests/e2e/record-start.sh's)
"$uw" record --unwind kernel -o k.data -- "$B/tests/e2e_nofp" calltree 0.5 >/dev/null 2>k.err || { cat k.err; fail "record"; }
! grep -q "unavailable" k.err || { cat k.err; fail "a fallback line with BPF available"; }
! grep -qi "libbpf" k.err || { cat k.err; fail "libbpf's own messages reached stderr"; }
grep -q "stacks walked in the kernel (eBPF)" k.err || { cat k.err; fail "the summary does not say stacks were walked in the kernel"; }
"$B/tests/stackcheck" k.data --callchains --comm e2e_nofp --roots main --min-root 99.5 --min-samples 10 \
    --expect "main;tree_a;tree_a2;spin" --expect "main;tree_b;spin"
# 5. libbpf is loaded when kernel unwinding is first used: a report does not load it, and where
#    it cannot be loaded (UNWOUND_LIBBPF naming a file that is not there) record copies stacks,
#    saying why in one line, and --unwind kernel is an error
LD_DEBUG=files "$uw" report -i k.data --folded 2>ld.err >/dev/null || { cat ld.err; fail "report of k.data"; }
grep -q "file=libelf" ld.err || fail "LD_DEBUG=files names no library loaded (the check below would be empty)"
! grep -q "file=libbpf" ld.err || { grep libbpf ld.err; fail "unwound report loaded libbpf"; }
UNWOUND_LIBBPF=$W/no-libbpf.so.1 "$uw" record -o nolib.data -- "$B/tests/e2e_nofp" calltree 0.5 >/dev/null 2>nolib.err ||
    { cat nolib.err; fail "record without libbpf"; }
n=$(grep -cF "kernel unwinding unavailable: libbpf cannot be loaded ($W/no-libbpf.so.1: cannot open shared object file: No such file or directory); copying 16384 bytes of stack per sample instead" nolib.err || true)
[ "$n" = 1 ] || { cat nolib.err; fail "expected the libbpf line once, got $n"; }
"$B/tests/stackcheck" nolib.data --callchains --comm e2e_nofp --roots main --min-root 99.5 --min-samples 10 \
    --expect "main;tree_a;tree_a2;spin" --expect "main;tree_b;spin"
if UNWOUND_LIBBPF=$W/no-libbpf.so.1 "$uw" record --unwind kernel -o nolibk.data -- true 2>nolibk.err; then
    fail "--unwind kernel without libbpf succeeded"
fi
grep -q "^unwound record: kernel unwinding: libbpf cannot be loaded" nolibk.err || { cat nolibk.err; fail "--unwind kernel's error without libbpf"; }
echo PASS
