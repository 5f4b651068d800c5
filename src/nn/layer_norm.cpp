#include "kernelformer/nn/layer_norm.hpp"

#include <cmath>

namespace kf::nn {

template <class T>
layer_norm<T>::layer_norm(parameters<T>& p, const std::string& name, index channels) : c(channels) {
  weight = p.add(name + ".weight", {c}, init_kind::ones);
  bias = p.add(name + ".bias", {c}, init_kind::zeros);
}

template <class T>
void layer_norm<T>::forward(parameters<T>& p, matrix_view<T> y, const_matrix_view<T> x,
                            cache& cc) const {
  const T* g = p.value(weight);
  const T* bb = p.value(bias);
  cc.mean.resize(static_cast<std::size_t>(x.rows));
  cc.rstd.resize(static_cast<std::size_t>(x.rows));
#pragma omp parallel for schedule(static) if (x.rows * c >= (1 << 14))
  for (index n = 0; n < x.rows; ++n) {
    double m = 0, v = 0;
    for (index i = 0; i < c; ++i) m += double(x(n, i));
    m /= double(c);
    for (index i = 0; i < c; ++i) v += (double(x(n, i)) - m) * (double(x(n, i)) - m);
    v /= double(c);
    const double rs = 1.0 / std::sqrt(v + eps);
    cc.mean[static_cast<std::size_t>(n)] = static_cast<T>(m);
    cc.rstd[static_cast<std::size_t>(n)] = static_cast<T>(rs);
    for (index i = 0; i < c; ++i)
      y(n, i) = static_cast<T>((double(x(n, i)) - m) * rs) * g[i] + bb[i];
  }
}

// With x̂ = (x − μ)·r: dx = r · (dŷ − mean(dŷ) − x̂ · mean(dŷ ⊙ x̂)), dŷ = dy ⊙ weight.
template <class T>
void layer_norm<T>::backward(parameters<T>& p, matrix_view<T> dx, const_matrix_view<T> dy,
                             const_matrix_view<T> x, const cache& cc) const {
  const T* g = p.value(weight);
  T* dg = p.grad(weight);
  T* db = p.grad(bias);
  // Parameter gradients: a serial pass over rows (deterministic order).
  for (index n = 0; n < x.rows; ++n) {
    const double m = cc.mean[static_cast<std::size_t>(n)],
                 rs = cc.rstd[static_cast<std::size_t>(n)];
    for (index i = 0; i < c; ++i) {
      dg[i] += static_cast<T>(double(dy(n, i)) * ((double(x(n, i)) - m) * rs));
      db[i] += dy(n, i);
    }
  }
  if (dx.empty()) return;
    // Input gradient: rows are independent.
#pragma omp parallel for schedule(static) if (x.rows * c >= (1 << 14))
  for (index n = 0; n < x.rows; ++n) {
    const double m = cc.mean[static_cast<std::size_t>(n)],
                 rs = cc.rstd[static_cast<std::size_t>(n)];
    double mean_d = 0, mean_dx = 0;
    for (index i = 0; i < c; ++i) {
      const double xh = (double(x(n, i)) - m) * rs;
      const double d = double(dy(n, i)) * double(g[i]);
      mean_d += d;
      mean_dx += d * xh;
    }
    mean_d /= double(c);
    mean_dx /= double(c);
    for (index i = 0; i < c; ++i) {
      const double xh = (double(x(n, i)) - m) * rs;
      const double d = double(dy(n, i)) * double(g[i]);
      dx(n, i) += static_cast<T>(rs * (d - mean_d - xh * mean_dx));
    }
  }
}

template struct layer_norm<float>;
template struct layer_norm<double>;

}  // namespace kf::nn
