// The explorer test's plumbing: command line, named checks, starting and stopping `kf serve` on a
// free port, raw HTTP, and the process-level watchdog. The checks are in explorer.test.mjs and
// explorer_modes.mjs.

import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';

export const HOST = '127.0.0.1';
const SERVER_START_TIMEOUT_MS = 20_000;
const WHOLE_TEST_TIMEOUT_MS = 200_000;

// ---------------------------------------------------------------- command line

const USAGE = `usage: node tests/web/explorer.test.mjs [--server-cmd "<path to kf> serve"] [--out DIR]
  --server-cmd CMD  command that starts the server; "--port P --host 127.0.0.1" is appended
                    (default: "$KF_EXE serve" when KF_EXE is set)
  --out DIR         where the screenshots and the exported plot go (default: $KF_TEST_OUT, else a temp dir)
  env KF_CHROMIUM   Chromium binary (default /usr/bin/chromium)`;

function usageError(msg) {
  console.error(`explorer.test: ${msg}\n${USAGE}`);
  process.exit(2);
}

// Splits a command line the way a POSIX shell would for plain words and '…' / "…" quotes.
function splitCommand(s) {
  const out = [];
  let cur = null, quote = null;
  for (let i = 0; i < s.length; ++i) {
    const c = s[i];
    if (quote) {
      if (c === quote) quote = null;
      else if (c === '\\' && quote === '"' && i + 1 < s.length) cur += s[++i];
      else cur += c;
    } else if (c === '"' || c === "'") {
      quote = c;
      cur ??= '';
    } else if (c === '\\' && i + 1 < s.length) {
      cur = (cur ?? '') + s[++i];
    } else if (/\s/.test(c)) {
      if (cur !== null) out.push(cur), (cur = null);
    } else cur = (cur ?? '') + c;
  }
  if (quote) throw new Error(`unbalanced ${quote} in --server-cmd`);
  if (cur !== null) out.push(cur);
  return out;
}

export function parseArgs(argv) {
  const o = { serverCmd: null, out: process.env.KF_TEST_OUT || null };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const value = () => (i + 1 < argv.length ? argv[++i] : usageError(`${a} needs a value`));
    if (a === '--server-cmd') o.serverCmd = value();
    else if (a.startsWith('--server-cmd=')) o.serverCmd = a.slice('--server-cmd='.length);
    else if (a === '--out') o.out = value();
    else if (a.startsWith('--out=')) o.out = a.slice('--out='.length);
    else if (a === '--help' || a === '-h') {
      console.log(USAGE);
      process.exit(0);
    } else usageError(`unknown argument '${a}'`);
  }
  let cmd;
  if (o.serverCmd) {
    try {
      cmd = splitCommand(o.serverCmd);
    } catch (e) {
      usageError(e.message);
    }
  } else if (process.env.KF_EXE) cmd = [process.env.KF_EXE, 'serve'];
  else usageError('say which server to test: --server-cmd or KF_EXE');
  if (!cmd.length) usageError('--server-cmd is empty');
  o.cmd = cmd;
  o.out = path.resolve(o.out || fs.mkdtempSync(path.join(os.tmpdir(), 'kf-explorer-test-')));
  return o;
}

// ---------------------------------------------------------------- checks

export const results = [];
export class Fatal extends Error {}

