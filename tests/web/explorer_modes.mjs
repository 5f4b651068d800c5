// The explorer's checks beyond the basics (explorer.test.mjs runs them): data sets and presets,
// kernels and their parameters, the four attention heads, the selection following x, errors
// replacing each other, the page at 390 px, and the update latency at n = 200 and 2000.

import path from 'node:path';

import { assert, check, maxAbsDiff, quantile, sleep } from './harness.mjs';

// Latency targets of issue 24 for one update, request sent → plots redrawn (the answer parsed and
// the main plot, the weight matrix and the profile rewritten), on the median of the updates. The
// time until that redraw is painted (the next frame: up to one 16.7 ms vsync interval later) is
// measured and reported beside it. The targets are a benchmark, asserted only when asked
// (KF_EXPLORER_LATENCY_TARGETS=1, see docs/performance.md): a test run on a shared, loaded machine
// asserts a bound 5x the target that only a real regression (a blocking layout, a quadratic
// redraw) crosses, and prints the figures beside the target.
const LATENCY_TARGET_MS = { 200: 20, 2000: 50 };
const LATENCY_STRICT = process.env.KF_EXPLORER_LATENCY_TARGETS === '1';
const latencyBound = (n) => (LATENCY_STRICT ? 1 : 5) * LATENCY_TARGET_MS[n];
const LATENCY_UPDATES = 15;

async function choose(t, sel, value) {
  await t.page.selectOption(sel, value);
}

async function dataSetChecks(t, fixture) {
  const { page } = t;
  await check('kernel → epanechnikov h = 0.2: the NW curve equals numpy\'s, undefined where no point is in reach', async () => {
    await choose(t, '#kernel', 'epanechnikov');
    await page.fill('#bandwidth-number', '0.2');
    await t.waitQuery({ kernel: 'epanechnikov', bandwidth: '0.2' });
    const want = fixture.curves[1];
    const nw = await t.values('#nw-curve');
    const d = maxAbsDiff(nw, want.nw);
    assert(d < 1e-4, `max |page − numpy| = ${d} (nulls: page ${nw.filter((v) => v === null).length}, numpy ${want.nw.filter((v) => v === null).length})`);
    return `max |page − numpy| = ${d.toExponential(2)}, ${nw.filter((v) => v === null).length} undefined grid points`;
  });

  await check('kernel parameters are controls: periodic\'s period changes the NW curve', async () => {
    await choose(t, '#kernel', 'periodic');
    await t.waitQuery({ kernel: 'periodic:period=1' });
    const nw0 = await t.attr('#nw-curve', 'data-values');
    await page.fill('#kp-period-number', '6.28');
    await t.waitQuery({ kernel: 'periodic:period=6.28' });
    assert((await t.attr('#nw-curve', 'data-values')) !== nw0, 'the curve did not change with the period');
    await choose(t, '#kernel', 'rational_quadratic');
    await t.waitQuery({ kernel: 'rational_quadratic:alpha=1' });
    assert(await page.$('#kp-alpha'), 'no α control for the rational quadratic kernel');
    return 'period 1 → 6.28; rational_quadratic shows α';
  });

  await check('preset seed 002: 50 evenly spaced noise-free points of sin 2πx + ½ sin 6πx, random head', async () => {
    await choose(t, '#preset', 'seed002');
    await t.waitQuery({ function: 'sinusoids', n: 50, noise: 0, attention: 'random', kernel: 'gaussian', bandwidth: '0.05' });
    const d = await t.api(await t.query());
    assert(d.x.length === 50, `${d.x.length} points`);
    let dx = 0, dy = 0;
    d.x.forEach((x, i) => {
      dx = Math.max(dx, Math.abs(x - i / 49));
      dy = Math.max(dy, Math.abs(d.y[i] - (Math.sin(2 * Math.PI * x) + 0.5 * Math.sin(6 * Math.PI * x))));
    });
    assert(dx < 1e-5 && dy < 1e-4, `max |x − i/49| = ${dx}, max |y − f(x)| = ${dy}`);
    assert((await page.$$('#main-plot .point')).length === 50, 'not 50 points on the plot');
    return `|x − i/49| ≤ ${dx.toExponential(1)}, |y − f| ≤ ${dy.toExponential(1)}`;
  });

  await check('preset seed 001 again: the same curve as numpy\'s', async () => {
    await choose(t, '#preset', 'seed001');
    await t.waitQuery({ function: 'seed001_numpy', kernel: 'gaussian', bandwidth: '0.3162', attention: 'identity' });
    const d = maxAbsDiff(await t.values('#nw-curve'), fixture.curves[0].nw);
    assert(d < 1e-4, `max |page − numpy| = ${d}`);
    return `max |page − numpy| = ${d.toExponential(2)}`;
  });
}

