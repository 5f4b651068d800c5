// SVG drawing for the explorer: axes, legends, the main plot (data, truth, both fits), the weight
// profile of one query and the training-loss curve. Every plot is drawn at the pixel size of its
// box (viewBox = client size), so text stays 12 px at any page width.

export const SVGNS = 'http://www.w3.org/2000/svg';
export const COLORS = { nw: '#2563eb', attention: '#ea580c', truth: '#6b7280', point: '#1f2937', selected: '#db2777' };

export const isNum = (v) => typeof v === 'number' && Number.isFinite(v);
export const clamp = (v, lo, hi) => Math.min(hi, Math.max(lo, v));

export function fmt(v, digits = 3) {
  if (v === null || v === undefined) return '–';
  if (!isNum(v)) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e5)) return v.toExponential(digits - 1).replace(/-/g, '−');
  return String(Number(v.toPrecision(digits))).replace(/-/g, '−');
}

const SUBS = '₀₁₂₃₄₅₆₇₈₉';
export const sub = (i) => String(i).replace(/\d/g, (c) => SUBS[Number(c)]);

function niceStep(span, count) {
  const raw = span / Math.max(count, 1);
  const p = 10 ** Math.floor(Math.log10(raw));
  const f = raw / p;
  return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * p;
}

export function ticks(lo, hi, count) {
  if (!(hi > lo)) return { values: [lo], step: 1 };
  const step = niceStep(hi - lo, count);
  const values = [];
  for (let v = Math.ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step) values.push(Number(v.toFixed(12)));
  return { values, step };
}

export function tickLabel(v, step) {
  const dec = clamp(-Math.floor(Math.log10(step) + 1e-9), 0, 8);
  return (Math.abs(v) < step * 1e-6 ? 0 : v).toFixed(dec).replace(/-/g, '−');
}

export function extent(arrays, fallback = [0, 1]) {
  let lo = Infinity, hi = -Infinity;
  for (const a of arrays) for (const v of a) if (isNum(v)) (lo = Math.min(lo, v)), (hi = Math.max(hi, v));
  if (!(hi >= lo)) return fallback;
  if (hi === lo) return [lo - 1, hi + 1];
  return [lo, hi];
}

export function linear(d0, d1, r0, r1) {
  const k = (r1 - r0) / (d1 - d0 || 1);
  return (v) => r0 + (v - d0) * k;
}

export function el(tag, attrs = {}, parent = null, text = null) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) e.setAttribute(k, String(v));
  if (text !== null) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}

// To a tenth of a pixel (Math.round is several times faster than toFixed on thousands of points).
export const r1 = (v) => Math.round(v * 10) / 10;

export function pathD(xs, ys, sx, sy) {
  let d = '';
  let pen = false;
  for (let i = 0; i < xs.length; ++i) {
    if (!isNum(ys[i]) || !isNum(xs[i])) {
      pen = false;
      continue;
    }
    d += `${pen ? 'L' : 'M'}${r1(sx(xs[i]))},${r1(sy(ys[i]))}`;
    pen = true;
  }
  return d;
}

