#!/usr/bin/env node
// A stand-in for `kf serve` written in plain JavaScript: serves web/explorer/ and the same JSON
// API (/api/kernels, /api/functions, /api/smooth, /api/profile) with the math done here, so the
// explorer page and its browser test can be developed without building the C++ server.
// It is a development tool: the math follows src/explore/explorer.cpp (same functions, ranges,
// kernels, positional features and equivalent bandwidth) but not bit for bit: its random data are
// not the C++ server's (no mt19937_64 here) and its LOO-CV bandwidth is a coarse grid search.
//
//   node tests/web/mock_server.mjs [--port 8080] [--host 127.0.0.1] [--delay-ms 0]
//
// --delay-ms adds a random delay up to that many milliseconds to every /api/smooth and
// /api/profile answer, so responses can arrive out of order (to exercise the page's
// stale-response handling by hand).

import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const pageDir = path.resolve(here, '../../web/explorer');

// ---- command line ----
function parseArgs(argv) {
  const o = { port: 8080, host: '127.0.0.1', delayMs: 0 };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--port') o.port = Number(next());
    else if (a === '--host') o.host = next();
    else if (a === '--delay-ms') o.delayMs = Number(next());
    else if (a === '--help' || a === '-h') {
      console.log('usage: node tests/web/mock_server.mjs [--port P] [--host H] [--delay-ms MS]');
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  if (!Number.isInteger(o.port) || o.port < 0 || o.port > 65535) throw new Error('bad --port');
  return o;
}

// ---- kernels: K as a function of u = |x - x'| / h ----
// (descriptions as in include/kernelformer/kernels.hpp)
const KERNELS = [
  ['gaussian', 'exp(-|q-k|^2 / (2 h^2)); alias rbf (gamma = 1/(2h^2))', false, (u) => Math.exp(-0.5 * u * u)],
  ['laplacian', 'exp(-|q-k| / h)', false, (u) => Math.exp(-u)],
  ['cauchy', '1 / (1 + |q-k|^2 / h^2)', false, (u) => 1 / (1 + u * u)],
  ['boxcar', '1 if |q-k| <= h else 0 (compact)', true, (u) => (u <= 1 ? 1 : 0)],
  ['epanechnikov', '1 - u^2 for u = |q-k|/h <= 1 (compact)', true, (u) => Math.max(1 - u * u, 0)],
  ['biweight', '(1 - u^2)^2 for u <= 1 (quartic, compact)', true, (u) => Math.max(1 - u * u, 0) ** 2],
  ['triweight', '(1 - u^2)^3 for u <= 1 (compact)', true, (u) => Math.max(1 - u * u, 0) ** 3],
  ['tricube', '(1 - u^3)^3 for u <= 1 (compact; LOESS)', true, (u) => (u <= 1 ? (1 - u ** 3) ** 3 : 0)],
  ['cosine', 'cos(pi u / 2) for u <= 1 (compact)', true, (u) => (u <= 1 ? Math.cos((Math.PI / 2) * u) : 0)],
].map(([name, description, compact, k]) => ({ name, description, compact, k }));

// ---- functions: truth and the x range the data are drawn from ----
// (as in src/explore/explorer.cpp; 'sinusoids' has evenly spaced x)
const FUNCTIONS = [
  ['seed001', '2 sin x + noise, x ~ U(0, 6) (seed 001: KNN vs Gaussian kernel regression)', (x) => 2 * Math.sin(x), 0, 6],
  ['sin', 'sin 2πx + noise, x ~ U(0, 1)', (x) => Math.sin(2 * Math.PI * x), 0, 1],
  ['sinusoids', 'sin 2πx + ½ sin 6πx + noise on n evenly spaced points of [0, 1] (seed 002)',
    (x) => Math.sin(2 * Math.PI * x) + 0.5 * Math.sin(6 * Math.PI * x), 0, 1],
  ['linear', '1 + 2x + noise: nearly linear, so a large bandwidth is fine (seed 000)', (x) => 1 + 2 * x, 0, 1],
  ['step', '1[x ≥ ½] + noise: a jump that every smoother blurs', (x) => (x >= 0.5 ? 1 : 0), 0, 1],
].map(([name, description, f, lo, hi]) => ({ name, description, f, lo, hi }));

// ---- random numbers: mulberry32 + Box-Muller ----
function rng(seed) {
  let a = (seed >>> 0) ^ 0x9e3779b9;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const normal = () => {
    const u = 1 - next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * next());
  };
  return { uniform: next, normal };
}

class ApiError extends Error {
  constructor(message, status = 400) {
    super(message);
    this.status = status;
  }
}

function num(q, key, def, lo, hi, { integer = false, openLo = false } = {}) {
  const raw = q.get(key);
  if (raw === null) return def;
  const v = raw.trim() === '' ? NaN : Number(raw);
  if (!Number.isFinite(v)) throw new ApiError(`${key}: '${raw}' is not a finite number`);
  if (integer && !Number.isInteger(v)) throw new ApiError(`${key}: '${raw}' is not a whole number`);
  const range = integer ? `${lo}..${hi}` : `${openLo ? '(' : '['}${lo}, ${hi}]`;
  if ((openLo ? !(v > lo) : !(v >= lo)) || !(v <= hi)) throw new ApiError(`${key}: ${raw} is outside ${range}`);
  return v;
}

