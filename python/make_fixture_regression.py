#!/usr/bin/python3
"""Parity fixtures for kernel regression and density, from statsmodels (Debian python3-statsmodels).

Writes tests/fixtures/reg_*.npy (float64, small):
  reg_x, reg_y                 100 points, x ~ U(0, 10), y = sin(x) + 0.3 N(0, 1)   (seed 0)
  reg_grid_h                   a bandwidth grid
  reg_cv_lc, reg_cv_ll         statsmodels KernelReg.cv_loo on that grid (local constant / linear)
  reg_bw_lc, reg_bw_ll         statsmodels' bw='cv_ls' choice, and reg_cvbw_lc / reg_cvbw_ll its
                               objective value
  reg_pred_x, reg_pred_lc, reg_pred_ll   predictions at fixed h = 0.6
  reg2_x, reg2_y, reg2_h, reg2_cv, reg2_bw, reg2_cvbw   the same for 2-D x (local constant)
  kde_x, kde_at, kde_bw, kde_f KDEUnivariate(kernel='gau', bw='silverman', fft=False)
Run: /usr/bin/python3 python/make_fixture_regression.py   (takes about a minute)
"""
import os

import numpy as np
from statsmodels.nonparametric.kde import KDEUnivariate
from statsmodels.nonparametric.kernel_regression import KernelReg

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")


def save(name, arr):
    np.save(os.path.join(OUT, name + ".npy"), np.asarray(arr, dtype=np.float64))


def main():
    rng = np.random.RandomState(0)
    x = rng.uniform(0, 10, 100)
    y = np.sin(x) + 0.3 * rng.normal(size=100)
    save("reg_x", x)
    save("reg_y", y)
    grid = np.logspace(-1.3, 0.5, 7)
    save("reg_grid_h", grid)
    for reg in ("lc", "ll"):
        kr = KernelReg(y, x, var_type="c", reg_type=reg, bw=[1.0])
        func = kr._est_loc_constant if reg == "lc" else kr._est_loc_linear
        save(f"reg_cv_{reg}", [kr.cv_loo(np.array([h]), func) for h in grid])
        chosen = KernelReg(y, x, var_type="c", reg_type=reg, bw="cv_ls")
        save(f"reg_bw_{reg}", chosen.bw)
        save(f"reg_cvbw_{reg}", [kr.cv_loo(np.asarray(chosen.bw), func)])
        fixed = KernelReg(y, x, var_type="c", reg_type=reg, bw=[0.6])
        px = np.linspace(-0.5, 10.5, 23)
        save("reg_pred_x", px)
        save(f"reg_pred_{reg}", fixed.fit(px)[0])

    rng = np.random.RandomState(1)
    x2 = rng.uniform(-2, 2, (80, 2))
    y2 = np.sin(x2[:, 0]) * np.cos(x2[:, 1]) + 0.2 * rng.normal(size=80)
    save("reg2_x", x2)
    save("reg2_y", y2)
    hs = np.array([[0.3, 0.5], [0.5, 0.5], [0.8, 0.4]])
    kr2 = KernelReg(y2, x2, var_type="cc", reg_type="lc", bw=[1.0, 1.0])
    save("reg2_h", hs)
    save("reg2_cv", [kr2.cv_loo(h, kr2._est_loc_constant) for h in hs])
    chosen2 = KernelReg(y2, x2, var_type="cc", reg_type="lc", bw="cv_ls")
    save("reg2_bw", chosen2.bw)
    save("reg2_cvbw", [kr2.cv_loo(np.asarray(chosen2.bw), kr2._est_loc_constant)])

    rng = np.random.RandomState(2)
    xk = np.concatenate([rng.normal(0, 1, 150), rng.normal(4, 0.5, 50)])
    kde = KDEUnivariate(xk)
    kde.fit(kernel="gau", bw="silverman", fft=False)
    at = np.linspace(-4, 7, 45)
    save("kde_x", xk)
    save("kde_at", at)
    save("kde_bw", [kde.bw])
    save("kde_f", kde.evaluate(at))
    print("statsmodels cv_ls bandwidths: lc", KernelReg(y, x, "c", "lc", bw="cv_ls").bw,
          "2-D", chosen2.bw, "; kde silverman", kde.bw)


if __name__ == "__main__":
    main()
