// Encoder and decoder layers; the backward pass walks the forward in reverse, each step quoting
// the line it inverts. Gradients accumulate (+=) into dx and dmemory.
#include "kernelformer/nn/transformer_layer.hpp"

#include "nn/elementwise.hpp"

namespace kf::nn {

using detail::accumulate;
using detail::add_into;

template <class T>
transformer_layer<T>::transformer_layer(parameters<T>& p, const std::string& name,
                                        const block_config& c, bool is_decoder,
                                        bool causal_self_attention)
    : cfg(c), decoder(is_decoder) {
  self_attn = multi_head_attention<T>(p, name + ".self_attn", c.d_model, c.heads, c.kernel,
                                      causal_self_attention);
  self_attn.dropout = c.dropout;  // PyTorch: the layer's dropout also drops attention weights
  if (decoder) {
    cross_attn =
        multi_head_attention<T>(p, name + ".multihead_attn", c.d_model, c.heads, c.kernel, false);
    cross_attn.dropout = c.dropout;
  }
  ffn = mlp<T>(p, name + ".", c.d_model, c.d_ff, c.act, c.dropout);
  norm1 = layer_norm<T>(p, name + ".norm1", c.d_model);
  norm2 = layer_norm<T>(p, name + ".norm2", c.d_model);
  if (decoder) norm3 = layer_norm<T>(p, name + ".norm3", c.d_model);
}

template <class T>
void transformer_layer<T>::forward(parameters<T>& p, matrix_view<T> y, const_matrix_view<T> x,
                                   const_matrix_view<T> memory,
                                   const typename multi_head_attention<T>::shape& self_sh,
                                   const typename multi_head_attention<T>::shape& cross_sh,
                                   cache& c, std::mt19937_64* rng) const {
  forward_with(p, y, x, memory, cross_sh, c, rng, [&](matrix_view<T> a1, const_matrix_view<T> in) {
    self_attn.forward(p, a1, in, in, self_sh, c.att1, rng);
  });
}

template <class T>
void transformer_layer<T>::forward_with(parameters<T>& p, matrix_view<T> y, const_matrix_view<T> x,
                                        const_matrix_view<T> memory,
                                        const typename multi_head_attention<T>::shape& cross_sh,
                                        cache& c, std::mt19937_64* rng,
                                        const self_attention_fn& self_attend) const {
  const index n = x.rows, C = cfg.d_model;
  const bool post = !cfg.norm_first;
  const dropout drop{cfg.dropout};
  const layer_norm<T>& nf = decoder ? norm3 : norm2;  // the FFN's norm
  // Every cache matrix below is fully overwritten; reuse the buffer when the shape is unchanged.
  auto make = [&](matrix<T>& m, index cols) { m.resize(n, cols); };
  make(c.x0, C);
  detail::copy_into(c.x0.view(), x);
  // ---- self-attention ----
  make(c.a1, C), make(c.a1d, C), make(c.h1, C);
  if (post) {
    self_attend(c.a1.view(), x);  // a1 = SA(x)
    drop.forward(c.a1d.view(), c.a1.cview(), c.d_att1, rng);
    make(c.r1, C);
    add_into(c.r1.view(), x, c.a1d.cview());             // r1 = x + drop(a1)
    norm1.forward(p, c.h1.view(), c.r1.cview(), c.ln1);  // h1 = norm1(r1)
  } else {
    make(c.n1, C);
    norm1.forward(p, c.n1.view(), x, c.ln1);  // n1 = norm1(x)
    self_attend(c.a1.view(), c.n1.cview());   // a1 = SA(n1)
    drop.forward(c.a1d.view(), c.a1.cview(), c.d_att1, rng);
    add_into(c.h1.view(), x, c.a1d.cview());  // h1 = x + drop(SA(n1))
  }
  // ---- cross-attention (decoder) ----
  const matrix<T>* h2 = &c.h1;
  if (decoder) {
    make(c.a2, C), make(c.a2d, C), make(c.h2, C);
    if (post) {
      cross_attn.forward(p, c.a2.view(), c.h1.cview(), memory, cross_sh, c.att2, rng);
      drop.forward(c.a2d.view(), c.a2.cview(), c.d_att2, rng);
      make(c.r2, C);
      add_into(c.r2.view(), c.h1.cview(), c.a2d.cview());  // r2 = h1 + drop(CA(h1, mem))
      norm2.forward(p, c.h2.view(), c.r2.cview(), c.ln2);  // h2 = norm2(r2)
    } else {
      make(c.n2, C);
      norm2.forward(p, c.n2.view(), c.h1.cview(), c.ln2);  // n2 = norm2(h1)
      cross_attn.forward(p, c.a2.view(), c.n2.cview(), memory, cross_sh, c.att2, rng);
      drop.forward(c.a2d.view(), c.a2.cview(), c.d_att2, rng);
      add_into(c.h2.view(), c.h1.cview(), c.a2d.cview());  // h2 = h1 + drop(CA(n2, mem))
    }
    h2 = &c.h2;
  }
  // ---- feed-forward ----
  const_matrix_view<T> in = h2->cview();
  if (!post) {
    make(c.n3, C);
    nf.forward(p, c.n3.view(), h2->cview(), c.ln3);  // n3 = normN(h2)
    in = c.n3.cview();
  }
  make(c.f2, C), make(c.f2d, C);
  ffn.forward(p, c.f2.view(), in, c.ff, rng);  // f2 = linear2(drop(act(linear1(in))))
  drop.forward(c.f2d.view(), c.f2.cview(), c.d_ff2, rng);
  if (post) {
    make(c.r3, C);
    add_into(c.r3.view(), h2->cview(), c.f2d.cview());  // r3 = h2 + drop(f2)
    nf.forward(p, y, c.r3.cview(), c.ln3);              // y = normN(r3)
  } else {
    add_into(y, h2->cview(), c.f2d.cview());  // y = h2 + drop(f2)
  }
}

template <class T>
void transformer_layer<T>::backward(parameters<T>& p, matrix_view<T> dx, matrix_view<T> dmemory,
                                    const_matrix_view<T> dy, const_matrix_view<T> memory,
                                    const typename multi_head_attention<T>::shape& self_sh,
                                    const typename multi_head_attention<T>::shape& cross_sh,
                                    const cache& c) const {
  const index n = dy.rows, C = cfg.d_model;
  const bool post = !cfg.norm_first;
  const dropout drop{cfg.dropout};
  const layer_norm<T>& nf = decoder ? norm3 : norm2;
  const matrix<T>& h2 = decoder ? c.h2 : c.h1;
  // Scratch matrices live in the cache (c.g[…]) and keep their allocation across steps; a
  // buffer is zeroed only where it is accumulated into.
  auto scratch = [&](int i, bool zero) { return detail::workspace(c.g[i], n, C, zero); };
  auto cv = [](matrix_view<T> m) { return const_matrix_view<T>(m); };
  // ---- feed-forward ----
  matrix_view<T> dh2;
  const_matrix_view<T> df2d;
  if (post) {
    dh2 = scratch(0, true);
    nf.backward(p, dh2, dy, c.r3.cview(), c.ln3);  // y = normN(r3)
    df2d = dh2;                                    // r3 = h2 + f2d (read before dh2 changes)
  } else {
    dh2 = scratch(0, false);
    detail::copy_into(dh2, dy);  // y = h2 + f2d
    df2d = dy;
  }
  const matrix_view<T> df2 = scratch(1, true);
  drop.backward(df2, df2d, c.d_ff2);
  if (post) {  // in = h2: the FFN's input gradient goes straight into dh2
    ffn.backward(p, dh2, cv(df2), h2.cview(), c.ff);  // f2 = ffn(in)
  } else {
    const matrix_view<T> din = scratch(2, true);
    ffn.backward(p, din, cv(df2), c.n3.cview(), c.ff);  // f2 = ffn(in)
    nf.backward(p, dh2, cv(din), h2.cview(), c.ln3);    // in = normN(h2)
  }
  // ---- cross-attention (decoder) ----
  matrix_view<T> dh1 = dh2;
  if (decoder) {
    dh1 = scratch(2, true);
    const matrix_view<T> da2 = scratch(3, true);
    if (post) {
      const matrix_view<T> dr2 = scratch(4, true);
      norm2.backward(p, dr2, cv(dh2), c.r2.cview(), c.ln2);  // h2 = norm2(r2)
      accumulate(dh1, const_matrix_view<T>(dr2));            // r2 = h1 + a2d
      drop.backward(da2, cv(dr2), c.d_att2);
      cross_attn.backward(p, dh1, dmemory, cv(da2), c.h1.cview(), memory, cross_sh, c.att2);
    } else {
      accumulate(dh1, const_matrix_view<T>(dh2));  // h2 = h1 + a2d
      drop.backward(da2, cv(dh2), c.d_att2);
      const matrix_view<T> dn2 = scratch(4, true);
      cross_attn.backward(p, dn2, dmemory, cv(da2), c.n2.cview(), memory, cross_sh, c.att2);
      norm2.backward(p, dh1, cv(dn2), c.h1.cview(), c.ln2);  // n2 = norm2(h1)
    }
  }
  // ---- self-attention ----
  const matrix_view<T> da1 = scratch(5, true);
  if (post) {
    const matrix_view<T> dr1 = scratch(1, true);           // df2 is spent
    norm1.backward(p, dr1, cv(dh1), c.r1.cview(), c.ln1);  // h1 = norm1(r1)
    accumulate(dx, const_matrix_view<T>(dr1));             // r1 = x + a1d
    drop.backward(da1, cv(dr1), c.d_att1);
    self_attn.backward(p, dx, dx, cv(da1), c.x0.cview(), c.x0.cview(), self_sh, c.att1);
  } else {
    accumulate(dx, const_matrix_view<T>(dh1));  // h1 = x + a1d
    drop.backward(da1, cv(dh1), c.d_att1);
    const matrix_view<T> dn1 = scratch(1, true);  // df2 is spent
    self_attn.backward(p, dn1, dn1, cv(da1), c.n1.cview(), c.n1.cview(), self_sh, c.att1);
    norm1.backward(p, dx, cv(dn1), c.x0.cview(), c.ln1);  // n1 = norm1(x)
  }
}

template struct transformer_layer<float>;
template struct transformer_layer<double>;

}  // namespace kf::nn
