#!/usr/bin/env node
// End-to-end test of `kf attention --html` (explore/attention_html.hpp) in a real headless Chromium
// driven by playwright-core (resolved from web/node_modules):
//
//   KF_EXE=build/dev/kf KF_TEST_OUT=DIR node tests/web/attention.test.mjs
//
// It trains a tiny character model on a corpus full of markup ("</script>", "<b>", "&"), writes
// the page for a text made of those characters and the same model's `kf inspect --csv`, opens
// the file with every network request refused, and checks: no console or page errors and no
// request but the file; the token labels (markup included) spell the text; the model view has
// layers × heads thumbnails, all drawn; a click on one selects it in the head view; hovering a
// query (or key) token draws one line per positive weight of its row (column), opacity = the
// embedded weight, for one head and for all heads (one colour per head); the head-as-kernel
// numbers shown equal kf inspect's CSV. Prints one line per check and "attention: N passed, M
// failed"; exits 0 only when every check passed (2 on a setup error).

import fs from 'node:fs';
import path from 'node:path';

import { assert, check } from './harness.mjs';
import { close, findChromium, hover, kf, main, openPage, readCsv, shownLines } from './attention_harness.mjs';

const TEXT = '</script><b>cat & mat';
const CORPUS_LINE = 'the cat sat on the mat. </script> <b>bold</b> & <i>it</i> a < b > c\n';

// The lines the head view shows for query (or key) token `index` of layer/heads in data.
function expectedLines(s, layer, heads, side, index) {
  const want = [];
  for (const h of heads)
    for (let i = 0; i < s.queries.length; ++i)
      for (let j = 0; j < s.keys.length; ++j) {
        const v = s.weights[layer][h][i][j];
        if (v > 0 && (side === 'query' ? i === index : j === index)) want.push({ h, i, j, v });
      }
  return want;
}

function compareLines(shown, want) {
  assert(shown.length === want.length, `${shown.length} lines drawn, ${want.length} positive weights`);
  const key = (x) => `${x.h} ${x.i} ${x.j}`;
  const byKey = new Map(shown.map((x) => [key(x), x]));
  for (const w of want) {
    const x = byKey.get(key(w));
    assert(x, `no line for head ${w.h + 1}, query ${w.i}, key ${w.j}`);
    assert(close(x.v, w.v, 1e-9) && close(x.opacity, w.v, 1e-6),
           `head ${w.h + 1} ${w.i}→${w.j}: weight ${x.v}, opacity ${x.opacity}, data ${w.v}`);
  }
}

