// The routes of regression_evaluate (route.cpp chooses one, smoother.cpp switches on it) and
// the helpers they share. Internal to the library.
//
//   all pairs       the smoothing primitive over every (query, training point) pair: the
//                   reference for every other route (smoother_exact.cpp)
//   sorted windows  exact 1-D sums for compact kernels from running polynomial sums over
//                   sorted keys, O(n log n) (sorted_window.cpp)
//   k-d tree        d ≥ 2, compact kernels: a k-d tree finds each query's support (radius.cpp)
//   binned          linear binning + FFT in 1-D (nw_binned.cpp), bilinear in 2-D
//                   (nw_binned2d.cpp, binned2d.hpp)
//   neighbors       KNN by sorted neighbors or a k-d tree (knn.hpp)
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kernelformer/kernels.hpp"
#include "kernelformer/regression/binned.hpp"
#include "kernelformer/regression/smoother.hpp"
#include "kernelformer/tensor.hpp"

namespace kf::detail {

// Throws std::invalid_argument unless x (n ≥ 1 rows, finite) and y (n finite values) agree.
void check_regression_data(const_matrix_view<double> x, std::span<const double> y);

// The per-column bandwidths of spec (broadcasting a single value); validated.
std::vector<double> regression_bandwidths(const regression_spec& spec, index d);

// Every route's result for nq queries before any is evaluated: fit and Σℓ² zero, none defined;
// self weights (zero) only at the training points.
inline regression_eval regression_eval_for(std::size_t nq, bool at_training) {
  regression_eval r;
  r.fit.assign(nq, 0.0);
  r.sum_l2.assign(nq, 0.0);
  r.defined.assign(nq, 0);
  if (at_training) r.self_weight.assign(nq, 0.0);
  return r;
}

// Fit, Σℓ² and self weight at one query from its local kernel moments
//   s_p = Σ K dᵖ, t_p = Σ K dᵖ y, q_p = Σ K² dᵖ   (d = x_j − x, in any fixed unit)
// (p ≤ 2 for local linear, p = 0 for Nadaraya–Watson). k0 = K(0), a training point's weight on
// itself. Binned rules: undefined where s0 ≤ 1e-3·k0 (too far from the data for the grid's
// precision: the caller evaluates exactly) and the local line falls back to NW where
// det ≤ 1e-9·s0·s2. Exact rules, as the all-pairs route: undefined only where s0 ≤ min_s0, and
// the fallback where the window's variance of d, det/s0², is ≤ 1e-9 (d in bandwidth units).
struct local_quantities {
  double fit = 0, sum_l2 = 0, self = 0;
  bool defined = false, fallback = false;
};

inline local_quantities from_moments(int degree, double k0, double s0, double s1, double s2,
                                     double t0, double t1, double q0, double q1, double q2,
                                     bool exact_rules = false, double min_s0 = 0) {
  local_quantities r;
  if (!(s0 > (exact_rules ? min_s0 : 1e-3 * k0))) return r;
  r.defined = true;
  r.fit = t0 / s0;
  r.sum_l2 = q0 / (s0 * s0);
  r.self = k0 / s0;
  if (degree == 0) return r;
  const double det = s0 * s2 - s1 * s1;
  const double floor = exact_rules ? 1e-9 * s0 * s0 : 1e-9 * s0 * s2;
  if (!(s2 > 0 && det > floor)) {
    r.fallback = true;
    return r;
  }
  r.fit = (s2 * t0 - s1 * t1) / det;
  r.sum_l2 = (s2 * s2 * q0 - 2 * s1 * s2 * q1 + s1 * s1 * q2) / (det * det);
  r.self = k0 * s2 / det;
  return r;
}

// The all-pairs route: the smoothing primitive with the kernel (or a top-k mask for knn).
regression_eval evaluate_all_pairs(const regression_spec& spec, const_matrix_view<double> x,
                                   std::span<const double> y, const_matrix_view<double> xq,
                                   bool at_training);

// The sorted-window route (sorted_window.cpp): one column, a compact kernel, nw or local linear.
bool sorted_window_supports(const any_kernel& k);

// The unit-bandwidth compact kernel as a polynomial in |u| on [0, 1]: K(u) = Σ_m c[m] |u|^m
// (the cosine by its Taylor series to degree 22, cut where a term is below 1e-17 on |u| ≤ 1).
std::vector<double> compact_polynomial(const any_kernel& k);

// want_sum_l2 = false leaves sum_l2 at 0 (the criteria need only the fit and self weights).
regression_eval sorted_window_evaluate(const regression_spec& spec, const_matrix_view<double> x,
                                       std::span<const double> y, const_matrix_view<double> xq,
                                       bool at_training, bool want_sum_l2 = true);

// The k-d tree route (radius.cpp): two or more columns, a compact kernel, nw or local linear
// (choose_regression_route decides when it pays).
// Σ_j K(|(q_i − x_j)/h|) for a compact kernel (its own parameter ignored: unit bandwidth in the
// h-scaled coordinates), over each query's support; leave_one_out (q = x) skips j = i.
std::vector<double> radius_kernel_sums(const any_kernel& kernel, const_matrix_view<double> x,
                                       std::span<const double> h, const_matrix_view<double> q,
                                       bool leave_one_out);
// The same, leaving out key self[i] for query i (self empty: none).
std::vector<double> radius_kernel_sums(const any_kernel& kernel, const_matrix_view<double> x,
                                       std::span<const double> h, const_matrix_view<double> q,
                                       std::span<const index> self);
regression_eval radius_evaluate(const regression_spec& spec, const_matrix_view<double> x,
                                std::span<const double> y, const_matrix_view<double> xq,
                                bool at_training);

// Column 0 of x as a contiguous span: x's own storage when its rows are one value apart (one
// column, the common 1-D case: no copy of 10^7 values), else a copy kept in `hold`.
std::span<const double> column0(const_matrix_view<double> x, std::vector<double>& hold);

// The 1-D binned route (nw_binned.cpp): the smoother's moments on a grid over the data's range
// for one kernel and bandwidth, read at any query inside that range (outside it, and where the
// sum of weights is below 1e-3 K(0), the binned smoother is undefined and the caller evaluates
// exactly). A fit keeps one (regression_fit::binned1d_grid) when it is at most
// kBinned1dKeepBytes, so its predictions read it instead of binning and transforming again.
struct binned1d_grid {
  double xmin = 0, xmax = 0, bandwidth = 0, k0 = 0;
  int degree = 0;
  std::string kernel;                            // kernel_name of the spec's kernel
  binned_data::moments m;                        // its own vectors (no views of the bins)
  bool fits(const regression_spec& spec) const;  // made for this kernel, bandwidth, method
  std::size_t bytes() const;
  local_quantities at(double x) const;
};
inline constexpr std::size_t kBinned1dKeepBytes = std::size_t(64) << 20;
std::shared_ptr<const binned1d_grid> binned1d_make(const regression_spec& spec,
                                                   const_matrix_view<double> x,
                                                   std::span<const double> y);
// prepared: a grid to read when it fits spec; otherwise one is made from the data.
regression_eval binned1d_evaluate(const regression_spec& spec, const_matrix_view<double> x,
                                  std::span<const double> y, const_matrix_view<double> xq,
                                  bool at_training, const binned1d_grid* prepared);
// The rows of xq (numbered from first) where the grid leaves the smoother undefined.
std::vector<index> binned1d_undefined_rows(const binned1d_grid& g, const_matrix_view<double> xq,
                                           index first);
// The criteria as sums over bins, at the grid resolution cells_per_h (search or final).
criterion_values binned1d_criteria(const regression_spec& spec, const binned_data& bd,
                                   double cells_per_h);

}  // namespace kf::detail
