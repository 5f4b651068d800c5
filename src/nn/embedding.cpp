#include "kernelformer/nn/embedding.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace kf::nn {

// Registers "<name>.weight" (vocab, C), drawn from N(0, init_std²) — nn.Embedding's default at
// init_std = 1.
template <class T>
token_embedding<T>::token_embedding(parameters<T>& p, const std::string& name, index vocab_size,
                                    index channels, double init_std)
    : vocab(vocab_size), c(channels) {
  w = p.add(name + ".weight", {vocab, c}, init_kind::normal, init_std);
}

// y[n] = W[ids[n]]          y: (N, C), ids: (N), W: (vocab, C). Row n of y is overwritten.
// Every id is checked before its row is read, so bad data fails with a message, not a wild read.
template <class T>
void token_embedding<T>::forward(parameters<T>& p, matrix_view<T> y,
                                 std::span<const index> ids) const {
  const T* wv = p.value(w);
  for (std::size_t n = 0; n < ids.size(); ++n) {
    const index id = ids[n];
    if (id < 0 || id >= vocab)
      throw std::out_of_range(
          fmt::format("token id {} at position {} is outside 0..{}", id, n, vocab - 1));
    for (index i = 0; i < c; ++i) y(static_cast<index>(n), i) = wv[id * c + i];  // W row id
  }
}

// dW[ids[n]] += dy[n]       dy: (N, C). A scatter-add: a token seen k times gets k rows summed.
// ids are not rechecked: backward expects the ids its forward accepted.
template <class T>
void token_embedding<T>::backward(parameters<T>& p, const_matrix_view<T> dy,
                                  std::span<const index> ids) const {
  T* dw = p.grad(w);
  for (std::size_t n = 0; n < ids.size(); ++n)
    for (index i = 0; i < c; ++i) dw[ids[n] * c + i] += dy(static_cast<index>(n), i);
}

// PE[t, 2i] = sin(t·ω_i), PE[t, 2i+1] = cos(t·ω_i), ω_i = 10000^(−2i/dim)      PE: (T, dim)
// Computed in double; for odd dim the last column is a sin with no cos partner.
template <class T>
matrix<T> positional_sinusoidal(index positions, index dim) {
  matrix<T> pe(positions, dim);
  for (index t = 0; t < positions; ++t)
    for (index i = 0; i < dim; i += 2) {
      const double freq =
          std::exp(-std::log(10000.0) * double(i) / double(dim));  // ω of columns (i, i+1)
      pe(t, i) = static_cast<T>(std::sin(double(t) * freq));
      if (i + 1 < dim) pe(t, i + 1) = static_cast<T>(std::cos(double(t) * freq));
    }
  return pe;
}

template struct token_embedding<float>;
template struct token_embedding<double>;
template matrix<float> positional_sinusoidal<float>(index, index);
template matrix<double> positional_sinusoidal<double>(index, index);

}  // namespace kf::nn
