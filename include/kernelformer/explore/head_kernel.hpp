// kernelformer/explore/head_kernel.hpp — reading an attention head as a kernel smoother.
//
// head_kernel_fit: for every query row i of a head's normalized weights p_ij over key positions
// x_j, fits a normalized kernel profile  K((x_j − c_i) / h_i) / Σ_j K(…)  by least squares over
// the centre c_i and bandwidth h_i (grid search, then golden-section refinement of h), for each
// candidate shape (gaussian, laplacian, cauchy, epanechnikov, tricube, boxcar). Reports per shape
// the median bandwidth, the median offset c_i − x_i (a head that looks back by a period has an
// offset of minus that period), and R² = 1 − SSE/SST over all rows; the best shape has the
// highest R². A head whose weights do not look like any kernel has a low R² for all shapes.
//
// attention_mimic: dot-product attention on positional encodings (q = φ W_q, k = φ W_k,
// exp_dot kernel) trained by Adam to reproduce a kernel smoother's weights. The values are the
// identity (v_j = e_j), so the primitive's output IS the weight matrix and its backward gives the
// gradient of the mean squared weight difference with respect to q and k.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernelformer/kernels.hpp"
#include "kernelformer/tensor.hpp"

namespace kf {

struct head_kernel_shape_fit {
  std::string kernel;
  double median_bandwidth = 0, median_offset = 0, r2 = 0;
  std::vector<double> bandwidth, offset;  // per row
};

struct head_kernel_report {
  std::vector<head_kernel_shape_fit> shapes;  // one per candidate, in candidate order
  index best = 0;                             // index of the highest R²
};

// weights: (T, S) rows summing to 1 (empty rows are skipped); query_x (T), key_x (S).
head_kernel_report head_kernel_fit(const_matrix_view<double> weights,
                                   const std::vector<double>& query_x,
                                   const std::vector<double>& key_x);

struct mimic_result {
  matrix<double> target, before, after;    // (n, n) weights: kernel smoother, attention at
                                           // initialization, attention after training
  double rmse_before = 0, rmse_after = 0;  // root mean squared weight difference
  std::vector<double> loss;                // per step
  matrix<double> wq, wk;                   // trained projections (4, d)
};

// Trains q = φ(x) W_q, k = φ(x) W_k (φ: explorer_features, width d) to mimic `target` weights.
mimic_result attention_mimic(const std::vector<double>& x, double lo, double hi,
                             const matrix<double>& target, index d, index steps, double lr,
                             std::uint64_t seed);

// What attention_mimic minimizes: mean((P − target)²) for projections W_q, W_k (4 × d each); with
// grad, its gradient [dW_q, dW_k] (2·4·d entries, row-major, W_q first): the hand-written chain
// dW = φᵀ dq through the primitive's backward, checked against finite differences in the tests.
double attention_mimic_loss(const std::vector<double>& x, double lo, double hi,
                            const matrix<double>& target, const matrix<double>& wq,
                            const matrix<double>& wk, std::vector<double>* grad);

}  // namespace kf
