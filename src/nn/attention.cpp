// Multi-head attention: projections by GEMM, then one call of the smoothing primitive per
// (batch item, head) — in parallel, each single-threaded.
#include "kernelformer/nn/attention.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <mutex>
#include <stdexcept>

#include "detail/blas.hpp"
#include "kernelformer/smooth.hpp"
#include "nn/elementwise.hpp"

namespace kf::nn {
namespace {

// Runs fn(b, h) for every pair in parallel; rethrows the first exception.
template <class Fn>
void for_each_head(index batch, index heads, Fn&& fn) {
  std::exception_ptr err;
  std::mutex mu;
#pragma omp parallel for schedule(dynamic, 1)
  for (index bh = 0; bh < batch * heads; ++bh) {
    try {
      fn(bh / heads, bh % heads);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!err) err = std::current_exception();
    }
  }
  if (err) std::rethrow_exception(err);
}

// The mask of batch item b: causal and/or its valid key length.
template <class T>
mask head_mask(const multi_head_attention<T>& a, const typename multi_head_attention<T>::shape& sh,
               index b) {
  mask msk = a.causal ? mask::causal() : mask::none();
  if (!sh.key_lengths.empty())
    msk = msk & mask::key_padding({sh.key_lengths[static_cast<std::size_t>(b)]});
  return msk;
}

// The dropout-mask seed of one (batch item, head): splitmix64 of the call's draw.
std::uint64_t head_seed(std::uint64_t call_seed, index bh) {
  std::uint64_t z = call_seed + 0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(bh + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

template <class T>
multi_head_attention<T>::multi_head_attention(parameters<T>& p, const std::string& name,
                                              index channels, index n_heads, kernel_spec kern,
                                              bool causal_mask)
    : c(channels), heads(n_heads), kernel(std::move(kern)), causal(causal_mask) {
  if (n_heads < 1 || channels % n_heads != 0)
    throw std::invalid_argument(
        fmt::format("attention: {} channels do not split into {} heads", channels, n_heads));
  // PyTorch: xavier_uniform_ on the packed in_proj_weight (fan computed on the (3C, C) matrix),
  // zero in_proj_bias; out_proj is an nn.Linear with a zeroed bias.
  in_w = p.add(name + ".in_proj_weight", {3 * c, c}, init_kind::xavier_uniform, 1.0, c, 3 * c);
  in_b = p.add(name + ".in_proj_bias", {3 * c}, init_kind::zeros);
  out_proj = linear<T>(p, name + ".out_proj", c, c, true, init_kind::kaiming_linear);
}

template <class T>
void multi_head_attention<T>::forward(parameters<T>& p, matrix_view<T> y, const_matrix_view<T> x,
                                      const_matrix_view<T> ctx, const shape& sh, cache& cc,
                                      std::mt19937_64* rng) const {
  const index d = c / heads, n = sh.batch * sh.t, m = sh.batch * sh.s;
  if (x.rows != n || ctx.rows != m || x.cols != c || ctx.cols != c)
    throw std::invalid_argument("attention: input shapes do not match the batch shape");
  const T* w = p.value(in_w);
  const T* b = p.value(in_b);
  // Fully overwritten below: reuse the buffers when the shapes are unchanged.
  cc.q.resize(n, c);
  cc.kv.resize(m, 2 * c);
  cc.att.resize(n, c);
  cc.lse.assign(static_cast<std::size_t>(sh.batch * heads * sh.t), T(0));
  // q = x W_qᵀ + b_q, [k v] = ctx W_kvᵀ + b_kv: each starts as its bias, the GEMM adds to it.
  detail::fill_rows(cc.q.view(), b);
  detail::gemm(false, true, n, c, c, T(1), x.data, x.ld, w, c, T(1), cc.q.data(), c);
  detail::fill_rows(cc.kv.view(), b + c);
  detail::gemm(false, true, m, 2 * c, c, T(1), ctx.data, ctx.ld, w + c * c, c, T(1), cc.kv.data(),
               2 * c);
  smooth_options opt;
  opt.threads = 1;
  opt.check_finite = false;  // finite by construction; training checks its loss
  // A feature-map kernel (elu1, rff, favor) never forms the weights it would drop: no attention-
  // weight dropout there (the block's residual dropout still applies).
  const bool feature_map = !kernel.is_product() && kernel_is_feature_map(kernel.first);
  cc.dropout = (rng != nullptr && dropout > 0 && !feature_map) ? dropout : 0.0;
  cc.drop_seed = cc.dropout > 0 ? (*rng)() : 0;
  // redraw=1: fresh random features for every training forward, drawn like dropout masks from
  // the training generator; evaluation (no generator) uses the kernel's own seed=S.
  cc.feature_draw = (rng != nullptr && kernel_redraws(kernel)) ? ((*rng)() | 1) : 0;
  const kernel_spec kern = kernel_with_draw(kernel, cc.feature_draw);
  opt.dropout = cc.dropout;
  for_each_head(sh.batch, heads, [&](index bi, index h) {
    smooth_options o = opt;
    o.dropout_seed = head_seed(cc.drop_seed, bi * heads + h);
    const mask msk = head_mask(*this, sh, bi);
    const const_matrix_view<T> q = cc.q.cview().block(bi * sh.t, h * d, sh.t, d);
    const const_matrix_view<T> k = cc.kv.cview().block(bi * sh.s, h * d, sh.s, d);
    const const_matrix_view<T> v = cc.kv.cview().block(bi * sh.s, c + h * d, sh.s, d);
    const std::span<T> lse(cc.lse.data() + (bi * heads + h) * sh.t, static_cast<std::size_t>(sh.t));
    smooth_forward<T>(cc.att.view().block(bi * sh.t, h * d, sh.t, d), lse, q, k, v, kern, msk, o);
  });
  out_proj.forward(p, y, cc.att.cview());
}

template <class T>
void multi_head_attention<T>::backward(parameters<T>& p, matrix_view<T> dx, matrix_view<T> dctx,
                                       const_matrix_view<T> dy, const_matrix_view<T> x,
                                       const_matrix_view<T> ctx, const shape& sh,
                                       const cache& cc) const {
  const index d = c / heads, n = sh.batch * sh.t, m = sh.batch * sh.s;
  // Scratch kept in the cache; datt is overwritten, each head zeroes its own dq, dk, dv blocks
  // (in cache, just before accumulating into them).
  const matrix_view<T> datt = detail::workspace(cc.datt, n, c, false);
  const matrix_view<T> dq = detail::workspace(cc.dq, n, c, false);
  const matrix_view<T> dkv = detail::workspace(cc.dkv, m, 2 * c, false);
  out_proj.backward(p, datt, dy, cc.att.cview(), true);
  smooth_options opt;
  opt.threads = 1;
  opt.check_finite = false;  // finite by construction; training checks its loss
  opt.dropout = cc.dropout;  // the forward's mask, redrawn from its seed
  const kernel_spec kern = kernel_with_draw(kernel, cc.feature_draw);  // the forward's features
  for_each_head(sh.batch, heads, [&](index bi, index h) {
    smooth_options o = opt;
    o.dropout_seed = head_seed(cc.drop_seed, bi * heads + h);
    const mask msk = head_mask(*this, sh, bi);
    smooth_grads<T> g(dq.block(bi * sh.t, h * d, sh.t, d), dkv.block(bi * sh.s, h * d, sh.s, d),
                      dkv.block(bi * sh.s, c + h * d, sh.s, d));
    detail::fill_zero(g.dq);
    detail::fill_zero(g.dk);
    detail::fill_zero(g.dv);
    g.want_dparam = false;  // the kernel's parameter is not trained (yet)
    const std::span<const T> lse(cc.lse.data() + (bi * heads + h) * sh.t,
                                 static_cast<std::size_t>(sh.t));
    smooth_backward<T>(g, const_matrix_view<T>(datt).block(bi * sh.t, h * d, sh.t, d),
                       cc.att.cview().block(bi * sh.t, h * d, sh.t, d), lse,
                       cc.q.cview().block(bi * sh.t, h * d, sh.t, d),
                       cc.kv.cview().block(bi * sh.s, h * d, sh.s, d),
                       cc.kv.cview().block(bi * sh.s, c + h * d, sh.s, d), kern, msk, o);
  });
  const T* w = p.value(in_w);
  T* dw = p.grad(in_w);
  T* db = p.grad(in_b);
  // q = x W_qᵀ + b_q:  dx += dq W_q, dW_q += dqᵀ x, db_q += Σ dq
  // [k v] = ctx W_kvᵀ + b_kv: dctx += dkv W_kv, dW_kv += dkvᵀ ctx, db_kv += Σ dkv
  // The input gradients (dx and dctx may be the same buffer) and the weight gradients are
  // independent: side by side when the products are small.
  detail::run_pair(
      detail::gemm_is_small(std::max(n, m), 2 * c, c),
      [&] {
        if (!dx.empty())
          detail::gemm(false, false, n, c, c, T(1), dq.data, c, w, c, T(1), dx.data, dx.ld);
        if (!dctx.empty())
          detail::gemm(false, false, m, c, 2 * c, T(1), dkv.data, 2 * c, w + c * c, c, T(1),
                       dctx.data, dctx.ld);
      },
      [&] {
        detail::gemm(true, false, c, c, n, T(1), dq.data, c, x.data, x.ld, T(1), dw, c);
        detail::add_column_sums(db, const_matrix_view<T>(dq));
        detail::gemm(true, false, 2 * c, c, m, T(1), dkv.data, 2 * c, ctx.data, ctx.ld, T(1),
                     dw + c * c, c);
        detail::add_column_sums(db + c, const_matrix_view<T>(dkv));
      });
}

template <class T>
matrix<T> multi_head_attention<T>::capture_weights(const cache& cc, const shape& sh, index b,
                                                   index h) const {
  if (b < 0 || b >= sh.batch || h < 0 || h >= heads)
    throw std::out_of_range(
        fmt::format("attention weights: batch item {} head {} out of range", b, h));
  const index d = c / heads;
  const mask msk = head_mask(*this, sh, b);
  matrix<T> w(sh.t, sh.s);
  smooth_weights<T>(w.view(), {}, cc.q.cview().block(b * sh.t, h * d, sh.t, d),
                    cc.kv.cview().block(b * sh.s, h * d, sh.s, d),
                    kernel_with_draw(kernel, cc.feature_draw), msk);
  return w;
}

template struct multi_head_attention<float>;
template struct multi_head_attention<double>;

}  // namespace kf::nn