export async function check(name, fn, { fatal = false } = {}) {
  try {
    const detail = await fn();
    results.push({ name, ok: true });
    console.log(`PASS ${name}${detail ? ` — ${detail}` : ''}`);
    return true;
  } catch (e) {
    results.push({ name, ok: false });
    const msg = (e && e.message ? e.message : String(e)).replace(/\x1b\[[0-9;]*m/g, '').split('\n').slice(0, 6).join('\n     ');
    console.log(`FAIL ${name}: ${msg}`);
    if (fatal) throw new Fatal(`'${name}' failed; the checks after it need it`);
    return false;
  }
}

export function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// data-values holds a JSON array; null entries stay null.
export function parseValues(s, what) {
  assert(typeof s === 'string' && s.length > 0, `${what} has no data-values`);
  return JSON.parse(s);
}

export const finite = (a) => a.filter((v) => typeof v === 'number' && Number.isFinite(v));
export const sum = (a) => finite(a).reduce((s, v) => s + v, 0);

export function maxAbsDiff(a, b) {
  if (a.length !== b.length) return Infinity;
  let m = 0;
  for (let i = 0; i < a.length; ++i) {
    const x = a[i], y = b[i];
    if ((x === null) !== (y === null)) return Infinity;
    if (x !== null) m = Math.max(m, Math.abs(x - y));
  }
  return m;
}

export function quantile(v, q) {
  const s = [...v].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

// ---------------------------------------------------------------- server

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, HOST, () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

export function startServer(cmd, port) {
  const args = [...cmd.slice(1), '--port', String(port), '--host', HOST];
  const child = spawn(cmd[0], args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const server = { child, cmdline: [cmd[0], ...args].join(' '), output: '', exited: null };
  const keep = (chunk) => {
    server.output = (server.output + chunk.toString()).slice(-8000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  child.on('error', (e) => (server.exited = `could not be started: ${e.message}`));
  child.on('exit', (code, sig) => (server.exited = sig ? `killed by ${sig}` : `exited with code ${code}`));
  return server;
}

export async function stopServer(server) {
  if (!server || server.exited) return;
  const { child } = server;
  const signal = (sig) => {
    try {
      process.kill(-child.pid, sig); // its process group: also a wrapper script's children
    } catch {
      try {
        child.kill(sig);
      } catch {
        /* already gone */
      }
    }
  };
  const gone = new Promise((r) => child.once('exit', r));
  signal('SIGTERM');
  if (await Promise.race([gone.then(() => true), sleep(3000).then(() => false)])) return;
  signal('SIGKILL');
  await Promise.race([gone, sleep(2000)]);
}

export function serverTail(server) {
  const t = server.output.trim();
  return t ? `\n     server output (last lines):\n     ${t.split('\n').slice(-12).join('\n     ')}` : '';
}

// GET with the path sent byte for byte (no URL normalization), over a plain socket.
export function rawGet(port, rawPath, timeoutMs = 5000) {
  return new Promise((resolve) => {
    const sock = net.connect(port, HOST);
    const chunks = [];
    const done = (err) => {
      sock.destroy();
      const text = Buffer.concat(chunks).toString('latin1');
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      const split = text.indexOf('\r\n\r\n');
      resolve({ status: m ? Number(m[1]) : null, head: split >= 0 ? text.slice(0, split) : text, body: split >= 0 ? text.slice(split + 4) : '', err });
    };
    sock.setTimeout(timeoutMs, () => done('timeout'));
    sock.on('connect', () => sock.write(`GET ${rawPath} HTTP/1.1\r\nHost: ${HOST}:${port}\r\nConnection: close\r\n\r\n`));
    sock.on('data', (c) => chunks.push(c));
    sock.on('end', () => done(null));
    sock.on('error', (e) => done(e.message));
  });
}

export async function getJson(base, pathAndQuery) {
  const res = await fetch(base + pathAndQuery);
  const text = await res.text();
  let body = null;
  try {
    body = JSON.parse(text);
  } catch {
    /* left null */
  }
  return { status: res.status, body, text, type: res.headers.get('content-type') || '' };
}

export async function waitForServer(server, base) {
  const deadline = Date.now() + SERVER_START_TIMEOUT_MS;
  let last = 'no answer yet';
  while (Date.now() < deadline) {
    if (server.exited) throw new Error(`the server ${server.exited}${server.exited.startsWith('could not') ? '' : ' before answering'} (${server.cmdline})${serverTail(server)}`);
    try {
      const r = await getJson(base, '/api/kernels');
      if (r.status === 200 && r.body && Array.isArray(r.body.kernels)) return r.body;
      last = `GET /api/kernels: HTTP ${r.status} ${r.text.slice(0, 200)}`;
    } catch (e) {
      last = e.cause ? e.cause.code || e.cause.message : e.message;
    }
    await sleep(150);
  }
  throw new Error(`no answer from ${base}/api/kernels within ${SERVER_START_TIMEOUT_MS / 1000} s (last: ${last}; ${server.cmdline})${serverTail(server)}`);
}

// ---------------------------------------------------------------- the process

// Runs run(opts, cleanup) with a watchdog, stops the browser and the server whatever happens,
// prints "explorer: N passed, M failed" and exits 0 only when every check passed (2: setup error).
export async function main(run) {
  const opts = parseArgs(process.argv.slice(2));
  const cleanup = { server: null, browser: null, done: false };
  const teardown = async () => {
    if (cleanup.done) return;
    cleanup.done = true;
    if (cleanup.browser) await Promise.race([cleanup.browser.close().catch(() => {}), sleep(5000)]);
    await stopServer(cleanup.server);
  };
  const bail = (why) => async () => {
    console.log(`FAIL ${why}`);
    await teardown();
    process.exit(1);
  };
  process.on('SIGINT', bail('interrupted'));
  process.on('SIGTERM', bail('terminated'));
  process.on('exit', () => {
    if (cleanup.server && !cleanup.server.exited) {
      try {
        process.kill(-cleanup.server.child.pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  });
  const watchdog = setTimeout(bail(`the whole test took over ${WHOLE_TEST_TIMEOUT_MS / 1000} s`), WHOLE_TEST_TIMEOUT_MS);
  let code = 1;
  try {
    code = await run(opts, cleanup);
  } catch (e) {
    if (!(e instanceof Fatal)) {
      results.push({ name: 'test harness', ok: false });
      console.log(`FAIL test harness: ${e && e.stack ? e.stack : e}`);
    } else console.log(`explorer: stopping early: ${e.message}`);
    code = 1;
  } finally {
    clearTimeout(watchdog);
    await teardown();
  }
  const passed = results.filter((r) => r.ok).length;
  const failed = results.length - passed;
  if (code === 2) process.exit(2);
  console.log(`explorer: output in ${opts.out}`);
  console.log(`explorer: ${passed} passed, ${failed} failed`);
  process.exit(failed === 0 && code === 0 && passed > 0 ? 0 : 1);
}
