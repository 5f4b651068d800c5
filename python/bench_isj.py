#!/usr/bin/python3
"""The improved Sheather-Jones (ISJ) density bandwidth: kf (KernelDensity(bandwidth="isj"))
against KDEpy's algorithm in numpy (python/make_fixture_isj.py's isj, the oracle the C++ tests
compare with: KDEpy itself cannot be installed here), side by side on the same data, and against
Silverman's rule of the same data (the issue's target: binned, ISJ should cost about what
Silverman's rule costs at 10^6 points).

Data: a normal mixture, 0.4 N(-2, 0.5^2) + 0.6 N(2, 1), n = 10^4, 10^5, 10^6 (seed n).
Every time is the best of --reps runs of the call alone:
  kf isj        KernelDensity(bandwidth="isj").fit(X): the bandwidth, then the binned grid kept
                for evaluation and the criterion at the chosen h (the fit reports it).
  kf C++        _kernelformer.kde_fit_data(kernel, X, isj): the same fit without the Python
                validation (no binding returns the ISJ bandwidth alone).
  kf fixed h    kde_fit_data at the ISJ bandwidth given: the grid and the criterion without the
                choice, so "C++ - fixed h" is about the cost of choosing h.
  oracle        make_fixture_isj.isj(x): numpy/scipy; its linear binning is a Python loop over
                the points (KDEpy's is Cython), so the oracle is timed a second time with the
                binning vectorized (np.bincount; every other step the oracle's own).
  kf silverman  KernelDensity(bandwidth="silverman").fit(X) (grid and criterion included) and
                the bare rule (_kernelformer.bandwidth_rule).

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
from kernelformer._sklearn import distance_kernel  # noqa: E402


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
    kern = distance_kernel("gaussian", "KernelDensity")
    C = _kf.BandwidthCriterion
    head = [f"# bench_isj.py on {machine()}", f"`{command()}`"]
    print("\n".join(head))
    cols = ("n", "kf isj s", "kf C++ s", "kf fixed h s", "oracle s", "oracle / kf",
            "oracle vec-bin s", "oracle vec / kf", "kf silverman s", "isj / silverman",
            "silverman rule s", "|h_kf/h_oracle - 1|")
    print(" ".join(f"{c:>{max(len(c), 9)}}" for c in cols))
    rows = []
    for n in (int(s) for s in a.sizes.split(",")):
        rng = np.random.default_rng(n)
        x = np.where(rng.random(n) < 0.4, rng.normal(-2, 0.5, n), rng.normal(2, 1, n))
        X = np.ascontiguousarray(x[:, None])
        t_fit, m = best(lambda: kf.KernelDensity(bandwidth="isj").fit(X), a.reps)
        h_kf = float(m.bandwidth_[0])
        t_cpp, _ = best(lambda: _kf.kde_fit_data(kern, X, C.isj), a.reps)
        t_fixed, _ = best(lambda: _kf.kde_fit_data(kern, X, C.fixed, [h_kf]), a.reps)
        t_or, r = best(lambda: oracle.isj(x), a.reps)
        loop_binning = oracle.linear_binning
        oracle.linear_binning = vectorized_binning  # isj() looks it up at call time
        try:
            t_vec, r_vec = best(lambda: oracle.isj(x), a.reps)
        finally:
            oracle.linear_binning = loop_binning
        t_sil, _ = best(lambda: kf.KernelDensity(bandwidth="silverman").fit(X), a.reps)
        t_rule, _ = best(lambda: _kf.bandwidth_rule(X, C.silverman), a.reps)
        rel = abs(h_kf / r["h"] - 1)
        rel_vec = abs(r_vec["h"] / r["h"] - 1)
        row = (n, t_fit, t_cpp, t_fixed, t_or, t_or / t_fit, t_vec, t_vec / t_fit, t_sil,
               t_fit / t_sil, t_rule, rel)
        rows.append(row + (h_kf, r["h"], rel_vec))
        cells = [f"{n}"] + [f"{v:.4f}" for v in (t_fit, t_cpp, t_fixed, t_or)] + [
            f"{t_or / t_fit:.2f}", f"{t_vec:.4f}", f"{t_vec / t_fit:.2f}", f"{t_sil:.4f}",
            f"{t_fit / t_sil:.1f}", f"{t_rule:.4f}", f"{rel:.1e}"]
        print(" ".join(f"{c:>{max(len(h), 9)}}" for c, h in zip(cells, cols)), flush=True)
    notes = [f"Best of {a.reps} runs each. Data: 0.4 N(-2, 0.5^2) + 0.6 N(2, 1), seed n.",
             "kf isj: KernelDensity(bandwidth=\"isj\").fit (the bandwidth, then the binned grid "
             "kept for evaluation and the criterion at the chosen h); kf C++: the same fit "
             "through _kernelformer.kde_fit_data, without the Python validation (no binding "
             "returns the ISJ bandwidth alone); kf fixed h: kde_fit_data given that h (grid and "
             "criterion, no choice), so kf C++ minus kf fixed h is about what choosing h costs.",
             "oracle: KDEpy's algorithm in numpy/scipy (python/make_fixture_isj.py, isj()), whose "
             "linear binning loops over the points in Python (KDEpy's is Cython); oracle vec-bin: "
             "the same with the binning done by np.bincount (every other step the oracle's own).",
             "kf silverman: KernelDensity(bandwidth=\"silverman\").fit (grid and criterion "
             "included); silverman rule: _kernelformer.bandwidth_rule alone.",
             "h: " + "; ".join(f"n = {r[0]}: kf {r[12]:.10g}, oracle {r[13]:.10g} "
                               f"(vec-bin oracle differs by {r[14]:.0e})" for r in rows) + "."]
    print("\n".join(notes))
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("\n\n".join(head) + "\n\n")
            f.write("| " + " | ".join(c.replace("|", "\\|") for c in cols) + " |\n")
            f.write("|" + "---|" * len(cols) + "\n")
            for r in rows:
                n, t_fit, t_cpp, t_fixed, t_or, q_or, t_vec, q_vec, t_sil, q_sil, t_rule, rel = r[:12]
                f.write(f"| {n} | {t_fit:.4f} | {t_cpp:.4f} | {t_fixed:.4f} | {t_or:.4f} | "
                        f"{q_or:.2f} | {t_vec:.4f} | {q_vec:.2f} | {t_sil:.4f} | {q_sil:.1f} | "
                        f"{t_rule:.4f} | {rel:.1e} |\n")
            f.write("\n" + "\n\n".join(notes) + "\n")


if __name__ == "__main__":
    main()
