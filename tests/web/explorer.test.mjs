#!/usr/bin/env node
// End-to-end test of the explorer page (web/explorer/) served by `kf serve`, in a real headless
// Chromium driven by playwright-core (resolved from web/node_modules, so any cwd works).
//
//   node tests/web/explorer.test.mjs --server-cmd "build/release/kf serve" --out DIR
//   KF_EXE=build/release/kf KF_TEST_OUT=DIR node tests/web/explorer.test.mjs
//   node tests/web/explorer.test.mjs --mock --out DIR        # against tests/web/mock_server.mjs
//
// The server is started as `<server-cmd> --port P --host 127.0.0.1` on a free port and is always
// stopped at the end, as is the browser. Chromium: $KF_CHROMIUM or /usr/bin/chromium (Debian's
// package `chromium`; no browser download). Prints one line per check and a closing
// "explorer: N passed, M failed"; exits 0 only when every check passed (2 on a usage or setup error).

import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '../..');
const HOST = '127.0.0.1';
const SERVER_START_TIMEOUT_MS = 20_000;
const WHOLE_TEST_TIMEOUT_MS = 180_000;

// ---------------------------------------------------------------- command line

const USAGE = `usage: node tests/web/explorer.test.mjs [--server-cmd "<path to kf> serve" | --mock] [--out DIR]
  --server-cmd CMD  command that starts the server; "--port P --host 127.0.0.1" is appended
                    (default: "$KF_EXE serve" when KF_EXE is set)
  --mock            start tests/web/mock_server.mjs instead (page development only)
  --out DIR         where explorer.png and the exported plot go (default: $KF_TEST_OUT, else a temp dir)
  env KF_CHROMIUM   Chromium binary (default /usr/bin/chromium)`;

function usageError(msg) {
  console.error(`explorer.test: ${msg}\n${USAGE}`);
  process.exit(2);
}

// Splits a command line the way a POSIX shell would for plain words and '…' / "…" quotes.
function splitCommand(s) {
  const out = [];
  let cur = null, quote = null;
  for (let i = 0; i < s.length; ++i) {
    const c = s[i];
    if (quote) {
      if (c === quote) quote = null;
      else if (c === '\\' && quote === '"' && i + 1 < s.length) cur += s[++i];
      else cur += c;
    } else if (c === '"' || c === "'") {
      quote = c;
      cur ??= '';
    } else if (c === '\\' && i + 1 < s.length) {
      cur = (cur ?? '') + s[++i];
    } else if (/\s/.test(c)) {
      if (cur !== null) out.push(cur), (cur = null);
    } else cur = (cur ?? '') + c;
  }
  if (quote) throw new Error(`unbalanced ${quote} in --server-cmd`);
  if (cur !== null) out.push(cur);
  return out;
}

function parseArgs(argv) {
  const o = { serverCmd: null, mock: false, out: process.env.KF_TEST_OUT || null };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const value = () => (i + 1 < argv.length ? argv[++i] : usageError(`${a} needs a value`));
    if (a === '--server-cmd') o.serverCmd = value();
    else if (a.startsWith('--server-cmd=')) o.serverCmd = a.slice('--server-cmd='.length);
    else if (a === '--out') o.out = value();
    else if (a.startsWith('--out=')) o.out = a.slice('--out='.length);
    else if (a === '--mock') o.mock = true;
    else if (a === '--help' || a === '-h') {
      console.log(USAGE);
      process.exit(0);
    } else usageError(`unknown argument '${a}'`);
  }
  let cmd;
  if (o.mock) cmd = [process.execPath, path.join(here, 'mock_server.mjs')];
  else if (o.serverCmd) {
    try {
      cmd = splitCommand(o.serverCmd);
    } catch (e) {
      usageError(e.message);
    }
  } else if (process.env.KF_EXE) cmd = [process.env.KF_EXE, 'serve'];
  else usageError('say which server to test: --server-cmd, KF_EXE or --mock');
  if (!cmd.length) usageError('--server-cmd is empty');
  o.cmd = cmd;
  o.out = path.resolve(o.out || fs.mkdtempSync(path.join(os.tmpdir(), 'kf-explorer-test-')));
  return o;
}

// ---------------------------------------------------------------- checks

const results = [];
class Fatal extends Error {}

