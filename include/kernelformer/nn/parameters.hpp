// kernelformer/nn/parameters.hpp — every parameter and gradient of a model in two flat buffers.
//
// Layers register named tensors (PyTorch state_dict names, e.g.
// "layers.0.self_attn.in_proj_weight") with a shape and an initializer; finalize() allocates one
// contiguous buffer for values and one for gradients, so the optimizer is one loop and a checkpoint
// is one pass. Initializers are seeded and deterministic: the same seed gives bit-identical
// parameters.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kernelformer/tensor.hpp"

namespace kf::nn {

enum class init_kind {
  zeros,
  ones,
  uniform,         // U(−a, a), a = scale
  xavier_uniform,  // U(−a, a), a = scale·√(6/(fan_in + fan_out)) — PyTorch's for attention
  kaiming_linear,  // PyTorch nn.Linear default: U(−1/√fan_in, 1/√fan_in) for weight and bias
  normal,          // N(0, scale²)
};

struct param_info {
  std::string name;
  std::vector<index> shape;
  index offset = 0, size = 0;
  init_kind init = init_kind::zeros;
  double scale = 1.0;
  index fan_in = 0, fan_out = 0;
};

template <class T>
class parameters {
 public:
  // Registers a tensor; returns its id. Shapes follow PyTorch (nn.Linear weight: out × in).
  index add(std::string name, std::vector<index> shape, init_kind init, double scale = 1.0,
            index fan_in = 0, index fan_out = 0);
  // Allocates the buffers and runs every initializer with the seed.
  void finalize(std::uint64_t seed);
  bool finalized() const { return !values_.empty() || infos_.empty(); }

  T* value(index id) { return values_.data() + infos_[static_cast<std::size_t>(id)].offset; }
  const T* value(index id) const {
    return values_.data() + infos_[static_cast<std::size_t>(id)].offset;
  }
  T* grad(index id) { return grads_.data() + infos_[static_cast<std::size_t>(id)].offset; }
  std::span<T> values() { return values_; }
  std::span<const T> values() const { return values_; }
  std::span<T> grads() { return grads_; }
  std::span<const T> grads() const { return grads_; }
  void zero_grad();
  const std::vector<param_info>& info() const { return infos_; }
  index count() const { return total_; }
  // Id of a named tensor, or −1.
  index find(const std::string& name) const;

 private:
  std::vector<param_info> infos_;
  std::vector<T> values_, grads_;
  index total_ = 0;
};

}  // namespace kf::nn
