// AdamW over the flat parameter buffer (one loop), PyTorch's update:
//   p ← p·(1 − lr·wd);  m ← β1 m + (1 − β1) g;  v ← β2 v + (1 − β2) g²
//   p ← p − lr · (m / (1 − β1^t)) / (√(v / (1 − β2^t)) + eps)
// With weight_decay = 0 this is plain Adam (torch.optim.Adam). Also: global gradient-norm
// clipping (torch.nn.utils.clip_grad_norm_) and a linear-warmup + cosine learning-rate schedule.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kernelformer/tensor.hpp"

namespace kf::optim {

struct adamw_config {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
};

template <class T>
class adamw {
 public:
  adamw(adamw_config cfg, index size);
  void step(std::span<T> values, std::span<const T> grads, double lr);
  void step(std::span<T> values, std::span<const T> grads) { step(values, grads, cfg_.lr); }
  index steps() const { return t_; }
  // Weight decay only where mask[i] != 0 (e.g. matrices, not biases or norms); empty: everywhere.
  void set_decay_mask(std::vector<std::uint8_t> mask) { decay_mask_ = std::move(mask); }
  const adamw_config& config() const { return cfg_; }
  // The state a resumed run needs (PyTorch's exp_avg, exp_avg_sq and step): saved with a
  // checkpoint and put back with restore(), which checks the sizes.
  const std::vector<double>& exp_avg() const { return m_; }
  const std::vector<double>& exp_avg_sq() const { return v_; }
  void restore(std::vector<double> exp_avg, std::vector<double> exp_avg_sq, index steps);

 private:
  adamw_config cfg_;
  std::vector<double> m_, v_;
  std::vector<std::uint8_t> decay_mask_;
  index t_ = 0;
};

// Scales grads so their global L2 norm is at most max_norm; returns the norm before clipping.
template <class T>
double clip_grad_norm(std::span<T> grads, double max_norm);

// lr(step): linear warmup over `warmup` steps (base·(step + 1)/warmup: step 0 gets base/warmup),
// then cosine decay to min_lr at `total`.
struct lr_schedule {
  double base = 1e-3, min_lr = 0.0;
  index warmup = 0, total = 0;  // total = 0: constant after warmup
  double at(index step) const;
};

}  // namespace kf::optim
