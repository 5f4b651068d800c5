// kernelformer explorer: asks `kf serve`'s JSON API (same origin) for a Nadaraya–Watson fit and an
// attention fit of the same data and draws both: SVG for the plots (plot.js), a <canvas> for the
// weight matrix (heatmap.js), the attention head's training and kernel fit (head.js). No
// framework, no build step, nothing loaded from elsewhere.
//
// One update is one request: /api/smooth answers with the data, both curves, both weight matrices
// and the chosen point's profile; the slow diagnostics (LOO-CV bandwidth, the head read as a
// kernel) come after, from /api/fit. The status pill shows the update's round trip: request sent
// → plot redrawn and painted.
//
// What a test (tests/web/explorer.test.mjs) can read:
//   #main-plot[data-query]          the query string of the /api/smooth answer on screen
//   #nw-curve, #attention-curve     data-values = JSON array (grid order; null where undefined)
//   .point[data-index=i]            data point i (sorted by x); .selected when chosen
//   #profile-plot[data-point]       index of the point whose weights are drawn
//   #profile-nw, #profile-attention data-values = JSON array of n weights for the chosen point
//   #heatmap[data-mode]             'nw' or 'attention'
//   #status[data-state]             'loading', 'ok' or 'error'; data-roundtrip-ms, data-server-ms
//   #head-panel[data-fit-state]     'loading' or 'ok'; data-best, data-best-r2, data-asymmetry …
//   window.kfTimings                every update: {n, sentAt, domMs, roundTripMs, inputToPaintMs, serverMs}

import { fmt, isNum, renderMain, renderProfile, sub } from './plot.js';
import { heatmapCell, renderHeatmap } from './heatmap.js';
import { renderHeadFit, renderHeadSummary } from './head.js';
import {
  DEBOUNCE_SLIDER_MS, describe, fillSelect, matchingPreset, rebuildParamControls, splitSpec, syncControls,
  updateLooButton, wireControls,
} from './controls.js';
import { savePng, svgText, download } from './export.js';

const $ = (id) => document.getElementById(id);

const DEFAULTS = Object.freeze({
  function: 'seed001_numpy', n: 40, noise: 1, seed: 0, kernel: 'gaussian', bandwidth: 0.3162,
  attention: 'identity', attention_kernel: 'exp_dot', temperature: 0.1, grid: 200,
});
const PARAM_KEYS = Object.keys(DEFAULTS);
const FIT_DELAY_MS = 150;

const state = {
  params: { ...DEFAULTS },
  data: null,         // last /api/smooth answer on screen
  query: null,        // the parameters that answer was asked with
  selectedX: null,    // x of the chosen point: it follows x, not its index, when the data change
  selected: null,     // its index in the answer on screen
  profile: null,      // the profile on screen
  fit: undefined,     // last /api/fit answer (null: on its way)
  heatmapMode: 'nw',
  kernels: [], attentionKernels: [], functions: [],
  seq: { smooth: 0, profile: 0, fit: 0 },
  abort: { smooth: null, profile: null, fit: null },
  loading: false,
  error: null,        // the latest error {source, message}: a newer one replaces it
  lastTiming: null,
};
window.kfTimings = [];

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
  for (const k of keys) if (!Array.isArray(obj[k])) throw new ApiError(`${what}: malformed answer, '${k}' is not an array`);
}

// Starts a request of `kind`, aborting the previous one of that kind; returns [seq, signal].
function begin(kind) {
  const seq = ++state.seq[kind];
  state.abort[kind]?.abort();
  state.abort[kind] = new AbortController();
  return [seq, state.abort[kind].signal];
}

// ---------------------------------------------------------------- errors and status

function setError(source, message) {
  state.error = { source, message };
  renderStatus();
}
function clearError(...sources) {
  if (state.error && sources.includes(state.error.source)) state.error = null;
  renderStatus();
}

