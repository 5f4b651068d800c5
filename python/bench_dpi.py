#!/usr/bin/python3
"""The direct plug-in bandwidth of local-linear regression (--bandwidth dpi) against R's
KernSmooth::dpill, side by side on the same data: y = sin(2 pi x) + 0.3 N(0, 1), x ~ U(0, 1),
n = 10^4, 10^5, 10^6. R's time is dpill's own (system.time around the call, the data already
read); kf's is one bandwidth_dpi call from Python (the sort included), and Silverman's rule of
the same data for scale. Prints the bandwidths, their relative difference and the times.

Usage: bash scripts/install_deps.sh r python && .venv/bin/python python/bench_dpi.py [--reps 3]
       (the package installed in .venv: bash scripts/test_python.sh)
"""
import argparse
import os
import subprocess
import tempfile
import time

import sys

import numpy as np

# The installed package, not the source folder beside this script (python/kernelformer).
_here = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]
import kernelformer._kernelformer as _kf  # noqa: E402

R_CODE = r"""
suppressPackageStartupMessages(library(KernSmooth))
args <- commandArgs(trailingOnly = TRUE)
n <- as.integer(args[3]); reps <- as.integer(args[4])
x <- readBin(args[1], "double", n); y <- readBin(args[2], "double", n)
best <- Inf
for (r in seq_len(reps)) { t <- system.time(h <- dpill(x, y))[["elapsed"]]; best <- min(best, t) }
cat(sprintf("%.17g %.6f\n", h, best))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="kf_dpi_")
    rfile = os.path.join(work, "dpill.R")
    with open(rfile, "w") as f:
        f.write(R_CODE)
    print(f"{'n':>9s} {'h (R dpill)':>20s} {'h (kf dpi)':>20s} {'rel diff':>9s} {'R s':>8s} "
          f"{'kf s':>8s} {'R / kf':>7s} {'kf silverman s':>15s}")
    for n in (10_000, 100_000, 1_000_000):
        rng = np.random.default_rng(n)
        x = rng.uniform(0, 1, n)
        y = np.sin(2 * np.pi * x) + 0.3 * rng.standard_normal(n)
        xf, yf = os.path.join(work, "x.bin"), os.path.join(work, "y.bin")
        x.tofile(xf)
        y.tofile(yf)
        out = subprocess.run(["Rscript", rfile, xf, yf, str(n), str(a.reps)], check=True,
                             capture_output=True, text=True).stdout.split()
        h_r, t_r = float(out[0]), float(out[1])
        t_kf, t_rule = float("inf"), float("inf")
        for _ in range(a.reps):
            t0 = time.perf_counter()
            h_kf = _kf.bandwidth_dpi(x, y)
            t_kf = min(t_kf, time.perf_counter() - t0)
            t0 = time.perf_counter()
            _kf.bandwidth_rule(x[:, None], _kf.BandwidthCriterion.silverman)
            t_rule = min(t_rule, time.perf_counter() - t0)
        print(f"{n:9d} {h_r:20.17g} {h_kf:20.17g} {abs(h_kf - h_r) / h_r:9.1e} {t_r:8.3f} "
              f"{t_kf:8.4f} {t_r / t_kf:7.1f} {t_rule:15.4f}", flush=True)


if __name__ == "__main__":
    main()
