#!/usr/bin/python3
"""kf train lm against nanoGPT's recipes on tiny Shakespeare: validation loss and ms per step.

Three trainers of the same character-level GPT on the same corpus and split (the first 90 % of
../shared/data/tinyshakespeare.txt trains, the rest validates), on the same machine, one after
the other, each on THREADS threads:

  torch    this script's PyTorch GPT, written to nanoGPT's structure (model.py / train.py): one
           fused QKV projection, the causal mask a buffer built once, GELU MLP, LayerNorm and
           Linear without biases (nanoGPT's default bias=False), tied token embedding and LM
           head, N(0, 0.02) weights and N(0, 0.02/sqrt(2 L)) output projections, AdamW (decay
           0.1 on >= 2-D parameters, betas 0.9/0.99), linear warmup then cosine to min_lr,
           gradient clipping at 1, random windows (torch.randint offsets), evaluation under
           torch.no_grad() in eval mode.
  nanogpt  nanoGPT's own train.py (only with --nanogpt DIR, a checkout of
           github.com/karpathy/nanoGPT): its data/shakespeare_char/{train,val}.bin and meta.pkl
           are written here the way its prepare.py writes them (uint16 ids of the sorted
           characters), then `train.py config/train_shakespeare_char.py --device=cpu
           --compile=False ...` with the recipe's overrides. Its "iter k: ... time X ms" lines
           give the step time: the check that the torch baseline runs at the reference's speed.
  kf       `kf train lm --corpus FILE --tokenizer char --config small|baby`; its summary's
           tokens/s counts training steps only (batch assembly included, evaluation excluded).

Recipes (nanoGPT's):
  small  its README's CPU run: 4 layers x 4 heads x width 128, context 64, batch 12, 2000
         iterations, lr 1e-3 -> 1e-4, warmup 100, dropout 0 -> validation loss 1.88
  baby   config/train_shakespeare_char.py: 6 x 6 x 384, context 256, batch 64, 5000 iterations,
         dropout 0.2 (use --iters: each step is seconds on a CPU)

Step time: the median over the timed steps (the first 5 of each run excluded: allocation and
thread start-up), evaluation excluded, batch creation included. Loss: validation loss at the
end (nanoGPT's estimate: eval_iters random batches; kf's: --eval-iters evenly spaced windows).
The ratio is torch ms/step over kf ms/step (> 1: kf is faster).

Usage (from the repository root, after a release build):
    /usr/bin/python3 python/bench_lm_vs_nanogpt.py --kf build/release/kf --config small \
        [--iters 2000] [--nanogpt DIR] [--json OUT.json]
"""
import argparse
import json
import math
import os
import pickle
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "data", "tinyshakespeare.txt"))
THREADS = 2
SKIP = 5  # first steps not timed
RECIPES = {
    "small": dict(L=4, H=4, C=128, T=64, B=12, iters=2000, lr=1e-3, min_lr=1e-4, warmup=100,
                  dropout=0.0, eval_iters=20, published_val=1.88),
    "baby": dict(L=6, H=6, C=384, T=256, B=64, iters=5000, lr=1e-3, min_lr=1e-4, warmup=100,
                 dropout=0.2, eval_iters=20, published_val=1.47),
}


def read_corpus(path):
    with open(path, "r", encoding="utf-8") as f:
        text = f.read()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    ids = [stoi[c] for c in text]
    cut = int(0.9 * len(ids))
    return text, chars, ids[:cut], ids[cut:]


