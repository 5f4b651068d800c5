// Transformer blocks, named like PyTorch's nn.TransformerEncoderLayer / DecoderLayer so a
// state_dict maps one to one (self_attn, multihead_attn, linear1, linear2, norm1..3).
//   post-LN (norm_first = false, PyTorch's default):
//     x = norm1(x + drop(self_attn(x)));  [decoder: x = norm2(x + drop(cross_attn(x, mem)))]
//     x = normN(x + drop(linear2(drop(act(linear1(x))))))
//   pre-LN (norm_first = true):
//     x = x + drop(self_attn(norm1(x)));  [decoder: x = x + drop(cross_attn(norm2(x), mem))]
//     x = x + drop(ffn(normN(x)))
// In training the same rate also drops attention weights inside self_attn / cross_attn, as
// PyTorch's layers do (multi_head_attention::dropout).
#pragma once

#include <functional>
#include <random>
#include <string>

#include "kernelformer/nn/activation.hpp"
#include "kernelformer/nn/attention.hpp"
#include "kernelformer/nn/dropout.hpp"
#include "kernelformer/nn/layer_norm.hpp"
#include "kernelformer/nn/linear.hpp"
#include "kernelformer/nn/mlp.hpp"

namespace kf::nn {

struct block_config {
  index d_model = 64, heads = 4, d_ff = 256;
  double dropout = 0.0;
  activation act = activation::relu;
  bool norm_first = false;
  kernel_spec kernel = kernel_exp_dot{};
};

template <class T>
struct transformer_layer {
  block_config cfg;
  bool decoder = false;  // masked self-attention + cross-attention over the memory
  multi_head_attention<T> self_attn, cross_attn;
  mlp<T> ffn;  // linear1 → act → dropout → linear2
  layer_norm<T> norm1, norm2, norm3;

  struct cache {
    matrix<T> x0;              // input
    matrix<T> n1, a1, r1, h1;  // norm1 in/out, self-attn out, residual sum 1, block out
    matrix<T> n2, a2, r2, h2;  // decoder cross-attention stage
    matrix<T> n3, f2, r3;      // FFN stage: norm in, FFN out, residual sum
    typename mlp<T>::cache ff;
    typename layer_norm<T>::cache ln1, ln2, ln3;
    typename multi_head_attention<T>::cache att1, att2;
    dropout::cache d_att1, d_att2, d_ff2;
    matrix<T> a1d, a2d, f2d;  // after dropout
    mutable matrix<T> g[6];   // backward scratch, kept across steps
  };

  // The self-attention stage, a1 = SA(in) with a1, in: (n, C). forward() runs self_attn over the
  // n rows themselves; generation (model/generation.hpp) runs one new row against the keys and
  // values it cached, through forward_with, so the block's structure is written once.
  using self_attention_fn = std::function<void(matrix_view<T> a1, const_matrix_view<T> in)>;

  transformer_layer() = default;
  transformer_layer(parameters<T>& p, const std::string& name, const block_config& c,
                    bool is_decoder, bool causal_self_attention);
  // x, y: (B·T, C); memory: (B·S, C) for decoders (ignored otherwise).
  void forward(parameters<T>& p, matrix_view<T> y, const_matrix_view<T> x,
               const_matrix_view<T> memory, const typename multi_head_attention<T>::shape& self_sh,
               const typename multi_head_attention<T>::shape& cross_sh, cache& c,
               std::mt19937_64* rng) const;
  // forward() with the self-attention stage supplied by the caller (cross_sh and memory as there).
  void forward_with(parameters<T>& p, matrix_view<T> y, const_matrix_view<T> x,
                    const_matrix_view<T> memory,
                    const typename multi_head_attention<T>::shape& cross_sh, cache& c,
                    std::mt19937_64* rng, const self_attention_fn& self_attend) const;
  void backward(parameters<T>& p, matrix_view<T> dx, matrix_view<T> dmemory,
                const_matrix_view<T> dy, const_matrix_view<T> memory,
                const typename multi_head_attention<T>::shape& self_sh,
                const typename multi_head_attention<T>::shape& cross_sh, const cache& c) const;
};

}  // namespace kf::nn
