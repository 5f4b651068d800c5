#include "kernelformer/nn/parameters.hpp"

#include <fmt/format.h>

#include <cmath>
#include <random>
#include <stdexcept>

namespace kf::nn {

// Records name, shape and initializer; storage comes later, in finalize(). Throws std::logic_error
// on a duplicate name or on add() after finalize() (the buffers would have to move, invalidating
// every pointer handed out by value()/grad()).
template <class T>
index parameters<T>::add(std::string name, std::vector<index> shape, init_kind init, double scale,
                         index fan_in, index fan_out) {
  if (!values_.empty()) throw std::logic_error("parameters: add() after finalize()");
  if (find(name) >= 0) throw std::logic_error(fmt::format("parameters: duplicate name {}", name));
  index size = 1;
  for (index s : shape) size *= s;
  param_info pi{std::move(name), std::move(shape), total_, size, init, scale, fan_in, fan_out};
  // Fans not given: read them from the PyTorch layout (out, in, …) — fan_in = shape[1],
  // fan_out = shape[0]; a vector uses its length for both, a scalar 1.
  if (pi.fan_in == 0)
    pi.fan_in = pi.shape.size() >= 2 ? pi.shape[1] : pi.shape.empty() ? 1 : pi.shape[0];
  if (pi.fan_out == 0) pi.fan_out = pi.shape.empty() ? 1 : pi.shape[0];
  total_ += size;  // tensors are packed back to back in registration order
  infos_.push_back(std::move(pi));
  return static_cast<index>(infos_.size()) - 1;
}

// Allocates values and gradients (both zero) and initializes each tensor in registration order
// from one mt19937_64 stream, so the same seed and the same add() sequence give bit-identical
// parameters. Draws are made in double and rounded to T, so float and double models start from
// the same numbers up to rounding.
template <class T>
void parameters<T>::finalize(std::uint64_t seed) {
  values_.assign(static_cast<std::size_t>(total_), T(0));
  grads_.assign(static_cast<std::size_t>(total_), T(0));
  std::mt19937_64 rng(seed);
  for (const auto& pi : infos_) {
    T* v = values_.data() + pi.offset;
    double a = 0;
    switch (pi.init) {
      case init_kind::zeros:
        break;
      case init_kind::ones:
        for (index i = 0; i < pi.size; ++i) v[i] = T(1);
        break;
      case init_kind::uniform:
      case init_kind::xavier_uniform:
      case init_kind::kaiming_linear: {
        // Half-width a of U(−a, a): scale itself, Xavier's scale·√(6/(fan_in + fan_out)), or
        // nn.Linear's 1/√fan_in (applied to bias as well as weight, as PyTorch does).
        a = pi.init == init_kind::uniform ? pi.scale
            : pi.init == init_kind::xavier_uniform
                ? pi.scale * std::sqrt(6.0 / double(pi.fan_in + pi.fan_out))
                : 1.0 / std::sqrt(double(pi.fan_in));
        std::uniform_real_distribution<double> u(-a, a);
        for (index i = 0; i < pi.size; ++i) v[i] = static_cast<T>(u(rng));
        break;
      }
      case init_kind::normal: {  // N(0, scale²): scale is the standard deviation
        std::normal_distribution<double> g(0.0, pi.scale);
        for (index i = 0; i < pi.size; ++i) v[i] = static_cast<T>(g(rng));
        break;
      }
    }
  }
}

// Gradients accumulate (every backward adds with +=), so call this once per optimizer step.
template <class T>
void parameters<T>::zero_grad() {
  std::fill(grads_.begin(), grads_.end(), T(0));
}

// Linear scan: used by add() and by checkpoint loading, never inside a training step.
template <class T>
index parameters<T>::find(const std::string& name) const {
  for (std::size_t i = 0; i < infos_.size(); ++i)
    if (infos_[i].name == name) return static_cast<index>(i);
  return -1;
}

template class parameters<float>;
template class parameters<double>;

}  // namespace kf::nn
