// The attention page's stylesheet, body and script (viz/attention_html_page.hpp). The script
// reads the data that attention_view_json wrote into <script id="attention-data"> and builds
//   - the head view: an SVG with the query tokens on the left and the key tokens on the right;
//     hovering (or clicking, to pin) a query token draws one line to every key it gives a
//     positive weight, a key token every line into it; line opacity = weight, colour = head;
//     a check box scales each query row to its largest weight instead (opacity = w_ij / max_j
//     w_ij), so a near-uniform head's lines stay visible (the model view's cells follow it);
//   - the numbers panel: each head of the layer read as a kernel (shape, bandwidth, offset, R²,
//     df = tr W), exact values in data-* attributes, three significant digits shown;
//   - the model view: every layer × head of the site as a thumbnail heatmap (colour = weight
//     over the head's largest weight); a click selects that head in the head view.
// Everything is in the page: no network, no external file.
#include "explore/attention_html_page.hpp"

namespace kf::detail {

// Plain CSS, no external fonts or images; the #head-view / #head-numbers rules style what the
// script creates.
const char* const attention_page_css = R"css(
body { font: 14px/1.4 system-ui, sans-serif; margin: 16px 24px; color: #222; background: #fff; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 20px 0 8px; border-bottom: 1px solid #ddd; }
h3 { font-size: 14px; margin: 0 0 6px; }
#detail, .note { color: #555; margin: 0 0 8px; }
.note { font-size: 12px; }
.controls { display: flex; gap: 16px; align-items: center; flex-wrap: wrap; margin-bottom: 8px; }
.controls select { font: inherit; padding: 2px 4px; }
.head-row { display: flex; gap: 24px; align-items: flex-start; flex-wrap: wrap; }
.head-row > * { min-width: 0; max-width: 100%; }
@media (max-width: 600px) { body { margin: 12px; } }
#head-view { border: 1px solid #eee; background: #fcfcfc; max-width: 100%; height: auto; }
#head-view .token:focus { outline: none; }
#head-view .token:focus-visible rect { stroke: #1f77b4; stroke-width: 2; }
#head-numbers { display: block; overflow-x: auto; max-width: 100%; }
#head-numbers tbody tr:focus-visible, .thumb:focus-visible { outline: 2px solid #1f77b4; }
#head-view .token { cursor: pointer; }
#head-view .token rect { fill: transparent; }
#head-view .token.active rect { fill: #ffe9a8; }
#head-view .token text { font: 13px ui-monospace, monospace; dominant-baseline: middle; }
#head-view line { stroke-width: 2.5; pointer-events: none; }
table { border-collapse: collapse; font-size: 13px; }
th, td { padding: 2px 8px; text-align: right; border-bottom: 1px solid #eee; }
th:first-child, td:first-child { text-align: left; }
#head-numbers tbody tr { cursor: pointer; }
#head-numbers tbody tr.selected { background: #e8f0fe; }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 6px; border-radius: 2px; }
#model-view { display: grid; gap: 10px; align-items: start; justify-content: start;
              overflow-x: auto; max-width: 100%; }
.layer-label { font-weight: 600; align-self: center; }
.thumb { margin: 0; cursor: pointer; border: 2px solid transparent; padding: 2px; }
.thumb.selected { border-color: #1f77b4; }
.thumb canvas { display: block; image-rendering: pixelated; border: 1px solid #ddd; }
.thumb figcaption { font-size: 11px; color: #444; max-width: 160px; }
)css";

// The static markup: headings, controls and empty containers. The script finds them by id
// (title, detail, site, site-label, layer, head, row-scale, head-view, head-numbers, model-view),
// so an id changed here must change in the script too.
const char* const attention_page_body = R"html(<header>
<h1 id="title"></h1>
<p id="detail"></p>
</header>
<section>
<h2>Head view</h2>
<div class="controls">
<label id="site-label">attention <select id="site"></select></label>
<label>layer <select id="layer"></select></label>
<label>head <select id="head"></select></label>
<label title="opacity = weight / the largest weight of its query row (near-uniform heads stay visible)"><input type="checkbox" id="row-scale"> scale each row to its largest weight</label>
<span class="note">hover a token to see the tokens it attends to (click pins it); line opacity = weight</span>
</div>
<div class="head-row">
<svg id="head-view"></svg>
<div id="numbers-panel">
<h3>Heads of this layer read as kernels</h3>
<table id="head-numbers">
<thead><tr><th>head</th><th>best shape</th><th>bandwidth</th><th>offset</th><th>R²</th><th>df = tr W</th></tr></thead>
<tbody></tbody>
</table>
<p class="note">The best of six kernel shapes fitted to each query row over positions; bandwidth and
offset in positions (medians over rows; offset &lt; 0 looks back); R² of that fit; df = tr W, the
effective degrees of freedom (1: averages everything; the number of tokens: copies each one).</p>
</div>
</div>
</section>
<section>
<h2>Model view</h2>
<p class="note">Every layer × head of the selected attention: rows are query tokens, columns key
tokens, darker = more weight (each thumbnail scaled to its largest weight, or each row to its
own with the box above ticked). Click one to show it in the head view.</p>
<div id="model-view"></div>
</section>
)html";

// Plain JavaScript without modules or libraries. It reads the JSON from #attention-data (written
// by attention_view_json, whose layout it indexes as data.sites[s].weights[layer][head][q][k]).
const char* const attention_page_js = R"js('use strict';
const data = JSON.parse(document.getElementById('attention-data').textContent);
const COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd',
                '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];
const SVG = 'http://www.w3.org/2000/svg';
const ROW = 22, LEFT_X = 170, RIGHT_X = 390, WIDTH = 560;
// head -1: all heads; rowScale: opacity = weight / its row's largest weight
const state = { site: 0, layer: 0, head: 0, hover: null, pinned: null, rowScale: false };
const $ = (id) => document.getElementById(id);
const site = () => data.sites[state.site];
const color = (h) => COLORS[h % COLORS.length];
// Numbers as shown: NaN (null in JSON: a head the fit could not read) as a dash.
const shown = (x, f) => (typeof x === 'number' && Number.isFinite(x) ? f(x) : '\u2014');
const fmt3 = (x) => shown(x, (v) => (Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-3)
                                     ? v.toExponential(2) : String(+v.toPrecision(3))));
const fixed = (x, digits) => shown(x, (v) => v.toFixed(digits));

function svgEl(name, attrs, parent) {
  const e = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (parent) parent.appendChild(e);
  return e;
}

function fillSelect(sel, items, value) {
  sel.replaceChildren(...items.map(([v, text]) => new Option(text, String(v))));
  sel.value = String(value);
}

function fillControls() {
  fillSelect($('site'), data.sites.map((s, i) => [i, s.title]), state.site);
  $('site-label').hidden = data.sites.length < 2;
  const s = site();
  fillSelect($('layer'), [...Array(s.layers).keys()].map((l) => [l, String(l + 1)]), state.layer);
  const heads = [...Array(s.heads).keys()].map((h) => [h, String(h + 1)]);
  fillSelect($('head'), [...heads, [-1, 'all heads']], state.head);
}

// The heads drawn in the head view.
const shownHeads = () => (state.head < 0 ? [...Array(site().heads).keys()] : [state.head]);

// Makes EL reachable by Tab and operable by Enter or Space (ACTIVATE), as a button named LABEL.
function operable(el, label, activate) {
  el.setAttribute('tabindex', '0');
  el.setAttribute('role', 'button');
  el.setAttribute('aria-label', label);
  el.addEventListener('keydown', (e) => {
    if (e.key !== 'Enter' && e.key !== ' ') return;
    e.preventDefault();
    activate();
  });
}

function tokenColumn(svg, labels, side) {
  labels.forEach((label, i) => {
    const g = svgEl('g', { class: 'token ' + side, 'data-side': side, 'data-index': i }, svg);
    const y = 14 + i * ROW;
    const x = side === 'query' ? LEFT_X : RIGHT_X;
    svgEl('rect', { x: side === 'query' ? 4 : x - 4, y: y - ROW / 2, width: LEFT_X - 4,
                    height: ROW }, g);
    const t = svgEl('text', { x: side === 'query' ? x - 6 : x + 6, y,
                              'text-anchor': side === 'query' ? 'end' : 'start' }, g);
    t.textContent = label;
    const enter = () => { state.hover = { side, index: i }; drawLines(); };
    const leave = () => { state.hover = null; drawLines(); };
    const pin = () => {
      const p = state.pinned;
      state.pinned = p && p.side === side && p.index === i ? null : { side, index: i };
      drawLines();
    };
    g.addEventListener('mouseenter', enter);
    g.addEventListener('mouseleave', leave);
    g.addEventListener('focus', enter);  // the keyboard's hover
    g.addEventListener('blur', leave);
    g.addEventListener('click', pin);
    operable(g, `${side} token ${i + 1}: ${label}`, pin);
  });
}

function drawHeadView() {
  const s = site(), svg = $('head-view');
  svg.replaceChildren();
  const rows = Math.max(s.queries.length, s.keys.length);
  svg.setAttribute('width', WIDTH);
  svg.setAttribute('height', rows * ROW + 8);
  svg.setAttribute('viewBox', `0 0 ${WIDTH} ${rows * ROW + 8}`);  // scales down on a phone
  svgEl('g', { id: 'lines' }, svg);
  tokenColumn(svg, s.queries, 'query');
  tokenColumn(svg, s.keys, 'key');
  Object.assign(svg.dataset, { site: s.id, layer: state.layer + 1,
                               head: state.head < 0 ? 'all' : state.head + 1 });
  drawLines();
}

// Lines from the hovered (else the pinned) token; none selected: every line of the shown heads.
function drawLines() {
  const s = site(), g = $('lines'), sel = state.hover || state.pinned;
  g.replaceChildren();
  document.querySelectorAll('#head-view .token').forEach((t) => t.classList.toggle('active',
      !!sel && t.dataset.side === sel.side && Number(t.dataset.index) === sel.index));
  const w = s.weights[state.layer];
  for (const h of shownHeads())
    for (let i = 0; i < s.queries.length; ++i) {
      if (sel && sel.side === 'query' && sel.index !== i) continue;
      const scale = state.rowScale ? Math.max(...w[h][i]) : 1;
      for (let j = 0; j < s.keys.length; ++j) {
        const v = w[h][i][j];
        if (!(v > 0) || (sel && sel.side === 'key' && sel.index !== j)) continue;
        svgEl('line', { x1: LEFT_X, y1: 14 + i * ROW, x2: RIGHT_X, y2: 14 + j * ROW,
                        stroke: color(h), 'stroke-opacity': v / scale, 'data-query': i,
                        'data-key': j, 'data-head': h + 1, 'data-weight': v }, g);
      }
    }
  g.dataset.selection = sel ? `${sel.side} ${sel.index}` : 'none';
}

function drawNumbers() {
  const s = site(), body = document.querySelector('#head-numbers tbody');
  body.replaceChildren();
  s.numbers[state.layer].forEach((n, h) => {
    const tr = document.createElement('tr');
    Object.assign(tr.dataset, { layer: state.layer + 1, head: h + 1, shape: n.shape,
                                bandwidth: n.bandwidth, offset: n.offset, r2: n.r2, df: n.df });
    tr.classList.toggle('selected', state.head < 0 || state.head === h);
    const cells = [String(h + 1), n.shape, fmt3(n.bandwidth), fmt3(n.offset), fixed(n.r2, 4),
                   fixed(n.df, 2)];
    cells.forEach((text, c) => {
      const td = document.createElement('td');
      if (c === 0) {
        const sw = document.createElement('span');
        sw.className = 'swatch';
        sw.style.background = color(h);
        td.appendChild(sw);
      }
      td.appendChild(document.createTextNode(text));
      tr.appendChild(td);
    });
    tr.addEventListener('click', () => select(state.site, state.layer, h));
    operable(tr, `layer ${state.layer + 1} head ${h + 1}`, () => {
      select(state.site, state.layer, h);
      document.querySelector(`#head-numbers tbody tr[data-head="${h + 1}"]`).focus();
    });
    body.appendChild(tr);
  });
}

function drawThumb(canvas, w) {
  const n = w.length, m = w[0].length;
  const cell = Math.max(2, Math.floor(120 / Math.max(n, m)));
  canvas.width = m * cell;
  canvas.height = n * cell;
  const ctx = canvas.getContext('2d');
  const top = Math.max(...w.map((r) => Math.max(...r))) || 1;
  for (let i = 0; i < n; ++i) {
    const rowTop = state.rowScale ? Math.max(...w[i]) || 1 : top;
    for (let j = 0; j < m; ++j) {
      const t = Math.max(0, w[i][j]) / rowTop;
      ctx.fillStyle = `rgb(${255 - 225 * t}, ${255 - 165 * t}, ${255 - 75 * t})`;
      ctx.fillRect(j * cell, i * cell, cell, cell);
    }
  }
}

function drawModelView() {
  const s = site(), mv = $('model-view');
  mv.replaceChildren();
  mv.style.gridTemplateColumns = `auto repeat(${s.heads}, auto)`;
  for (let l = 0; l < s.layers; ++l) {
    const label = document.createElement('div');
    label.className = 'layer-label';
    label.textContent = `layer ${l + 1}`;
    mv.appendChild(label);
    for (let h = 0; h < s.heads; ++h) {
      const fig = document.createElement('figure');
      fig.className = 'thumb';
      Object.assign(fig.dataset, { layer: l + 1, head: h + 1 });
      const canvas = document.createElement('canvas');
      drawThumb(canvas, s.weights[l][h]);
      const cap = document.createElement('figcaption');
      const n = s.numbers[l][h];
      cap.textContent = `head ${h + 1}: ${n.shape}, h ${fmt3(n.bandwidth)}, ` +
                        `R² ${fixed(n.r2, 2)}, df ${fixed(n.df, 1)}`;
      fig.append(canvas, cap);
      const open = () => {
        select(state.site, l, h);
        $('head-view').scrollIntoView({ block: 'nearest' });
      };
      fig.addEventListener('click', open);
      operable(fig, `layer ${l + 1} head ${h + 1}`, open);
      mv.appendChild(fig);
    }
  }
}

function markSelectedThumb() {
  document.querySelectorAll('.thumb').forEach((f) => f.classList.toggle('selected',
      Number(f.dataset.layer) === state.layer + 1 &&
      (state.head < 0 || Number(f.dataset.head) === state.head + 1)));
}

// Shows layer / head (-1: all heads) of site in the head view; the model view follows.
function select(siteIndex, layer, head) {
  const siteChanged = siteIndex !== state.site;
  Object.assign(state, { site: siteIndex, layer, head, hover: null, pinned: null });
  fillControls();
  drawHeadView();
  drawNumbers();
  if (siteChanged || !$('model-view').childElementCount) drawModelView();
  markSelectedThumb();
}

$('title').textContent = data.title;
$('detail').textContent = data.detail;
$('site').addEventListener('change', (e) => select(Number(e.target.value), 0, 0));
$('layer').addEventListener('change', (e) => select(state.site, Number(e.target.value),
                                                    state.head));
$('head').addEventListener('change', (e) => select(state.site, state.layer,
                                                   Number(e.target.value)));
$('row-scale').addEventListener('change', (e) => {
  state.rowScale = e.target.checked;
  drawLines();
  drawModelView();
  markSelectedThumb();
});
window.attentionView = { data, state, select };
select(0, 0, 0);
document.body.dataset.ready = 'true';
)js";

}  // namespace kf::detail
