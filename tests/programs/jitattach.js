// JavaScript workload for attaching to a running Node.js: a hot function with a name found
// nowhere else (uwAttachedSpin; run node with --no-turbo-inlining, or V8 compiles it into its
// callers, up to node's processImmediate), compiled by V8 before 'ready' is printed, then run
// until killed (argument: seconds, default 120, a bound for a test that fails before killing
// it). The rounds are called from the event loop, not from a loop in the script's top level.
function uwAttachedSpin(n) { let s = 0; for (let i = 0; i < n; i++) s += (i * 7) % 13; return s; }
function uwAttachedSpinRound() { let t = 0; for (let k = 0; k < 20; k++) t += uwAttachedSpin(20000); return t; }
let acc = 0, ready = false;
const t0 = Date.now(), limit = (Number(process.argv[2]) || 120) * 1000;
function round() {
    acc += uwAttachedSpinRound();
    if (!ready && Date.now() - t0 > 300) { ready = true; console.log('ready'); }
    if (Date.now() - t0 < limit) setImmediate(round); else console.log(acc % 10);
}
round();
