#!/usr/bin/python3
"""LOWESS: kf (kernelformer.LowessRegressor, the library call `kf smooth --method lowess` makes)
against R's lowess and statsmodels' lowess on the same data, in one run.

Data: x ~ U(0, 10) sorted, y = sin(x) + 0.3 N(0, 1) with 1% gross outliers (+5), seed 3.
Settings as R's defaults (span 2/3, 3 robustness passes, delta = 1% of the range) for all three
(statsmodels' own default is delta = 0: given 1% here); `--delta0` adds a row with delta = 0 at
the smaller sizes (quadratic for all three). Each time is the median of --repeats runs of the
call alone (R: system.time around lowess; its reading of the data is not timed). Prints the
largest difference from R and the time ratios.

Usage: bash scripts/install_deps.sh r python && .venv/bin/python python/bench_lowess.py \\
           [--sizes 10000,100000,1000000] [--repeats 3] [--delta0]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

_here = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]
import kernelformer as kf  # noqa: E402
from statsmodels.nonparametric.smoothers_lowess import lowess as sm_lowess  # noqa: E402


def timed(fn, repeats):
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def r_lowess(x, y, delta, repeats, tmp):
    xf, yf, of = (os.path.join(tmp, f) for f in ("x.bin", "y.bin", "out.bin"))
    x.astype("<f8").tofile(xf)
    y.astype("<f8").tofile(yf)
    code = (f"n <- {x.size}; x <- readBin('{xf}', 'double', n); y <- readBin('{yf}', 'double', n); "
            f"t <- c(); for (i in 1:{repeats}) t <- c(t, system.time(f <- lowess(x, y, "
            f"delta = {delta!r}))[['elapsed']]); writeBin(f$y, '{of}'); cat(median(t))")
    out = subprocess.run(["Rscript", "-e", code], check=True, capture_output=True, text=True)
    return float(out.stdout.split()[-1]), np.fromfile(of, dtype="<f8")


def row(n, x, y, delta, repeats, tmp):
    X = x[:, None]
    t_kf, lo = timed(lambda: kf.LowessRegressor(delta=delta).fit(X, y), repeats)
    t_sm, sm = timed(lambda: sm_lowess(y, x, frac=2 / 3, it=3, delta=delta), repeats)
    t_r, r = r_lowess(x, y, delta, repeats, tmp)
    d_r = np.abs(lo.fitted_ - r).max()
    d_sm = np.abs(lo.fitted_ - sm[:, 1]).max()
    print(f"{n:>9} {delta:>9.3g} {lo.local_fits_:>7} {t_kf:>9.4f} {t_r:>9.4f} {t_sm:>9.4f} "
          f"{t_r / t_kf:>6.1f} {t_sm / t_kf:>6.1f} {d_r:>9.1e} {d_sm:>9.1e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--delta0", action="store_true", help="also delta = 0 at n <= 10^4")
    a = ap.parse_args()
    rng = np.random.default_rng(3)
    print(f"{'n':>9} {'delta':>9} {'fits':>7} {'kf s':>9} {'R s':>9} {'sm s':>9} {'R/kf':>6} "
          f"{'sm/kf':>6} {'|kf-R|':>9} {'|kf-sm|':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(s) for s in a.sizes.split(",")):
            x = np.sort(rng.uniform(0, 10, n))
            y = np.sin(x) + 0.3 * rng.standard_normal(n)
            y[rng.choice(n, n // 100, replace=False)] += 5.0
            row(n, x, y, 0.01 * np.ptp(x), a.repeats, tmp)
            if a.delta0 and n <= 10000:
                row(n, x, y, 0.0, a.repeats, tmp)


if __name__ == "__main__":
    main()