// The plots' styles: one <style> in the page's head (a <style> inside each redrawn SVG would make
// the browser recompute every style of the page on each update), copied into a saved SVG so it
// looks like the page. Curves take no pointer events: a click on a point under a curve reaches
// the point.
export const SVG_STYLE = `
.kf-plot text { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial, sans-serif; font-size: 12px; fill: #4b5563; }
.kf-plot .bg { fill: #ffffff; }
.kf-plot .gridline { stroke: #eef0f4; stroke-width: 1; }
.kf-plot .zeroline { stroke: #d1d5db; stroke-width: 1; }
.kf-plot .axis, .kf-plot .tick { stroke: #9ca3af; stroke-width: 1; }
.kf-plot .axis-label { font-size: 13px; font-weight: 600; fill: #111827; }
.kf-plot .legend-text { font-size: 12.5px; fill: #111827; }
.kf-plot .truth { fill: none; stroke: ${COLORS.truth}; stroke-width: 1.6; stroke-dasharray: 6 4; pointer-events: none; }
.kf-plot .curve-nw, .kf-plot .curve-attention { fill: none; stroke-width: 2.6; stroke-linejoin: round; stroke-linecap: round; pointer-events: none; }
.kf-plot .curve-nw { stroke: ${COLORS.nw}; }
.kf-plot .curve-attention { stroke: ${COLORS.attention}; }
.kf-plot .curve-nw.wide { stroke-width: 4; }
.kf-plot .halo { fill: none; stroke: #ffffff; stroke-opacity: 0.85; stroke-width: 7; stroke-linejoin: round; pointer-events: none; }
.kf-plot .area-nw { fill: ${COLORS.nw}; fill-opacity: 0.12; stroke: none; }
.kf-plot .area-attention { fill: ${COLORS.attention}; fill-opacity: 0.10; stroke: none; }
.kf-plot .dot-nw { fill: ${COLORS.nw}; }
.kf-plot .dot-attention { fill: ${COLORS.attention}; }
.kf-plot .point { fill: ${COLORS.point}; fill-opacity: 0.45; stroke: #ffffff; stroke-width: 0.8; cursor: pointer; }
.kf-plot .point:hover { fill-opacity: 0.95; }
.kf-plot .point.dots { stroke: none; fill-opacity: 0.4; }
.kf-plot .legend-point { fill: ${COLORS.point}; fill-opacity: 0.55; stroke: #ffffff; stroke-width: 1; }
.kf-plot .point.selected { fill: ${COLORS.selected}; fill-opacity: 1; stroke: #ffffff; stroke-width: 2; }
.kf-plot .guide { stroke: ${COLORS.selected}; stroke-width: 1.3; stroke-dasharray: 4 3; pointer-events: none; }
.kf-plot .guide-label { fill: ${COLORS.selected}; font-weight: 600; paint-order: stroke; stroke: #ffffff; stroke-width: 3px; stroke-linejoin: round; }
.kf-plot .loss { fill: none; stroke: #7c3aed; stroke-width: 2; }
.kf-plot .empty { font-size: 13px; fill: #6b7280; }
`;

let styled = false;

// Clears svg and sizes it to width w (its box's, read by the caller before anything is redrawn,
// so no layout pass runs in between): height = w · aspect within [minH, maxH].
export function startSvg(svg, width, aspect, minH, maxH) {
  const w = Math.max(Math.round(width || 600), 240);
  const h = Math.round(clamp(w * aspect, minH, maxH));
  if (!styled) {
    const st = document.createElement('style');
    st.textContent = SVG_STYLE;
    document.head.appendChild(st);
    styled = true;
  }
  svg.replaceChildren();
  svg.classList.add('kf-plot');
  svg.setAttribute('viewBox', `0 0 ${w} ${h}`);
  if (svg.style.height !== `${h}px`) svg.style.height = `${h}px`;
  el('rect', { class: 'bg', x: 0, y: 0, width: w, height: h }, svg);
  return { w, h };
}

export function drawAxes(svg, box, sx, sy, xt, yt, xLabel, yLabel, { zero = false } = {}) {
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
  el('text', { class: 'axis-label', x: (box.l + box.r) / 2, y: box.b + 34, 'text-anchor': 'middle' }, g, xLabel);
  const widest = Math.max(...yt.values.map((v) => tickLabel(v, yt.step).length));
  el('text', { class: 'axis-label', x: 0, y: 0, 'text-anchor': 'middle',
    transform: `translate(${Math.max(box.l - 18 - widest * 7, 12)},${(box.t + box.b) / 2}) rotate(-90)` }, g, yLabel);
  return g;
}

// Text width in px without a layout pass (an SVG text's getComputedTextLength forces one, and
// the page has just rewritten its plots).
let measureCtx = null;
function textWidth(text, px = 12.5) {
  measureCtx ??= document.createElement('canvas').getContext('2d');
  measureCtx.font = `${px}px system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial, sans-serif`;
  return measureCtx.measureText(text).width;
}

// A legend that wraps into as many rows as the width needs; returns the height it took.
// items = [{kind: 'point' | 'line', cls, label}].
export function drawLegend(svg, x0, y0, maxX, items) {
  const g = el('g', { class: 'legend' }, svg);
  let x = x0, y = y0;
  for (const it of items) {
    const w = 28 + textWidth(it.label);
    if (x > x0 && x + w > maxX) (x = x0), (y += 18);
    el('text', { class: 'legend-text', x: x + 28, y: y + 4 }, g, it.label);
    if (it.kind === 'point') el('circle', { class: 'legend-point', cx: x + 9, cy: y, r: 4.5 }, g);
    else el('line', { class: it.cls, x1: x, x2: x + 22, y1: y, y2: y }, g);
    x += w + 18;
  }
  return y - y0 + 18;
}

export function emptyText(svg, w, h, text) {
  el('text', { class: 'empty', x: w / 2, y: h / 2, 'text-anchor': 'middle' }, svg, text);
}

