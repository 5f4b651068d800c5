#!/usr/bin/python3
"""The faithful PyTorch 1.13 re-implementation of seed 003's periodic experiment (the reference
our `kf train periodic` is compared with), following ../shared/docs/periodic-protocol.md.

Linear(1 -> d) + sinusoidal PE, dropout 0.1, L post-LN nn.TransformerEncoderLayer (ReLU, FFN = d,
dropout 0.1 — also on attention weights), flatten, Linear(99 d -> 1); Adam 1e-3, MSE, batch 512
shuffled, 100 epochs; rollout over x = 100.0 ... 119.9.
Usage: /usr/bin/python3 python/periodic_torch_reference.py [--function sin|sin-exp|square]
       [--seed 0] [--epochs 100] [--config code|quick] [--threads 2] [--scale-inputs] [--json F]
"""
import argparse
import json
import math
import sys
import time

import numpy as np


def f_of(name, x):
    if name == "sin":
        return np.sin(x)
    if name == "sin-exp":
        return np.sin(x) * np.exp(0.01 * x)
    # scipy.signal.square: +1 on the first half of each 2 pi period
    return np.where(np.mod(x, 2 * np.pi) < np.pi, 1.0, -1.0)


def make_model_class(d, ff, L, T, H, scale_inputs=False):
    """The faithful model as a torch.nn.Module class (also used by
    bench_periodic_epoch_vs_torch.py, so the timed model is this one)."""
    import torch
    from torch import nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Linear(1, d)
            self.drop = nn.Dropout(0.1)
            self.layers = nn.ModuleList(
                nn.TransformerEncoderLayer(d, H, ff, dropout=0.1, batch_first=True)
                for _ in range(L))
            self.head = nn.Linear(T * d, 1)
            pe = torch.zeros(T, d)
            for t in range(T):
                for i in range(0, d, 2):
                    fr = math.exp(-math.log(10000.0) * i / d)
                    pe[t, i], pe[t, i + 1] = math.sin(t * fr), math.cos(t * fr)
            self.register_buffer("pe", pe, persistent=False)

        def forward(self, x):
            s = None
            if scale_inputs:
                s = torch.sqrt((x * x).mean(1, keepdim=True) + 1e-12)
                x = x / s
            h = self.drop(self.embed(x.unsqueeze(-1)) + self.pe)
            for layer in self.layers:
                h = layer(h)
            y = self.head(h.flatten(1)).squeeze(-1)
            return y * s.squeeze(-1) if s is not None else y

    return Model


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--function", default="sin", choices=["sin", "sin-exp", "square"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--config", default="code", choices=["code", "quick"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--scale-inputs", action="store_true",
                    help="RMS-scaled windows, prediction scaled back (kf's improvement option)")
    ap.add_argument("--json")
    a = ap.parse_args()
    import torch
    from torch import nn
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    np.random.seed(a.seed)
    d, ff, L, B, lr = (128, 128, 2, 512, 1e-3) if a.config == "code" else (16, 32, 1, 64, 3e-3)
    T, H = 99, 2

    model_cls = make_model_class(d, ff, L, T, H, a.scale_inputs)

    series = f_of(a.function, 0.1 * np.arange(1000))
    X = torch.tensor(np.stack([series[i:i + 99] for i in range(901)]), dtype=torch.float32)
    Y = torch.tensor(series[99:], dtype=torch.float32)
    model = model_cls()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    t0 = time.perf_counter()
    losses = []
    for _ in range(a.epochs):
        model.train()
        perm = torch.randperm(901)
        tot = 0.0
        for b0 in range(0, 901, B):
            idx = perm[b0:b0 + B]
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(X[idx]), Y[idx])
            loss.backward()
            opt.step()
            tot += loss.item() * len(idx)
        losses.append(tot / 901)
    secs = time.perf_counter() - t0
    model.eval()
    xs = 90.1 + 0.1 * np.arange(299)
    truth = f_of(a.function, xs)
    ctx = list(truth[:99])
    roll, tf = [], []
    with torch.no_grad():
        for j in range(200):
            w = torch.tensor([ctx[-99:]], dtype=torch.float32)
            p = float(model(w)[0])
            roll.append(p)
            ctx.append(p)
            wt = torch.tensor([truth[j:j + 99]], dtype=torch.float32)
            tf.append(float(model(wt)[0]))
    target = truth[99:]
    res = dict(function=a.function, seed=a.seed, epochs=a.epochs, config=a.config,
               scale_inputs=a.scale_inputs, final_train_loss=losses[-1],
               test_mse_rollout=float(np.mean((np.array(roll) - target) ** 2)),
               test_mse_teacher_forced=float(np.mean((np.array(tf) - target) ** 2)),
               train_seconds=secs)
    print(json.dumps(res))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
