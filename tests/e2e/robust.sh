#!/bin/sh
# The suite passes on a busy machine and says why when it fails:
#  - the workloads the tests record do a fixed amount of work (seconds of their own CPU time),
#    so a cpu-clock recording of one takes the same samples when a busy loop shares its CPU
#    (each is pinned with the loop to one CPU: it gets about half of it);
#  - every test script runs under bash with tests/errexit.sh, which names the command a `set -e`
#    script stopped at (this script checks it runs so, and that a silent command is named);
#  - every test that runs perf or records takes the CTest resource `perf` (two such tests side
#    by side; one recording system-wide or with build-ids alone, as it takes both slots: a
#    recording with build-ids makes the kernel mark the other sessions' MMAP2 records, and perf
#    6.1 aborts), and the machine's lock (tests/machine-lock.sh) in the same mode, for the same
#    between suites side by side.
set -eu
B=${UW_BUILD:?}
S=${UW_SRC:?}
W=$B/tests/work/robust
rm -rf "$W"; mkdir -p "$W"
cd "$W"
fail() { echo "FAIL: $*"; exit 1; }
failed=0
failure() { echo "FAIL: $*"; failed=1; } # (the checks go on: every failure is said)

# ---- run the way tests/CMakeLists.txt runs scripts
trap -p ERR 2>/dev/null | grep -q "uw_rc" ||
    failure "this script runs without tests/errexit.sh (tests/CMakeLists.txt runs every script with bash and BASH_ENV)"
printf 'set -eu\necho start\ngrep -q no-such-line /dev/null\necho not reached\n' >silent.sh
rc=0; BASH_ENV=$S/tests/errexit.sh bash silent.sh >silent.out 2>&1 || rc=$?
[ $rc = 1 ] && grep -q "^FAIL: silent.sh, line 3: 'grep -q no-such-line /dev/null' failed (exit status 1)$" silent.out ||
    failure "a script stopped by a silent command: exit $rc, '$(cat silent.out)'"
echo "errexit: a script stopped by a silent command says which and where"

# ---- the tests' registrations: scripts under bash and the hook, perf users under the lock
ctest --test-dir "$B" --show-only=json-v1 >tests.json 2>/dev/null || fail "ctest --show-only"
python3 - "$S" tests.json <<'PY' || failed=1
import json, os, re, sys
src, path = sys.argv[1], sys.argv[2]
bad = []
for t in json.load(open(path))["tests"]:
    cmd = t.get("command") or []
    props = {p["name"]: p["value"] for p in t.get("properties", [])}
    env = props.get("ENVIRONMENT", [])
    # RESOURCE_GROUPS as ctest --show-only gives it: [{"requirements": [{".type", "slots"}]}]
    groups = ",".join(f"{r['.type']}:{r['slots']}" for g in props.get("RESOURCE_GROUPS") or []
                      for r in g.get("requirements", []))
    locked = len(cmd) > 1 and cmd[1].endswith("/tests/machine-lock.sh")
    scripts = [c for c in cmd if c.endswith(".sh") and not c.endswith("/tests/machine-lock.sh")]
    if scripts:
        if not re.search(r"(^|/)bash$", cmd[0]):
            bad.append(f"{t['name']}: {scripts[0]} is not run by bash")
        if not any(e.startswith("BASH_ENV=") and e.endswith("/tests/errexit.sh") for e in env):
            bad.append(f"{t['name']}: no BASH_ENV=.../tests/errexit.sh")
        text = open(scripts[0], errors="replace").read()
        # (perf record, perf script..., or unwound record: a perf session)
        if re.search(r"^[^#\n]*\b(perf (record|script|report|diff|inject)\b|record -q|\$U\" record|unwound\" record)", text, re.M):
            if not groups.startswith("perf:"):
                bad.append(f"{t['name']}: runs perf or records, without the resource perf (RESOURCE_GROUPS)")
        # recording system-wide or with build-ids: the script's lines the test runs (before its
        # `case`, and its case's branch), echo and comments aside
        args = cmd[cmd.index(scripts[0]) + 1:]
        lines = text.split("\n")
        top = next((i for i, l in enumerate(lines) if re.match(r"case \$\w+ in", l)), None)
        if top is not None and args:
            run = lines[:top]
            on = False
            for l in lines[top + 1:]:
                m = re.match(r"([\w| -]+)\)\s*$", l)
                if m and not l.startswith(" "):
                    on = args[0] in [x.strip() for x in m.group(1).split("|")]
                elif on:
                    run.append(l)
        else:
            run = lines
        alone = [l for l in run if not re.match(r"\s*(#|echo\b)", l) and "re.search(" not in l and
                 (re.search(r"--buildid-mmap", l) or re.search(r"\brecord\b.*\s(-a|--all-cpus)(\s|$)", l))]
        if alone and groups != "perf:2":
            bad.append(f"{t['name']}: records system-wide or with build-ids ({alone[0].strip()[:60]}) without running alone (RESOURCE_GROUPS perf:2)")
    if groups.startswith("perf:"):
        if not locked:
            bad.append(f"{t['name']}: takes the resource perf but not the machine's lock (tests/machine-lock.sh)")
        # alone in the suite (both slots) exactly when alone on the machine
        want = "exclusive" if groups == "perf:2" else "shared"
        if f"UW_MACHINE_LOCK_MODE={want}" not in env:
            bad.append(f"{t['name']}: RESOURCE_GROUPS {groups} without UW_MACHINE_LOCK_MODE={want}")
