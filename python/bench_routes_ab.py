#!/usr/bin/env python3
"""Every regression and density route through `kf smooth` / `kf kde`, timed as whole commands
for two kf binaries side by side (A B A B ..., the median of each and the ratio B/A per case and
their geometric mean): the A/B check that a change to the routes costs nothing.

  binned        kf smooth, 10^6 points, 1-D, gaussian, bandwidth by LOO-CV
  binned 2-D    kf smooth, 10^5 points, 2-D, gaussian NW, fixed bandwidth
  sorted win.   kf smooth, 10^5 points, 1-D, epanechnikov --exact, bandwidth by LOO-CV
  k-d tree      kf smooth, 2*10^4 points, 3-D, epanechnikov local linear, fixed h = 0.3
  all pairs     kf smooth, 5,000 points, 3-D, gaussian NW, fixed h = 0.5
  neighbors     kf smooth, 10^5 points, 1-D, knn with k by LOO-CV
  kde binned    kf kde, 10^6 points, 1-D, silverman
  kde k-d tree  kf kde, 2*10^4 points, 2-D, epanechnikov, h = 0.1

Usage: /usr/bin/python3 python/bench_routes_ab.py --a OLD/kf --b NEW/kf [--rounds 5]
       [--only binned,kd-tree,...] [--data DIR]
The data are made once in DIR (default /tmp/kf_routes_ab) by numpy with fixed seeds.
"""
import argparse
import math
import os
import statistics
import subprocess
import sys
import time

import numpy as np


def write_csv(path, cols, names):
    if os.path.exists(path):
        return
    np.savetxt(path + ".part", np.column_stack(cols), delimiter=",", header=",".join(names),
               comments="", fmt="%.9g")
    os.replace(path + ".part", path)


def make_data(d):
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(1)
    for n, dims, name in [(10**6, 1, "n1e6_d1"), (10**5, 1, "n1e5_d1"), (10**5, 2, "n1e5_d2"),
                          (20_000, 3, "n2e4_d3"), (5_000, 3, "n5e3_d3"), (20_000, 2, "n2e4_d2")]:
        x = rng.uniform(0, 4, (n, dims))
        y = np.sin(2 * x).sum(1) + 0.3 * rng.standard_normal(n)
        names = [f"x{i}" for i in range(dims)] + ["y"]
        write_csv(os.path.join(d, name + ".csv"), [x[:, i] for i in range(dims)] + [y], names)


def cases(d):
    p = lambda name: os.path.join(d, name + ".csv")  # noqa: E731
    out = os.path.join(d, "out.csv")
    return {
        "binned": f"smooth {p('n1e6_d1')} --x x0 --y y --out {out}",
        "binned-2d": f"smooth {p('n1e5_d2')} --x x0,x1 --y y --bandwidth 0.1 --out {out}",
        "sorted-windows": f"smooth {p('n1e5_d1')} --x x0 --y y --kernel epanechnikov --exact "
                          f"--out {out}",
        "kd-tree": f"smooth {p('n2e4_d3')} --x x0,x1,x2 --y y --method local-linear "
                   f"--kernel epanechnikov --bandwidth 0.3 --out {out}",
        "all-pairs": f"smooth {p('n5e3_d3')} --x x0,x1,x2 --y y --bandwidth 0.5 --out {out}",
        "neighbors": f"smooth {p('n1e5_d1')} --x x0 --y y --method knn --out {out}",
        "kde-binned": f"kde {p('n1e6_d1')} --x x0 --out {out}",
        "kde-kd-tree": f"kde {p('n2e4_d2')} --x x0,x1 --kernel epanechnikov --bandwidth 0.1 "
                       f"--out {out}",
    }


def once(kf, args):
    t0 = time.perf_counter()
    r = subprocess.run([kf] + args.split() + ["--quiet"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(f"{kf} {args}: exit {r.returncode}: {r.stderr.strip()[:300]}")
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", required=True, help="the baseline kf")
    ap.add_argument("--b", required=True, help="the kf under test")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default="")
    ap.add_argument("--data", default="/tmp/kf_routes_ab")
    a = ap.parse_args()
    make_data(a.data)
    table = cases(a.data)
    chosen = a.only.split(",") if a.only else list(table)
    print("| route | command | A median s | B median s | B/A |")
    print("|---|---|---|---|---|")
    logs = []
    for name in chosen:
        args = table[name]
        once(a.a, args), once(a.b, args)  # warm-up: the page cache, the first run's costs
        ta, tb = [], []
        for _ in range(a.rounds):
            ta.append(once(a.a, args))
            tb.append(once(a.b, args))
        ratio = statistics.median(b / x for b, x in zip(tb, ta))
        logs.append(math.log(ratio))
        print(f"| {name} | kf {args.replace(a.data + '/', '')} | {statistics.median(ta):.3f} | "
              f"{statistics.median(tb):.3f} | {ratio:.3f} |", flush=True)
    print(f"\ngeometric mean B/A over {len(logs)} routes: {math.exp(sum(logs) / len(logs)):.3f} "
          "(below 1: B is faster)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
