// kernelformer/explore/demos.hpp — the seeds' demonstrations as data: each function computes one
// demonstration (its numbers, the series its figures draw, its table rows) and returns it; none
// prints or writes a file. `kf report` draws them (apps/kf/report_seeds.cpp, report_attention.cpp),
// `kf demo` prints seed 001's table, and the explorer's presets load the same data sets
// (explore/explorer.hpp: "seed001_numpy" is seed001_sorted(), "sinusoids" with n = 50 and no
// noise is seed 002's).
//
//   seed 000  kernel smoothing of sin x + noise at three bandwidths (one chosen by LOO-CV), and a
//             nearly linear f where a large bandwidth costs little inside and NW is biased at
//             the edges (local linear is not)
//   seed 001  KNN (k = 10) vs Gaussian kernel regression on seed 001's 40 points, and the same
//             Gaussian smoother computed as softmax attention on lifted features
//   seed 004  the kernels' shapes; attention pooling from one-hot (h → 0) to uniform (h → ∞)
//   seed 002  kernel smoothing vs attention on positional encodings; attention trained to mimic
//   seed 003  softmax attention after LayerNorm is Gaussian (RBF) smoothing with h = d^¼
// Every curve and weight is one call of the smoothing primitive (smooth.hpp). Deterministic.
#pragma once

#include <string>
#include <vector>

#include "kernelformer/explore/head_kernel.hpp"
#include "kernelformer/explore/seed001_data.hpp"
#include "kernelformer/tensor.hpp"

