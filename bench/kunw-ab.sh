#!/bin/sh
# SPDX-License-Identifier: MIT
# The kernel walk's own time per sample, two (or more) builds side by side: for each build
# directory DIR (its unwound and libunwound.so.0, copied aside from a build tree), REPS
# alternated runs of `unwound record --unwind kernel` on tests/stolen (STOLEN_BIN) for SECS
# seconds at 999 Hz, pinned to the last CPU, each printing the BPF program's run time over its
# runs (kernel.bpf_stats_enabled, set for the runs and put back after). A benchmark, not a test.
#
#   bench/kunw-ab.sh THRASH REPS DIR...   (THRASH: 0 warm, MiB thrashed, or KIBk a working set)
#   DEPTH=14 FRAME=96 SECS=2 STOLEN_BIN=build/tests/stolen
#
# To compare a change: cp build/unwound build/libunwound.so.0 /tmp/a/, rebuild, the same to
# /tmp/b/, then bench/kunw-ab.sh 64 4 /tmp/a /tmp/b.
set -eu
[ $# -ge 3 ] || { sed -n '3,13p' "$0"; exit 2; }
T=$1 R=$2
shift 2
HERE=$(cd "$(dirname "$0")" && pwd)
ST=${STOLEN_BIN:-$HERE/../build/tests/stolen}
CPU=$(( $(nproc) - 1 ))
old=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -q kernel.bpf_stats_enabled=$old' EXIT
sysctl -q kernel.bpf_stats_enabled=1
out=$(mktemp -d)
i=0
while [ $i -lt "$R" ]; do
	for d in "$@"; do
		LD_LIBRARY_PATH=$d "$d/unwound" record -v -e cpu-clock -F 999 --unwind kernel -o "$out/ab.data" -- \
			taskset -c "$CPU" "$ST" "${SECS:-2}" "${DEPTH:-14}" "${FRAME:-96}" "$T" 1000 2>&1 >/dev/null |
			sed -n "s|.*the program ran \([0-9]*\) times, \([0-9]*\) ns.*|$d \1 \2|p"
	done
	i=$((i + 1))
done | awk '$2 > 0 { a[$1] = a[$1] sprintf(" %.0f", $3 / $2) } END { for (k in a) print k ": ns a sample:" a[k] }'
rm -rf "$out"
