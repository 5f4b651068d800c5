#!/usr/bin/python3
"""Training speed of kf's decoder-only language model against the same model in PyTorch 1.13.

One forward + backward + AdamW step of the same model, both on 2 threads: reports tokens/s,
ms/step and the ratio kf / torch (tokens/s; > 1 means kf is faster).

The model (`kf train lm --tokenizer char`, replicated in PyTorch): byte-level vocabulary V = the
distinct bytes of the training text (first 90 %) + <unk>; token embedding (V, C) and learned
positions (T, C), both N(0, 0.02); L x nn.TransformerEncoderLayer(C, H, 4C, dropout 0, gelu,
pre-LN) with a causal mask; final LayerNorm; logits = h @ tok_emb.T (tied); cross-entropy.
AdamW (betas 0.9/0.99, eps 1e-8, weight decay 0.1 on matrices only), gradient clipping at 1.0,
and kf's learning-rate schedule (linear warmup, cosine decay to lr/10). Batches: B random
windows of T+1 tokens of the training stream.
  tiny:  2 layers, 2 heads, C 64, T 32, B 16, lr 2e-3
  small: 4 layers, 4 heads, C 128, T 64, B 12, lr 1e-3

What is timed: for both, every training step *including* batch creation (kf's train clock
starts before it fills the batch), excluding evaluation. PyTorch runs a few untimed warm-up
steps first; kf's number is its summary's tokens_per_second over all --iters steps.

Usage: /usr/bin/python3 python/bench_lm_vs_torch.py [--kf build/release/kf] [--config tiny|small]
           [--iters 200] [--corpus FILE] [--json OUT.json]
Default corpus: Debian's fortunes (fortunes, literature, wisdom, people, science; '%' lines
dropped), written to a temporary directory.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = {  # layers, heads, d_model, context, batch, lr, warmup, eval windows (as in kf)
    "tiny": dict(L=2, H=2, C=64, T=32, B=16, lr=2e-3, warmup=40, eval_windows=64),
    "small": dict(L=4, H=4, C=128, T=64, B=12, lr=1e-3, warmup=100, eval_windows=240),
}
FORTUNES = "/usr/share/games/fortunes"
THREADS = 2


def default_kf():
    """build/release/kf, else build/dev/kf: the first that has `kf train lm` (skips stale builds)."""
    for p in ("release", "dev"):
        path = os.path.normpath(os.path.join(HERE, "..", "build", p, "kf"))
        if os.path.exists(path) and "train lm" in subprocess.run(
                [path, "train", "lm", "--help"], capture_output=True, text=True).stdout:
            return path
    return None


def write_fortunes_corpus(path):
    if not os.path.isdir(FORTUNES):
        sys.exit(f"{FORTUNES} not found: apt-get install fortunes, or pass --corpus FILE")
    with open(path, "wb") as out:
        for name in ("fortunes", "literature", "wisdom", "people", "science"):
            with open(os.path.join(FORTUNES, name), "rb") as f:
                out.writelines(l for l in f if l.rstrip(b"\r\n") != b"%")


def run_kf(kf, config, corpus, iters, tmp):
    summary = os.path.join(tmp, "summary.json")
    env = dict(os.environ, OMP_NUM_THREADS=str(THREADS))
    subprocess.run([kf, "train", "lm", "--config", config, "--corpus", corpus, "--iters", str(iters),
                    "--tokenizer", "char", "--seed", "0", "--summary", summary, "--quiet"],
                   env=env, check=True)
    with open(summary) as f:
        return json.load(f)


def run_torch(cfg, text, iters, warmup_steps=5):
    import torch
    import torch.nn.functional as F
    from torch import nn

    torch.set_num_threads(THREADS)
    torch.manual_seed(0)
    L, H, C, T, B = cfg["L"], cfg["H"], cfg["C"], cfg["T"], cfg["B"]
    cut = int(len(text) * 0.9)  # kf splits the text (bytes): the last 10 % is validation
    vocab = sorted(set(text[:cut]))
    ids = torch.zeros(256, dtype=torch.long)  # byte -> token id; 0 = <unk>
    ids[torch.tensor(vocab)] = torch.arange(1, len(vocab) + 1)
    train = ids[torch.frombuffer(bytearray(text[:cut]), dtype=torch.uint8).long()]
    val = ids[torch.frombuffer(bytearray(text[cut:]), dtype=torch.uint8).long()]
    V = len(vocab) + 1

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(V, C)
            self.pos = nn.Embedding(T, C)
            nn.init.normal_(self.tok.weight, 0.0, 0.02)
            nn.init.normal_(self.pos.weight, 0.0, 0.02)
            self.layers = nn.ModuleList(
                nn.TransformerEncoderLayer(C, H, 4 * C, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True) for _ in range(L))
            self.norm = nn.LayerNorm(C)

        def forward(self, x, y):
            t = x.shape[1]
            h = self.tok(x) + self.pos.weight[:t]
            mask = torch.triu(torch.full((t, t), float("-inf")), 1)
            for layer in self.layers:
                h = layer(h, src_mask=mask)
            logits = self.norm(h) @ self.tok.weight.T
            return F.cross_entropy(logits.reshape(-1, V), y.reshape(-1))

    model = LM()
    params = list(model.parameters())  # the tied weight appears once
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=cfg["lr"], betas=(0.9, 0.99), eps=1e-8)
    total, warmup = warmup_steps + iters, min(cfg["warmup"], max(1, iters // 10))
    lr0, lr_min = cfg["lr"], cfg["lr"] / 10

    def lr_at(step):  # kf's optim::lr_schedule
        if step < warmup:
            return lr0 * (step + 1) / warmup
        s = min(1.0, (step - warmup) / max(1, total - warmup))
        return lr_min + 0.5 * (lr0 - lr_min) * (1 + math.cos(math.pi * s))

    offsets = torch.arange(T + 1)

    def step(i):
        starts = torch.randint(0, len(train) - T, (B,))
        w = train[starts[:, None] + offsets]
        for g in opt.param_groups:
            g["lr"] = lr_at(i)
        opt.zero_grad(set_to_none=True)
        loss = model(w[:, :-1], w[:, 1:])
        loss.backward()
        nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        return loss

    for i in range(warmup_steps):
        step(i)
    t0 = time.perf_counter()
    for i in range(warmup_steps, total):
        step(i)
    seconds = time.perf_counter() - t0

    @torch.no_grad()
    def evaluate(data, windows):  # kf's lm_evaluate: evenly spaced windows
        room = len(data) - T - 1
        windows = max(1, min(windows, room + 1))
        starts = torch.tensor([i * room // (windows - 1) if windows > 1 else 0
                               for i in range(windows)])
        w = data[starts[:, None] + offsets]
        return model(w[:, :-1], w[:, 1:]).item()

    return dict(version=torch.__version__, threads=torch.get_num_threads(), V=V,
                parameters=sum(p.numel() for p in params), seconds=seconds,
                ms_per_step=1000 * seconds / iters, tokens_per_second=iters * B * T / seconds,
                final_train_loss=evaluate(train, cfg["eval_windows"]),
                val_loss=evaluate(val, cfg["eval_windows"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kf", default=default_kf(), help="kf binary (default: build/release/kf, else build/dev/kf)")
    ap.add_argument("--config", default="tiny", choices=sorted(CONFIGS))
    ap.add_argument("--iters", type=int, default=200, help="timed training steps (default 200)")
    ap.add_argument("--corpus", help="text FILE (default: Debian's fortunes)")
    ap.add_argument("--json", help="also write the numbers to this JSON file")
    a = ap.parse_args()
    if not a.kf or not os.path.exists(a.kf):
        sys.exit("no kf binary with `train lm` found: build it, or pass --kf PATH")
    cfg = CONFIGS[a.config]
    with tempfile.TemporaryDirectory() as tmp:
        corpus = a.corpus or os.path.join(tmp, "fortunes.txt")
        if not a.corpus:
            write_fortunes_corpus(corpus)
        with open(corpus, "rb") as f:
            text = f.read()
        version = subprocess.run([a.kf, "--version"], capture_output=True, text=True,
                                 check=True).stdout.strip()
        th = run_torch(cfg, text, a.iters)
        kf = run_kf(a.kf, a.config, corpus, a.iters, tmp)

    tokens_per_step = cfg["B"] * cfg["T"]
    kf_ms = 1000 * tokens_per_step / kf["tokens_per_second"]
    ratio = kf["tokens_per_second"] / th["tokens_per_second"]
    print(f"model: {a.config} ({cfg['L']} layers, {cfg['H']} heads, width {cfg['C']}, context "
          f"{cfg['T']}, batch {cfg['B']}), V={th['V']}, params kf={kf['parameters']} "
          f"torch={th['parameters']}")
    print(f"{a.iters} timed steps, {THREADS} threads (torch.get_num_threads() = {th['threads']}), "
          f"batch creation included, evaluation excluded")
    w = len(f"PyTorch {th['version']}:")
    print(f"  {'PyTorch ' + th['version'] + ':':<{w}} {th['tokens_per_second']:9.0f} tokens/s, "
          f"{th['ms_per_step']:7.2f} ms/step, train loss {th['final_train_loss']:.4f}, "
          f"val loss {th['val_loss']:.4f}")
    print(f"  {version + ':':<{w}} {kf['tokens_per_second']:9.0f} tokens/s, "
          f"{kf_ms:7.2f} ms/step, train loss {kf['final_train_loss']:.4f}, "
          f"val loss {kf['val_loss']:.4f}")
    print(f"  kf / torch speed: {ratio:.2f} x")
    if kf["parameters"] != th["parameters"] or kf["vocab"] != th["V"]:
        print(f"WARNING: the models differ: kf has {kf['parameters']} parameters (V={kf['vocab']}), "
              f"torch {th['parameters']} (V={th['V']})")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"config": a.config, "iters": a.iters, "threads": THREADS,
                       "tokens_per_step": tokens_per_step, "kf_version": version,
                       "kf": {"tokens_per_second": kf["tokens_per_second"], "ms_per_step": kf_ms,
                              "parameters": kf["parameters"], "vocab": kf["vocab"],
                              "final_train_loss": kf["final_train_loss"], "val_loss": kf["val_loss"]},
                       "torch": th, "kf_over_torch": ratio}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
