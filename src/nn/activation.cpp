#include "kernelformer/nn/activation.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

namespace kf::nn {

activation activation_parse(std::string_view name) {
  if (name == "relu") return activation::relu;
  if (name == "gelu") return activation::gelu;
  throw std::invalid_argument("unknown activation '" + std::string(name) + "' (relu, gelu)");
}

template <class T>
void activation_forward(activation a, matrix_view<T> y, const_matrix_view<T> x) {
  for (index n = 0; n < x.rows; ++n)
    for (index i = 0; i < x.cols; ++i) {
      const T v = x(n, i);
      y(n, i) = a == activation::relu
                    ? (v > T(0) ? v : T(0))
                    : T(0.5) * v * (T(1) + std::erf(v * T(std::numbers::sqrt2 / 2)));
    }
}

template <class T>
void activation_backward(activation a, matrix_view<T> dx, const_matrix_view<T> dy,
                         const_matrix_view<T> x) {
  constexpr double inv_sqrt_2pi = 0.3989422804014327;
  for (index n = 0; n < x.rows; ++n)
    for (index i = 0; i < x.cols; ++i) {
      const T v = x(n, i);
      T d;
      if (a == activation::relu) {
        d = v > T(0) ? T(1) : T(0);
      } else {  // Φ(v) + v φ(v)
        d = T(0.5) * (T(1) + std::erf(v * T(std::numbers::sqrt2 / 2))) +
            v * T(inv_sqrt_2pi) * std::exp(T(-0.5) * v * v);
      }
      dx(n, i) += dy(n, i) * d;
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
