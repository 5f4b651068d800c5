// kernelformer/regression/smoother.hpp — nonparametric regression on the one primitive.
//
//   Nadaraya–Watson (local constant): ŷ(x) = Σ_j K(x, x_j) y_j / Σ_j K(x, x_j)
//   local linear: the kernel-weighted least-squares line at x (no boundary bias); from the
//     primitive's weighted means of [1, y, x, x xᵀ, x y]: ŷ(x) = ȳ + (x − x̄)ᵀ S_xx⁻¹ S_xy
//   KNN: the uniform (or inverse-distance) kernel under a top-k-by-distance mask
// All are linear smoothers ŷ(x) = Σ_j ℓ_j(x) y_j. A fit carries the bandwidth and how it was
// chosen, the effective degrees of freedom tr(L), leave-one-out residuals (closed form,
// (y_i − ŷ_i)/(1 − L_ii), never n refits), R², σ̂² = RSS/(n − df), and predictions carry pointwise
// standard errors σ̂·√(Σ_j ℓ_j(x)²) for a confidence band.
// Large 1-D problems take the binned fast path (linear binning + FFT, regression/binned.hpp),
// tested against this exact path.
// Where no training point has nonzero weight (compact kernel far from the data), the prediction
// is undefined: `defined` is 0 there and `fit`/`se` are 0 — never NaN. Double precision.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kernelformer/kernels.hpp"
#include "kernelformer/regression/bandwidth.hpp"
#include "kernelformer/regression/route.hpp"
#include "kernelformer/regression/shard.hpp"
#include "kernelformer/tensor.hpp"

