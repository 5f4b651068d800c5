"""PyTorch on the smoothing primitive: smooth() as a torch.autograd.Function over the C++ forward
and backward, and KernelAttention, a drop-in for torch.nn.MultiheadAttention with any kernel.

FlashAttention's contract: the forward saves lse_i = log sum_j K(q_i, k_j) (n numbers per head),
never the n x m weights; the backward recomputes them tile by tile in C++. CPU tensors, float32
or float64, batched over any leading dimensions (B, H, T, D).

    import torch, kernelformer.torch as kft
    out = kft.smooth(q, k, v)                                  # softmax attention, (B, H, T, D)
    out = kft.smooth(q, k, v, kernel="gaussian", bandwidth=h)  # h may be a tensor to learn
    attn = kft.KernelAttention(64, 8, kernel="gaussian:h=4", batch_first=True)
    y, w = attn(x, x, x, need_weights=True)                    # w: (B, T, T) averaged over heads
"""
from __future__ import annotations

import numbers
from typing import Optional, Tuple, Union

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from . import _kernelformer as _kf
from ._primitive import Kernel, make_kernel, make_mask

__all__ = ["smooth", "smooth_weights", "SmoothFunction", "KernelAttention"]


def _numpy(t):
    return t.detach().numpy()


class SmoothFunction(torch.autograd.Function):
    """out, lse = SmoothFunction.apply(q, k, v, param, per_dim, kernel, masks, dropout, seed,
    threads): q (..., n, d), k (..., m, d), v (..., m, dv) contiguous CPU tensors of one dtype;
    param a 0-d tensor (the kernel's bandwidth or temperature) or None; per_dim a (d,) tensor of
    per-dimension bandwidths or None; kernel a Kernel; masks a Mask or one per batch item.
    Gradients flow to q, k, v, param and per_dim; lse (..., n) is not differentiable. The
    backward is the C++ one and is differentiable once: a backward with create_graph=True (the
    first step of a second derivative, e.g. a gradient penalty) raises RuntimeError instead of
    returning a gradient whose own gradient would be silently wrong or zero."""

    @staticmethod
    def forward(ctx, q, k, v, param, per_dim, kernel, masks, dropout, seed, threads):
        if param is not None:
            kernel = kernel.with_param(float(param))
        bw = [] if per_dim is None else per_dim.detach().double().tolist()
        out, lse, _ = _kf.smooth_forward(_numpy(q), _numpy(k), _numpy(v), kernel, masks, True,
                                         threads, bw, True, dropout, seed)
        out, lse = torch.from_numpy(out), torch.from_numpy(lse)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.kernel, ctx.masks, ctx.bw = kernel, masks, bw
        ctx.dropout, ctx.seed, ctx.threads = dropout, seed, threads
        ctx.param_like = param
        ctx.per_dim_like = per_dim
        ctx.mark_non_differentiable(lse)
        return out, lse

    @staticmethod
    def backward(ctx, dout, dlse):
        if torch.is_grad_enabled():  # create_graph=True: a second derivative would follow
            raise RuntimeError(
                "kernelformer.torch.smooth is differentiable once: second derivatives "
                "(create_graph=True, e.g. a gradient penalty) are not supported; compute that "
                "term with PyTorch's own attention (torch.softmax(q @ k.T / sqrt(d)) @ v)")
        q, k, v, out, lse = ctx.saved_tensors
        need = list(ctx.needs_input_grad[:3])
        want_param = ctx.needs_input_grad[3] or ctx.needs_input_grad[4]
        dq, dk, dv, dparam, dbw = _kf.smooth_backward(
            _numpy(dout.contiguous()), _numpy(out), _numpy(lse), _numpy(q), _numpy(k), _numpy(v),
            ctx.kernel, ctx.masks, need, want_param, ctx.threads, ctx.bw, ctx.dropout, ctx.seed)
        grads = [None if g is None else torch.from_numpy(g) for g in (dq, dk, dv)]
        dp = None
        if ctx.needs_input_grad[3]:
            p = ctx.param_like
            dp = torch.full_like(p, dparam[0])
        dpd = None
        if ctx.needs_input_grad[4]:
            dpd = torch.tensor(dbw, dtype=ctx.per_dim_like.dtype).reshape(ctx.per_dim_like.shape)
        return (*grads, dp, dpd, None, None, None, None, None)


