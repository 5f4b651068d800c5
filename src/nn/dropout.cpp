#include "kernelformer/nn/dropout.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "detail/counter_mask.hpp"

namespace kf::nn {

namespace {
// Rows are split across threads only when there is enough work to pay for the region.
constexpr index kParallelMin = index{1} << 15;
}  // namespace

template <class T>
void dropout::forward(matrix_view<T> y, const_matrix_view<T> x, cache& c,
                      std::mt19937_64* rng) const {
  if (rate <= 0.0 || rng == nullptr) {  // evaluation, or no dropout: identity
    c.keep.clear();
    if (y.data == x.data && y.ld == x.ld) return;  // in place
    for (index n = 0; n < x.rows; ++n) std::copy_n(x.data + n * x.ld, x.cols, y.data + n * y.ld);
    return;
  }
  // Keep with probability 1 − rate: one 64-bit draw per call seeds the shared counter mask
  // (detail/counter_mask.hpp) over the element index — vectorized, split across threads with
  // the same result for any thread count (the generator's stream cost more than the layer).
  const detail::counter_mask bits((*rng)(), rate);
  const T scale = static_cast<T>(1.0 / (1.0 - rate));
  const index cols = x.cols;
  c.keep.resize(static_cast<std::size_t>(x.rows * cols));
  std::uint8_t* keep = c.keep.data();
#pragma omp parallel for schedule(static) if (x.rows * cols >= kParallelMin)
  for (index n = 0; n < x.rows; ++n) {
    const T* xr = x.data + n * x.ld;
    T* yr = y.data + n * y.ld;
    std::uint8_t* kr = keep + n * cols;
    const auto base = static_cast<std::uint32_t>(n * cols);
    for (index i = 0; i < cols; ++i) {
      const bool k = bits.keep(base + static_cast<std::uint32_t>(i));
      kr[i] = static_cast<std::uint8_t>(k);
      yr[i] = xr[i] * (k ? scale : T(0));  // a select of constants: the loop vectorizes
    }
  }
}

template <class T>
void dropout::backward(matrix_view<T> dx, const_matrix_view<T> dy, const cache& c) const {
  const index cols = dy.cols;
  const bool identity = c.keep.empty();
  const T scale = identity ? T(1) : static_cast<T>(1.0 / (1.0 - rate));
  const std::uint8_t* keep = c.keep.data();
#pragma omp parallel for schedule(static) if (dy.rows * cols >= kParallelMin)
  for (index n = 0; n < dy.rows; ++n) {
    T* d = dx.data + n * dx.ld;
    const T* g = dy.data + n * dy.ld;
    if (identity) {
      for (index i = 0; i < cols; ++i) d[i] += g[i];
      continue;
    }
    const std::uint8_t* kr = keep + n * cols;
    for (index i = 0; i < cols; ++i) d[i] += g[i] * (static_cast<T>(kr[i]) * scale);
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
