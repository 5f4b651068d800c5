// The plumbing of the `kf attention --html` page tests (attention.test.mjs, attention_seq2seq.test.mjs):
// running kf, reading kf inspect's CSV, the lines the head view draws, Chromium from
// web/node_modules opened on the page's file with every other request refused, and the process
// (watchdog, "NAME: N passed, M failed", exit code). The named checks themselves are harness.mjs's.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { Fatal, assert, check, results } from './harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '../..');
const WHOLE_TEST_TIMEOUT_MS = 120_000;

// kf's stdout; throws (with its stderr) when it fails.
export function kf(exe, args) {
  return execFileSync(exe, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'],
                                   env: { ...process.env, OMP_NUM_THREADS: '1' } });
}

// A header + rows CSV without quoting (kf inspect --csv) as one object per row, values as strings.
export function readCsv(file) {
  const [head, ...rows] = fs.readFileSync(file, 'utf8').trim().split('\n');
  const names = head.split(',');
  return rows.map((r) => Object.fromEntries(r.split(',').map((v, i) => [names[i], v])));
}

export const close = (a, b, rel = 1e-12) => Math.abs(a - b) <= rel * Math.max(1, Math.abs(b));

// The head view's lines: head (0-based), query i, key j, embedded weight v, opacity, colour.
export async function shownLines(page) {
  return page.$$eval('#lines line', (ls) => ls.map((l) => ({
    h: Number(l.dataset.head) - 1, i: Number(l.dataset.query), j: Number(l.dataset.key),
    v: Number(l.dataset.weight), opacity: Number(l.getAttribute('stroke-opacity')),
    stroke: l.getAttribute('stroke') })));
}

// Hovers query (or key) token `index` of the head view, from outside the page first.
export async function hover(page, side, index) {
  await page.mouse.move(0, 0);
  await page.hover(`#head-view .token.${side}[data-index="${index}"]`);
}

// playwright-core's chromium and the browser binary, or null after saying what is missing.
export function findChromium(name) {
  const require = createRequire(path.join(repoRoot, 'web', 'package.json'));
  let chromium;
  try {
    ({ chromium } = require('playwright-core'));
  } catch (e) {
    console.error(`${name}.test: playwright-core not found under web/node_modules: run \`npm ci --prefix web\` (${e.message})`);
    return null;
  }
  const executablePath = process.env.KF_CHROMIUM || '/usr/bin/chromium';
  if (!fs.existsSync(executablePath)) {
    console.error(`${name}.test: no Chromium at ${executablePath}`);
    return null;
  }
  return { chromium, executablePath };
}

// Opens the page's file in Chromium (`found` from findChromium) with every other request refused;
// the check `openedName` asserts it loads, fetches nothing else and passes `opened(data)` (data:
// the page's embedded JSON; its return is the check's detail), then `checks(page, data)` runs the
// rest and a last check asserts no page or console error. The browser is closed whatever happens.
export async function openPage(found, html, { openedName, opened, checks }) {
  const browser = await found.chromium.launch({ executablePath: found.executablePath,
                                                args: ['--no-sandbox'], headless: true });
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const fileUrl = pathToFileURL(html).href;
    const requests = [];
    await context.route('**/*', (r) => {
      requests.push(r.request().url());
      return r.request().url() === fileUrl ? r.continue() : r.abort();
    });
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    let data;
    await check(openedName, async () => {
      await page.goto(fileUrl, { waitUntil: 'load' });
      await page.waitForSelector('body[data-ready="true"]');
      data = await page.evaluate(() => JSON.parse(document.getElementById('attention-data').textContent));
      const others = requests.filter((u) => u !== fileUrl);
      assert(others.length === 0, `requests: ${others.join(', ')}`);
      return opened(data);
    }, { fatal: true });
    await checks(page, data);
    await check('no uncaught page errors or console errors', async () => {
      assert(errors.length === 0, errors.slice(0, 3).join(' | '));
    });
  } finally {
    await browser.close();
  }
}

// The process around run(kfExe, out): KF_EXE and KF_TEST_OUT (else a temp dir named after
// tmpPrefix), a watchdog, "NAME: N passed, M failed"; exits 0 only when every check passed
// (2: setup error).
export async function main(name, tmpPrefix, run) {
  const kfExe = process.env.KF_EXE;
  if (!kfExe) {
    console.error(`usage: KF_EXE=path/to/kf [KF_TEST_OUT=DIR] node tests/web/${name}.test.mjs`);
    process.exit(2);
  }
  const out = path.resolve(process.env.KF_TEST_OUT || fs.mkdtempSync(path.join(os.tmpdir(), tmpPrefix)));
  fs.mkdirSync(out, { recursive: true });
  const watchdog = setTimeout(() => {
    console.log(`FAIL the whole test took over ${WHOLE_TEST_TIMEOUT_MS / 1000} s`);
    process.exit(1);
  }, WHOLE_TEST_TIMEOUT_MS);
  let code = 1;
  try {
    code = await run(kfExe, out);
  } catch (e) {
    if (!(e instanceof Fatal)) {
      results.push({ name: 'test harness', ok: false });
      console.log(`FAIL test harness: ${e && e.stack ? e.stack : e}`);
    } else console.log(`${name}: stopping early: ${e.message}`);
  }
  clearTimeout(watchdog);
  if (code === 2) process.exit(2);
  const passed = results.filter((r) => r.ok).length;
  console.log(`${name}: output in ${out}`);
  console.log(`${name}: ${passed} passed, ${results.length - passed} failed`);
  process.exit(results.length > passed || code !== 0 || passed === 0 ? 1 : 0);
}
