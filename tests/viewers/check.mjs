// SPDX-License-Identifier: MIT
// Loads unwound's viewer outputs into their real consumers in headless Chromium and checks what
// they show against expectations computed from perf script and unwound's folded stacks
// (tests/e2e/viewers.sh writes expect.json).
//   node check.mjs WORKDIR
// WORKDIR holds expect.json, the speedscope files and the HTML pages; screenshots are written
// there (flamegraph.png, speedscope.png).
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const work = path.resolve(process.argv[2]);
const nodeDir = process.env.UW_TEST_NODE;
const require = createRequire(path.join(nodeDir, 'node_modules', 'x.js'));
const puppeteer = require('puppeteer-core');
const E = JSON.parse(fs.readFileSync(path.join(work, 'expect.json'), 'utf8'));
let failures = 0;
function check(ok, what) {
  if (!ok) { failures++; console.log('FAIL: ' + what); } else console.log('ok: ' + what);
}
const browser = await puppeteer.launch({
  executablePath: process.env.UW_CHROMIUM || '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--allow-file-access-from-files', '--use-angle=swiftshader', '--enable-unsafe-swiftshader',
         '--disable-gpu-sandbox', '--no-first-run'],
});
async function open(url) {
  const page = await browser.newPage();
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e.message || e)));
  page.on('requestfailed', (r) => errors.push('request failed: ' + r.url()));
  // the page must not reach the network: any http(s) request is an error
  await page.setRequestInterception(true);
  page.on('request', (r) => { if (/^https?:/.test(r.url())) { errors.push('network request: ' + r.url()); r.abort(); } else r.continue(); });
  await page.setViewport({ width: 1400, height: 900 });
  await page.goto(url, { waitUntil: 'load' });
  return { page, errors };
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- what a page shows when it opens: the flame's base (the root and the first levels) in the
// window without scrolling, however deep the stacks (the boxes where the page drew them, in
// window coordinates)
async function opensOnBase(page, name, minDepth) {
  const got = await page.evaluate(() => {
    // the root, the way to the zoomed box, and the heaviest way on from it, 3 levels
    const c = document.getElementById('graph').getBoundingClientRect();
    const base = [];
    for (let x = unwound.zoomed(); x; x = x.p) base.unshift(x);
    for (let i = 0, n = base[base.length - 1]; i < 3 && n.kids && n.kids.length; i++) { n = n.kids[0]; base.push(n); }
    const deepest = (x) => (x.kids || []).reduce((m, k) => Math.max(m, deepest(k)), x.d);
    return { base: base.map((x) => { const r = unwound.rectOf(x); return { name: unwound.name(x), y: r ? c.top + r.y : null, h: r ? r.h : 0 }; }),
             deepest: deepest(unwound.root()), scrollY: window.scrollY, innerHeight: window.innerHeight };
  });
  const out = got.base.filter((b) => b.y === null || b.y < 0 || b.y + b.h > got.innerHeight);
  check(got.scrollY === 0 && got.base.length > 0 && out.length === 0,
    `${name}: opens with the root and the first levels in view (window ${got.innerHeight} px, scrolled ${got.scrollY}; ` +
    `${out.length} of ${got.base.length} base boxes out of view${out.length ? ', e.g. ' + out[0].name + ' at y ' + Math.round(out[0].y) : ''})`);
  if (minDepth) check(got.deepest >= minDepth, `${name}: the flame is ${got.deepest} levels deep (at least ${minDepth}: deeper than the window)`);
}
// every label readable on its box: WCAG's contrast ratio of at least 4.5 (AA)
function luminance(c) {
  const lin = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
  return 0.2126 * lin(c[0]) + 0.7152 * lin(c[1]) + 0.0722 * lin(c[2]);
}
function contrast(a, b) { const x = luminance(a), y = luminance(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); }
async function labelsReadable(page, name) {
  const boxes = await page.evaluate(() => (window.unwound && unwound.boxes ? unwound.boxes() : []));
  const labelled = boxes.filter((b) => b.fill && b.text);
  const worst = labelled.reduce((w, b) => { const c = contrast(b.fill, b.text); return !w || c < w.c ? { c, b } : w; }, null);
  check(labelled.length > 0 && worst.c >= 4.5, `${name}: ${labelled.length} labels readable (lowest contrast ` +
    (worst ? `${worst.c.toFixed(2)}: '${worst.b.name}' in rgb(${worst.b.text}) on rgb(${worst.b.fill})` : 'none') + ', at least 4.5)');
}
// "1 thread", "2 threads"
async function threadsSaid(page, name) {
  const t = await page.evaluate(() => ({ all: document.querySelector('#thread option').textContent, n: unwound.data.threads.length }));
  check(t.all === `all (${t.n} thread${t.n === 1 ? '' : 's'})`, `${name}: the thread selector says '${t.all}' of ${t.n}`);
}

