#include "kernelformer/nn/dropout.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace kf::nn {

template <class T>
void dropout::forward(matrix_view<T> y, const_matrix_view<T> x, cache& c,
                      std::mt19937_64* rng) const {
  if (rate <= 0.0 || rng == nullptr) {  // evaluation, or no dropout: identity
    c.keep.clear();
    if (y.data == x.data && y.ld == x.ld) return;  // in place
    for (index n = 0; n < x.rows; ++n) std::copy_n(x.data + n * x.ld, x.cols, y.data + n * y.ld);
    return;
  }
  // Keep with probability 1 − rate: each 64-bit draw gives four 16-bit uniforms compared with a
  // threshold (the distribution objects' floating-point path cost more than the layer itself;
  // rate is resolved to 1/65536).
  const auto threshold = static_cast<std::uint32_t>(std::lround(rate * 65536.0));
  const T scale = static_cast<T>(1.0 / (1.0 - rate));
  c.keep.resize(static_cast<std::size_t>(x.rows * x.cols));
  std::uint64_t bits = 0;
  int left = 0;
  for (index n = 0; n < x.rows; ++n)
    for (index i = 0; i < x.cols; ++i) {
      if (left == 0) bits = (*rng)(), left = 4;
      const bool k = static_cast<std::uint32_t>(bits & 0xFFFF) >= threshold;
      bits >>= 16, --left;
      c.keep[static_cast<std::size_t>(n * x.cols + i)] = k;
      y(n, i) = k ? x(n, i) * scale : T(0);
    }
}

template <class T>
void dropout::backward(matrix_view<T> dx, const_matrix_view<T> dy, const cache& c) const {
  if (c.keep.empty()) {  // identity
    for (index n = 0; n < dy.rows; ++n) {
      T* d = dx.data + n * dx.ld;
      const T* g = dy.data + n * dy.ld;
      for (index i = 0; i < dy.cols; ++i) d[i] += g[i];
    }
    return;
  }
  const T scale = static_cast<T>(1.0 / (1.0 - rate));
  for (index n = 0; n < dy.rows; ++n)
    for (index i = 0; i < dy.cols; ++i) {
      const bool k = c.keep.empty() || c.keep[static_cast<std::size_t>(n * dy.cols + i)];
      if (k) dx(n, i) += dy(n, i) * scale;
    }
}

template void dropout::forward<float>(matrix_view<float>, const_matrix_view<float>, cache&,
                                      std::mt19937_64*) const;
template void dropout::forward<double>(matrix_view<double>, const_matrix_view<double>, cache&,
                                       std::mt19937_64*) const;
template void dropout::backward<float>(matrix_view<float>, const_matrix_view<float>,
                                       const cache&) const;
template void dropout::backward<double>(matrix_view<double>, const_matrix_view<double>,
                                        const cache&) const;

}  // namespace kf::nn
