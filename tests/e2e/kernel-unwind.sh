#!/bin/sh
# In-kernel unwinding (lib/kernel): the eBPF program walks tests/programs/deeprec.c's two threads,
# 200 levels of 1 KiB frames without frame pointers or SFrame, and must reach the root on >= 99%
# of samples with the frames lib/unwind gives (over a stack copy, and finishing walks handed over
# when libc's table is not loaded); then 1,500 levels (more than 1,024 frames); then the e2e
# program's signal, shared-library and thread modes, with CFI and with SFrame only, where >= 99%
# of samples must reach a root and lib/unwind over a copy of each sample's stack must give the
# program's frames; then the deep program reading /dev/zero, sampled mostly in the kernel: kernel
# callchains, and user stacks from the registers the syscall left. See tests/tools/kunwcheck.c for
# the checks.
set -eu
B=${UW_BUILD:?UW_BUILD must point at the build directory}
check=$B/tests/kunwcheck
prog=$B/tests/deeprec
if [ ! -x "$check" ]; then
    echo "FAIL: $check is missing: the build has no kernel unwinding (UW_HAVE_KERNEL_UNWIND needs libbpf-dev,"
    echo "      clang's BPF target, bpftool and /sys/kernel/btf/vmlinux at build time: scripts/install-deps build)"
    exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "FAIL: loading the BPF program needs root (CAP_BPF and CAP_PERFMON)"
    exit 1
fi
echo "== 200 levels: rows, frame-0 copies checked by lib/unwind, libc handed to user space"
"$check" "$prog" --depth 200 --samples 2000 --copy-check --fallback
echo "== 1500 levels (beyond 1,024 frames)"
"$check" "$prog" --depth 1500 --samples 300

# A running e2e program (MODE, VARIANT), once it has what the mode needs (its library mapped, its
# threads started), then stopped.
run_pid() {
    mode=$1 v=$2 n=$3 want=$4
    "$B/tests/e2e_$v" "$mode" 600 >/dev/null &
    pid=$!
    i=0
    # (its libraries mapped, and 50 ms of CPU spent: past ld.so, in main's loop)
    until grep -q "libtw_$v" "/proc/$pid/maps" 2>/dev/null && grep -q "libc.so" "/proc/$pid/maps" &&
        [ "$(awk '{print $14 + $15}' "/proc/$pid/stat")" -ge 5 ] &&
        { [ "$mode" != threads ] || [ "$(ls "/proc/$pid/task" | wc -l)" -ge 3 ]; }; do
        i=$((i + 1))
        if [ $i -gt 600 ]; then
            echo "FAIL: e2e_$v $mode did not start"
            kill $pid
            exit 1
        fi
        sleep 0.1
    done
    echo "== e2e_$v $mode"
    rc=0
    "$check" --pid $pid --samples "$n" --copy-check --min-root 99 >"$W/$mode-$v.out" 2>&1 || rc=$?
    kill $pid
    wait $pid 2>/dev/null || true
    grep -vE "^  /" "$W/$mode-$v.out"
    [ $rc -eq 0 ] || exit 1
    if [ -n "$want" ] && ! grep -q "$want" "$W/$mode-$v.out"; then
        echo "FAIL: e2e_$v $mode: no frame found by the method expected ($want)"
        exit 1
    fi
}
W=$B/tests/work/kernel-unwind
rm -rf "$W"
mkdir -p "$W"
# (signal frames are ~0.7% of the signal mode's samples: 2 x 1,000 samples make none unlikely)
run_pid signal nofp 1000 "signal [1-9]"
run_pid shlib nofp 500 ""
run_pid threads nofp 500 ""
run_pid signal sframe_nofp 500 "sframe [1-9]"
run_pid shlib sframe_nofp 500 "sframe [1-9]"

echo "== in syscalls: deeprec 5 syscall"
"$prog" 5 syscall >"$W/syscall.ready" &
pid=$!
i=0
until grep -q ready "$W/syscall.ready"; do
    i=$((i + 1))
    if [ $i -gt 600 ]; then
        echo "FAIL: deeprec did not get ready"
        kill $pid
        exit 1
    fi
    sleep 0.1
done
rc=0
"$check" --pid $pid --samples 500 --copy-check --min-root 99 --min-kernel 90 >"$W/syscall.out" 2>&1 || rc=$?
kill $pid
wait $pid 2>/dev/null || true
grep -vE "^  /" "$W/syscall.out"
[ $rc -eq 0 ] || exit 1
