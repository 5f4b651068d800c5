#!/usr/bin/env python3
"""Seed 003's periodic experiment written in PyTorch with kernelformer.torch.KernelAttention: the
model `kf train periodic` trains in C++, here as a torch.nn.Module whose attention heads are the
C++ smoothing primitive (forward and backward), trained by torch.optim.Adam.

Protocol (../shared/docs/periodic-protocol.md): y_t = f(0.1 t), t = 0..999; the 901 windows of
99 values predict the next one; Linear(1 -> d) + sinusoidal PE, dropout 0.1, post-LN encoder
layers (attention dropout 0.1, FFN with ReLU), flatten, Linear(99 d -> 1); Adam, MSE, shuffled
batches; test: 200-step autoregressive rollout over x = 100.0 ... 119.9 (and teacher-forced).
Configurations as kf's: quick (d 16, H 2, FFN 32, 1 layer, 20 epochs of 64, lr 3e-3) and code
(d 128, H 2, FFN 128, 2 layers, 100 epochs of 512, lr 1e-3).

Usage (from the repository root, in the venv of docs/python.md):
    .venv/bin/python python/periodic_kernel_attention.py --function sin --config quick \
        --seeds 0,1,2,3,4 [--kernel exp_dot] [--kf build/release/kf] [--mha] [--json OUT.json]
--kf runs `kf train periodic` with the same function, configuration, kernel and seeds and prints
both medians side by side (the seeds' random streams differ between the two: compare the
spread, not seed by seed); --mha also trains the model with torch.nn.MultiheadAttention.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

# This file sits beside the package's sources (python/kernelformer/, without the compiled
# module): import the installed package, not that folder.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]
from kernelformer.torch import KernelAttention  # noqa: E402

CONFIGS = {  # d, heads, ffn, layers, epochs, batch, lr (kf's periodic_config and cmd_train)
    "quick": (16, 2, 32, 1, 20, 64, 3e-3),
    "code": (128, 2, 128, 2, 100, 512, 1e-3),
}
T = 99


def f_of(name, x):
    if name == "sin":
        return np.sin(x)
    if name == "sin-exp":
        return np.sin(x) * np.exp(0.01 * x)
    return np.where(np.mod(x, 2 * np.pi) < np.pi, 1.0, -1.0)  # scipy.signal.square


class EncoderLayer(nn.Module):
    """nn.TransformerEncoderLayer (post-LN, ReLU, batch_first) with KernelAttention as self_attn;
    the same parameter names."""

    def __init__(self, d, heads, ffn, dropout, kernel):
        super().__init__()
        if kernel == "torch":  # PyTorch's own attention, for comparison
            self.self_attn = nn.MultiheadAttention(d, heads, dropout=dropout, batch_first=True)
        else:
            self.self_attn = KernelAttention(d, heads, dropout=dropout, batch_first=True,
                                             kernel=kernel)
        self.linear1, self.linear2 = nn.Linear(d, ffn), nn.Linear(ffn, d)
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.dropout, self.dropout1, self.dropout2 = (nn.Dropout(dropout) for _ in range(3))

    def forward(self, x):  # x: (B, T, d)
        x = self.norm1(x + self.dropout1(self.self_attn(x, x, x, need_weights=False)[0]))
        return self.norm2(x + self.dropout2(self.linear2(self.dropout(F.relu(self.linear1(x))))))


class PeriodicModel(nn.Module):
    """x (B, 99) windows -> (B,) next values."""

    def __init__(self, d, heads, ffn, layers, kernel, dropout=0.1):
        super().__init__()
        self.embed = nn.Linear(1, d)
        self.drop = nn.Dropout(dropout)
        self.layers = nn.ModuleList(EncoderLayer(d, heads, ffn, dropout, kernel)
                                    for _ in range(layers))
        self.head = nn.Linear(T * d, 1)
        pe = torch.zeros(T, d)
        pos = torch.arange(T, dtype=torch.float64)[:, None]
        freq = torch.exp(-math.log(10000.0) * torch.arange(0, d, 2, dtype=torch.float64) / d)
        pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * freq), torch.cos(pos * freq)
        self.register_buffer("pe", pe, persistent=False)

    def forward(self, x):
        h = self.drop(self.embed(x.unsqueeze(-1)) + self.pe)  # (B, T, d)
        for layer in self.layers:
            h = layer(h)
        return self.head(h.flatten(1)).squeeze(-1)


def run(function="sin", config="quick", kernel="exp_dot", seed=0, epochs=None, threads=2,
        windows=None):
    """Trains one model and forecasts; returns a dict of the protocol's numbers. windows: use
    only the first `windows` training samples (for a smoke test)."""
    d, heads, ffn, layers, ep, batch, lr = CONFIGS[config]
    epochs = ep if epochs is None else epochs
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    series = f_of(function, 0.1 * np.arange(1000))
    X = torch.tensor(np.stack([series[i:i + T] for i in range(901)]), dtype=torch.float32)
    Y = torch.tensor(series[T:], dtype=torch.float32)
    if windows is not None:
        X, Y = X[:windows], Y[:windows]
    n = X.shape[0]
    model = PeriodicModel(d, heads, ffn, layers, kernel)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    t0 = time.perf_counter()
    losses = []
    for _ in range(epochs):
        model.train()
        perm = torch.randperm(n)
        total = 0.0
        for b0 in range(0, n, batch):
            idx = perm[b0:b0 + batch]
            opt.zero_grad()
            loss = F.mse_loss(model(X[idx]), Y[idx])
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        losses.append(total / n)
    train_seconds = time.perf_counter() - t0
    model.eval()
    truth = f_of(function, 90.1 + 0.1 * np.arange(299))
    ctx = list(truth[:T])
    roll, forced = [], []
    with torch.no_grad():
        for j in range(200):
            window = torch.tensor(np.array(ctx[-T:]), dtype=torch.float32)[None]
            roll.append(float(model(window)[0]))
            ctx.append(roll[-1])
            window = torch.tensor(truth[j:j + T], dtype=torch.float32)[None]
            forced.append(float(model(window)[0]))
    target = truth[T:]
    return dict(function=function, config=config, kernel=kernel, seed=seed, epochs=epochs,
                final_train_loss=losses[-1],
                test_mse_rollout=float(np.mean((np.array(roll) - target) ** 2)),
                test_mse_teacher_forced=float(np.mean((np.array(forced) - target) ** 2)),
                train_seconds=train_seconds)


def run_kf(kf, function, config, kernel, seed, epochs):
    with tempfile.TemporaryDirectory() as tmp:
        summary = os.path.join(tmp, "s.json")
        cmd = [kf, "train", "periodic", "--function", function, "--config", config, "--kernel",
               kernel, "--seed", str(seed), "--summary", summary, "--quiet"]
        if epochs is not None:
            cmd += ["--epochs", str(epochs)]
        subprocess.run(cmd, check=True)
        with open(summary) as f:
            return json.load(f)


def spread(values):
    return f"{statistics.median(values):.4g} ({min(values):.4g}-{max(values):.4g})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--function", default="sin", choices=["sin", "sin-exp", "square"])
    ap.add_argument("--config", default="quick", choices=sorted(CONFIGS))
    ap.add_argument("--kernel", default="exp_dot")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--epochs", type=int)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--kf", help="the kf binary: also run `kf train periodic` on the same seeds")
    ap.add_argument("--mha", action="store_true",
                    help="also train the same model with torch.nn.MultiheadAttention")
    ap.add_argument("--json", help="write every run's numbers here")
    a = ap.parse_args()
    seeds = [int(s) for s in a.seeds.split(",")]
    rows = {"PyTorch + KernelAttention": [], "PyTorch + nn.MultiheadAttention": [],
            "kf train periodic": []}
    for s in seeds:
        r = run(a.function, a.config, a.kernel, s, a.epochs, a.threads)
        rows["PyTorch + KernelAttention"].append(r)
        print(json.dumps(r), flush=True)
        if a.mha:
            r = run(a.function, a.config, "torch", s, a.epochs, a.threads)
            rows["PyTorch + nn.MultiheadAttention"].append(r)
            print(json.dumps(r), flush=True)
        if a.kf:
            k = run_kf(a.kf, a.function, a.config, a.kernel, s, a.epochs)
            rows["kf train periodic"].append(k)
            print(json.dumps({key: k[key] for key in ("seed", "final_train_loss",
                                                      "test_mse_rollout",
                                                      "test_mse_teacher_forced",
                                                      "train_seconds")}), flush=True)
    print(f"\n{a.function}, {a.config} config, kernel {a.kernel}, seeds {a.seeds}: median "
          "(min-max)\n")
    print("| run | rollout MSE | teacher-forced MSE | final train loss | train s |")
    print("|---|---|---|---|---|")
    for name, rs in rows.items():
        if rs:
            print(f"| {name} | {spread([r['test_mse_rollout'] for r in rs])} | "
                  f"{spread([r['test_mse_teacher_forced'] for r in rs])} | "
                  f"{spread([r['final_train_loss'] for r in rs])} | "
                  f"{statistics.median([r['train_seconds'] for r in rs]):.2f} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
