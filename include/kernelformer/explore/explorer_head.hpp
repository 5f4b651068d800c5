// kernelformer/explore/explorer_head.hpp — the explorer's attention head, in four modes.
//
// Every mode is one head on the positional encoding φ (explorer.hpp): q = φ(x) W_q,
// k = φ(x) W_k, weights K(q, k_j) normalized over the data points, values v_j.
//   identity  W_q = W_k = I (4 × 4), K the request's dot kernel (exp_dot(T), polynomial, linear),
//             v = y: a stationary kernel of x − x' (explorer.hpp's derivation).
//   random    W_q, W_k 4 × 8 drawn N(0, 1/4) from the request's seed, softmax(q·k / √8), v = y:
//             seed 002's tool, and attention_mimic's starting point.
//   mimic     the same W trained by attention_mimic (head_kernel.hpp) to reproduce the NW weights
//             among 50 evenly spaced positions of [lo, hi], v = y.
//   data      W_q, W_k and w_v trained on the data by attention_fit_data (attention_fit.hpp):
//             leave-one-out squared error of the head's own prediction, v = [φ(x), y, 1]·w_v
//             (trained on at most 200 of the points, evenly strided in x order).
// A trained head depends on fewer things than the request: explorer_head_key names them, so a
// server can keep trained heads while sliders move.
#pragma once

#include <string>
#include <vector>

#include "kernelformer/explore/explorer.hpp"
#include "kernelformer/explore/head_kernel.hpp"
#include "kernelformer/kernels.hpp"
#include "kernelformer/tensor.hpp"

namespace kf {

struct explorer_head {
  std::string mode = "identity";
  kernel_spec kernel;      // the weights' kernel on (q, k)
  matrix<double> wq, wk;   // (4, d)
  std::vector<double> wv;  // data mode: weights of [φ(x), y, 1]; empty: v = y
  // Training (mimic, data): loss per step (mimic: mean squared weight difference; data:
  // leave-one-out MSE), its first and last values, steps, points trained on, wall time.
  std::vector<double> loss;
  double loss_before = 0, loss_after = 0;
  index steps = 0, train_points = 0;
  double train_ms = 0;
};

// Builds the head (training it for mimic and data: tens of milliseconds).
explorer_head explorer_make_head(const explorer_request& r);
// What the head depends on: requests with equal keys get equal heads.
std::string explorer_head_key(const explorer_request& r);

matrix<double> explorer_head_queries(const explorer_head& h, const std::vector<double>& x,
                                     double lo, double hi);  // (n, d)
matrix<double> explorer_head_keys(const explorer_head& h, const std::vector<double>& x, double lo,
                                  double hi);  // (n, d)
matrix<double> explorer_head_values(const explorer_head& h, const std::vector<double>& x,
                                    const std::vector<double>& y, double lo,
                                    double hi);  // (n, 1)

// The head read as a kernel smoother: its weights among `positions` evenly spaced points of
// [lo, hi] (every point a query and a key), fitted by head_kernel_fit on `rows` evenly spaced
// query rows; and how far its kernel is from symmetric, ‖K − Kᵀ‖ / ‖K‖ over those positions
// (K(x, x') = K(q(x), k(x')) scaled by its largest entry: 0 for the identity head).
struct explorer_head_diagnostics {
  head_kernel_report fit;
  double asymmetry = 0;
  index positions = 0, rows = 0;
};
explorer_head_diagnostics explorer_head_diagnose(const explorer_head& h, double lo, double hi,
                                                 index positions = 40, index rows = 9);

}  // namespace kf
