#!/usr/bin/python3
"""Local polynomial derivative estimation: kf (LocalPolynomialRegressor(degree=2, derivative=1))
against R's KernSmooth::locpoly(drv = 1, degree = 2) at the same bandwidth, side by side on the
same data, and kf's own bandwidth search (bandwidth="cv") for information.

Data: x ~ U(0, 10), y = sin(x) + 0.3 N(0, 1), n = 10^5 and 10^6 (seed n); the derivative is
cos(x). Bandwidth H = 0.25 (--bandwidth), gaussian kernel (R's dnorm scale; kf's gaussian
exp(-d^2 / (2 h^2)) is the same h).
R: locpoly(x, y, drv = 1L, degree = 2, bandwidth = H, gridsize = 401L, truncate = FALSE), timed
inside R (system.time around the call alone; the data passed as raw doubles written by numpy
and read before timing); truncate = FALSE keeps the largest x in the binning, as kf's binning
does (python/make_fixture_local_poly.py). Its estimates are on its own grid, 401 points over
[min x, max x].
kf: fit + predict at exactly R's 401 grid points, timed from Python (the fit's diagnostics
included: df, RSS, leave-one-out residuals of the degree-2 fit of the function); fit and
predict also apart.
Each time is the best of --reps runs. Prints the relative difference max|kf - R| / max|R| on the
grid, the same against R's locpoly binned 10 times finer (gridsize = 4001, untimed, read at the
same 401 points: how much of the difference is R's 401-bin binning) and each estimate's largest
error against cos(x) there.

Usage: bash scripts/install_deps.sh r python && .venv/bin/python python/bench_local_poly.py \\
           [--reps 3] [--bandwidth 0.25] [--markdown docs/results/local_poly.md]
"""
import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

import numpy as np

# The installed package, not the source folder beside this script (python/kernelformer).
_here = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]
import kernelformer as kf  # noqa: E402

