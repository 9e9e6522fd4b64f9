// JavaScript workload for the JIT test: two hot functions, compiled by V8 and named in perf-PID.map.
function hotLoopInner(n) { let s = 0; for (let i = 0; i < n; i++) s += (i * 7) % 13; return s; }
function hotLoopOuter(n) { let t = 0; for (let k = 0; k < 50; k++) t += hotLoopInner(n); return t; }
// (argument: milliseconds of CPU time to run, default 1500: the same work on a busy machine)
const cpuMs = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
const end = cpuMs() + (Number(process.argv[2]) || 1500); let acc = 0;
while (cpuMs() < end) acc += hotLoopOuter(20000);
console.log(acc % 10);