// The main plot: points first, then truth and both fits above them (at n ≥ 300 the points would
// hide the curves), the chosen point last.
export function renderMain(svg, width, d, selected, labels, emptyMessage) {
  const { w, h } = startSvg(svg, width, 0.4, 250, 360);
  if (!d) return emptyText(svg, w, h, emptyMessage), null;
  const legendH = drawLegend(svg, 56, 16, w - 12, [
    { kind: 'point', label: `data (n = ${d.x.length})` },
    { kind: 'line', cls: 'truth', label: 'truth' },
    { kind: 'line', cls: 'curve-nw', label: labels.nw },
    { kind: 'line', cls: 'curve-attention', label: labels.attention },
  ]);
  const box = { l: w < 500 ? 46 : 58, r: w - 14, t: 16 + legendH + 6, b: h - 44 };
  const xd = [d.lo, d.hi];
  const yd0 = extent([d.y, d.truth, d.nw, d.attention]);
  const pad = (yd0[1] - yd0[0]) * 0.05;
  const sx = linear(xd[0], xd[1], box.l, box.r);
  const sy = linear(yd0[0] - pad, yd0[1] + pad, box.b, box.t);
  drawAxes(svg, box, sx, sy, ticks(xd[0], xd[1], Math.max(3, Math.floor((box.r - box.l) / 80))),
    ticks(yd0[0] - pad, yd0[1] + pad, 6), 'x', 'y', { zero: true });
  const defs = el('defs', {}, svg);
  const clip = el('clipPath', { id: 'main-clip' }, defs);
  el('rect', { x: box.l, y: box.t - 2, width: box.r - box.l, height: box.b - box.t + 4 }, clip);
  const n = d.x.length;
  const r = n > 800 ? 1.8 : n > 300 ? 2.4 : n > 120 ? 3.4 : 4.5;
  // Up to 100 points: one circle each (a tooltip, a target for tests); beyond, one path of dots
  // (hundreds of elements cost the browser more style, layout and paint time than the rest of the
  // update). Clicks find the nearest point by position either way.
  const pts = el('g', { class: 'points' }, svg);
  if (n <= 100) {
    for (let i = 0; i < n; ++i) {
      if (!isNum(d.x[i]) || !isNum(d.y[i])) continue;
      const c = el('circle', { class: 'point', 'data-index': i, cx: r1(sx(d.x[i])), cy: r1(sy(d.y[i])), r }, pts);
      el('title', {}, c, `point ${i}: x = ${fmt(d.x[i], 4)}, y = ${fmt(d.y[i], 4)}`);
    }
  } else {
    let dots = '';
    const arc = `a${r},${r} 0 1 0 ${2 * r},0a${r},${r} 0 1 0 ${-2 * r},0`;
    for (let i = 0; i < n; ++i) {
      if (isNum(d.x[i]) && isNum(d.y[i])) dots += `M${r1(sx(d.x[i]) - r)},${r1(sy(d.y[i]))}${arc}`;
    }
    el('path', { class: 'point dots', d: dots }, pts);
  }
  const plot = el('g', { 'clip-path': 'url(#main-clip)' }, svg);
  const hasSel = selected !== null && selected < n;
  if (hasSel) el('line', { class: 'guide', x1: sx(d.x[selected]), x2: sx(d.x[selected]), y1: box.t, y2: box.b }, plot);
  el('path', { id: 'truth-curve', class: 'truth', d: pathD(d.grid, d.truth, sx, sy) }, plot);
  const nwD = pathD(d.grid, d.nw, sx, sy), attD = pathD(d.grid, d.attention, sx, sy);
  el('path', { class: 'halo', d: nwD }, plot);
  el('path', { id: 'nw-curve', class: 'curve-nw wide', d: nwD, 'data-values': JSON.stringify(d.nw) }, plot);
  el('path', { class: 'halo', d: attD }, plot);
  el('path', { id: 'attention-curve', class: 'curve-attention', d: attD, 'data-values': JSON.stringify(d.attention) }, plot);
  if (hasSel) {
    const c = el('circle', { class: 'point selected', 'data-index': selected, cx: sx(d.x[selected]), cy: sy(d.y[selected]), r: r + 2 }, svg);
    el('title', {}, c, `point ${selected}: x = ${fmt(d.x[selected], 4)}, y = ${fmt(d.y[selected], 4)}`);
    pts.querySelector(`[data-index="${selected}"]`)?.remove();
    const gx = sx(d.x[selected]);
    const right = gx > (box.l + box.r) / 2;
    el('text', { class: 'guide-label', x: gx + (right ? -6 : 6), y: box.t + 14, 'text-anchor': right ? 'end' : 'start' }, svg,
      `x${sub(selected)} = ${fmt(d.x[selected], 3)}`);
  }
  return { sx, sy, box };
}

