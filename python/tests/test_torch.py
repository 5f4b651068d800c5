"""kernelformer.torch: the autograd Function against PyTorch's own attention (forward and every
gradient), gradcheck in double for each kernel family, and KernelAttention against
torch.nn.MultiheadAttention with the same weights."""
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import kernelformer.torch as kft  # noqa: E402


def torch_attention(q, k, v, allowed=None):
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if allowed is not None:
        s = s.masked_fill(~allowed, float("-inf"))
    return torch.softmax(s, -1) @ v


def randn(*shape, dtype=torch.float64, seed=None):
    g = torch.Generator().manual_seed(seed) if seed is not None else None
    return torch.randn(*shape, dtype=dtype, generator=g).requires_grad_()


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-12), (torch.float32, 2e-5)])
@pytest.mark.parametrize("causal", [False, True])
def test_forward_and_gradients_match_pytorch_attention(dtype, tol, causal):
    torch.manual_seed(0)
    B, H, T, S, D = 2, 3, 17, 23, 16
    q, k, v = randn(B, H, T, D, dtype=dtype), randn(B, H, S, D, dtype=dtype), randn(B, H, S, 8,
                                                                                   dtype=dtype)
    allowed = torch.ones(T, S, dtype=torch.bool).tril(S - T) if causal else None
    out = kft.smooth(q, k, v, mask="causal:6" if causal else None)
    ref = torch_attention(q, k, v, allowed)
    assert out.dtype == dtype and out.shape == (B, H, T, 8)
    torch.testing.assert_close(out, ref, rtol=tol, atol=tol)
    g = torch.randn_like(out)
    ours = torch.autograd.grad(out, (q, k, v), g)
    theirs = torch.autograd.grad(ref, (q, k, v), g)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b, rtol=10 * tol, atol=10 * tol)


FAMILIES = [  # (kernel, keyword arguments): one per kernel family
    ("exp_dot", {}),                                   # the attention kernel (dot, log domain)
    ("gaussian", dict(bandwidth=1.5)),                 # distance, log domain
    ("laplacian", dict(bandwidth=1.5)),                # distance, |q - k| (kink at 0 only)
    ("cauchy", dict(bandwidth=1.2)),                   # distance, log domain, heavy tail
    ("epanechnikov", dict(bandwidth=4.0)),             # compact, summed directly
    ("tricube", dict(bandwidth=4.5)),                  # compact
    ("polynomial:degree=2,c=1", {}),                   # dot, polynomial
    ("linear:c=8", {}),                                # dot, positive part (kept positive here)
    ("periodic:h=2,period=5", {}),                     # distance, periodic
    ("exp_dot*gaussian:h=2", dict(split=2)),           # product of two kernels on column blocks
]


