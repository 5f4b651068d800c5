#!/usr/bin/python3
"""The improved Sheather-Jones (ISJ) density bandwidth: kf (KernelDensity(bandwidth="isj"))
against KDEpy's algorithm in numpy (python/make_fixture_isj.py's isj, the oracle the C++ tests
compare with: KDEpy itself cannot be installed here), side by side on the same data, and against
Silverman's rule of the same data (the issue's target: binned, ISJ should cost about what
Silverman's rule costs at 10^6 points).

Data: a normal mixture, 0.4 N(-2, 0.5^2) + 0.6 N(2, 1), n = 10^4, 10^5, 10^6 (seed n).
Every time is the best of --reps runs of the call alone: the selector itself
(_kernelformer.bandwidth_isj) against Silverman's rule (_kernelformer.bandwidth_rule) and the
oracle (with its Python-loop binning, and with the binning vectorized: the fair stand-in for
KDEpy's Cython), then the whole KernelDensity fit with each bandwidth.

Usage: .venv/bin/python python/bench_isj.py [--reps 3] [--sizes 10000,100000,1000000]
           [--markdown docs/results/isj.md]
"""
import argparse
import importlib.util
import os
import re
import shlex
import sys
import time

import numpy as np

# The installed package, not the source folder beside this script (python/kernelformer).
_here = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]
import kernelformer as kf  # noqa: E402
import kernelformer._kernelformer as _kf  # noqa: E402


def load_oracle():
    """python/make_fixture_isj.py as a module (its top level only defines; main() is not run)."""
    spec = importlib.util.spec_from_file_location("make_fixture_isj",
                                                  os.path.join(_here, "make_fixture_isj.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def vectorized_binning(x, lo, hi, grid):
    """The oracle's linear_binning with np.bincount instead of a loop over the points (the same
    masses; the sums in another order)."""
    dx = (hi - lo) / (grid - 1)
    s = (np.asarray(x, dtype=float) - lo) / dx
    i = np.floor(s).astype(np.int64)
    frac = s - i
    counts = (np.bincount(i, weights=1 - frac, minlength=grid + 1) +
              np.bincount(i + 1, weights=frac, minlength=grid + 1))
    return counts[:grid] / len(x)


def best(fn, reps):
    t, out = float("inf"), None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        t = min(t, time.perf_counter() - t0)
    return t, out


def machine():
    try:
        with open("/proc/cpuinfo") as f:
            cpu = re.search(r"model name\s*:\s*(.*)", f.read())
    except OSError:
        cpu = None
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    return f"{cpu.group(1) if cpu else 'unknown CPU'}, {os.cpu_count()} cores (load {load} at start)"


def command():
    exe = sys.executable
    if exe.startswith(os.getcwd() + os.sep):
        exe = os.path.relpath(exe)
    return shlex.join([exe] + sys.argv)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--markdown", help="also write the table here")
    a = ap.parse_args()
    oracle = load_oracle()
    C = _kf.BandwidthCriterion
    head = [f"# bench_isj.py on {machine()}", f"`{command()}`"]
    print("\n".join(head))
    cols = ("n", "kf ISJ bandwidth s", "Silverman rule s", "ISJ / rule", "oracle s",
            "oracle vec-bin s", "oracle vec / kf", "kf KDE fit, ISJ s", "kf KDE fit, Silverman s",
            "|h_kf/h_oracle - 1|")
    print(" ".join(f"{c:>{max(len(c), 9)}}" for c in cols))
    rows = []
    for n in (int(s) for s in a.sizes.split(",")):
        rng = np.random.default_rng(n)
        x = np.where(rng.random(n) < 0.4, rng.normal(-2, 0.5, n), rng.normal(2, 1, n))
        X = np.ascontiguousarray(x[:, None])
        t_isj, h_kf = best(lambda: _kf.bandwidth_isj(x), a.reps)
        t_rule, _ = best(lambda: _kf.bandwidth_rule(X, C.silverman), a.reps)
        t_or, r = best(lambda: oracle.isj(x), a.reps)
        loop_binning = oracle.linear_binning
        oracle.linear_binning = vectorized_binning  # isj() looks it up at call time
        try:
            t_vec, r_vec = best(lambda: oracle.isj(x), a.reps)
        finally:
            oracle.linear_binning = loop_binning
        t_fit, _ = best(lambda: kf.KernelDensity(bandwidth="isj").fit(X), a.reps)
        t_sil, _ = best(lambda: kf.KernelDensity(bandwidth="silverman").fit(X), a.reps)
        rel = abs(h_kf / r["h"] - 1)
        row = (n, t_isj, t_rule, t_isj / t_rule, t_or, t_vec, t_vec / t_isj, t_fit, t_sil, rel)
        rows.append(row)
        cells = [f"{n}", f"{t_isj:.4f}", f"{t_rule:.4f}", f"{t_isj / t_rule:.2f}", f"{t_or:.4f}",
                 f"{t_vec:.4f}", f"{t_vec / t_isj:.1f}", f"{t_fit:.4f}", f"{t_sil:.4f}",
                 f"{rel:.1e}"]
        print(" ".join(f"{c:>{max(len(h), 9)}}" for c, h in zip(cells, cols)), flush=True)
    notes = [f"Best of {a.reps} runs each. Data: 0.4 N(-2, 0.5^2) + 0.6 N(2, 1), seed n.",
             "kf ISJ bandwidth: _kernelformer.bandwidth_isj(x), the selector alone (binning, "
             "distinct count, DCT, root); Silverman rule: _kernelformer.bandwidth_rule alone (a "
             "pass for the standard deviation and a selection for the quartiles).",
             "oracle: KDEpy's algorithm in numpy/scipy (python/make_fixture_isj.py, isj()), whose "
             "linear binning loops over the points in Python (KDEpy's is Cython); oracle vec-bin: "
             "the same with the binning done by np.bincount (every other step the oracle's own): "
             "the fair stand-in for KDEpy.",
             "kf KDE fit: KernelDensity(bandwidth=...).fit, the selector plus the binned grid "
             "kept for evaluation and the cv_ml criterion at the chosen h: at ISJ's smaller h the "
             "grid (500 cells per h) is larger, which is most of the difference."]
    print("\n".join(notes))
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("\n\n".join(head) + "\n\n")
            f.write("| " + " | ".join(c.replace("|", "\\|") for c in cols) + " |\n")
            f.write("|" + "---|" * len(cols) + "\n")
            for r in rows:
                f.write(f"| {r[0]} | {r[1]:.4f} | {r[2]:.4f} | {r[3]:.2f} | {r[4]:.4f} | "
                        f"{r[5]:.4f} | {r[6]:.1f} | {r[7]:.4f} | {r[8]:.4f} | {r[9]:.1e} |\n")
            f.write("\n" + "\n\n".join(notes) + "\n")

if __name__ == "__main__":
    main()