GRIDSIZE = 401
FINE = 4001  # R again on a 10x finer grid (untimed): every 10th node is one of the 401
R_CODE = r"""
suppressPackageStartupMessages(library(KernSmooth))
args <- commandArgs(trailingOnly = TRUE)
n <- as.integer(args[3]); h <- as.numeric(args[4]); reps <- as.integer(args[5])
x <- readBin(args[1], "double", n); y <- readBin(args[2], "double", n)
best <- Inf
for (r in seq_len(reps)) {
  t <- system.time(f <- locpoly(x, y, drv = 1L, degree = 2, bandwidth = h,
                                gridsize = %dL, truncate = FALSE))[["elapsed"]]
  best <- min(best, t)
}
writeBin(as.double(f$x), args[6]); writeBin(as.double(f$y), args[7])
fine <- locpoly(x, y, drv = 1L, degree = 2, bandwidth = h, gridsize = %dL, truncate = FALSE)
writeBin(as.double(fine$y[seq(1L, %dL, by = %dL)]), args[8])
cat(sprintf("%%.6f\n", best))
""" % (GRIDSIZE, FINE, FINE, FINE // (GRIDSIZE - 1))


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


def r_locpoly(x, y, h, reps, work):
    """The best time of the call, R's grid, its estimates there, and the estimates of the
    finer-binned call at the same points."""
    rfile, xf, yf, gx, gy, gf = (os.path.join(work, f) for f in
                                 ("locpoly.R", "x.bin", "y.bin", "gx.bin", "gy.bin", "gf.bin"))
    with open(rfile, "w") as f:
        f.write(R_CODE)
    x.astype("<f8").tofile(xf)
    y.astype("<f8").tofile(yf)
    out = subprocess.run(["Rscript", rfile, xf, yf, str(x.size), repr(h), str(reps), gx, gy, gf],
                         check=True, capture_output=True, text=True).stdout.split()
    return (float(out[-1]),) + tuple(np.fromfile(f, dtype="<f8") for f in (gx, gy, gf))


def kf_derivative(X, y, bandwidth, grid, reps):
    """Best times of fit, predict and fit + predict over reps runs; the last fit and estimates."""
    t_fit = t_pred = t_all = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        m = kf.LocalPolynomialRegressor(degree=2, derivative=1, bandwidth=bandwidth).fit(X, y)
        t1 = time.perf_counter()
        est = m.predict(grid[:, None])
        t2 = time.perf_counter()
        t_fit, t_pred, t_all = min(t_fit, t1 - t0), min(t_pred, t2 - t1), min(t_all, t2 - t0)
    return t_all, t_fit, t_pred, m, est


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--bandwidth", type=float, default=0.25)
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--cv-size", type=int, default=100_000, help="n of the bandwidth='cv' row "
                    "(0: none)")
    ap.add_argument("--markdown", help="also write the table here")
    a = ap.parse_args()
    head = [f"# bench_local_poly.py on {machine()}", f"`{command()}`"]
    print("\n".join(head))
    cols = ("n", "bandwidth", "kf s", "kf fit s", "kf predict s", "R locpoly s", "R / kf",
            "max|kf - R| / max|R|", f"max|kf - R{FINE}| / max|R|", "max|kf - cos|",
            "max|R - cos|")
    print(" ".join(f"{c:>{max(len(c), 9)}}" for c in cols))
    rows = []
    with tempfile.TemporaryDirectory(prefix="kf_local_poly_") as work:
        sizes = [int(s) for s in a.sizes.split(",")]
        for n in sorted(set(sizes + ([a.cv_size] if a.cv_size else []))):
            rng = np.random.default_rng(n)
            x = rng.uniform(0, 10, n)
            y = np.sin(x) + 0.3 * rng.standard_normal(n)
            X = np.ascontiguousarray(x[:, None])
            runs = ([a.bandwidth] if n in sizes else []) + (["cv"] if n == a.cv_size else [])
            grid = r_est = r_fine = t_r = None
            if n in sizes:
                t_r, grid, r_est, r_fine = r_locpoly(x, y, a.bandwidth, a.reps, work)
            else:  # R's grid, without running R
                grid = np.linspace(x.min(), x.max(), GRIDSIZE)
            truth = np.cos(grid)
            for bw in runs:
                reps = a.reps if bw != "cv" else 1
                t_kf, t_fit, t_pred, m, est = kf_derivative(X, y, bw, grid, reps)
                err_kf = np.abs(est - truth).max()
                times = [f"{t_kf:.4f}", f"{t_fit:.4f}", f"{t_pred:.4f}"]
                if bw == "cv":
                    cells = [n, f"cv: {m.bandwidth_:.4g}"] + times + ["-"] * 4 + [
                        f"{err_kf:.2e}", "-"]
                    rows.append(cells + [m.search_evaluations_])
                else:
                    scale = np.abs(r_est).max()
                    rel = np.abs(est - r_est).max() / scale
                    rel_fine = np.abs(est - r_fine).max() / scale
                    cells = [n, f"{bw:g}"] + times + [f"{t_r:.4f}", f"{t_r / t_kf:.3g}",
                             f"{rel:.1e}", f"{rel_fine:.1e}", f"{err_kf:.2e}",
                             f"{np.abs(r_est - truth).max():.2e}"]
                    rows.append(cells + [None])
                print(" ".join(f"{str(c):>{max(len(h), 9)}}" for c, h in zip(cells, cols)),
                      flush=True)
    cv_evals = [r[-1] for r in rows if r[-1] is not None]
    notes = [f"Best of {a.reps} runs each (the cv row: one run). Data: x ~ U(0, 10), "
             "y = sin(x) + 0.3 N(0, 1), seed n; the true derivative cos(x).",
             "R: KernSmooth::locpoly(x, y, drv = 1L, degree = 2, bandwidth, gridsize = 401L, "
             "truncate = FALSE), timed inside R (system.time around the call; one thread). "
             "kf: LocalPolynomialRegressor(degree=2, derivative=1, bandwidth).fit(X, y) (with "
             "its diagnostics) + predict at R's 401 grid points, timed from Python "
             f"({os.cpu_count()} threads available).",
             "max|kf - R| / max|R| over the 401 grid points (both binned estimates); "
             f"R{FINE}: locpoly with gridsize = {FINE} (untimed), read at the same 401 points "
             "(its binning 10 times finer); max|. - cos| "
             "is each estimate's largest error against the true derivative on the grid (the "
             "ends of the data included, where a derivative estimate is worst)."]
    if cv_evals:
        notes.append(f"The cv row: bandwidth=\"cv\" (leave-one-out for the degree-2 fit of the "
                     f"function, {cv_evals[0]} criterion evaluations), fit + predict, for "
                     "information: R's locpoly has no bandwidth search.")
    print("\n".join(notes))
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("\n\n".join(head) + "\n\n")
            f.write("| " + " | ".join(c.replace("|", "\\|") for c in cols) + " |\n")
            f.write("|" + "---|" * len(cols) + "\n")
            for r in rows:
                f.write("| " + " | ".join(str(c) for c in r[:-1]) + " |\n")
            f.write("\n" + "\n\n".join(notes) + "\n")


if __name__ == "__main__":
    main()