_NOT_TRACEABLE = (
    "kernelformer.torch runs its kernels in C++, which torch.jit cannot see: a trace would record "
    "their output as a constant (wrong for any other input) and TorchScript cannot compile the "
    "call. Run the module eagerly (it is as fast), or for deployment save its state_dict: it "
    "loads into torch.nn.MultiheadAttention when the kernel is exp_dot")


def _refuse_tracing():
    if torch.jit.is_tracing():
        raise RuntimeError(_NOT_TRACEABLE)


def _check_tensors(q, k, v):
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, not {type(t).__name__}")
        if t.device.type != "cpu":
            raise ValueError(f"{name} is on {t.device}: kernelformer computes on the CPU")
        if t.dtype not in (torch.float32, torch.float64):
            raise TypeError(f"{name} has dtype {t.dtype}: expected torch.float32 or torch.float64")
    if not q.dtype == k.dtype == v.dtype:
        raise TypeError(f"q, k and v must have one dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    if q.dim() < 2 or k.dim() < 2 or v.dim() < 2:
        raise ValueError("q, k and v must have at least 2 dimensions (..., rows, columns)")


def _param(value, name, dtype):
    """(plain float for the kernel text, tensor for autograd, per-dimension tensor)."""
    if value is None:
        return None, None, None
    if isinstance(value, torch.Tensor):
        if value.dim() == 0 or value.numel() == 1 and value.dim() == 1:
            return None, value.reshape(()).to(dtype), None
        if value.dim() == 1:
            if name != "bandwidth":
                raise ValueError("temperature must be one number")
            return None, None, value.to(dtype)
        raise ValueError(f"{name} must be a number, a 0-d tensor or (bandwidth) a (d,) tensor")
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value), None, None
    if name == "bandwidth":
        return None, None, torch.as_tensor(np.asarray(value, dtype=float), dtype=dtype)
    raise TypeError(f"{name} must be a number or a tensor, not {type(value).__name__}")


def smooth(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
           kernel: Union[str, Kernel] = "exp_dot",
           bandwidth: Union[None, float, torch.Tensor] = None, mask=None, *,
           temperature: Union[None, float, torch.Tensor] = None, split: Optional[int] = None,
           dropout: float = 0.0, return_lse: bool = False,
           threads: Optional[int] = None
           ) -> Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]:
    """Kernel smoothing (attention) with autograd: out_i = sum_j K(q_i,k_j) v_j / sum_j K(q_i,k_j).

    q (..., n, d), k (..., m, d), v (..., m, dv) -> out (..., n, dv): CPU tensors of one dtype
    (float32 or float64), leading dimensions equal (B, H, ... : one C++ call per item, items on
    the library's threads). Default: softmax attention, softmax(q k^T / sqrt(d)) v.

    kernel, mask: as kernelformer.smooth (text as `kf attend` spells it; mask may also be a
        boolean tensor (n, m) or (..., n, m), True where query i may see key j).
    bandwidth: h of a distance kernel: a number, a 0-d tensor (learnable: it gets a gradient) or
        a (d,) tensor of per-dimension bandwidths (learnable too).
    temperature: T of a dot kernel: a number or a 0-d tensor (learnable).
    dropout: dropout on the normalized weights (PyTorch's attention dropout); the mask is drawn
        from torch's generator, and the backward pass redraws the same one.
    return_lse: also return lse (..., n), log sum_j K(q_i, k_j) (not differentiable).

    Gradients flow to q, k, v and a tensor bandwidth/temperature. Raises ValueError (shapes,
    NaN/inf, kernel, mask) or TypeError (dtypes).

    >>> import torch, kernelformer.torch as kft
    >>> q, k, v = (torch.randn(2, 4, 5, 8, dtype=torch.float64) for _ in range(3))
    >>> out = kft.smooth(q, k, v, mask="causal")             # causal softmax attention
    >>> ref = torch.softmax((q @ k.transpose(-1, -2) / 8 ** 0.5).masked_fill(
    ...     torch.ones(5, 5).triu(1).bool(), float("-inf")), -1) @ v
    >>> bool(torch.allclose(out, ref))
    True
    """
    _refuse_tracing()
    _check_tensors(q, k, v)
    h, h_t, per_dim = _param(bandwidth, "bandwidth", q.dtype)
    t, t_t, _ = _param(temperature, "temperature", q.dtype)
    kern = make_kernel(kernel, h, t, split)
    if h_t is not None or per_dim is not None:
        if kern.is_product or kern.argument != "distance":
            raise ValueError(f"bandwidth applies to distance kernels; {kern.name} takes "
                             "temperature=")
    if t_t is not None and (kern.is_product or kern.argument != "dot"):
        raise ValueError(f"temperature applies to dot kernels; {kern.name} takes bandwidth=")
    if isinstance(mask, torch.Tensor):
        mask = mask.detach().cpu().numpy()
    masks = make_mask(mask, tuple(q.shape[:-2]))
    if not 0.0 <= float(dropout) < 1.0:
        raise ValueError(f"dropout = {dropout} must be in [0, 1)")
    seed = int(torch.randint(0, 2**62, (1,)).item()) if dropout > 0 else 0
    param = h_t if h_t is not None else t_t
    out, lse = SmoothFunction.apply(q.contiguous(), k.contiguous(), v.contiguous(), param,
                                    per_dim, kern, masks, float(dropout), seed,
                                    0 if threads is None else int(threads))
    return (out, lse) if return_lse else out


