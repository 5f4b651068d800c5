// kernelformer/regression/cross_validation.hpp — k-fold and grouped cross-validation of a
// regression smoother, beside the closed-form leave-one-out criterion.
//
//   CV_K(h) = (1/n) Σ_i (y_i − ŷ_{−f(i)}(x_i))²
//
// where f(i) is the fold of point i and ŷ_{−f} the smoother fitted without fold f, on the route
// that smoother takes (binned, sorted windows, k-d tree, all pairs: regression_evaluate). A
// held-out point where the smoother has no weight (a compact kernel with no training point in
// reach) makes CV_K infinite, as an undefined leave-one-out fit does. Folds: K-fold with a seeded
// shuffle (as scikit-learn's KFold(shuffle=True)), one fold per group (leave-one-group-out,
// scikit-learn's LeaveOneGroupOut), or any partition given by the caller (Python passes a
// scikit-learn splitter's test sets). regression_spec::folds set: `--bandwidth cv` and knn's k by
// CV minimize CV_K.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kernelformer/tensor.hpp"

namespace kf {

struct regression_spec;

struct cv_folds {
  std::vector<index> fold_of;  // per row, 0..count − 1
  index count = 0;
  std::string name;  // "5-fold (seed 0)", "leave-one-group-out (12 groups)", …
};

// Rows shuffled by a seeded Mersenne twister (std::mt19937_64, Fisher–Yates from the end), the
// i-th shuffled row in fold i mod k: fold sizes differ by at most one. Needs 2 ≤ k ≤ n.
cv_folds cv_folds_kfold(index n, index k, std::uint64_t seed);
// One fold per distinct value, numbered in increasing order of the values. Needs ≥ 2 groups and
// finite values.
cv_folds cv_folds_groups(std::span<const double> groups);
// A partition given as fold ids per row (any integers ≥ 0; renumbered 0..count − 1 in increasing
// order). Needs ≥ 2 distinct ids.
cv_folds cv_folds_from_ids(std::span<const index> ids, std::string name);

// The data split once by the folds, for a search that evaluates many bandwidths (or k): each fold's
// training part and held-out part, copied once.
class cv_splits {
 public:
  // Throws std::invalid_argument if the folds do not cover x's rows or a fold holds every row.
  cv_splits(const_matrix_view<double> x, std::span<const double> y, const cv_folds& folds);
  ~cv_splits();
  cv_splits(const cv_splits&) = delete;
  cv_splits& operator=(const cv_splits&) = delete;

  // CV_K of the smoother spec (its bandwidth set; knn: its k): +inf where a held-out point is
  // undefined.
  double criterion(const regression_spec& spec) const;
  // knn: CV_K for k = 1..k_max (entry k − 1) from one neighbor search of k_max per fold; k
  // beyond a fold's training size repeats the last defined value.
  std::vector<double> knn_curve(const regression_spec& spec, index k_max) const;
  index folds() const;

 private:
  struct part;
  std::vector<std::unique_ptr<part>> parts_;
  index n_ = 0;
};

}  // namespace kf
