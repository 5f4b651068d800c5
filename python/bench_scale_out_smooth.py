#!/usr/bin/python3
"""kf smooth and kf kde under MPI on this machine: `mpirun -np 2` (one thread each) against one
process (one thread), whole commands, alternating, best of --reps; the output files compared.

  binned   10^7 points (x, y) of y = sin(x) + 0.3·ε, x ~ U(0, 10), Gaussian kernel: kf smooth
           (Nadaraya-Watson) and kf kde on the 1-D binned route, at a fixed bandwidth and with a
           bandwidth chosen by cross-validation (loo-cv, cv-ml)
  exact    10^4 points on the all-pairs route (--exact): the same, where the O(n^2) criteria
           dominate
  split    the routes that split the points as queries: knn with k by LOO-CV (sorted
           neighbors) and the sorted windows of a compact kernel (--exact, LOO-CV) at --n-query
           points; two columns z = sin(a) cos(b) + 0.2·ε: the 2-D binned grid (nw, h = 0.2;
           kde cv-ml) at --n-query points and the k-d tree (biweight local-linear, h = 0.3) at
           a tenth of them
Every rank parses its part of the CSV (its byte range) and the parts are gathered.
Each line also gives the stages one rank spent (the --summary's read / fit / predict seconds).

Usage: /usr/bin/python3 python/bench_scale_out_smooth.py [--kf build/release/kf] [--reps 2]
       [--n 10000000]
Needs a release build with MPI: cmake --preset release && cmake --build build/release --target kf
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

ENV1 = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
MPIRUN = [shutil.which("mpirun") or "mpirun", "--allow-run-as-root", "--bind-to", "none"]


def timed(cmd):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=ENV1, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {(p.stdout + p.stderr)[-400:]}")
    return time.perf_counter() - t0


def write_data(path, n, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 10, n)
    y = np.sin(x) + 0.3 * rng.normal(size=n)
    with open(path, "w") as f:
        f.write("x,y\n")
        np.savetxt(f, np.c_[x, y], delimiter=",", fmt="%.17g")


def write_plane(path, n, seed):
    rng = np.random.default_rng(seed)
    a, b = rng.uniform(0, 10, n), rng.uniform(0, 10, n)
    z = np.sin(a) * np.cos(b) + 0.2 * rng.normal(size=n)
    with open(path, "w") as f:
        f.write("a,b,z\n")
        np.savetxt(f, np.c_[a, b, z], delimiter=",", fmt="%.17g")


def max_rel(a, b):
    x = np.genfromtxt(a, delimiter=",", skip_header=1)
    y = np.genfromtxt(b, delimiter=",", skip_header=1)
    m = np.isfinite(y)
    assert x.shape == y.shape and (np.isfinite(x) == m).all()
    return float(np.abs(x[m] - y[m]).max() / np.abs(y[m]).max())


def case(kf, tmp, reps, label, args):
    times, stages, mpi = {1: [], 2: []}, {}, {}
    for _ in range(reps):  # alternating, so drift of the host hits both alike
        for n in (1, 2):
            cmd = [kf] + args + ["--quiet", "--out", f"{tmp}/out{n}.csv", "--summary",
                                 f"{tmp}/s{n}.json"]
            times[n].append(timed(cmd if n == 1 else MPIRUN + ["-np", "2"] + cmd))
            with open(f"{tmp}/s{n}.json") as f:
                js = json.load(f)
            stages[n] = js["seconds"]
            if n == 2:
                mpi = js.get("mpi", {})
    t1, t2 = min(times[1]), min(times[2])
    order = ("read", "fit", "predict", "evaluate")
    st = lambda n: " / ".join(f"{stages[n][k]:.2f}" for k in order if k in stages[n])
    print(f"| {label} | {t1:.2f} | {t2:.2f} | {t1 / t2:.2f}x | {t1 / t2 / 2:.0%} | "
          f"{st(1)} | {st(2)} | {mpi.get('bytes', 0) / 1e6:.1f} MB, "
          f"{mpi.get('seconds_in_mpi', 0):.2f} s | "
          f"{max_rel(f'{tmp}/out2.csv', f'{tmp}/out1.csv'):.1e} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--kf", default=os.path.join(here, "..", "build", "release", "kf"))
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--n", type=int, default=10**7, help="points on the binned route")
    ap.add_argument("--n-exact", type=int, default=10**4, help="points on the exact route")
    ap.add_argument("--n-query", type=int, default=10**6,
                    help="points on the routes that split the queries")
    ap.add_argument("--only", default="", help="comma-separated case numbers (1-11) to run")
    a = ap.parse_args()
    print("| case | -np 1 s | -np 2 s | speed-up | efficiency | stages -np 1 (read / fit / "
          "predict or evaluate) | stages -np 2, rank 0 | rank 0 to MPI, time in MPI | "
          "max rel. diff |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        big, small = f"{tmp}/big.csv", f"{tmp}/small.csv"
        write_data(big, a.n, 0)
        write_data(small, a.n_exact, 1)
        mid, plane, tree = f"{tmp}/mid.csv", f"{tmp}/plane.csv", f"{tmp}/tree.csv"
        write_data(mid, a.n_query, 2)
        write_plane(plane, a.n_query, 3)
        write_plane(tree, a.n_query // 10, 4)
        n, m = f"{a.n:,}", f"{a.n_exact:,}"
        q, t = f"{a.n_query:,}", f"{a.n_query // 10:,}"
        ab = ["--x", "a,b", "--y", "z"]
        cases = (
            (f"kf smooth, {n} points, binned, h = 0.05", ["smooth", big, "--bandwidth", "0.05"]),
            (f"kf smooth, {n} points, binned, LOO-CV", ["smooth", big, "--bandwidth", "cv"]),
            (f"kf kde, {n} points, binned, h = 0.05", ["kde", big, "--bandwidth", "0.05"]),
            (f"kf kde, {n} points, binned, cv-ml", ["kde", big, "--bandwidth", "cv-ml"]),
            (f"kf smooth, {m} points, exact (all pairs), LOO-CV",
             ["smooth", small, "--exact", "--bandwidth", "cv"]),
            (f"kf kde, {m} points, exact (all pairs), cv-ml",
             ["kde", small, "--exact", "--bandwidth", "cv-ml"]),
            (f"kf smooth, {q} points, knn, k by LOO-CV (1..50)",
             ["smooth", mid, "--method", "knn", "--k", "cv", "--k-max", "50"]),
            (f"kf smooth, {q} points, sorted windows (epanechnikov --exact), LOO-CV",
             ["smooth", mid, "--kernel", "epanechnikov", "--exact", "--bandwidth", "cv"]),
            (f"kf smooth, {q} points in 2-D, binned 2-D, h = 0.2",
             ["smooth", plane] + ab + ["--bandwidth", "0.2"]),
            (f"kf kde, {q} points in 2-D, binned 2-D, cv-ml",
             ["kde", plane, "--x", "a,b", "--bandwidth", "cv-ml"]),
            (f"kf smooth, {t} points in 2-D, k-d tree (biweight local-linear), h = 0.3",
             ["smooth", tree] + ab + ["--kernel", "biweight", "--method", "local-linear",
                                      "--bandwidth", "0.3"]),
        )
        only = {int(c) for c in a.only.split(",") if c}
        for i, (label, args) in enumerate(cases, 1):
            if not only or i in only:
                case(a.kf, tmp, a.reps, label, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
