#!/usr/bin/python3
"""Parity fixtures for 2-D kernel density estimation, from statsmodels' KDEMultivariate (Debian
python3-statsmodels; product Gaussian kernel, which is kf's radial Gaussian with per-column
bandwidths).

Writes tests/fixtures/kde2_*.npy (float64, small):
  kde2_x        150 points: a correlated normal mixture (seed 3)
  kde2_at       25 evaluation points (a 5 x 5 grid over and beyond the data)
  kde2_bw_fixed the fixed bandwidths (0.3, 0.5) and kde2_pdf_fixed KDEMultivariate.pdf at kde2_at
  kde2_bw_cvml  KDEMultivariate(bw='cv_ml').bw and kde2_loo_cvml its objective there:
                L = Σ_i log Σ_{j≠i} K_h(x_i − x_j) / (h₁h₂) — statsmodels' leave-one-out
                likelihood, which leaves out the 1/(n − 1): −mean log f̂₋ᵢ = −(L − n log(n − 1))/n
Run: /usr/bin/python3 python/make_fixture_kde2d.py
"""
import os

import numpy as np
from statsmodels.nonparametric.kernel_density import KDEMultivariate

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")


def save(name, arr):
    np.save(os.path.join(OUT, name + ".npy"), np.asarray(arr, dtype=np.float64))


def main():
    rng = np.random.RandomState(3)
    a = rng.multivariate_normal([0, 0], [[1, 0.6], [0.6, 1]], 100)
    b = rng.multivariate_normal([2.5, -1], [[0.3, 0], [0, 0.5]], 50)
    x = np.vstack([a, b])
    g0, g1 = np.meshgrid(np.linspace(-3, 4, 5), np.linspace(-3, 3, 5), indexing="ij")
    at = np.c_[g0.ravel(), g1.ravel()]
    save("kde2_x", x)
    save("kde2_at", at)
    fixed = KDEMultivariate(x, var_type="cc", bw=[0.3, 0.5])
    save("kde2_bw_fixed", fixed.bw)
    save("kde2_pdf_fixed", fixed.pdf(at))
    cv = KDEMultivariate(x, var_type="cc", bw="cv_ml")
    save("kde2_bw_cvml", cv.bw)
    # loo_likelihood returns −L.
    save("kde2_loo_cvml", [-cv.loo_likelihood(cv.bw, func=np.log)])


if __name__ == "__main__":
    main()