namespace kf::demo {

// n evenly spaced points from a to b inclusive (n ≥ 2).
std::vector<double> linspace(double a, double b, index n);
// Mean squared difference of a and b over the indices [from, min(to, a.size())).
double mse(const std::vector<double>& a, const std::vector<double>& b, std::size_t from = 0,
           std::size_t to = std::size_t(-1));

// Seed 001's 40 points (seed001_data.hpp) as vectors, in the numpy order / sorted by x.
struct xy_data {
  std::vector<double> x, y;
};
xy_data seed001_points();
xy_data seed001_sorted();

// A head's weights read as a kernel (head_kernel_fit): the best shape with its median bandwidth,
// median offset c − x_i and R², and the Gaussian shape's R² beside it. One row of the report's
// head-as-kernel table.
struct head_kernel_summary {
  std::string head;    // what the weights are ("seed 002: attention, trained to mimic")
  std::string kernel;  // the best shape
  double bandwidth = 0, offset = 0, r2 = 0, gaussian_r2 = 0;
};
// weights: (T, S) rows summing to 1; query_x (T), key_x (S) their positions.
head_kernel_summary head_kernel_summarize(std::string head, const_matrix_view<double> weights,
                                          const std::vector<double>& query_x,
                                          const std::vector<double>& key_x);

// --- seed 000 --------------------------------------------------------------------------------

struct seed000_fit {
  double bandwidth = 0;
  std::vector<double> fit;    // (400) NW at the grid
  double mse = 0;             // against the truth on the grid
  double loo_cv = 0, df = 0;  // leave-one-out CV (mean squared LOO residual), tr(L) at the data
};
struct seed000_result {
  std::vector<double> x, y;         // (120) x ~ U(0, 10) sorted, y = sin x + N(0, 0.4²); seed 0
  std::vector<double> grid, truth;  // (400) evenly spaced on [0, 10]; sin
  std::vector<seed000_fit> fits;    // Gaussian NW at b = 0.08, the LOO-CV choice, b = 2
  static constexpr std::size_t kChosen = 1;  // fits[kChosen] is the LOO-CV bandwidth
  // The nearly linear case: f = 0.3x + 1 with the same noise draws, b = 1.5.
  double linear_bandwidth = 1.5;
  std::vector<double> y_linear;                                         // (120)
  std::vector<double> truth_linear, nw_linear, ll_linear;               // (400) f, NW, local linear
  static constexpr std::size_t kInteriorFrom = 120, kInteriorTo = 280;  // grid 3 ≤ x < 7
  double mse_nw_interior = 0, mse_nw = 0, mse_ll = 0;                   // against f
};
seed000_result seed000();

// --- seed 001 --------------------------------------------------------------------------------

struct seed001_result {
  xy_data data;                            // the 40 points, numpy order
  double bandwidth = 0;                    // 1/√10: scikit-learn's rbf γ = 5 = 1/(2h²)
  index k = 10;                            // KNN's neighbours
  std::vector<double> query, truth;        // evenly spaced on [0, 6]; 2 sin x
  std::vector<double> nw, knn, attention;  // at the queries
  double mse_nw = 0, mse_knn = 0;          // against 2 sin x
  double max_nw_attention = 0;             // max |NW − attention|: rounding only
};
// NW: the Gaussian kernel. KNN: the uniform kernel under a top-k-by-distance mask. Attention:
// exp(q·k) with q = (x/h, 1), k = (x'/h, −x'²/(2h²)), so that q·k = x x'/h² − x'²/(2h²) and the
// normalized weights are the Gaussian's (the query-only factor exp(−x²/(2h²)) cancels).
seed001_result seed001(index queries = 500);

// --- seed 004 --------------------------------------------------------------------------------

struct kernel_profile {
  std::string name;
  std::vector<double> values;  // K(u) / K(0) at seed004_result::u
};
struct seed004_result {
  std::vector<double> u;  // (601) on [−3, 3]: distance / bandwidth
  std::vector<kernel_profile>
      kernels;                // gaussian, boxcar, epanechnikov, laplacian, tricube, cauchy
  xy_data keys;               // seed 001's points sorted by x: the key-value pairs
  std::vector<double> query;  // (600) on [0, 6]
  double lookup_h = 1e-5, smoothing_h = 0.3, average_h = 1e3;
  std::vector<double> lookup, smoothing, average;  // pooled values at the queries
  static constexpr index kKey = 10;
  double lookup_weight = 0;   // h = 1e-5: weight on key 10 when the query equals key 10 (≈ 1)
  double average_weight = 0;  // h = 1e3: weight on key 0 for that query (≈ 1/40)
  double mean = 0;            // mean of the values: what average pooling returns
};
seed004_result seed004();

// --- seed 002 --------------------------------------------------------------------------------

struct seed002_result {
  std::vector<double> x, y;  // (50) evenly spaced on [0, 1]; sin 2πx + ½ sin 6πx (no noise)
  double bandwidth = 0.05;   // the Gaussian smoother's
  // target: the smoother's (50, 50) weights; before / after: attention on φ(x) (d = 8) with random
  // W_q, W_k and after 1500 Adam steps (lr 0.03, seed 2) on the mean squared weight difference.
  mimic_result mimic;
  std::vector<double> smoother, random, trained;  // (50) outputs: the weights times y
  static constexpr index kMiddle = 25;            // the query whose weight profile is drawn
  std::vector<head_kernel_summary> heads;         // smoother, random head, trained head
};
seed002_result seed002();

// --- seed 003 --------------------------------------------------------------------------------

// 64 tokens x (64, d) ~ N(1.5, 3²) and values v (64, 8) ~ N(0, 3²), drawn in that order from
// mt19937_64 seeded with d (deterministic; the unit test recomputes the identity from them).
struct layer_norm_case {
  matrix<double> x, v;
};
layer_norm_case seed003_case(index d);

struct layer_norm_rbf_row {
  index d = 0;
  double length_scale = 0;  // h = d^¼
  // max |out_exp_dot − out_gaussian(h)| over the outputs, q = k = LayerNorm(x) without affine:
  double max_diff = 0;        // with LayerNorm's ε = 1e-5 (norms slightly below √d)
  double max_diff_exact = 0;  // with ε = 0: rounding only
  double max_abs_sum = 0;     // max_i |Σ_j LN(x)_ij|: LayerNorm's outputs ⟂ the ones vector
  double max_norm_gap = 0;    // max_i | |LN(x)_i| − √d |
};
struct seed003_result {
  std::vector<layer_norm_rbf_row> rows;  // d = 16, 64, 256
  // d = 64, the first 16 queries × all 64 keys: the attention score q·k/√d and the Gaussian
  // log-weight −|q − k|²/(2√d); they differ by the constant √d.
  std::vector<double> score, gaussian_log_weight;
};
seed003_result seed003();

}  // namespace kf::demo
