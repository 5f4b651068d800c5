#include "kernelformer/nn/activation.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>
#include <type_traits>
#include "detail/eigen.hpp"
#include "detail/isa_dispatch.hpp"
#include "detail/vec_exp.hpp"

namespace kf::nn {

// Throws std::invalid_argument naming the bad value and the accepted ones.
activation activation_parse(std::string_view name) {
  if (name == "relu") return activation::relu;
  if (name == "gelu") return activation::gelu;
  throw std::invalid_argument("unknown activation '" + std::string(name) + "' (relu, gelu)");
}

// Rows are processed as Eigen arrays (double) or by the dispatched float loops below (vectorized
// erf/exp: ~30x std::erf, within 4e-7), in parallel when the matrix is large enough to pay for the
// fork. Each row is computed into an aligned scratch row: Eigen peels scalar iterations until the
// destination is aligned, and the scalar and packet erf differ in the last bit, so computing in
// place would make results depend on the buffer's address (and training not bit-reproducible).
namespace {
constexpr index kParallelMin = 1 << 14;

template <class T>
Eigen::Array<T, Eigen::Dynamic, 1>& scratch_row(index n) {
  thread_local Eigen::Array<T, Eigen::Dynamic, 1> buf;
  if (buf.size() != n) buf.resize(n);
  return buf;
}

// erf for float: x·P(x²)/Q(x²) on x clamped to [−4, 4] (beyond it erf is ±1 in float), the
// rational approximation Eigen's packet erf uses (max error ~2 ulp), written as plain arithmetic
// so the loops below vectorize at the run-time instruction set (isa_invoke: 16 lanes with
// AVX-512), where Eigen's packets stay at the baseline build's 4.
[[gnu::always_inline]] inline float erf_rational(float v) {
  const float x = v < -4.f ? -4.f : (v > 4.f ? 4.f : v), x2 = x * x;
  float p = x2 * -2.72614225801306e-10f + 2.77068142495902e-08f;
  p = x2 * p + -2.10102402082508e-06f;
  p = x2 * p + -5.69250639462346e-05f;
  p = x2 * p + -7.34990630326855e-04f;
  p = x2 * p + -2.95459980854025e-03f;
  p = x2 * p + -1.60960333262415e-02f;
  float q = x2 * -1.45660718464996e-05f + -2.13374055278905e-04f;
  q = x2 * q + -1.68282697438203e-03f;
  q = x2 * q + -7.37332916720468e-03f;
  q = x2 * q + -1.42647390514189e-02f;
  return x * p / q;
}

// GELU of one float row, and its backward dx += dy·(Φ(v) + v φ(v)) with φ's exp from the
// dispatched exp pass (vec_exp.hpp) over a scratch row.
void gelu_row(float* y, const float* x, index n) {
  auto body = [](float* out, const float* v, index len) {
    for (index i = 0; i < len; ++i)
      out[i] = 0.5f * v[i] * (1.f + erf_rational(v[i] * 0.70710678118654752f));
  };
  detail::isa_invoke(body, y, x, n);
}
void gelu_backward_row(float* dx, const float* dy, const float* x, float* tmp, index n) {
  auto half_square = [](float* t, const float* v, index len) {
    for (index i = 0; i < len; ++i) t[i] = -0.5f * v[i] * v[i];
  };
  detail::isa_invoke(half_square, tmp, x, n);
  detail::exp_inplace(tmp, n);
  auto body = [](float* d, const float* g, const float* v, const float* e, index len) {
    for (index i = 0; i < len; ++i)
      d[i] += g[i] * (0.5f * (1.f + erf_rational(v[i] * 0.70710678118654752f)) +
                      v[i] * 0.3989422804014327f * e[i]);
  };
  detail::isa_invoke(body, dx, dy, x, static_cast<const float*>(tmp), n);
}

template <class T>
using row_array = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T>
using const_row_array = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
}  // namespace

// y = f(x), overwritten            x, y: (N, C); y may alias x (each row goes through scratch).
template <class T>
void activation_forward(activation a, matrix_view<T> y, const_matrix_view<T> x) {
  const T s = T(std::numbers::sqrt2 / 2);  // 1/√2, so erf(v·s) = erf(v/√2)
#pragma omp parallel for schedule(static) if (x.rows * x.cols >= kParallelMin)
  for (index n = 0; n < x.rows; ++n) {
    const const_row_array<T> v(x.data + n * x.ld, x.cols);
    row_array<T> out(y.data + n * y.ld, x.cols);
    if (a == activation::relu) {
      out = v.max(T(0));
    } else if constexpr (std::is_same_v<T, float>) {
      gelu_row(y.data + n * y.ld, x.data + n * x.ld, x.cols);
    } else {
      auto& tmp = scratch_row<T>(x.cols);
      tmp = T(0.5) * v * (T(1) + (v * s).erf());
      out = tmp;
    }
  }
}

// dx += dy · f'(x)                 x, dy, dx: (N, C); accumulates, like every backward here.
template <class T>
void activation_backward(activation a, matrix_view<T> dx, const_matrix_view<T> dy,
                         const_matrix_view<T> x) {
  const T s = T(std::numbers::sqrt2 / 2), inv_sqrt_2pi = T(0.3989422804014327);
#pragma omp parallel for schedule(static) if (x.rows * x.cols >= kParallelMin)
  for (index n = 0; n < x.rows; ++n) {
    const const_row_array<T> v(x.data + n * x.ld, x.cols), g(dy.data + n * dy.ld, x.cols);
    row_array<T> d(dx.data + n * dx.ld, x.cols);
    if (a == activation::relu) {
      d += (v > T(0)).select(g, T(0));
    } else if constexpr (std::is_same_v<T, float>) {
      gelu_backward_row(dx.data + n * dx.ld, dy.data + n * dy.ld, x.data + n * x.ld,
                        scratch_row<T>(x.cols).data(), x.cols);
    } else {  // GELU' = Φ(v) + v φ(v), φ(v) = exp(−v²/2)/√(2π)
      auto& tmp = scratch_row<T>(x.cols);
      tmp = g * (T(0.5) * (T(1) + (v * s).erf()) + v * inv_sqrt_2pi * (T(-0.5) * v * v).exp());
      d += tmp;
    }
  }
}

template void activation_forward<float>(activation, matrix_view<float>, const_matrix_view<float>);
template void activation_forward<double>(activation, matrix_view<double>,
                                         const_matrix_view<double>);
template void activation_backward<float>(activation, matrix_view<float>, const_matrix_view<float>,
                                         const_matrix_view<float>);
template void activation_backward<double>(activation, matrix_view<double>,
                                          const_matrix_view<double>, const_matrix_view<double>);

}  // namespace kf::nn