// Switches the head and waits for the plot and the kernel fit of that head.
async function headMode(t, mode) {
  await choose(t, '#attention', mode);
  await t.waitQuery({ attention: mode });
  await t.page.waitForFunction((m) => {
    const p = document.getElementById('head-panel');
    return p.dataset.mode === m && p.dataset.fitState === 'ok';
  }, mode, { timeout: 20_000 });
  const p = await t.page.$eval('#head-panel', (e) => ({ ...e.dataset }));
  return { ...p, asymmetry: Number(p.asymmetry), bestR2: Number(p.bestR2), bestBandwidth: Number(p.bestBandwidth),
    curve: await t.values('#attention-curve'), loss: await t.values('#loss-plot') };
}

async function attentionChecks(t) {
  let identity;
  await check('identity head: symmetric (asymmetry 0), read back as a Gaussian at the formula\'s bandwidth', async () => {
    identity = await headMode(t, 'identity');
    const d = await t.api(await t.query());
    assert(identity.asymmetry === 0, `asymmetry ${identity.asymmetry}`);
    assert(identity.best === 'gaussian' && identity.bestR2 > 0.99, `best ${identity.best}, R² ${identity.bestR2}`);
    assert(Math.abs(identity.bestBandwidth / d.attention_bandwidth - 1) < 0.05, `fit h ${identity.bestBandwidth}, formula ${d.attention_bandwidth}`);
    return `gaussian h = ${identity.bestBandwidth} (formula ${d.attention_bandwidth}), R² ${identity.bestR2}`;
  });

  await check('random head (seed 002): not symmetric, a different curve, T disabled', async () => {
    const r = await headMode(t, 'random');
    assert(r.asymmetry > 0.05, `asymmetry ${r.asymmetry}`);
    assert(maxAbsDiff(r.curve, identity.curve) > 0.1, 'the attention curve is the identity head\'s');
    assert(await t.page.isDisabled('#temperature-number'), 'the temperature stays enabled');
    return `asymmetry ${r.asymmetry}; best fit ${r.best} (R² ${r.bestR2})`;
  });

  await check('head trained to mimic the smoother: loss falls, the head reads back as the NW kernel', async () => {
    const m = await headMode(t, 'mimic');
    const nw = await t.values('#nw-curve');
    assert(m.loss.length > 10 && m.loss[m.loss.length - 1] < m.loss[0] / 10, `loss ${m.loss[0]} → ${m.loss[m.loss.length - 1]}`);
    assert(m.best === 'gaussian' && Math.abs(m.bestBandwidth / 0.3162 - 1) < 0.1 && m.bestR2 > 0.99, `fit ${m.best} h ${m.bestBandwidth} R² ${m.bestR2}`);
    assert(m.asymmetry > 0.01, `asymmetry ${m.asymmetry}: W_q = W_k?`);
    const dNw = maxAbsDiff(m.curve, nw), dId = maxAbsDiff(identity.curve, nw);
    assert(dNw < 0.1 && dNw < dId / 3, `max |attention − NW|: mimic ${dNw}, identity ${dId}`);
    return `loss ${m.loss[0]} → ${m.loss[m.loss.length - 1]}; gaussian h = ${m.bestBandwidth}, R² ${m.bestR2}; max |attention − NW| ${dNw} (identity ${dId})`;
  });

  await check('head trained on the data: loss falls, not symmetric, its own curve', async () => {
    const d = await headMode(t, 'data');
    assert(d.loss.length > 10 && d.loss[d.loss.length - 1] < d.loss[0] / 2, `loss ${d.loss[0]} → ${d.loss[d.loss.length - 1]}`);
    assert(d.asymmetry > 0.05, `asymmetry ${d.asymmetry}`);
    assert(maxAbsDiff(d.curve, identity.curve) > 0.1, 'the attention curve is the identity head\'s');
    const s = await t.page.textContent('#head-summary');
    assert(/leave-one-out MSE/.test(s), `summary: ${s}`);
    await headMode(t, 'identity');
    return `loss ${d.loss[0]} → ${d.loss[d.loss.length - 1]}; asymmetry ${d.asymmetry}; best fit ${d.best} h ${d.bestBandwidth} (R² ${d.bestR2})`;
  });
}

