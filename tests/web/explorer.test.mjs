#!/usr/bin/env node
// End-to-end test of the explorer page (web/explorer/) served by `kf serve`, in a real headless
// Chromium driven by playwright-core (resolved from web/node_modules, so any cwd works).
//
//   node tests/web/explorer.test.mjs --server-cmd "build/release/kf serve" --out DIR
//   KF_EXE=build/release/kf KF_TEST_OUT=DIR node tests/web/explorer.test.mjs
//
// The server is started as `<server-cmd> --port P --host 127.0.0.1` on a free port and is always
// stopped at the end, as is the browser. Chromium: $KF_CHROMIUM or /usr/bin/chromium (Debian's
// package `chromium`; no browser download). Prints one line per check and a closing
// "explorer: N passed, M failed"; exits 0 only when every check passed (2 on a usage or setup
// error). This file: loading, the seed-001 curve against numpy, sliders, profiles, heatmap,
// compression, export, API errors, static files. explorer_modes.mjs: data sets, kernels and
// their parameters, attention modes, selection, errors, the 390 px layout, update latency.

import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

import {
  HOST, assert, check, finite, freePort, getJson, main, maxAbsDiff, parseValues, rawGet, serverTail,
  sleep, startServer, sum, waitForServer,
} from './harness.mjs';
import { modeChecks } from './explorer_modes.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '../..');
const fixture = JSON.parse(fs.readFileSync(path.join(repoRoot, 'tests/fixtures/explorer_seed001_nw.json'), 'utf8'));

// Helpers bound to one page: attributes, parsed data-values, waiting for the page to settle.
function pageTools(page, base) {
  const t = { page, base };
  t.attr = (sel, name) => page.$eval(sel, (e, n) => e.getAttribute(n), name);
  t.values = async (sel) => parseValues(await t.attr(sel, 'data-values'), sel);
  t.statusOk = () => page.waitForFunction(() => document.getElementById('status')?.dataset.state === 'ok', null, { timeout: 20_000 });
  t.query = async () => new URLSearchParams(await t.attr('#main-plot', 'data-query'));
  // until the plot on screen was asked with every key of `want` and the page is idle and fine
  t.waitQuery = (want, timeout = 20_000) => page.waitForFunction((w) => {
    const q = new URLSearchParams(document.getElementById('main-plot').dataset.query || '');
    return document.getElementById('status').dataset.state === 'ok' && Object.entries(w).every(([k, v]) => q.get(k) === String(v));
  }, want, { timeout });
  t.waitChanged = (sel, before) => page.waitForFunction(([s, b]) => {
    const e = document.querySelector(s);
    return e && e.getAttribute('data-values') !== b && document.getElementById('status')?.dataset.state === 'ok';
  }, [sel, before], { timeout: 15_000 });
  t.waitFit = () => page.waitForFunction(() => document.getElementById('head-panel').dataset.fitState === 'ok', null, { timeout: 20_000 });
  t.api = async (q, extra = '') => (await getJson(base, `/api/smooth?${q}${extra}`)).body;
  return t;
}

