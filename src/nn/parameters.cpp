#include "kernelformer/nn/parameters.hpp"

#include <fmt/format.h>

#include <cmath>
#include <random>
#include <stdexcept>

namespace kf::nn {

template <class T>
index parameters<T>::add(std::string name, std::vector<index> shape, init_kind init, double scale,
                         index fan_in, index fan_out) {
  if (!values_.empty()) throw std::logic_error("parameters: add() after finalize()");
  if (find(name) >= 0) throw std::logic_error(fmt::format("parameters: duplicate name {}", name));
  index size = 1;
  for (index s : shape) size *= s;
  param_info pi{std::move(name), std::move(shape), total_, size, init, scale, fan_in, fan_out};
  if (pi.fan_in == 0)
    pi.fan_in = pi.shape.size() >= 2 ? pi.shape[1] : pi.shape.empty() ? 1 : pi.shape[0];
  if (pi.fan_out == 0) pi.fan_out = pi.shape.empty() ? 1 : pi.shape[0];
  total_ += size;
  infos_.push_back(std::move(pi));
  return static_cast<index>(infos_.size()) - 1;
}

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
        a = pi.init == init_kind::uniform ? pi.scale
            : pi.init == init_kind::xavier_uniform
                ? pi.scale * std::sqrt(6.0 / double(pi.fan_in + pi.fan_out))
                : 1.0 / std::sqrt(double(pi.fan_in));
        std::uniform_real_distribution<double> u(-a, a);
        for (index i = 0; i < pi.size; ++i) v[i] = static_cast<T>(u(rng));
        break;
      }
      case init_kind::normal: {
        std::normal_distribution<double> g(0.0, pi.scale);
        for (index i = 0; i < pi.size; ++i) v[i] = static_cast<T>(g(rng));
        break;
      }
    }
  }
}

template <class T>
void parameters<T>::zero_grad() {
  std::fill(grads_.begin(), grads_.end(), T(0));
}

template <class T>
index parameters<T>::find(const std::string& name) const {
  for (std::size_t i = 0; i < infos_.size(); ++i)
    if (infos_[i].name == name) return static_cast<index>(i);
  return -1;
}

template class parameters<float>;
template class parameters<double>;

}  // namespace kf::nn