def smooth_weights(q: torch.Tensor, k: torch.Tensor, kernel: Union[str, Kernel] = "exp_dot",
                   bandwidth: Union[None, float, torch.Tensor] = None, mask=None, *,
                   temperature: Union[None, float, torch.Tensor] = None,
                   split: Optional[int] = None, threads: Optional[int] = None) -> torch.Tensor:
    """The normalized weights p_ij of smooth(q, k, ...): q (..., n, d), k (..., m, d) -> weights
    (..., n, m), a tensor without gradient (what scaled_dot_product_attention never returns).
    Same kernel, bandwidth, temperature, split and mask arguments as smooth().

    >>> import torch, kernelformer.torch as kft
    >>> x = torch.linspace(0, 1, 6, dtype=torch.float64)[:, None]
    >>> w = kft.smooth_weights(x, x, kernel="gaussian", bandwidth=0.2)
    >>> w.shape, bool(torch.allclose(w.sum(-1), torch.ones(6, dtype=torch.float64)))
    (torch.Size([6, 6]), True)
    """
    _refuse_tracing()
    _check_tensors(q, k, k)
    h, h_t, per_dim = _param(bandwidth, "bandwidth", q.dtype)
    t, t_t, _ = _param(temperature, "temperature", q.dtype)
    if h_t is not None:
        h = float(h_t)
    if t_t is not None:
        t = float(t_t)
    kern = make_kernel(kernel, h, t, split)
    if isinstance(mask, torch.Tensor):
        mask = mask.detach().cpu().numpy()
    masks = make_mask(mask, tuple(q.shape[:-2]))
    bw = [] if per_dim is None else per_dim.detach().double().tolist()
    w = _kf.smooth_weights(_numpy(q.contiguous()), _numpy(k.contiguous()), kern, masks, [],
                           0 if threads is None else int(threads), bw, q.dtype == torch.float64)
    return torch.from_numpy(w)