function renderStatus() {
  const s = $('status');
  if (state.error) {
    s.dataset.state = 'error';
    s.textContent = `Error: ${state.error.message}`;
    s.setAttribute('role', 'alert');
  } else if (state.loading || !state.data) {
    s.dataset.state = 'loading';
    s.textContent = state.lastTiming ? `Computing… (last round trip ${fmt(state.lastTiming.roundTripMs, 2)} ms)` : 'Computing…';
    s.setAttribute('role', 'status');
  } else {
    const d = state.data, t = state.lastTiming;
    s.dataset.state = 'ok';
    s.setAttribute('role', 'status');
    const rt = t ? `round trip ${fmt(t.roundTripMs, 2)} ms (server ${fmt(t.serverMs, 2)} ms)` : '';
    s.textContent = `${rt} · n = ${d.n} · ${splitSpec(d.kernel).name} h = ${fmt(d.bandwidth)} · ${d.attention_mode} head`;
    s.title = 'Round trip: request sent → plots redrawn and painted; server: its compute and encoding time';
  }
  const stale = Boolean(state.error && ['smooth', 'input'].includes(state.error.source));
  for (const id of ['main-plot', 'profile-plot', 'heatmap']) $(id).classList.toggle('stale', stale);
}

// ---------------------------------------------------------------- drawing

const emptyMessage = () => (state.error ? 'Nothing to show: see the error above' : 'Loading…');

function labels(d) {
  const k = splitSpec(d.kernel);
  const extra = Object.entries(k.values).map(([a, b]) => `, ${a} = ${fmt(b)}`).join('');
  const att = d.attention_mode === 'identity'
    ? `attention (${splitSpec(d.attention_kernel).name}, T = ${fmt(d.temperature)}${isNum(d.attention_bandwidth) ? `, ≈ h ${fmt(d.attention_bandwidth)}` : ''})`
    : `attention (${d.attention_mode} head)`;
  return { nw: `Nadaraya–Watson (${k.name}, h = ${fmt(d.bandwidth)}${extra})`, attention: att };
}

// The plots' widths, read once before anything is redrawn (a read after a write forces layout).
let widths = null;
function readWidths() {
  widths = {};
  for (const id of ['main-plot', 'profile-plot', 'heatmap', 'loss-plot']) widths[id] = $(id).clientWidth;
  return widths;
}
const width = (id) => (widths ?? readWidths())[id];

function drawMain() {
  const svg = $('main-plot');
  svg._scales = renderMain(svg, width('main-plot'), state.data, state.selected, state.data ? labels(state.data) : null, emptyMessage());
  if (state.data) {
    svg.dataset.query = new URLSearchParams(state.query).toString();
    svg.dataset.n = String(state.data.n);
  }
}

function drawProfile() {
  const p = state.profile && state.profile.point === state.selected ? state.profile : null;
  renderProfile($('profile-plot'), width('profile-plot'), state.data, p, state.selected === null ? 'Click a data point to see its weights' : 'Loading weights…');
  const caption = $('profile-caption');
  if (!p) return void (caption.textContent = 'Click a data point above (or use the point slider) to see its weights.');
  const effN = (w) => {
    let s = 0, s2 = 0;
    for (const v of w) if (isNum(v)) (s += v), (s2 += v * v);
    return s2 > 0 ? (s * s) / s2 : NaN;
  };
  caption.textContent = `Query x${sub(p.point)} = ${fmt(p.x0, 4)} (point ${p.point}). Effective number of points 1/Σw²: ` +
    `NW ${fmt(effN(p.nw), 3)}, attention ${fmt(effN(p.attention), 3)}. Weight on itself: NW ${fmt(p.nw[p.point], 3)}, attention ${fmt(p.attention[p.point], 3)}.`;
}

const drawHeatmap = () => renderHeatmap($('heatmap'), width('heatmap'), state.data, state.heatmapMode, state.selected, emptyMessage());

function drawAll() {
  drawMain();
  drawHeatmap();
  drawProfile();
  renderHeadSummary(state.data, width('loss-plot'));
  const pi = $('point-index');
  pi.max = String(Math.max((state.data?.n ?? 1) - 1, 0));
  pi.disabled = !state.data;
  pi.value = String(state.selected ?? 0);
  pi.setAttribute('aria-valuetext', state.data && state.selected !== null
    ? `point ${state.selected}, x = ${fmt(state.data.x[state.selected], 4)}` : 'no point selected');
}

// ---------------------------------------------------------------- fetching

function apiParams() {
  const p = {};
  for (const k of PARAM_KEYS) p[k] = String(state.params[k]);
  return p;
}

