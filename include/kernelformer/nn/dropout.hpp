// Inverted dropout: in training each element is zeroed with probability `rate` and the rest are
// scaled by 1/(1 − rate); in evaluation it is the identity. The keep-mask comes from a seeded
// generator owned by the caller, so a run is reproducible. Dropout on attention weights lives in
// the smoothing primitive (smooth_options::dropout), which never materializes them.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "kernelformer/tensor.hpp"

namespace kf::nn {

struct dropout {
  double rate = 0.0;
  struct cache {
    std::vector<std::uint8_t> keep;  // empty: identity
  };
  template <class T>
  void forward(matrix_view<T> y, const_matrix_view<T> x, cache& c, std::mt19937_64* rng) const;
  template <class T>
  void backward(matrix_view<T> dx, const_matrix_view<T> dy, const cache& c) const;
};

}  // namespace kf::nn
