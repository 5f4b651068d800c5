#!/usr/bin/python3
"""Every method at scale, side by side in one run: `kf kde` and `kf smooth` (nw, local-linear,
knn) at 10^6-10^7 points against statsmodels KDEUnivariate(fft=True) and scikit-learn
KNeighborsRegressor on the same data, with kf's peak RSS. Data: x ~ U(0, 6), y = 2 sin x + N(0, 1)
(3-D knn: y = Σ 2 sin x_c + N(0, 1)).

Usage: /usr/bin/python3 python/bench_scale.py [--kf build/release/kf] [--quick]
       [--only kde,smooth,knn,2d]
kf's times are whole commands (reading the CSV included). --quick uses 10x fewer points.
Build kf first: cmake --preset release && cmake --build --preset release --target kf
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np


def write_csv(path, cols, names):
    try:
        import pandas as pd
        pd.DataFrame(dict(zip(names, cols))).to_csv(path, index=False, float_format="%.9g")
    except ImportError:
        np.savetxt(path, np.c_[tuple(cols)], delimiter=",", header=",".join(names), comments="",
                   fmt="%.9g")


class kf_run:
    """One kf command: wall seconds, peak RSS (MiB), the compute seconds from its --summary
    (everything but reading the CSV) and the route it took."""

    def __init__(self, args, tmp):
        summary = os.path.join(tmp, "summary.json")
        with tempfile.TemporaryFile("w+") as out:
            t0 = time.perf_counter()
            p = subprocess.Popen(args + ["--summary", summary], stdout=out, stderr=out)
            _, status, _ = os.wait4(p.pid, 0)
            self.wall = time.perf_counter() - t0
            p.returncode = os.waitstatus_to_exitcode(status)
            if p.returncode != 0:
                out.seek(0)
                raise RuntimeError(f"{' '.join(args)} failed: {out.read().strip()[:300]}")
        with open(summary) as f:
            js = json.load(f)
        self.seconds = js["seconds"]
        self.compute = sum(v for k, v in js["seconds"].items() if k != "read")
        self.route = js.get("route", "")
        self.rss = js["peak_rss_mib"]  # kf's own (a forked child's counts the parent's pages)


def row(case, n, r, peer="", t_peer=0.0):
    ratio = f"{t_peer / r.compute:.1f}x" if t_peer else "-"
    tp = f"{t_peer:.2f}" if t_peer else "-"
    print(f"| {case} | {n:,} | {r.wall:.2f} | {r.compute:.2f} | {r.rss:.0f} | {peer} | {tp} | "
          f"{ratio} | {r.route} |")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--kf", default=os.path.join(here, "..", "build", "release", "kf"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="kde,smooth,knn,2d")
    ap.add_argument("--kde-sizes", default="1000000,10000000",
                    help="sizes of the KDE Silverman rows (the cv rows run at the largest)")
    a = ap.parse_args()
    if not os.path.exists(a.kf):
        print(f"{a.kf} not found: cmake --preset release && cmake --build --preset release "
              "--target kf", file=sys.stderr)
        return 1
    only = set(a.only.split(","))
    scale = 10 if a.quick else 1
    rng = np.random.default_rng(0)
    print("| case | n | kf command s | kf compute s | kf peak MiB | peer | peer s | "
          "peer / kf compute | kf route |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        def data(n, d=1):
            x = rng.uniform(0, 6, (n, d))
            y = (2 * np.sin(x)).sum(axis=1) + rng.normal(size=n)
            path = os.path.join(tmp, f"d{n}_{d}.csv")
            if not os.path.exists(path):
                names = ["x"] if d == 1 else [f"x{c}" for c in range(d)]
                write_csv(path, [x[:, c] for c in range(d)] + [y], names + ["y"])
            return x, y, path

        if "kde" in only:
            from statsmodels.nonparametric.kde import KDEUnivariate
            sizes = [int(v) // scale for v in a.kde_sizes.split(",")]
            for n in sizes:
                x, _, path = data(n)
                # Sub-second on both sides: the median of 5 runs each (kf's run with the median
                # compute time is the row), so one disturbed run on the shared machine does not
                # decide the ratio.
                runs = sorted((kf_run([a.kf, "kde", path, "--bandwidth", "silverman", "--grid",
                                       "1024", "--out", os.path.join(tmp, "f.csv")], tmp)
                               for _ in range(5)), key=lambda r: r.compute)
                r = runs[2]
                t_sm = []
                for _ in range(5):
                    t0 = time.perf_counter()
                    k = KDEUnivariate(x[:, 0])
                    k.fit(kernel="gau", bw="silverman", fft=True, gridsize=1024)
                    t_sm.append(time.perf_counter() - t0)
                row("kde, silverman, 1024-point grid (median of 5)", n, r,
                    "statsmodels KDEUnivariate fft", sorted(t_sm)[2])
            n = max(sizes)
            _, _, path = data(n)
            for bw in ("cv-ml", "cv-ls") if n >= 10**7 // scale else ():
                for kern in ("gaussian", "epanechnikov"):
                    r = kf_run([a.kf, "kde", path, "--bandwidth", bw, "--kernel", kern], tmp)
                    row(f"kde, {bw}, {kern}", n, r)

        if "smooth" in only:
            n = 10**7 // scale
            _, _, path = data(n)
            for method in ("nw", "local-linear"):
                for kern in ("gaussian", "epanechnikov", "tricube", "laplacian"):
                    r = kf_run([a.kf, "smooth", path, "--method", method, "--kernel", kern,
                                "--bandwidth", "cv"], tmp)
                    row(f"smooth {method}, {kern}, cv bandwidth", n, r)

        if "knn" in only:
            from sklearn.neighbors import KNeighborsRegressor
            n = 10**6 // scale
            for d in (1, 3):
                x, y, path = data(n, d)
                xs = "x" if d == 1 else ",".join(f"x{c}" for c in range(d))
                r = kf_run([a.kf, "smooth", path, "--x", xs, "--method", "knn", "--k", "cv",
                            "--k-max", "50"], tmp)
                row(f"knn {d}-D, k by LOO-CV (1..50)", n, r)
                m = 10**5 // scale
                q = rng.uniform(0, 6, (m, d))
                qpath = os.path.join(tmp, f"q{d}.csv")
                write_csv(qpath, [q[:, c] for c in range(d)],
                          ["x"] if d == 1 else [f"x{c}" for c in range(d)])
                r = kf_run([a.kf, "smooth", path, "--x", xs, "--method", "knn", "--k", "10",
                            "--at", qpath, "--out", os.path.join(tmp, "p.csv")], tmp)
                predict_s = r.compute
                r.compute = r.seconds["fit"]
                row(f"knn {d}-D, k=10, fit (fitted values, n LOO residuals)", n, r)
                sk = KNeighborsRegressor(n_neighbors=10, algorithm="kd_tree")
                t0 = time.perf_counter()
                sk.fit(x, y)
                t_fit = time.perf_counter() - t0
                sk.predict(q)
                t_pred = time.perf_counter() - t0 - t_fit
                r.compute = predict_s - r.seconds["fit"]
                row(f"knn {d}-D, k=10, predict at {m:,} (kf: the fit's search reused)", n, r,
                    f"sklearn KNeighborsRegressor kd_tree predict (fit {t_fit:.2f} s apart)",
                    t_pred)
        if "2d" in only:
            # Two columns: the 2-D binned route (KDE and NW, any radial kernel) and, in 2-D with
            # --exact and in 3-D, the k-d tree route for compact kernels.
            n = 10**6 // scale
            _, _, path = data(n, 2)
            for kern in ("gaussian", "epanechnikov", "laplacian", "tricube"):
                r = kf_run([a.kf, "kde", path, "--x", "x0,x1", "--kernel", kern,
                            "--bandwidth", "silverman"], tmp)
                row(f"kde 2-D, {kern}, silverman", n, r)
                r = kf_run([a.kf, "smooth", path, "--x", "x0,x1", "--kernel", kern,
                            "--bandwidth", "silverman"], tmp)
                row(f"smooth nw 2-D, {kern}, silverman", n, r)
            for kern in ("epanechnikov", "tricube"):
                r = kf_run([a.kf, "smooth", path, "--x", "x0,x1", "--kernel", kern,
                            "--bandwidth", "silverman", "--exact"], tmp)
                row(f"smooth nw 2-D, {kern}, silverman, --exact", n, r)
            n = 10**6 // scale
            _, _, path = data(n, 3)
            for method in ("nw", "local-linear"):
                r = kf_run([a.kf, "smooth", path, "--x", "x0,x1,x2", "--kernel", "epanechnikov",
                            "--method", method, "--bandwidth", "silverman"], tmp)
                row(f"smooth {method} 3-D, epanechnikov, silverman", n, r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