function middleX() {
  const f = state.functions.find((x) => x.name === state.params.function);
  return f ? (f.lo + f.hi) / 2 : null;
}

// An answer is due: the status says so once it has been waited for 150 ms (saying it at once would
// cost every quick update an extra frame).
let debounceTimer = 0, loadingTimer = 0;
function markLoading() {
  state.loading = true;
  clearTimeout(loadingTimer);
  loadingTimer = setTimeout(() => state.loading && renderStatus(), 150);
}
// A slider's first move goes out at once; moves while its answer is due wait for it, and then
// the newest goes (one request in flight, none wasted on positions already passed). Typed
// numbers keep their wait (a number half typed is not the one meant).
let inFlight = false, pending = false;
function schedule(delay) {
  clearTimeout(debounceTimer);
  markLoading();
  if (delay === DEBOUNCE_SLIDER_MS) {
    if (inFlight) pending = true;
    else void refresh();
    return;
  }
  debounceTimer = setTimeout(refresh, delay);
}

// Records the round trip once the redrawn plots have been painted (the frame after the update):
// request sent → answer parsed (fetchMs) → plots rewritten (domMs) → painted (roundTripMs).
function recordTiming(t0, tFetched, tDom, data, inputAt) {
  requestAnimationFrame(() => setTimeout(() => {
    const now = performance.now();
    const t = { n: data.n, sentAt: t0, fetchMs: tFetched - t0, domMs: tDom - t0, roundTripMs: now - t0,
                inputToPaintMs: now - inputAt, serverMs: data.elapsed_ms };
    window.kfTimings.push(t);
    state.lastTiming = t;
    $('status').dataset.roundtripMs = String(t.roundTripMs);
    $('status').dataset.serverMs = String(t.serverMs);
    renderStatus();
  }, 0));
}

async function refresh() {
  clearTimeout(debounceTimer);
  pending = false;
  if (state.error?.source === 'input') return void ((state.loading = false), renderStatus());
  const [seq, signal] = begin('smooth');
  const inputAt = state.inputAt ?? performance.now();
  inFlight = true;
  state.abort.profile?.abort();
  markLoading();
  const params = apiParams();
  const at = state.selectedX ?? middleX();
  writeUrl();
  const t0 = performance.now();
  try {
    const data = await getJson('/api/smooth', at === null ? params : { ...params, at: String(at) }, signal);
    if (seq !== state.seq.smooth) return; // a newer request was sent: this answer is stale
    const tFetched = performance.now();
    requireArrays(data, ['x', 'y', 'grid', 'nw', 'attention'], '/api/smooth');
    state.data = data;
    state.query = params;
    state.profile = data.profile ?? null;
    state.selected = state.profile ? state.profile.point : null;
    if (state.selectedX === null && state.profile) state.selectedX = state.profile.x0;
    state.loading = false;
    clearError('smooth', 'profile', 'fit');
    drawAll();
    recordTiming(t0, tFetched, performance.now(), data, inputAt);
    scheduleFit();
  } catch (e) {
    if (e.name === 'AbortError' || seq !== state.seq.smooth) return;
    state.loading = false;
    setError('smooth', e.message);
    if (!state.data) drawAll();
  } finally {
    if (seq === state.seq.smooth) {  // the newest request: the next waiting move may go
      inFlight = false;
      if (pending) void refresh();
    }
  }
}

async function fetchProfile(point) {
  if (!state.query) return;
  const [seq, signal] = begin('profile');
  drawProfile(); // "Loading weights…"
  try {
    const p = await getJson('/api/profile', { ...state.query, point: String(point) }, signal);
    if (seq !== state.seq.profile) return;
    requireArrays(p, ['nw', 'attention'], '/api/profile');
    state.profile = p;
    clearError('profile');
    drawProfile();
  } catch (e) {
    if (e.name === 'AbortError' || seq !== state.seq.profile) return;
    setError('profile', e.message);
  }
}

let fitTimer = 0;
function scheduleFit() {
  clearTimeout(fitTimer);
  state.abort.fit?.abort();
  state.fit = null;
  renderHeadFit(null);
  fitTimer = setTimeout(fetchFit, FIT_DELAY_MS);
}