async function selectionAndErrorChecks(t) {
  const { page } = t;
  await check('the selection follows its x, not its index, when n changes (n 40 → 300; curves still above points)', async () => {
    await choose(t, '#function', 'seed001');
    await t.waitQuery({ function: 'seed001' });
    await page.fill('#n', '40');
    await t.waitQuery({ function: 'seed001', n: 40 });
    await page.locator('#main-plot .point[data-index="7"]').click();
    await page.waitForSelector('#profile-plot[data-point="7"]');
    const x7 = (await t.api(await t.query())).x[7];
    await page.fill('#n', '300');
    await t.waitQuery({ n: 300 });
    const d = await t.api(await t.query());
    const sel = Number(await t.attr('#main-plot .point.selected', 'data-index'));
    let nearest = 0;
    d.x.forEach((x, i) => (Math.abs(x - x7) < Math.abs(d.x[nearest] - x7) ? (nearest = i) : 0));
    assert(sel === nearest, `selected point ${sel} (x = ${d.x[sel]}), the nearest to x = ${x7} is ${nearest}`);
    assert(Number(await t.attr('#profile-plot', 'data-point')) === sel, 'the profile is not of the selected point');
    const above = await page.evaluate(() => Boolean(document.querySelector('#main-plot .points').compareDocumentPosition(document.getElementById('nw-curve')) & Node.DOCUMENT_POSITION_FOLLOWING));
    assert(above, 'at n = 300 the NW curve is under the points');
    return `point 7 (x = ${x7}) → point ${sel} (x = ${d.x[sel]})`;
  });

  await check('an error is replaced by a later one and cleared by a fix (n = 5000, then h = −1, then h = 0.5)', async () => {
    const before = t.consoleErrors.length;
    const statusText = async () => (await page.textContent('#status')).trim();
    await page.fill('#n', '5000');
    await page.waitForFunction(() => document.getElementById('status').dataset.state === 'error');
    const first = await statusText();
    assert(/n: 5000/.test(first), `first error: '${first}'`);
    await page.fill('#n', '300');
    await page.fill('#bandwidth-number', '-1');
    await page.waitForFunction(() => /bandwidth/.test(document.getElementById('status').textContent));
    const second = await statusText();
    assert(!/5000/.test(second), `the old error stays: '${second}'`);
    await page.screenshot({ path: path.join(t.out, 'explorer-error.png') });
    await page.fill('#bandwidth-number', '0.5');
    await t.waitQuery({ n: 300, bandwidth: '0.5' });
    const third = await statusText();
    assert(!/error/i.test(third), `after the fix: '${third}'`);
    for (let i = before; i < t.consoleErrors.length; ++i) t.expected4xx.push(i);
    return `'${first}' → '${second}' → '${third}'`;
  });
}

