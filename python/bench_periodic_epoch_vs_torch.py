#!/usr/bin/python3
"""Time per epoch of seed 003's model, PyTorch 1.13 vs kernelformer, in one run.

The same model and batch: Linear(1 -> d) + sinusoidal PE, 2 post-LN nn.TransformerEncoderLayer
(d = 128, H = 2, FFN 128, dropout 0.1, also after the encoding), flatten, Linear(99*d -> 1); Adam lr 1e-3, MSE, batch 512,
901 windows per epoch (the `code` configuration of ../shared/docs/periodic-protocol.md).
Usage: /usr/bin/python3 python/bench_periodic_epoch_vs_torch.py [--kf build/release/kf] [--epochs 3]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--kf", default=os.path.join(here, "..", "build", "release", "kf"))
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--config", default="code", choices=["code", "quick"])
    a = ap.parse_args()
    try:
        import torch
        from torch import nn
    except ImportError:
        print("PyTorch is not installed (Debian: python3-torch); skipping")
        return 0
    d, ff, layers = (128, 128, 2) if a.config == "code" else (16, 32, 1)
    T, H, B = 99, 2, (512 if a.config == "code" else 64)
    torch.set_num_threads(os.cpu_count() or 1)  # the same cores kf uses
    torch.manual_seed(0)

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from periodic_torch_reference import make_model_class  # the faithful model, PE dropout too
    Model = make_model_class(d, ff, layers, T, H)

    series = np.sin(0.1 * np.arange(1000))
    X = torch.tensor(np.stack([series[i:i + 99] for i in range(901)]), dtype=torch.float32)
    Y = torch.tensor(series[99:], dtype=torch.float32)
    model = Model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    times = []
    for _ in range(a.epochs):
        t0 = time.perf_counter()
        perm = torch.randperm(901)
        for b0 in range(0, 901, B):
            idx = perm[b0:b0 + B]
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(X[idx]), Y[idx])
            loss.backward()
            opt.step()
        times.append(time.perf_counter() - t0)
    t_torch = float(np.median(times))

    with tempfile.TemporaryDirectory() as tmp:
        summary = os.path.join(tmp, "s.json")
        subprocess.run([a.kf, "train", "periodic", "--config", a.config, "--epochs", str(a.epochs),
                        "--summary", summary, "--quiet"], check=True)
        t_kf = json.load(open(summary))["epoch_seconds_median"]
    print(f"{a.config} config, seconds per epoch (median of {a.epochs}), torch threads "
          f"{torch.get_num_threads()}:")
    print(f"  PyTorch {torch.__version__}: {t_torch:.2f} s")
    print(f"  kernelformer: {t_kf:.2f} s")
    print(f"  kf / torch = {t_kf / t_torch:.2f}  (target <= 0.5)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