for b in bad[:10]:
    print("FAIL: " + b)
if len(bad) > 10:
    print(f"FAIL: ... and {len(bad) - 10} more")
n = len(json.load(open(path))["tests"])
print(f"registrations: {n} tests, {len(bad)} wrong")
sys.exit(1 if bad else 0)
PY

# ---- fixed work: the same samples with half a CPU
taskset -c 0 true 2>/dev/null || fail "taskset cannot pin to CPU 0"
taskset -c 0 sh -c 'while :; do :; done' &
busy=$!
trap 'kill $busy 2>/dev/null || true' EXIT
g++ -O2 -g -o cxxwork "$S/tests/programs/cxxwork.cpp"
cc -O2 -g -o faults "$S/tests/programs/faults.c"
gcc -O2 -g -I"$S/tests/programs" -o dwz_prog "$S/tests/programs/dwz_prog.c"
samples() { # secs name command...: a cpu-clock recording pinned beside the busy loop
    secs=$1 name=$2; shift 2
    taskset -c 0 perf record -q -e cpu-clock -F 999 -o "$name.data" -- "$@" >/dev/null 2>"$name.err" ||
        { cat "$name.err"; fail "perf record $name"; }
    n=$(perf script -i "$name.data" -F period 2>/dev/null | wc -l)
    want=$(awk -v s="$secs" 'BEGIN { printf "%d", s * 999 * 0.9 }')
    echo "$name: $n samples for $secs s of CPU time beside a busy loop (at least $want)"
    [ "$n" -ge "$want" ] || failure "$name: $n samples: the workload ran for the clock's time, not its own CPU time"
}
samples 0.5 calltree "$B/tests/e2e_nofp" calltree 0.5
samples 0.5 threads "$B/tests/e2e_nofp" threads 0.25
samples 0.5 recursion "$B/tests/e2e_nofp" recursion 0.5 50
samples 0.5 cxxwork ./cxxwork 0.5
samples 0.5 python python3 "$S/tests/programs/pywork.py" 0.5
samples 0.5 dwz_prog ./dwz_prog 0.5
samples 0.5 faults ./faults 0.5
# (node: its compiler and GC threads count toward the CPU time it runs for)
samples 0.4 node node "$S/tests/programs/jitwork.js" 500
kill $busy
[ $failed = 0 ] || exit 1
echo "robust: ok"
