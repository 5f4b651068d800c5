// The weight matrix on a <canvas>: rows are query x on the grid, columns runs of consecutive data
// points (one point each up to 120 points). The server sends each matrix as 8-bit levels of
// w / max(w) in base64 (the 256 steps of the colour map) with its scale.

import { COLORS, clamp, fmt, isNum, linear, tickLabel, ticks } from './plot.js';

const VIRIDIS = [
  [68, 1, 84], [71, 44, 122], [59, 81, 139], [44, 113, 142], [33, 144, 141],
  [39, 173, 129], [92, 200, 99], [170, 220, 50], [253, 231, 37],
];
function viridis(t) {
  const u = clamp(t, 0, 1) * (VIRIDIS.length - 1);
  const i = Math.min(Math.floor(u), VIRIDIS.length - 2);
  const f = u - i;
  const a = VIRIDIS[i], b = VIRIDIS[i + 1];
  return `rgb(${Math.round(a[0] + f * (b[0] - a[0]))},${Math.round(a[1] + f * (b[1] - a[1]))},${Math.round(a[2] + f * (b[2] - a[2]))})`;
}
const LUT = Array.from({ length: 256 }, (_, i) => viridis(i / 255));
const LUT_RGB = LUT.map((c) => c.match(/\d+/g).map(Number));

// base64 → Uint8Array (the matrix's levels, row-major).
export function decodeLevels(b64) {
  const s = atob(b64);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; ++i) out[i] = s.charCodeAt(i);
  return out;
}

// Column edges in x: each run spans from halfway to the previous point to halfway to the next.
function columnEdges(xs, first) {
  const n = xs.length, cols = first.length - 1;
  const mid = (j) => (j <= 0 ? xs[0] - (n > 1 ? (xs[1] - xs[0]) / 2 : 0.5)
    : j >= n ? xs[n - 1] + (n > 1 ? (xs[n - 1] - xs[n - 2]) / 2 : 0.5) : (xs[j - 1] + xs[j]) / 2);
  const e = new Array(cols + 1);
  for (let c = 0; c <= cols; ++c) e[c] = mid(first[c]);
  return e;
}

function geometry(width) {
  const W = width || 460;
  const H = Math.round(clamp(W * 0.55, 200, 260));
  return { W, H, box: { l: 54, r: W - 70, t: 10, b: H - 42 } };
}

const FONT = '12px system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial, sans-serif';