async function headViewChecks(page, data, out) {
  const s = data.sites[0];
  await check('the token labels spell the text, markup included', async () => {
    const q = await page.$$eval('#head-view .token.query text', (ts) => ts.map((t) => t.textContent));
    const k = await page.$$eval('#head-view .token.key text', (ts) => ts.map((t) => t.textContent));
    assert(JSON.stringify(q) === JSON.stringify(s.queries) && JSON.stringify(k) === JSON.stringify(s.keys),
           `labels ${JSON.stringify(q)} vs data ${JSON.stringify(s.queries)}`);
    const spelled = q.join('').replaceAll('\u2423', ' ');
    assert(spelled === TEXT, `the labels spell ${JSON.stringify(spelled)}`);
    return `${q.length} tokens: ${JSON.stringify(spelled)}`;
  });
  await check('the model view has layers × heads thumbnails, each drawn', async () => {
    const thumbs = await page.$$eval('#model-view .thumb', (fs_) => fs_.map((f) => {
      const c = f.querySelector('canvas');
      const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let dark = 0;
      for (let p = 0; p < px.length; p += 4) if (px[p] < 200) ++dark;
      return { layer: f.dataset.layer, head: f.dataset.head, dark, w: c.width };
    }));
    assert(thumbs.length === s.layers * s.heads, `${thumbs.length} thumbnails for ${s.layers}×${s.heads}`);
    const blank = thumbs.filter((t) => t.dark === 0);
    assert(blank.length === 0, `${blank.length} blank thumbnails`);
    return `${thumbs.length} thumbnails (${s.layers} layers × ${s.heads} heads)`;
  });
  const L = s.layers - 1, H = s.heads - 1;
  await check(`a click on thumbnail layer ${L + 1}, head ${H + 1} selects it in the head view`, async () => {
    await page.click(`#model-view .thumb[data-layer="${L + 1}"][data-head="${H + 1}"]`);
    const d = await page.$eval('#head-view', (e) => ({ ...e.dataset }));
    assert(d.layer === String(L + 1) && d.head === String(H + 1), `head view shows ${JSON.stringify(d)}`);
    assert((await page.inputValue('#layer')) === String(L) && (await page.inputValue('#head')) === String(H),
           'the layer/head controls did not follow');
    const sel = await page.$$eval('.thumb.selected', (fs_) => fs_.map((f) => `${f.dataset.layer}/${f.dataset.head}`));
    assert(sel.length === 1 && sel[0] === `${L + 1}/${H + 1}`, `selected thumbnails ${sel}`);
    return `head view on layer ${d.layer}, head ${d.head}`;
  });
  const last = s.queries.length - 1;
  await check('hovering a query token draws a line per positive weight, opacity = weight', async () => {
    let n = 0;
    for (const i of [0, Math.floor(last / 2), last]) {
      await hover(page, 'query', i);
      compareLines(await shownLines(page), expectedLines(s, L, [H], 'query', i));
      n += (await shownLines(page)).length;
    }
    await page.screenshot({ path: path.join(out, 'attention_head.png'), fullPage: true });
    return `queries 0, ${Math.floor(last / 2)}, ${last}: ${n} lines matching the embedded weights`;
  });
  await check('hovering a key token draws the lines into it', async () => {
    await hover(page, 'key', 0);
    const want = expectedLines(s, L, [H], 'key', 0);
    compareLines(await shownLines(page), want);
    return `${want.length} lines into key 0`;
  });
  await check('all heads: one colour per head, every head\'s lines', async () => {
    await page.selectOption('#head', { value: '-1' });
    await hover(page, 'query', last);
    const shown = await shownLines(page);
    compareLines(shown, expectedLines(s, L, [...Array(s.heads).keys()], 'query', last));
    const colours = new Set(shown.map((x) => `${x.h}:${x.stroke}`));
    const strokes = new Set(shown.map((x) => x.stroke));
    assert(colours.size === s.heads && strokes.size === s.heads, `colours ${[...colours]}`);
    await page.screenshot({ path: path.join(out, 'attention_all_heads.png'), fullPage: true });
    return `${shown.length} lines in ${strokes.size} colours`;
  });
  await check('a click pins a token: its lines stay after the mouse leaves', async () => {
    await page.selectOption('#head', { value: '0' });
    await page.click(`#head-view .token.query[data-index="${last}"]`);
    await page.mouse.move(0, 0);
    compareLines(await shownLines(page), expectedLines(s, L, [0], 'query', last));
    return `query ${last} pinned`;
  });
}

async function numbersChecks(page, data, csvRows) {
  await check('the head-as-kernel numbers equal kf inspect --csv', async () => {
    const s = data.sites[0];
    assert(csvRows.length === s.layers * s.heads, `${csvRows.length} CSV rows`);
    let compared = 0;
    for (let l = 0; l < s.layers; ++l) {
      await page.selectOption('#layer', { value: String(l) });
      const rows = await page.$$eval('#head-numbers tbody tr', (trs) => trs.map((tr) => ({
        ...tr.dataset, cells: [...tr.cells].map((c) => c.textContent) })));
      assert(rows.length === s.heads, `layer ${l + 1}: ${rows.length} rows`);
      for (const r of rows) {
        const c = csvRows.find((x) => x.layer === r.layer && x.head === r.head);
        assert(r.layer === String(l + 1), `layer ${l + 1} selected, the table shows layer ${r.layer}`);
        assert(c, `no CSV row for layer ${r.layer}, head ${r.head}`);
        assert(r.shape === c.shape && r.cells[1] === c.shape, `L${r.layer}H${r.head}: shape ${r.shape} vs ${c.shape}`);
        for (const k of ['bandwidth', 'offset', 'r2', 'df'])
          assert(close(Number(r[k]), Number(c[k])), `L${r.layer}H${r.head}: ${k} ${r[k]} vs CSV ${c[k]}`);
        assert(r.cells[4] === Number(c.r2).toFixed(4) && r.cells[5] === Number(c.df).toFixed(2),
               `L${r.layer}H${r.head}: shown R² ${r.cells[4]}, df ${r.cells[5]}; CSV ${c.r2}, ${c.df}`);
        ++compared;
      }
    }
    return `${compared} heads: shape, bandwidth, offset, R², df`;
  });
}