function parseParams(q) {
  const fname = q.get('function') ?? 'seed001';
  const fn = FUNCTIONS.find((f) => f.name === fname);
  if (!fn) throw new ApiError(`function: unknown '${fname}' (${FUNCTIONS.map((f) => f.name).join(', ')})`);
  const kname = q.get('kernel') ?? 'gaussian';
  const kernel = KERNELS.find((k) => k.name === kname);
  if (!kernel) throw new ApiError(`kernel: unknown '${kname}' (${KERNELS.map((k) => k.name).join(', ')})`);
  return {
    fn,
    kernel,
    n: num(q, 'n', 40, 2, 2000, { integer: true }),
    noise: num(q, 'noise', 1, 0, 10),
    seed: num(q, 'seed', 0, 0, 2 ** 32 - 1, { integer: true }),
    bandwidth: num(q, 'bandwidth', 0.5, 0, 1e3, { openLo: true }),
    temperature: num(q, 'temperature', 0.1, 0, 1e3, { openLo: true }),
    grid: num(q, 'grid', 200, 10, 2000, { integer: true }),
  };
}

function makeData(p) {
  const r = rng(p.seed * 7919 + p.fn.name.length);
  const xs = Array.from({ length: p.n }, (_, i) =>
    p.fn.name === 'sinusoids' ? p.fn.lo + ((p.fn.hi - p.fn.lo) * i) / (p.n - 1) : p.fn.lo + (p.fn.hi - p.fn.lo) * r.uniform());
  xs.sort((a, b) => a - b);
  const ys = xs.map((x) => p.fn.f(x) + p.noise * r.normal());
  return { x: xs, y: ys };
}

// Normalized weights of every data point for the query x0; null when the kernel gives no weight
// to any point (compact kernel, empty window).
function nwWeights(x0, xs, kernel, h) {
  const w = xs.map((xi) => kernel.k(Math.abs(x0 - xi) / h));
  const s = w.reduce((a, b) => a + b, 0);
  if (!(s > 0)) return null;
  return w.map((v) => v / s);
}

// q = k = phi(x) = [sin w1 t, cos w1 t, sin w2 t, cos w2 t], t = x - lo, w1 = pi/(2R), w2 = pi/R
// (R = hi - lo), weight = softmax(q.k / T); q.k = cos w1 d + cos w2 d falls with d = |x0 - xi|.
const omegas = (fn) => [Math.PI / (2 * (fn.hi - fn.lo)), Math.PI / (fn.hi - fn.lo)];
function phi(x, fn) {
  const [w1, w2] = omegas(fn);
  const t = x - fn.lo;
  return [Math.sin(w1 * t), Math.cos(w1 * t), Math.sin(w2 * t), Math.cos(w2 * t)];
}
// equivalent Gaussian bandwidth near d = 0: sqrt(T / (w1^2 + w2^2))
const equivalentBandwidth = (T, fn) => Math.sqrt(T / omegas(fn).reduce((a, w) => a + w * w, 0));
function attnWeights(x0, xs, T, fn) {
  const q = phi(x0, fn);
  const s = xs.map((xi) => {
    const k = phi(xi, fn);
    return (q[0] * k[0] + q[1] * k[1] + q[2] * k[2] + q[3] * k[3]) / T;
  });
  const m = Math.max(...s);
  const e = s.map((v) => Math.exp(v - m));
  const z = e.reduce((a, b) => a + b, 0);
  return e.map((v) => v / z);
}

const dot = (w, y) => (w === null ? null : w.reduce((a, wi, i) => a + wi * y[i], 0));
const linspace = (lo, hi, m) => Array.from({ length: m }, (_, i) => (m === 1 ? lo : lo + ((hi - lo) * i) / (m - 1)));

// Leave-one-out CV bandwidth over a log grid; points whose LOO fit is undefined (compact kernel,
// no neighbour) make that bandwidth ineligible. Scored on at most 300 evenly spread points so
// n = 2000 stays interactive (the real server's LOO is exact).
function looBandwidth(xs, ys, kernel) {
  const range = Math.max(xs[xs.length - 1] - xs[0], 1e-9);
  const stride = Math.max(1, Math.ceil(xs.length / 300));
  let best = range, bestErr = Infinity;
  for (let i = 0; i <= 60; ++i) {
    const h = range * 10 ** (-3 + (3 * i) / 60);
    let err = 0;
    for (let j = 0; j < xs.length && err < Infinity; j += stride) {
      let num_ = 0, den = 0;
      for (let k = 0; k < xs.length; ++k) {
        if (k === j) continue;
        const w = kernel.k(Math.abs(xs[j] - xs[k]) / h);
        num_ += w * ys[k];
        den += w;
      }
      err = den > 0 ? err + (ys[j] - num_ / den) ** 2 : Infinity;
    }
    if (err < bestErr) (bestErr = err), (best = h);
  }
  return best;
}

