#!/usr/bin/python3
"""PyTorch parity fixture for kernelformer's encoder-decoder token model (Debian python3-torch).

Builds, in PyTorch 1.13, the model of include/kernelformer/model/token_model.hpp with
encoder_layers = decoder_layers = 2, pre-LN and post-LN, GELU, dropout 0, learned positions, tied head:
  src_emb, src_pos_emb (nn.Embedding), encoder = nn.TransformerEncoder(norm=nn.LayerNorm),
  tok_emb, pos_emb, decoder.layers = nn.TransformerDecoderLayer x 2, norm = nn.LayerNorm,
  logits = norm(h) @ tok_emb.weight.T, loss = F.cross_entropy(ignore_index=-1)
with a causal target mask and source key padding (the second item's last source token is
padding). Writes to tests/fixtures/:
  torch_encdec[_postln].safetensors        weights (state_dict names = ours) + our config as metadata
  torch_encdec_grads.safetensors  d loss / d every parameter
  torch_encdec_io.npy             src (B x S) | tgt (B x T) | targets (B x T) | src length (B)
  torch_encdec_logits.npy         logits (B*T x V); the loss is appended as one extra row's
                                  first entry
Run: /usr/bin/python3 python/make_fixture_token_model.py
"""
import os

import numpy as np
import torch
from torch import nn

from make_fixture_transformer import save_safetensors

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")
V, SV, CTX, C, H, FF, B, S, T = 11, 9, 8, 16, 2, 24, 2, 6, 5


class EncDec(nn.Module):
    def __init__(self, norm_first):
        super().__init__()
        self.src_emb = nn.Embedding(SV, C)
        self.src_pos_emb = nn.Embedding(CTX, C)
        layer = nn.TransformerEncoderLayer(C, H, FF, 0.0, "gelu", batch_first=True, norm_first=norm_first)
        self.encoder = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(C), enable_nested_tensor=False)
        self.tok_emb = nn.Embedding(V, C)
        self.pos_emb = nn.Embedding(CTX, C)
        dl = nn.TransformerDecoderLayer(C, H, FF, 0.0, "gelu", batch_first=True, norm_first=norm_first)
        self.decoder = nn.TransformerDecoder(dl, 2)
        self.norm = nn.LayerNorm(C)

    def forward(self, src, tgt, src_pad):
        s = self.src_emb(src) + self.src_pos_emb.weight[: src.shape[1]]
        mem = self.encoder(s, src_key_padding_mask=src_pad)
        h = self.tok_emb(tgt) + self.pos_emb.weight[: tgt.shape[1]]
        causal = torch.triu(torch.full((tgt.shape[1], tgt.shape[1]), float("-inf")), 1)
        h = self.decoder(h, mem, tgt_mask=causal, memory_key_padding_mask=src_pad)
        return self.norm(h) @ self.tok_emb.weight.T


def make(norm_first, tag):
    torch.manual_seed(0)
    m = EncDec(norm_first)
    with torch.no_grad():  # our init scale (N(0, 0.02²) embeddings) is not the point here
        for p in m.parameters():
            if p.dim() >= 2:
                p.normal_(0, 0.3)
    g = torch.Generator().manual_seed(1)
    src = torch.randint(0, SV, (B, S), generator=g)
    tgt = torch.randint(0, V, (B, T), generator=g)
    targets = torch.randint(0, V, (B, T), generator=g)
    targets[1, 4] = -1
    lengths = torch.tensor([S, S - 1])
    src_pad = torch.arange(S)[None, :] >= lengths[:, None]
    logits = m(src, tgt, src_pad).reshape(B * T, V)
    loss = nn.functional.cross_entropy(logits, targets.reshape(-1), ignore_index=-1)
    loss.backward()
    meta = {"kind": "token_model", "vocab": str(V), "src_vocab": str(SV), "context": str(CTX),
            "encoder_layers": "2", "decoder_layers": "2", "d_model": str(C), "heads": str(H),
            "d_ff": str(FF), "dropout": "0", "activation": "gelu", "norm_first": "true" if norm_first else "false",
            "kernel": "exp_dot", "kernel_split": "0", "learned_positions": "true",
            "tie_weights": "true"}
    state = {k: v for k, v in m.state_dict().items()}
    save_safetensors(os.path.join(OUT, f"torch_encdec{tag}.safetensors"), state, meta)
    grads = {k: p.grad for k, p in m.named_parameters()}
    save_safetensors(os.path.join(OUT, f"torch_encdec{tag}_grads.safetensors"), grads, {})
    io_rows = np.zeros((B, S + 2 * T + 1))
    io_rows[:, :S] = src.numpy()
    io_rows[:, S:S + T] = tgt.numpy()
    io_rows[:, S + T:S + 2 * T] = targets.numpy()
    io_rows[:, -1] = lengths.numpy()
    np.save(os.path.join(OUT, f"torch_encdec{tag}_io.npy"), io_rows)
    out = np.zeros((B * T + 1, V))
    out[:B * T] = logits.detach().numpy()
    out[B * T, 0] = loss.item()
    np.save(os.path.join(OUT, f"torch_encdec{tag}_logits.npy"), out)
    print(f"{tag or 'pre-LN'}: loss {loss.item():.6f}; {len(state)} tensors")


def main():
    make(True, "")           # pre-LN (GPT/T5 style)
    make(False, "_postln")   # post-LN (PyTorch's default, the original Transformer)
    print(f"wrote {OUT}/torch_encdec*")


if __name__ == "__main__":
    main()