class KernelAttention(nn.Module):
    """Multi-head attention whose every head is the smoothing primitive with any kernel: a
    drop-in for torch.nn.MultiheadAttention (same constructor arguments, parameter names and
    forward signature; its state_dict loads into either).

    KernelAttention(embed_dim, num_heads, dropout=0.0, bias=True, batch_first=False,
                    kernel="exp_dot", mask=None)
    kernel: any kernel text ("exp_dot" is softmax attention with T = sqrt(head dim); a distance
        kernel such as "gaussian:h=4" compares query and key positions in the head's space).
    mask: a mask text applied to every call ("causal", "window:16", "causal&window:8").

    forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
            average_attn_weights=True, is_causal=False) -> (attn_output, attn_weights)
    Shapes (batch_first=True): query (B, T, E), key and value (B, S, E) -> attn_output (B, T, E);
    attn_weights (B, T, S) averaged over heads, (B, H, T, S) with average_attn_weights=False,
    None with need_weights=False. batch_first=False: (T, B, E) as PyTorch. Unbatched (T, E)
    inputs give (T, E) and (T, S).
    key_padding_mask (B, S) and attn_mask (T, S) or (B*H, T, S): boolean, True where attention
    is NOT allowed (PyTorch's convention), or float masks of 0 and -inf. Additive float biases
    are not kernels and raise ValueError. The weights returned are before dropout and carry no
    gradient; computing them costs an extra pass (need_weights=False skips it).

    Inside PyTorch's own modules: set it as the self_attn (and multihead_attn) of
    nn.TransformerEncoderLayer, nn.TransformerEncoder or nn.TransformerDecoderLayer, in train or
    eval mode, either batch_first; the layer then always calls this module (PyTorch's fused
    fast path, which would compute softmax itself, is declined: see _qkv_same_embed_dim).

    >>> import torch, kernelformer.torch as kft
    >>> attn = kft.KernelAttention(16, 2, batch_first=True, kernel="gaussian:h=4")
    >>> layer = torch.nn.TransformerEncoderLayer(16, 2, 32, batch_first=True)
    >>> layer.self_attn = attn
    >>> layer.eval()(torch.randn(3, 7, 16)).shape
    torch.Size([3, 7, 16])
    """

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None, kernel="exp_dot", mask=None):
        super().__init__()
        if add_bias_kv or add_zero_attn:
            raise ValueError("KernelAttention: add_bias_kv and add_zero_attn are not offered")
        if (kdim not in (None, embed_dim)) or (vdim not in (None, embed_dim)):
            raise ValueError("KernelAttention: kdim and vdim must equal embed_dim")
        if embed_dim % num_heads != 0:
            raise ValueError(f"embed_dim {embed_dim} does not split into {num_heads} heads")
        factory = {"device": device, "dtype": dtype}
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.dropout, self.batch_first = dropout, batch_first
        self.kernel, self.mask = kernel, mask
        # nn.MultiheadAttention's attributes that PyTorch's own modules read. False for
        # _qkv_same_embed_dim on purpose: TransformerEncoderLayer/TransformerEncoder (eval,
        # batch_first) otherwise take their fused fast path, which reads in_proj_weight and
        # computes plain softmax attention itself, silently bypassing this module's kernel. With
        # it False they call forward(), as they do in training.
        self._qkv_same_embed_dim = False
        self.kdim = self.vdim = embed_dim
        self.bias_k = self.bias_v = None
        self.add_zero_attn = False
        make_kernel(kernel)  # a bad kernel text fails here, not at the first forward
        if mask is not None:
            make_mask(mask)
        self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim, **factory))
        if bias:
            self.in_proj_bias = nn.Parameter(torch.empty(3 * embed_dim, **factory))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias, **factory)
        self._reset_parameters()

    def _reset_parameters(self):
        nn.init.xavier_uniform_(self.in_proj_weight)  # as nn.MultiheadAttention
        if self.in_proj_bias is not None:
            nn.init.constant_(self.in_proj_bias, 0.0)
            nn.init.constant_(self.out_proj.bias, 0.0)

    def extra_repr(self):
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, "
                f"kernel={self.kernel!r}, mask={self.mask!r}, dropout={self.dropout}")

    def _masks(self, B, T, S, key_padding_mask, attn_mask, is_causal):
        """A Mask or one per (batch item, head)."""
        base = make_mask(self.mask) if self.mask is not None else make_mask("causal" if is_causal
                                                                            else None)
        if self.mask is not None and is_causal:
            base = base & make_mask("causal")
        H = self.num_heads
        per_item = None  # (B*H) list
        if attn_mask is not None:
            allowed = _allowed(attn_mask, "attn_mask")
            if allowed.ndim == 2:
                if allowed.shape != (T, S):
                    raise ValueError(f"attn_mask is {tuple(allowed.shape)}, expected ({T}, {S})")
                base = base & make_mask(allowed)
            elif allowed.shape == (B * H, T, S):
                per_item = [base & make_mask(a) for a in allowed]
            else:
                raise ValueError(f"attn_mask is {tuple(allowed.shape)}, expected ({T}, {S}) or "
                                 f"({B * H}, {T}, {S})")
        if key_padding_mask is not None:
            keep = _allowed(key_padding_mask, "key_padding_mask")
            if keep.shape != (B, S):
                raise ValueError(f"key_padding_mask is {tuple(keep.shape)}, expected ({B}, {S})")
            items = per_item or [base] * (B * H)
            per_item = []
            for b in range(B):
                n_keep = int(keep[b].sum())
                if keep[b, :n_keep].all():  # padding at the end: a length
                    extra = _kf.Mask.key_padding([n_keep])
                else:
                    extra = make_mask(np.broadcast_to(keep[b], (T, S)))
                per_item.extend(items[b * H + h] & extra for h in range(H))
        return per_item if per_item is not None else base

    def __prepare_scriptable__(self):
        """torch.jit.script calls this first: the C++ kernels cannot be scripted (a clear error
        instead of TorchScript's own about the library's types)."""
        raise RuntimeError(_NOT_TRACEABLE)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        unbatched = query.dim() == 2
        if unbatched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:
            query, key, value = (x.transpose(0, 1) for x in (query, key, value))
        # now (T, B, E) as PyTorch's own implementation works
        T, B, E = query.shape
        S = key.shape[0]
        H, D = self.num_heads, self.head_dim
        if E != self.embed_dim:
            raise ValueError(f"query has {E} features, expected embed_dim = {self.embed_dim}")
        w, b = self.in_proj_weight, self.in_proj_bias
        if query is key and key is value:
            q, k, v = F.linear(query, w, b).chunk(3, dim=-1)
        else:
            bq, bk, bv = (None, None, None) if b is None else b.chunk(3)
            wq, wk, wv = w.chunk(3)
            q, k, v = F.linear(query, wq, bq), F.linear(key, wk, bk), F.linear(value, wv, bv)
        # (T, B, E) -> (B, H, T, D)
        q = q.reshape(T, B, H, D).permute(1, 2, 0, 3)
        k = k.reshape(S, B, H, D).permute(1, 2, 0, 3)
        v = v.reshape(S, B, H, D).permute(1, 2, 0, 3)
        masks = self._masks(B, T, S, key_padding_mask, attn_mask, is_causal)
        kern = make_kernel(self.kernel)
        att = smooth(q, k, v, kern, mask=masks, dropout=self.dropout if self.training else 0.0)
        att = att.permute(2, 0, 1, 3).reshape(T, B, E)  # (B, H, T, D) -> (T, B, E)
        out = self.out_proj(att)
        weights = None
        if need_weights:
            weights = smooth_weights(q, k, kern, mask=masks)  # (B, H, T, S)
            if average_attn_weights:
                weights = weights.mean(dim=1)
            if unbatched:
                weights = weights.squeeze(0)
        if unbatched:
            out = out.squeeze(1)
        elif self.batch_first:
            out = out.transpose(0, 1)
        return out, weights


def _allowed(m, name):
    """A PyTorch mask (True or -inf: not allowed) as a boolean numpy array of allowed pairs."""
    if not isinstance(m, torch.Tensor):
        m = torch.as_tensor(m)
    m = m.detach().cpu()
    if m.dtype == torch.bool:
        return (~m).numpy()
    if m.is_floating_point():
        a = m.numpy()
        if not np.all((a == 0) | np.isneginf(a)):
            raise ValueError(f"{name}: a float mask must hold only 0 and -inf (an additive bias "
                             "changes the kernel; use a product kernel instead)")
        return a == 0
    raise TypeError(f"{name} must be a boolean or float tensor, not {m.dtype}")
