#!/usr/bin/env python3
"""kf on a busy machine: each command timed quiet and beside N busy processes (as many as the
cores: the fair share), with kf's own OpenMP wait (a short spin, then sleep: GOMP_SPINCOUNT set
by kf at start, apps/kf/main.cpp) and with libgomp's default (KF_OMP_SPIN=default: ~300,000
spins before a waiting thread sleeps), alternating, in one run. Prints each median wall time and
the ratios busy / quiet and kf's wait / libgomp's.

Usage (from the repository root, after a build):
    /usr/bin/python3 python/bench_busy_machine.py --kf build/release/kf [--reps 3] [--busy 2]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def inputs(work):
    rng = np.random.default_rng(0)
    t = np.arange(240)
    y = 100 + 0.05 * t + 10 * np.sin(2 * np.pi * t / 12) + 3 * rng.standard_normal(240)
    with open(os.path.join(work, "series.csv"), "w") as f:
        f.write("t,y\n" + "".join(f"{i},{v!r}\n" for i, v in zip(t, y)))
    q = rng.standard_normal((8192, 32)).astype(np.float32)
    np.save(os.path.join(work, "q.npy"), q)
    x = rng.uniform(0, 6, 200_000)
    with open(os.path.join(work, "smooth.csv"), "w") as f:
        f.write("x,y\n" + "".join(f"{a!r},{np.sin(a) + 0.3 * rng.standard_normal()!r}\n"
                                  for a in x))


def commands(kf, work):
    w = lambda name: os.path.join(work, name)
    return {
        "train series": [kf, "train", "series", w("series.csv"), "--y", "y", "--x", "t",
                         "--horizon", "24", "--quiet", "--seed", "1"],
        "train periodic quick (5 epochs)": [kf, "train", "periodic", "--config", "quick",
                                            "--epochs", "5", "--quiet"],
        "attend n=8192": [kf, "attend", "-q", w("q.npy"), "-k", w("q.npy"), "-v", w("q.npy"),
                          "-o", w("o.npy")],
        "smooth 2e5, CV bandwidth": [kf, "smooth", w("smooth.csv"), "--x", "x", "--y", "y",
                                     "--out", w("fit.csv")],
    }


def timed(cmd, env):
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kf", default="build/release/kf")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--busy", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--spin", default="",
                    help="KF_OMP_SPIN for the kf columns (default: kf's own setting)")
    ap.add_argument("--only", default="", help="comma-separated command numbers (1-based)")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="kf_busy_")
    inputs(work)
    base = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    ours, gomp = dict(base), dict(base, KF_OMP_SPIN="default")
    if a.spin:
        ours["KF_OMP_SPIN"] = a.spin
    only = {int(i) for i in a.only.split(",") if i}
    print(f"{'command':34s} {'quiet kf':>9s} {'quiet gomp':>10s} {'busy kf':>9s} "
          f"{'busy gomp':>9s}  busy/quiet kf  busy/quiet gomp  quiet kf/gomp")
    for i, (name, cmd) in enumerate(commands(a.kf, work).items(), 1):
        if only and i not in only:
            continue
        times = {k: [] for k in ("qk", "qg", "bk", "bg")}
        timed(cmd, ours)  # warm-up (page cache)
        for _ in range(a.reps):
            times["qk"].append(timed(cmd, ours))
            times["qg"].append(timed(cmd, gomp))
            hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                    for _ in range(a.busy)]
            try:
                times["bk"].append(timed(cmd, ours))
                times["bg"].append(timed(cmd, gomp))
            finally:
                for h in hogs:
                    h.kill()
                    h.wait()
        m = {k: statistics.median(v) for k, v in times.items()}
        print(f"{name:34s} {m['qk']:9.2f} {m['qg']:10.2f} {m['bk']:9.2f} {m['bg']:9.2f}  "
              f"{m['bk'] / m['qk']:13.2f}  {m['bg'] / m['qg']:15.2f}  {m['qk'] / m['qg']:13.3f}",
              flush=True)


if __name__ == "__main__":
    main()
