#!/usr/bin/python3
"""MPI on this machine: `mpirun -np 2` (one thread each) against one process (one thread), side
by side, for the measured half of docs/scale-out.md.

  smoothing   kf attend: 2,000 query points (a grid over x) against 10^7 data points (x, y),
              Gaussian kernel h = 0.05 — Nadaraya-Watson on 10^7 points; keys sharded.
  training    kf train periodic --config code (batch 512) and kf train lm --config small:
              seconds per step, and the bytes and seconds each rank spent in MPI (its summary).
  compute     the same training step in one process at local batches 512, 256, 64, 8 and 1:
              the per-rank compute time T(b) the model scales.

Usage: /usr/bin/python3 python/bench_scale_out.py [--kf build/release/kf] [--reps 3] [--quick]
Needs a release build with MPI: cmake --preset release && cmake --build --preset release
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


def with_np(n, cmd):
    return cmd if n == 1 else MPIRUN + ["-np", str(n)] + cmd


def smoothing(kf, tmp, reps, n_keys):
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 6, (n_keys, 1))
    y = 2 * np.sin(x) + rng.normal(size=(n_keys, 1))
    q = np.linspace(0, 6, 2000).reshape(-1, 1)
    for name, a in (("k", x), ("v", y), ("q", q)):
        np.save(os.path.join(tmp, name + ".npy"), a)
    base = [kf, "attend", "-q", f"{tmp}/q.npy", "-k", f"{tmp}/k.npy", "-v", f"{tmp}/v.npy",
            "--kernel", "gaussian:h=0.05", "--quiet", "-o"]
    times = {1: [], 2: []}
    for _ in range(reps):  # alternating, so drift of the host hits both alike
        for n in (1, 2):
            times[n].append(timed(with_np(n, base + [f"{tmp}/out{n}.npy"])))
    a, b = np.load(f"{tmp}/out1.npy"), np.load(f"{tmp}/out2.npy")
    rel = float(np.abs(a - b).max() / np.abs(a).max())
    t1, t2 = min(times[1]), min(times[2])
    print(f"| kf attend, NW on {n_keys:,} points at 2,000 queries (whole command) | {t1:.2f} | "
          f"{t2:.2f} | {t1 / t2:.2f}x | {t1 / t2 / 2:.0%} | max rel. diff {rel:.1e} |")
    return t1


def train_step(kf, tmp, what, n, extra):
    out = os.path.join(tmp, f"{what}_{n}.json")
    cmd = [kf, "train"] + extra + ["--quiet", "--summary", out]
    timed(with_np(n, cmd))
    with open(out) as f:
        js = json.load(f)
    if what == "periodic":
        steps = js["epochs"] * -(-901 // int(extra[extra.index("--batch") + 1]))
        secs = js["train_seconds"]
    else:
        steps = js["iters"]
        secs = js["iters"] * js["batch"] * js["context"] / js["tokens_per_second"]
    return secs / steps, js.get("mpi", {}), steps, js["parameters"]


def training(kf, tmp, reps, quick):
    """Seconds per step at -np 1 and -np 2; returns the parameter counts."""
    params = {}
    cases = [
        ("periodic", ["periodic", "--config", "code", "--epochs", "1" if quick else "3",
                      "--batch", "512", "--dropout", "0"]),
        ("lm", ["lm", "--config", "small", "--iters", "5" if quick else "20"]),
    ]
    for what, extra in cases:
        best = {}
        for _ in range(reps):
            for n in (1, 2):
                s, mpi, steps, params[what] = train_step(kf, tmp, what, n, extra)
                if n not in best or s < best[n][0]:
                    best[n] = (s, mpi)
        (s1, _), (s2, mpi) = best[1], best[2]
        per_step_bytes = mpi.get("bytes", 0) / max(1, steps)
        per_step_mpi = mpi.get("seconds_in_mpi", 0) / max(1, steps)
        print(f"| kf train {what} ({' '.join(extra[1:3])}), s per step | {s1:.3f} | {s2:.3f} | "
              f"{s1 / s2:.2f}x | {s1 / s2 / 2:.0%} | per step and rank: "
              f"{per_step_bytes / 1e6:.2f} MB to MPI, {per_step_mpi * 1e3:.1f} ms in MPI |")
    return params


def compute_model(kf, tmp, quick):
    """T(b): seconds per step at local batch b, one process, one thread; returns {what: fit}."""
    print("\n| model | local batch b | s per step (1 process, 1 thread) |\n|---|---|---|")
    fits = {}
    cases = {
        "periodic": ([512, 64, 8] if quick else [512, 256, 64, 8, 1],
                     lambda b: ["periodic", "--config", "code", "--epochs", "1", "--batch",
                                str(b), "--dropout", "0"]),
        "lm": ([12, 3, 1] if quick else [12, 6, 3, 1],
               lambda b: ["lm", "--config", "small", "--iters", "5" if quick else "10", "--batch",
                          str(b)]),
    }
    for what, (sizes, args) in cases.items():
        pts = []
        for b in sizes:
            s = train_step(kf, tmp, what, 1, args(b))[0]
            pts.append((b, s))
            print(f"| {what} | {b} | {s:.4f} |")
        bs, ts = np.array([p[0] for p in pts], float), np.array([p[1] for p in pts])
        t1, t0 = np.polyfit(bs, ts, 1)
        fits[what] = (max(t0, 0.0), t1, dict(pts))
    return fits


def model(fits, params, pair_s, alpha, beta):
    """Predicted efficiency at 8, 64, 512 ranks (strong scaling of one global batch; ring
    all-reduce 2(N-1)α + 2(N-1)/N·S/β; sharded smoothing: compute/N + a tree reduce)."""
    print(f"\nModel inputs: T(b) = t0 + t1·b fitted above; ring all-reduce with α = {alpha:g} s, "
          f"β = {beta:g} B/s (a network assumption, not a measurement); gradient bytes S = 4P.")
    print("\n| workload | N | per-rank compute s | communication s | efficiency |\n|---|---|---|---|---|")
    for what, batch in (("periodic", 512), ("lm", 12)):
        t0, t1, measured = fits[what]
        comp = lambda b: measured.get(b, t0 + t1 * b)
        s_bytes = 4 * params[what]
        t_one = comp(batch)
        for n in (8, 64, 512):
            b = batch / n
            if b < 1:
                print(f"| {what} step, batch {batch} | {n} | - | - | cannot split {batch} rows "
                      f"over {n} ranks (weak scaling: batch {batch}·N) |")
                continue
            c = comp(b) if b in measured else t0 + t1 * b
            ar = 2 * (n - 1) * alpha + 2 * (n - 1) / n * s_bytes / beta
            print(f"| {what} step, batch {batch} | {n} | {c:.4g} | {ar:.3g} | "
                  f"{t_one / (n * (c + ar)):.0%} |")
    m, g = 1e10, 2000
    for n in (8, 64, 512):
        c = m / n * g * pair_s
        red = np.log2(n) * (alpha + 16 * g / beta)
        print(f"| NW on 10^10 points at {g} queries (keys sharded) | {n} | {c:.4g} | {red:.3g} | "
              f"{c / (c + red):.0%} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--kf", default=os.path.join(here, "..", "build", "release", "kf"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--alpha", type=float, default=5e-6, help="network latency, s (model input)")
    ap.add_argument("--beta", type=float, default=1e10, help="network bandwidth, B/s (model input)")
    a = ap.parse_args()
    print("| case | -np 1 | -np 2 | speed-up | efficiency | notes |\n|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        n_keys = 10**6 if a.quick else 10**7
        t_attend = smoothing(a.kf, tmp, a.reps, n_keys)
        params = training(a.kf, tmp, a.reps, a.quick)
        fits = compute_model(a.kf, tmp, a.quick)
        model(fits, params, t_attend / (n_keys * 2000), a.alpha, a.beta)
    return 0


if __name__ == "__main__":
    sys.exit(main())
