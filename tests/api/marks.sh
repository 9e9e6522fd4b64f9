#!/bin/sh
# The header's marks (issue 25): an experimental call is an error at compile time once the
# program defines UW_NO_EXPERIMENTAL (and builds without it), the deprecated register-mask call
# is warned of, and the man page says which calls are experimental (the header's list).
set -eu
src=${UW_SRC:-$(dirname "$0")/../..}
cc=${CC:-cc}
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
cat > "$t/exp.c" <<'C'
#include <unwound/unwound.h>
const char *f(struct uw_tracker *t) { return uw_tracker_comm_of(t, 1, 1); }
C
$cc -c -Wall -Werror -I"$src/include" "$t/exp.c" -o "$t/exp.o" || { echo "FAIL: an experimental call does not build"; exit 1; }
if $cc -c -DUW_NO_EXPERIMENTAL -I"$src/include" "$t/exp.c" -o "$t/exp.o" 2> "$t/err"; then
    echo "FAIL: uw_tracker_comm_of built with UW_NO_EXPERIMENTAL defined"; exit 1
fi
grep -q "experimental call of libunwound" "$t/err" || { echo "FAIL: the error does not say why:"; cat "$t/err"; exit 1; }
cat > "$t/dep.c" <<'C'
#include <unwound/unwound.h>
unsigned long long f(void) { return uw_perf_regs_user_mask(); }
C
if $cc -c -Werror=deprecated-declarations -I"$src/include" "$t/dep.c" -o "$t/dep.o" 2> "$t/err"; then
    echo "FAIL: uw_perf_regs_user_mask is not marked deprecated"; exit 1
fi
grep -q "uw_regs_mask" "$t/err" || { echo "FAIL: the warning does not name the call to use:"; cat "$t/err"; exit 1; }
# every call the header marks experimental is marked so in libunwound(3), and no other
hdr=$(grep -oE 'UW_API UW_EXPERIMENTAL [^(]*\b(uw_[a-z0-9_]+)\(' "$src/include/unwound/unwound.h" |
      grep -oE 'uw_[a-z0-9_]+\($' | tr -d '(' | sort -u)
[ -n "$hdr" ] || { echo "FAIL: no experimental call in the header"; exit 1; }
man=$(awk '/^\.SH EXPERIMENTAL/{on=1; next} /^\.SH/{on=0} on' "$src/docs/man/libunwound.3" |
      grep -oE 'uw_[a-z0-9_]+' | sort -u)
if [ "$hdr" != "$man" ]; then
    echo "FAIL: experimental calls: header says"; echo "$hdr"; echo "libunwound(3)'s EXPERIMENTAL section says"; echo "$man"; exit 1
fi
# the raw records' calls (uw_event_*, uw_record_decode, uw_order_*: new for the tracker-level
# profiler, issue 25) are experimental: every call of that section of the header
raw=$(awk '/^\/\* -+ raw perf records/{on=1; next} /^\/\* -+ /{on=0} on' "$src/include/unwound/unwound.h" |
      tr '\n' ' ' | grep -oE 'UW_API [^;]*;' | grep -oE 'uw_[a-z0-9_]+\(' | tr -d '(' | sort -u)
rawexp=$(awk '/^\/\* -+ raw perf records/{on=1; next} /^\/\* -+ /{on=0} on' "$src/include/unwound/unwound.h" |
      tr '\n' ' ' | grep -oE 'UW_API UW_EXPERIMENTAL [^;]*;' | grep -oE 'uw_[a-z0-9_]+\(' | tr -d '(' | sort -u)
echo "$raw" | grep -q uw_record_decode || { echo "FAIL: no uw_record_decode in the header's raw perf records section"; exit 1; }
if [ "$raw" != "$rawexp" ]; then
    echo "FAIL: calls of the raw perf records section not marked UW_EXPERIMENTAL:"
    echo "$raw" | grep -vxF "$rawexp"; exit 1
fi
echo "marks ok: $(echo "$hdr" | wc -l) experimental calls ($(echo "$raw" | wc -l) of raw records), uw_perf_regs_user_mask deprecated"
