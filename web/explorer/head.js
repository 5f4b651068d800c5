// The attention head panel: what the head is, its training (loss curve) and how it reads as a
// kernel smoother (head_kernel_fit: best shape, effective bandwidth, offset, R², asymmetry).

import { fmt, renderLoss } from './plot.js';

const $ = (id) => document.getElementById(id);

export const MODE_TEXT = {
  identity: 'q = φ(x), k = φ(xᵢ): a plain kernel of the encodings — symmetric, a function of x − xᵢ only.',
  random: 'q = φ(x)W_q, k = φ(xᵢ)W_k with random 4×8 matrices, softmax(q·k/√8): seed 002\'s tool. Not symmetric, not a function of distance.',
  mimic: 'W_q, W_k trained (Adam, 300 steps, live) so that the weights reproduce the NW smoother\'s among 50 evenly spaced positions: attention can become the smoother.',
  data: 'W_q, W_k, W_v trained on the points (Adam, 300 steps, live) to predict each yᵢ from the others: the head learns its own kernel.',
};

let shown = null;  // what the panel shows: redrawn only when the head or the width changes

export function renderHeadSummary(d, lossWidth) {
  const h = d && d.head;
  const key = h ? JSON.stringify([h.mode, h.loss, h.train_ms, h.cached, lossWidth]) : null;
  if (key !== null && key === shown) return;
  shown = key;
  const box = $('head-summary');
  const panel = $('head-panel');
  if (!h) {
    box.textContent = '';
    renderLoss($('loss-plot'), lossWidth, null, 1, '');
    return;
  }
  panel.dataset.mode = h.mode;
  const parts = [MODE_TEXT[h.mode] ?? ''];
  if (h.trained) {
    parts.push(`Trained on ${h.points} ${h.mode === 'data' ? 'points' : 'positions'} for ${h.steps} steps in ${fmt(h.train_ms, 3)} ms${h.cached ? ' (kept from an earlier request)' : ''}: ` +
      `${h.loss_name} ${fmt(h.loss_before, 3)} → ${fmt(h.loss_after, 3)}.`);
  } else if (h.mode === 'random') {
    parts.push(`Weight RMSE vs the smoother: ${fmt(h.loss_before, 3)} (the mimic training starts here).`);
  }
  box.textContent = parts.join(' ');
  renderLoss($('loss-plot'), lossWidth, h.trained ? h.loss : null, h.loss_every || 1, h.trained ? h.loss_name : '');
}

// fit: the /api/fit answer, or null while it is on its way.
export function renderHeadFit(fit, d, nwLabel) {
  const panel = $('head-panel');
  const table = $('head-fit');
  const note = $('head-fit-note');
  table.replaceChildren();
  if (!fit || !fit.head) {
    panel.dataset.fitState = fit === null ? 'loading' : 'none';
    note.textContent = fit === null ? 'Fitting kernel shapes to the head…' : '';
    return;
  }
  const h = fit.head;
  const best = h.shapes[h.best];
  panel.dataset.fitState = 'ok';
  panel.dataset.best = best.kernel;
  panel.dataset.bestR2 = String(best.r2);
  panel.dataset.bestBandwidth = String(best.bandwidth);
  panel.dataset.asymmetry = String(h.asymmetry);
  const head = table.createTHead().insertRow();
  for (const t of ['shape', 'h', 'offset', 'R²']) {
    const th = document.createElement('th');
    th.textContent = t;
    head.appendChild(th);
  }
  const body = table.createTBody();
  h.shapes.forEach((s, i) => {
    const row = body.insertRow();
    if (i === h.best) row.className = 'best';
    for (const v of [s.kernel, fmt(s.bandwidth, 3), fmt(s.offset, 2), fmt(s.r2, 4)]) row.insertCell().textContent = v;
  });
  const eq = d && Number.isFinite(d.attention_bandwidth) ? `; the formula's equivalent Gaussian h is ${fmt(d.attention_bandwidth, 3)}` : '';
  note.textContent = `Each of ${h.rows} query rows of the head's weights over ${h.positions} evenly spaced positions, fitted by ` +
    `K((x − c)/h) normalized. Best: ${best.kernel}, effective bandwidth ${fmt(best.bandwidth, 3)}${eq}, R² ${fmt(best.r2, 4)}. ` +
    `Asymmetry ‖K − Kᵀ‖/‖K‖ = ${fmt(h.asymmetry, 2)}. For comparison, the smoother: ${nwLabel}.`;
}
