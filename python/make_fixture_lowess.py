#!/usr/bin/python3
"""Parity fixtures for LOWESS: R's lowess (Debian's r-base-core) on real data and on a noisy
curve with outliers, at three settings.

Writes, for each data set <name>: tests/fixtures/lowess_<name>.npy (float64, n x 2: x, y as given)
and tests/fixtures/lowess_<name>_fit.npy (n x 3: R's fitted values, in R's order of x (stable for
ties), one column per setting of SETTINGS).
Data: R's cars (speed -> dist: 50 points, many ties), faithful (eruptions -> waiting: 272), and
300 points of sin(x) + noise with 6 gross outliers written here (seed 11).
Run: bash scripts/install_deps.sh r && /usr/bin/python3 python/make_fixture_lowess.py
"""
import os
import subprocess
import tempfile

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")
# (f, iter, delta): R's defaults (delta = 1% of the range); no robustness and no skipping; a
# small span with more robustness passes and a coarse delta.
SETTINGS = ["f = 2/3, iter = 3", "f = 0.3, iter = 0, delta = 0", "f = 0.1, iter = 5, delta = 0.05 * diff(range(x))"]
R_DATA = {"cars": ("cars$speed", "cars$dist"), "faithful": ("faithful$eruptions", "faithful$waiting")}


def main():
    rng = np.random.RandomState(11)
    x = np.sort(rng.uniform(0, 10, 300))
    y = np.sin(x) + 0.3 * rng.standard_normal(300)
    y[rng.choice(300, 6, replace=False)] += 6.0
    with tempfile.TemporaryDirectory() as tmp:
        for name in ["cars", "faithful", "outliers"]:
            path = os.path.join(tmp, name + ".csv")
            if name in R_DATA:
                xs, ys = R_DATA[name]
                subprocess.run(["Rscript", "-e", f"write.csv(data.frame(x = {xs}, y = {ys}), "
                                f"'{path}', row.names = FALSE)"], check=True)
            else:
                np.savetxt(path, np.c_[x, y], delimiter=",", header='"x","y"', comments="",
                           fmt="%.17g")
            cols = []
            for s in SETTINGS:
                code = (f"d <- read.csv('{path}'); x <- d$x; "
                        f"cat(sprintf('%.17g', lowess(x, d$y, {s})$y))")
                out = subprocess.run(["Rscript", "-e", code], check=True, capture_output=True,
                                     text=True).stdout.split()
                cols.append([float(v) for v in out])
            data = np.loadtxt(path, delimiter=",", skiprows=1)
            np.save(os.path.join(OUT, f"lowess_{name}.npy"), data)
            np.save(os.path.join(OUT, f"lowess_{name}_fit.npy"), np.array(cols).T.copy())
            print(name, data.shape)


if __name__ == "__main__":
    main()
