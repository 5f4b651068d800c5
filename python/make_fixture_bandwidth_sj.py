#!/usr/bin/python3
"""Parity fixtures for the Sheather-Jones bandwidths: R's bw.SJ (Debian's r-base-core) on real
data, both methods, at R's default tolerance and at a tight one.

Writes tests/fixtures/sj_<name>.npy (float64): the data, and tests/fixtures/sj_reference.npy,
one row per data set in the order of NAMES:
  [bw.SJ(x) (ste, tol = 0.1 lower), bw.SJ(x, tol = 1e-12) (the equation's root),
   bw.SJ(x, method = "dpi")]
Data (R's datasets package): faithful$eruptions (272: every pair counted), precip (70),
rivers (141), quakes$mag (1000: binned first, n > nb/2), and 5000 draws of a normal mixture
written here (seed 7) — the binned path at a larger n.
Run: bash scripts/install_deps.sh r && /usr/bin/python3 python/make_fixture_bandwidth_sj.py
"""
import os
import subprocess
import tempfile

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")
NAMES = ["eruptions", "precip", "rivers", "quakes_mag", "mixture"]
R_DATA = {"eruptions": "faithful$eruptions", "precip": "as.numeric(precip)",
          "rivers": "as.numeric(rivers)", "quakes_mag": "quakes$mag"}


def main():
    rng = np.random.RandomState(7)
    mixture = np.concatenate([rng.normal(0, 1, 3500), rng.normal(3, 0.5, 1500)])
    with tempfile.TemporaryDirectory() as tmp:
        for name in NAMES:
            path = os.path.join(tmp, name + ".txt")
            if name in R_DATA:
                subprocess.run(["Rscript", "-e", f"write(sprintf('%.17g', {R_DATA[name]}), "
                                f"'{path}', ncolumns = 1)"], check=True)
            else:
                np.savetxt(path, mixture, fmt="%.17g")
        rows = []
        for name in NAMES:
            path = os.path.join(tmp, name + ".txt")
            code = (f"x <- scan('{path}', quiet = TRUE); cat(sprintf('%.17g', c(bw.SJ(x), "
                    f"bw.SJ(x, tol = 1e-12), bw.SJ(x, method = 'dpi'))))")
            out = subprocess.run(["Rscript", "-e", code], check=True, capture_output=True,
                                 text=True).stdout.split()
            rows.append([float(v) for v in out])
            np.save(os.path.join(OUT, f"sj_{name}.npy"), np.loadtxt(path))
            print(name, rows[-1])
    np.save(os.path.join(OUT, "sj_reference.npy"), np.array(rows, dtype=np.float64))


if __name__ == "__main__":
    main()
