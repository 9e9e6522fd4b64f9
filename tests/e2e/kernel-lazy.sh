#!/bin/sh
# unwound record walking stacks in the kernel through ld.so's lazy binding: tests/programs/
# deeprec.c "resolve" under LD_BIND_NOT=1, two threads 200 levels of 1 KiB frames deep calling
# getpagesize through the PLT, each call through _dl_runtime_resolve (CFA = rbx + 32) and
# _dl_fixup, where most samples are. The kernel must step through _dl_runtime_resolve: a walk
# handed to user space there is finished from a 16 KiB copy and loses the rest of the stack.
# perf script is the oracle: every sample through _dl_runtime_resolve holds all 200 levels and
# reaches _start or clone3. Counts are of samples (the program runs 0.5 s of CPU per thread).
set -eu
B=${UW_BUILD:?} S=${UW_SRC:?}
W=$B/tests/work/kernel-lazy
rm -rf "$W"; mkdir -p "$W"
cd "$W"
U=$B/unwound prog=$B/tests/deeprec
mkfifo go
LD_BIND_NOT=1 "$prog" 200 resolve <go >prog.out &
pid=$!
exec 3>go
rpid=
trap 'kill $pid $rpid 2>/dev/null || true' EXIT
for _ in $(seq 600); do grep -q ready prog.out && break; sleep 0.1; done
grep -q ready prog.out || { echo "FAIL: deeprec did not start"; exit 1; }
# (the tables and the mappings loaded before the events are enabled: nothing is handed over
# for want of them)
"$U" record -v --unwind kernel -e cpu-clock -p $pid -o lazy.data 2>rec.err &
rpid=$!
for _ in $(seq 1200); do grep -q "recording: events enabled" rec.err && break; sleep 0.1; done
grep -q "recording: events enabled" rec.err || { cat rec.err; echo "FAIL: the recording did not begin"; exit 1; }
echo go >&3
exec 3>&-
wait $pid || { echo "FAIL: deeprec failed"; exit 1; }
wait $rpid || { cat rec.err; echo "FAIL: unwound record --unwind kernel -p"; exit 1; }
rpid=
grep -q "stacks walked in the kernel" rec.err || { grep -v "info:" rec.err; echo "FAIL: not unwound in the kernel"; exit 1; }
perf script --max-stack 1024 -i lazy.data -F tid,ip,sym >perf.txt 2>perf.err || { cat perf.err; echo "FAIL: perf script"; exit 1; }
python3 - perf.txt <<'EOF' || { grep -E "handed over|stacks walked" rec.err; exit 1; }
import sys
blocks = [b.split("\n") for b in open(sys.argv[1], errors="replace").read().split("\n\n") if b.strip()]
n = lazy = whole = 0
bad = []
for b in blocks:
    funcs = [l.split()[1] if len(l.split()) > 1 else "?" for l in b[1:] if l.strip()]
    n += 1
    if not any(f.startswith("_dl_runtime_resolve") for f in funcs):
        continue
    lazy += 1
    if funcs.count("recurse") == 200 and funcs[-1] in ("_start", "clone3"):
        whole += 1
    elif len(bad) < 3:
        bad.append(funcs)
print(f"lazy binding: {n} samples, {lazy} through _dl_runtime_resolve, {whole} of them hold all 200 levels "
      "and reach _start or clone3")
for f in bad:
    print("  not whole:", ";".join(f[:24]), "..." if len(f) > 24 else "", f"({len(f)} frames)")
fails = []
if lazy < 200:
    fails.append(f"{lazy} samples through _dl_runtime_resolve, want at least 200 (LD_BIND_NOT=1 not in effect?)")
if whole != lazy:
    fails.append(f"{lazy - whole} samples through _dl_runtime_resolve do not hold the whole stack")
for f in fails:
    print("FAIL:", f)
sys.exit(1 if fails else 0)
EOF
line=$(grep "kernel unwinding: handed over" rec.err) || { echo "FAIL: no hand-over line in record -v"; exit 1; }
echo "$line" | sed 's/.*kernel unwinding: /    /'
case $line in
*" 0 at a rule the program does not follow"*) ;;
*) echo "FAIL: walks handed over at a rule the program does not follow"; exit 1 ;;
esac
echo "PASS"