async function coreChecks(t, kernels, consoleErrors) {
  const { page, base } = t;
  await check('page loads with the seed-001 preset, fills the lists, draws the NW curve', async () => {
    const res = await page.goto(`${base}/`, { waitUntil: 'load' });
    assert(res && res.status() === 200, `GET / answered HTTP ${res && res.status()}`);
    await page.waitForSelector('#nw-curve[data-values]', { timeout: 15_000 });
    await t.statusOk();
    const kernelOpts = await page.$$eval('#kernel option', (os_) => os_.map((o) => o.value));
    assert(kernelOpts.includes('gaussian') && kernelOpts.includes('periodic'), `kernel list: ${kernelOpts}`);
    assert(kernelOpts.length === kernels.kernels.length, `kernel list has ${kernelOpts.length} entries, /api/kernels ${kernels.kernels.length}`);
    assert((await page.inputValue('#preset')) === 'seed001', `preset shows ${await page.inputValue('#preset')}`);
    const q = await t.query();
    assert(q.get('function') === 'seed001_numpy', `function ${q.get('function')}`);
    return `${kernelOpts.length} kernels; ${q}`;
  }, { fatal: true });

  await check('the NW curve on the page equals numpy\'s (seed 001\'s 40 points, gaussian h = 0.3162)', async () => {
    const q = await t.query();
    const want = fixture.curves[0];
    assert(Number(q.get('bandwidth')) === want.bandwidth && q.get('kernel') === 'gaussian', `the page shows ${q}`);
    const nw = await t.values('#nw-curve');
    const d = maxAbsDiff(nw, want.nw);
    assert(d < 1e-4, `max |page − numpy| = ${d}`);
    const api = await t.api(q);
    const dApi = Math.max(maxAbsDiff(nw, api.nw), maxAbsDiff(await t.values('#attention-curve'), api.attention));
    assert(dApi === 0, `page and API differ by ${dApi}`);
    return `max |page − numpy| = ${d.toExponential(2)} over ${nw.length} grid points`;
  });

  await check('the profile shows the middle point on first load; curves are drawn above the points', async () => {
    const api = await t.api(await t.query());
    let mid = 0;
    api.x.forEach((x, i) => (Math.abs(x - 3) < Math.abs(api.x[mid] - 3) ? (mid = i) : 0));
    await page.waitForSelector('#profile-plot[data-point]');
    const shown = Number(await t.attr('#profile-plot', 'data-point'));
    assert(shown === mid, `profile of point ${shown}, the point nearest x = 3 is ${mid}`);
    const above = await page.evaluate(() => {
      const pts = document.querySelector('#main-plot .points');
      const after = (id) => Boolean(pts.compareDocumentPosition(document.getElementById(id)) & Node.DOCUMENT_POSITION_FOLLOWING);
      return after('nw-curve') && after('attention-curve') && after('truth-curve');
    });
    assert(above, 'a curve is drawn before (under) the points');
    return `point ${mid} (x = ${api.x[mid]})`;
  });

  await check('bandwidth slider (keyboard) changes the NW curve and leaves attention alone', async () => {
    const nw0 = await t.attr('#nw-curve', 'data-values');
    const att0 = await t.attr('#attention-curve', 'data-values');
    const h0 = await page.inputValue('#bandwidth-number');
    await page.focus('#bandwidth');
    for (let i = 0; i < 25; ++i) await page.keyboard.press('ArrowRight');
    await t.waitChanged('#nw-curve', nw0);
    await t.waitQuery({ bandwidth: await page.inputValue('#bandwidth-number') });
    const h1 = await page.inputValue('#bandwidth-number');
    assert(Number(h1) > Number(h0), `displayed bandwidth went ${h0} -> ${h1}`);
    assert((await t.attr('#attention-curve', 'data-values')) === att0, 'the attention curve changed with the bandwidth');
    return `h ${h0} -> ${h1}`;
  });

  await check('rapid bandwidth changes: the final value is what is drawn (stale answers ignored)', async () => {
    for (const v of ['-1.2', '0.8', '-0.6', '0.1', '-0.45']) {
      await page.locator('#bandwidth').fill(v);
      await sleep(120); // longer than the debounce: several requests in flight at once
    }
    const want = Number((10 ** -0.45).toPrecision(3));
    await t.waitQuery({ bandwidth: want });
    await sleep(400); // any late answer would land now
    const q = await t.query();
    assert(Number(q.get('bandwidth')) === want, `after settling the plot is for h = ${q.get('bandwidth')}, want ${want}`);
    const d = maxAbsDiff(await t.values('#nw-curve'), (await t.api(q)).nw);
    assert(d === 0, `NW curve differs from /api/smooth for h = ${want} by ${d}`);
    return `h = ${want}`;
  });

  await check('"use LOO-CV bandwidth" sets h to /api/fit\'s bandwidth_loo', async () => {
    await t.waitFit();
    const loo = (await getJson(base, `/api/fit?${await t.query()}`)).body.bandwidth_loo;
    assert(typeof loo === 'number' && loo > 0, `bandwidth_loo is ${loo}`);
    await page.click('#use-loo');
    await page.waitForFunction((l) => {
      const q = new URLSearchParams(document.getElementById('main-plot').dataset.query || '');
      return Math.abs(Number(q.get('bandwidth')) - l) <= 1e-3 * l && document.getElementById('status').dataset.state === 'ok';
    }, loo, { timeout: 15_000 });
    return `bandwidth_loo = ${loo}`;
  });

  await check('temperature slider (keyboard) changes the attention curve and leaves NW alone', async () => {
    const nw0 = await t.attr('#nw-curve', 'data-values');
    const att0 = await t.attr('#attention-curve', 'data-values');
    await page.focus('#temperature');
    for (let i = 0; i < 20; ++i) await page.keyboard.press('ArrowRight');
    await t.waitChanged('#attention-curve', att0);
    assert((await t.attr('#nw-curve', 'data-values')) === nw0, 'the NW curve changed with the temperature');
    return `T = ${await page.inputValue('#temperature-number')}`;
  });

  await check('clicking data point 5 shows NW and attention weight profiles (n weights each, summing to 1)', async () => {
    await t.statusOk();
    await page.locator('#main-plot .point[data-index="5"]').click({ timeout: 5000 });
    await page.waitForSelector('#profile-plot[data-point="5"] #profile-nw[data-values]', { timeout: 10_000 });
    const cls = await t.attr('#main-plot .point[data-index="5"]', 'class');
    assert(/\bselected\b/.test(cls), `point 5 is not highlighted (class '${cls}')`);
    const pn = await t.values('#profile-nw'), pa = await t.values('#profile-attention');
    const n = (await t.api(await t.query())).n;
    assert(pn.length === n && pa.length === n && finite(pn).length === n && finite(pa).length === n, `profiles have ${pn.length} / ${pa.length} entries for n = ${n}`);
    assert(Math.abs(sum(pn) - 1) < 1e-3 && Math.abs(sum(pa) - 1) < 1e-3, `sums are ${sum(pn)} (NW), ${sum(pa)} (attention)`);
    assert(Math.min(...pn, ...pa) >= 0, 'a weight is negative');
    const api = await getJson(base, `/api/profile?${await t.query()}&point=5`);
    assert(api.status === 200, `GET /api/profile: HTTP ${api.status}`);
    const d = Math.max(maxAbsDiff(pn, api.body.nw), maxAbsDiff(pa, api.body.attention));
    assert(d === 0, `profile plot differs from /api/profile by ${d}`);
    return `Σ NW = ${sum(pn).toFixed(5)}, Σ attention = ${sum(pa).toFixed(5)} (4 significant digits each)`;
  });

  await check('heatmap switches between NW and attention weights, each drawn, the two different', async () => {
    assert((await t.attr('#heatmap', 'data-mode')) === 'nw', 'heatmap does not start in NW mode');
    // Every 7th pixel's colour, in order: its distinct colours say it is drawn, and the two modes'
    // sequences compared pixel by pixel say they show different matrices.
    const pixels = () => page.$eval('#heatmap', (c) => {
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      const out = [];
      for (let i = 0; i < d.length; i += 4 * 7) out.push((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
      return out;
    });
    const pNw = await pixels();
    await page.click('label[for="heatmap-mode-attention"]');
    await page.waitForFunction(() => document.getElementById('heatmap').dataset.mode === 'attention', null, { timeout: 5000 });
    const pAtt = await pixels();
    await page.keyboard.press('ArrowLeft'); // radio group: keyboard back to NW
    await page.waitForFunction(() => document.getElementById('heatmap').dataset.mode === 'nw', null, { timeout: 5000 });
    const pBack = await pixels();
    const cNw = new Set(pNw).size, cAtt = new Set(pAtt).size;
    assert(cNw > 20 && cAtt > 20, `heatmap looks blank (${cNw} / ${cAtt} colours)`);
    assert(pNw.length === pAtt.length, `the heatmap changed size (${pNw.length} / ${pAtt.length} samples)`);
    const differ = pNw.filter((v, i) => v !== pAtt[i]).length / pNw.length;
    assert(differ > 0.05, `NW and attention heatmaps differ in only ${(100 * differ).toFixed(1)}% of pixels`);
    const redrawn = pBack.filter((v, i) => v !== pNw[i]).length;
    assert(redrawn === 0, `back in NW mode, ${redrawn} pixels differ from the first NW drawing`);
    return `${cNw} / ${cAtt} colours, ${(100 * differ).toFixed(1)}% of pixels differ between modes`;
  });

  await check('"Save SVG" and "Save PNG" export the main plot', async () => {
    const [svgDl] = await Promise.all([page.waitForEvent('download', { timeout: 10_000 }), page.click('#save-svg')]);
    const svgPath = path.join(t.out, 'main-plot.svg');
    await svgDl.saveAs(svgPath);
    const svg = fs.readFileSync(svgPath, 'utf8');
    assert(svg.includes('<svg') && svg.includes('nw-curve') && svg.includes('attention-curve'), 'the SVG lacks the curves');
    const [pngDl] = await Promise.all([page.waitForEvent('download', { timeout: 10_000 }), page.click('#save-png')]);
    const pngPath = path.join(t.out, 'main-plot.png');
    await pngDl.saveAs(pngPath);
    const png = fs.readFileSync(pngPath);
    assert(png.length > 5000 && png.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])), 'the PNG is not a PNG');
    return `${svgDl.suggestedFilename()} (${svg.length} B), ${pngDl.suggestedFilename()} (${png.length} B)`;
  });
  void consoleErrors;
}