// Tokens, thumbnails and table rows are reached by Tab and operated by Enter or Space; focus on a
// token shows its lines as hovering does.
async function keyboardChecks(page, data) {
  const s = data.sites[0];
  await check('Tab reaches the tokens; a focused token shows its lines; Enter pins it', async () => {
    await page.selectOption('#layer', { value: '0' });
    await page.selectOption('#head', { value: '0' });
    await page.focus('#row-scale');
    let at = null;
    for (let k = 0; k < 6 && !(at && at.token); ++k) {
      await page.keyboard.press('Tab');
      at = await page.evaluate(() => ({ token: document.activeElement.classList.contains('token'),
        side: document.activeElement.dataset.side, index: document.activeElement.dataset.index }));
    }
    assert(at.token && at.side === 'query' && at.index === '0', `Tab reached ${JSON.stringify(at)}`);
    compareLines(await shownLines(page), expectedLines(s, 0, [0], 'query', 0));
    await page.keyboard.press('Enter');
    await page.evaluate(() => document.activeElement.blur());  // focus leaves: the pin stays
    compareLines(await shownLines(page), expectedLines(s, 0, [0], 'query', 0));
    return 'query 0 focused, its lines drawn; pinned with Enter';
  });
  await check('Enter on a thumbnail and Space on a table row select their head', async () => {
    const L = s.layers - 1, H = s.heads - 1;
    await page.focus(`#model-view .thumb[data-layer="${L + 1}"][data-head="${H + 1}"]`);
    await page.keyboard.press('Enter');
    let d = await page.$eval('#head-view', (e) => ({ ...e.dataset }));
    assert(d.layer === String(L + 1) && d.head === String(H + 1), `after Enter: ${JSON.stringify(d)}`);
    await page.focus('#head-numbers tbody tr[data-head="1"]');
    await page.keyboard.press(' ');
    d = await page.$eval('#head-view', (e) => ({ ...e.dataset }));
    const focused = await page.evaluate(() => document.activeElement.dataset.head);
    assert(d.head === '1' && focused === '1', `after Space: ${JSON.stringify(d)}, focus on head ${focused}`);
    const named = await page.$$eval('[role="button"]', (es) => es.every((e) => e.getAttribute('tabindex') === '0' &&
                                                                              e.getAttribute('aria-label')));
    assert(named, 'a button without tabindex or name');
    return `thumbnail layer ${L + 1} head ${H + 1} by Enter, row head 1 by Space`;
  });
}

async function phoneCheck(page) {
  await check('at 390 px the page does not widen: the head view scales, tables scroll in place', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    const m = await page.evaluate(() => ({
      scroll: document.documentElement.scrollWidth,
      head: document.getElementById('head-view').getBoundingClientRect().right,
      wide: [...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > 391)
        .slice(0, 3).map((e) => e.id || e.className.baseVal || e.className || e.tagName),
    }));
    await page.setViewportSize({ width: 1280, height: 900 });
    assert(m.scroll <= 390 && m.head <= 391, `page ${m.scroll} px, head view to ${m.head} px; wide: ${m.wide}`);
    return `page ${m.scroll} px, head view ${m.head.toFixed(0)} px`;
  });
}

async function run(kfExe, out) {
  const found = findChromium('attention');
  if (!found) return 2;
  const model = path.join(out, 'markup_lm.safetensors'), html = path.join(out, 'attention.html');
  const csv = path.join(out, 'heads.csv'), corpus = path.join(out, 'markup.txt');
  await check('kf trains a tiny model, writes the page and kf inspect\'s CSV', async () => {
    fs.writeFileSync(corpus, CORPUS_LINE.repeat(60));
    kf(kfExe, ['train', 'lm', '--corpus', corpus, '--config', 'tiny', '--iters', '5', '--save', model, '--quiet']);
    for (const f of [html, csv]) fs.rmSync(f, { force: true });
    const said = kf(kfExe, ['attention', '--model', model, '--text', TEXT, '--html', html]);
    kf(kfExe, ['inspect', model, '--text', TEXT, '--csv', csv, '--quiet']);
    return said.trim();
  }, { fatal: true });
  const csvRows = readCsv(csv);

  await openPage(found, html, {
    openedName: 'the page opens from the file, builds both views, fetches nothing else',
    opened: (data) => {
      const s = data.sites[0];
      assert(data.sites.length === 1 && s.id === 'decoder_self', `sites ${data.sites.map((x) => x.id)}`);
      assert(s.weights.length === s.layers && s.weights.every((l) => l.length === s.heads &&
             l.every((h) => h.length === s.queries.length && h.every((r) => r.length === s.keys.length))),
             'the weights are not [layers][heads][queries][keys]');
      return `${s.layers} layers × ${s.heads} heads, ${s.queries.length} tokens`;
    },
    checks: async (page, data) => {
      await headViewChecks(page, data, out);
      await numbersChecks(page, data, csvRows);
      await keyboardChecks(page, data);
      await phoneCheck(page);
    },
  });
  return 0;
}

main('attention', 'kf-attention-test-', run);