async function layoutCheck(t) {
  await check('the page at 390 px wide (a phone): the plot first, no horizontal overflow, plots drawn at their own width', async () => {
    const ctx = await t.browser.newContext({ viewport: { width: 390, height: 844 } });
    try {
      const p = await ctx.newPage();
      await p.goto(`${t.base}/`);
      await p.waitForFunction(() => document.getElementById('status').dataset.state === 'ok', null, { timeout: 20_000 });
      await p.waitForFunction(() => document.getElementById('head-panel').dataset.fitState === 'ok', null, { timeout: 20_000 });
      const m = await p.evaluate(() => {
        const svg = document.getElementById('main-plot');
        const vb = svg.viewBox.baseVal;
        const wide = [...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5);
        const plotTop = svg.getBoundingClientRect().top, controlsTop = document.querySelector('.sidebar').getBoundingClientRect().top;
        return { scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth, vb: vb.width, svg: svg.clientWidth, wide: wide.slice(0, 3).map((e) => e.id || e.className || e.tagName), plotTop, controlsTop };
      });
      await p.screenshot({ path: path.join(t.out, 'explorer-390.png'), fullPage: true });
      assert(m.plotTop < m.controlsTop && m.plotTop < 844, `the plot starts ${m.plotTop.toFixed(0)} px down, the controls ${m.controlsTop.toFixed(0)} px`);
      assert(m.scroll <= m.client && m.wide.length === 0, `scrollWidth ${m.scroll} > ${m.client}; too wide: ${m.wide.join(', ')}`);
      assert(Math.abs(m.vb - m.svg) <= 1, `main plot drawn ${m.vb} wide in a ${m.svg} px box (text would scale)`);
      return `scrollWidth ${m.scroll} = clientWidth ${m.client}; main plot ${m.svg} px, starting ${m.plotTop.toFixed(0)} px down (controls at ${m.controlsTop.toFixed(0)} px)`;
    } finally {
      await ctx.close();
    }
  });
}

// n updates of the bandwidth (one keyboard step each) at n points; returns the round trips.
async function measureUpdates(t, n) {
  const { page } = t;
  await page.fill('#n', String(n));
  await t.waitQuery({ n });
  await t.waitFit();
  const times = [];
  // Waits poll every 100 ms from a timer: playwright's default polls on every animation frame,
  // which would add its own work to the frames being timed.
  const idle = (c) => page.evaluate((c0) => new Promise((resolve) => {
    const poll = () => (window.kfTimings.length > c0 && document.getElementById('head-panel').dataset.fitState === 'ok'
      ? resolve() : setTimeout(poll, 100));
    poll();
  }), c);
  for (let k = 0; k < LATENCY_UPDATES; ++k) {
    const count = await page.evaluate(() => window.kfTimings.length);
    await page.focus('#bandwidth');
    await page.keyboard.press(k % 2 ? 'ArrowLeft' : 'ArrowRight');
    await idle(count);
    await sleep(100);
    const last = await page.evaluate(() => window.kfTimings[window.kfTimings.length - 1]);
    assert(last.n === n, `timed an update at n = ${last.n}`);
    times.push(last);
  }
  return times;
}

async function latencyChecks(t) {
  for (const n of [200, 2000]) {
    const what = LATENCY_STRICT ? `median ≤ ${LATENCY_TARGET_MS[n]} ms`
      : `median ≤ ${latencyBound(n)} ms (target ${LATENCY_TARGET_MS[n]} ms: KF_EXPLORER_LATENCY_TARGETS=1)`;
    await check(`update latency at n = ${n} (request sent → plots redrawn, and input → painted): ${what}`, async () => {
      const times = await measureUpdates(t, n);
      const stat = (k) => {
        const v = times.map((x) => x[k]);
        return `${quantile(v, 0.5).toFixed(1)} (p90 ${quantile(v, 0.9).toFixed(1)})`;
      };
      const med = quantile(times.map((x) => x.domMs), 0.5);
      const input = quantile(times.map((x) => x.inputToPaintMs), 0.5);
      const line = `redrawn ${stat('domMs')} ms, painted ${stat('roundTripMs')}; input → painted ` +
        `${stat('inputToPaintMs')} (a slider's move is sent at once); server ${stat('serverMs')}, ` +
        `answer parsed ${stat('fetchMs')}; medians of ${times.length} updates`;
      assert(med <= latencyBound(n), line);
      assert(input <= latencyBound(n) + 30, line);
      const pill = await t.page.textContent('#status');
      assert(/round trip \d/.test(pill), `the pill says '${pill}'`);
      return line;
    });
  }
}

export async function modeChecks(t, fixture) {
  await dataSetChecks(t, fixture);
  await attentionChecks(t);
  await selectionAndErrorChecks(t);
  await latencyChecks(t);
  await check(`screenshot ${path.join(t.out, 'explorer.png')}`, async () => {
    await t.page.mouse.move(0, 0);
    await t.page.screenshot({ path: path.join(t.out, 'explorer.png'), fullPage: true });
  });
  await layoutCheck(t);
}
