#!/usr/bin/env node
// End-to-end test of `kf attention --html` on an encoder–decoder (a `kf train seq2seq` model) in
// a real headless Chromium driven by playwright-core (resolved from web/node_modules):
//
//   KF_EXE=build/dev/kf KF_TEST_OUT=DIR node tests/web/attention_seq2seq.test.mjs
//
// It trains a tiny reverse model for a few steps, writes the page for --source SOURCE and the
// same model's `kf inspect --csv`, opens the file with every network request refused, and checks:
// no console or page errors and no request but the file; the site selector offers encoder
// self-attention, decoder self-attention and cross-attention, and each shows its own tokens
// (encoder: the source both sides; decoder: <s> and the output; cross: decoder tokens → source
// tokens) and layers × heads thumbnails; on the cross-attention, hovering a decoder token draws
// one line per positive weight of its row into the source tokens (opacity = the embedded weight),
// and with "scale each row" ticked the opacity is weight / the row's largest; the numbers shown
// for every site equal kf inspect's CSV rows of that site. Prints one line per check and
// "attention_seq2seq: N passed, M failed"; exits 0 only when every check passed (2: setup error).

import fs from 'node:fs';
import path from 'node:path';

import { assert, check } from './harness.mjs';
import { close, findChromium, hover, kf, main, openPage, readCsv, shownLines } from './attention_harness.mjs';

const SOURCE = 'k3x9a';
const SITES = ['encoder_self', 'decoder_self', 'decoder_cross'];

async function selectSite(page, data, id) {
  const k = data.sites.findIndex((s) => s.id === id);
  await page.selectOption('#site', { value: String(k) });
  return data.sites[k];
}

// The lines of query row i in head h of layer l: one per positive weight, opacity = weight or
// weight / the row's largest.
async function checkRow(page, s, l, h, i, scaled) {
  await hover(page, 'query', i);
  const shown = await shownLines(page), row = s.weights[l][h][i];
  const top = Math.max(...row);
  const want = row.map((v, j) => ({ j, v })).filter((x) => x.v > 0);
  assert(shown.length === want.length, `${shown.length} lines for ${want.length} positive weights`);
  for (const w of want) {
    const x = shown.find((y) => y.j === w.j);
    assert(x && x.i === i && x.h === h, `no line ${i}→${w.j}`);
    const op = scaled ? w.v / top : w.v;
    assert(close(x.v, w.v, 1e-9) && close(x.opacity, op, 1e-6),
           `${i}→${w.j}: weight ${x.v}, opacity ${x.opacity}; want ${w.v}, ${op}`);
  }
  return shown.length;
}

