#!/usr/bin/python3
"""Parity fixtures for the improved Sheather-Jones (ISJ) bandwidth of Botev, Grotowski & Kroese
(2010), as KDEpy's bw_selection.improved_sheather_jones computes it (KDEpy 1.1.12, unweighted, 1-d,
gaussian kernel). docs/notes/isj_algorithm.md gives every step; this file is an independent
numpy/scipy re-implementation of those steps (KDEpy itself cannot be installed here).

Writes tests/fixtures/isj_cases.json: the conventions (grid size, extension rule, ell, the root
search's brackets and scipy.optimize.brentq's tolerances), the published values of KDEpy's
doctests that this oracle reproduces, and one entry per data set with
  "x": the data, in the order given;
  "h": the bandwidth sqrt(t_star) * (max(x) - min(x));
  "t_star": the root of t = xi gamma^[5](t) (grid units, the grid's length being 1);
  "lo", "hi", "grid": the equidistant grid's end points and number of points;
  "n_unique": the number of distinct values (KDEpy's N);
  "bracket": the upper end of the bracket [0, bracket] in which brentq found the root;
  "t_star_longdouble", "h_longdouble": the same computation with the fixed-point sums in numpy's
    long double, as KDEpy runs where scipy still exports float128 (SciPy 1.10 here does).
Every number is a double printed with repr (it parses back to the same double).
Data: R's faithful eruptions and waiting, MASS's geyser duration, and, drawn here from
np.random.RandomState with fixed seeds: a bimodal normal mixture (n = 1000), a standard normal
(n = 500), a lognormal (n = 300), Marron & Wand's claw (n = 1000), the eruptions scaled by 100
(the grid's extension then the relative one, not the absolute 6) and a small sample (n = 20)
whose root needs the bracket widened many times.
"errors": inputs on which KDEpy raises ValueError (no root in any bracket below 1).
Run: /usr/bin/python3 python/make_fixture_isj.py   (needs R with MASS: r-base-core r-cran-mass)
"""
import io
import json
import math
import os
import subprocess

import numpy as np
import scipy
from scipy import fftpack
from scipy.optimize import brentq

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")
JSON_PATH = os.path.join(OUT, "isj_cases.json")

GRID = 2**10  # grid points (KDEpy: n = 2**10)
BOUNDARY_REL = 0.5  # the grid reaches max(0.5 * range, 6) beyond the data on each side
BOUNDARY_ABS = 6.0
ELL = 7  # stages of the fixed point: |f^(7)|^2 first, then s = 6, 5, 4, 3, 2
N_MIN, N_MAX = 50, 1050  # the number of distinct values is clamped to this for the bracket
BRACKET_TOL0 = 10e-12  # the first bracket's upper end: 10e-12 + 0.01 (N - 50) / 1000
BRENTQ_XTOL, BRENTQ_RTOL, BRENTQ_MAXITER = 2e-12, 4 * np.finfo(float).eps, 100  # brentq defaults


def grid_ends(x):
    """The grid's end points: KDEpy's autogrid(boundary_abs=6, boundary_rel=0.5)."""
    lo, hi = float(np.min(x)), float(np.max(x))
    beyond = max(BOUNDARY_REL * (hi - lo), BOUNDARY_ABS)
    return lo - beyond, hi + beyond


def linear_binning(x, lo, hi, grid):
    """Each point's unit mass split between its two grid neighbours in proportion to proximity,
    accumulated point by point in input order (as KDEpy's Cython loop), then divided by n."""
    dx = (hi - lo) / (grid - 1)
    counts = np.zeros(grid + 1)
    for s in (np.asarray(x, dtype=float) - lo) / dx:
        i = int(math.floor(s))
        frac = s - i
        counts[i] += 1 - frac
        counts[i + 1] += frac
    return counts[:-1] / len(x)


