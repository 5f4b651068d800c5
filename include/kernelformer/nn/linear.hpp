// y = x Wᵀ + b                          x: (N, in)  y: (N, out)  W: (out, in)  b: (out)
// PyTorch nn.Linear's layout and default init (U(±1/√in) for W and b). Backward accumulates:
//   dx += dy W,  dW += dyᵀ x,  db += Σ_rows dy.
#pragma once

#include <string>

#include "kernelformer/nn/parameters.hpp"

namespace kf::nn {

template <class T>
struct linear {
  index in = 0, out = 0;
  index w = -1, b = -1;  // parameter ids (b = −1: no bias)

  linear() = default;
  linear(parameters<T>& p, const std::string& name, index in_features, index out_features,
         bool bias = true, init_kind init = init_kind::kaiming_linear, double scale = 1.0);
  void forward(parameters<T>& p, matrix_view<T> y, const_matrix_view<T> x) const;
  // dx may be empty (input gradient not needed). overwrite_dx: dx = dy W instead of dx += dy W
  // (dx's prior contents are then never read).
  void backward(parameters<T>& p, matrix_view<T> dx, const_matrix_view<T> dy,
                const_matrix_view<T> x, bool overwrite_dx = false) const;
};

}  // namespace kf::nn
