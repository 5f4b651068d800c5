// kernelformer/regression/route.hpp — the route a regression or density evaluation takes,
// chosen once at the top (choose_regression_route, choose_kde_route) and then switched on: the
// only place the support predicates are asked (binned_supports, sorted windows, the k-d tree's
// support fraction). A fit stores the route it ran (regression_fit::route, kde_fit::route), so
// the summary, `kf smooth`/`kf kde` and the Python `route_` report the route that ran and why.
//
//   regression (src/regression/smoother.cpp switches; one file per route):
//     neighbors       knn by sorted neighbors (1-D) or a k-d tree (knn.cpp)
//     all pairs, top-k  knn --exact: the primitive with a top-k mask (smoother_exact.cpp)
//     features        nw with rff: the primitive's feature-map route, O(n·r) (smoother_exact.cpp)
//     binned          1-D nw / local linear, n ≥ binned_min_n: linear binning + FFT (binned.cpp)
//     binned 2-D      2-D nw, n ≥ binned_min_n: bilinear binning + FFT (nw_binned2d.cpp)
//     sorted windows  1-D compact kernels: running polynomial sums (sorted_window.cpp)
//     k-d tree        d ≥ 2 compact kernels whose support spans ≤ 5% of the data's box (radius.cpp)
//     all pairs       the primitive over every pair: the reference of every other route
//   density (src/regression/kde.cpp): binned (1-D), binned 2-D, k-d tree, all pairs — the same
//   rules with the KDE's options.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kernelformer/kernels.hpp"
#include "kernelformer/tensor.hpp"

namespace kf {

struct regression_spec;
struct kde_options;

enum class route_kind {
  neighbors,       // knn: sorted neighbors or a k-d tree
  all_pairs_topk,  // knn exact: the primitive under a top-k mask
  features,        // nw with rff: the primitive's feature-map route
  binned,          // 1-D linear binning + FFT
  binned2d,        // 2-D bilinear binning + FFT
  sorted_windows,  // 1-D compact kernels, exact
  kd_tree,         // d ≥ 2 compact kernels, exact over each support
  all_pairs,       // the primitive over every pair
};

struct route {
  route_kind kind = route_kind::all_pairs;
  std::string why;  // the reason in words ("1 column, 20000 ≥ 5000 points, gaussian")

  // "binned (linear binning + FFT)", "exact (all pairs)", …: what kf smooth and kf kde print.
  std::string_view name() const;
  bool binned() const { return kind == route_kind::binned || kind == route_kind::binned2d; }
  // The routes that need every key for each query (neighbors, sorted windows, the k-d tree):
  // over several processes they split the queries instead of the keys.
  bool splits_queries() const {
    return kind == route_kind::neighbors || kind == route_kind::sorted_windows ||
           kind == route_kind::kd_tree;
  }
};

// The route regression_evaluate takes for spec (its bandwidth set) on training data x. The k-d
// tree's choice depends on the bandwidth (the support's share of the data's box), so a
// bandwidth search chooses per candidate; every other choice depends on spec and x's shape.
route choose_regression_route(const regression_spec& spec, const_matrix_view<double> x);

// The density route for kernel at bandwidth h (per column, or one for all) on data x.
route choose_kde_route(const any_kernel& kernel, const std::vector<double>& h,
                       const_matrix_view<double> x, const kde_options& options);

// Whether the k-d tree pays for a compact kernel at bandwidth h (per column, or one) on x: the
// support's box as a fraction of the data's bounding box (per column min(1, 2h/range),
// multiplied) is at most kKdTreeMaxFraction; beyond it the all-pairs primitive (SIMD, tiled) is
// faster per pair.
inline constexpr double kKdTreeMaxFraction = 0.05;
double support_fraction(const std::vector<double>& h, const_matrix_view<double> x);

}  // namespace kf
