// Token embedding and positional encodings.
//   token_embedding:  y[n] = W[id[n]]              W: (vocab, C) — nn.Embedding, init N(0, 1)
//   positional_sinusoidal(T, dim): PE[t, 2i] = sin(t / 10000^(2i/dim)), PE[t, 2i+1] = cos(…)
//     (Vaswani et al.; seed 003 §4.2) — any dim, added to or concatenated with the input
//   learned positional embedding: a token_embedding indexed by position.
#pragma once

#include <span>
#include <string>

#include "kernelformer/nn/parameters.hpp"

namespace kf::nn {

template <class T>
struct token_embedding {
  index vocab = 0, c = 0, w = -1;
  token_embedding() = default;
  token_embedding(parameters<T>& p, const std::string& name, index vocab_size, index channels,
                  double init_std = 1.0);
  // Throws std::out_of_range naming the position of an id outside [0, vocab).
  void forward(parameters<T>& p, matrix_view<T> y, std::span<const index> ids) const;
  void backward(parameters<T>& p, const_matrix_view<T> dy, std::span<const index> ids) const;
};

// (T, dim) sinusoidal table.
template <class T>
matrix<T> positional_sinusoidal(index positions, index dim);

}  // namespace kf::nn
