#!/usr/bin/python3
"""Mixed-data kernel regression and density (continuous + unordered + ordered columns): kf's
MixedNadarayaWatsonRegressor / MixedKernelDensity against statsmodels' KernelReg(reg_type='lc')
and KDEMultivariate (var_type 'cuo'), on the same data in one run: the fit at given bandwidths
(predictions at 1,000 points) and the cross-validated bandwidth search (cv_ls / cv_ml).

Data: x ~ U(0, 4), u in {0, 1, 2}, o in {0..3}, y = sin x + u/2 - 0.3 o + 0.2 N(0, 1), seed n.
Usage: .venv/bin/python python/bench_mixed.py [--markdown docs/results/mixed.md]
"""
import argparse
import os
import shlex
import sys
import time

import numpy as np
from statsmodels.nonparametric.kernel_density import KDEMultivariate
from statsmodels.nonparametric.kernel_regression import KernelReg

# The installed package, not the source folder beside this script (python/kernelformer).
_here = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]
import kernelformer as kf  # noqa: E402


def data(n):
    r = np.random.default_rng(n)
    x, u, o = r.uniform(0, 4, n), r.integers(0, 3, n), r.integers(0, 4, n)
    y = np.sin(x) + 0.5 * u - 0.3 * o + 0.2 * r.normal(size=n)
    return np.c_[x, u, o].astype(float), y


def timed(f, reps=1):
    best, out = float("inf"), None
    for _ in range(reps):
        t = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t)
    return best, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--markdown")
    a = ap.parse_args()
    cmd = shlex.join([os.path.relpath(sys.executable), *sys.argv])
    head = [f"# bench_mixed.py on {os.cpu_count()} cores", f"`{cmd}`"]
    print("\n".join(head))
    rows = []
    bw = [0.3, 0.2, 0.4]
    for n in (2000, 10000):  # the fit at given bandwidths, 1,000 predictions
        X, y = data(n)
        q = X[:1000]
        t_sm, f_sm = timed(lambda: KernelReg(y, X, var_type="cuo", reg_type="lc", bw=bw).fit(q)[0])
        t_kf, f_kf = timed(lambda: kf.MixedNadarayaWatsonRegressor(
            var_type="cuo", bandwidth=bw).fit(X, y).predict(q), 3)
        rows.append(("regression fit, given h", n, t_kf, t_sm,
                     f"{np.abs(f_kf - f_sm).max():.1e}"))
        t_sm, d_sm = timed(lambda: KDEMultivariate(X, var_type="cuo", bw=bw).pdf(q))
        t_kf, d_kf = timed(lambda: kf.MixedKernelDensity(var_type="cuo", bandwidth=bw).fit(X)
                           .density(q), 3)
        rows.append(("density, given h", n, t_kf, t_sm,
                     f"{np.abs(d_kf / d_sm - 1).max():.1e}"))
    for n in (300, 1000):  # the searches
        X, y = data(n)
        t_sm, sm = timed(lambda: KernelReg(y, X, var_type="cuo", reg_type="lc", bw="cv_ls"))
        t_kf, m = timed(lambda: kf.MixedNadarayaWatsonRegressor(var_type="cuo").fit(X, y))
        sm_value = float(np.squeeze(sm.cv_loo(sm.bw, sm.est[sm.reg_type])))  # its objective
        rows.append(("cv_ls search", n, t_kf, t_sm,
                     f"cv_ls kf {m.criterion_:.6g}, statsmodels {sm_value:.6g}"))
        t_sm, smd = timed(lambda: KDEMultivariate(X, var_type="cuo", bw="cv_ml"))
        t_kf, md = timed(lambda: kf.MixedKernelDensity(var_type="cuo").fit(X))
        smd_value = float(np.squeeze(smd.loo_likelihood(smd.bw, func=np.log)))
        rows.append(("cv_ml search", n, t_kf, t_sm,
                     f"cv_ml kf {md.criterion_:.6g}, statsmodels {smd_value:.6g} (its bw "
                     f"{np.array2string(np.asarray(smd.bw), precision=3)})"))
    cols = ("what", "n", "kf s", "statsmodels s", "statsmodels / kf", "agreement")
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for what, n, tk, ts, agree in rows:
        lines.append(f"| {what} | {n} | {tk:.3f} | {ts:.3f} | {ts / tk:.1f} | {agree} |")
    notes = ("kf: best of 3 for the given-bandwidth fits, one run for the searches; statsmodels: one "
             "run. Agreement: the largest difference of the fits (regression) or relative "
             "difference of the densities; for the searches, each criterion at its own optimum "
             "(lower is better; statsmodels' unbounded optimizer may leave the lambdas' ranges).")
    print("\n".join(lines) + "\n\n" + notes)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("\n\n".join(head) + "\n\n" + "\n".join(lines) + "\n\n" + notes + "\n")


if __name__ == "__main__":
    main()
