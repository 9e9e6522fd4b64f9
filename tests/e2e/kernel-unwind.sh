#!/bin/sh
# In-kernel unwinding (lib/kernel): the eBPF program walks tests/programs/deeprec.c's two threads,
# 200 levels of 1 KiB frames without frame pointers or SFrame, and must reach the root on >= 99%
# of samples with the frames lib/unwind gives (over a stack copy, and finishing walks handed over
# when libc's table is not loaded); then 1,500 levels (more than 1,024 frames). See
# tests/tools/kunwcheck.c for the checks.
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
