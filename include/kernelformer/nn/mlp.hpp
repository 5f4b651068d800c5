// The feed-forward network of a Transformer block (PyTorch's linear1 → activation → dropout →
// linear2, as inside nn.TransformerEncoderLayer):
//   f1 = x W1ᵀ + b1   (N, F)      g1 = act(f1)      g1d = drop(g1)      y = g1d W2ᵀ + b2   (N, C)
// Parameter names <prefix>linear1.*, <prefix>linear2.* (the block passes its own name, so the
// state_dict names stay PyTorch's). Backward accumulates into dx and the parameter gradients.
#pragma once

#include <random>
#include <string>

#include "kernelformer/nn/activation.hpp"
#include "kernelformer/nn/dropout.hpp"
#include "kernelformer/nn/linear.hpp"

namespace kf::nn {

template <class T>
struct mlp {
  linear<T> linear1, linear2;
  activation act = activation::relu;
  double dropout_rate = 0.0;

  struct cache {
    matrix<T> f1, g1, g1d;  // linear1 out, activation out, after dropout
    dropout::cache drop;
    mutable matrix<T> dg1d, dg1, df1;  // backward scratch, kept across steps
  };

  mlp() = default;
  // prefix: "layers.0." gives layers.0.linear1.weight, …
  mlp(parameters<T>& p, const std::string& prefix, index channels, index hidden, activation a,
      double dropout);
  void forward(parameters<T>& p, matrix_view<T> y, const_matrix_view<T> x, cache& c,
               std::mt19937_64* rng) const;
  void backward(parameters<T>& p, matrix_view<T> dx, const_matrix_view<T> dy,
                const_matrix_view<T> x, const cache& c) const;
};

}  // namespace kf::nn
