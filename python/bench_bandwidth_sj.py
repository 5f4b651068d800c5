#!/usr/bin/python3
"""Sheather-Jones bandwidths: kf (kernelformer.bandwidth_sheather_jones, the library call
`kf kde --bandwidth sj` makes) against R's bw.SJ on the same data, in one run, both methods.

Data: n draws of a normal mixture (0.7 N(0, 1) + 0.3 N(3, 0.5^2), seed 7), n = 10^5 and 10^6
by default. R reads the same values (a binary file) and times bw.SJ alone with system.time;
kf is timed around the call alone. Both: median of --repeats runs. Prints the bandwidths (they
agree to rounding) and the time ratio R / kf.

Usage: bash scripts/install_deps.sh r python && .venv/bin/python python/bench_bandwidth_sj.py \\
           [--sizes 100000,1000000] [--repeats 3]
"""
import argparse
import os
import statistics
import subprocess
import tempfile
import time

import sys

import numpy as np

# the installed package, not the source folder this script sits in
_here = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]
import kernelformer._kernelformer as _kf  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    rng = np.random.RandomState(7)
    print(f"{'n':>9} {'method':>6} {'kf h':>14} {'R h':>14} {'kf s':>8} {'R s':>8} {'R/kf':>6}")
    for n in (int(s) for s in a.sizes.split(",")):
        k = int(0.7 * n)
        x = np.concatenate([rng.normal(0, 1, k), rng.normal(3, 0.5, n - k)])
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "x.bin")
            x.astype("<f8").tofile(path)
            for method in ("ste", "dpi"):
                times, h = [], 0.0
                for _ in range(a.repeats):
                    t0 = time.perf_counter()
                    h = _kf.bandwidth_sheather_jones(x, dpi=method == "dpi")
                    times.append(time.perf_counter() - t0)
                code = (f"x <- readBin('{path}', 'double', {n}); t <- c(); "
                        f"for (i in 1:{a.repeats}) t <- c(t, system.time(h <- bw.SJ(x, method = "
                        f"'{method}'))[['elapsed']]); cat(sprintf('%.17g %.6f', h, median(t)))")
                out = subprocess.run(["Rscript", "-e", code], check=True, capture_output=True,
                                     text=True).stdout.split()
                rh, rt = float(out[0]), float(out[1])
                kt = statistics.median(times)
                print(f"{n:>9} {method:>6} {h:>14.10g} {rh:>14.10g} {kt:>8.4f} {rt:>8.4f} "
                      f"{rt / kt if kt > 0 else float('inf'):>6.1f}", flush=True)


if __name__ == "__main__":
    main()
