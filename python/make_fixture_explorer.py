#!/usr/bin/python3
"""Golden fixture for the explorer (`kf serve`): the Nadaraya-Watson curve the page shows for the
seed-001 preset, computed here with numpy alone.

Data: seed 001's 40 points (np.random.seed(42); x = uniform(0, 6, 40); y = 2 sin x + normal(40)).
Queries: the page's grid, 200 evenly spaced points of [0, 6]. Weights, rows normalized:
  gaussian      K = exp(-(g - x)^2 / (2 h^2)),  h = 0.3162 (the preset; rbf gamma = 5 is h = 1/sqrt(10))
  epanechnikov  K = max(0, 1 - ((g - x) / h)^2), h = 0.2 (7 queries with no point inside: null)

Writes tests/fixtures/explorer_seed001_nw.json; tests/web/explorer.test.mjs compares the curve on
the page with it. Run with Debian's python:
    /usr/bin/python3 python/make_fixture_explorer.py
"""
import json
import os

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "tests", "fixtures", "explorer_seed001_nw.json")


def nw(grid, x, y, weight):
    k = weight(grid[:, None] - x[None, :])
    s = k.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        fit = (k @ y) / s
    return [None if t == 0 else float(f"{v:.10g}") for v, t in zip(fit, s)]


def main():
    np.random.seed(42)
    x = np.random.uniform(0, 6, 40)
    y = 2 * np.sin(x) + np.random.normal(size=40)
    grid = np.linspace(0, 6, 200)
    h_g, h_e = 0.3162, 0.2
    out = {
        "about": "python/make_fixture_explorer.py: NW on seed 001's 40 points at the explorer's grid",
        "grid": [float(f"{g:.10g}") for g in grid],
        "curves": [
            {"kernel": "gaussian", "bandwidth": h_g,
             "nw": nw(grid, x, y, lambda d: np.exp(-d * d / (2 * h_g * h_g)))},
            {"kernel": "epanechnikov", "bandwidth": h_e,
             "nw": nw(grid, x, y, lambda d: np.maximum(0.0, 1 - (d / h_e) ** 2))},
        ],
    }
    with open(OUT, "w") as f:
        json.dump(out, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {os.path.normpath(OUT)} ({os.path.getsize(OUT)} bytes)")


if __name__ == "__main__":
    main()
