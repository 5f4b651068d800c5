#!/usr/bin/python3
"""PyTorch parity fixture for kernelformer's sequence regressor (Debian python3-torch).

Builds the same model in PyTorch 1.13 — Linear(1 -> d) embedding + sinusoidal PE, two
nn.TransformerEncoderLayer (post-LN, ReLU, dropout 0, batch_first), flatten, Linear(T*d -> 1) —
with torch.manual_seed(0) default initialization, and writes to tests/fixtures/:
  torch_regressor.safetensors        the weights (state_dict names) + our config as metadata
  torch_regressor_grads.safetensors  d MSE / d every parameter for the batch below
  torch_regressor_io.npy             rows: x (B x T) | y | prediction  (float32 -> float64)
  torch_regressor_adam.npy           MSE before each of 10 Adam(lr=1e-3) steps on that batch
Run: /usr/bin/python3 python/make_fixture_transformer.py
"""
import json
import math
import os
import struct

import numpy as np
import torch
from torch import nn

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")
T, D, H, FF, L, B = 6, 8, 2, 12, 2, 3


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(1, D)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, batch_first=True) for _ in range(L))
        self.head = nn.Linear(T * D, 1)
        pe = torch.zeros(T, D)
        for t in range(T):
            for i in range(0, D, 2):
                f = math.exp(-math.log(10000.0) * i / D)
                pe[t, i] = math.sin(t * f)
                pe[t, i + 1] = math.cos(t * f)
        self.register_buffer("pe", pe, persistent=False)

    def forward(self, x):                      # x: (B, T)
        h = self.embed(x.unsqueeze(-1)) + self.pe
        for layer in self.layers:
            h = layer(h)
        return self.head(h.flatten(1)).squeeze(-1)


def save_safetensors(path, tensors, metadata):
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name, t in tensors.items():
        data = t.detach().contiguous().float().numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def main():
    torch.manual_seed(0)
    model = Regressor()
    model.train()
    x = torch.randn(B, T)
    y = torch.randn(B)
    meta = {"kind": "sequence_regressor", "seq_len": str(T), "layers": str(L), "d_model": str(D),
            "heads": str(H), "d_ff": str(FF), "dropout": "0", "activation": "relu",
            "norm_first": "false", "kernel": "exp_dot", "kernel_split": "0", "pe_dim": str(D),
            "pe_concat": "false", "causal": "false"}
    save_safetensors(os.path.join(OUT, "torch_regressor.safetensors"), model.state_dict(), meta)
    pred = model(x)
    loss = nn.functional.mse_loss(pred, y)
    loss.backward()
    save_safetensors(os.path.join(OUT, "torch_regressor_grads.safetensors"),
                     {n: p.grad for n, p in model.named_parameters()}, {})
    io = np.concatenate([x.numpy(), y.numpy()[:, None], pred.detach().numpy()[:, None]], axis=1)
    np.save(os.path.join(OUT, "torch_regressor_io.npy"), io.astype(np.float64))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    for _ in range(10):
        opt.zero_grad()
        l = nn.functional.mse_loss(model(x), y)
        losses.append(l.item())
        l.backward()
        opt.step()
    np.save(os.path.join(OUT, "torch_regressor_adam.npy"), np.array(losses, dtype=np.float64))
    print("loss", loss.item(), "adam", losses[0], "->", losses[-1])


if __name__ == "__main__":
    main()
