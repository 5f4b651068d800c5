#!/usr/bin/python3
"""Side by side, in one run: `kf smooth` with a leave-one-out CV bandwidth on n = 10^6 points vs
statsmodels KernelReg(bw='cv_ls') on n = 2,000 (its users' pain point: statsmodels #4187, #595).

Usage: /usr/bin/python3 python/bench_smooth_vs_statsmodels.py [--kf build/release/kf]
       [--n-kf 1000000] [--n-sm 2000] [--method nw|local-linear]
Skips (exit 0) when statsmodels is not installed. Build kf first:
    cmake --preset release && cmake --build --preset release --target kf
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np


def data(n, seed):
    rng = np.random.RandomState(seed)
    x = rng.uniform(0, 10, n)
    return x, np.sin(x) + 0.3 * rng.normal(size=n)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--kf", default=os.path.join(here, "..", "build", "release", "kf"))
    ap.add_argument("--n-kf", type=int, default=1_000_000)
    ap.add_argument("--n-sm", type=int, default=2_000)
    ap.add_argument("--method", default="nw", choices=["nw", "local-linear"])
    a = ap.parse_args()
    try:
        from statsmodels.nonparametric.kernel_regression import KernelReg
    except ImportError:
        print("statsmodels is not installed (Debian: python3-statsmodels); skipping")
        return 0
    if not os.path.exists(a.kf):
        print(f"{a.kf} not found: build it with cmake --preset release && "
              "cmake --build --preset release --target kf", file=sys.stderr)
        return 1

    with tempfile.TemporaryDirectory() as tmp:
        x, y = data(a.n_kf, 0)
        path = os.path.join(tmp, "data.csv")
        np.savetxt(path, np.c_[x, y], delimiter=",", header="x,y", comments="", fmt="%.10g")
        t0 = time.perf_counter()
        out = subprocess.run([a.kf, "smooth", path, "--method", a.method, "--bandwidth", "cv",
                              "--out", os.path.join(tmp, "fit.csv")],
                             capture_output=True, text=True, check=True).stdout
        t_kf = time.perf_counter() - t0

    x2, y2 = data(a.n_sm, 1)
    reg = "lc" if a.method == "nw" else "ll"
    t0 = time.perf_counter()
    kr = KernelReg(y2, x2, var_type="c", reg_type=reg, bw="cv_ls")
    t_sm = time.perf_counter() - t0

    print(f"{'':28}{'n':>10}{'seconds':>10}{'bandwidth':>12}")
    print(f"{'kf smooth --bandwidth cv':28}{a.n_kf:>10}{t_kf:>10.2f}"
          f"{out.split('bandwidth = ')[1].split()[0]:>12}")
    print(f"{'statsmodels cv_ls':28}{a.n_sm:>10}{t_sm:>10.2f}{kr.bw[0]:>12.6g}")
    print(f"kf handles {a.n_kf / a.n_sm:.0f}x the data in {t_kf / t_sm:.2f}x the time "
          f"({t_sm / t_kf:.1f}x faster while doing {a.n_kf / a.n_sm:.0f}x more); "
          f"kf time includes writing/reading CSV and process start.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
