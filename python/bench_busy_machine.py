#!/usr/bin/env python3
"""kf on a busy machine: each command timed quiet and beside N busy processes (as many as the
cores: the fair share), with kf's own OpenMP wait (a short spin, then sleep: GOMP_SPINCOUNT set
by the kf launcher, apps/kf/launcher.cpp) and with libgomp's default (KF_OMP_SPIN=default:
~300,000 spins before a waiting thread sleeps), alternating, in one run. Prints each median wall
time and the ratios busy / quiet and kf's wait / libgomp's. The last row is `mpirun -np 2` of the
CV smooth against one process of it (quiet machine; the launcher gives each rank cores / ranks
threads, KF_OMP_SPIN=default columns: the same with libgomp's wait).

Usage (from the repository root, after a build):
    /usr/bin/python3 python/bench_busy_machine.py --kf build/release/kf [--reps 3] [--busy 2]
"""
import argparse
import os
import shutil
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
    x = rng.uniform(0, 6, 1_000_000)
    np.savetxt(os.path.join(work, "smooth.csv"), np.c_[x, np.sin(x) + 0.3 * rng.standard_normal(x.size)],
               delimiter=",", header="x,y", comments="", fmt="%.17g")


def commands(kf, work):
    w = lambda name: os.path.join(work, name)
    return {
        "train series": [kf, "train", "series", w("series.csv"), "--y", "y", "--x", "t",
                         "--horizon", "24", "--quiet", "--seed", "1"],
        "train periodic quick (5 epochs)": [kf, "train", "periodic", "--config", "quick",
                                            "--epochs", "5", "--quiet"],
        "attend n=8192": [kf, "attend", "-q", w("q.npy"), "-k", w("q.npy"), "-v", w("q.npy"),
                          "-o", w("o.npy")],
        "smooth 1e6, CV bandwidth": [kf, "smooth", w("smooth.csv"), "--x", "x", "--y", "y",
                                     "--out", w("fit.csv"), "--quiet"],
        "train lm small (20 steps)": [kf, "train", "lm", "--config", "small", "--iters", "20",
                                      "--eval-iters", "8", "--quiet"],
    }


def timed(cmd, env):
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


VARIANTS = ("kf", "all cores", "libgomp")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kf", default="build/release/kf")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--busy", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--spin", default="",
                    help="KF_OMP_SPIN for the kf columns (default: kf's own setting)")
    ap.add_argument("--only", default="", help="comma-separated command numbers (1-based; 6: mpirun)")
    ap.add_argument("--markdown", default="", help="also write the table to this file")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="kf_busy_")
    inputs(work)
    base = {k: v for k, v in os.environ.items()
            if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS", "KF_OMP_SPIN")}
    cores = str(len(os.sched_getaffinity(0)))
    envs = {"kf": dict(base),  # what the launcher chooses: short spin; fewer threads when busy
            "all cores": dict(base, OMP_NUM_THREADS=cores),  # the short spin on every core
            "libgomp": dict(base, OMP_NUM_THREADS=cores, KF_OMP_SPIN="default")}
    if a.spin:
        envs["kf"]["KF_OMP_SPIN"] = a.spin
    rows = [f"| command | quiet: kf / all cores / libgomp (s) | beside {a.busy} busy: kf / all cores "
            f"/ libgomp (s) | busy/quiet kf | busy/quiet all cores | busy/quiet libgomp | "
            f"quiet kf / libgomp |", "|---|---|---|---|---|---|---|"]
    print(rows[0], flush=True)
    for i, (name, cmd) in enumerate(commands(a.kf, work).items(), 1):
        if only_rows(a) and i not in only_rows(a):
            continue
        quiet = {v: [] for v in VARIANTS}
        busy = {v: [] for v in VARIANTS}
        timed(cmd, envs["kf"])  # warm-up (page cache)
        for _ in range(a.reps):
            for v in VARIANTS:
                quiet[v].append(timed(cmd, envs[v]))
            hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                    for _ in range(a.busy)]
            try:
                time.sleep(0.2)  # the busy processes running
                for v in VARIANTS:
                    busy[v].append(timed(cmd, envs[v]))
            finally:
                for h in hogs:
                    h.kill()
                    h.wait()
        q = {v: statistics.median(t) for v, t in quiet.items()}
        b = {v: statistics.median(t) for v, t in busy.items()}
        rows.append(f"| `{name}` | {q['kf']:.2f} / {q['all cores']:.2f} / {q['libgomp']:.2f} | "
                    f"{b['kf']:.2f} / {b['all cores']:.2f} / {b['libgomp']:.2f} | "
                    f"{b['kf'] / q['kf']:.2f} | {b['all cores'] / q['all cores']:.2f} | "
                    f"{b['libgomp'] / q['libgomp']:.2f} | {q['kf'] / q['libgomp']:.3f} |")
        print(rows[-1], flush=True)
    line = mpi_row(a, work, envs["kf"], envs["libgomp"])
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("\n".join(rows) + "\n" + (f"\n{line}\n" if line else ""))


def mpi_row(a, work, ours, gomp):
    """mpirun -np 2 of the CV smooth against one process of it, quiet, alternating."""
    mpirun = shutil.which("mpirun")
    if mpirun is None or (only_rows(a) and 6 not in only_rows(a)):
        return ""
    cmd = commands(a.kf, work)["smooth 1e6, CV bandwidth"]
    par = [mpirun, "--allow-run-as-root", "-np", "2"] + cmd
    times = {k: [] for k in ("1k", "2k", "1g", "2g")}
    for _ in range(a.reps):
        times["1k"].append(timed(cmd, ours))
        times["2k"].append(timed(par, ours))
        times["1g"].append(timed(cmd, gomp))
        times["2g"].append(timed(par, gomp))
    m = {k: statistics.median(v) for k, v in times.items()}
    line = (f"`mpirun -np 2` of the CV smooth (2 ranks on {os.cpu_count()} cores) against one "
            f"process: {m['2k']:.2f} s against {m['1k']:.2f} s, {m['2k'] / m['1k']:.2f}x "
            f"(libgomp's wait, all cores per rank: {m['2g']:.2f} s against {m['1g']:.2f} s, "
            f"{m['2g'] / m['1g']:.2f}x)")
    print(line, flush=True)
    return line


def only_rows(a):
    return {int(i) for i in a.only.split(",") if i}


if __name__ == "__main__":
    main()