def run_torch(cfg, iters, vocab, train_ids, val_ids, seed=1337):
    """nanoGPT's structure, written here: returns ms/step (median) and the final losses."""
    import numpy as np
    import torch
    import torch.nn.functional as F
    from torch import nn

    torch.set_num_threads(THREADS)
    torch.manual_seed(seed)
    L, H, C, T, B = cfg["L"], cfg["H"], cfg["C"], cfg["T"], cfg["B"]
    train = torch.from_numpy(np.array(train_ids, dtype=np.int64))
    val = torch.from_numpy(np.array(val_ids, dtype=np.int64))

    class LayerNorm(nn.Module):  # nanoGPT's, with bias=False: a weight and no bias
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(C))

        def forward(self, x):
            return F.layer_norm(x, self.weight.shape, self.weight, None, 1e-5)

    class SelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(C, 3 * C, bias=False)
            self.c_proj = nn.Linear(C, C, bias=False)
            self.drop = nn.Dropout(cfg["dropout"])
            self.register_buffer("mask", torch.tril(torch.ones(T, T)).view(1, 1, T, T))

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.c_attn(x).split(C, dim=2)
            q = q.view(b, t, H, c // H).transpose(1, 2)
            k = k.view(b, t, H, c // H).transpose(1, 2)
            v = v.view(b, t, H, c // H).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
            att = self.drop(F.softmax(att, dim=-1))
            y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
            return self.drop(self.c_proj(y))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = LayerNorm()
            self.attn = SelfAttention()
            self.ln_2 = LayerNorm()
            self.c_fc = nn.Linear(C, 4 * C, bias=False)
            self.c_proj = nn.Linear(4 * C, C, bias=False)
            self.drop = nn.Dropout(cfg["dropout"])

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.drop(self.c_proj(F.gelu(self.c_fc(self.ln_2(x)))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab, C)
            self.wpe = nn.Embedding(T, C)
            self.drop = nn.Dropout(cfg["dropout"])
            self.h = nn.ModuleList(Block() for _ in range(L))
            self.ln_f = LayerNorm()
            self.lm_head = nn.Linear(C, vocab, bias=False)
            self.wte.weight = self.lm_head.weight  # tied
            for name, p in self.named_parameters():
                if p.dim() >= 2:
                    std = 0.02 / math.sqrt(2 * L) if name.endswith("c_proj.weight") else 0.02
                    nn.init.normal_(p, 0.0, std)

        def forward(self, idx, targets):
            t = idx.shape[1]
            x = self.drop(self.wte(idx) + self.wpe(torch.arange(t)))
            for block in self.h:
                x = block(x)
            logits = self.lm_head(self.ln_f(x))
            return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    model = GPT()
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=cfg["lr"], betas=(0.9, 0.99))

    def lr_at(it):  # nanoGPT's get_lr with lr_decay_iters = iters
        if it < cfg["warmup"]:
            return cfg["lr"] * (it + 1) / (cfg["warmup"] + 1)
        ratio = min(1.0, (it - cfg["warmup"]) / max(1, iters - cfg["warmup"]))
        return cfg["min_lr"] + 0.5 * (1 + math.cos(math.pi * ratio)) * (cfg["lr"] - cfg["min_lr"])

    def batch(data):
        ix = torch.randint(len(data) - T, (B,))
        x = torch.stack([data[i:i + T] for i in ix])
        y = torch.stack([data[i + 1:i + 1 + T] for i in ix])
        return x, y

    @torch.no_grad()
    def estimate(data):
        model.eval()
        losses = [model(*batch(data)).item() for _ in range(cfg["eval_iters"])]
        model.train()
        return sum(losses) / len(losses)

    times = []
    model.train()
    for it in range(iters):
        t0 = time.perf_counter()
        for g in opt.param_groups:
            g["lr"] = lr_at(it)
        x, y = batch(train)
        loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        times.append(1000 * (time.perf_counter() - t0))
    return dict(version=torch.__version__, parameters=sum(p.numel() for p in params),
                ms_per_step=statistics.median(times[SKIP:] or times),
                train_loss=estimate(train), val_loss=estimate(val))


def run_nanogpt(repo, cfg, iters, chars, train_ids, val_ids):
    """nanoGPT's own train.py on a copy of the checkout, with the data written the way its
    prepare.py writes it."""
    import numpy as np
    work = tempfile.mkdtemp(prefix="kf_nanogpt_")
    try:
        src = os.path.join(work, "nanoGPT")
        shutil.copytree(repo, src, ignore=shutil.ignore_patterns(".git"))
        data = os.path.join(src, "data", "shakespeare_char")
        os.makedirs(data, exist_ok=True)
        np.array(train_ids, dtype=np.uint16).tofile(os.path.join(data, "train.bin"))
        np.array(val_ids, dtype=np.uint16).tofile(os.path.join(data, "val.bin"))
        with open(os.path.join(data, "meta.pkl"), "wb") as f:
            pickle.dump({"vocab_size": len(chars), "itos": dict(enumerate(chars)),
                         "stoi": {c: i for i, c in enumerate(chars)}}, f)
        cmd = [sys.executable, "train.py", "config/train_shakespeare_char.py", "--device=cpu",
               "--compile=False", f"--eval_iters={cfg['eval_iters']}", "--log_interval=1",
               f"--block_size={cfg['T']}", f"--batch_size={cfg['B']}", f"--n_layer={cfg['L']}",
               f"--n_head={cfg['H']}", f"--n_embd={cfg['C']}", f"--max_iters={iters}",
               f"--lr_decay_iters={iters}", f"--dropout={cfg['dropout']}",
               f"--eval_interval={iters}", f"--out_dir={os.path.join(work, 'out')}",
               "--always_save_checkpoint=False"]
        env = dict(os.environ, OMP_NUM_THREADS=str(THREADS))
        out = subprocess.run(cmd, cwd=src, env=env, capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"nanoGPT's train.py failed:\n{out.stderr[-2000:]}")
        times = [float(m) for m in re.findall(r"^iter \d+: loss [\d.]+, time ([\d.]+)ms",
                                              out.stdout, re.M)]
        evals = re.findall(r"step \d+: train loss ([\d.]+), val loss ([\d.]+)", out.stdout)
        return dict(ms_per_step=statistics.median(times[SKIP:] or times),
                    train_loss=float(evals[-1][0]) if evals else float("nan"),
                    val_loss=float(evals[-1][1]) if evals else float("nan"))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_kf(kf, config, iters, corpus, cfg):
    with tempfile.TemporaryDirectory() as tmp:
        summary = os.path.join(tmp, "summary.json")
        env = dict(os.environ, OMP_NUM_THREADS=str(THREADS))
        subprocess.run([kf, "train", "lm", "--corpus", corpus, "--tokenizer", "char", "--config",
                        config, "--iters", str(iters), "--summary", summary, "--quiet"],
                       env=env, check=True)
        with open(summary) as f:
            s = json.load(f)
    return dict(parameters=s["parameters"], train_loss=s["final_train_loss"],
                val_loss=s["val_loss"],
                ms_per_step=1000 * cfg["B"] * cfg["T"] / s["tokens_per_second"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kf", default=os.path.join(HERE, "..", "build", "release", "kf"))
    ap.add_argument("--config", default="small", choices=sorted(RECIPES))
    ap.add_argument("--iters", type=int, help="training steps (default: the recipe's)")
    ap.add_argument("--corpus", default=CORPUS, help=f"default {CORPUS}")
    ap.add_argument("--nanogpt", help="a checkout of nanoGPT: also run its own train.py")
    ap.add_argument("--skip-torch", action="store_true", help="only kf (and nanoGPT)")
    ap.add_argument("--json", help="also write the numbers here")
    a = ap.parse_args()
    if not os.path.exists(a.kf):
        sys.exit(f"{a.kf}: not found (cmake --preset release && cmake --build --preset release)")
    if not os.path.exists(a.corpus):
        sys.exit(f"{a.corpus}: not found (../shared/data/tinyshakespeare.txt, or --corpus FILE)")
    cfg = RECIPES[a.config]
    iters = a.iters or cfg["iters"]
    text, chars, train_ids, val_ids = read_corpus(a.corpus)
    print(f"tiny Shakespeare: {len(text):,} characters, vocabulary {len(chars)}; recipe "
          f"{a.config}: {cfg['L']} layers x {cfg['H']} heads x width {cfg['C']}, context "
          f"{cfg['T']}, batch {cfg['B']}, dropout {cfg['dropout']}, {iters} steps, "
          f"{THREADS} threads", flush=True)
    rows = {}
    if not a.skip_torch:
        rows["torch (nanoGPT's structure)"] = run_torch(cfg, iters, len(chars), train_ids, val_ids)
        print_row("torch (nanoGPT's structure)", rows["torch (nanoGPT's structure)"])
    if a.nanogpt:
        rows["nanoGPT train.py"] = run_nanogpt(a.nanogpt, cfg, iters, chars, train_ids, val_ids)
        print_row("nanoGPT train.py", rows["nanoGPT train.py"])
    rows["kf"] = run_kf(a.kf, a.config, iters, a.corpus, cfg)
    print_row("kf", rows["kf"])
    kf_ms = rows["kf"]["ms_per_step"]
    for name, r in rows.items():
        if name != "kf":
            print(f"kf speed against {name}: {r['ms_per_step'] / kf_ms:.2f}x")
    if iters == cfg["iters"]:
        print(f"nanoGPT's published validation loss for this recipe: {cfg['published_val']}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"config": a.config, "iters": iters, "threads": THREADS, "rows": rows}, f,
                      indent=2)


def print_row(name, r):
    print(f"  {name:<28} {r['ms_per_step']:8.1f} ms/step   train loss {r['train_loss']:.4f}   "
          f"val loss {r['val_loss']:.4f}" +
          (f"   {r['parameters']:,} parameters" if "parameters" in r else ""), flush=True)


if __name__ == "__main__":
    main()
