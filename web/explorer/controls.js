// The sidebar's controls: presets, data, the NW kernel and its parameters, the attention head.
// They edit `state.params` and call app.onParam(key, value, delay); syncControls() writes the
// parameters back into the controls.

import { clamp, fmt } from './plot.js';

const $ = (id) => document.getElementById(id);
export const DEBOUNCE_SLIDER_MS = 70;
export const DEBOUNCE_TYPING_MS = 300;
const LOG_RANGES = { bandwidth: [-3, 2], temperature: [-3, 2] };

// The seeds' data exactly (the report's figures use the same): seed 001's 40 points (numpy seed
// 42) with its Gaussian kernel (rbf γ = 5, h = 1/√10); seed 002's 50 evenly spaced noise-free
// points, its kernel smoother (h = 0.05, as in the report) and its random W_q, W_k.
export const PRESETS = {
  seed001: { label: 'Seed 001: its 40 points (numpy seed 42)',
    params: { function: 'seed001_numpy', seed: 0, kernel: 'gaussian', bandwidth: 0.3162, attention: 'identity', attention_kernel: 'exp_dot', temperature: 0.1 } },
  seed002: { label: 'Seed 002: 50 evenly spaced points, no noise',
    params: { function: 'sinusoids', n: 50, noise: 0, seed: 0, kernel: 'gaussian', bandwidth: 0.05, attention: 'random', attention_kernel: 'exp_dot', temperature: 0.1 } },
};

// 'periodic:period=1.5' ⇄ {name: 'periodic', values: {period: 1.5}}
export function splitSpec(text) {
  const [name, rest] = String(text).split(':', 2);
  const values = {};
  for (const kv of (rest ?? '').split(',')) {
    const [k, v] = kv.split('=');
    if (k && v !== undefined && Number.isFinite(Number(v))) values[k] = Number(v);
  }
  return { name, values };
}
export function joinSpec(name, values, info) {
  const kv = (info?.params ?? []).map((p) => `${p.key}=${values[p.key] ?? p.value}`);
  return kv.length ? `${name}:${kv.join(',')}` : name;
}

export function matchingPreset(p) {
  for (const [key, pre] of Object.entries(PRESETS)) {
    if (Object.entries(pre.params).every(([k, v]) => p[k] === v)) return key;
  }
  return 'custom';
}

export function fillSelect(sel, items, current, label = (it) => it.name) {
  sel.replaceChildren();
  for (const it of items) {
    const o = document.createElement('option');
    o.value = it.name;
    o.textContent = label(it);
    if (it.description) o.title = it.description;
    sel.appendChild(o);
  }
  if (items.some((it) => it.name === current)) return current;
  return items.length ? items[0].name : current;
}

// One row of controls per extra kernel parameter (slider + number), into `box`.
function paramControls(box, prefix, info, values, onChange) {
  box.replaceChildren();
  for (const p of info?.params ?? []) {
    const v = values[p.key] ?? p.value;
    const wrap = document.createElement('div');
    wrap.className = 'field';
    const id = `${prefix}-${p.key}`;
    wrap.innerHTML = `<label for="${id}">${p.label}</label><div class="pair"><input id="${id}" type="range"><input id="${id}-number" type="number" aria-label="${p.label} value"></div>`;
    box.appendChild(wrap);
    const range = wrap.querySelector('input[type=range]'), num = wrap.querySelector('input[type=number]');
    const toSlider = (x) => (p.log ? Math.log10(x) : x);
    const fromSlider = (s) => (p.integer ? Math.round(s) : p.log ? Number((10 ** s).toPrecision(3)) : Number(s.toPrecision(3)));
    range.min = String(toSlider(p.lo));
    range.max = String(toSlider(p.hi));
    range.step = p.integer ? '1' : String((toSlider(p.hi) - toSlider(p.lo)) / 200);
    range.value = String(toSlider(v));
    num.min = String(p.lo);
    num.max = String(p.hi);
    num.step = p.integer ? '1' : 'any';
    num.value = String(v);
    range.addEventListener('input', () => {
      const x = fromSlider(Number(range.value));
      num.value = String(x);
      onChange(p.key, x, DEBOUNCE_SLIDER_MS);
    });
    num.addEventListener('input', () => {
      if (!Number.isFinite(num.valueAsNumber)) return;
      range.value = String(toSlider(clamp(num.valueAsNumber, p.lo, p.hi)));
      onChange(p.key, num.valueAsNumber, DEBOUNCE_TYPING_MS);
    });
  }
}

export function syncControls(state) {
  const p = state.params;
  const fn = state.functions.find((f) => f.name === p.function);
  const fixed = fn && fn.fixed_n > 0;
  $('preset').value = matchingPreset(p);
  $('function').value = p.function;
  $('noise').value = String(p.noise);
  $('noise-number').value = String(p.noise);
  const n = fixed ? fn.fixed_n : p.n;
  $('n').value = String(n);
  $('n-range').value = String(Math.log10(Math.max(n, 2)));
  for (const id of ['n', 'n-range', 'noise', 'noise-number']) $(id).disabled = fixed;
  $('seed').value = String(p.seed);
  for (const k of ['bandwidth', 'temperature']) {
    $(k).value = String(clamp(Math.log10(p[k] > 0 ? p[k] : 1), ...LOG_RANGES[k]));
    $(`${k}-number`).value = String(p[k]);
  }
  const nk = splitSpec(p.kernel), ak = splitSpec(p.attention_kernel);
  $('kernel').value = nk.name;
  $('attention').value = p.attention;
  $('attention-kernel').value = ak.name;
  const identity = p.attention === 'identity';
  for (const id of ['attention-kernel', 'temperature', 'temperature-number']) $(id).disabled = !identity;
  $('attention-fieldset').dataset.mode = p.attention;
  describe(state);
}

