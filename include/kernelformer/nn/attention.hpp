// Multi-head attention = H heads of the smoothing primitive.
//
//   q = x W_qᵀ + b_q,  k = ctx W_kᵀ + b_k,  v = ctx W_vᵀ + b_v    (ctx = x for self-attention)
//   head h: att[:, hD:(h+1)D] = smooth(q_h, k_h, v_h; kernel, mask)     D = C / H
//   y = att W_oᵀ + b_o
// W_q, W_k, W_v are packed as PyTorch's in_proj_weight (3C, C) and in_proj_bias (3C); W_o is
// out_proj.weight. The kernel is any kernel of the core (exp_dot with T = √D by default —
// exactly softmax(QKᵀ/√D)V), the mask causal and/or per-item key padding. Heads and batch items
// run in parallel; each head's weights can be captured on request (capture_weights) without
// touching the normal path. Shapes: x (B·T, C), ctx (B·S, C), y (B·T, C).
// Training with `dropout` > 0 and a generator drops attention weights as PyTorch's
// nn.MultiheadAttention does (weights zeroed with probability `dropout`, the rest scaled by
// 1/(1 − dropout), the softmax normalizer unchanged) — inside the fused primitive
// (smooth_options::dropout), with one 64-bit draw per call; the backward pass redraws the mask.
// Feature-map kernels (elu1, rff, favor) take the primitive's linear-time route and skip the
// attention-weight dropout (that route never forms the weights).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernelformer/kernels.hpp"
#include "kernelformer/nn/linear.hpp"
#include "kernelformer/nn/parameters.hpp"

namespace kf::nn {

template <class T>
struct multi_head_attention {
  index c = 0, heads = 1;
  kernel_spec kernel = kernel_exp_dot{};
  bool causal = false;
  double dropout = 0.0;  // attention-weight dropout in training
  index in_w = -1, in_b = -1;
  linear<T> out_proj;

  struct cache {
    matrix<T> q, kv;                  // (B·T, C) queries; (B·S, 2C) keys and values
    matrix<T> att;                    // (B·T, C) smoothed values before out_proj
    std::vector<T> lse;               // (B, H, T)
    mutable matrix<T> datt, dq, dkv;  // backward scratch, kept across steps
    double dropout = 0.0;             // the rate this forward used (0: none)
    std::uint64_t drop_seed = 0;      // its mask seed
    std::uint64_t feature_draw = 0;   // redraw=1 in training: this forward's features (0: seed=S)
  };
  struct shape {
    index batch = 1, t = 1, s = 1;   // s: context length (= t for self-attention)
    std::vector<index> key_lengths;  // per batch item, empty: all s keys valid
  };

  multi_head_attention() = default;
  multi_head_attention(parameters<T>& p, const std::string& name, index channels, index n_heads,
                       kernel_spec kern = kernel_exp_dot{}, bool causal_mask = false);

  void forward(parameters<T>& p, matrix_view<T> y, const_matrix_view<T> x, const_matrix_view<T> ctx,
               const shape& sh, cache& c, std::mt19937_64* rng = nullptr) const;
  // dctx may alias nothing; for self-attention pass ctx = x and dctx = dx (they add up).
  void backward(parameters<T>& p, matrix_view<T> dx, matrix_view<T> dctx, const_matrix_view<T> dy,
                const_matrix_view<T> x, const_matrix_view<T> ctx, const shape& sh,
                const cache& c) const;
  // Normalized weights of head h for batch item b: (T, S). Needs a forward cache.
  matrix<T> capture_weights(const cache& c, const shape& sh, index b, index h) const;
};

}  // namespace kf::nn
