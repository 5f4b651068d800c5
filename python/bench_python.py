#!/usr/bin/env python3
"""The Python package's targets (issue 23), measured in one run beside the pure-Python peers;
prints a Markdown table.

  overhead   kernelformer.smooth on tiny arrays (q 4x2, k 8x2, v 8x1, float64): the median of
             many calls, target <= 20 us; beside it a numpy softmax-attention one-liner on the
             same arrays and the binding's own call (_kernelformer.smooth_forward)
  seed001    seed 001's Gaussian regression at 100,000 x 1,000 (x ~ U(0, 6), y = 2 sin x +
             N(0, 1), h = 1/sqrt(10), 2 threads) through kernelformer.smooth vs the C++ benchmark
             bench_regression seed001_{double,float}/100000/1000/2, the median of 15 calls each,
             alternated over rounds (the ratio is the median of the rounds'): target within 5%;
             scikit-learn's rbf_kernel formulation (seed 001's) beside them
  nw-cv      NadarayaWatsonRegressor(bandwidth="cv").fit at 10^6 points vs statsmodels
             KernelReg(bw="cv_ls") at 2,000 (x ~ U(0, 10), y = sin x + 0.3 N(0, 1)): target faster
  knn        KNNRegressor(n_neighbors=10) vs scikit-learn KNeighborsRegressor(n_neighbors=10),
             fit + predict at 10^5 training and 10^5 query points, d = 1 and 3: target at least
             as fast (KNNRegressor's fit also computes the n leave-one-out residuals)
  predict    NadarayaWatsonRegressor(bandwidth=0.1).predict at 100 points after a fit at 5,000
             and 10^5 points (the binned route): the fit's kept grid vs evaluating afresh (what
             every predict did before, _kernelformer.regression_predict), and the exact route at
             4,999 points beside them: target the kept grid within 2x of the exact route's call
  kde        KernelDensity(bandwidth='silverman') fit + score_samples at 512 points, 10^4 points
             in 1-D, vs statsmodels KDEUnivariate.fit(fft=True) + evaluate at the same points:
             target faster
  classify   KNNClassifier(n_neighbors=10) vs scikit-learn KNeighborsClassifier(10), fit +
             predict_proba at 10^5 + 10^5 points in 2-D (probabilities checked equal); and
             KernelClassifier(bandwidth=0.2) vs a Parzen classifier from scikit-learn's
             KernelDensity per class (priors x densities, normalized) at 2*10^4 + 2*10^4 points
             in 2-D: target at least as fast
  torch      kernelformer.torch.smooth forward + backward, B=1, H=8, T=1024, D=64, float32, vs
             the same softmax attention written in PyTorch (softmax(q k^T / 8) v), both on 2
             threads, alternated over rounds: target >= 2x

Usage (from the repository root, with the package installed in .venv, docs/python.md):
    .venv/bin/python python/bench_python.py [--bench build/release/bench/bench_regression]
        [--rounds 5] [--only overhead,seed001,nw-cv,knn,predict,kde,classify,torch] [--quick]
        [--json OUT.json]
Build the C++ benchmark first: cmake --preset release && cmake --build --preset release
--target bench_regression. --quick shrinks the sizes (a smoke run, not the targets).
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np

# This file sits beside the package's sources (python/kernelformer/, without the compiled
# module): import the installed package, not that folder.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]
import kernelformer as kf  # noqa: E402

THREADS = 2


def median_time(fn, repeats, warmup=1):
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def per_call(fn, calls, blocks=7):
    """Seconds per call: the median over blocks of the mean of `calls` calls."""
    fn()
    ts = []
    for _ in range(blocks):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        ts.append((time.perf_counter() - t0) / calls)
    return statistics.median(ts)


def bench_overhead(rows, quick):
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((4, 2)), rng.standard_normal((8, 2)), rng.standard_normal((8, 1))
    calls = 2000 if quick else 20000

    def numpy_attention():
        s = q @ k.T / np.sqrt(2.0)
        e = np.exp(s - s.max(1, keepdims=True))
        return (e / e.sum(1, keepdims=True)) @ v

    kern, msk = kf.make_kernel(), kf.make_mask(None)
    t_kf = per_call(lambda: kf.smooth(q, k, v), calls)
    t_raw = per_call(lambda: kf._kernelformer.smooth_forward(q, k, v, kern, msk, False), calls)
    t_np = per_call(numpy_attention, calls)
    rows.append(["call overhead, tiny arrays (4x2, 8x2, 8x1)", "<= 20 us",
                 f"kernelformer.smooth {t_kf * 1e6:.1f} us (binding alone {t_raw * 1e6:.1f} us)",
                 f"numpy softmax attention {t_np * 1e6:.1f} us", f"{t_np / t_kf:.2f}x",
                 "yes" if t_kf <= 20e-6 else "NO"])


def cpp_bench(bench, name, repetitions):
    """The C++ benchmark's median time per call (s): `repetitions` short repetitions, the median
    of them (the statistic the Python side takes too)."""
    env = dict(os.environ, OMP_NUM_THREADS=str(THREADS))
    out = subprocess.run([bench, f"--benchmark_filter=^BM_{name}$", "--benchmark_format=json",
                          "--benchmark_min_time=0.01", f"--benchmark_repetitions={repetitions}",
                          "--benchmark_report_aggregates_only=true"], env=env, check=True,
                         capture_output=True, text=True).stdout
    b = json.loads(out)["benchmarks"] if out.strip() else []
    med = [x for x in b if x.get("aggregate_name") == "median"]
    if not med:
        raise RuntimeError(f"{bench}: no benchmark matches {name}")
    return med[0]["real_time"] * 1e-3  # ms -> s


def bench_seed001(rows, bench, rounds, quick):
    n, m = 100_000, 1_000  # the C++ benchmark's size (--quick repeats less)
    rng = np.random.default_rng(42)
    x = rng.uniform(0, 6, n)
    y = 2 * np.sin(x) + rng.standard_normal(n)
    xq = np.linspace(0, 6, m)
    h = 1 / np.sqrt(10)
    have_bench = bench and os.path.exists(bench)
    t_f64 = None
    for dtype, name in ((np.float64, "seed001_double"), (np.float32, "seed001_float")):
        xd, yd, xqd = x.astype(dtype), y.astype(dtype), xq.astype(dtype)
        py, cpp = [], []
        for _ in range(rounds):
            py.append(median_time(lambda: kf.smooth(xqd, xd, yd, kernel="gaussian", bandwidth=h,
                                                    threads=THREADS), 5 if quick else 15))
            if have_bench:
                cpp.append(cpp_bench(bench, f"{name}/{n}/{m}/{THREADS}/real_time",
                                     5 if quick else 15))
        label = "float64" if dtype == np.float64 else "float32"
        t_py = statistics.median(py)
        if dtype == np.float64:
            t_f64 = t_py
        if have_bench:
            ratios = [p / c for p, c in zip(py, cpp)]
            r = statistics.median(ratios)
            rows.append([f"seed 001, {n:,} x {m:,}, {label}", "within 5% of C++",
                         f"kernelformer.smooth {t_py * 1e3:.1f} ms",
                         f"C++ bench_regression {statistics.median(cpp) * 1e3:.1f} ms",
                         f"Python/C++ {r:.3f} (rounds {', '.join(f'{x:.3f}' for x in ratios)})",
                         "yes" if r <= 1.05 else "NO"])
        else:
            rows.append([f"seed 001, {n:,} x {m:,}, {label}", "within 5% of C++",
                         f"kernelformer.smooth {t_py * 1e3:.1f} ms", "(no C++ benchmark built)",
                         "", "?"])
    try:
        from sklearn.metrics.pairwise import rbf_kernel
    except ImportError:
        return

    def seed001_sklearn():
        w = rbf_kernel(xq[:, None], x[:, None], gamma=5)
        w /= w.sum(1, keepdims=True)
        return w @ y

    t_sk = median_time(seed001_sklearn, 1 if quick else 3)
    ref = seed001_sklearn()
    ours = kf.smooth(xq, x, y, kernel="gaussian", bandwidth=h)
    assert np.max(np.abs(ours - ref)) < 1e-10, "kernelformer and scikit-learn disagree"
    rows.append([f"seed 001, {n:,} x {m:,}, float64, beside scikit-learn", "(reference)",
                 f"kernelformer.smooth {t_f64 * 1e3:.1f} ms",
                 f"scikit-learn rbf_kernel, normalized, @ y: {t_sk * 1e3:.0f} ms",
                 f"{t_sk / t_f64:.1f}x", ""])


def smooth_data(n, seed):
    rng = np.random.RandomState(seed)
    x = rng.uniform(0, 10, n)
    return x, np.sin(x) + 0.3 * rng.normal(size=n)


def bench_nw_cv(rows, quick):
    n_kf, n_sm = (100_000, 300) if quick else (1_000_000, 2_000)
    x, y = smooth_data(n_kf, 0)
    X = x[:, None]
    t0 = time.perf_counter()
    m = kf.NadarayaWatsonRegressor(bandwidth="cv").fit(X, y)
    t_kf = time.perf_counter() - t0
    try:
        from statsmodels.nonparametric.kernel_regression import KernelReg
    except ImportError:
        rows.append([f"NadarayaWatsonRegressor(bandwidth='cv'), {n_kf:,} points", "", f"{t_kf:.2f} s",
                     "(statsmodels not installed)", "", "?"])
        return
    x2, y2 = smooth_data(n_sm, 1)
    t0 = time.perf_counter()
    kr = KernelReg(y2, x2, var_type="c", reg_type="lc", bw="cv_ls")
    t_sm = time.perf_counter() - t0
    rows.append([f"NW, CV bandwidth: kf at {n_kf:,} points, statsmodels at {n_sm:,}",
                 "faster than statsmodels",
                 f"NadarayaWatsonRegressor(bandwidth='cv').fit {t_kf:.2f} s (h = "
                 f"{m.bandwidth_[0]:.4f}, {m.route_})",
                 f"statsmodels KernelReg(bw='cv_ls') {t_sm:.2f} s (h = {kr.bw[0]:.4f})",
                 f"{t_sm / t_kf:.1f}x", "yes" if t_kf < t_sm else "NO"])


def bench_knn(rows, quick):
    from sklearn.neighbors import KNeighborsRegressor
    n = 10_000 if quick else 100_000
    for d in (1, 3):
        rng = np.random.default_rng(d)
        x = rng.uniform(0, 6, (n, d))
        y = np.sin(x).sum(1) + 0.3 * rng.standard_normal(n)
        xq = rng.uniform(0, 6, (n, d))

        def ours():
            return kf.KNNRegressor(n_neighbors=10).fit(x, y).predict(xq)

        def theirs():
            return KNeighborsRegressor(n_neighbors=10).fit(x, y).predict(xq)

        t_kf, t_sk = [], []
        for _ in range(3):
            t_kf.append(median_time(ours, 1, 0))
            t_sk.append(median_time(theirs, 1, 0))
        assert np.allclose(ours(), theirs(), rtol=1e-9, atol=1e-12), "KNN predictions differ"
        a, b = statistics.median(t_kf), statistics.median(t_sk)
        rows.append([f"KNN, k=10, {d}-D: fit + predict, {n:,} + {n:,} points",
                     "at least as fast as scikit-learn",
                     f"KNNRegressor {a * 1e3:.0f} ms", f"KNeighborsRegressor {b * 1e3:.0f} ms",
                     f"{b / a:.2f}x", "yes" if a <= b else "NO"])


def bench_torch(rows, rounds, quick):
    import torch
    import kernelformer.torch as kft
    torch.set_num_threads(THREADS)
    T = 256 if quick else 1024
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 8, T, 64, generator=g).requires_grad_() for _ in range(3))
    dout = torch.randn(1, 8, T, 64, generator=g)

    def reference(q, k, v):
        return torch.softmax(q @ k.transpose(-1, -2) / 8.0, dim=-1) @ v

    def step(f):
        def run():
            for t in (q, k, v):
                t.grad = None
            f(q, k, v).backward(dout)
        return run

    a = kft.smooth(q, k, v)
    assert torch.allclose(a, reference(q, k, v), atol=1e-5), "kernelformer.torch disagrees"
    ours, theirs = [], []
    for _ in range(rounds):
        ours.append(median_time(step(kft.smooth), 3 if quick else 7))
        theirs.append(median_time(step(reference), 3 if quick else 7))
    ratios = [b / a for a, b in zip(ours, theirs)]
    r = statistics.median(ratios)
    rows.append([f"attention forward + backward, B=1 H=8 T={T} D=64 float32", ">= 2x PyTorch",
                 f"kernelformer.torch.smooth {statistics.median(ours) * 1e3:.1f} ms",
                 f"PyTorch softmax(q k^T/8) v {statistics.median(theirs) * 1e3:.1f} ms",
                 f"{r:.2f}x (rounds {', '.join(f'{x:.2f}' for x in ratios)})",
                 "yes" if r >= 2 else "NO"])


def bench_predict(rows, quick):
    calls = 20 if quick else 100
    rng = np.random.default_rng(5)
    xq = rng.uniform(0, 10, (100, 1))
    for n in (5_000, 100_000):
        x = rng.uniform(0, 10, (n, 1))
        y = np.sin(x[:, 0]) + 0.3 * rng.standard_normal(n)
        m = kf.NadarayaWatsonRegressor(bandwidth=0.1).fit(x, y)
        spec, s2 = m._spec_fitted(), m.sigma_ ** 2
        kept = per_call(lambda: m.predict(xq), calls)
        fresh = per_call(lambda: kf._kernelformer.regression_predict(spec, x, y, xq, s2), calls)
        rows.append([f"NW predict, 100 points after a fit at {n:,} ({m.route_.split(' ')[0]})",
                     "the kept grid", f"kept grid {kept * 1e3:.2f} ms",
                     f"binned afresh {fresh * 1e3:.2f} ms", f"{fresh / kept:.0f}x",
                     "yes" if kept < fresh else "NO"])
    x, y = x[:4_999], y[:4_999]
    e = kf.NadarayaWatsonRegressor(bandwidth=0.1).fit(x, y)
    exact = per_call(lambda: e.predict(xq), calls)
    rows.append(["NW predict, 100 points: the kept grid (n = 5,000) vs the exact route (4,999)",
                 "within 2x", f"kept grid {kept * 1e3:.2f} ms", f"exact {exact * 1e3:.2f} ms",
                 f"{exact / kept:.2f}x", "yes" if kept <= 2 * exact else "NO"])


def bench_kde(rows, quick):
    from statsmodels.nonparametric.kde import KDEUnivariate
    rng = np.random.default_rng(6)
    x = rng.standard_normal(10_000)
    at = np.linspace(-4, 4, 512)

    def ours():
        return np.exp(kf.KernelDensity(bandwidth="silverman").fit(x[:, None])
                      .score_samples(at[:, None]))

    def theirs():
        k = KDEUnivariate(x)
        k.fit(kernel="gau", bw="silverman", fft=True)
        return k.evaluate(at)

    t_kf, t_sm = [], []
    for _ in range(3 if quick else 7):
        t_kf.append(median_time(ours, 5, 1))
        t_sm.append(median_time(theirs, 5, 1))
    a, b = statistics.median(t_kf), statistics.median(t_sm)
    rows.append(["KDE 1-D, 10^4 points: fit + density at 512 points", "faster than statsmodels",
                 f"KernelDensity {a * 1e3:.2f} ms", f"KDEUnivariate (FFT) {b * 1e3:.2f} ms",
                 f"{b / a:.2f}x", "yes" if a < b else "NO"])


def bench_classify(rows, quick):
    from sklearn.neighbors import KernelDensity as SkKDE
    from sklearn.neighbors import KNeighborsClassifier
    rng = np.random.default_rng(7)

    def blobs(n):
        y = rng.integers(0, 3, n)
        return rng.normal(size=(n, 2)) * 0.8 + np.array([[0, 0], [2, 0], [1, 2]])[y], y

    n = 10_000 if quick else 100_000
    x, y = blobs(n)
    xq, _ = blobs(n)

    def ours():
        return kf.KNNClassifier(n_neighbors=10).fit(x, y).predict_proba(xq)

    def theirs():
        return KNeighborsClassifier(n_neighbors=10).fit(x, y).predict_proba(xq)

    a = statistics.median(median_time(ours, 1, 0) for _ in range(3))
    b = statistics.median(median_time(theirs, 1, 0) for _ in range(3))
    assert np.allclose(ours(), theirs()), "KNN probabilities differ"
    rows.append([f"KNN classifier, k=10, 2-D: fit + predict_proba, {n:,} + {n:,} points",
                 "at least as fast as scikit-learn", f"KNNClassifier {a * 1e3:.0f} ms",
                 f"KNeighborsClassifier {b * 1e3:.0f} ms", f"{b / a:.2f}x",
                 "yes" if a <= b else "NO"])
    n = 2_000 if quick else 20_000
    x, y = blobs(n)
    xq, _ = blobs(n)
    h = 0.2

    def kernel_ours():
        return kf.KernelClassifier(bandwidth=h).fit(x, y).predict_proba(xq)

    def kernel_theirs():  # Parzen: P(c | x) ∝ n_c · f_c(x) = Σ_{j in c} K(x, x_j)
        logs = np.stack([np.log((y == c).mean()) + SkKDE(bandwidth=h).fit(x[y == c])
                         .score_samples(xq) for c in range(3)], axis=1)
        p = np.exp(logs - logs.max(1, keepdims=True))
        return p / p.sum(1, keepdims=True)

    a = statistics.median(median_time(kernel_ours, 1, 0) for _ in range(3))
    b = statistics.median(median_time(kernel_theirs, 1, 0) for _ in range(3))
    assert np.allclose(kernel_ours(), kernel_theirs(), atol=1e-6), "kernel probabilities differ"
    rows.append([f"Kernel classifier, gaussian h={h}, 2-D: fit + predict_proba, {n:,} + {n:,}",
                 "at least as fast as scikit-learn", f"KernelClassifier {a * 1e3:.0f} ms",
                 f"KernelDensity per class (Parzen) {b * 1e3:.0f} ms", f"{b / a:.2f}x",
                 "yes" if a <= b else "NO"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", default=os.path.join(_here, "..", "build", "release", "bench",
                                                    "bench_regression"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default="overhead,seed001,nw-cv,knn,predict,kde,classify,torch")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    only = set(a.only.split(","))
    kf.set_num_threads(THREADS)
    rows = []
    if "overhead" in only:
        bench_overhead(rows, a.quick)
    if "seed001" in only:
        bench_seed001(rows, a.bench, a.rounds, a.quick)
    if "nw-cv" in only:
        bench_nw_cv(rows, a.quick)
    if "knn" in only:
        bench_knn(rows, a.quick)
    if "predict" in only:
        bench_predict(rows, a.quick)
    if "kde" in only:
        bench_kde(rows, a.quick)
    if "classify" in only:
        bench_classify(rows, a.quick)
    if "torch" in only:
        bench_torch(rows, a.rounds, a.quick)
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    print(f"kernelformer {kf.__version__}, Python {platform.python_version()}, numpy "
          f"{np.__version__}, {THREADS} threads, {cpu}\n")
    print("| case | target | kernelformer | peer | ratio | met |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
