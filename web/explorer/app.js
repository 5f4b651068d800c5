// kernelformer explorer: asks `kf serve`'s JSON API (same origin) for a Nadaraya–Watson fit and a
// dot-product-attention fit of the same data, and draws both by hand: SVG for the plots, a
// <canvas> for the weight matrix. No framework, no build step, nothing loaded from elsewhere.
//
// What a test (tests/web/explorer.test.mjs) can read:
//   #main-plot[data-query]          the query string of the /api/smooth answer on screen
//   #nw-curve, #attention-curve     data-values = JSON array (grid order; null where undefined)
//   .point[data-index=i]            data point i (sorted by x); .selected when chosen
//   #profile-plot[data-point]       index of the point whose weights are drawn
//   #profile-nw, #profile-attention data-values = JSON array of n weights for the chosen point
//   #heatmap[data-mode]             'nw' or 'attention'
//   #status[data-state]             'loading', 'ok' or 'error'

const SVGNS = 'http://www.w3.org/2000/svg';
const $ = (id) => document.getElementById(id);

const DEFAULTS = Object.freeze({
  function: 'seed001', n: 40, noise: 1, seed: 0, kernel: 'gaussian', bandwidth: 0.5, temperature: 0.1, grid: 200,
});
const PARAM_KEYS = Object.keys(DEFAULTS);
const COLORS = { nw: '#2563eb', attention: '#ea580c', truth: '#6b7280', point: '#1f2937', selected: '#db2777' };
const DEBOUNCE_SLIDER_MS = 70;
const DEBOUNCE_TYPING_MS = 300;

const state = {
  params: { ...DEFAULTS },
  data: null,          // last /api/smooth answer on screen
  query: null,         // the parameters that answer was asked with
  selected: null,      // index of the chosen data point (sorted order)
  profile: null,       // last /api/profile answer on screen
  heatmapMode: 'nw',
  kernels: [],
  functions: [],
  smoothSeq: 0,
  profileSeq: 0,
  smoothAbort: null,
  profileAbort: null,
  loading: false,
  errors: { init: null, input: null, smooth: null, profile: null, export: null },
  xDomain: [0, 1],
};

// ---------------------------------------------------------------- API

class ApiError extends Error {}

async function getJson(path, params, signal) {
  const url = params ? `${path}?${new URLSearchParams(params)}` : path;
  let res;
  try {
    res = await fetch(url, { signal, headers: { Accept: 'application/json' }, cache: 'no-store' });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(`${path}: the server did not answer (${e.message})`);
  }
  const text = await res.text();
  let body = null;
  try {
    body = JSON.parse(text);
  } catch {
    body = null;
  }
  if (!res.ok) {
    const msg = body && typeof body.error === 'string' ? body.error : `HTTP ${res.status} ${res.statusText}`.trim();
    throw new ApiError(`${path}: ${msg}`);
  }
  if (body === null || typeof body !== 'object') throw new ApiError(`${path}: the answer is not JSON`);
  return body;
}

function requireArrays(obj, keys, what) {
  for (const k of keys) {
    if (!Array.isArray(obj[k])) throw new ApiError(`${what}: malformed answer, '${k}' is not an array`);
  }
}

// ---------------------------------------------------------------- small helpers

const isNum = (v) => typeof v === 'number' && Number.isFinite(v);
const clamp = (v, lo, hi) => Math.min(hi, Math.max(lo, v));

function roundSig(v, digits = 3) {
  if (!isNum(v) || v === 0) return v;
  return Number(v.toPrecision(digits));
}

function fmt(v, digits = 3) {
  if (v === null || v === undefined) return '–';
  if (!isNum(v)) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e5)) return v.toExponential(digits - 1).replace(/-/g, '−');
  return String(Number(v.toPrecision(digits))).replace(/-/g, '−');
}

function niceStep(span, count) {
  const raw = span / Math.max(count, 1);
  const p = 10 ** Math.floor(Math.log10(raw));
  const f = raw / p;
  return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * p;
}

function ticks(lo, hi, count) {
  if (!(hi > lo)) return { values: [lo], step: 1 };
  const step = niceStep(hi - lo, count);
  const values = [];
  for (let v = Math.ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step) values.push(Number(v.toFixed(12)));
  return { values, step };
}

function tickLabel(v, step) {
  const dec = clamp(-Math.floor(Math.log10(step) + 1e-9), 0, 8);
  const s = (Math.abs(v) < step * 1e-6 ? 0 : v).toFixed(dec);
  return s.replace(/-/g, '−');
}

function extent(arrays, fallback = [0, 1]) {
  let lo = Infinity, hi = -Infinity;
  for (const a of arrays) for (const v of a) if (isNum(v)) (lo = Math.min(lo, v)), (hi = Math.max(hi, v));
  if (!(hi >= lo)) return fallback;
  if (hi === lo) return [lo - 1, hi + 1];
  return [lo, hi];
}

function linear(d0, d1, r0, r1) {
  const k = (r1 - r0) / (d1 - d0 || 1);
  return (v) => r0 + (v - d0) * k;
}

function el(tag, attrs = {}, parent = null, text = null) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) e.setAttribute(k, String(v));
  if (text !== null) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}

function pathD(xs, ys, sx, sy) {
  let d = '';
  let pen = false;
  for (let i = 0; i < xs.length; ++i) {
    const y = ys[i];
    if (!isNum(y) || !isNum(xs[i])) {
      pen = false;
      continue;
    }
    d += `${pen ? 'L' : 'M'}${sx(xs[i]).toFixed(2)},${sy(y).toFixed(2)}`;
    pen = true;
  }
  return d;
}

const sum = (a) => a.reduce((s, v) => s + (isNum(v) ? v : 0), 0);
const effectiveN = (w) => {
  const s2 = w.reduce((s, v) => s + (isNum(v) ? v * v : 0), 0);
  return s2 > 0 ? sum(w) ** 2 / s2 : NaN;
};