async function fetchFit() {
  if (!state.query) return;
  const [seq, signal] = begin('fit');
  const query = state.query;
  try {
    const fit = await getJson('/api/fit', query, signal);
    if (seq !== state.seq.fit || query !== state.query) return;
    state.fit = fit;
    updateLooButton(fit);
    renderHeadFit(fit, state.data, labels(state.data).nw);
    clearError('fit');
  } catch (e) {
    if (e.name === 'AbortError' || seq !== state.seq.fit) return;
    setError('fit', e.message);
  }
}

function select(i) {
  if (!state.data || i === null || !(i >= 0 && i < state.data.n)) return;
  state.selected = i;
  state.selectedX = state.data.x[i];
  writeUrl();
  drawMain();
  drawHeatmap();
  $('point-index').value = String(i);
  fetchProfile(i);
}

// ---------------------------------------------------------------- URL state (shareable views)

function readUrl() {
  const q = new URLSearchParams(location.search);
  for (const k of PARAM_KEYS) {
    if (!q.has(k)) continue;
    const raw = q.get(k);
    if (['function', 'kernel', 'attention', 'attention_kernel'].includes(k)) state.params[k] = raw;
    else if (raw !== '' && Number.isFinite(Number(raw))) state.params[k] = Number(raw);
  }
  if (q.has('at') && Number.isFinite(Number(q.get('at')))) state.selectedX = Number(q.get('at'));
  if (q.get('heatmap') === 'attention') state.heatmapMode = 'attention';
}

// history.replaceState costs milliseconds (and browsers throttle it): the address follows the
// view once it has been still for 400 ms, off the path of an update.
let urlTimer = 0;
function writeUrl() {
  clearTimeout(urlTimer);
  urlTimer = setTimeout(writeUrlNow, 400);
}

function writeUrlNow() {
  const q = new URLSearchParams();
  for (const k of PARAM_KEYS) if (state.params[k] !== DEFAULTS[k]) q.set(k, String(state.params[k]));
  if (state.selectedX !== null) q.set('at', String(state.selectedX));
  if (state.heatmapMode !== 'nw') q.set('heatmap', state.heatmapMode);
  const s = q.toString();
  history.replaceState(null, '', s ? `?${s}` : location.pathname);
}

// ---------------------------------------------------------------- what the controls call

const app = {
  onParam(key, value, delay) {
    state.inputAt = performance.now();  // input → painted is timed from here (kfTimings)
    state.params[key] = value;
    clearError('input');
    describe(state);
    $('preset').value = matchingPreset(state.params);
    schedule(delay);
  },
  setInputError(key, message) {
    setError('input', `${key}: ${message}`);
  },
  applyParams(params) {
    const rangeChanged = params.function && params.function !== state.params.function;
    Object.assign(state.params, params);
    if (rangeChanged) state.selectedX = null;
    clearError('input');
    syncControls(state);
    rebuildParamControls(state, app);
    schedule(0);
  },
  // A new data set: h keeps its fraction of the x range; the selection goes to the middle.
  changeFunction(name) {
    const range = (fname) => {
      const f = state.functions.find((x) => x.name === fname);
      return f ? f.hi - f.lo : null;
    };
    const r0 = range(state.params.function), r1 = range(name);
    const p = { function: name };
    if (r0 && r1 && r0 !== r1) p.bandwidth = Number((state.params.bandwidth * (r1 / r0)).toPrecision(3));
    app.applyParams(p);
  },
};