@pytest.mark.parametrize("kernel,kw", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_gradcheck_every_kernel_family(kernel, kw):
    q, k, v = randn(2, 5, 4, seed=1), randn(2, 7, 4, seed=2), randn(2, 7, 3, seed=3)
    if kernel in ("epanechnikov", "tricube"):  # pairs on both sides, none within 1e-3 of the edge
        r = torch.cdist(q.detach(), k.detach())
        assert (r - kw["bandwidth"]).abs().min() > 1e-3
        assert (r < kw["bandwidth"]).any() and (r > kw["bandwidth"]).any()
    assert torch.autograd.gradcheck(lambda a, b, c: kft.smooth(a, b, c, kernel, **kw), (q, k, v))


def test_gradcheck_with_masks_and_learnable_parameters():
    q, k, v = randn(3, 6, 3, seed=4), randn(3, 6, 3, seed=5), randn(3, 6, 2, seed=6)
    assert torch.autograd.gradcheck(
        lambda a, b, c: kft.smooth(a, b, c, "gaussian", bandwidth=1.0, mask="causal&window:2"),
        (q, k, v))
    h = torch.tensor(0.9, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda a, b, c, hh: kft.smooth(a, b, c, "gaussian", bandwidth=hh), (q, k, v, h))
    h_dim = torch.tensor([0.7, 1.3, 2.0], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda a, b, c, hh: kft.smooth(a, b, c, "laplacian", bandwidth=hh), (q, k, v, h_dim))
    t = torch.tensor(1.7, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda a, b, c, tt: kft.smooth(a, b, c, "exp_dot", temperature=tt), (q, k, v, t))


def test_dropout_is_redrawn_identically_in_backward():
    q, k, v = randn(2, 9, 4, seed=7), randn(2, 9, 4, seed=8), randn(2, 9, 3, seed=9)

    def f(a, b, c):
        torch.manual_seed(123)  # the same dropout mask on every call
        return kft.smooth(a, b, c, dropout=0.3)

    assert torch.autograd.gradcheck(f, (q, k, v))
    torch.manual_seed(1)
    a = kft.smooth(q, k, v, dropout=0.3)
    b = kft.smooth(q, k, v, dropout=0.3)
    assert not torch.equal(a, b)  # a fresh mask per call
    torch.testing.assert_close(kft.smooth(q, k, v, dropout=0.0), torch_attention(q, k, v))


def test_lse_and_weights():
    q, k, v = randn(4, 6, seed=1), randn(9, 6, seed=2), randn(9, 2, seed=3)
    out, lse = kft.smooth(q, k, v, return_lse=True)
    s = q @ k.T / math.sqrt(6)
    torch.testing.assert_close(lse, torch.logsumexp(s, -1).detach())
    assert not lse.requires_grad
    w = kft.smooth_weights(q, k)
    torch.testing.assert_close(w, torch.softmax(s, -1).detach())
    torch.testing.assert_close(w @ v, out)


def mha_pair(E=16, H=4, batch_first=True, seed=0):
    torch.manual_seed(seed)
    mha = torch.nn.MultiheadAttention(E, H, batch_first=batch_first).double()
    ours = kft.KernelAttention(E, H, batch_first=batch_first).double()
    ours.load_state_dict(mha.state_dict())
    assert set(ours.state_dict()) == set(mha.state_dict())
    return mha.eval(), ours.eval()


@pytest.mark.parametrize("batch_first", [True, False])
def test_kernel_attention_is_multihead_attention(batch_first):
    mha, ours = mha_pair(batch_first=batch_first)
    x = torch.randn(3, 11, 16, dtype=torch.float64)
    if not batch_first:
        x = x.transpose(0, 1)
    x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    y1, w1 = mha(x1, x1, x1)
    y2, w2 = ours(x2, x2, x2)
    torch.testing.assert_close(y2, y1)
    torch.testing.assert_close(w2, w1)
    g = torch.randn_like(y1)
    y1.backward(g)
    y2.backward(g)
    torch.testing.assert_close(x2.grad, x1.grad)
    for (n1, p1), (n2, p2) in zip(sorted(mha.named_parameters()), sorted(ours.named_parameters())):
        assert n1 == n2
        torch.testing.assert_close(p2.grad, p1.grad, msg=n1)


def test_kernel_attention_masks_and_cross_attention():
    mha, ours = mha_pair()
    x, mem = torch.randn(3, 7, 16, dtype=torch.float64), torch.randn(3, 10, 16, dtype=torch.float64)
    causal = torch.ones(7, 10, dtype=torch.bool).triu(1)  # True: not allowed (PyTorch)
    pad = torch.zeros(3, 10, dtype=torch.bool)
    pad[1, 6:] = True  # padding at the end
    pad[2, 2] = True   # a hole in the middle
    for kw in (dict(attn_mask=causal), dict(key_padding_mask=pad),
               dict(attn_mask=causal, key_padding_mask=pad),
               dict(attn_mask=torch.zeros(7, 10, dtype=torch.float64).masked_fill(causal, -math.inf)),
               dict(attn_mask=torch.rand(12, 7, 10) < 0.3)):
        y1, w1 = mha(x, mem, mem, average_attn_weights=False, **kw)
        y2, w2 = ours(x, mem, mem, average_attn_weights=False, **kw)
        torch.testing.assert_close(y2, y1)
        torch.testing.assert_close(w2, w1)
    y1, _ = mha(x, x, x, attn_mask=torch.ones(7, 7, dtype=torch.bool).triu(1), need_weights=False)
    y2, w2 = ours(x, x, x, is_causal=True, need_weights=False)
    torch.testing.assert_close(y2, y1)
    assert w2 is None
    # unbatched (T, E)
    y1, w1 = mha(x[0], x[0], x[0])
    y2, w2 = ours(x[0], x[0], x[0])
    torch.testing.assert_close(y2, y1)
    torch.testing.assert_close(w2, w1)


def test_kernel_attention_with_other_kernels_and_a_mask_text():
    torch.manual_seed(0)
    att = kft.KernelAttention(8, 2, batch_first=True, kernel="gaussian:h=2", mask="window:2")
    x = torch.randn(2, 9, 8, requires_grad=True)
    y, w = att(x, x, x)
    assert y.shape == (2, 9, 8) and w.shape == (2, 9, 9)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 9))
    i = torch.arange(9)
    assert torch.all(w[:, (i[:, None] - i[None, :]).abs() > 2] == 0)
    y.sum().backward()
    assert torch.isfinite(x.grad).all() and att.in_proj_weight.grad.abs().sum() > 0


