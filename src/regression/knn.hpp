// KNN regression without all pairs: the k nearest training points of each query from a sorted
// copy (1-D: binary search, then two pointers outward, O(log n + k)) or a k-d tree (d ≥ 2:
// nanoflann, O(k log n) per query for moderate d), queries run in parallel (OpenMP).
// The reference is the primitive with a top-k-by-distance mask (regression_spec::exact), tied to
// this route by tests. Ties in distance may pick different (equidistant) neighbors.
// Leave-one-out drops the point itself (k nearest *other* points), and k can be chosen by LOO-CV
// over 1..k_max from one neighbor search of k_max + 1 (prefix sums over the neighbor lists).
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "kernelformer/regression/smoother.hpp"
#include "kernelformer/tensor.hpp"

namespace kf::detail {

class knn_search {
 public:
  // Keeps what it searches (a sorted copy in 1-D, a copy of the rows for the tree), so it may
  // outlive x: a fit keeps its search for later predictions (regression_fit::knn_index).
  explicit knn_search(const_matrix_view<double> x);
  ~knn_search();
  knn_search(const knn_search&) = delete;
  knn_search& operator=(const knn_search&) = delete;
  // The min(k, n) nearest training rows of q (length d), nearest first: indices and Euclidean
  // distances. Returns how many were written.
  index query(const double* q, index k, index* idx, double* dist) const;
  index size() const { return n_; }
  // The training rows in an order where neighbors are close (sorted 1-D; the tree's leaves):
  // passes over the training points in this order reuse the cache.
  const std::vector<index>& locality_order() const { return order_; }

 private:
  struct tree;
  index n_, d_;
  std::vector<double> sorted_;  // 1-D: values, ascending
  std::vector<index> order_;    // 1-D: their rows; d ≥ 2: the rows in the tree's leaf order
  std::unique_ptr<tree> tree_;  // d ≥ 2
};

// Drops row `self` from a neighbor list of length m (or, if it is not there, the last entry, or
// an exact duplicate of it when the list has one): what is left are the nearest other points.
// Returns the new length.
index knn_drop_self(index* idx, double* dist, index m, index self);

// search: the search over x built before (a fit's), or null to build one.
regression_eval knn_evaluate(const regression_spec& spec, const_matrix_view<double> x,
                             std::span<const double> y, const_matrix_view<double> xq,
                             bool at_training, const knn_search* search = nullptr);

// One pass over the training points (k + 1 neighbors each): the fit at x_i (the k nearest, x_i
// among them), its self weight, and the leave-one-out residual y_i − (fit from the k nearest
// other points).
struct knn_training {
  std::vector<double> fitted, self_weight, loo_residuals;
};
knn_training knn_training_pass(const regression_spec& spec, const knn_search& search,
                               const_matrix_view<double> x, std::span<const double> y);

// Mean squared leave-one-out residual for k = 1..k_max (entry k − 1).
std::vector<double> knn_loo_cv_curve(const regression_spec& spec, const knn_search& search,
                                     const_matrix_view<double> x, std::span<const double> y,
                                     index k_max);

// KNN on the neighbor-search route: k chosen by leave-one-out CV when spec.k = 0, then one pass
// of k + 1 neighbors per training point for the fit, the hat diagonal and the leave-one-out
// residuals — which drop the point itself: the k nearest other points predict it (not the
// linear-smoother shortcut (y − ŷ)/(1 − L_ii), which would use k − 1 of them). One k-d tree.
criterion_values knn_fit(regression_fit& f, regression_spec& spec);

}  // namespace kf::detail