// The cells as one image: a pixel column per device pixel of the plot, a pixel row per matrix row,
// stretched to the box (no smoothing), so the cost does not grow with the columns.
function drawCells(ctx, hm, M, edgesPx, box, dpr) {
  const rows = hm.rows, cols = hm.cols;
  const wPx = Math.max(1, Math.round((box.r - box.l) * dpr));
  const img = new ImageData(wPx, rows);
  const colOf = new Int32Array(wPx).fill(-1);
  for (let c = 0, px = 0; px < wPx; ++px) {
    const x = box.l + (px + 0.5) / dpr;
    while (c + 1 < cols && edgesPx[c + 1] <= x) ++c;
    if (x >= edgesPx[c] && x < edgesPx[c + 1] + 0.5) colOf[px] = c;
  }
  for (let r = 0; r < rows; ++r) {
    for (let px = 0; px < wPx; ++px) {
      const rgb = LUT_RGB[colOf[px] < 0 ? 0 : M[r * cols + colOf[px]]];
      const o = 4 * (r * wPx + px);
      img.data[o] = rgb[0], img.data[o + 1] = rgb[1], img.data[o + 2] = rgb[2], img.data[o + 3] = 255;
    }
  }
  const off = new OffscreenCanvas(wPx, rows);
  off.getContext('2d').putImageData(img, 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(off, box.l, box.t, box.r - box.l, box.b - box.t);
  ctx.imageSmoothingEnabled = true;
  return (box.b - box.t) / rows;
}

function drawFrame(ctx, box, W, H, xd, rx, rowY, scale, label) {
  ctx.strokeStyle = '#9ca3af';
  ctx.lineWidth = 1;
  ctx.strokeRect(box.l - 0.5, box.t - 0.5, box.r - box.l + 1, box.b - box.t + 1);
  ctx.fillStyle = '#4b5563';
  ctx.font = FONT;
  ctx.textAlign = 'center';
  ctx.textBaseline = 'top';
  const sx = linear(xd[0], xd[1], box.l, box.r);
  const xt = ticks(xd[0], xd[1], Math.max(3, Math.floor((box.r - box.l) / 70)));
  for (const v of xt.values) ctx.fillText(tickLabel(v, xt.step), sx(v), box.b + 6);
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  const yt = ticks(Math.min(rx[0], rx[rx.length - 1]), Math.max(rx[0], rx[rx.length - 1]), 5);
  for (const v of yt.values) ctx.fillText(tickLabel(v, yt.step), box.l - 6, rowY(v));
  ctx.fillStyle = '#111827';
  ctx.font = `600 13px ${FONT.slice(5)}`;
  ctx.textAlign = 'center';
  ctx.textBaseline = 'alphabetic';
  ctx.fillText('data point x (key)', (box.l + box.r) / 2, H - 6);
  ctx.save();
  ctx.translate(14, (box.t + box.b) / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.fillText('query x (row)', 0, 0);
  ctx.restore();
  const cbx = box.r + 12, cbw = 11;  // colour bar
  for (let k = 0; k < 64; ++k) {
    ctx.fillStyle = LUT[Math.round(((k + 0.5) / 64) * 255)];
    ctx.fillRect(cbx, box.b - ((k + 1) / 64) * (box.b - box.t), cbw, (box.b - box.t) / 64 + 0.6);
  }
  ctx.strokeStyle = '#9ca3af';
  ctx.strokeRect(cbx - 0.5, box.t - 0.5, cbw + 1, box.b - box.t + 1);
  ctx.font = FONT;
  ctx.fillStyle = '#4b5563';
  ctx.textAlign = 'left';
  ctx.textBaseline = 'middle';
  ctx.fillText(fmt(scale, 2), cbx + cbw + 3, box.t + 6);
  ctx.fillText('0', cbx + cbw + 3, box.b - 6);
  ctx.save();
  ctx.translate(cbx + cbw + 12, (box.t + box.b) / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.textAlign = 'center';
  ctx.fillText(label, 0, 0);
  ctx.restore();
}

// Draws data d's matrix for `mode` ('nw' | 'attention'); `selected`: the chosen point or null.
export function renderHeatmap(canvas, width, d, mode, selected, emptyMessage) {
  const dpr = window.devicePixelRatio || 1;
  const { W, H, box } = geometry(width);
  canvas.style.height = `${H}px`;
  if (canvas.width !== Math.round(W * dpr) || canvas.height !== Math.round(H * dpr)) {
    canvas.width = Math.round(W * dpr);
    canvas.height = Math.round(H * dpr);
  }
  canvas.dataset.mode = mode;
  canvas._geom = null;
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.fillStyle = '#ffffff';
  ctx.fillRect(0, 0, W, H);
  const hm = d && d.heatmap;
  if (!hm || !hm[mode]) {
    ctx.fillStyle = '#6b7280';
    ctx.font = FONT;
    ctx.textAlign = 'center';
    ctx.fillText(d ? 'no weight matrix in the answer' : emptyMessage, W / 2, H / 2);
    return;
  }
  hm[`${mode}_levels`] ??= decodeLevels(hm[mode].levels);
  const M = hm[`${mode}_levels`];
  const xd = [d.lo, d.hi];
  const sx = linear(xd[0], xd[1], box.l, box.r);
  const edges = columnEdges(d.x, hm.col_first).map((e) => clamp(sx(e), box.l, box.r));
  const rowH = drawCells(ctx, hm, M, edges, box, dpr);
  const rx = hm.row_x;
  const rowY = (x) => box.t + ((rx[rx.length - 1] > rx[0] ? (x - rx[0]) / (rx[rx.length - 1] - rx[0]) : 0) * (hm.rows - 1) + 0.5) * rowH;
  if (selected !== null && selected < d.x.length) {
    let c = 0;
    while (c + 1 < hm.cols && hm.col_first[c + 1] <= selected) ++c;
    ctx.strokeStyle = '#ffffff';
    ctx.lineWidth = 1.5;
    ctx.strokeRect(edges[c], box.t, Math.max(edges[c + 1] - edges[c], 1.5), box.b - box.t);
    ctx.setLineDash([4, 3]);
    ctx.beginPath();
    ctx.moveTo(box.l, rowY(d.x[selected]));
    ctx.lineTo(box.r, rowY(d.x[selected]));
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.fillStyle = COLORS.selected;
    const cx = (edges[c] + edges[c + 1]) / 2;
    ctx.beginPath();
    ctx.moveTo(cx, box.b + 1);
    ctx.lineTo(cx - 5, box.b + 7);
    ctx.lineTo(cx + 5, box.b + 7);
    ctx.closePath();
    ctx.fill();
  }
  drawFrame(ctx, box, W, H, xd, rx, rowY, hm[mode].scale, mode === 'nw' ? 'NW weight' : 'attention weight');
  canvas._geom = { box, edges, rowH };
}

// The cell under a mouse event: {r, c, point (the run's middle point), weight (from the level)}.
export function heatmapCell(canvas, ev, d, mode) {
  const g = canvas._geom;
  if (!g || !d || !d.heatmap) return null;
  const rect = canvas.getBoundingClientRect();
  const x = ev.clientX - rect.left, y = ev.clientY - rect.top;
  const { box, edges, rowH } = g;
  if (x < box.l || x > box.r || y < box.t || y > box.b) return null;
  const hm = d.heatmap;
  const r = clamp(Math.floor((y - box.t) / rowH), 0, hm.rows - 1);
  let c = 0;
  while (c + 1 < hm.cols && edges[c + 1] <= x) ++c;
  const a = hm.col_first[c], b = hm.col_first[c + 1];
  const M = hm[`${mode}_levels`];
  const level = M ? M[r * hm.cols + c] : 0;
  return { r, c, first: a, last: b - 1, point: Math.floor((a + b - 1) / 2), weight: isNum(hm[mode]?.scale) ? (level / 255) * hm[mode].scale : null };
}