function wirePlots() {
  const main = $('main-plot');
  main.addEventListener('click', (ev) => {
    const hit = ev.target.closest?.('circle.point[data-index]'); // a circle: that point
    const i = hit ? Number(hit.dataset.index) : nearestPoint(main, ev);
    if (i !== null) select(i);
  });
  $('point-index').addEventListener('input', (e) => select(Number(e.target.value)));
  for (const id of ['heatmap-mode-nw', 'heatmap-mode-attention']) {
    $(id).addEventListener('change', (e) => {
      if (!e.target.checked) return;
      state.heatmapMode = e.target.value;
      writeUrl();
      drawHeatmap();
    });
  }
  const canvas = $('heatmap');
  const hint = 'Rows: query x on the grid; columns: data points by x. Hover for values, click to select a point.';
  canvas.addEventListener('mousemove', (ev) => {
    const c = heatmapCell(canvas, ev, state.data, state.heatmapMode);
    canvas.style.cursor = c ? 'pointer' : '';
    $('heatmap-readout').textContent = !c ? hint : `query x = ${fmt(state.data.heatmap.row_x[c.r], 3)} · ` +
      `${c.first === c.last ? `point ${c.first}` : `points ${c.first}–${c.last}`}: ${state.heatmapMode === 'nw' ? 'NW' : 'attention'} weight ≈ ${fmt(c.weight, 2)}`;
  });
  canvas.addEventListener('mouseleave', () => ($('heatmap-readout').textContent = hint));
  canvas.addEventListener('click', (ev) => {
    const c = heatmapCell(canvas, ev, state.data, state.heatmapMode);
    if (c) select(c.point);
  });
  let frame = 0;
  let lastWidth = 0;
  const redraw = () => {
    cancelAnimationFrame(frame);
    frame = requestAnimationFrame(() => {
      if (readWidths()['main-plot'] === lastWidth) return; // only widths matter: heights follow
      lastWidth = widths['main-plot'];
      if (state.data) drawAll();
    });
  };
  if (typeof ResizeObserver === 'function') new ResizeObserver(redraw).observe(document.body);
  $('save-svg').addEventListener('click', () => download(new Blob([svgText(main)], { type: 'image/svg+xml' }), `${exportName()}.svg`));
  $('save-png').addEventListener('click', () => {
    savePng(main, `${exportName()}.png`).then(() => clearError('export'), (e) => setError('export', `could not make the PNG (${e.message})`));
  });
}

// The data point nearest to a click (within 14 px): of overlapping circles the closest centre wins.
function nearestPoint(svg, ev) {
  const d = state.data;
  if (!d || !svg._scales) return null;
  const ctm = svg.getScreenCTM();
  if (!ctm) return null;
  const p = new DOMPoint(ev.clientX, ev.clientY).matrixTransform(ctm.inverse());
  const { sx, sy } = svg._scales;
  let best = null, bestD = 14 * 14;
  for (let i = 0; i < d.x.length; ++i) {
    const dx = sx(d.x[i]) - p.x, dy = sy(d.y[i]) - p.y;
    if (dx * dx + dy * dy < bestD) (bestD = dx * dx + dy * dy), (best = i);
  }
  return best;
}

function exportName() {
  const p = state.query || apiParams();
  return `kernelformer-${p.function}-${p.kernel}-h${p.bandwidth}-${p.attention}-n${state.data?.n ?? p.n}-seed${p.seed}`.replace(/[^\w.-]+/g, '_');
}

// ---------------------------------------------------------------- start

async function init() {
  readUrl();
  wirePlots();
  drawAll();
  renderStatus();
  try {
    const [k, f] = await Promise.all([getJson('/api/kernels'), getJson('/api/functions')]);
    requireArrays(k, ['kernels', 'attention_kernels', 'attention_modes'], '/api/kernels');
    requireArrays(f, ['functions'], '/api/functions');
    state.kernels = k.kernels;
    state.attentionKernels = k.attention_kernels;
    state.functions = f.functions;
  } catch (e) {
    setError('init', `could not load the kernel and function lists (${e.message})`);
  }
  const name = (s) => splitSpec(s).name;
  const kn = fillSelect($('kernel'), state.kernels.length ? state.kernels : [{ name: name(state.params.kernel) }], name(state.params.kernel));
  if (kn !== name(state.params.kernel)) state.params.kernel = kn;
  const an = fillSelect($('attention-kernel'), state.attentionKernels.length ? state.attentionKernels : [{ name: name(state.params.attention_kernel) }], name(state.params.attention_kernel));
  if (an !== name(state.params.attention_kernel)) state.params.attention_kernel = an;
  state.params.function = fillSelect($('function'), state.functions.length ? state.functions : [{ name: state.params.function }], state.params.function);
  $(`heatmap-mode-${state.heatmapMode}`).checked = true;
  wireControls(state, app);
  syncControls(state);
  rebuildParamControls(state, app);
  await refresh();
}

init();
