#!/usr/bin/env node
// A stand-in for `kf serve` written in plain JavaScript: serves web/explorer/ and the same JSON
// API (/api/kernels, /api/functions, /api/smooth, /api/profile) with the math done here, so the
// explorer page and its browser test can be developed without building the C++ server.
// It is a development tool: the numbers follow the API contract, not the C++ code bit for bit
// (its random data in particular are not the C++ server's).
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
const KERNELS = [
  ['gaussian', 'exp(-u^2/2), u = |x - x_i| / h', (u) => Math.exp(-0.5 * u * u)],
  ['laplacian', 'exp(-u)', (u) => Math.exp(-u)],
  ['cauchy', '1 / (1 + u^2)', (u) => 1 / (1 + u * u)],
  ['boxcar', '1 for u <= 1 (compact)', (u) => (u <= 1 ? 1 : 0)],
  ['epanechnikov', '1 - u^2 for u <= 1 (compact)', (u) => Math.max(1 - u * u, 0)],
  ['biweight', '(1 - u^2)^2 for u <= 1 (quartic, compact)', (u) => Math.max(1 - u * u, 0) ** 2],
  ['triweight', '(1 - u^2)^3 for u <= 1 (compact)', (u) => Math.max(1 - u * u, 0) ** 3],
  ['tricube', '(1 - u^3)^3 for u <= 1 (compact; LOESS)', (u) => (u <= 1 ? (1 - u ** 3) ** 3 : 0)],
  ['cosine', 'cos(pi u / 2) for u <= 1 (compact)', (u) => (u <= 1 ? Math.cos((Math.PI / 2) * u) : 0)],
].map(([name, description, k]) => ({ name, description, k }));

// ---- functions: truth and the x range the data are drawn from ----
const FUNCTIONS = [
  ['seed001', '2 sin x + N(0,1), x~U(0,6)', (x) => 2 * Math.sin(x), 0, 6],
  ['sin', 'sin x + N(0,1), x~U(0,2 pi)', (x) => Math.sin(x), 0, 2 * Math.PI],
  ['sinusoids', 'sin x + 0.5 sin 3x + N(0,1), x~U(0,2 pi)', (x) => Math.sin(x) + 0.5 * Math.sin(3 * x), 0, 2 * Math.PI],
  ['linear', '0.5 x - 1 + N(0,1), x~U(0,6)', (x) => 0.5 * x - 1, 0, 6],
  ['step', 'sign(x - 3) + N(0,1), x~U(0,6)', (x) => (x < 3 ? -1 : 1), 0, 6],
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
  if (raw === null || raw === '') return def;
  const v = Number(raw);
  if (!Number.isFinite(v)) throw new ApiError(`${key} must be a number, got '${raw}'`);
  if (integer && !Number.isInteger(v)) throw new ApiError(`${key} must be an integer, got '${raw}'`);
  if (openLo ? !(v > lo) : !(v >= lo)) throw new ApiError(`${key} must be ${openLo ? '>' : '>='} ${lo}, got ${raw}`);
  if (!(v <= hi)) throw new ApiError(`${key} must be <= ${hi}, got ${raw}`);
  return v;
}

function parseParams(q) {
  const fname = q.get('function') ?? 'seed001';
  const fn = FUNCTIONS.find((f) => f.name === fname);
  if (!fn) throw new ApiError(`unknown function '${fname}' (${FUNCTIONS.map((f) => f.name).join(', ')})`);
  const kname = q.get('kernel') ?? 'gaussian';
  const kernel = KERNELS.find((k) => k.name === kname);
  if (!kernel) throw new ApiError(`unknown kernel '${kname}' (${KERNELS.map((k) => k.name).join(', ')})`);
  return {
    fn,
    kernel,
    n: num(q, 'n', 40, 2, 2000, { integer: true }),
    noise: num(q, 'noise', 1, 0, 10),
    seed: num(q, 'seed', 0, 0, 2 ** 32 - 1, { integer: true }),
    bandwidth: num(q, 'bandwidth', 0.5, 0, 1e3, { openLo: true }),
    temperature: num(q, 'temperature', 0.25, 0, 1e3, { openLo: true }),
    grid: num(q, 'grid', 200, 10, 2000, { integer: true }),
  };
}

function makeData(p) {
  const r = rng(p.seed * 7919 + p.fn.name.length);
  const xs = Array.from({ length: p.n }, () => p.fn.lo + (p.fn.hi - p.fn.lo) * r.uniform());
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

// q = k = 4-D sinusoidal positional encoding [sin x, cos x, sin(x/100), cos(x/100)]
// (PE[2i] = sin(x / 10000^(2i/4)), PE[2i+1] = cos(...)), weight = softmax(q.k / T).
const pe = (x) => [Math.sin(x), Math.cos(x), Math.sin(x / 100), Math.cos(x / 100)];
function attnWeights(x0, xs, T) {
  const q = pe(x0);
  const s = xs.map((xi) => {
    const k = pe(xi);
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
// no neighbour) make that bandwidth ineligible.
function looBandwidth(xs, ys, kernel) {
  const range = Math.max(xs[xs.length - 1] - xs[0], 1e-9);
  let best = range, bestErr = Infinity;
  for (let i = 0; i <= 60; ++i) {
    const h = range * 10 ** (-3 + (3 * i) / 60);
    let err = 0;
    for (let j = 0; j < xs.length && err < Infinity; ++j) {
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
  const attention = grid.map((g) => dot(attnWeights(g, x, p.temperature), y));
  const rows = Math.min(60, p.grid);
  const rowX = linspace(p.fn.lo, p.fn.hi, rows);
  const heatmap = {
    rows,
    cols: p.n,
    row_x: rowX,
    nw: rowX.map((g) => nwWeights(g, x, p.kernel, p.bandwidth) ?? x.map(() => 0)),
    attention: rowX.map((g) => attnWeights(g, x, p.temperature)),
  };
  return {
    x, y, grid, truth, nw, attention,
    bandwidth: p.bandwidth,
    bandwidth_loo: looBandwidth(x, y, p.kernel),
    temperature: p.temperature,
    kernel: p.kernel.name,
    heatmap,
    elapsed_ms: performance.now() - t0,
  };
}

function profile(q) {
  const p = parseParams(q);
  const raw = q.get('point');
  if (raw === null || raw === '') throw new ApiError('point is required (an index into the sorted data)');
  const i = Number(raw);
  if (!Number.isInteger(i) || i < 0 || i >= p.n) throw new ApiError(`point must be an integer in [0, ${p.n - 1}], got '${raw}'`);
  const { x } = makeData(p);
  const x0 = x[i];
  return {
    point: i,
    x0,
    nw: nwWeights(x0, x, p.kernel, p.bandwidth) ?? x.map(() => 0),
    attention: attnWeights(x0, x, p.temperature),
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
        if (rawPath === '/api/kernels') return sendJson(res, 200, { kernels: KERNELS.map(({ name, description }) => ({ name, description })) });
        if (rawPath === '/api/functions') return sendJson(res, 200, { functions: FUNCTIONS.map(({ name, description }) => ({ name, description })) });
        if (rawPath === '/api/smooth') return sendJson(res, 200, smooth(query));
        if (rawPath === '/api/profile') return sendJson(res, 200, profile(query));
        if (rawPath.startsWith('/api/')) return sendJson(res, 404, { error: `no such endpoint ${rawPath}` });
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