async function siteChecks(page, data, csvRows, out) {
  await check('three sites, each with its own tokens, thumbnails and kf inspect\'s numbers', async () => {
    const options = await page.$$eval('#site option', (os_) => os_.map((o) => o.textContent));
    assert(options.length === 3 && await page.isVisible('#site'), `site options ${options}`);
    const said = [];
    for (const id of SITES) {
      const s = await selectSite(page, data, id);
      const view = await page.$eval('#head-view', (e) => e.dataset.site);
      assert(view === id, `selected ${id}, the head view shows ${view}`);
      const q = await page.$$eval('#head-view .token.query text', (ts) => ts.map((t) => t.textContent));
      const k = await page.$$eval('#head-view .token.key text', (ts) => ts.map((t) => t.textContent));
      assert(JSON.stringify(q) === JSON.stringify(s.queries) && JSON.stringify(k) === JSON.stringify(s.keys),
             `${id}: labels ${q} / ${k}`);
      const src = SOURCE.split('');
      if (id !== 'decoder_self') assert(JSON.stringify(k) === JSON.stringify(src), `${id} keys ${k}`);
      if (id !== 'encoder_self') assert(q[0] === '<s>', `${id} queries start ${q[0]}`);
      const thumbs = await page.$$eval('#model-view .thumb', (f) => f.length);
      assert(thumbs === s.layers * s.heads, `${id}: ${thumbs} thumbnails`);
      for (let l = 0; l < s.layers; ++l) {
        await page.selectOption('#layer', { value: String(l) });
        const rows = await page.$$eval('#head-numbers tbody tr', (trs) => trs.map((tr) => ({ ...tr.dataset })));
        for (const r of rows) {
          const c = csvRows.find((x) => x.site === id && x.layer === r.layer && x.head === r.head);
          assert(c, `no CSV row for ${id} layer ${r.layer} head ${r.head}`);
          assert(r.shape === c.shape, `${id} L${r.layer}H${r.head}: shape ${r.shape} vs ${c.shape}`);
          for (const key of ['bandwidth', 'offset', 'r2', 'df'])
            assert(close(Number(r[key]), Number(c[key])), `${id} L${r.layer}H${r.head}: ${key} ${r[key]} vs ${c[key]}`);
        }
      }
      said.push(`${id} ${q.length}×${k.length}`);
    }
    return said.join(', ');
  });
  await check('cross-attention: a decoder token\'s lines go to the source, opacity = weight', async () => {
    const s = await selectSite(page, data, 'decoder_cross');
    const L = s.layers - 1;
    await page.selectOption('#layer', { value: String(L) });
    let n = 0;
    for (let h = 0; h < s.heads; ++h) {
      await page.selectOption('#head', { value: String(h) });
      for (let i = 0; i < s.queries.length; ++i) n += await checkRow(page, s, L, h, i, false);
    }
    await page.screenshot({ path: path.join(out, 'attention_cross.png'), fullPage: true });
    return `${n} lines over ${s.heads} heads × ${s.queries.length} decoder tokens`;
  });
  await check('"scale each row": opacity = weight / the row\'s largest, thumbnails redrawn', async () => {
    const s = await selectSite(page, data, 'decoder_cross');
    await page.check('#row-scale');
    let n = 0;
    for (let i = 0; i < s.queries.length; ++i) n += await checkRow(page, s, 0, 0, i, true);
    const blank = await page.$$eval('#model-view .thumb canvas', (cs) => cs.filter((c) => {
      const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      for (let p = 0; p < px.length; p += 4) if (px[p] < 200) return false;
      return true;
    }).length);
    assert(blank === 0, `${blank} blank thumbnails`);
    // Every row's strongest line is drawn fully opaque.
    await page.mouse.move(0, 0);
    const all = await shownLines(page);
    for (let i = 0; i < s.queries.length; ++i)
      assert(close(Math.max(...all.filter((x) => x.i === i).map((x) => x.opacity)), 1, 1e-9), `row ${i}`);
    await page.screenshot({ path: path.join(out, 'attention_cross_rows.png'), fullPage: true });
    await page.uncheck('#row-scale');
    await checkRow(page, s, 0, 0, 0, false);
    return `${n} lines scaled; unticked: opacity = weight again`;
  });
}

async function run(kfExe, out) {
  const found = findChromium('attention_seq2seq');
  if (!found) return 2;
  const model = path.join(out, 'rev.safetensors'), html = path.join(out, 'attention_s2s.html');
  const csv = path.join(out, 'heads_s2s.csv');
  await check('kf trains a tiny seq2seq model, writes the page and kf inspect\'s CSV', async () => {
    kf(kfExe, ['train', 'seq2seq', '--task', 'reverse', '--max-length', '6', '--examples', '400',
               '--validation', '20', '--steps', '40', '--batch', '16', '--save', model, '--quiet']);
    for (const f of [html, csv]) fs.rmSync(f, { force: true });
    const said = kf(kfExe, ['attention', '--model', model, '--source', SOURCE, '--html', html]);
    kf(kfExe, ['inspect', model, '--source', SOURCE, '--csv', csv, '--quiet']);
    return said.trim();
  }, { fatal: true });
  const csvRows = readCsv(csv);

  await openPage(found, html, {
    openedName: 'the page opens from the file with three sites and fetches nothing else',
    opened: (data) => {
      assert(JSON.stringify(data.sites.map((s) => s.id)) === JSON.stringify(SITES), `sites ${data.sites.map((s) => s.id)}`);
      assert(csvRows.length === data.sites.reduce((n, s) => n + s.layers * s.heads, 0), `${csvRows.length} CSV rows`);
      return data.sites.map((s) => `${s.id} ${s.layers}×${s.heads}`).join(', ');
    },
    checks: (page, data) => siteChecks(page, data, csvRows, out),
  });
  return 0;
}

main('attention_seq2seq', 'kf-attention-s2s-', run);
