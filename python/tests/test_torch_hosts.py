"""kernelformer.torch inside PyTorch's own modules and autograd's edges: KernelAttention as the
self-attention of nn.TransformerEncoderLayer / TransformerEncoder / TransformerDecoderLayer in
train and eval mode, both batch_first values, with the kernel actually used (a Gaussian kernel
changes the output and equals the layer's formula computed by hand); a second derivative raises
instead of returning a wrong number."""
import copy

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

import kernelformer.torch as kft  # noqa: E402

E, H, B, T = 16, 2, 3, 7


def kernel_attention_like(mha, kernel, batch_first):
    """A KernelAttention with mha's weights."""
    ka = kft.KernelAttention(E, H, batch_first=batch_first, kernel=kernel)
    ka.load_state_dict(mha.state_dict())
    return ka


def encoder_layer(batch_first):
    torch.manual_seed(0)
    return nn.TransformerEncoderLayer(E, H, dim_feedforward=32, dropout=0.0,
                                      batch_first=batch_first)


def by_hand(layer, x, batch_first):
    """Post-norm encoder layer: x = norm1(x + sa(x)); x = norm2(x + ff(x))."""
    sa = layer.self_attn(x, x, x, need_weights=False)[0]
    x = layer.norm1(x + sa)
    return layer.norm2(x + layer.linear2(layer.activation(layer.linear1(x))))


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("mode", ["train", "eval", "eval_no_grad"])
def test_encoder_layer_softmax_matches_stock_and_gaussian_is_used(batch_first, mode):
    stock = encoder_layer(batch_first)
    ours = copy.deepcopy(stock)
    ours.self_attn = kernel_attention_like(stock.self_attn, "exp_dot", batch_first)
    gauss = copy.deepcopy(stock)
    gauss.self_attn = kernel_attention_like(stock.self_attn, "gaussian:h=2", batch_first)
    x = torch.randn((B, T, E) if batch_first else (T, B, E), generator=torch.Generator()
                    .manual_seed(1))
    for m in (stock, ours, gauss):
        m.train(mode == "train")
    ctx = torch.no_grad() if mode == "eval_no_grad" else torch.enable_grad()
    with ctx:
        ref, got, g = stock(x), ours(x), gauss(x)
        hand = by_hand(gauss, x, batch_first)
    torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-5)
    assert (g - ref).abs().max() > 1e-3, "the Gaussian kernel did not change the output"
    torch.testing.assert_close(g, hand, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("training", [True, False])
def test_encoder_stack_with_padding_and_decoder_layer(batch_first, training):
    layer = encoder_layer(batch_first)
    layer.self_attn = kft.KernelAttention(E, H, batch_first=batch_first, kernel="gaussian:h=2")
    enc = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    enc.train(training)
    x = torch.randn((B, T, E) if batch_first else (T, B, E))
    pad = torch.zeros(B, T, dtype=torch.bool)
    pad[0, -2:] = True
    with torch.no_grad():
        y = enc(x, src_key_padding_mask=pad)
        # by hand, layer after layer
        h = x
        for lay in enc.layers:
            sa = lay.self_attn(h, h, h, key_padding_mask=pad, need_weights=False)[0]
            h = lay.norm1(h + sa)
            h = lay.norm2(h + lay.linear2(lay.activation(lay.linear1(h))))
    torch.testing.assert_close(y, h, rtol=1e-5, atol=1e-5)

    torch.manual_seed(2)
    dec = nn.TransformerDecoderLayer(E, H, dim_feedforward=32, dropout=0.0,
                                     batch_first=batch_first)
    stock = copy.deepcopy(dec)
    dec.self_attn = kernel_attention_like(stock.self_attn, "exp_dot", batch_first)
    dec.multihead_attn = kernel_attention_like(stock.multihead_attn, "exp_dot", batch_first)
    dec.train(training)
    stock.train(training)
    mem = torch.randn((B, 5, E) if batch_first else (5, B, E))
    causal = nn.Transformer.generate_square_subsequent_mask(T)
    with torch.no_grad():
        torch.testing.assert_close(dec(x, mem, tgt_mask=causal), stock(x, mem, tgt_mask=causal),
                                   rtol=1e-5, atol=1e-5)


def test_encoder_layer_trains_with_a_kernel():
    """Gradients reach the kernel layer's weights inside the host, in train mode."""
    layer = encoder_layer(True)
    layer.self_attn = kft.KernelAttention(E, H, batch_first=True, kernel="gaussian:h=2")
    x = torch.randn(B, T, E)
    layer.train()
    layer(x).pow(2).sum().backward()
    assert layer.self_attn.in_proj_weight.grad is not None
    assert layer.self_attn.in_proj_weight.grad.abs().sum() > 0


def test_second_derivative_raises_instead_of_a_wrong_number():
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, 5, 4, dtype=torch.float64, generator=g, requires_grad=True)
    k = torch.randn(2, 6, 4, dtype=torch.float64, generator=g)
    v = torch.randn(2, 6, 3, dtype=torch.float64, generator=g)
    out = kft.smooth(q, k, v)
    with pytest.raises(RuntimeError, match="second derivatives"):
        torch.autograd.grad(out.sum(), q, create_graph=True)
    # a gradient penalty inside a larger loss: refused too, never silently dropped
    out = kft.smooth(q, k, v)
    with pytest.raises(RuntimeError, match="second derivatives"):
        (dq,) = torch.autograd.grad(out.pow(2).sum(), q, create_graph=True)
        (out.sum() + dq.pow(2).sum()).backward()
    # first derivatives are unchanged
    out = kft.smooth(q, k, v)
    (dq1,) = torch.autograd.grad(out.sum(), q)
    ref = torch.softmax(q @ k.transpose(-1, -2) / 2.0, -1) @ v
    (dq2,) = torch.autograd.grad(ref.sum(), q)
    torch.testing.assert_close(dq1, dq2, rtol=1e-10, atol=1e-12)


def test_torch_jit_is_refused_with_the_alternative():
    """torch.jit.trace would record the C++ kernels' output as a constant (silently wrong for any
    other input) and torch.jit.script cannot compile them: both raise, saying what to do."""
    import torch
    from kernelformer.torch import KernelAttention
    m = KernelAttention(16, 2, batch_first=True)
    x = torch.randn(2, 5, 16)
    with pytest.raises(RuntimeError, match="torch.jit cannot see"):
        torch.jit.trace(m, (x, x, x))
    with pytest.raises(RuntimeError, match="torch.jit cannot see"):
        torch.jit.script(m)
    out, _ = m(x, x, x)  # eagerly: fine
    assert out.shape == (2, 5, 16)
