#include "kernelformer/optim/adamw.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

#include "detail/isa_dispatch.hpp"

namespace kf::optim {

// Moments m, v start at zero and are kept in double whatever T is (the update below also runs in
// double); they are the exp_avg / exp_avg_sq a checkpoint saves.
template <class T>
adamw<T>::adamw(adamw_config cfg, index size)
    : cfg_(cfg), m_(static_cast<std::size_t>(size), 0.0), v_(static_cast<std::size_t>(size), 0.0) {}

// Puts back a checkpoint's moments and step count (the step drives the bias corrections).
// Throws std::invalid_argument on a size mismatch, leaving the optimizer unchanged.
template <class T>
void adamw<T>::restore(std::vector<double> exp_avg, std::vector<double> exp_avg_sq, index steps) {
  if (exp_avg.size() != m_.size() || exp_avg_sq.size() != v_.size() || steps < 0)
    throw std::invalid_argument("adamw: the saved state does not match the parameters");
  m_ = std::move(exp_avg);
  v_ = std::move(exp_avg_sq);
  t_ = steps;
}

// One update of every parameter with learning rate lr (the schedule's value for this step).
// Throws std::invalid_argument, before touching any state, if a buffer or the mask has the wrong
// size.
template <class T>
void adamw<T>::step(std::span<T> values, std::span<const T> grads, double lr) {
  if (values.size() != m_.size() || grads.size() != m_.size())
    throw std::invalid_argument("adamw: buffer sizes do not match the optimizer");
  if (!decay_mask_.empty() && decay_mask_.size() != m_.size())
    throw std::invalid_argument("adamw: the decay mask does not match the parameters");
  ++t_;
  const double bc1 = 1.0 - std::pow(cfg_.beta1, double(t_));
  const double bc2 = 1.0 - std::pow(cfg_.beta2, double(t_));
  const double decay = 1.0 - lr * cfg_.weight_decay;  // decoupled: scales p, never enters m, v
  const auto n = static_cast<index>(values.size());
  const bool masked = !decay_mask_.empty();
  // One plain loop per chunk, split across threads and compiled at the run-time instruction set
  // (isa_invoke: sqrt and division vectorize, no temporaries); every element's arithmetic is
  // the same whatever the split. The update runs in double and is stored back as T.
  constexpr index kChunk = 4096;
  // lr·m̂ = (lr / bc1)·m and v̂ = v / bc2: the bias corrections folded into two scalars.
  const double b1 = cfg_.beta1, b2 = cfg_.beta2, step = lr / bc1, inv_bc2 = 1.0 / bc2;
  const double eps = cfg_.eps;
  const std::uint8_t* mask = masked ? decay_mask_.data() : nullptr;
  auto update = [=](double* m, double* v, T* p, const T* g, const std::uint8_t* dm, index len) {
    for (index i = 0; i < len; ++i) {
      const double gd = double(g[i]);
      m[i] = b1 * m[i] + (1 - b1) * gd;
      v[i] = b2 * v[i] + (1 - b2) * gd * gd;
      const double pd = double(p[i]) * (dm == nullptr || dm[i] ? decay : 1.0);
      p[i] = T(pd - step * m[i] / (std::sqrt(v[i] * inv_bc2) + eps));  // eps outside √
    }
  };
#pragma omp parallel for schedule(static) if (n >= (1 << 15))
  for (index c0 = 0; c0 < n; c0 += kChunk) {
    const index len = std::min(kChunk, n - c0);
    const auto u0 = static_cast<std::size_t>(c0);
    detail::isa_invoke(update, m_.data() + u0, v_.data() + u0, values.data() + u0,
                       grads.data() + u0, mask == nullptr ? nullptr : mask + u0, len);
  }
}

// Norm accumulated in double over the whole flat buffer (one global norm, not per tensor).
// max_norm ≤ 0 disables clipping but still returns the norm, for logging.
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

// step counts from 0. Warmup is (step + 1)/warmup, so step 0 already gets base/warmup and the
// last warmup step gets base; past `total` the rate stays at min_lr.
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