// Weights each data point gets when the query is the chosen point, under NW and attention.
export function renderProfile(svg, width, d, p, message) {
  const { w, h } = startSvg(svg, width, 0.55, 200, 260);
  delete svg.dataset.point;
  if (!d || !p) return emptyText(svg, w, h, message), null;
  const legendH = drawLegend(svg, 56, 14, w - 10, [
    { kind: 'line', cls: 'curve-nw', label: 'NW weight' },
    { kind: 'line', cls: 'curve-attention', label: 'attention weight' },
    { kind: 'line', cls: 'guide', label: `query x${sub(p.point)}` },
  ]);
  const box = { l: 58, r: w - 12, t: 14 + legendH + 4, b: h - 42 };
  svg.dataset.point = String(p.point);
  const xs = d.x;
  const sx = linear(d.lo, d.hi, box.l, box.r);
  let ymax = 1e-12;
  for (const v of p.nw) if (isNum(v) && v > ymax) ymax = v;
  for (const v of p.attention) if (isNum(v) && v > ymax) ymax = v;
  ymax *= 1.1;
  const sy = linear(0, ymax, box.b, box.t);
  drawAxes(svg, box, sx, sy, ticks(d.lo, d.hi, Math.max(3, Math.floor((box.r - box.l) / 80))), ticks(0, ymax, 4), 'data point x', 'weight');
  el('line', { class: 'guide', x1: sx(p.x0), x2: sx(p.x0), y1: box.t, y2: box.b }, svg);
  const lineNw = pathD(xs, p.nw, sx, sy), lineAtt = pathD(xs, p.attention, sx, sy);
  const area = (line) => (line ? `${line}L${r1(sx(xs[xs.length - 1]))},${r1(sy(0))}L${r1(sx(xs[0]))},${r1(sy(0))}Z` : '');
  el('path', { class: 'area-attention', d: area(lineAtt) }, svg);
  el('path', { class: 'area-nw', d: area(lineNw) }, svg);
  el('path', { id: 'profile-nw', class: 'curve-nw wide', d: lineNw, 'data-values': JSON.stringify(p.nw) }, svg);
  el('path', { id: 'profile-attention', class: 'curve-attention', d: lineAtt, 'data-values': JSON.stringify(p.attention) }, svg);
  if (xs.length <= 150) {
    const g = el('g', {}, svg);
    for (let i = 0; i < xs.length; ++i) {
      if (isNum(p.nw[i])) el('circle', { class: 'dot-nw', cx: sx(xs[i]), cy: sy(p.nw[i]), r: 2.8 }, g);
      if (isNum(p.attention[i])) el('circle', { class: 'dot-attention', cx: sx(xs[i]), cy: sy(p.attention[i]), r: 2 }, g);
    }
  }
  return { sx, sy, box };
}

// A training-loss curve (log scale), `every` steps between samples.
export function renderLoss(svg, width, loss, every, label) {
  const { w, h } = startSvg(svg, width, 0.3, 110, 150);
  svg.dataset.values = JSON.stringify(loss || []);
  if (!loss || loss.length < 2) return emptyText(svg, w, h, 'No training in this mode');
  const box = { l: 58, r: w - 12, t: 10, b: h - 38 };
  const ls = loss.map((v) => Math.log10(Math.max(v, 1e-12)));
  const [lo, hi] = extent([ls]);
  const steps = (loss.length - 1) * every;
  const sx = linear(0, steps, box.l, box.r), sy = linear(lo, hi, box.b, box.t);
  const yt = ticks(lo, hi, 3);
  const g = drawAxes(svg, box, sx, sy, ticks(0, steps, 4), yt, 'Adam step', '');
  for (const t of g.querySelectorAll('text[text-anchor="end"]')) t.textContent = fmt(10 ** Number(t.textContent.replace('−', '-')), 2);
  el('path', { id: 'loss-curve', class: 'loss', d: pathD(ls.map((_, i) => i * every), ls, sx, sy) }, svg);
  el('text', { x: box.r, y: box.t + 10, 'text-anchor': 'end' }, svg, label);
  return { sx, sy, box };
}