def test_attention_dropout_in_training_only():
    att = kft.KernelAttention(8, 2, dropout=0.5, batch_first=True)
    x = torch.randn(2, 6, 8)
    att.train()
    torch.manual_seed(0)
    a = att(x, x, x, need_weights=False)[0]
    torch.manual_seed(0)
    b = att(x, x, x, need_weights=False)[0]
    torch.testing.assert_close(a, b)  # the mask follows torch's generator
    att.eval()
    e1, e2 = att(x, x, x)[0], att(x, x, x)[0]
    assert torch.equal(e1, e2) and not torch.allclose(a, e1)


@pytest.mark.parametrize("call,exc,message", [
    (lambda q, k, v: kft.smooth(q, k.double(), v), TypeError, "one dtype"),
    (lambda q, k, v: kft.smooth(q.half(), k.half(), v.half()), TypeError, "float16"),
    (lambda q, k, v: kft.smooth(q.numpy(), k, v), TypeError, "torch.Tensor"),
    (lambda q, k, v: kft.smooth(q * float("nan"), k, v), ValueError, "non-finite"),
    (lambda q, k, v: kft.smooth(q, k[..., :3], v), ValueError, "d = 4 columns but keys have 3"),
    (lambda q, k, v: kft.smooth(q, k, v[:, :5]), ValueError, "values have 5 rows"),
    (lambda q, k, v: kft.smooth(q, k, v, kernel="gaussian:h=0"), ValueError, "gaussian"),
    (lambda q, k, v: kft.smooth(q, k, v, mask="causal|"), ValueError, "mask"),
    (lambda q, k, v: kft.smooth(q, k, v, kernel="exp_dot", bandwidth=torch.tensor(1.0)),
     ValueError, "distance kernels"),
    (lambda q, k, v: kft.smooth(q, k, v, dropout=1.0), ValueError, "dropout"),
    (lambda q, k, v: kft.KernelAttention(8, 3), ValueError, "does not split"),
    (lambda q, k, v: kft.KernelAttention(8, 2, kernel="softmaxx"), ValueError, "unknown kernel"),
    (lambda q, k, v: kft.KernelAttention(8, 2)(torch.randn(3, 1, 8), torch.randn(3, 1, 8),
                                               torch.randn(3, 1, 8),
                                               attn_mask=torch.randn(3, 3)), ValueError,
     "additive bias"),
])
def test_errors(call, exc, message):
    q, k, v = (torch.randn(2, 6, 4) for _ in range(3))
    with pytest.raises(exc, match=message):
        call(q, k, v)


def test_library_keeps_its_openmp_blas_with_torch_loaded():
    import kernelformer
    assert kernelformer._kernelformer.blas_parallel_mode() == 2  # OpenBLAS's OpenMP build
    assert kernelformer.get_num_threads() >= 1


def test_numpy_inputs_untouched():
    q = torch.randn(5, 4, requires_grad=True)
    before = q.detach().clone()
    out = kft.smooth(q, q, q)
    out.sum().backward()
    assert torch.equal(q.detach(), before)
    assert np.isfinite(q.grad.numpy()).all()


def test_public_api_is_documented():
    import inspect
    for name in kft.__all__:
        obj = getattr(kft, name)
        assert inspect.getdoc(obj), name
    for fn in (kft.smooth, kft.smooth_weights, kft.KernelAttention):
        assert "(..., n, d)" in fn.__doc__ or "(B, T, E)" in fn.__doc__


def test_contiguous_tensors_are_used_in_place():
    import kernelformer
    q, k, v = (torch.randn(2, 4, 33, 8, requires_grad=True) for _ in range(3))
    before = kernelformer._kernelformer.input_copies()
    out = kft.smooth(q, k, v, mask="causal")
    out.backward(torch.ones_like(out))
    assert kernelformer._kernelformer.input_copies() == before  # forward and backward: no copy