export function describe(state) {
  const p = state.params;
  const f = state.functions.find((x) => x.name === p.function);
  $('function-desc').textContent = f ? f.description ?? '' : '';
  const k = state.kernels.find((x) => x.name === splitSpec(p.kernel).name);
  $('kernel-desc').textContent = k ? k.description ?? '' : '';
  $('temperature-note').textContent = p.attention === 'identity' ? '' : 'This head uses softmax(q·k/√8): its scale is in W_q, W_k.';
  $('bandwidth').setAttribute('aria-valuetext', `h = ${p.bandwidth}`);
  $('temperature').setAttribute('aria-valuetext', `T = ${p.temperature}`);
  $('n-range').setAttribute('aria-valuetext', `n = ${p.n}`);
}

// Rebuilds the parameter controls of both kernels (after a kernel change or a preset).
export function rebuildParamControls(state, app) {
  const nk = splitSpec(state.params.kernel), ak = splitSpec(state.params.attention_kernel);
  const nInfo = state.kernels.find((k) => k.name === nk.name);
  const aInfo = state.attentionKernels.find((k) => k.name === ak.name);
  paramControls($('kernel-params'), 'kp', nInfo, nk.values, (key, v, delay) => {
    const cur = splitSpec(state.params.kernel);
    app.onParam('kernel', joinSpec(cur.name, { ...cur.values, [key]: v }, nInfo), delay);
  });
  paramControls($('attention-kernel-params'), 'akp', aInfo, ak.values, (key, v, delay) => {
    const cur = splitSpec(state.params.attention_kernel);
    app.onParam('attention_kernel', joinSpec(cur.name, { ...cur.values, [key]: v }, aInfo), delay);
  });
  for (const input of $('attention-kernel-params').querySelectorAll('input')) input.disabled = state.params.attention !== 'identity';
}

function wireNumberPair(rangeId, numId, key, app, toValue, fromValue) {
  $(rangeId).addEventListener('input', (e) => {
    const v = toValue(Number(e.target.value));
    $(numId).value = String(v);
    app.onParam(key, v, DEBOUNCE_SLIDER_MS);
  });
  $(numId).addEventListener('input', (e) => {
    const v = e.target.valueAsNumber;
    if (!Number.isFinite(v)) return app.setInputError(key, 'enter a number');
    if (fromValue(v) !== null) $(rangeId).value = String(fromValue(v));
    app.onParam(key, v, DEBOUNCE_TYPING_MS); // the server reports out-of-range values
  });
}

export function wireControls(state, app) {
  $('preset').addEventListener('change', (e) => {
    const pre = PRESETS[e.target.value];
    if (pre) app.applyParams(pre.params);
  });
  $('function').addEventListener('change', (e) => app.changeFunction(e.target.value));
  $('kernel').addEventListener('change', (e) => {
    const info = state.kernels.find((k) => k.name === e.target.value);
    app.onParam('kernel', joinSpec(e.target.value, {}, info), 0);
    rebuildParamControls(state, app);
  });
  $('attention').addEventListener('change', (e) => {
    app.onParam('attention', e.target.value, 0);
    syncControls(state);
    rebuildParamControls(state, app);
  });
  $('attention-kernel').addEventListener('change', (e) => {
    const info = state.attentionKernels.find((k) => k.name === e.target.value);
    app.onParam('attention_kernel', joinSpec(e.target.value, {}, info), 0);
    rebuildParamControls(state, app);
  });
  wireNumberPair('noise', 'noise-number', 'noise', app, (v) => v, (v) => v);
  wireNumberPair('n-range', 'n', 'n', app, (s) => Math.round(10 ** s), (v) => Math.log10(Math.max(v, 2)));
  for (const key of ['bandwidth', 'temperature']) {
    wireNumberPair(key, `${key}-number`, key, app, (s) => Number((10 ** s).toPrecision(3)),
      (v) => (v > 0 ? clamp(Math.log10(v), ...LOG_RANGES[key]) : null));
  }
  $('seed').addEventListener('input', (e) => {
    const v = e.target.valueAsNumber;
    if (!Number.isFinite(v)) return app.setInputError('seed', 'enter a whole number');
    app.onParam('seed', v, DEBOUNCE_TYPING_MS);
  });
  $('reseed').addEventListener('click', () => {
    const v = (Number.isFinite(state.params.seed) ? state.params.seed : 0) + 1;
    $('seed').value = String(v);
    app.onParam('seed', v, 0);
  });
  $('use-loo').addEventListener('click', () => {
    const h = Number($('use-loo').dataset.bandwidthLoo);
    if (!(h > 0)) return;
    const v = Number(h.toPrecision(4));
    $('bandwidth').value = String(clamp(Math.log10(v), ...LOG_RANGES.bandwidth));
    $('bandwidth-number').value = String(v);
    app.onParam('bandwidth', v, 0);
  });
  $('controls').addEventListener('submit', (e) => e.preventDefault());
}

export function updateLooButton(fit) {
  const b = $('use-loo');
  const h = fit && fit.bandwidth_loo;
  b.disabled = !(Number.isFinite(h) && h > 0);
  b.textContent = Number.isFinite(h) ? `Use LOO-CV bandwidth (h = ${fmt(h, 3)})` : 'Use LOO-CV bandwidth';
  if (Number.isFinite(h)) b.dataset.bandwidthLoo = String(h);
  else delete b.dataset.bandwidthLoo;
}