// ---- speedscope: the sandwich view's table of functions (total and self time)
function ms(text) {
  const m = /^([\d.]+)(ns|µs|us|ms|s)/.exec(text.trim());
  if (!m) return NaN;
  const v = parseFloat(m[1]);
  return m[2] === 's' ? v * 1000 : m[2] === 'ms' ? v : m[2] === 'ns' ? v / 1e6 : v / 1000;
}
for (const sc of E.speedscope || []) {
  // the file itself: a profile per thread, each with the thread's periods (perf script's)
  const doc = JSON.parse(fs.readFileSync(sc.file, 'utf8'));
  const per = {};
  for (const p of doc.profiles) {
    const m = /\/(\d+)\)$/.exec(p.name);
    per[m ? m[1] : p.name] = p.weights.reduce((a, b) => a + b, 0);
    check(p.endValue === per[m ? m[1] : p.name] && p.samples.length === p.weights.length, `speedscope ${sc.name}: profile '${p.name}' is consistent`);
  }
  check(JSON.stringify(Object.entries(per).sort()) === JSON.stringify(Object.entries(sc.threads).sort()),
    `speedscope ${sc.name}: one profile per thread with perf's periods ${JSON.stringify(sc.threads)} (file ${JSON.stringify(per)})`);
  const js = path.join(work, path.basename(sc.file) + '.js');
  fs.writeFileSync(js, `speedscope.loadFileFromBase64(${JSON.stringify(path.basename(sc.file))}, ${JSON.stringify(fs.readFileSync(sc.file).toString('base64'))})`);
  const index = path.join(nodeDir, 'node_modules/speedscope/dist/release/index.html');
  const { page, errors } = await open(`file://${index}#localProfilePath=${js}&view=sandwich`);
  await page.waitForFunction(() => document.body.innerText.includes('Symbol Name'), { timeout: 30000 }).catch(() => {});
  await sleep(500);
  const text = await page.evaluate(() => document.body.innerText);
  check(errors.length === 0, `speedscope ${sc.name}: loads without errors ${errors.join('; ')}`);
  check(text.includes(sc.profile) && text.includes(sc.thread), `speedscope ${sc.name}: shows the profile '${sc.profile}...${sc.thread}'`);
  // rows: total, self, name
  const lines = text.split('\n').map((l) => l.trim()).filter((l) => l.length);
  const rows = new Map();
  for (let i = 0; i + 2 < lines.length; i++) {
    if (/^[\d.]+(ns|µs|ms|s) \(/.test(lines[i]) && /^[\d.]+(ns|µs|ms|s) \(/.test(lines[i + 1]))
      rows.set(lines[i + 2], { total: ms(lines[i]), self: ms(lines[i + 1]) });
  }
  for (const [name, want] of Object.entries(sc.functions)) {
    const got = rows.get(name);
    // speedscope rounds to 2 decimals of the unit it picks (ms, or s above a second)
    const tol = (x) => (x >= 1000 ? 5.001 : 0.0051);
    check(got && Math.abs(got.self - want.self) <= tol(want.self) && Math.abs(got.total - want.total) <= tol(want.total),
      `speedscope ${sc.name}: ${name} self ${want.self.toFixed(2)} ms total ${want.total.toFixed(2)} ms` +
      (got ? ` (shown ${got.self} / ${got.total})` : ' (not shown)'));
  }
  await page.screenshot({ path: path.join(work, `speedscope-${sc.name}.png`) });
  await page.close();
}

// ---- the flame graph page
for (const h of E.html || []) {
  const { page, errors } = await open('file://' + h.file);
  await page.waitForFunction(() => window.unwound && window.unwound.root(), { timeout: 30000 });
  const st = () => page.evaluate(() => ({ total: unwound.totals().v, n: unwound.totals().n, zoomed: unwound.name(unwound.zoomed()),
    crumbs: document.getElementById('crumbs').textContent, matched: document.getElementById('matched').textContent,
    kids: unwound.children(unwound.root()).map((k) => k[0]) }));
  let s = await st();
  check(errors.length === 0, `html ${h.name}: no console errors ${errors.join('; ')}`);
  check(s.total === h.total && s.n === h.samples, `html ${h.name}: total ${h.total} in ${h.samples} samples (shown ${s.total} in ${s.n})`);
  check(JSON.stringify(s.kids.slice(0, h.roots.length)) === JSON.stringify(h.roots), `html ${h.name}: outermost frames ${h.roots} (shown ${s.kids})`);
  await opensOnBase(page, `html ${h.name}`, 0);
  await threadsSaid(page, `html ${h.name}`);
  await labelsReadable(page, `html ${h.name}`);
  // the canvas is as tall as the deepest box drawn: the flame's highest box is at its top
  const ext = await page.evaluate(() => unwound.extent());
  check(ext.top >= 0 && ext.top <= 4, `html ${h.name}: the highest box at the canvas's top (at ${ext.top} of ${ext.height} px)`);
  const html = fs.readFileSync(h.file, 'utf8');
  check(!/<script[^>]+src=|<link[^>]+href=|https?:\/\/(?!www\.w3)/.test(html.replace(/"\$schema":"[^"]*"/, '')), `html ${h.name}: self-contained (no external scripts, styles or addresses)`);
  // zoom: click the box of the frame to zoom into
  const rect = await page.evaluate((names) => {
    let n = unwound.root();
    for (const nm of names) n = n.kids.find((c) => unwound.name(c) === nm);
    const r = n && unwound.rectOf(n);
    const c = document.getElementById('graph').getBoundingClientRect();
    return r && { x: c.left + r.x + Math.min(r.w / 2, 20), y: c.top + r.y + r.h / 2 };
  }, h.zoom);
  check(!!rect, `html ${h.name}: the box of ${h.zoom.join(' › ')} is drawn`);
  if (rect) {
    await page.mouse.move(rect.x, rect.y);
    const tip = await page.evaluate(() => document.getElementById('tip').innerText);
    check(tip.includes(h.zoom[h.zoom.length - 1]) && /total/.test(tip) && /module/.test(tip), `html ${h.name}: tooltip names the frame, its total and module`);
    await page.mouse.click(rect.x, rect.y);
    s = await st();
    check(s.zoomed === h.zoom[h.zoom.length - 1] && s.crumbs.includes(h.zoom.join(' › ')), `html ${h.name}: click zooms into ${h.zoom[h.zoom.length - 1]} (breadcrumbs '${s.crumbs}')`);
    await page.evaluate(() => document.querySelector('#crumbs span.c').click());
    s = await st();
    check(s.zoomed === 'all', `html ${h.name}: the breadcrumb 'all' zooms out`);
  }
  // search: the matched share
  await page.type('#search', h.search);
  s = await st();
  check(s.matched === 'matched: ' + h.matched, `html ${h.name}: search '${h.search}' matches ${h.matched} (shown '${s.matched}')`);
  await page.evaluate(() => { const e = document.getElementById('search'); e.value = ''; e.dispatchEvent(new Event('input')); });
  // callers view: the heaviest function by self weight is an outermost box
  await page.click('#inverted');
  s = await st();
  check(s.kids[0] === h.top_self, `html ${h.name}: callers view starts with ${h.top_self} (shown ${s.kids[0]})`);
  await page.click('#inverted');
  await page.select('#colour', 'kind');
  // time range: drag over the middle half of the time line
  const tl = await page.evaluate(() => { const r = document.getElementById('timeline').getBoundingClientRect(); return { x: r.left, y: r.top, w: r.width, h: r.height }; });
  await page.mouse.move(tl.x + tl.w * 0.25, tl.y + tl.h / 2);
  await page.mouse.down();
  await page.mouse.move(tl.x + tl.w * 0.6, tl.y + tl.h / 2, { steps: 5 });
  await page.mouse.up();
  const sel = await page.evaluate(() => ({ b0: unwound.state.b0, b1: unwound.state.b1, nb: unwound.data.nb, t0: unwound.data.t0, t1: unwound.data.t1 }));
  s = await st();
  // perf script's times and periods in the chosen buckets (perf prints microseconds: a sample
  // within a microsecond of a bucket's edge may fall either side)
  const span = sel.t1 - sel.t0 + 1;
  let want = 0, slack = 0;
  for (const [t, p] of h.perf_samples) {
    const b = Math.min(sel.nb - 1, Math.floor((t - sel.t0) * sel.nb / span));
    if (b >= sel.b0 && b < sel.b1) want += p;
    const edge = (x) => Math.abs((t - sel.t0) - x * span / sel.nb) < 1000;
    if (edge(sel.b0) || edge(sel.b1)) slack += p;
  }
  check(sel.b0 > 0 && sel.b1 < sel.nb && Math.abs(s.total - want) <= slack, `html ${h.name}: time range ${sel.b0}-${sel.b1} of ${sel.nb} holds ${want} (shown ${s.total})`);
  await page.mouse.click(tl.x + 5, tl.y + tl.h / 2, { clickCount: 2 });
  s = await st();
  check(s.total === h.total, `html ${h.name}: double-click selects the whole time line again`);
  // thread selector
  for (const [tid, total] of Object.entries(h.threads)) {
    await page.select('#thread', 't:' + tid);
    s = await st();
    check(s.total === total, `html ${h.name}: thread ${tid} holds ${total} (shown ${s.total})`);
  }
  await page.select('#thread', 'all');
  await page.screenshot({ path: path.join(work, `flamegraph-${h.name}.png`), fullPage: true });
  check(errors.length === 0, `html ${h.name}: no errors after interaction ${errors.join('; ')}`);
  await page.close();
}
// ---- deep stacks: the page still opens on the flame's base; zooming into a box keeps it there
for (const h of E.deep || []) {
  const { page, errors } = await open('file://' + h.file);
  await page.waitForFunction(() => window.unwound && window.unwound.root(), { timeout: 30000 });
  check(errors.length === 0, `deep ${h.name}: no console errors ${errors.join('; ')}`);
  await opensOnBase(page, `deep ${h.name}`, h.min_depth);
  await page.screenshot({ path: path.join(work, `deep-${h.name}.png`) });
  // a click on a box of the base zooms into it: the base again in view
  if (!(await page.evaluate(() => !!unwound.boxes))) { await page.close(); continue; }
  const b = await page.evaluate(() => unwound.boxes().find((x) => x.depth === 2));
  if (b) {
    await page.mouse.click(b.x + Math.min(b.w / 2, 20), b.y + b.h / 2);
    await opensOnBase(page, `deep ${h.name} zoomed into ${b.name}`, 0);
  }
  // the icicle: its top in view
  await page.click('#icicle');
  const top = await page.evaluate(() => unwound.boxes().filter((x) => x.depth === 0).map((x) => x.y)[0]);
  const ih = await page.evaluate(() => window.innerHeight);
  check(top >= 0 && top < ih, `deep ${h.name}: the icicle's root in view (at ${top} px)`);
  await page.close();
}

// ---- pages that must load whatever the names in them (hostile thread and function names)
for (const h of E.pages || []) {
  const { page, errors } = await open('file://' + h.file);
  await page.waitForFunction(() => window.unwound && window.unwound.root(), { timeout: 30000 }).catch(() => {});
  const got = await page.evaluate(() => ({ ok: !!(window.unwound && unwound.root()), alerted: !!window.__uw_injected,
    threads: Array.from(document.querySelectorAll('#thread option')).map((o) => o.textContent).join('\n'),
    frames: window.unwound ? unwound.data.frames.map((f) => f[0]) : [] }));
  check(got.ok && errors.length === 0 && !got.alerted, `page ${h.name}: loads without errors or injected script ${errors.join('; ')}`);
  check(got.threads.includes(h.thread_text), `page ${h.name}: the thread selector shows ${JSON.stringify(h.thread_text)}`);
  for (const f of h.frames || [])
    check(got.frames.includes(f), `page ${h.name}: a frame named ${JSON.stringify(f)}`);
  await page.close();
}

// ---- differential flame graphs: the new profile's boxes, red where the share grew
for (const d of E.diffs || []) {
  const { page, errors } = await open('file://' + d.file);
  await page.waitForFunction(() => window.unwound && window.unwound.root(), { timeout: 30000 });
  const got = await page.evaluate((d) => {
    const rgb = (c) => (/rgb\((\d+),(\d+),(\d+)\)/.exec(c) || []).slice(1).map(Number);
    const col = (p) => { const n = unwound.find(p); return n ? rgb(unwound.colour(n)) : null; };
    return { total: unwound.totals().v, base: unwound.totals().b, grew: col(d.grew), shrank: col(d.shrank),
             title: document.getElementById('title').textContent };
  }, d);
  check(errors.length === 0, `diff ${d.name}: no console errors ${errors.join('; ')}`);
  check(got.total === d.total && got.base === d.base, `diff ${d.name}: totals ${d.base} → ${d.total} (shown ${got.base} → ${got.total})`);
  check(got.grew && got.grew[0] > got.grew[1] + 40 && got.grew[1] === got.grew[2], `diff ${d.name}: ${d.grew.join(' › ')} is red (grew): ${got.grew}`);
  check(got.shrank && got.shrank[2] > got.shrank[0] + 40 && got.shrank[0] === got.shrank[1], `diff ${d.name}: ${d.shrank.join(' › ')} is blue (shrank): ${got.shrank}`);
  // the legend says the scale; a stack whose share moved within sampling noise stays pale
  const legend = await page.evaluate(() => document.getElementById('legend').textContent);
  check(/within sampling noise.*full colour: [0-9.]+ points beyond it/.test(legend), `diff ${d.name}: the legend gives the scale: ${legend}`);
  if (d.same) {
    const { page: p2, errors: e2 } = await open('file://' + d.same.file);
    await p2.waitForFunction(() => window.unwound && window.unwound.root(), { timeout: 30000 });
    const same = await p2.evaluate((names) => {
      const n = unwound.find(names); if (!n) return null;
      const c = (/rgb\((\d+),(\d+),(\d+)\)/.exec(unwound.colour(n)) || []).slice(1).map(Number);
      const t = unwound.totals();
      return { c, d: 100 * (n.v / t.v - n.b / t.b) };
    }, d.same.stack);
    check(same && e2.length === 0, `diff ${d.name}: the rerun's page shows ${d.same.stack.join(' › ')} ${e2.join('; ')}`);
    if (same)
      check(Math.max(...same.c) - Math.min(...same.c) < 80, `diff ${d.name}: a rerun of one program (${same.d.toFixed(2)} points) is painted pale, not ${same.c}`);
    await p2.close();
  }
  await opensOnBase(page, `diff ${d.name}`, 0);
  await labelsReadable(page, `diff ${d.name}`);
  // what went away is seen with the baseline's widths
  const before = await page.evaluate((p) => !!unwound.rectOf(unwound.find(p)), d.shrank);
  await page.click('#negate');
  const after = await page.evaluate((p) => !!unwound.rectOf(unwound.find(p)), d.shrank);
  check(!before && after, `diff ${d.name}: ${d.shrank[d.shrank.length - 1]} (gone) is drawn only with the baseline's widths`);
  await labelsReadable(page, `diff ${d.name} with the baseline's widths`);
  await page.click('#negate');
  check(errors.length === 0, `diff ${d.name}: no errors after interaction ${errors.join('; ')}`);
  await page.screenshot({ path: path.join(work, `diff-${d.name}.png`), fullPage: true });
  await page.close();
}
await browser.close();
if (failures) { console.log(`${failures} checks failed`); process.exit(1); }
console.log('viewers: ok');