def fixed_point(t, n_unique, i_sq, a2):
    """t - xi gamma^[ell](t): the functional |f^(ell)|^2 at t, then ell - 2 = 5 plug-in stages down
    to |f''|^2, whose AMISE-optimal time is returned subtracted from t."""
    ftype = a2.dtype
    f = 0.5 * np.pi ** (2 * ELL) * np.sum(i_sq**ELL * a2 * np.exp(-i_sq * np.pi**2 * t))
    if f <= 0:
        return -1
    for s in range(ELL - 1, 1, -1):
        odd_prod = np.prod(np.arange(1, 2 * s + 1, 2, dtype=ftype))  # 1 * 3 * ... * (2s - 1)
        k0 = odd_prod / np.sqrt(2 * np.pi)
        const = (1 + (1 / 2) ** (s + 1 / 2)) / 3
        time = np.power(2 * const * k0 / (n_unique * f), 2.0 / (3.0 + 2.0 * s))
        f = 0.5 * np.pi ** (2 * s) * np.sum(i_sq**s * a2 * np.exp(-i_sq * np.pi**2 * time))
    return t - np.power(2 * n_unique * np.sqrt(np.pi) * f, -2.0 / 5)


def root(n_unique, i_sq, a2):
    """brentq on [0, b], b doubled until f changes sign on it; ValueError once b reaches 1."""
    n = max(min(N_MAX, n_unique), N_MIN)
    b = BRACKET_TOL0 + 0.01 * (n - N_MIN) / 1000
    while True:
        try:
            t, res = brentq(fixed_point, 0, b, args=(n_unique, i_sq, a2), xtol=BRENTQ_XTOL,
                            rtol=BRENTQ_RTOL, maxiter=BRENTQ_MAXITER, full_output=True, disp=False)
            if res.converged and t > 0:
                return t, b
            raise RuntimeError("brentq did not converge (KDEpy would retry forever)")
        except ValueError:
            b *= 2.0
        if b >= 1:
            raise ValueError("Root finding did not converge. Need more data.")


def isj(x, ftype=np.float64):
    x = np.asarray(x, dtype=float)
    if not np.all(np.isfinite(x)):
        raise ValueError("array must not contain infs or NaNs")
    lo, hi = grid_ends(x)
    binned = linear_binning(x, lo, hi, GRID)
    a = fftpack.dct(binned)  # type II, unnormalized: 2 sum_j v_j cos(pi k (2j + 1) / (2 GRID))
    i_sq = np.power(np.arange(1, GRID, dtype=ftype), 2)
    a2 = np.asarray(a[1:], dtype=ftype) ** 2
    n_unique = len(np.unique(x))
    t_star, bracket = root(n_unique, i_sq, a2)
    h = math.sqrt(t_star) * (float(np.max(x)) - float(np.min(x)))
    return dict(h=h, t_star=t_star, lo=lo, hi=hi, grid=GRID, n_unique=n_unique, bracket=bracket)


def doctest_checks():
    """KDEpy's docstrings publish three numbers "from the matlab code" (after its 2020 change of
    the functional's factor to 0.5): two values of _fixed_point and one root."""
    ints = np.arange(1, 51)
    out = []
    for args, want in [((0.01, 50, np.arange(1, 51), np.arange(1, 51)), 0.0099076220293967618515),
                       ((0.07, 25, np.arange(1, 11), np.arange(1, 11)), 0.068342291525717486795)]:
        t, n, i_sq, a2 = args
        got = float(fixed_point(t, n, np.asarray(i_sq, float), np.asarray(a2, float)))
        out.append({"what": "_fixed_point(%r, %r, arange(1, %d), arange(1, %d))"
                    % (t, n, len(i_sq) + 1, len(a2) + 1), "published": want, "oracle": got})
    got, _ = root(50, ints.astype(float), ints.astype(float))
    out.append({"what": "_root(_fixed_point, N=50, args=(50, arange(1, 51), arange(1, 51)))",
                "published": 9.237610787616029e-05, "oracle": got})
    for c in out:
        c["relative_difference"] = abs(c["oracle"] - c["published"]) / abs(c["published"])
        assert c["relative_difference"] < 1e-9, c
    return out


def r_column(expr):
    text = subprocess.run(["Rscript", "-e", "write.csv(data.frame(v = %s), row.names = FALSE)"
                           % expr], check=True, capture_output=True, text=True).stdout
    return [float(v) for v in text.split()[1:]]