// Styles live inside each SVG so a saved SVG/PNG looks like the page.
const SVG_STYLE = `
.kf-plot text { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial, sans-serif; font-size: 12px; fill: #4b5563; }
.kf-plot .bg { fill: #ffffff; }
.kf-plot .gridline { stroke: #eef0f4; stroke-width: 1; }
.kf-plot .zeroline { stroke: #d1d5db; stroke-width: 1; }
.kf-plot .axis { stroke: #9ca3af; stroke-width: 1; }
.kf-plot .tick { stroke: #9ca3af; stroke-width: 1; }
.kf-plot .axis-label { font-size: 13px; font-weight: 600; fill: #111827; }
.kf-plot .legend-text { font-size: 12.5px; fill: #111827; }
.kf-plot .truth { fill: none; stroke: ${COLORS.truth}; stroke-width: 1.6; stroke-dasharray: 6 4; }
.kf-plot .curve-nw { fill: none; stroke: ${COLORS.nw}; stroke-width: 2.6; stroke-linejoin: round; stroke-linecap: round; }
.kf-plot .curve-attention { fill: none; stroke: ${COLORS.attention}; stroke-width: 2.6; stroke-linejoin: round; stroke-linecap: round; }
.kf-plot .curve-nw.wide { stroke-width: 4; }
.kf-plot .area-nw { fill: ${COLORS.nw}; fill-opacity: 0.12; stroke: none; }
.kf-plot .area-attention { fill: ${COLORS.attention}; fill-opacity: 0.10; stroke: none; }
.kf-plot .dot-nw { fill: ${COLORS.nw}; }
.kf-plot .dot-attention { fill: ${COLORS.attention}; }
.kf-plot .point { fill: ${COLORS.point}; fill-opacity: 0.55; stroke: #ffffff; stroke-width: 1; cursor: pointer; }
.kf-plot .point:hover { fill-opacity: 0.95; }
.kf-plot .legend-point { fill: ${COLORS.point}; fill-opacity: 0.55; stroke: #ffffff; stroke-width: 1; }
.kf-plot .point.selected { fill: ${COLORS.selected}; fill-opacity: 1; stroke: #ffffff; stroke-width: 2; }
.kf-plot .guide { stroke: ${COLORS.selected}; stroke-width: 1.3; stroke-dasharray: 4 3; }
.kf-plot .guide-label { fill: ${COLORS.selected}; font-weight: 600; paint-order: stroke; stroke: #ffffff; stroke-width: 3px; stroke-linejoin: round; }
.kf-plot .empty { font-size: 13px; fill: #6b7280; }
`;

function startSvg(svg) {
  svg.replaceChildren();
  svg.classList.add('kf-plot');
  el('style', {}, svg, SVG_STYLE);
  const [, , w, h] = svg.getAttribute('viewBox').split(/\s+/).map(Number);
  el('rect', { class: 'bg', x: 0, y: 0, width: w, height: h }, svg);
  return { w, h };
}

function drawAxes(svg, box, sx, sy, xt, yt, xLabel, yLabel, { zero = false } = {}) {
  const g = el('g', { class: 'axes' }, svg);
  for (const v of yt.values) el('line', { class: 'gridline', x1: box.l, x2: box.r, y1: sy(v), y2: sy(v) }, g);
  for (const v of xt.values) el('line', { class: 'gridline', x1: sx(v), x2: sx(v), y1: box.t, y2: box.b }, g);
  if (zero && yt.values.length > 1 && sy(0) > box.t && sy(0) < box.b) el('line', { class: 'zeroline', x1: box.l, x2: box.r, y1: sy(0), y2: sy(0) }, g);
  el('line', { class: 'axis', x1: box.l, x2: box.r, y1: box.b, y2: box.b }, g);
  el('line', { class: 'axis', x1: box.l, x2: box.l, y1: box.t, y2: box.b }, g);
  for (const v of xt.values) {
    el('line', { class: 'tick', x1: sx(v), x2: sx(v), y1: box.b, y2: box.b + 5 }, g);
    el('text', { x: sx(v), y: box.b + 18, 'text-anchor': 'middle' }, g, tickLabel(v, xt.step));
  }
  for (const v of yt.values) {
    el('line', { class: 'tick', x1: box.l - 5, x2: box.l, y1: sy(v), y2: sy(v) }, g);
    el('text', { x: box.l - 8, y: sy(v) + 4, 'text-anchor': 'end' }, g, tickLabel(v, yt.step));
  }
  el('text', { class: 'axis-label', x: (box.l + box.r) / 2, y: box.b + 36, 'text-anchor': 'middle' }, g, xLabel);
  // the y label clears the widest tick label
  const widest = Math.max(...yt.values.map((v) => tickLabel(v, yt.step).length));
  el('text', { class: 'axis-label', x: 0, y: 0, 'text-anchor': 'middle',
    transform: `translate(${Math.max(box.l - 20 - widest * 7, 12)},${(box.t + box.b) / 2}) rotate(-90)` }, g, yLabel);
  return g;
}

// A one-row legend: items = [{kind:'point'|'line'|'dash', cls, label}], laid out from x0.
function drawLegend(svg, x0, y, items) {
  const g = el('g', { class: 'legend' }, svg);
  let x = x0;
  for (const it of items) {
    if (it.kind === 'point') el('circle', { class: 'legend-point', cx: x + 9, cy: y, r: 4.5 }, g);
    else el('line', { class: it.cls, x1: x, x2: x + 22, y1: y, y2: y }, g);
    const t = el('text', { class: 'legend-text', x: x + 28, y: y + 4 }, g, it.label);
    // getComputedTextLength needs layout; fall back to an estimate when the SVG is hidden.
    const w = t.getComputedTextLength ? t.getComputedTextLength() : 0;
    x += 28 + (w > 0 ? w : it.label.length * 6.8) + 22;
  }
  return g;
}

// ---------------------------------------------------------------- status line

