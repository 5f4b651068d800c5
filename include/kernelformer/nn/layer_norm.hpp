// y = (x − mean) / √(var + eps) · weight + bias        x, y: (N, C); weight, bias: (C)
// Biased variance, eps = 1e-5: PyTorch nn.LayerNorm. The cache keeps mean and 1/σ per row.
#pragma once

#include <string>
#include <vector>

#include "kernelformer/nn/parameters.hpp"

namespace kf::nn {

template <class T>
struct layer_norm {
  index c = 0;
  index weight = -1, bias = -1;
  double eps = 1e-5;
  struct cache {
    std::vector<T> mean, rstd;  // (N)
  };

  layer_norm() = default;
  layer_norm(parameters<T>& p, const std::string& name, index channels);
  void forward(parameters<T>& p, matrix_view<T> y, const_matrix_view<T> x, cache& c) const;
  void backward(parameters<T>& p, matrix_view<T> dx, const_matrix_view<T> dy,
                const_matrix_view<T> x, const cache& c) const;
};

}  // namespace kf::nn