async function check(name, fn, { fatal = false } = {}) {
  try {
    const detail = await fn();
    results.push({ name, ok: true });
    console.log(`PASS ${name}${detail ? ` — ${detail}` : ''}`);
    return true;
  } catch (e) {
    results.push({ name, ok: false });
    const msg = (e && e.message ? e.message : String(e)).replace(/\x1b\[[0-9;]*m/g, '').split('\n').slice(0, 6).join('\n     ');
    console.log(`FAIL ${name}: ${msg}`);
    if (fatal) throw new Fatal(`'${name}' failed; the checks after it need it`);
    return false;
  }
}

function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// data-values holds a JSON array or a comma-separated list; null / NaN entries stay null.
function parseValues(s, what) {
  assert(typeof s === 'string' && s.length > 0, `${what} has no data-values`);
  const t = s.trim();
  if (t.startsWith('[')) return JSON.parse(t);
  return t.split(',').map((v) => (v.trim() === '' || /^(null|nan)$/i.test(v.trim()) ? null : Number(v)));
}

const finite = (a) => a.filter((v) => typeof v === 'number' && Number.isFinite(v));
const sum = (a) => finite(a).reduce((s, v) => s + v, 0);

function maxAbsDiff(a, b) {
  if (a.length !== b.length) return Infinity;
  let m = 0;
  for (let i = 0; i < a.length; ++i) {
    const x = a[i], y = b[i];
    if ((x === null) !== (y === null)) return Infinity;
    if (x !== null) m = Math.max(m, Math.abs(x - y));
  }
  return m;
}

// ---------------------------------------------------------------- server

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, HOST, () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function startServer(cmd, port) {
  const args = [...cmd.slice(1), '--port', String(port), '--host', HOST];
  const child = spawn(cmd[0], args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const server = { child, cmdline: [cmd[0], ...args].join(' '), output: '', exited: null };
  const keep = (chunk) => {
    server.output = (server.output + chunk.toString()).slice(-8000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  child.on('error', (e) => (server.exited = `could not be started: ${e.message}`));
  child.on('exit', (code, sig) => (server.exited = sig ? `killed by ${sig}` : `exited with code ${code}`));
  return server;
}

async function stopServer(server) {
  if (!server || server.exited) return;
  const { child } = server;
  const signal = (sig) => {
    try {
      process.kill(-child.pid, sig); // its process group: also a wrapper script's children
    } catch {
      try {
        child.kill(sig);
      } catch {
        /* already gone */
      }
    }
  };
  const gone = new Promise((r) => child.once('exit', r));
  signal('SIGTERM');
  if (await Promise.race([gone.then(() => true), sleep(3000).then(() => false)])) return;
  signal('SIGKILL');
  await Promise.race([gone, sleep(2000)]);
}

function serverTail(server) {
  const t = server.output.trim();
  return t ? `\n     server output (last lines):\n     ${t.split('\n').slice(-12).join('\n     ')}` : '';
}

// GET with the path sent byte for byte (no URL normalization), over a plain socket.
function rawGet(port, rawPath, timeoutMs = 5000) {
  return new Promise((resolve) => {
    const sock = net.connect(port, HOST);
    const chunks = [];
    const done = (err) => {
      sock.destroy();
      const text = Buffer.concat(chunks).toString('latin1');
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      const split = text.indexOf('\r\n\r\n');
      resolve({ status: m ? Number(m[1]) : null, head: split >= 0 ? text.slice(0, split) : text, body: split >= 0 ? text.slice(split + 4) : '', err });
    };
    sock.setTimeout(timeoutMs, () => done('timeout'));
    sock.on('connect', () => sock.write(`GET ${rawPath} HTTP/1.1\r\nHost: ${HOST}:${port}\r\nConnection: close\r\n\r\n`));
    sock.on('data', (c) => chunks.push(c));
    sock.on('end', () => done(null));
    sock.on('error', (e) => done(e.message));
  });
}

async function getJson(base, pathAndQuery) {
  const res = await fetch(base + pathAndQuery);
  const text = await res.text();
  let body = null;
  try {
    body = JSON.parse(text);
  } catch {
    /* left null */
  }
  return { status: res.status, body, text, type: res.headers.get('content-type') || '' };
}

async function waitForServer(server, base) {
  const deadline = Date.now() + SERVER_START_TIMEOUT_MS;
  let last = 'no answer yet';
  while (Date.now() < deadline) {
    if (server.exited) throw new Error(`the server ${server.exited}${server.exited.startsWith('could not') ? '' : ' before answering'} (${server.cmdline})${serverTail(server)}`);
    try {
      const r = await getJson(base, '/api/kernels');
      if (r.status === 200 && r.body && Array.isArray(r.body.kernels)) return r.body;
      last = `GET /api/kernels: HTTP ${r.status} ${r.text.slice(0, 200)}`;
    } catch (e) {
      last = e.cause ? e.cause.code || e.cause.message : e.message;
    }
    await sleep(150);
  }
  throw new Error(`no answer from ${base}/api/kernels within ${SERVER_START_TIMEOUT_MS / 1000} s (last: ${last}; ${server.cmdline})${serverTail(server)}`);
}

// ---------------------------------------------------------------- the test

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
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  const pageErrors = [], consoleErrors = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(m.text());
  });

  const attr = (sel, name) => page.$eval(sel, (e, n) => e.getAttribute(n), name);
  const values = async (sel) => parseValues(await attr(sel, 'data-values'), sel);
  const statusOk = () => page.waitForFunction(() => document.getElementById('status')?.dataset.state === 'ok', null, { timeout: 15_000 });
  const query = async () => new URLSearchParams(await attr('#main-plot', 'data-query'));
  // waits until the attribute differs from `before` while the page is idle and not in error
  const waitChanged = (sel, before) => page.waitForFunction(([s, b]) => {
    const e = document.querySelector(s);
    const st = document.getElementById('status')?.dataset.state;
    return e && e.getAttribute('data-values') !== b && st === 'ok';
  }, [sel, before], { timeout: 10_000 });

  await check('page loads, fills the function and kernel lists, draws the NW curve', async () => {
    const res = await page.goto(`${base}/`, { waitUntil: 'load' });
    assert(res && res.status() === 200, `GET / answered HTTP ${res && res.status()}`);
    await page.waitForSelector('#nw-curve[data-values]', { timeout: 15_000 });
    await statusOk();
    const kernelOpts = await page.$$eval('#kernel option', (os_) => os_.map((o) => o.value));
    const fnOpts = await page.$$eval('#function option', (os_) => os_.map((o) => o.value));
    assert(kernelOpts.includes('gaussian'), `kernel list lacks gaussian: ${kernelOpts}`);
    assert(kernelOpts.length === kernels.kernels.length, `kernel list has ${kernelOpts.length} entries, /api/kernels ${kernels.kernels.length}`);
    assert(fnOpts.length >= 1, 'function list is empty');
    return `${fnOpts.length} functions, ${kernelOpts.length} kernels`;
  }, { fatal: true });

  let n = 0, G = 0;
  await check('main plot shows the /api/smooth answer (points, NW, attention, truth)', async () => {
    const q = await query();
    n = Number(q.get('n'));
    G = Number(q.get('grid'));
    const nw = await values('#nw-curve');
    const att = await values('#attention-curve');
    const pts = await page.$$eval('#main-plot .point', (ps) => ps.length);
    assert(pts === n, `${pts} .point circles for n = ${n}`);
    assert(nw.length === G && att.length === G, `curves have ${nw.length} / ${att.length} values for grid = ${G}`);
    assert(finite(nw).length > G / 2 && finite(att).length === G, 'curves are mostly undefined');
    assert((await attr('#nw-curve', 'd')).length > 20, '#nw-curve has no drawn path');
    assert((await page.$$('#main-plot text')).length > 10, 'axes have no tick labels');
    const api = await getJson(base, `/api/smooth?${q}`);
    assert(api.status === 200, `GET /api/smooth?${q}: HTTP ${api.status}`);
    const dn = maxAbsDiff(nw, api.body.nw), da = maxAbsDiff(att, api.body.attention);
    assert(dn < 1e-9 && da < 1e-9, `page and API disagree: max |Δ| NW ${dn}, attention ${da}`);
    return `n = ${n}, grid = ${G}, ${q.get('kernel')} h = ${q.get('bandwidth')}, T = ${q.get('temperature')}`;
  });

  await check('bandwidth slider (keyboard) changes the NW curve and leaves attention alone', async () => {
    const nw0 = await attr('#nw-curve', 'data-values');
    const att0 = await attr('#attention-curve', 'data-values');
    const h0 = await page.inputValue('#bandwidth-number');
    await page.focus('#bandwidth');
    for (let i = 0; i < 25; ++i) await page.keyboard.press('ArrowRight');
    await waitChanged('#nw-curve', nw0);
    const h1 = await page.inputValue('#bandwidth-number');
    const q = await query();
    assert(Number(h1) > Number(h0), `displayed bandwidth went ${h0} -> ${h1}`);
    assert(Number(q.get('bandwidth')) === Number(h1), `plot is for h = ${q.get('bandwidth')}, control shows ${h1}`);
    assert((await attr('#attention-curve', 'data-values')) === att0, 'the attention curve changed with the bandwidth');
    return `h ${h0} -> ${h1}`;
  });

  await check('rapid bandwidth changes: the final value is what is drawn (stale answers ignored)', async () => {
    // 120 ms apart: longer than the page's debounce, so several requests are in flight at once
    for (const v of ['-1.2', '0.8', '-0.6', '0.1', '-0.45']) {
      await page.locator('#bandwidth').fill(v);
      await sleep(120);
    }
    const want = Number((10 ** -0.45).toPrecision(3));
    await page.waitForFunction((w) => {
      const q = new URLSearchParams(document.getElementById('main-plot').dataset.query || '');
      return Number(q.get('bandwidth')) === w && document.getElementById('status').dataset.state === 'ok';
    }, want, { timeout: 10_000 });
    await sleep(400); // any late answer would land now
    const q = await query();
    assert(Number(q.get('bandwidth')) === want, `after settling the plot is for h = ${q.get('bandwidth')}, want ${want}`);
    const api = await getJson(base, `/api/smooth?${q}`);
    const d = maxAbsDiff(await values('#nw-curve'), api.body.nw);
    assert(d < 1e-9, `NW curve differs from /api/smooth for h = ${want} by ${d}`);
    return `h = ${want}`;
  });

  await check('"use LOO-CV bandwidth" sets h to bandwidth_loo', async () => {
    const q0 = await query();
    const api = await getJson(base, `/api/smooth?${q0}`);
    const loo = api.body.bandwidth_loo;
    assert(typeof loo === 'number' && loo > 0, `bandwidth_loo is ${loo}`);
    await page.click('#use-loo');
    await page.waitForFunction((l) => {
      const q = new URLSearchParams(document.getElementById('main-plot').dataset.query || '');
      return Math.abs(Number(q.get('bandwidth')) - l) <= 1e-3 * l && document.getElementById('status').dataset.state === 'ok';
    }, loo, { timeout: 10_000 });
    return `bandwidth_loo = ${loo}`;
  });

  await check('temperature slider (keyboard) changes the attention curve and leaves NW alone', async () => {
    const nw0 = await attr('#nw-curve', 'data-values');
    const att0 = await attr('#attention-curve', 'data-values');
    await page.focus('#temperature');
    for (let i = 0; i < 20; ++i) await page.keyboard.press('ArrowRight');
    await waitChanged('#attention-curve', att0);
    assert((await attr('#nw-curve', 'data-values')) === nw0, 'the NW curve changed with the temperature');
    return `T = ${await page.inputValue('#temperature-number')}`;
  });

  await check('clicking data point 5 shows NW and attention weight profiles (n weights each, summing to 1)', async () => {
    const target = page.locator('#main-plot .point[data-index="5"]');
    try {
      await target.click({ timeout: 5000 });
    } catch (e) {
      // Another circle covering point 5's centre is the only accepted reason to force it.
      if (!/intercepts pointer events/.test(e.message)) throw e;
      console.log(`     note: point 5 is covered by a neighbour; clicking its centre anyway (${e.message.replace(/\x1b\[[0-9;]*m/g, '').split('\n').filter((l) => /intercepts/.test(l))[0].trim()})`);
      await target.click({ force: true });
    }
    await page.waitForSelector('#profile-plot[data-point="5"] #profile-nw[data-values]', { timeout: 10_000 });
    await page.waitForSelector('#profile-attention[data-values]', { timeout: 10_000 });
    const cls = await attr('#main-plot .point[data-index="5"]', 'class');
    assert(/\bselected\b/.test(cls), `point 5 is not highlighted (class '${cls}')`);
    const pn = await values('#profile-nw');
    const pa = await values('#profile-attention');
    assert(pn.length === n && pa.length === n, `profiles have ${pn.length} / ${pa.length} entries for n = ${n}`);
    assert(finite(pn).length === n && finite(pa).length === n, 'profiles have undefined entries');
    assert(Math.abs(sum(pn) - 1) < 1e-6 && Math.abs(sum(pa) - 1) < 1e-6, `sums are ${sum(pn)} (NW), ${sum(pa)} (attention)`);
    assert(Math.min(...pn, ...pa) >= -1e-12, 'a weight is negative');
    const q = await query();
    const api = await getJson(base, `/api/profile?${q}&point=5`);
    assert(api.status === 200, `GET /api/profile: HTTP ${api.status}`);
    const d = Math.max(maxAbsDiff(pn, api.body.nw), maxAbsDiff(pa, api.body.attention));
    assert(d < 1e-9, `profile plot differs from /api/profile by ${d}`);
    return `Σ NW = ${sum(pn).toFixed(9)}, Σ attention = ${sum(pa).toFixed(9)}`;
  });

  await check('heatmap switches between NW and attention weights and is drawn', async () => {
    const mode0 = await attr('#heatmap', 'data-mode');
    assert(mode0 === 'nw', `heatmap starts in mode '${mode0}'`);
    const colours = () => page.$eval('#heatmap', (c) => {
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      const seen = new Set();
      for (let i = 0; i < d.length; i += 4 * 7) seen.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
      return seen.size;
    });
    const cNw = await colours();
    await page.click('label[for="heatmap-mode-attention"]');
    await page.waitForFunction(() => document.getElementById('heatmap').dataset.mode === 'attention', null, { timeout: 5000 });
    const cAtt = await colours();
    await page.keyboard.press('ArrowLeft'); // radio group: keyboard back to NW
    await page.waitForFunction(() => document.getElementById('heatmap').dataset.mode === 'nw', null, { timeout: 5000 });
    assert(cNw > 20 && cAtt > 20, `heatmap looks blank (${cNw} / ${cAtt} colours)`);
    return `${cNw} / ${cAtt} colours`;
  });

  await check('status line shows no error', async () => {
    await statusOk();
    const txt = (await page.textContent('#status')).trim();
    assert(!/error/i.test(txt), `#status says '${txt}'`);
    return `'${txt}'`;
  });

  await check('"Save SVG" and "Save PNG" export the main plot', async () => {
    const [svgDl] = await Promise.all([page.waitForEvent('download', { timeout: 10_000 }), page.click('#save-svg')]);
    const svgPath = path.join(opts.out, 'main-plot.svg');
    await svgDl.saveAs(svgPath);
    const svg = fs.readFileSync(svgPath, 'utf8');
    assert(svg.includes('<svg') && svg.includes('nw-curve') && svg.includes('attention-curve'), 'the SVG lacks the curves');
    const [pngDl] = await Promise.all([page.waitForEvent('download', { timeout: 10_000 }), page.click('#save-png')]);
    const pngPath = path.join(opts.out, 'main-plot.png');
    await pngDl.saveAs(pngPath);
    const png = fs.readFileSync(pngPath);
    assert(png.length > 5000 && png.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])), 'the PNG is not a PNG');
    return `${svgDl.suggestedFilename()} (${svg.length} B), ${pngDl.suggestedFilename()} (${png.length} B)`;
  });

  await check(`screenshot ${path.join(opts.out, 'explorer.png')}`, async () => {
    await page.mouse.move(0, 0);
    await page.screenshot({ path: path.join(opts.out, 'explorer.png'), fullPage: true });
  });

  let expected4xx = [0, 0]; // console errors logged while the page asks for n = 5000 on purpose
  await check('an API error (n = 5000) shows in #status and clears after a fix', async () => {
    expected4xx[0] = consoleErrors.length;
    await page.fill('#n', '5000');
    await page.waitForFunction(() => document.getElementById('status').dataset.state === 'error', null, { timeout: 10_000 });
    const txt = (await page.textContent('#status')).trim();
    assert(txt.length > 'Error:'.length + 3, `#status says only '${txt}'`);
    await page.screenshot({ path: path.join(opts.out, 'explorer-error.png') });
    expected4xx[1] = consoleErrors.length;
    await page.fill('#n', String(n));
    await statusOk();
    return `'${txt}'`;
  });

  await check('GET /api/smooth?bandwidth=-1 answers 400 with an "error" field', async () => {
    const r = await getJson(base, '/api/smooth?function=seed001&n=40&noise=1&seed=0&kernel=gaussian&bandwidth=-1&temperature=0.25&grid=200');
    assert(r.status === 400, `HTTP ${r.status}: ${r.text.slice(0, 200)}`);
    assert(r.body && typeof r.body.error === 'string' && r.body.error.length > 0, `body is ${r.text.slice(0, 200)}`);
    return `"${r.body.error}"`;
  });

  await check('GET /api/smooth with an unknown kernel answers 4xx with an "error" field', async () => {
    const r = await getJson(base, '/api/smooth?function=seed001&n=40&kernel=no_such_kernel&bandwidth=0.5&temperature=0.25');
    assert(r.status >= 400 && r.status < 500, `HTTP ${r.status}: ${r.text.slice(0, 200)}`);
    assert(r.body && typeof r.body.error === 'string', `body is ${r.text.slice(0, 200)}`);
    return `HTTP ${r.status} "${r.body.error}"`;
  });

  await check('GET /api/profile?point=99999 answers 4xx', async () => {
    const r = await getJson(base, '/api/profile?function=seed001&n=40&noise=1&seed=0&kernel=gaussian&bandwidth=0.5&temperature=0.25&grid=200&point=99999');
    assert(r.status >= 400 && r.status < 500, `HTTP ${r.status}: ${r.text.slice(0, 200)}`);
    assert(r.body && typeof r.body.error === 'string', `body is ${r.text.slice(0, 200)}`);
    return `HTTP ${r.status} "${r.body.error}"`;
  });

  await check('static files: /app.js and /style.css are served', async () => {
    for (const [p, type] of [['/app.js', /javascript/], ['/style.css', /css/]]) {
      const r = await fetch(base + p);
      assert(r.status === 200, `${p}: HTTP ${r.status}`);
      const ct = r.headers.get('content-type') || '';
      assert(type.test(ct), `${p}: Content-Type '${ct}'`);
    }
  });

  await check('path traversal (/../../etc/passwd and encoded forms) does not leak files', async () => {
    const seen = [];
    for (const p of ['/../../etc/passwd', '/../../../../../../etc/passwd', '/%2e%2e/%2e%2e/etc/passwd', '/..%2f..%2f..%2fetc%2fpasswd', '/static/../../etc/passwd']) {
      const r = await rawGet(port, p);
      // The contract: never /etc/passwd. A 200 that is not the file (say, the page) is allowed.
      assert(!/root:[^:\n]*:0:0:/.test(r.body), `GET ${p} answered HTTP ${r.status} with /etc/passwd's content`);
      seen.push(`${p} -> ${r.status ?? r.err ?? 'closed'}`);
    }
    return seen.join(', ');
  });

  await check('no uncaught page errors or console errors', async () => {
    // The n = 5000 check makes the browser log its failed request (HTTP 4xx) on purpose.
    const unexpected = consoleErrors.filter((t, i) => !(i >= expected4xx[0] && i < expected4xx[1] && /status of 4\d\d/.test(t)));
    assert(pageErrors.length === 0, `page errors: ${pageErrors.join(' | ')}`);
    assert(unexpected.length === 0, `console errors: ${unexpected.join(' | ')}`);
  });

  assert(!server.exited, `the server ${server.exited} during the test${serverTail(server)}`);
  return 0;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const cleanup = { server: null, browser: null, done: false };
  const teardown = async () => {
    if (cleanup.done) return;
    cleanup.done = true;
    if (cleanup.browser) await Promise.race([cleanup.browser.close().catch(() => {}), sleep(5000)]);
    await stopServer(cleanup.server);
  };
  const bail = (why) => async () => {
    console.log(`FAIL ${why}`);
    await teardown();
    process.exit(1);
  };
  process.on('SIGINT', bail('interrupted'));
  process.on('SIGTERM', bail('terminated'));
  process.on('exit', () => {
    // last resort if something above threw past the finally
    if (cleanup.server && !cleanup.server.exited) {
      try {
        process.kill(-cleanup.server.child.pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  });
  const watchdog = setTimeout(bail(`the whole test took over ${WHOLE_TEST_TIMEOUT_MS / 1000} s`), WHOLE_TEST_TIMEOUT_MS);

  let code = 1;
  try {
    code = await run(opts, cleanup);
  } catch (e) {
    if (!(e instanceof Fatal)) {
      results.push({ name: 'test harness', ok: false });
      console.log(`FAIL test harness: ${e && e.stack ? e.stack : e}`);
    } else console.log(`explorer: stopping early: ${e.message}`);
    code = 1;
  } finally {
    clearTimeout(watchdog);
    await teardown();
  }
  const passed = results.filter((r) => r.ok).length;
  const failed = results.length - passed;
  if (code === 2) process.exit(2);
  console.log(`explorer: output in ${opts.out}`);
  console.log(`explorer: ${passed} passed, ${failed} failed`);
  process.exit(failed === 0 && code === 0 && passed > 0 ? 0 : 1);
}

main();
