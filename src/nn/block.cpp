// Encoder and decoder layers; the backward pass walks the forward in reverse, each step quoting
// the line it inverts. Gradients accumulate (+=) into dx and dmemory.
#include "kernelformer/nn/block.hpp"

#include "detail/elementwise.hpp"

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
  const index n = x.rows, C = cfg.d_model;
  const bool post = !cfg.norm_first;
  const dropout drop{cfg.dropout};
  const layer_norm<T>& nf = decoder ? norm3 : norm2;  // the FFN's norm
  // Every cache matrix below is fully overwritten; reuse the buffer when the shape is unchanged.
  auto make = [&](matrix<T>& m, index cols) {
    if (m.rows() != n || m.cols() != cols) m = matrix<T>(n, cols);
  };
  make(c.x0, C);
  detail::copy_into(c.x0.view(), x);
  // ---- self-attention ----
  make(c.a1, C), make(c.a1d, C), make(c.h1, C);
  if (post) {
    self_attn.forward(p, c.a1.view(), x, x, self_sh, c.att1, rng);  // a1 = SA(x)
    drop.forward(c.a1d.view(), c.a1.cview(), c.d_att1, rng);
    make(c.r1, C);
    add_into(c.r1.view(), x, c.a1d.cview());             // r1 = x + drop(a1)
    norm1.forward(p, c.h1.view(), c.r1.cview(), c.ln1);  // h1 = norm1(r1)
  } else {
    make(c.n1, C);
    norm1.forward(p, c.n1.view(), x, c.ln1);  // n1 = norm1(x)
    self_attn.forward(p, c.a1.view(), c.n1.cview(), c.n1.cview(), self_sh, c.att1, rng);
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
  // ---- feed-forward ----
  matrix<T> dh2(n, C), df2d(n, C);
  if (post) {
    nf.backward(p, dh2.view(), dy, c.r3.cview(), c.ln3);  // y = normN(r3)
    df2d = dh2;                                           // r3 = h2 + f2d
  } else {
    accumulate(dh2.view(), dy);  // y = h2 + f2d
    accumulate(df2d.view(), dy);
  }
  matrix<T> df2(n, C), din(n, C);
  drop.backward(df2.view(), df2d.cview(), c.d_ff2);
  ffn.backward(p, din.view(), df2.cview(), post ? h2.cview() : c.n3.cview(), c.ff);  // f2 = ffn(in)
  if (post)
    accumulate(dh2.view(), din.cview());  // in = h2
  else
    nf.backward(p, dh2.view(), din.cview(), h2.cview(), c.ln3);  // in = normN(h2)
  // ---- cross-attention (decoder) ----
  matrix<T> dh1(n, C);
  if (decoder) {
    matrix<T> da2(n, C);
    if (post) {
      matrix<T> dr2(n, C);
      norm2.backward(p, dr2.view(), dh2.cview(), c.r2.cview(), c.ln2);  // h2 = norm2(r2)
      accumulate(dh1.view(), dr2.cview());                              // r2 = h1 + a2d
      drop.backward(da2.view(), dr2.cview(), c.d_att2);
      cross_attn.backward(p, dh1.view(), dmemory, da2.cview(), c.h1.cview(), memory, cross_sh,
                          c.att2);
    } else {
      accumulate(dh1.view(), dh2.cview());  // h2 = h1 + a2d
      drop.backward(da2.view(), dh2.cview(), c.d_att2);
      matrix<T> dn2(n, C);
      cross_attn.backward(p, dn2.view(), dmemory, da2.cview(), c.n2.cview(), memory, cross_sh,
                          c.att2);
      norm2.backward(p, dh1.view(), dn2.cview(), c.h1.cview(), c.ln2);  // n2 = norm2(h1)
    }
  } else {
    dh1 = dh2;
  }
  // ---- self-attention ----
  matrix<T> da1(n, C);
  if (post) {
    matrix<T> dr1(n, C);
    norm1.backward(p, dr1.view(), dh1.cview(), c.r1.cview(), c.ln1);  // h1 = norm1(r1)
    accumulate(dx, dr1.cview());                                      // r1 = x + a1d
    drop.backward(da1.view(), dr1.cview(), c.d_att1);
    self_attn.backward(p, dx, dx, da1.cview(), c.x0.cview(), c.x0.cview(), self_sh, c.att1);
  } else {
    accumulate(dx, dh1.cview());  // h1 = x + a1d
    drop.backward(da1.view(), dh1.cview(), c.d_att1);
    matrix<T> dn1(n, C);
    self_attn.backward(p, dn1.view(), dn1.view(), da1.cview(), c.n1.cview(), c.n1.cview(), self_sh,
                       c.att1);
    norm1.backward(p, dx, dn1.cview(), c.x0.cview(), c.ln1);  // n1 = norm1(x)
  }
}

template struct transformer_layer<float>;
template struct transformer_layer<double>;

}  // namespace kf::nn
