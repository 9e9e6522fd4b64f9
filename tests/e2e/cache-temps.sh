#!/bin/sh
# No temporary file is left in the cache directory, whatever ends the writer (issue 41): a
# cache entry is written without a name (O_TMPFILE) and linked once complete; on a file system
# without O_TMPFILE it is written as ENTRY.PID.tmp, a name the library registers and the CLI
# removes when a signal ends it. A writer is caught in the middle of an entry by an LD_PRELOAD
# (tests/programs/slowwrite.c: a write to the cache directory sleeps) and then ended:
#  1. unwound report ... | head: killed by SIGPIPE while it writes libc's DWARF image (MiBs);
#  2. unwound report killed by SIGTERM there; unwound record killed by SIGKILL while it keeps a
#     kernel unwinding table (nothing can clean up after SIGKILL: only a file without a name
#     leaves nothing);
#  3. 1 and SIGTERM again without O_TMPFILE (the LD_PRELOAD refuses it): ENTRY.PID.tmp is
#     there while the entry is written, and removed by the CLI's handler.
set -eu
B=${UW_BUILD:?} S=${UW_SRC:?}
W=$B/tests/work/cache-temps
rm -rf "$W"; mkdir -p "$W"
cd "$W"
uw=$B/unwound
fail() { echo "FAIL: $*"; exit 1; }
if [ -n "${UW_SAN_FLAGS:-}" ]; then
    echo "(a sanitizer build: its runtime must be loaded first, no LD_PRELOAD of ours: skipped)"; exit 0
fi
cc -O2 -shared -fPIC -o slowwrite.so "$S/tests/programs/slowwrite.c" -ldl
cc -O2 -g -fomit-frame-pointer -o work "$S/tests/programs/e2e.c" -L"$B/tests" -ltw_nofp -Wl,-rpath,"$B/tests" -pthread
C=$W/cache
export UNWOUND_CACHE_DIR="$C"
"$uw" record -q --no-table-cache -o rec.data -- ./work calltree 0.4 >/dev/null 2>rec.err || { cat rec.err; fail "record failed"; }
[ -z "$(ls "$C" 2>/dev/null)" ] || fail "--no-table-cache wrote the cache"
"$uw" report -i rec.data --script --srcline --no-dwarf-cache -o ref.txt
[ "$(wc -c <ref.txt)" -gt 200000 ] || fail "the report is too short to fill a pipe ($(wc -c <ref.txt) bytes)"
grep -q "libc" ref.txt || fail "no libc frames in the report (its DWARF image is what is caught)"

wait_mark() { # the writer is in the middle of an entry (60 s at most)
    i=0
    while [ ! -e mark ]; do
        i=$((i + 1)); [ $i -lt 1200 ] || fail "$1: no write to the cache directory"
        sleep 0.05
    done
}
temps() { find "$C" -name '*.tmp' 2>/dev/null; }
slow() { env LD_PRELOAD="$W/slowwrite.so" UW_SLOW_DIR="$C" UW_SLOW_MARK="$W/mark" "$@"; }

# ---- 1. and 3. a report whose reader goes away: SIGPIPE
piped() { # name [env...]
    name=$1; shift
    rm -rf "$C" mark
    set +e
    ( slow "$@" "$uw" report -i rec.data --script --srcline 2>$name.err; echo $? >$name.rc ) |
        { wait_mark $name; [ -z "${NAMED:-}" ] || temps >$name.named; head -c 100 >/dev/null; }
    set -e
    rc=$(cat $name.rc)
    [ "$rc" = 141 ] || { cat $name.err; fail "$name: the report ended with $rc, not by SIGPIPE (141)"; }
    left=$(temps)
    [ -z "$left" ] || { ls -la "$C"; fail "$name: temporaries left after SIGPIPE: $left"; }
    echo "$name: killed by SIGPIPE in the middle of an entry; no temporary left"
}
killed() { # name signal command...
    name=$1 sig=$2; shift 2
    rm -rf "$C" mark
    # (the command itself in the background, not a shell around it: $! is its pid)
    env LD_PRELOAD="$W/slowwrite.so" UW_SLOW_DIR="$C" UW_SLOW_MARK="$W/mark" "$@" >/dev/null 2>$name.err &
    pid=$!
    wait_mark $name
    [ -z "${NAMED:-}" ] || temps >$name.named
    kill -$sig $pid
    rc=0; wait $pid || rc=$?
    [ "$rc" -gt 128 ] || { cat $name.err; fail "$name: ended with $rc, not by the signal"; }
    left=$(temps)
    [ -z "$left" ] || { ls -la "$C"; fail "$name: temporaries left after SIG$sig: $left"; }
    echo "$name: killed by SIG$sig in the middle of an entry; no temporary left"
}
piped pipe
killed term TERM "$uw" report -i rec.data --script --srcline -o out.txt
killed record-kill KILL "$uw" record -q --unwind kernel -o kill.data -- ./work calltree 0.4

# ---- 3. without O_TMPFILE: a named temporary, removed by the CLI
export NAMED=1
piped pipe-named UW_NO_TMPFILE=1
[ -s pipe-named.named ] || fail "pipe-named: no ENTRY.PID.tmp while the entry was written (is O_TMPFILE still used?)"
killed term-named TERM env UW_NO_TMPFILE=1 "$uw" report -i rec.data --script --srcline -o out.txt
[ -s term-named.named ] || fail "term-named: no ENTRY.PID.tmp while the entry was written"
echo "no temporary left in the cache directory by SIGPIPE, SIGTERM or SIGKILL (nor by SIGPIPE and SIGTERM without O_TMPFILE)"
