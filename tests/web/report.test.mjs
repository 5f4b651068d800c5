#!/usr/bin/env node
// `kf report` in a real headless Chromium (playwright-core from web/node_modules):
//
//   KF_EXE=build/dev/kf KF_TEST_OUT=DIR node tests/web/report.test.mjs
//
// Writes the report (kf report --out DIR/report), opens its index.html from the file with every
// request outside that folder refused, and checks: no request leaves the folder, no page or
// console error; the load event comes within 1.5 s (figures load lazily, as they are scrolled
// to); every figure loads when scrolled to, in the space kept for it (no layout jump); reading it
// all (the HTML and every figure) costs at most 1.5 MB; a heatmap figure is one embedded
// image, not a path per cell; at 390 px (a phone) the page does not widen — wide tables scroll
// in their own box — and no figure is wider than the screen. Prints each figure; exits 0 only
// when every check passed (2 on a setup error).

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { assert, check } from './harness.mjs';
import { findChromium, kf, main } from './attention_harness.mjs';

const MAX_BYTES = 1_500_000;
const MAX_LOAD_MS = 1500;

async function open(browser, dir, width) {
  const context = await browser.newContext({ viewport: { width, height: 900 } });
  const root = pathToFileURL(dir).href + '/';
  const requests = [];
  await context.route('**/*', (r) => {
    const url = r.request().url();
    requests.push(url);
    return url.startsWith(root) ? r.continue() : r.abort();
  });
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  await page.goto(root + 'index.html', { waitUntil: 'load' });
  return { context, page, requests, errors, root };
}

async function desktopChecks(browser, dir) {
  const { context, page, requests, errors, root } = await open(browser, dir, 1280);
  await check('only the report folder is read; no page or console error', async () => {
    const outside = requests.filter((u) => !u.startsWith(root));
    assert(outside.length === 0, `requests outside: ${outside.slice(0, 3).join(', ')}`);
    assert(errors.length === 0, errors.slice(0, 3).join(' | '));
    return `${requests.length} files requested`;
  });
  await check(`the load event comes within ${MAX_LOAD_MS / 1000} s`, async () => {
    const ms = await page.evaluate(() => performance.getEntriesByType('navigation')[0].loadEventEnd);
    assert(ms <= MAX_LOAD_MS, `${ms.toFixed(0)} ms`);
    return `${ms.toFixed(0)} ms (figures below the first screen load as they are scrolled to)`;
  });
  await check('every figure loads when scrolled to, in the space the page kept for it', async () => {
    const n = await page.$$eval('img', (is) => is.length);
    const jumps = [];
    for (let k = 0; k < n; ++k) {
      const img = (await page.$$('img'))[k];
      const before = await img.evaluate((i) => i.getBoundingClientRect().height);
      await img.scrollIntoViewIfNeeded();
      await page.waitForFunction((i) => i.complete && i.naturalWidth > 0, img);
      const after = await img.evaluate((i) => i.getBoundingClientRect().height);
      if (Math.abs(after - before) > 1) jumps.push(`${await img.getAttribute('src')} ${before}→${after}`);
    }
    assert(n > 0 && jumps.length === 0, `${n} figures; the layout moved for ${jumps.join(', ')}`);
    return `${n} figures`;
  });
  await check(`reading it all costs at most ${MAX_BYTES / 1e6} MB`, async () => {
    const srcs = await page.$$eval('img', (is) => is.map((i) => i.src));
    const files = [...new Set([root + 'index.html', ...srcs, ...requests])]
      .map((u) => fileURLToPath(u.split('#')[0]));
    const bytes = files.reduce((s, f) => s + fs.statSync(f).size, 0);
    const biggest = files.map((f) => [fs.statSync(f).size, path.basename(f)]).sort((a, b) => b[0] - a[0])[0];
    assert(bytes <= MAX_BYTES, `${bytes} bytes (largest ${biggest[1]}, ${biggest[0]} bytes)`);
    return `${(bytes / 1e6).toFixed(2)} MB in ${files.length} files (largest ${biggest[1]}, ${(biggest[0] / 1e3).toFixed(0)} kB)`;
  });
  await check('a heatmap figure is one embedded image, not a path per cell', async () => {
    const svg = fs.readFileSync(path.join(dir, 'figures', 'periodic_attention.svg'), 'utf8');
    const images = (svg.match(/<image/g) || []).length;
    const paths = (svg.match(/<path/g) || []).length;
    assert(images >= 1 && paths < 2000, `${images} images, ${paths} paths`);
    return `${images} images, ${paths} paths, ${(svg.length / 1e3).toFixed(0)} kB`;
  });
  await context.close();
}

async function phoneChecks(browser, dir) {
  const { context, page } = await open(browser, dir, 390);
  await check('at 390 px the page does not widen: wide tables scroll in their own box', async () => {
    const r = await page.evaluate(() => ({
      page: document.documentElement.scrollWidth,
      tables: [...document.querySelectorAll('table')].map((t) => {
        const box = t.parentElement;
        return { boxed: box.classList.contains('table-scroll'), wide: box.scrollWidth > box.clientWidth + 1,
                 right: box.getBoundingClientRect().right };
      }),
      figures: [...document.querySelectorAll('img')].map((i) => i.getBoundingClientRect().right),
    }));
    assert(r.page <= 391, `the page is ${r.page} px wide`);
    assert(r.tables.length > 0 && r.tables.every((t) => t.boxed && t.right <= 391),
           `tables: ${JSON.stringify(r.tables.slice(0, 3))}`);
    assert(r.figures.every((x) => x <= 391), `a figure reaches ${Math.max(...r.figures)} px`);
    const wide = r.tables.filter((t) => t.wide).length;
    return `${r.tables.length} tables, ${wide} scroll sideways in place; page ${r.page} px`;
  });
  await context.close();
}

main('report', 'kf-report-', async (kfExe, out) => {
  const found = findChromium('report');
  if (!found) return 2;
  const dir = path.join(out, 'report');
  fs.rmSync(dir, { recursive: true, force: true });
  kf(kfExe, ['report', '--out', dir, '--quiet']);
  const browser = await found.chromium.launch({ executablePath: found.executablePath,
                                                args: ['--no-sandbox'], headless: true });
  try {
    await desktopChecks(browser, dir);
    await phoneChecks(browser, dir);
  } finally {
    await browser.close();
  }
  return 0;
});
