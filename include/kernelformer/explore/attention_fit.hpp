// kernelformer/explore/attention_fit.hpp — one attention head fitted to data (x_i, y_i).
//
// The head reads positions through φ, the explorer's 4-D sinusoidal encoding (explorer_features):
//   q_i = φ(x_i) W_q,  k_j = φ(x_j) W_k  (W: 4 × d),   v_j = e_j · w_v,  e_j = [φ(x_j), y_j, 1],
//   ŷ_i = Σ_{j ≠ i} p_ij v_j,   p_ij = softmax_j(q_i·k_j / √d)
// and W_q, W_k, w_v are trained by Adam on the mean squared error Σ_i (ŷ_i − y_i)² / n. The key
// j = i is masked out (the mask j ≠ i of masks.hpp), so the loss is leave-one-out: a head that
// copied each point's own value would not lower it. W_q, W_k start as attention_mimic's random
// projections (same seed, same draws); w_v starts at [0, 0, 0, 0, 1, 0] (v = y), so step 0 is a
// plain attention smoother of y. Forward and backward are the smoothing primitive's.
#pragma once

#include <cstdint>
#include <vector>

#include "kernelformer/tensor.hpp"

namespace kf {

struct attention_fit_params {
  matrix<double> wq, wk;   // (4, d)
  std::vector<double> wv;  // (6): weights of [φ(x), y, 1]
};

// The leave-one-out MSE of the head with parameters p on (x, y); when grad is not null, its
// gradient with respect to every parameter, in p's shapes (through smooth_backward).
double attention_fit_loss(const attention_fit_params& p, const std::vector<double>& x,
                          const std::vector<double>& y, double lo, double hi,
                          attention_fit_params* grad);

struct attention_fit_result {
  attention_fit_params params;           // trained
  std::vector<double> loss;              // per step, before its update
  double mse_before = 0, mse_after = 0;  // leave-one-out MSE at the start and the end
};

// x, y: n ≥ 3 training points; [lo, hi]: the range φ is built for.
attention_fit_result attention_fit_data(const std::vector<double>& x, const std::vector<double>& y,
                                        double lo, double hi, index d, index steps, double lr,
                                        std::uint64_t seed);

}  // namespace kf
