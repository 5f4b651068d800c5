// Elementwise activations, forward and backward (dx += dy · f'(x)).
//   relu(x) = max(0, x)   (f'(0) taken as 0)
//   gelu(x) = x Φ(x) = ½ x (1 + erf(x/√2))   (PyTorch's exact GELU, approximate='none')
#pragma once

#include <string_view>

#include "kernelformer/tensor.hpp"

namespace kf::nn {

enum class activation { relu, gelu };
activation activation_parse(std::string_view name);  // "relu" | "gelu"

template <class T>
void activation_forward(activation a, matrix_view<T> y, const_matrix_view<T> x);
template <class T>
void activation_backward(activation a, matrix_view<T> dx, const_matrix_view<T> dy,
                         const_matrix_view<T> x);

}  // namespace kf::nn