function renderStatus() {
  const s = $('status');
  const errs = Object.values(state.errors).filter(Boolean);
  if (errs.length) {
    s.dataset.state = 'error';
    s.textContent = `Error: ${errs.join(' · ')}`;
    s.setAttribute('role', 'alert');
  } else if (state.loading || !state.data) {
    s.dataset.state = 'loading';
    s.textContent = 'Computing…';
    s.setAttribute('role', 'status');
  } else {
    const d = state.data;
    s.dataset.state = 'ok';
    s.setAttribute('role', 'status');
    const ms = isNum(d.elapsed_ms) ? ` · ${fmt(d.elapsed_ms, 2)} ms` : '';
    const eq = isNum(d.attention_bandwidth) ? ` (≈ h ${fmt(d.attention_bandwidth)})` : '';
    s.textContent = `n = ${d.x.length} · ${d.kernel ?? state.query.kernel} h = ${fmt(d.bandwidth)} (LOO ${fmt(d.bandwidth_loo)}) · T = ${fmt(d.temperature)}${eq}${ms}`;
    s.title = 'LOO: leave-one-out cross-validation bandwidth; ≈ h: the attention kernel\'s equivalent Gaussian bandwidth';
  }
  const stale = Boolean(state.errors.smooth || state.errors.input);
  for (const id of ['main-plot', 'profile-plot', 'heatmap']) $(id).classList.toggle('stale', stale);
}

// ---------------------------------------------------------------- main plot

const noDataText = () => (state.errors.smooth || state.errors.input || state.errors.init ? 'Nothing to show: see the error above' : 'Loading…');

function renderMain() {
  const svg = $('main-plot');
  const { w, h } = startSvg(svg);
  const d = state.data;
  if (!d) {
    el('text', { class: 'empty', x: w / 2, y: h / 2, 'text-anchor': 'middle' }, svg, noDataText());
    return;
  }
  const box = { l: 62, r: w - 26, t: 40, b: h - 48 };
  const xd = extent([d.grid, d.x]);
  state.xDomain = xd;
  const yd0 = extent([d.y, d.truth ?? [], d.nw, d.attention]);
  const pad = (yd0[1] - yd0[0]) * 0.06;
  const yd = [yd0[0] - pad, yd0[1] + pad];
  const sx = linear(xd[0], xd[1], box.l, box.r);
  const sy = linear(yd[0], yd[1], box.b, box.t);
  drawAxes(svg, box, sx, sy, ticks(xd[0], xd[1], 10), ticks(yd[0], yd[1], 6), 'x', 'y', { zero: true });

  const clipId = 'main-clip';
  const defs = el('defs', {}, svg);
  const clip = el('clipPath', { id: clipId }, defs);
  el('rect', { x: box.l, y: box.t - 2, width: box.r - box.l, height: box.b - box.t + 4 }, clip);
  const plot = el('g', { 'clip-path': `url(#${clipId})` }, svg);

  if (state.selected !== null && state.selected < d.x.length) {
    const gx = sx(d.x[state.selected]);
    el('line', { class: 'guide', x1: gx, x2: gx, y1: box.t, y2: box.b }, plot);
  }
  if (Array.isArray(d.truth)) el('path', { id: 'truth-curve', class: 'truth', d: pathD(d.grid, d.truth, sx, sy) }, plot);
  // NW wider and underneath, attention on top: where the two agree both stay visible
  el('path', { id: 'nw-curve', class: 'curve-nw wide', d: pathD(d.grid, d.nw, sx, sy), 'data-values': JSON.stringify(d.nw) }, plot);
  el('path', { id: 'attention-curve', class: 'curve-attention', d: pathD(d.grid, d.attention, sx, sy), 'data-values': JSON.stringify(d.attention) }, plot);

  const n = d.x.length;
  const r = n > 800 ? 2 : n > 300 ? 2.8 : n > 120 ? 3.5 : 4.5;
  const pts = el('g', { class: 'points' }, svg);
  let sel = null;
  for (let i = 0; i < n; ++i) {
    if (!isNum(d.x[i]) || !isNum(d.y[i])) continue;
    const c = el('circle', { class: 'point', 'data-index': i, cx: sx(d.x[i]).toFixed(2), cy: sy(d.y[i]).toFixed(2), r }, pts);
    el('title', {}, c, `point ${i}: x = ${fmt(d.x[i], 4)}, y = ${fmt(d.y[i], 4)}`);
    if (i === state.selected) sel = c;
  }
  if (sel) {
    sel.classList.add('selected');
    sel.setAttribute('r', String(r + 2));
    pts.appendChild(sel); // drawn last: on top
    const gx = sx(d.x[state.selected]);
    const label = `x${sub(state.selected)} = ${fmt(d.x[state.selected], 3)}`;
    const right = gx > (box.l + box.r) / 2;
    el('text', { class: 'guide-label', x: gx + (right ? -6 : 6), y: box.t + 14, 'text-anchor': right ? 'end' : 'start' }, svg, label);
  }

  const kname = d.kernel ?? state.query.kernel;
  drawLegend(svg, box.l, 18, [
    { kind: 'point', label: `data (n = ${n})` },
    { kind: 'line', cls: 'truth', label: 'truth' },
    { kind: 'line', cls: 'curve-nw', label: `Nadaraya–Watson (${kname}, h = ${fmt(d.bandwidth)})` },
    { kind: 'line', cls: 'curve-attention', label: `attention (T = ${fmt(d.temperature)}${isNum(d.attention_bandwidth) ? `, ≈ Gaussian h = ${fmt(d.attention_bandwidth)}` : ''})` },
  ]);
  omegaNote(d);

  svg.dataset.query = new URLSearchParams(state.query).toString();
  svg.dataset.n = String(n);
  svg._scales = { sx, sy, box };
}

// The explanation's ω for the range on screen.
function omegaNote(d) {
  const g = d.grid;
  const R = g.length > 1 ? g[g.length - 1] - g[0] : NaN;
  $('omega-note').textContent = isNum(R) && R > 0
    ? ` (here R = ${fmt(R, 3)}: ω₁ = ${fmt(Math.PI / (2 * R), 3)}, ω₂ = ${fmt(Math.PI / R, 3)})` : '';
}

