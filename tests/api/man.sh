#!/bin/sh
# The per-call man pages (docs/man/api) are what scripts/gen-man3 writes from the header now: a
# header changed without them would leave `man uw_...` stale. Each renders without warnings.
set -eu
S=${UW_SRC:?}
B=${UW_BUILD:?}
W=$B/tests/work/man
rm -rf "$W"; mkdir -p "$W"
python3 "$S/scripts/gen-man3" "$S/include/unwound/unwound.h" "$W/api"
diff -r "$S/docs/man/api" "$W/api" >"$W/diff.txt" ||
    { head -20 "$W/diff.txt"; echo "FAIL: docs/man/api differs from the header: run scripts/gen-man3 include/unwound/unwound.h docs/man/api"; exit 1; }
n=$(grep -c "UW_API" "$S/include/unwound/unwound.h")
pages=$(ls "$W/api" | wc -l)
[ "$pages" -ge "$n" ] || { echo "FAIL: $pages pages for $n public calls"; exit 1; }
for p in "$W"/api/uw_*.3; do
    grep -q "^\.so" "$p" && continue
    out=$(LC_ALL=C.UTF-8 MANWIDTH=100 groff -man -Tutf8 -ww -z "$p" 2>&1) || { echo "$out"; echo "FAIL: $p does not render"; exit 1; }
    [ -z "$out" ] || { echo "$out" | head -5; echo "FAIL: groff warns on $(basename "$p")"; exit 1; }
done
echo "man: $pages pages for $n public calls, current with the header"
