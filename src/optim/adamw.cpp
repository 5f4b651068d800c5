#include "kernelformer/optim/adamw.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>

namespace kf::optim {

template <class T>
adamw<T>::adamw(adamw_config cfg, index size)
    : cfg_(cfg), m_(static_cast<std::size_t>(size), 0.0), v_(static_cast<std::size_t>(size), 0.0) {}

template <class T>
void adamw<T>::step(std::span<T> values, std::span<const T> grads, double lr) {
  if (values.size() != m_.size() || grads.size() != m_.size())
    throw std::invalid_argument("adamw: buffer sizes do not match the optimizer");
  if (!decay_mask_.empty() && decay_mask_.size() != m_.size())
    throw std::invalid_argument("adamw: the decay mask does not match the parameters");
  ++t_;
  const double bc1 = 1.0 - std::pow(cfg_.beta1, double(t_));
  const double bc2 = 1.0 - std::pow(cfg_.beta2, double(t_));
  const double decay = 1.0 - lr * cfg_.weight_decay;
  const std::size_t n = values.size();
  const bool masked = !decay_mask_.empty();
#pragma omp parallel for schedule(static) if (n >= (1 << 15))
  for (std::size_t i = 0; i < n; ++i) {
    const double g = double(grads[i]);
    m_[i] = cfg_.beta1 * m_[i] + (1 - cfg_.beta1) * g;
    v_[i] = cfg_.beta2 * v_[i] + (1 - cfg_.beta2) * g * g;
    const double p = double(values[i]) * (!masked || decay_mask_[i] ? decay : 1.0);
    values[i] = static_cast<T>(p - lr * (m_[i] / bc1) / (std::sqrt(v_[i] / bc2) + cfg_.eps));
  }
}

template <class T>
double clip_grad_norm(std::span<T> grads, double max_norm) {
  double ss = 0;
  for (T g : grads) ss += double(g) * double(g);
  const double norm = std::sqrt(ss);
  if (max_norm > 0 && norm > max_norm) {
    const double s = max_norm / (norm + 1e-6);  // torch's clip_coef
    for (T& g : grads) g = static_cast<T>(double(g) * s);
  }
  return norm;
}

double lr_schedule::at(index step) const {
  if (warmup > 0 && step < warmup) return base * double(step + 1) / double(warmup);
  if (total <= warmup) return base;
  const double t = std::min(1.0, double(step - warmup) / double(total - warmup));
  return min_lr + 0.5 * (base - min_lr) * (1 + std::cos(std::numbers::pi * t));
}

template class adamw<float>;
template class adamw<double>;
template double clip_grad_norm<float>(std::span<float>, double);
template double clip_grad_norm<double>(std::span<double>, double);

}  // namespace kf::optim