async function apiChecks(base, port) {
  await check('GET /api/smooth?bandwidth=-1 and an unknown kernel answer 400 with an "error" field', async () => {
    const out = [];
    for (const q of ['bandwidth=-1', 'kernel=no_such_kernel', 'kernel=periodic:period=500', 'attention=nope']) {
      const r = await getJson(base, `/api/smooth?${q}`);
      assert(r.status === 400 && r.body && typeof r.body.error === 'string', `${q}: HTTP ${r.status} ${r.text.slice(0, 200)}`);
      out.push(`"${r.body.error}"`);
    }
    return out.join(', ');
  });

  await check('GET /api/profile?point=99999 answers 4xx', async () => {
    const r = await getJson(base, '/api/profile?point=99999');
    assert(r.status >= 400 && r.status < 500 && r.body && typeof r.body.error === 'string', `HTTP ${r.status}: ${r.text.slice(0, 200)}`);
    return `HTTP ${r.status} "${r.body.error}"`;
  });

  await check('static files: /app.js, /plot.js and /style.css are served', async () => {
    for (const [p, type] of [['/app.js', /javascript/], ['/plot.js', /javascript/], ['/style.css', /css/]]) {
      const r = await fetch(base + p);
      assert(r.status === 200, `${p}: HTTP ${r.status}`);
      assert(type.test(r.headers.get('content-type') || ''), `${p}: Content-Type '${r.headers.get('content-type')}'`);
    }
  });

  await check('path traversal (/../../etc/passwd and encoded forms) does not leak files', async () => {
    const seen = [];
    for (const p of ['/../../etc/passwd', '/../../../../../../etc/passwd', '/%2e%2e/%2e%2e/etc/passwd', '/..%2f..%2f..%2fetc%2fpasswd', '/static/../../etc/passwd']) {
      const r = await rawGet(port, p);
      assert(!/root:[^:\n]*:0:0:/.test(r.body), `GET ${p} answered HTTP ${r.status} with /etc/passwd's content`);
      seen.push(`${p} -> ${r.status ?? r.err ?? 'closed'}`);
    }
    return seen.join(', ');
  });
}