namespace kf {

struct cv_folds;

namespace detail {
class knn_search;
struct nw_binned2d_grid;
struct binned1d_grid;
}  // namespace detail

enum class regression_method { nw, local_linear, knn };

struct regression_spec {
  regression_method method = regression_method::nw;
  // nw, local_linear: any distance kernel; nw also rff (random Fourier features ≈ the gaussian
  // of the same bandwidth: the primitive's feature-map route, O(n·r) per evaluation, its LOO
  // diagonal exact since φ(x)ᵀφ(x) = 1; Σ ℓ² for the standard errors costs O(n·r²), r ≤ 8192).
  any_kernel kernel = kernel_gaussian{};
  std::vector<double> bandwidth;      // one per column of x, or one for all (nw, ll)
  index k = 10;                       // knn; 0: choose k by leave-one-out CV in 1..k_max
  index k_max = 100;                  // knn: the largest k the LOO-CV search tries
  bool knn_distance_weights = false;  // knn: weights 1/|x − x_j| instead of uniform
  // Routes (choose_regression_route, route.hpp, chooses and names them): 1-D nw/local-linear with n
  // ≥ binned_min_n and any kernel but the boxcar take the binned fast path (regression/binned.hpp:
  // error < 1e-6 of the range of y for the gaussian, < 1e-4 for the others); knn takes the
  // sorted/k-d tree neighbor search (src/regression/knn.hpp). exact = true takes the primitive over
  // all pairs, except compact kernels in 1-D: exact sums over sorted windows in O(n log n)
  // (src/regression/sorted_window.cpp). The routes: src/regression/smoother_routes.hpp.
  bool exact = false;
  index binned_min_n = 5000;
  // The 1-D binned route's resolution h/δ (0: binned_settings::cells_per_h, the predictions'):
  // a k-fold search evaluates its candidates at the search resolution, as leave-one-out does.
  double binned_cells_per_h = 0;
  // The fit keeps per-point diagnostics (fitted values, hat diagonal, LOO residuals: n values
  // each). false keeps the summary only (df, RSS, R², criteria, undefined count), the same
  // numbers, in O(grid) memory beyond the data on the binned route (kf smooth at 10^7 points).
  bool per_point = true;
  // Several processes (regression/shard.hpp), each holding all the data: the binned grids (1-D
  // and 2-D) are binned in blocks and summed; every route's criteria are summed over blocks of
  // the training points; all-pairs predictions are merged over blocks of the keys, the routes
  // that need every key per query (neighbors, sorted windows, k-d tree) split the queries.
  // Needs per_point = false; the routes regression_shard_refusal names are refused.
  data_shard shard;
  // Cross-validation by folds (regression/cross_validation.hpp) instead of leave-one-out: the
  // loo_cv criterion (and knn's k = 0) then minimize the k-fold or grouped CV_K. Null: LOO.
  std::shared_ptr<const cv_folds> folds;
};

// The smoother evaluated at query points.
struct regression_eval {
  std::vector<double> fit;             // ŷ(x)
  std::vector<double> sum_l2;          // Σ_j ℓ_j(x)²: Var ŷ(x) = σ² · sum_l2
  std::vector<double> self_weight;     // ℓ_i(x_i) when the queries are the training points
  std::vector<unsigned char> defined;  // 0 where no training point has nonzero weight
  index undefined = 0;
  index ll_fallback = 0;  // local-linear points whose local design was singular (fit is NW)
};

// Evaluates the smoother of `spec` trained on (x, y) at the rows of xq. With `at_training`,
// xq must be x itself and self_weight (the hat-matrix diagonal) is filled.
regression_eval regression_evaluate(const regression_spec& spec, const_matrix_view<double> x,
                                    std::span<const double> y, const_matrix_view<double> xq,
                                    bool at_training);

// Whether nw and local-linear take this kernel: the distance kernels, and rff for nw (local
// linear with rff is refused: the signed weights of far points, times (x_j − x)², swamp the
// local second moment, and the fit falls back to nw at the edges whatever r).
bool regression_kernel_supported(const any_kernel& k, regression_method method);

// Why this spec cannot run over several processes (spec.shard), or "" when it can: knn --exact
// (a top-k mask ranks all keys of a row at once) and rff (signed partial sums).
std::string regression_shard_refusal(const regression_spec& spec, index n, index d);

struct regression_fit {
  regression_spec spec;  // with the chosen bandwidth
  kf::route route;       // the route its diagnostics ran on (and its predictions take), and why
  matrix<double> x;
  std::vector<double> y;
  bandwidth_criterion criterion = bandwidth_criterion::fixed;
  double criterion_value = 0;          // LOO-CV: mean squared LOO residual; GCV; AICc; else LOO-CV
  bool at_search_boundary = false;     // the optimum sat at an end of the searched range
  std::vector<criterion_point> curve;  // the criterion over the searched grid
  int search_evaluations = 0;          // criterion evaluations of the search (0: none)
  std::vector<double> fitted, loo_residuals, hat_diag;  // knn: LOO drops the point itself
  double df = 0, rss = 0, r2 = 0, sigma2 = 0, loo_cv = 0, gcv = 0, aicc = 0;
  index undefined = 0;
  // knn: the neighbor search built by the fit, reused by regression_predict (opaque).
  std::shared_ptr<const detail::knn_search> knn_index;
  // 2-D binned nw without per-point diagnostics: the fit's grid and sums, which
  // regression_predict reads for points that need no wider grid (opaque).
  std::shared_ptr<const detail::nw_binned2d_grid> binned2d_grid;
  // 1-D binned: the fit's grid (moments over the data's range, at most 64 MiB), which
  // regression_predict reads instead of binning and transforming the data again (opaque).
  std::shared_ptr<const detail::binned1d_grid> binned1d_grid;
};

struct regression_prediction {
  std::vector<double> fit, se;
  std::vector<double> sum_l2;  // Σ_j ℓ_j(x)²: se = σ̂·√sum_l2 (another σ̂ scales it)
  std::vector<unsigned char> defined;
  index undefined = 0;
};

// Fits: chooses the bandwidth by `criterion` (fixed: spec.bandwidth as given) and computes the
// diagnostics. Throws std::invalid_argument naming the problem (too few points for the
// criterion, all x equal, non-finite data, bad parameters).
regression_fit regression_fit_data(regression_spec spec, const_matrix_view<double> x,
                                   std::span<const double> y, bandwidth_criterion criterion,
                                   const progress_fn& progress = {});
// The same, taking ownership of the training data (no copy: what the CLI does with the columns
// it parsed).
regression_fit regression_fit_data(regression_spec spec, matrix<double> x, std::vector<double> y,
                                   bandwidth_criterion criterion, const progress_fn& progress = {});

regression_prediction regression_predict(const regression_fit& fit, const_matrix_view<double> xq);

// The criteria of a smoother with the given bandwidth (∞ where undefined, e.g. L_ii = 1).
struct criterion_values {
  double loo_cv, gcv, aicc, df, rss;
  index undefined;
};
criterion_values regression_criteria(const regression_spec& spec, const_matrix_view<double> x,
                                     std::span<const double> y);
// The criteria from the sums every route accumulates over n points: the residual sum of squares,
// df = tr(W) and loo = Σ (r_i / (1 − W_ii))². loo_cv = loo / n, GCV = (rss/n) / (1 − df/n)²,
// AICc = log(rss/n) + 1 + 2(df + 1)/(n − df − 2) (Hurvich, Simonoff and Tsai 1998); +inf where a
// denominator is not positive. The one place these formulas are written.
criterion_values criteria_from_sums(double rss, double df, double loo, index n);

}  // namespace kf