function smooth(q) {
  const t0 = performance.now();
  const p = parseParams(q);
  const { x, y } = makeData(p);
  const grid = linspace(p.fn.lo, p.fn.hi, p.grid);
  const truth = grid.map(p.fn.f);
  const nw = grid.map((g) => dot(nwWeights(g, x, p.kernel, p.bandwidth), y));
  const attention = grid.map((g) => dot(attnWeights(g, x, p.temperature, p.fn), y));
  const rows = Math.min(60, p.grid);
  const rowX = linspace(p.fn.lo, p.fn.hi, rows);
  const heatmap = {
    rows,
    cols: p.n,
    row_x: rowX,
    nw: rowX.map((g) => nwWeights(g, x, p.kernel, p.bandwidth) ?? x.map(() => 0)),
    attention: rowX.map((g) => attnWeights(g, x, p.temperature, p.fn)),
  };
  return {
    x, y, grid, truth, nw, attention,
    bandwidth: p.bandwidth,
    bandwidth_loo: looBandwidth(x, y, p.kernel),
    temperature: p.temperature,
    attention_bandwidth: equivalentBandwidth(p.temperature, p.fn),
    kernel: p.kernel.name,
    function: p.fn.name,
    heatmap,
    elapsed_ms: performance.now() - t0,
  };
}

function profile(q) {
  const p = parseParams(q);
  const raw = q.get('point');
  if (raw === null) throw new ApiError('point: missing (an index 0..n-1)');
  const i = raw.trim() === '' ? NaN : Number(raw);
  if (!Number.isInteger(i)) throw new ApiError(`point: '${raw}' is not a whole number`);
  if (i < 0 || i >= p.n) throw new ApiError(`point: ${i} is outside 0..${p.n - 1}`);
  const { x } = makeData(p);
  const x0 = x[i];
  return {
    point: i,
    x0,
    nw: nwWeights(x0, x, p.kernel, p.bandwidth) ?? x.map(() => 0),
    attention: attnWeights(x0, x, p.temperature, p.fn),
  };
}

// ---- HTTP ----
const STATIC = {
  '/': ['index.html', 'text/html; charset=utf-8'],
  '/index.html': ['index.html', 'text/html; charset=utf-8'],
  '/app.js': ['app.js', 'text/javascript; charset=utf-8'],
  '/style.css': ['style.css', 'text/css; charset=utf-8'],
};

function send(res, status, type, body) {
  res.writeHead(status, { 'Content-Type': type, 'Cache-Control': 'no-store', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}
const sendJson = (res, status, obj) => send(res, status, 'application/json', JSON.stringify(obj));

function main() {
  let opts;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (e) {
    console.error(`mock_server: ${e.message}`);
    process.exit(2);
  }
  const server = http.createServer((req, res) => {
    // Parse only the path; never touch the file system with it (a fixed table serves files).
    const rawPath = (req.url ?? '/').split('?')[0];
    const query = new URLSearchParams((req.url ?? '').includes('?') ? req.url.slice(req.url.indexOf('?') + 1) : '');
    const respond = () => {
      try {
        if (req.method !== 'GET' && req.method !== 'HEAD') return sendJson(res, 405, { error: `method ${req.method} not allowed` });
        if (rawPath === '/api/kernels') return sendJson(res, 200, { kernels: KERNELS.map(({ name, description, compact }) => ({ name, description, compact })) });
        if (rawPath === '/api/functions') return sendJson(res, 200, { functions: FUNCTIONS.map(({ name, description, lo, hi }) => ({ name, description, lo, hi })) });
        if (rawPath === '/api/smooth') return sendJson(res, 200, smooth(query));
        if (rawPath === '/api/profile') return sendJson(res, 200, profile(query));
        if (rawPath.startsWith('/api/')) return sendJson(res, 404, { error: `no such API endpoint: ${rawPath}` });
        const entry = STATIC[rawPath];
        if (!entry) return send(res, 404, 'text/plain; charset=utf-8', 'not found\n');
        return send(res, 200, entry[1], fs.readFileSync(path.join(pageDir, entry[0]), 'utf8'));
      } catch (e) {
        if (e instanceof ApiError) return sendJson(res, e.status, { error: e.message });
        console.error(e);
        return sendJson(res, 500, { error: `internal error: ${e.message}` });
      }
    };
    const slow = opts.delayMs > 0 && (rawPath === '/api/smooth' || rawPath === '/api/profile');
    if (slow) setTimeout(respond, Math.random() * opts.delayMs);
    else respond();
  });
  server.listen(opts.port, opts.host, () => {
    const a = server.address();
    console.log(`mock_server: serving ${pageDir} and the API on http://${a.address}:${a.port}/`);
  });
  const stop = () => server.close(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main();