async function run(opts, cleanup) {
  fs.mkdirSync(opts.out, { recursive: true });
  const require = createRequire(path.join(repoRoot, 'web', 'package.json'));
  let chromium;
  try {
    ({ chromium } = require('playwright-core'));
  } catch (e) {
    console.error(`explorer.test: playwright-core not found under ${path.join(repoRoot, 'web', 'node_modules')}: run \`npm ci --prefix web\` (${e.message})`);
    return 2;
  }
  const executablePath = process.env.KF_CHROMIUM || '/usr/bin/chromium';
  if (!fs.existsSync(executablePath)) {
    console.error(`explorer.test: no Chromium at ${executablePath}: \`apt-get install chromium\` or set KF_CHROMIUM`);
    return 2;
  }
  const port = await freePort();
  const base = `http://${HOST}:${port}`;
  const server = startServer(opts.cmd, port);
  cleanup.server = server;
  console.log(`explorer.test: server: ${server.cmdline}`);
  let kernels;
  await check('server answers GET /api/kernels', async () => {
    kernels = await waitForServer(server, base);
    return `${kernels.kernels.length} kernels on port ${port}`;
  }, { fatal: true });

  const browser = await chromium.launch({ executablePath, args: ['--no-sandbox'], headless: true });
  cleanup.browser = browser;
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  const pageErrors = [], consoleErrors = [], expected4xx = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  page.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()));
  const t = { ...pageTools(page, base), out: opts.out, browser, port, expected4xx, consoleErrors };
  const exchanges = [];
  page.on('response', async (r) => {
    if (!r.url().includes('/api/smooth')) return;
    exchanges.push({ req: await r.request().allHeaders(), res: await r.allHeaders() });
  });

  await coreChecks(t, kernels, consoleErrors);
  await check('Chromium offers br/gzip, and no /api/smooth answer comes compressed', async () => {
    assert(exchanges.length > 3, `only ${exchanges.length} /api/smooth answers seen`);
    const ae = exchanges[0].req['accept-encoding'] || '';
    assert(/\bbr\b/.test(ae) && /gzip/.test(ae), `Chromium sent Accept-Encoding '${ae}'`);
    const compressed = exchanges.filter((x) => x.res['content-encoding']);
    assert(compressed.length === 0, `${compressed.length} answers had Content-Encoding ${compressed[0]?.res['content-encoding']}`);
    return `Accept-Encoding: ${ae}; ${exchanges.length} answers, none with a Content-Encoding`;
  });
  await modeChecks(t, fixture);
  await apiChecks(base, port);

  await check('no uncaught page errors or console errors', async () => {
    // The error checks make the browser log their failed requests (HTTP 400) on purpose.
    const unexpected = consoleErrors.filter((m, i) => !(expected4xx.includes(i) && /status of 400/.test(m)));
    assert(pageErrors.length === 0, `page errors: ${pageErrors.join(' | ')}`);
    assert(unexpected.length === 0, `console errors: ${unexpected.join(' | ')}`);
  });
  assert(!server.exited, `the server ${server.exited} during the test${serverTail(server)}`);
  return 0;
}

main(run);