const SUBS = '₀₁₂₃₄₅₆₇₈₉';
const sub = (i) => String(i).replace(/\d/g, (c) => SUBS[Number(c)]);

// The data point nearest to a click, in SVG units: a click near, not on, a point still counts, and
// of overlapping circles the one whose centre is closest wins (not the one drawn on top).
function pointFromEvent(svg, ev) {
  const d = state.data;
  if (!d || !svg._scales) return null;
  const ctm = svg.getScreenCTM();
  if (!ctm) return null;
  const p = new DOMPoint(ev.clientX, ev.clientY).matrixTransform(ctm.inverse());
  const { sx, sy } = svg._scales;
  let best = null, bestD = 14 * 14;
  for (let i = 0; i < d.x.length; ++i) {
    const dx = sx(d.x[i]) - p.x, dy = sy(d.y[i]) - p.y;
    const dd = dx * dx + dy * dy;
    if (dd < bestD) (bestD = dd), (best = i);
  }
  return best;
}

// ---------------------------------------------------------------- profile plot

function renderProfile() {
  const svg = $('profile-plot');
  const { w, h } = startSvg(svg);
  const caption = $('profile-caption');
  const d = state.data;
  const p = state.profile;
  const box = { l: 64, r: w - 14, t: 34, b: h - 44 };
  delete svg.dataset.point;
  const xd = state.xDomain;
  const sx = linear(xd[0], xd[1], box.l, box.r);
  if (!d || !p || state.selected === null || p.point !== state.selected) {
    const sy = linear(0, 1, box.b, box.t);
    drawAxes(svg, box, sx, sy, ticks(xd[0], xd[1], 6), ticks(0, 1, 4), 'data point x', 'weight');
    el('text', { class: 'empty', x: (box.l + box.r) / 2, y: (box.t + box.b) / 2, 'text-anchor': 'middle' }, svg,
      state.selected === null ? 'Click a data point to see its weights' : 'Loading weights…');
    if (state.selected === null) caption.textContent = 'Click a data point above (or use the point slider) to see its weights.';
    return;
  }
  svg.dataset.point = String(p.point);
  const xs = d.x;
  const ymax = Math.max(1e-12, ...p.nw.filter(isNum), ...p.attention.filter(isNum)) * 1.1;
  const sy = linear(0, ymax, box.b, box.t);
  drawAxes(svg, box, sx, sy, ticks(xd[0], xd[1], 6), ticks(0, ymax, 4), 'data point x', 'weight');
  const x0 = isNum(p.x0) ? p.x0 : xs[p.point];
  el('line', { class: 'guide', x1: sx(x0), x2: sx(x0), y1: box.t, y2: box.b }, svg);

  const area = (ws) => {
    const line = pathD(xs, ws, sx, sy);
    if (!line) return '';
    const first = xs.findIndex((_, i) => isNum(ws[i]));
    let last = -1;
    for (let i = 0; i < xs.length; ++i) if (isNum(ws[i])) last = i;
    return `${line}L${sx(xs[last]).toFixed(2)},${sy(0).toFixed(2)}L${sx(xs[first]).toFixed(2)},${sy(0).toFixed(2)}Z`;
  };
  el('path', { class: 'area-attention', d: area(p.attention) }, svg);
  el('path', { class: 'area-nw', d: area(p.nw) }, svg);
  el('path', { id: 'profile-nw', class: 'curve-nw wide', d: pathD(xs, p.nw, sx, sy), 'data-values': JSON.stringify(p.nw) }, svg);
  el('path', { id: 'profile-attention', class: 'curve-attention', d: pathD(xs, p.attention, sx, sy), 'data-values': JSON.stringify(p.attention) }, svg);
  if (xs.length <= 150) {
    const g = el('g', {}, svg);
    for (let i = 0; i < xs.length; ++i) {
      if (isNum(p.nw[i])) el('circle', { class: 'dot-nw', cx: sx(xs[i]), cy: sy(p.nw[i]), r: 2.8 }, g);
      if (isNum(p.attention[i])) el('circle', { class: 'dot-attention', cx: sx(xs[i]), cy: sy(p.attention[i]), r: 2 }, g);
    }
  }
  drawLegend(svg, box.l, 16, [
    { kind: 'line', cls: 'curve-nw', label: 'NW weight' },
    { kind: 'line', cls: 'curve-attention', label: 'attention weight' },
    { kind: 'line', cls: 'guide', label: `query x${sub(p.point)}` },
  ]);
  caption.textContent = `Query x${sub(p.point)} = ${fmt(x0, 4)} (point ${p.point}). ` +
    `Effective number of points 1/Σw²: NW ${fmt(effectiveN(p.nw), 3)}, attention ${fmt(effectiveN(p.attention), 3)}. ` +
    `Weight on itself: NW ${fmt(p.nw[p.point], 3)}, attention ${fmt(p.attention[p.point], 3)}.`;
}

// ---------------------------------------------------------------- heatmap (canvas)

const VIRIDIS = [
  [68, 1, 84], [71, 44, 122], [59, 81, 139], [44, 113, 142], [33, 144, 141],
  [39, 173, 129], [92, 200, 99], [170, 220, 50], [253, 231, 37],
];
function viridis(t) {
  const u = clamp(isNum(t) ? t : 0, 0, 1) * (VIRIDIS.length - 1);
  const i = Math.min(Math.floor(u), VIRIDIS.length - 2);
  const f = u - i;
  const a = VIRIDIS[i], b = VIRIDIS[i + 1];
  return `rgb(${Math.round(a[0] + f * (b[0] - a[0]))},${Math.round(a[1] + f * (b[1] - a[1]))},${Math.round(a[2] + f * (b[2] - a[2]))})`;
}