def cases():
    rng = np.random.RandomState
    bimodal = rng(11)
    comp = bimodal.rand(1000) < 0.4
    bimodal_x = np.where(comp, bimodal.normal(-2, 0.5, 1000), bimodal.normal(2, 1, 1000))
    claw = rng(14)
    which = claw.randint(0, 2, 1000)  # half N(0, 1), half the five narrow claws
    finger = claw.randint(0, 5, 1000)
    claw_x = np.where(which == 0, claw.normal(0, 1, 1000),
                      claw.normal(finger / 2 - 1, 0.1, 1000))
    eruptions = r_column("faithful$eruptions")
    return [
        ("faithful_eruptions", eruptions, "R datasets::faithful$eruptions (272)"),
        ("faithful_waiting", r_column("faithful$waiting"), "R datasets::faithful$waiting (272)"),
        ("geyser_duration", r_column("MASS::geyser$duration"), "R MASS::geyser$duration (299)"),
        ("bimodal1000", bimodal_x,
         "RandomState(11): u = rand(1000) < 0.4; where(u, N(-2, 0.5^2), N(2, 1)) (1000)"),
        ("normal500", rng(12).normal(size=500), "RandomState(12).normal(size=500)"),
        ("lognormal300", rng(13).lognormal(size=300), "RandomState(13).lognormal(size=300)"),
        ("claw1000", claw_x, "RandomState(14): Marron-Wand claw, 1/2 N(0,1) + 1/10 sum_l "
                             "N(l/2 - 1, 0.1^2), l = 0..4 (1000)"),
        ("eruptions_x100", [100 * v for v in eruptions],
         "100 * faithful$eruptions: range >= 12, the relative extension"),
        ("normal20", rng(15).normal(size=20), "RandomState(15).normal(size=20): wide bracket"),
    ]


def main():
    checks = doctest_checks()
    out_cases = []
    for name, x, source in cases():
        x = [float(v) for v in x]
        r = isj(x)
        ld = isj(x, np.longdouble)
        r["t_star_longdouble"] = float(ld["t_star"])
        r["h_longdouble"] = ld["h"]
        rel = abs(ld["h"] - r["h"]) / r["h"]
        print("%-20s n=%4d unique=%4d h=%.17g t*=%.6g bracket=%.3g  |h_ld/h - 1|=%.1e"
              % (name, len(x), r["n_unique"], r["h"], r["t_star"], r["bracket"], rel))
        out_cases.append(dict(name=name, source=source, x=x, **r))
    errors = []
    for name, x, why in [("two_points", [0.0, 1.0], "two distinct points"),
                         ("tied", [0.0, 0.0, 0.0, 1.0], "two distinct values among four"),
                         ("normal3", [float(v) for v in np.random.RandomState(53).normal(size=3)],
                          "RandomState(53).normal(size=3)")]:
        try:
            isj(x)
            raise AssertionError(name + " was expected to fail")
        except ValueError as e:
            errors.append(dict(name=name, x=x, why=why, kdepy_error=str(e)))
    doc = {
        "algorithm": "KDEpy 1.1.12 bw_selection.improved_sheather_jones, unweighted "
                     "(docs/notes/isj_algorithm.md)",
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "conventions": {
            "grid": GRID, "boundary_rel": BOUNDARY_REL, "boundary_abs": BOUNDARY_ABS, "ell": ELL,
            "n_clamp": [N_MIN, N_MAX], "bracket_tol0": BRACKET_TOL0,
            "brentq": {"xtol": BRENTQ_XTOL, "rtol": BRENTQ_RTOL, "maxiter": BRENTQ_MAXITER},
            "binning": "linear, in input order, divided by n",
            "dct": "scipy.fftpack.dct type II, norm=None",
            "h": "sqrt(t_star) * (max(x) - min(x))  (the data's range, not the grid's)",
        },
        "published_checks": checks,
        "cases": out_cases,
        "errors": errors,
    }
    buf = io.StringIO()
    json.dump(doc, buf, indent=1)
    with open(JSON_PATH, "w") as f:
        f.write(buf.getvalue() + "\n")
    print("wrote", JSON_PATH)


if __name__ == "__main__":
    main()
