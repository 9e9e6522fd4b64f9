// SPDX-License-Identifier: MIT
// How responsive the flame graph page is on a large profile: times, in headless Chromium, the
// page's load (JSON parse, tree, first drawing), a zoom by click, a search, the callers view and
// a time-range selection, and counts the tree's nodes. Not a test: figures for bench/README.md.
//   node bench/flamegraph.mjs PAGE.html   (UW_TEST_NODE: where puppeteer-core is installed)
import path from 'node:path';
import { createRequire } from 'node:module';

const nodeDir = process.env.UW_TEST_NODE || path.join(process.env.HOME, '.cache/unwound/test-node');
const require = createRequire(path.join(nodeDir, 'node_modules', 'x.js'));
const puppeteer = require('puppeteer-core');
const file = path.resolve(process.argv[2]);
const browser = await puppeteer.launch({ executablePath: '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--use-angle=swiftshader', '--enable-unsafe-swiftshader'] });
const page = await browser.newPage();
const errors = [];
page.on('pageerror', (e) => errors.push(e.message));
await page.setViewport({ width: 1600, height: 1000 });
const t0 = Date.now();
await page.goto('file://' + file, { waitUntil: 'load' });
await page.waitForFunction(() => window.unwound && window.unwound.root());
const load = Date.now() - t0;
await new Promise((r) => setTimeout(r, 1500)); // what the page does when idle (the callers' tree)
const nodes = await page.evaluate(() => { let n = 0; (function w(x) { n++; x.kids.forEach(w); })(unwound.root()); return n - 1; });
async function timed(fn, arg) {
  return page.evaluate(async (src, a) => {
    const f = eval(src);
    const t = performance.now();
    f(a);
    await new Promise((r) => requestAnimationFrame(() => r()));
    return performance.now() - t;
  }, fn.toString(), arg);
}
const zoom = await timed(() => { const r = unwound.root(); const k = r.kids[0]; unwound.zoomTo([unwound.name(k), unwound.name(k.kids[0])]); });
const unzoom = await timed(() => unwound.zoomTo([]));
const search = await timed(() => unwound.search('malloc|free'));
const clear = await timed(() => unwound.search(''));
const invert = await timed(() => { const e = document.getElementById('inverted'); e.checked = true; e.dispatchEvent(new Event('change')); });
const uninvert = await timed(() => { const e = document.getElementById('inverted'); e.checked = false; e.dispatchEvent(new Event('change')); });
const range = await timed(() => unwound.select(100, 300));
const all = await timed(() => unwound.select(0, unwound.data.nb));
const hover = await page.evaluate(() => {
  const c = document.getElementById('graph').getBoundingClientRect();
  const t = performance.now();
  for (let i = 0; i < 50; i++)
    c && document.getElementById('graph').dispatchEvent(new MouseEvent('mousemove', { clientX: c.left + 10 + i * 20, clientY: c.bottom - 30 }));
  return (performance.now() - t) / 50;
});
console.log(JSON.stringify({ file: path.basename(file), nodes, load_ms: load, zoom_ms: zoom, unzoom_ms: unzoom, search_ms: search,
  clear_ms: clear, invert_ms: invert, uninvert_ms: uninvert, range_ms: range, all_ms: all, hover_ms: +hover.toFixed(2), errors }));
await browser.close();