const VIRIDIS_LUT = Array.from({ length: 256 }, (_, i) => viridis(i / 255));
const viridisFast = (t) => VIRIDIS_LUT[Math.round(clamp(isNum(t) ? t : 0, 0, 1) * 255)];

function heatmapGeometry(canvas) {
  const W = canvas.clientWidth || 460;
  const H = canvas.clientHeight || 250;
  return { W, H, box: { l: 58, r: W - 84, t: 12, b: H - 44 } };
}

function columnEdges(xs, sx, box) {
  const n = xs.length;
  const edges = new Array(n + 1);
  edges[0] = n > 1 ? sx(xs[0] - (xs[1] - xs[0]) / 2) : box.l;
  for (let j = 1; j < n; ++j) edges[j] = sx((xs[j - 1] + xs[j]) / 2);
  edges[n] = n > 1 ? sx(xs[n - 1] + (xs[n - 1] - xs[n - 2]) / 2) : box.r;
  return edges.map((e) => clamp(e, box.l, box.r));
}

function renderHeatmap() {
  const canvas = $('heatmap');
  const dpr = window.devicePixelRatio || 1;
  const { W, H, box } = heatmapGeometry(canvas);
  if (canvas.width !== Math.round(W * dpr) || canvas.height !== Math.round(H * dpr)) {
    canvas.width = Math.round(W * dpr);
    canvas.height = Math.round(H * dpr);
  }
  canvas.dataset.mode = state.heatmapMode;
  canvas._geom = null;
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.fillStyle = '#ffffff';
  ctx.fillRect(0, 0, W, H);
  const d = state.data;
  const hm = d && d.heatmap;
  const font = '12px system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial, sans-serif';
  ctx.font = font;
  if (!hm || !Array.isArray(hm[state.heatmapMode]) || !Array.isArray(hm.row_x)) {
    ctx.fillStyle = '#6b7280';
    ctx.textAlign = 'center';
    ctx.fillText(d ? 'no weight matrix in the answer' : noDataText(), W / 2, H / 2);
    return;
  }
  const M = hm[state.heatmapMode];
  const rows = M.length;
  const xs = d.x;
  const xd = state.xDomain;
  const sx = linear(xd[0], xd[1], box.l, box.r);
  const edges = columnEdges(xs, sx, box);
  const rowH = (box.b - box.t) / rows;
  let vmax = 0;
  for (const row of M) for (const v of row) if (isNum(v) && v > vmax) vmax = v;
  if (!(vmax > 0)) vmax = 1;

  const zero = VIRIDIS_LUT[0];
  ctx.fillStyle = zero;
  ctx.fillRect(box.l, box.t, box.r - box.l, box.b - box.t);
  for (let r = 0; r < rows; ++r) {
    const row = M[r];
    const y = box.t + r * rowH;
    for (let j = 0; j < row.length && j < xs.length; ++j) {
      const v = row[j];
      const x0 = edges[j], x1 = edges[j + 1];
      if (x1 <= x0) continue;
      const c = isNum(v) ? viridisFast(v / vmax) : '#d1d5db'; // grey: undefined weight
      if (c === zero) continue;
      ctx.fillStyle = c;
      ctx.fillRect(x0, y, x1 - x0 + 0.6, rowH + 0.6);
    }
  }

  const rx = hm.row_x;
  const rx0 = rx[0], rx1 = rx[rx.length - 1];
  const rowY = (x) => box.t + ((rx1 > rx0 ? (x - rx0) / (rx1 - rx0) : 0) * (rows - 1) + 0.5) * rowH;

  // the chosen point: its column and its query row
  if (state.selected !== null && state.selected < xs.length) {
    const j = state.selected;
    ctx.strokeStyle = '#ffffff';
    ctx.lineWidth = 1.5;
    ctx.strokeRect(edges[j], box.t, Math.max(edges[j + 1] - edges[j], 1.5), box.b - box.t);
    const yq = rowY(xs[j]);
    ctx.setLineDash([4, 3]);
    ctx.beginPath();
    ctx.moveTo(box.l, yq);
    ctx.lineTo(box.r, yq);
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.fillStyle = COLORS.selected;
    const cx = (edges[j] + edges[j + 1]) / 2;
    ctx.beginPath();
    ctx.moveTo(cx, box.b + 1);
    ctx.lineTo(cx - 5, box.b + 8);
    ctx.lineTo(cx + 5, box.b + 8);
    ctx.closePath();
    ctx.fill();
  }

  // axes
  ctx.strokeStyle = '#9ca3af';
  ctx.lineWidth = 1;
  ctx.strokeRect(box.l - 0.5, box.t - 0.5, box.r - box.l + 1, box.b - box.t + 1);
  ctx.fillStyle = '#4b5563';
  ctx.textAlign = 'center';
  ctx.textBaseline = 'top';
  const xt = ticks(xd[0], xd[1], 6);
  for (const v of xt.values) {
    const x = sx(v);
    ctx.beginPath();
    ctx.moveTo(x, box.b);
    ctx.lineTo(x, box.b + 4);
    ctx.stroke();
    ctx.fillText(tickLabel(v, xt.step), x, box.b + 9);
  }
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  const yt = ticks(Math.min(rx0, rx1), Math.max(rx0, rx1), 5);
  for (const v of yt.values) {
    const y = rowY(v);
    ctx.beginPath();
    ctx.moveTo(box.l - 4, y);
    ctx.lineTo(box.l, y);
    ctx.stroke();
    ctx.fillText(tickLabel(v, yt.step), box.l - 7, y);
  }
  ctx.fillStyle = '#111827';
  ctx.font = `600 13px ${font.slice(5)}`;
  ctx.textAlign = 'center';
  ctx.textBaseline = 'alphabetic';
  ctx.fillText('data point x (key)', (box.l + box.r) / 2, H - 6);
  ctx.save();
  ctx.translate(16, (box.t + box.b) / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.fillText('query x (row)', 0, 0);
  ctx.restore();

  // colour bar
  const cbx = box.r + 14, cbw = 12;
  for (let k = 0; k < 64; ++k) {
    const y0 = box.b - ((k + 1) / 64) * (box.b - box.t);
    ctx.fillStyle = viridisFast((k + 0.5) / 64);
    ctx.fillRect(cbx, y0, cbw, (box.b - box.t) / 64 + 0.6);
  }
  ctx.strokeStyle = '#9ca3af';
  ctx.strokeRect(cbx - 0.5, box.t - 0.5, cbw + 1, box.b - box.t + 1);
  ctx.font = font;
  ctx.fillStyle = '#4b5563';
  ctx.textAlign = 'left';
  ctx.textBaseline = 'middle';
  ctx.fillText(fmt(vmax, 2), cbx + cbw + 4, box.t + 4);
  ctx.fillText('0', cbx + cbw + 4, box.b - 4);
  ctx.save();
  ctx.translate(cbx + cbw + 12, (box.t + box.b) / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.textAlign = 'center';
  ctx.fillText(state.heatmapMode === 'nw' ? 'NW weight' : 'attention weight', 0, 0);
  ctx.restore();

  canvas._geom = { box, edges, rows, rowH, rx };
}

function heatmapCell(canvas, ev) {
  const g = canvas._geom;
  const d = state.data;
  if (!g || !d) return null;
  const rect = canvas.getBoundingClientRect();
  const x = ev.clientX - rect.left, y = ev.clientY - rect.top;
  const { box, edges, rows, rowH } = g;
  if (x < box.l || x > box.r || y < box.t || y > box.b) return null;
  const r = clamp(Math.floor((y - box.t) / rowH), 0, rows - 1);
  let lo = 0, hi = edges.length - 2;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (edges[mid] <= x) lo = mid;
    else hi = mid - 1;
  }
  return { r, j: lo };
}

const HEATMAP_HINT = 'Rows: query x on the grid; columns: data points by x. Hover for values, click to select a point.';

// ---------------------------------------------------------------- fetching

function apiParams() {
  const p = {};
  for (const k of PARAM_KEYS) p[k] = String(state.params[k]);
  return p;
}

let debounceTimer = 0;
function schedule(delay) {
  clearTimeout(debounceTimer);
  state.loading = true; // an answer is due: the status says so until it is on screen
  renderStatus();
  debounceTimer = setTimeout(refresh, delay);
}

async function refresh() {
  clearTimeout(debounceTimer);
  if (state.errors.input) {
    state.loading = false;
    renderStatus();
    return;
  }
  const seq = ++state.smoothSeq;
  if (state.smoothAbort) state.smoothAbort.abort();
  const ctrl = new AbortController();
  state.smoothAbort = ctrl;
  state.loading = true;
  renderStatus();
  const params = apiParams();
  writeUrl();
  try {
    const data = await getJson('/api/smooth', params, ctrl.signal);
    if (seq !== state.smoothSeq) return; // a newer request was sent: this answer is stale
    requireArrays(data, ['x', 'y', 'grid', 'nw', 'attention'], '/api/smooth');
    state.data = data;
    state.query = params;
    state.errors.smooth = null;
    const n = data.x.length;
    if (state.selected !== null && state.selected >= n) state.selected = null;
    if (state.selected === null) (state.profile = null), (state.errors.profile = null);
    updateLooButton();
    updatePointSlider();
    renderMain();
    renderHeatmap();
    if (state.selected !== null) fetchProfile();
    else renderProfile();
  } catch (e) {
    if (e.name === 'AbortError' || seq !== state.smoothSeq) return;
    state.errors.smooth = e.message;
  } finally {
    if (seq === state.smoothSeq) {
      state.loading = false;
      renderStatus();
      if (!state.data) renderMain(), renderHeatmap();
    }
  }
}

async function fetchProfile() {
  if (state.selected === null || !state.query) return;
  const seq = ++state.profileSeq;
  if (state.profileAbort) state.profileAbort.abort();
  const ctrl = new AbortController();
  state.profileAbort = ctrl;
  const point = state.selected;
  if (!state.profile || state.profile.point !== point) renderProfile(); // "Loading weights…"
  try {
    const p = await getJson('/api/profile', { ...state.query, point: String(point) }, ctrl.signal);
    if (seq !== state.profileSeq) return;
    requireArrays(p, ['nw', 'attention'], '/api/profile');
    if (!Number.isInteger(p.point)) p.point = point;
    state.profile = p;
    state.errors.profile = null;
    renderProfile();
  } catch (e) {
    if (e.name === 'AbortError' || seq !== state.profileSeq) return;
    state.errors.profile = e.message;
  } finally {
    if (seq === state.profileSeq) renderStatus();
  }
}

function select(i) {
  if (!state.data || i === null || !(i >= 0 && i < state.data.x.length)) return;
  state.selected = i;
  $('point-index').value = String(i);
  pointValueText();
  writeUrl();
  renderMain();
  renderHeatmap();
  fetchProfile();
}

// ---------------------------------------------------------------- URL state (shareable views)

function readUrl() {
  const q = new URLSearchParams(location.search);
  for (const k of PARAM_KEYS) {
    if (!q.has(k)) continue;
    const raw = q.get(k);
    if (k === 'function' || k === 'kernel') state.params[k] = raw;
    else if (raw !== '' && Number.isFinite(Number(raw))) state.params[k] = Number(raw);
  }
  if (q.has('point') && Number.isInteger(Number(q.get('point')))) state.selected = Number(q.get('point'));
  if (q.get('heatmap') === 'attention') state.heatmapMode = 'attention';
}

function writeUrl() {
  const q = new URLSearchParams();
  for (const k of PARAM_KEYS) if (state.params[k] !== DEFAULTS[k]) q.set(k, String(state.params[k]));
  if (state.selected !== null) q.set('point', String(state.selected));
  if (state.heatmapMode !== 'nw') q.set('heatmap', state.heatmapMode);
  const s = q.toString();
  history.replaceState(null, '', s ? `?${s}` : location.pathname);
}

// ---------------------------------------------------------------- controls

const LOG_RANGES = { bandwidth: [-3, 2], temperature: [-3, 2] };

function syncControls() {
  const p = state.params;
  $('function').value = p.function;
  $('kernel').value = p.kernel;
  $('noise').value = String(p.noise);
  $('noise-number').value = String(p.noise);
  $('n').value = String(p.n);
  $('n-range').value = String(Math.log10(Math.max(p.n, 2)));
  $('seed').value = String(p.seed);
  for (const k of ['bandwidth', 'temperature']) {
    $(k).value = String(clamp(Math.log10(p[k] > 0 ? p[k] : 1), ...LOG_RANGES[k]));
    $(`${k}-number`).value = String(p[k]);
  }
  describe();
}

// The log sliders' values are log10 of the parameter: tell assistive technology the real value.
function valueTexts() {
  const p = state.params;
  $('bandwidth').setAttribute('aria-valuetext', `h = ${p.bandwidth}`);
  $('temperature').setAttribute('aria-valuetext', `T = ${p.temperature}`);
  $('n-range').setAttribute('aria-valuetext', `n = ${p.n}`);
}

function describe() {
  valueTexts();
  const f = state.functions.find((x) => x.name === state.params.function);
  $('function-desc').textContent = f ? f.description ?? '' : '';
  const k = state.kernels.find((x) => x.name === state.params.kernel);
  $('kernel-desc').textContent = k ? k.description ?? '' : '';
}

function updateLooButton() {
  const b = $('use-loo');
  const h = state.data && state.data.bandwidth_loo;
  b.disabled = !isNum(h) || !(h > 0);
  b.textContent = isNum(h) ? `Use LOO-CV bandwidth (h = ${fmt(h, 3)})` : 'Use LOO-CV bandwidth';
  if (isNum(h)) b.dataset.bandwidthLoo = String(h);
}

function updatePointSlider() {
  const s = $('point-index');
  const n = state.data ? state.data.x.length : 0;
  s.max = String(Math.max(n - 1, 0));
  s.disabled = n === 0;
  s.value = String(state.selected ?? 0);
  pointValueText();
}

function pointValueText() {
  const s = $('point-index');
  const d = state.data;
  const i = state.selected;
  s.setAttribute('aria-valuetext', d && i !== null && i < d.x.length ? `point ${i}, x = ${fmt(d.x[i], 4)}, y = ${fmt(d.y[i], 4)}` : 'no point selected');
}

function setInputError(key, message) {
  const had = state.errors.input;
  state.errors.input = message ? `${key}: ${message}` : null;
  if (had !== state.errors.input) renderStatus();
}

function onParam(key, value, delay) {
  state.params[key] = value;
  setInputError(key, null);
  describe();
  schedule(delay);
}

function fillSelect(sel, items, current) {
  sel.replaceChildren();
  for (const it of items) {
    const o = document.createElement('option');
    o.value = it.name;
    o.textContent = it.name;
    if (it.description) o.title = it.description;
    sel.appendChild(o);
  }
  if (items.some((it) => it.name === current)) return current;
  return items.length ? items[0].name : current;
}

function wire() {
  $('function').addEventListener('change', (e) => {
    // Keep h the same fraction of the x range when the range changes (seed001 is on [0, 6], the
    // others on [0, 1]), so the picture stays comparable; T needs nothing (φ scales with R).
    const range = (name) => {
      const f = state.functions.find((x) => x.name === name);
      return f && isNum(f.lo) && isNum(f.hi) && f.hi > f.lo ? f.hi - f.lo : null;
    };
    const r0 = range(state.params.function), r1 = range(e.target.value);
    if (r0 && r1 && r0 !== r1 && state.params.bandwidth > 0) {
      const h = roundSig(state.params.bandwidth * (r1 / r0), 3);
      state.params.bandwidth = h;
      $('bandwidth').value = String(clamp(Math.log10(h), ...LOG_RANGES.bandwidth));
      $('bandwidth-number').value = String(h);
    }
    onParam('function', e.target.value, 0);
  });
  $('kernel').addEventListener('change', (e) => onParam('kernel', e.target.value, 0));

  $('noise').addEventListener('input', (e) => {
    $('noise-number').value = e.target.value;
    onParam('noise', Number(e.target.value), DEBOUNCE_SLIDER_MS);
  });
  $('noise-number').addEventListener('input', (e) => {
    const v = e.target.valueAsNumber;
    if (!Number.isFinite(v)) return setInputError('noise', 'enter a number');
    $('noise').value = String(v);
    onParam('noise', v, DEBOUNCE_TYPING_MS);
  });

  $('n-range').addEventListener('input', (e) => {
    const v = Math.round(10 ** Number(e.target.value));
    $('n').value = String(v);
    onParam('n', v, DEBOUNCE_SLIDER_MS);
  });
  $('n').addEventListener('input', (e) => {
    const v = e.target.valueAsNumber;
    if (!Number.isFinite(v)) return setInputError('n', 'enter a whole number');
    $('n-range').value = String(Math.log10(Math.max(v, 2)));
    onParam('n', v, DEBOUNCE_TYPING_MS); // the server reports out-of-range values
  });

  $('seed').addEventListener('input', (e) => {
    const v = e.target.valueAsNumber;
    if (!Number.isFinite(v)) return setInputError('seed', 'enter a whole number');
    onParam('seed', v, DEBOUNCE_TYPING_MS);
  });
  $('reseed').addEventListener('click', () => {
    const v = (Number.isFinite(state.params.seed) ? state.params.seed : 0) + 1;
    $('seed').value = String(v);
    onParam('seed', v, 0);
  });

  for (const key of ['bandwidth', 'temperature']) {
    const range = $(key), num = $(`${key}-number`);
    range.addEventListener('input', () => {
      const v = roundSig(10 ** Number(range.value), 3);
      num.value = String(v);
      onParam(key, v, DEBOUNCE_SLIDER_MS);
    });
    num.addEventListener('input', () => {
      const v = num.valueAsNumber;
      if (!Number.isFinite(v)) return setInputError(key, 'enter a number');
      if (v > 0) range.value = String(clamp(Math.log10(v), ...LOG_RANGES[key]));
      onParam(key, v, DEBOUNCE_TYPING_MS); // the server reports v <= 0
    });
  }

  $('use-loo').addEventListener('click', () => {
    const h = state.data && state.data.bandwidth_loo;
    if (!isNum(h)) return;
    const v = roundSig(h, 4);
    $('bandwidth').value = String(clamp(Math.log10(v), ...LOG_RANGES.bandwidth));
    $('bandwidth-number').value = String(v);
    onParam('bandwidth', v, 0);
  });

  $('controls').addEventListener('submit', (e) => e.preventDefault());

  const main = $('main-plot');
  main.addEventListener('click', (ev) => {
    const i = pointFromEvent(main, ev);
    if (i !== null) select(i);
  });

  $('point-index').addEventListener('input', (e) => select(Number(e.target.value)));

  for (const id of ['heatmap-mode-nw', 'heatmap-mode-attention']) {
    $(id).addEventListener('change', (e) => {
      if (!e.target.checked) return;
      state.heatmapMode = e.target.value;
      writeUrl();
      renderHeatmap();
    });
  }
  const canvas = $('heatmap');
  canvas.addEventListener('mousemove', (ev) => {
    const c = heatmapCell(canvas, ev);
    const d = state.data;
    const out = $('heatmap-readout');
    if (!c || !d) {
      out.textContent = HEATMAP_HINT;
      canvas.style.cursor = '';
      return;
    }
    canvas.style.cursor = 'pointer';
    const hm = d.heatmap;
    const M = hm && hm[state.heatmapMode];
    const v = M && M[c.r] ? M[c.r][c.j] : null;
    out.textContent = `query x = ${fmt(hm.row_x[c.r], 3)} · point ${c.j} (x = ${fmt(d.x[c.j], 3)}): ` +
      `${state.heatmapMode === 'nw' ? 'NW' : 'attention'} weight ${fmt(v, 3)}`;
  });
  canvas.addEventListener('mouseleave', () => ($('heatmap-readout').textContent = HEATMAP_HINT));
  canvas.addEventListener('click', (ev) => {
    const c = heatmapCell(canvas, ev);
    if (c) select(c.j);
  });
  if (typeof ResizeObserver === 'function') new ResizeObserver(() => renderHeatmap()).observe(canvas);

  $('save-svg').addEventListener('click', () => {
    download(new Blob([svgText($('main-plot'))], { type: 'image/svg+xml' }), `${exportName()}.svg`);
  });
  $('save-png').addEventListener('click', () => {
    savePng($('main-plot'), `${exportName()}.png`).then(
      () => (state.errors.export = null),
      (e) => (state.errors.export = `could not make the PNG (${e.message})`),
    ).finally(renderStatus);
  });
}

// ---------------------------------------------------------------- export

function exportName() {
  const p = state.query || apiParams();
  return `kernelformer-${p.function}-${p.kernel}-h${p.bandwidth}-T${p.temperature}-n${p.n}-seed${p.seed}`.replace(/[^\w.-]+/g, '_');
}

function svgText(svg) {
  const [, , w, h] = svg.getAttribute('viewBox').split(/\s+/).map(Number);
  const clone = svg.cloneNode(true);
  clone.setAttribute('xmlns', SVGNS);
  clone.setAttribute('width', String(w));
  clone.setAttribute('height', String(h));
  clone.removeAttribute('style');
  clone.classList.remove('stale');
  return `<?xml version="1.0" encoding="UTF-8"?>\n${new XMLSerializer().serializeToString(clone)}\n`;
}

async function savePng(svg, name, scale = 2) {
  const [, , w, h] = svg.getAttribute('viewBox').split(/\s+/).map(Number);
  const url = URL.createObjectURL(new Blob([svgText(svg)], { type: 'image/svg+xml' }));
  try {
    const img = new Image();
    await new Promise((resolve, reject) => {
      img.onload = resolve;
      img.onerror = () => reject(new Error('the browser could not render the SVG'));
      img.src = url;
    });
    const c = document.createElement('canvas');
    c.width = Math.round(w * scale);
    c.height = Math.round(h * scale);
    const ctx = c.getContext('2d');
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(0, 0, c.width, c.height);
    ctx.drawImage(img, 0, 0, c.width, c.height);
    const blob = await new Promise((resolve, reject) => c.toBlob((b) => (b ? resolve(b) : reject(new Error('toBlob failed'))), 'image/png'));
    download(blob, name);
  } finally {
    URL.revokeObjectURL(url);
  }
}

function download(blob, name) {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 5000);
}

// ---------------------------------------------------------------- start

async function init() {
  readUrl();
  wire();
  syncControls();
  renderMain();
  renderProfile();
  renderHeatmap();
  renderStatus();
  try {
    const [k, f] = await Promise.all([getJson('/api/kernels'), getJson('/api/functions')]);
    requireArrays(k, ['kernels'], '/api/kernels');
    requireArrays(f, ['functions'], '/api/functions');
    state.kernels = k.kernels;
    state.functions = f.functions;
    state.params.kernel = fillSelect($('kernel'), state.kernels, state.params.kernel);
    state.params.function = fillSelect($('function'), state.functions, state.params.function);
  } catch (e) {
    state.errors.init = `could not load the kernel and function lists (${e.message})`;
    // keep going with what the URL or the defaults say, so the plots can still appear
    fillSelect($('kernel'), [{ name: state.params.kernel }], state.params.kernel);
    fillSelect($('function'), [{ name: state.params.function }], state.params.function);
  }
  $(`heatmap-mode-${state.heatmapMode}`).checked = true;
  syncControls();
  await refresh();
}

init();
