#include "kernelformer/nn/layer_norm.hpp"

#include <algorithm>
#include <cmath>
#include "detail/eigen.hpp"

namespace kf::nn {

namespace {
// Rows per block of the backward pass's parameter-gradient partial sums (fixed, so results do
// not depend on the thread count), and the work below which the passes stay on one thread.
constexpr index kRowBlock = 256;
constexpr index kParallelMin = index{1} << 14;

template <class T>
using row_map = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T>
using const_row_map = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

// Σ f(i) for i < c, in 16 interleaved partial sums combined in a fixed order: it vectorizes, and
// unlike a reduction over an unaligned Eigen map (which peels a head whose length depends on the
// row's address) the summation order depends on c only, so training is bit-reproducible.
template <class T, class F>
T fixed_order_sum(index c, F&& f) {
  constexpr index kLanes = 16;
  T acc[kLanes] = {};
  index i = 0;
  for (; i + kLanes <= c; i += kLanes)
    for (index j = 0; j < kLanes; ++j) acc[j] += f(i + j);
  for (index j = 0; i < c; ++i, ++j) acc[j] += f(i);
  for (index w = kLanes / 2; w > 0; w /= 2)
    for (index j = 0; j < w; ++j) acc[j] += acc[j + w];
  return acc[0];
}
}  // namespace

template <class T>
layer_norm<T>::layer_norm(parameters<T>& p, const std::string& name, index channels) : c(channels) {
  weight = p.add(name + ".weight", {c}, init_kind::ones);
  bias = p.add(name + ".bias", {c}, init_kind::zeros);
}

// Each row in one vectorized pass per statistic, in T (as PyTorch's float LayerNorm): the mean,
// then the variance about it (two passes, no cancellation), then y.
template <class T>
void layer_norm<T>::forward(parameters<T>& p, matrix_view<T> y, const_matrix_view<T> x,
                            cache& cc) const {
  const const_row_map<T> g(p.value(weight), c), bb(p.value(bias), c);
  cc.mean.resize(static_cast<std::size_t>(x.rows));
  cc.rstd.resize(static_cast<std::size_t>(x.rows));
  const T inv_c = T(1) / static_cast<T>(c);
#pragma omp parallel for schedule(static) if (x.rows * c >= kParallelMin)
  for (index n = 0; n < x.rows; ++n) {
    const T* xp = x.row(n);
    const T m = fixed_order_sum<T>(c, [&](index i) { return xp[i]; }) * inv_c;
    const T v = fixed_order_sum<T>(c, [&](index i) { return (xp[i] - m) * (xp[i] - m); }) * inv_c;
    const const_row_map<T> xr(xp, c);
    const T rs = T(1) / std::sqrt(v + static_cast<T>(eps));
    cc.mean[static_cast<std::size_t>(n)] = m;
    cc.rstd[static_cast<std::size_t>(n)] = rs;
    row_map<T>(y.row(n), c) = (xr - m) * rs * g + bb;
  }
}

// With x̂ = (x − μ)·r: dx = r · (dŷ − mean(dŷ) − x̂ · mean(dŷ ⊙ x̂)), dŷ = dy ⊙ weight;
// dweight = Σ_n dy ⊙ x̂, dbias = Σ_n dy. One pass over x and dy: blocks of rows in parallel,
// each with its own partial parameter sums, added in block order.
template <class T>
void layer_norm<T>::backward(parameters<T>& p, matrix_view<T> dx, const_matrix_view<T> dy,
                             const_matrix_view<T> x, const cache& cc) const {
  const const_row_map<T> g(p.value(weight), c);
  T* dg = p.grad(weight);
  T* db = p.grad(bias);
  const index blocks = (x.rows + kRowBlock - 1) / kRowBlock;
  std::vector<T> part(static_cast<std::size_t>(blocks * 2 * c), T(0));
  const T inv_c = T(1) / static_cast<T>(c);
#pragma omp parallel if (x.rows * c >= kParallelMin)
  {
    Eigen::Array<T, Eigen::Dynamic, 1> xh(c), d(c);
#pragma omp for schedule(static)
    for (index bk = 0; bk < blocks; ++bk) {
      row_map<T> pg(part.data() + bk * 2 * c, c), pb(part.data() + bk * 2 * c + c, c);
      const index r1 = std::min(x.rows, (bk + 1) * kRowBlock);
      for (index n = bk * kRowBlock; n < r1; ++n) {
        const T m = cc.mean[static_cast<std::size_t>(n)], rs = cc.rstd[static_cast<std::size_t>(n)];
        const const_row_map<T> dyr(dy.row(n), c);
        xh = (const_row_map<T>(x.row(n), c) - m) * rs;
        pg += dyr * xh;
        pb += dyr;
        if (dx.empty()) continue;
        d = dyr * g;
        const T mean_d = fixed_order_sum<T>(c, [&](index i) { return d[i]; }) * inv_c;
        const T mean_dx = fixed_order_sum<T>(c, [&](index i) { return d[i] * xh[i]; }) * inv_c;
        row_map<T>(dx.row(n), c) += rs * (d - mean_d - xh * mean_dx);
      }
    }
  }
  for (index bk = 0; bk < blocks; ++bk)
    for (index i = 0; i < c; ++i) {
      dg[i] += part[static_cast<std::size_t>(bk * 2 * c + i)];
      db[i] += part[static_cast<std::size_t>(bk * 2 * c + c + i)];
    }
}

template struct layer_norm<float>;
template struct layer_norm<double>;

}  // namespace kf::nn
