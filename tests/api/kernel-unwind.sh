#!/bin/sh
# Kernel unwinding for a reader of pushed records (uw_kernel_unwind; tests/tools/kunwapi.c):
# every refusal with its error and the reason in the session's message, the program attached to
# an event of the test's own process and its samples walked in the kernel; then, BPF refused
# (a root shell without CAP_BPF and CAP_SYS_ADMIN, capsh, as kernel.fallback), load says
# "not privileged" and the reader goes on.
set -eu
B=${UW_BUILD:?}
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root"
"$B/tests/kunwapi" || fail "kunwapi"
command -v capsh >/dev/null || fail "capsh is not installed (libcap2-bin)"
capsh --drop=cap_bpf,cap_sys_admin -- -c '"$0" refused' "$B/tests/kunwapi" || fail "kunwapi refused"
echo PASS
